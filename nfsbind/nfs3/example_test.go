package nfs3_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A client encodes WRITE arguments; the data is a payload, recorded at its XDR position
// and not copied, ready for an RDMA read chunk or a vectored TCP write.
func ExampleWriteArgs() {
	args := nfs3.WriteArgs{File: nfs3.FH{1, 2, 3, 4}, Offset: 0, Count: 6, Stable: nfs3.Unstable, Data: []byte("hello\n")}
	var e xdr.Encoder
	args.EncodeXDR(&e)
	p := e.Payloads()[0]
	fmt.Printf("inline %d bytes, data at position %d (%d bytes)\n", e.Len(), p.Pos, len(p.Data))
	// Output:
	// inline 28 bytes, data at position 28 (6 bytes)
}

// A server decodes arguments straight from the call buffer; errors name the field.
func ExampleDirOpArgsMsg_DecodeXDR() {
	in := []byte{0, 0, 0, 200} // a file handle claiming 200 bytes
	var args nfs3.LookupArgs
	err := args.DecodeXDR(xdr.NewDecoder(in))
	fmt.Println(err)
	// Output:
	// nfs3: args.dir: xdr: opaque<> at offset 0: length 200 exceeds limit 64
}
