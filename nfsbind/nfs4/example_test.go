package nfs4_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A server reads a COMPOUND one operation at a time and writes each result as it goes;
// the writer patches the result count and the final status at the end. Here the client
// sends PUTROOTFH, GETFH and an operation number that does not exist.
func ExampleCompoundArgsReader() {
	// The client's side: encode the request.
	var ce xdr.Encoder
	var cw nfs4.CompoundArgsWriter
	cw.Begin(&ce, []byte("example"), nfs4.MinorVersion)
	cw.Op(nfs4.OpPutrootfh)
	cw.Op(nfs4.OpGetfh)
	cw.Op(99)
	cw.Finish()

	// The server's side.
	var r nfs4.CompoundArgsReader
	if err := r.Reset(xdr.NewDecoder(ce.Bytes())); err != nil {
		fmt.Println("GARBAGE_ARGS:", err)
		return
	}
	fmt.Printf("%d operations, minor version %d\n", r.NumOps, r.MinorVersion)
	var se xdr.Encoder
	var w nfs4.CompoundResWriter
	w.Begin(&se, r.Tag)
	status := nfs4.OK
	for r.More() && status == nfs4.OK {
		op, err := r.Next()
		if err != nil {
			status = nfs4.StatusOf(err)
			break
		}
		switch op {
		case nfs4.OpPutrootfh:
			w.Add(&nfs4.StatusRes{OpNum: op})
		case nfs4.OpGetfh:
			w.Add(&nfs4.GetfhRes{Object: nfs4.FH{0, 0, 0, 1}})
		case nfs4.OpIllegal:
			fmt.Println("operation", r.RawOp(), "is illegal")
			status = nfs4.ErrOpIllegal
			w.Add(&nfs4.StatusRes{OpNum: nfs4.OpIllegal, Status: status})
		}
	}
	w.Finish(status)

	// The client decodes the reply.
	var res nfs4.CompoundRes
	if err := res.DecodeXDR(xdr.NewDecoder(se.Bytes())); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, len(res.Results), "results")
	for _, r := range res.Results {
		fmt.Println(r.Op(), r.Result())
	}
	// Output:
	// 3 operations, minor version 1
	// operation 99 is illegal
	// NFS4ERR_OP_ILLEGAL 3 results
	// PUTROOTFH NFS4_OK
	// GETFH NFS4_OK
	// ILLEGAL NFS4ERR_OP_ILLEGAL
}

// GETATTR results carry only the attributes asked for and supported, in bit order.
func ExampleEncodeFattr() {
	asked := nfs4.NewBitmap(nfs4.AttrType, nfs4.AttrSize, nfs4.AttrACL)
	mask := asked.And(nfs4.SupportedAttrs()) // FATTR4_ACL is not supported
	var e xdr.Encoder
	nfs4.EncodeFattr(&e, mask, &nfs4.Fattr{Type: nfs4.NF4Reg, Size: 42})
	fmt.Printf("% x\n", e.Bytes())
	// Output:
	// 00 00 00 01 00 00 00 12 00 00 00 0c 00 00 00 01 00 00 00 00 00 00 00 2a
}
