package nfs4

import (
	"bytes"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func sampleCBArgs() CBCompoundArgs {
	return CBCompoundArgs{Tag: []byte("cb"), MinorVersion: 1, Ops: []CBOpArgs{
		&CBSequenceArgs{SessionID: testSession, SequenceID: 1, SlotID: 0, HighestSlotID: 0, CacheThis: false,
			ReferringCallLists: []ReferringCallList4{{SessionID: testSession, Calls: []ReferringCall4{{SequenceID: 4, SlotID: 2}}}}},
		&CBRecallArgs{Stateid: testStateid, Truncate: true, FH: testFH},
	}}
}

func sampleCBRes() CBCompoundRes {
	return CBCompoundRes{Status: OK, Tag: []byte("cb"), Results: []CBOpRes{
		&CBSequenceRes{SessionID: testSession, SequenceID: 1, HighestSlotID: 0, TargetHighestSlotID: 0},
		&CBStatusRes{CBOpNum: CBOpRecall, Status: OK},
		&CBStatusRes{CBOpNum: CBOpIllegal, Status: ErrOpIllegal},
	}}
}

// CB_COMPOUND laid out by hand from RFC 8881 §20: a CB_SEQUENCE with no referring calls.
func TestCBCompoundGolden(t *testing.T) {
	c := CBCompoundArgs{MinorVersion: 1, CallbackIdent: 0, Ops: []CBOpArgs{
		&CBSequenceArgs{SessionID: testSession, SequenceID: 1, SlotID: 0, HighestSlotID: 0}}}
	want := []byte{
		0, 0, 0, 0, // tag ""
		0, 0, 0, 1, // minorversion
		0, 0, 0, 0, // callback_ident
		0, 0, 0, 1, // one op
		0, 0, 0, 11, // OP_CB_SEQUENCE
	}
	want = append(want, testSession[:]...)
	want = append(want, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	if got := encode(&c); !bytes.Equal(got, want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
}

func TestCBCompoundRoundTrip(t *testing.T) {
	args := sampleCBArgs()
	var got CBCompoundArgs
	if err := got.DecodeXDR(xdr.NewDecoder(encode(&args))); err != nil {
		t.Fatal(err)
	}
	if show(got.Tag) != show(args.Tag) || len(got.Ops) != len(args.Ops) {
		t.Fatalf("got %+v", got)
	}
	for i := range args.Ops {
		if show(got.Ops[i]) != show(args.Ops[i]) {
			t.Errorf("op %d: got %s want %s", i, show(got.Ops[i]), show(args.Ops[i]))
		}
	}
	res := sampleCBRes()
	var gotRes CBCompoundRes
	if err := gotRes.DecodeXDR(xdr.NewDecoder(encode(&res))); err != nil {
		t.Fatal(err)
	}
	for i := range res.Results {
		if show(gotRes.Results[i]) != show(res.Results[i]) {
			t.Errorf("result %d: got %s want %s", i, show(gotRes.Results[i]), show(res.Results[i]))
		}
	}
}

func TestCBCompoundRefusals(t *testing.T) {
	// CB_GETATTR (3) is defined but not decoded: NFS4ERR_NOTSUPP; 99 is undefined.
	for op, want := range map[uint32]Status{3: ErrNotsupp, 99: ErrOpIllegal} {
		in := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}
		in = xdr.AppendUint32(in, op)
		var c CBCompoundArgs
		if err := c.DecodeXDR(xdr.NewDecoder(in)); StatusOf(err) != want {
			t.Errorf("op %d: %v", op, err)
		}
	}
	// A CB_RECALL with a 129-byte handle.
	r := CBRecallArgs{Stateid: testStateid, FH: make(FH, FHSize+1)}
	var got CBRecallArgs
	if err := got.DecodeXDR(xdr.NewDecoder(encode(&r))); StatusOf(err) != ErrBadxdr || err == nil {
		t.Errorf("long handle: %v", err)
	}
}
