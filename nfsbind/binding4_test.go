package nfsbind

import (
	"bytes"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func TestRulesV4(t *testing.T) {
	for op := nfs4.OpNum(0); op < 70; op++ {
		r, ok := RuleForV4(op)
		if ok != op.Defined() {
			t.Fatalf("%v: ok %v", op, ok)
		}
		want := RuleV4{Op: op}
		switch op {
		case nfs4.OpWrite:
			want.Call, want.CallItem = ReadChunk, "WRITE4args.data"
		case nfs4.OpRead:
			want.Reply, want.ReplyItem = WriteChunk, "READ4resok.data"
		case nfs4.OpReadlink, nfs4.OpReaddir:
			want.Reply = ReplyChunk
		}
		if r.Op != want.Op || r.Call != want.Call || r.CallItem != want.CallItem || r.Reply != want.Reply || r.ReplyItem != want.ReplyItem {
			t.Errorf("%v: %+v, want %+v", op, r, want)
		}
	}
	// The RFC's four DDP-eligible items, two of which this binding keeps inline.
	var eligible []string
	for _, op := range []nfs4.OpNum{nfs4.OpWrite, nfs4.OpCreate, nfs4.OpRead, nfs4.OpReadlink} {
		r, _ := RuleForV4(op)
		eligible = append(eligible, r.RFCEligible...)
	}
	if len(eligible) != 4 {
		t.Errorf("RFC-eligible items %v", eligible)
	}
	if _, ok := RuleForV4(nfs4.OpIllegal); !ok {
		t.Error("OP_ILLEGAL is a defined operation")
	}
	if _, err := ChunksForV4([]nfs4.OpNum{nfs4.OpSequence, 99}); err == nil {
		t.Error("ChunksForV4 accepted operation 99")
	}
}

// The write-list pairing rule, driven through the codec: a COMPOUND reply with two READs
// records two payloads in operation order, and a client given two placed chunks hands
// the first to the first READ and the second to the second.
func TestV4CompoundWriteChunkOrder(t *testing.T) {
	ops := []nfs4.OpNum{nfs4.OpSequence, nfs4.OpPutfh, nfs4.OpRead, nfs4.OpPutfh, nfs4.OpRead, nfs4.OpReaddir}
	c, err := ChunksForV4(ops)
	if err != nil || c != (ChunksV4{ReadChunks: 0, WriteChunks: 2, ReplyChunk: true}) {
		t.Fatalf("%+v %v", c, err)
	}
	first, second := []byte("first READ data"), []byte("second")
	res := nfs4.CompoundRes{Results: []nfs4.OpRes{
		&nfs4.SequenceRes{}, &nfs4.StatusRes{OpNum: nfs4.OpPutfh}, &nfs4.ReadRes{Data: first},
		&nfs4.StatusRes{OpNum: nfs4.OpPutfh}, &nfs4.ReadRes{EOF: true, Data: second},
	}}
	var e xdr.Encoder
	res.EncodeXDR(&e)
	p := e.Payloads()
	if len(p) != c.WriteChunks || !bytes.Equal(p[0].Data, first) || !bytes.Equal(p[1].Data, second) || p[0].Pos >= p[1].Pos {
		t.Fatalf("payloads %+v", p)
	}
	// The client's view: the inline reply plus what the server RDMA-Wrote into its two
	// write chunks.
	placed := [][]byte{append([]byte(nil), first...), append([]byte(nil), second...)}
	d := xdr.NewDecoder(e.Bytes())
	d.SetPlaced(placed)
	var got nfs4.CompoundRes
	if err := got.DecodeXDR(d); err != nil {
		t.Fatal(err)
	}
	r1, r2 := got.Results[2].(*nfs4.ReadRes), got.Results[4].(*nfs4.ReadRes)
	if &r1.Data[0] != &placed[0][0] || &r2.Data[0] != &placed[1][0] || !r2.EOF {
		t.Fatal("READ results do not take the write chunks in order")
	}
	// A failed READ ends the COMPOUND and records no payload.
	res.Results = res.Results[:3]
	res.Results[2] = &nfs4.ReadRes{Status: nfs4.ErrOpenmode}
	e.Reset(nil)
	res.EncodeXDR(&e)
	if len(e.Payloads()) != 0 {
		t.Fatalf("failed READ recorded %d payloads", len(e.Payloads()))
	}
}

// WRITE data becomes read chunks at the data's XDR position, one per WRITE.
func TestV4CompoundReadChunks(t *testing.T) {
	w1, w2 := bytes.Repeat([]byte{1}, 4097), bytes.Repeat([]byte{2}, 8192)
	args := nfs4.CompoundArgs{MinorVersion: 1, Ops: []nfs4.OpArgs{
		&nfs4.SequenceArgs{}, &nfs4.PutfhArgs{Object: nfs4.FH{1}},
		&nfs4.WriteArgs{Data: w1}, &nfs4.WriteArgs{Offset: 4097, Data: w2}}}
	var e xdr.Encoder
	args.EncodeXDR(&e)
	c, _ := ChunksForV4([]nfs4.OpNum{nfs4.OpSequence, nfs4.OpPutfh, nfs4.OpWrite, nfs4.OpWrite})
	p := e.Payloads()
	if len(p) != c.ReadChunks || len(p) != 2 {
		t.Fatalf("%d payloads, %d read chunks", len(p), c.ReadChunks)
	}
	whole := xdr.Flatten(nil, e.Bytes(), p)
	for i, want := range [][]byte{w1, w2} {
		if !bytes.Equal(whole[p[i].Pos:p[i].Pos+len(want)], want) {
			t.Errorf("payload %d is not at its XDR position", i)
		}
	}
	// The server's view: the inline call plus the two read chunks' data.
	d := xdr.NewDecoder(e.Bytes())
	d.SetPlaced([][]byte{w1, w2})
	var got nfs4.CompoundArgs
	if err := got.DecodeXDR(d); err != nil {
		t.Fatal(err)
	}
	if g := got.Ops[3].(*nfs4.WriteArgs); !bytes.Equal(g.Data, w2) || g.Offset != 4097 {
		t.Error("second WRITE did not get the second read chunk")
	}
}
