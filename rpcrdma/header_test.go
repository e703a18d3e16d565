package rpcrdma

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// wire builds a byte string from 32-bit big-endian words, so each golden vector below can
// be written one XDR word per line with a comment saying where the word comes from.
func wire(words ...uint32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

func seg(h, l uint32, o uint64) chunks.Segment {
	return chunks.Segment{Handle: h, Length: l, Offset: o}
}

func rseg(p, h, l uint32, o uint64) chunks.ReadSegment {
	return chunks.ReadSegment{Position: p, Segment: seg(h, l, o)}
}

// rpcTail stands for the RPC message behind an RDMA_MSG header; decoding must stop
// before it and report the header length.
var rpcTail = wire(0x01020304, 0 /* CALL */, 2 /* rpcvers */)

type golden struct {
	name string
	h    Header
	wire []byte
	body bool // an RPC message follows (RDMA_MSG, RDMA_MSGP)
}

// goldens are written by hand from RFC 8166 §4.3 / seed §4.3: one per message type and
// optional field.
var goldens = []golden{
	{
		name: "RDMA_MSG, all lists empty",
		h:    Header{XID: 0x01020304, Vers: 1, Credits: 32, Proc: ProcMsg},
		wire: wire(
			0x01020304, // rdma_xid
			1,          // rdma_vers = 1
			32,         // rdma_credit = 32
			0,          // rdma_proc = RDMA_MSG
			0,          // rdma_reads: NULL (optional-data "absent")
			0,          // rdma_writes: NULL
			0,          // rdma_reply: NULL
		),
		body: true,
	},
	{
		name: "RDMA_MSG, read list of two chunks with several segments each",
		h: Header{XID: 0xaabbccdd, Vers: 1, Credits: 128, Proc: ProcMsg,
			ReadList: []chunks.ReadSegment{
				rseg(108, 0x11, 4096, 0xffff8880_00001000),
				rseg(108, 0x12, 4096, 0xffff8880_00002000),
				rseg(108, 0x13, 5, 0xffff8880_00003000),
				rseg(8316, 0x21, 512, 0x10),
				rseg(8316, 0x22, 512, 0x2010),
			}},
		wire: wire(
			0xaabbccdd, 1, 128, 0, // xid, vers, credits 128, RDMA_MSG
			1, 108, // read list entry present; position 108 (after an RPC header + length word)
			0x11, 4096, 0xffff8880, 0x00001000, // handle, length 4096, offset (hi, lo)
			1, 108, 0x12, 4096, 0xffff8880, 0x00002000, // same position: same chunk
			1, 108, 0x13, 5, 0xffff8880, 0x00003000, // 5 bytes: roundup elided (4096+4096+5 = 8197)
			1, 8316, 0x21, 512, 0, 0x10, // second chunk at 108 + RoundUp(8197) + 8 inline bytes = 8316
			1, 8316, 0x22, 512, 0, 0x2010, // its second segment
			0, // read list ends
			0, // write list: NULL
			0, // reply chunk: NULL
		),
		body: true,
	},
	{
		name: "RDMA_MSG, write list of two chunks",
		h: Header{XID: 7, Vers: 1, Credits: 1, Proc: ProcMsg,
			WriteList: []chunks.WriteChunk{
				{seg(0xa1, 8192, 0x7f00_0000_0000)},
				{seg(0xb1, 4096, 0x1000), seg(0xb2, 4096, 0x3000), seg(0xb3, 4, 0x9000)},
			}},
		wire: wire(
			7, 1, 1, 0, // xid 7, vers 1, credits 1, RDMA_MSG
			0,          // read list: NULL
			1,          // write list entry present
			1,          // segcount 1 (xdr_write_chunk target<>)
			0xa1, 8192, // handle, length
			0x7f00, 0, // offset 0x00007f00_00000000 (hi, lo)
			1,                     // next write list entry present
			3,                     // segcount 3
			0xb1, 4096, 0, 0x1000, // segment 1
			0xb2, 4096, 0, 0x3000, // segment 2
			0xb3, 4, 0, 0x9000, // segment 3: a Linux-style 4-byte pad sink
			0, // write list ends
			0, // reply chunk: NULL
		),
		body: true,
	},
	{
		name: "RDMA_MSG, reply chunk",
		h: Header{XID: 0xfffffffe, Vers: 1, Credits: 64, Proc: ProcMsg,
			ReplyChunk: chunks.WriteChunk{seg(0x5, 4096, 0xdead0000), seg(0x6, 60000, 0xbeef0000)}},
		wire: wire(
			0xfffffffe, 1, 64, 0, // xid, vers, credits 64, RDMA_MSG
			0,                      // read list: NULL
			0,                      // write list: NULL
			1,                      // reply chunk present
			2,                      // segcount 2
			5, 4096, 0, 0xdead0000, // segment 1
			6, 60000, 0, 0xbeef0000, // segment 2
		),
		body: true,
	},
	{
		name: "RDMA_MSG, all three lists",
		h: Header{XID: 9, Vers: 1, Credits: 3, Proc: ProcMsg,
			ReadList:   []chunks.ReadSegment{rseg(64, 1, 100, 2)},
			WriteList:  []chunks.WriteChunk{{seg(3, 200, 4)}},
			ReplyChunk: chunks.WriteChunk{seg(5, 300, 6)}},
		wire: wire(
			9, 1, 3, 0, // xid 9, vers 1, credits 3, RDMA_MSG
			1, 64, 1, 100, 0, 2, // read entry: position 64, handle 1, length 100, offset 2
			0,                  // read list ends
			1, 1, 3, 200, 0, 4, // write chunk: 1 segment (handle 3, length 200, offset 4)
			0,                  // write list ends
			1, 1, 5, 300, 0, 6, // reply chunk: 1 segment (handle 5, length 300, offset 6)
		),
		body: true,
	},
	{
		name: "RDMA_NOMSG, position-zero read chunk (long call)",
		h: Header{XID: 0x10, Vers: 1, Credits: 128, Proc: ProcNoMsg,
			ReadList: []chunks.ReadSegment{rseg(0, 0x42, 4096, 0x1_0000_0000), rseg(0, 0x43, 1000, 0x2_0000_0000)}},
		wire: wire(
			0x10, 1, 128, 1, // xid, vers, credits, RDMA_NOMSG
			1, 0, 0x42, 4096, 1, 0, // PZRC segment 1: position 0, offset 0x1_00000000
			1, 0, 0x43, 1000, 2, 0, // PZRC segment 2
			0, // read list ends
			0, // write list: NULL
			0, // reply chunk: NULL
		),
	},
	{
		name: "RDMA_NOMSG, reply chunk (long reply, as a responder sends it)",
		h: Header{XID: 0x11, Vers: 1, Credits: 64, Proc: ProcNoMsg,
			ReplyChunk: chunks.WriteChunk{seg(0x77, 5000, 0x8000), seg(0x78, 0, 0x9000)}},
		wire: wire(
			0x11, 1, 64, 1, // xid, vers, credits, RDMA_NOMSG
			0, 0, // read list, write list: NULL
			1, 2, // reply chunk present, 2 segments
			0x77, 5000, 0, 0x8000, // bytes written into segment 1
			0x78, 0, 0, 0x9000, // segment 2 unused: length 0
		),
	},
	{
		name: "RDMA_MSGP with align, thresh and a write chunk",
		h: Header{XID: 0x20, Vers: 1, Credits: 16, Proc: ProcMsgP, Align: 4096, Thresh: 1024,
			WriteList: []chunks.WriteChunk{{seg(1, 2, 3)}}},
		wire: wire(
			0x20, 1, 16, 2, // xid, vers, credits 16, RDMA_MSGP
			4096,             // rdma_align
			1024,             // rdma_thresh
			0,                // read list: NULL
			1, 1, 1, 2, 0, 3, // write chunk: 1 segment
			0, // write list ends
			0, // reply chunk: NULL
		),
		body: true,
	},
	{
		name: "RDMA_DONE",
		h:    Header{XID: 0x30, Vers: 1, Credits: 5, Proc: ProcDone},
		wire: wire(0x30, 1, 5, 3), // xid, vers, credits, RDMA_DONE; void body
	},
	{
		name: "RDMA_ERROR ERR_VERS",
		h:    Header{XID: 0x40, Vers: 1, Credits: 64, Proc: ProcError, ErrCode: ErrCodeVers, VersLow: 1, VersHigh: 1},
		wire: wire(
			0x40, 1, 64, 4, // xid echoed, vers, credits, RDMA_ERROR
			1, // rdma_err = ERR_VERS
			1, // rdma_vers_low
			1, // rdma_vers_high
		),
	},
	{
		name: "RDMA_ERROR ERR_CHUNK",
		h:    Header{XID: 0x41, Vers: 1, Credits: 64, Proc: ProcError, ErrCode: ErrCodeChunk},
		wire: wire(0x41, 1, 64, 4, 2), // xid, vers, credits, RDMA_ERROR, ERR_CHUNK; void
	},
	{
		name: "RDMA_ERROR unknown code carried as-is",
		h: Header{XID: 0x42, Vers: 1, Credits: 64, Proc: ProcError, ErrCode: 9,
			ErrBody: wire(0xcafe, 0xf00d)},
		wire: wire(0x42, 1, 64, 4, 9, 0xcafe, 0xf00d), // rdma_err 9, then two opaque words
	},
	{
		name: "RDMA_ERROR unknown code, empty body",
		h:    Header{XID: 0x43, Vers: 1, Credits: 0, Proc: ProcError, ErrCode: 3, ErrBody: []byte{}},
		wire: wire(0x43, 1, 0, 4, 3),
	},
}

// normalize maps nil and empty slices to the same value so DeepEqual compares content.
func normalize(h Header) Header {
	if len(h.ReadList) == 0 {
		h.ReadList = nil
	}
	if len(h.WriteList) == 0 {
		h.WriteList = nil
	}
	if len(h.ReplyChunk) == 0 {
		h.ReplyChunk = nil
	}
	if len(h.ErrBody) == 0 {
		h.ErrBody = nil
	}
	return h
}

func TestGoldenEncode(t *testing.T) {
	for _, g := range goldens {
		got, err := g.h.Append(nil)
		if err != nil {
			t.Errorf("%s: Append: %v", g.name, err)
			continue
		}
		if !bytes.Equal(got, g.wire) {
			t.Errorf("%s: Append\n got %x\nwant %x", g.name, got, g.wire)
		}
		if g.h.Size() != len(g.wire) {
			t.Errorf("%s: Size %d, want %d", g.name, g.h.Size(), len(g.wire))
		}
		// Appending after existing bytes keeps them.
		pre := []byte("hdr:")
		got, _ = g.h.Append(pre)
		if !bytes.Equal(got[:4], []byte("hdr:")) || !bytes.Equal(got[4:], g.wire) {
			t.Errorf("%s: Append to a prefix corrupted it: %x", g.name, got)
		}
	}
}

func TestGoldenDecode(t *testing.T) {
	var h Header // reused across vectors, as a transport would
	for _, g := range goldens {
		msg := g.wire
		if g.body {
			msg = append(append([]byte(nil), g.wire...), rpcTail...)
		}
		n, err := h.Decode(msg)
		if err != nil {
			t.Errorf("%s: Decode: %v", g.name, err)
			continue
		}
		if n != len(g.wire) {
			t.Errorf("%s: consumed %d, want %d", g.name, n, len(g.wire))
		}
		if g.body && !bytes.Equal(msg[n:], rpcTail) {
			t.Errorf("%s: RPC message not found at n", g.name)
		}
		if !reflect.DeepEqual(normalize(h), normalize(g.h)) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", g.name, h, g.h)
		}
	}
}

