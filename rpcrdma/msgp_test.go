package rpcrdma

import (
	"bytes"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Seed §3.9: "Where padding is applied, two values are passed to the peer: an
// "rdma_align" which is the padding value used, and "rdma_thresh", which is the opaque
// data size at or above which padding is applied." The padding sits between an opaque's
// length word and its data ("XXXXXXXLLLLpppDDDDDDDDDDDDDD"), and alignment is counted
// from the first byte of the transport header, where the receive buffer starts.

// TestMSGPGoldenCall: an echo call with a 300- and a 100-byte payload, rdma_align 64,
// rdma_thresh 80: both payloads are padded so that their data starts at offsets 128 and
// 448 of the message.
func TestMSGPGoldenCall(t *testing.T) {
	a, b := bytes.Repeat([]byte{0xaa}, 300), bytes.Repeat([]byte{0xbb}, 100)
	var e xdr.Encoder
	(&oncrpc.CallHeader{XID: 0x1234, Prog: tpProg, Vers: tpVers, Proc: tpEcho}).EncodeXDR(&e)
	tpPayloads{a, b}.EncodeXDR(&e)
	msg := oncrpc.Message{Inline: e.Bytes(), Payloads: e.Payloads()}

	var h Header
	h.XID, h.Vers, h.Credits = 0x1234, Version1, 32
	lim := callLimits{inlineSend: 4096, maxInline: 4096, maxReply: 100, msgpAlign: 64, msgpThresh: 80}
	p, err := planCall(&h, &msg, nil, &lim)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := marshalCall(buf, &h, &p, &msg)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	want = append(want, be32(0x1234, 1, 32, 2, 64, 80, 0, 0, 0)...) // RDMA_MSGP, align 64, thresh 80, no chunks: 0..36
	want = append(want, rpcCall(0x1234, tpEcho)...)                 // 36..76
	want = append(want, be32(2, 300)...)                            // count, length of a: 76..84
	want = append(want, make([]byte, 44)...)                        // padding: 84..128
	want = append(want, a...)                                       // 128..428
	want = append(want, be32(100)...)                               // 428..432
	want = append(want, make([]byte, 16)...)                        // padding: 432..448
	want = append(want, b...)                                       // 448..548
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("RDMA_MSGP call\n got % x\nwant % x", buf[:n], want)
	}
	if p.pad != 60 || n != h.Size()+p.pad+p.inline {
		t.Fatalf("plan: pad %d, inline %d, header %d; %d bytes", p.pad, p.inline, h.Size(), n)
	}
}

// TestMSGPGoldenReply: the reply to an RDMA_MSGP call (rdma_align 64, rdma_thresh 80)
// returning a 200-byte payload inline is RDMA_MSGP with the payload's data at offset
// 128.
func TestMSGPGoldenReply(t *testing.T) {
	c := bytes.Repeat([]byte{0xcc}, 200)
	e := xdr.NewEncoder(rpcReply(0x1234))
	tpPayloads{c}.EncodeXDR(e)
	reply := oncrpc.Message{Inline: e.Bytes(), Payloads: e.Payloads()}
	in := Header{XID: 0x1234, Vers: Version1, Credits: 32, Proc: ProcMsgP, Align: 64, Thresh: 80}

	var out Header
	out.XID, out.Vers, out.Credits = in.XID, Version1, 16
	p, err := planReply(&out, &in, &reply, &replyLimits{inline: 4096, msgp: true})
	if err != nil || p.path != pathInline {
		t.Fatalf("path %v, %v", p.path, err)
	}
	b, err := out.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	b = appendPadded(b, &reply, p.placed, xdr.Padding{Align: out.Align, Thresh: out.Thresh, Base: len(b)})
	var want []byte
	want = append(want, be32(0x1234, 1, 16, 2, 64, 80, 0, 0, 0)...) // 0..36
	want = append(want, rpcReply(0x1234)...)                        // 36..60
	want = append(want, be32(1, 200)...)                            // 60..68
	want = append(want, make([]byte, 60)...)                        // padding: 68..128
	want = append(want, c...)                                       // 128..328
	if !bytes.Equal(b, want) {
		t.Fatalf("RDMA_MSGP reply\n got % x\nwant % x", b, want)
	}
	// The client's decoder, given the rule from the header, reads the payload back.
	var h Header
	hl, err := h.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	d := xdr.NewDecoder(b[hl:])
	d.SetPadding(receivedPadding(&h, hl))
	var rh oncrpc.ReplyHeader
	var res tpPayloads
	if err := rh.DecodeXDR(d); err != nil {
		t.Fatal(err)
	}
	if err := res.DecodeXDR(d); err != nil || len(res) != 1 || !bytes.Equal(res[0], c) || d.Len() != 0 {
		t.Fatalf("decoded %d payloads, %v, %d bytes left", len(res), err, d.Len())
	}
}

// TestMSGPThresh: the announced rdma_thresh is at least what was asked, at least the
// inline stream's length (so no opaque other than the payloads reaches it), and equal to
// no padded payload's length (so "at or above" and "exceeds" agree).
func TestMSGPThresh(t *testing.T) {
	m := oncrpc.Message{Inline: make([]byte, 52), Payloads: []xdr.Payload{
		{Pos: 48, Data: make([]byte, 52)}, {Pos: 104, Data: make([]byte, 53)}, {Pos: 160, Data: make([]byte, 300)},
	}}
	for _, c := range []struct {
		want   uint32
		placed uint64
		got    uint32
	}{
		{0, 0, 54},     // 52 and 53 are payload lengths
		{100, 0, 100},  // asked for more
		{300, 0, 301},  // 300 is a payload length
		{0, 0b011, 52}, // the 52- and 53-byte payloads are in write chunks
	} {
		if got := msgpThresh(c.want, &m, c.placed); got != c.got {
			t.Errorf("msgpThresh(%d, placed %b) = %d, want %d", c.want, c.placed, got, c.got)
		}
	}
	// No payload reaches rdma_thresh: no padding, RDMA_MSG.
	if _, _, ok := msgpPadded(64, 400, &m, 0, 36); ok {
		t.Error("RDMA_MSGP with nothing to pad")
	}
}
