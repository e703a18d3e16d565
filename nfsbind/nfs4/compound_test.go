package nfs4

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func encode(m xdr.EncoderTo) []byte {
	var e xdr.Encoder
	m.EncodeXDR(&e)
	return xdr.Flatten(nil, e.Bytes(), e.Payloads())
}

// The COMPOUND4args header, laid out by hand from RFC 8881 §16.2.1's XDR: tag "ab"
// (length 2, pad 2), minorversion 1, two operations PUTROOTFH (24) and GETFH (10).
func TestCompoundArgsHeaderBytes(t *testing.T) {
	want := []byte{
		0, 0, 0, 2, 'a', 'b', 0, 0, // tag
		0, 0, 0, 1, // minorversion
		0, 0, 0, 2, // argarray count
		0, 0, 0, 24, // OP_PUTROOTFH
		0, 0, 0, 10, // OP_GETFH
	}
	c := CompoundArgs{Tag: []byte("ab"), MinorVersion: 1, Ops: []OpArgs{&NoArgs{OpNum: OpPutrootfh}, &NoArgs{OpNum: OpGetfh}}}
	if got := encode(&c); !bytes.Equal(got, want) {
		t.Fatalf("encoded % x\nwant    % x", got, want)
	}
	var r CompoundArgsReader
	if err := r.Reset(xdr.NewDecoder(want)); err != nil {
		t.Fatal(err)
	}
	if string(r.Tag) != "ab" || r.MinorVersion != 1 || r.NumOps != 2 {
		t.Fatalf("header %q %d %d", r.Tag, r.MinorVersion, r.NumOps)
	}
	var ops []OpNum
	for r.More() {
		op, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	if !reflect.DeepEqual(ops, []OpNum{OpPutrootfh, OpGetfh}) {
		t.Fatalf("ops %v", ops)
	}
	if _, err := r.Next(); err == nil {
		t.Fatal("Next past the end succeeded")
	}
}

// The count is known before any operation is decoded, so a server can refuse a
// COMPOUND with too many operations; a count the bytes cannot back is malformed.
func TestCompoundArgsCountBeforeOps(t *testing.T) {
	var w CompoundArgsWriter
	var e xdr.Encoder
	w.Begin(&e, nil, 1)
	for range 100 {
		w.Op(OpGetfh)
	}
	w.Finish()
	var r CompoundArgsReader
	if err := r.Reset(xdr.NewDecoder(e.Bytes())); err != nil {
		t.Fatal(err)
	}
	if r.NumOps != 100 {
		t.Fatalf("NumOps %d", r.NumOps)
	}
	// Claim 100 operations but send only one.
	short := e.Bytes()[:16]
	err := r.Reset(xdr.NewDecoder(short))
	var de *xdr.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, xdr.ErrShort) || StatusOf(err) != ErrBadxdr {
		t.Fatalf("short argarray: %v", err)
	}
	// A count beyond MaxOpsPerCompound is refused before looking at the bytes.
	huge := xdr.AppendUint32(xdr.AppendUint32(xdr.AppendUint32(nil, 0), 1), MaxOpsPerCompound+1)
	if err := r.Reset(xdr.NewDecoder(huge)); !errors.Is(err, xdr.ErrTooLong) {
		t.Fatalf("huge count: %v", err)
	}
}

func TestCompoundArgsIllegalOp(t *testing.T) {
	in := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0x30, 0x39} // op 12345
	var r CompoundArgsReader
	if err := r.Reset(xdr.NewDecoder(in)); err != nil {
		t.Fatal(err)
	}
	op, err := r.Next()
	if err != nil || op != OpIllegal || r.RawOp() != 12345 {
		t.Fatalf("op %v raw %d err %v", op, r.RawOp(), err)
	}
	if _, err := r.DecodeArgs(op); StatusOf(err) != ErrOpIllegal {
		t.Fatalf("DecodeArgs(ILLEGAL): %v", err)
	}
	var c CompoundArgs
	if err := c.DecodeXDR(xdr.NewDecoder(in)); StatusOf(err) != ErrOpIllegal {
		t.Fatalf("CompoundArgs: %v", err)
	}
	// The server's answer: one ILLEGAL result with NFS4ERR_OP_ILLEGAL.
	var e xdr.Encoder
	var w CompoundResWriter
	w.Begin(&e, r.Tag)
	w.Add(&StatusRes{OpNum: OpIllegal, Status: ErrOpIllegal})
	w.Finish(ErrOpIllegal)
	want := []byte{0, 0, 0x27, 0x3c, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x27, 0x3c, 0, 0, 0x27, 0x3c}
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("reply % x\nwant  % x", e.Bytes(), want)
	}
}

func TestCompoundResWriterPatchesAndUndo(t *testing.T) {
	e := xdr.NewEncoder(make([]byte, 0, 64))
	var w CompoundResWriter
	w.Begin(e, []byte("t"))
	w.Add(&StatusRes{OpNum: OpPutrootfh})
	w.Add(&GetfhRes{Object: FH{1, 2, 3}})
	w.Undo()
	w.Add(&GetfhRes{Status: ErrRepTooBig})
	w.Finish(ErrRepTooBig)
	var c CompoundRes
	if err := c.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil {
		t.Fatal(err)
	}
	want := CompoundRes{Status: ErrRepTooBig, Tag: []byte("t"), Results: []OpRes{
		&StatusRes{OpNum: OpPutrootfh}, &GetfhRes{Status: ErrRepTooBig}}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v", c)
	}
}

func TestPutfhBounds(t *testing.T) {
	for _, n := range []int{0, 1, FHSize} {
		in := encode(&PutfhArgs{Object: make(FH, n)})
		var a PutfhArgs
		if err := a.DecodeXDR(xdr.NewDecoder(in)); err != nil || len(a.Object) != n {
			t.Fatalf("%d-byte handle: %v", n, err)
		}
	}
	in := encode(&PutfhArgs{Object: make(FH, FHSize+1)})
	var a PutfhArgs
	err := a.DecodeXDR(xdr.NewDecoder(in))
	if !errors.Is(err, xdr.ErrTooLong) || StatusOf(err) != ErrBadxdr {
		t.Fatalf("129-byte handle: %v", err)
	}
}

func TestStatusAndOpStrings(t *testing.T) {
	cases := map[string]string{
		OK.String():              "NFS4_OK",
		ErrTooManyOps.String():   "NFS4ERR_TOO_MANY_OPS",
		ErrDelegRevoked.String(): "NFS4ERR_DELEG_REVOKED",
		Status(10073).String():   "NFS4ERR(10073)",
		OpExchangeID.String():    "EXCHANGE_ID",
		OpIllegal.String():       "ILLEGAL",
		OpNum(59).String():       "OP59",
		CBOpSequence.String():    "CB_SEQUENCE",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if OpNum(2).Defined() || OpNum(59).Defined() || !OpReclaimComplete.Defined() || !OpIllegal.Defined() {
		t.Error("OpNum.Defined")
	}
}

func TestSessionless(t *testing.T) {
	var got []OpNum
	for op := OpNum(0); op < 70; op++ {
		if op.Sessionless() {
			got = append(got, op)
		}
	}
	want := []OpNum{OpBindConnToSession, OpExchangeID, OpCreateSession, OpDestroySession, OpDestroyClientID}
	if !reflect.DeepEqual(got, want) || OpSequence.Sessionless() || OpIllegal.Sessionless() {
		t.Fatalf("sessionless ops %v", got)
	}
}