func TestErrorEncoders(t *testing.T) {
	got := AppendErrVers(nil, 0xabcdef01, 7, 64)
	want := wire(0xabcdef01, 7, 64, 4, 1, 1, 1) // vers as given; supported range 1..1
	if !bytes.Equal(got, want) {
		t.Errorf("AppendErrVers = %x, want %x", got, want)
	}
	if len(AppendErrVers(nil, 0, 1, 0)) != ErrVersSize {
		t.Error("ErrVersSize mismatch")
	}
	got = AppendErrChunk(nil, 0xabcdef01, 1, 64)
	want = wire(0xabcdef01, 1, 64, 4, 2)
	if !bytes.Equal(got, want) || len(got) != ErrChunkSize {
		t.Errorf("AppendErrChunk = %x, want %x", got, want)
	}
}

func TestSizes(t *testing.T) {
	h := Header{Proc: ProcMsg}
	if h.Size() != MinSize {
		t.Errorf("empty MSG size %d", h.Size())
	}
	if ReadListSize(3) != 76 || WriteChunkSize(2) != 36 || ReplyChunkSize(0) != 4 || ReplyChunkSize(2) != 40 {
		t.Error("list size helpers")
	}
	if WriteListSize() != 4 || WriteListSize(1, 3) != 4+(4+4+16)+(4+4+48) {
		t.Error("WriteListSize")
	}
	// Header sizes from the list helpers agree with the encoder.
	for _, g := range goldens {
		if g.h.Proc != ProcMsg {
			continue
		}
		segs := make([]int, len(g.h.WriteList))
		for i, c := range g.h.WriteList {
			segs[i] = len(c)
		}
		n := FixedSize + ReadListSize(len(g.h.ReadList)) + WriteListSize(segs...) + ReplyChunkSize(len(g.h.ReplyChunk))
		if n != len(g.wire) {
			t.Errorf("%s: helper size %d, wire %d", g.name, n, len(g.wire))
		}
	}
	// Linux inline budgets with siw (maxsegs 4, 4096-byte buffers), notes §1.1.
	if LinuxMaxInlineSend(4096, 4) != 3948 || LinuxMaxInlineRecv(4096, 4) != 3996 {
		t.Errorf("Linux budgets %d %d", LinuxMaxInlineSend(4096, 4), LinuxMaxInlineRecv(4096, 4))
	}
}

func TestProcErrCodeString(t *testing.T) {
	for p, s := range map[Proc]string{ProcMsg: "RDMA_MSG", ProcNoMsg: "RDMA_NOMSG", ProcMsgP: "RDMA_MSGP",
		ProcDone: "RDMA_DONE", ProcError: "RDMA_ERROR", 9: "rdma_proc(9)"} {
		if p.String() != s {
			t.Errorf("%d: %q", uint32(p), p.String())
		}
	}
	for c, s := range map[ErrCode]string{ErrCodeVers: "ERR_VERS", ErrCodeChunk: "ERR_CHUNK", 0: "rdma_err(0)"} {
		if c.String() != s {
			t.Errorf("%d: %q", uint32(c), c.String())
		}
	}
}

func TestEncodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Header
		want error
	}{
		{"unknown proc", Header{Vers: 1, Proc: 5}, ErrBadProc},
		{"misaligned position", Header{Vers: 1, ReadList: []chunks.ReadSegment{rseg(6, 1, 1, 0)}}, ErrMisalignedPosition},
		{"empty write chunk", Header{Vers: 1, WriteList: []chunks.WriteChunk{{}}}, ErrEmptyChunk},
		{"nomsg without chunks", Header{Vers: 1, Proc: ProcNoMsg}, ErrNoChunks},
		{"read offset overflow", Header{Vers: 1, ReadList: []chunks.ReadSegment{rseg(4, 1, 2, 1<<64-1)}}, ErrOffsetOverflow},
		{"write offset overflow", Header{Vers: 1, WriteList: []chunks.WriteChunk{{seg(1, 2, 1<<64-1)}}}, ErrOffsetOverflow},
		{"reply offset overflow", Header{Vers: 1, ReplyChunk: chunks.WriteChunk{seg(1, 2, 1<<64-1)}}, ErrOffsetOverflow},
	} {
		b := []byte{1, 2}
		out, err := tc.h.Append(b)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if !bytes.Equal(out, []byte{1, 2}) {
			t.Errorf("%s: output modified on error: %x", tc.name, out)
		}
	}
}
