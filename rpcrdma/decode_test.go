package rpcrdma

import (
	"errors"
	"math/rand"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// badHeader is a malformed message and what decoding it must report. The same table seeds
// the FuzzHeader corpus (one file per validation rule).
type badHeader struct {
	name    string
	dec     Decoder
	msg     []byte
	vers    bool   // want *VersionError (else *ChunkError)
	field   string // ChunkError.Field
	reason  error  // ChunkError reason (errors.Is)
	haveXID bool
}

var badHeaders = []badHeader{
	{name: "empty", msg: nil, field: "header", reason: ErrShort},
	{name: "three bytes", msg: []byte{1, 2, 3}, field: "header", reason: ErrShort},
	{name: "xid only", msg: wire(0x1234, 1)[:6], field: "header", reason: ErrShort, haveXID: true},
	{name: "bad version, nothing else", msg: wire(0x1234, 2), vers: true},
	{name: "bad version 0 with garbage", msg: append(wire(0x1234, 0), 0xff, 0xff, 0xff), vers: true},
	{name: "bad version in full header", msg: wire(0x1234, 0xffffffff, 32, 0, 0, 0, 0), vers: true},
	{name: "twelve bytes", msg: wire(0x1234, 1, 32), field: "header", reason: ErrShort, haveXID: true},
	{name: "unknown proc", msg: wire(0x1234, 1, 32, 5, 0, 0, 0), field: "rdma_proc", reason: ErrBadProc, haveXID: true},
	{name: "no read list word", msg: wire(0x1234, 1, 32, 0), field: "read list", reason: ErrShort, haveXID: true},
	{name: "read entry truncated", msg: wire(0x1234, 1, 32, 0, 1, 8, 1, 100), field: "read list", reason: ErrShort, haveXID: true},
	{name: "read list unterminated", msg: wire(0x1234, 1, 32, 0, 1, 8, 1, 100, 0, 0), field: "read list", reason: ErrShort, haveXID: true},
	{name: "read position not multiple of 4", msg: wire(0x1234, 1, 32, 0, 1, 6, 1, 100, 0, 0, 0, 0, 0), field: "read list position", reason: ErrMisalignedPosition, haveXID: true},
	{name: "read discriminator 2", msg: wire(0x1234, 1, 32, 0, 2, 0, 0), field: "read list", reason: ErrBadDiscriminator, haveXID: true},
	{name: "read segment offset overflow", msg: wire(0x1234, 1, 32, 0, 1, 8, 1, 100, 0xffffffff, 0xffffffff, 0, 0, 0), field: "read list segment", reason: ErrOffsetOverflow, haveXID: true},
	{name: "too many read segments", dec: Decoder{MaxSegments: 2},
		msg:   wire(0x1234, 1, 32, 0, 1, 8, 1, 1, 0, 0, 1, 8, 2, 1, 0, 0, 1, 8, 3, 1, 0, 0, 0, 0, 0),
		field: "read list", reason: ErrTooManySegments, haveXID: true},
	{name: "no write list word", msg: wire(0x1234, 1, 32, 0, 0), field: "write list", reason: ErrShort, haveXID: true},
	{name: "write discriminator 7", msg: wire(0x1234, 1, 32, 0, 0, 7, 0), field: "write list", reason: ErrBadDiscriminator, haveXID: true},
	{name: "write chunk segcount 0", msg: wire(0x1234, 1, 32, 0, 0, 1, 0, 0, 0), field: "write list", reason: ErrEmptyChunk, haveXID: true},
	{name: "write chunk absurd segcount", msg: wire(0x1234, 1, 32, 0, 0, 1, 0xffffffff, 1, 2, 0, 3), field: "write list", reason: ErrTooManySegments, haveXID: true},
	{name: "write chunk segcount beyond bytes", msg: wire(0x1234, 1, 32, 0, 0, 1, 3, 1, 2, 0, 3, 0, 0), field: "write list", reason: ErrShort, haveXID: true},
	{name: "write chunk segcount missing", msg: wire(0x1234, 1, 32, 0, 0, 1), field: "write list", reason: ErrShort, haveXID: true},
	{name: "write segment offset overflow", msg: wire(0x1234, 1, 32, 0, 0, 1, 1, 1, 2, 0xffffffff, 0xffffffff, 0, 0), field: "write list segment", reason: ErrOffsetOverflow, haveXID: true},
	{name: "too many write chunks", dec: Decoder{MaxWriteChunks: 1},
		msg:   wire(0x1234, 1, 32, 0, 0, 1, 1, 1, 2, 0, 3, 1, 1, 1, 2, 0, 3, 0, 0),
		field: "write list", reason: ErrTooManyChunks, haveXID: true},
	{name: "segments over limit across lists", dec: Decoder{MaxSegments: 2},
		msg:   wire(0x1234, 1, 32, 0, 1, 0, 1, 1, 0, 0, 0, 1, 2, 1, 1, 0, 0, 2, 2, 0, 0, 0, 0),
		field: "write list", reason: ErrTooManySegments, haveXID: true},
	{name: "no reply chunk word", msg: wire(0x1234, 1, 32, 0, 0, 0), field: "reply chunk", reason: ErrShort, haveXID: true},
	{name: "reply discriminator 0xffffffff", msg: wire(0x1234, 1, 32, 0, 0, 0, 0xffffffff), field: "reply chunk", reason: ErrBadDiscriminator, haveXID: true},
	{name: "reply chunk segcount 0", msg: wire(0x1234, 1, 32, 0, 0, 0, 1, 0), field: "reply chunk", reason: ErrEmptyChunk, haveXID: true},
	{name: "reply chunk truncated", msg: wire(0x1234, 1, 32, 0, 0, 0, 1, 2, 1, 2, 0, 3), field: "reply chunk", reason: ErrShort, haveXID: true},
	{name: "nomsg without chunks", msg: wire(0x1234, 1, 32, 1, 0, 0, 0), field: "RDMA_NOMSG", reason: ErrNoChunks, haveXID: true},
	{name: "msgp without align", msg: wire(0x1234, 1, 32, 2, 4096), field: "rdma_align/rdma_thresh", reason: ErrShort, haveXID: true},
	{name: "msgp truncated lists", msg: wire(0x1234, 1, 32, 2, 4096, 1024, 0), field: "write list", reason: ErrShort, haveXID: true},
	{name: "done with trailing bytes", msg: wire(0x1234, 1, 32, 3, 0), field: "RDMA_DONE", reason: ErrTrailing, haveXID: true},
	{name: "error without code", msg: wire(0x1234, 1, 32, 4), field: "rdma_err", reason: ErrShort, haveXID: true},
	{name: "err_vers truncated", msg: wire(0x1234, 1, 32, 4, 1, 1), field: "rdma_vers_low/rdma_vers_high", reason: ErrShort, haveXID: true},
	{name: "err_vers trailing", msg: wire(0x1234, 1, 32, 4, 1, 1, 1, 0), field: "RDMA_ERROR", reason: ErrTrailing, haveXID: true},
	{name: "err_chunk trailing", msg: append(wire(0x1234, 1, 32, 4, 2), 0), field: "RDMA_ERROR", reason: ErrTrailing, haveXID: true},
}

func TestDecodeRejects(t *testing.T) {
	var h Header
	for _, tc := range badHeaders {
		n, err := tc.dec.Decode(&h, tc.msg)
		if n != 0 {
			t.Errorf("%s: n = %d on error", tc.name, n)
		}
		if tc.vers {
			var ve *VersionError
			if !errors.As(err, &ve) {
				t.Errorf("%s: got %v, want *VersionError", tc.name, err)
				continue
			}
			if ve.XID != 0x1234 || ve.Vers == 1 {
				t.Errorf("%s: VersionError %+v", tc.name, ve)
			}
			continue
		}
		var ce *ChunkError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want *ChunkError", tc.name, err)
			continue
		}
		if ce.Field != tc.field || !errors.Is(err, tc.reason) || ce.HaveXID != tc.haveXID {
			t.Errorf("%s: got field %q reason %v haveXID %v (%v); want %q %v %v",
				tc.name, ce.Field, ce.Err, ce.HaveXID, err, tc.field, tc.reason, tc.haveXID)
		}
		if ce.HaveXID && ce.XID != 0x1234 {
			t.Errorf("%s: XID %#x", tc.name, ce.XID)
		}
		if ce.Offset < 0 || ce.Offset > len(tc.msg) {
			t.Errorf("%s: offset %d outside message of %d", tc.name, ce.Offset, len(tc.msg))
		}
		if err.Error() == "" {
			t.Errorf("%s: empty message", tc.name)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	var h Header
	_, err := h.Decode(wire(0xdeadbeef, 1, 32, 0, 0, 1, 0, 0, 0))
	want := "rpcrdma: xid 0xdeadbeef: write list[0] at byte 24: chunk has no segments"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = h.Decode(wire(0xdeadbeef, 2))
	want = "rpcrdma: xid 0xdeadbeef: unsupported version 2 (supported 1..1)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = h.Decode([]byte{1})
	want = "rpcrdma: header at byte 1: truncated"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestDecodeTruncations cuts every golden vector short at every length: each prefix must
// give an error (never a panic), and never a VersionError (the version is valid).
func TestDecodeTruncations(t *testing.T) {
	var h Header
	for _, g := range goldens {
		for i := 0; i < len(g.wire); i++ {
			_, err := h.Decode(g.wire[:i])
			if g.h.Proc == ProcError && g.h.ErrCode != ErrCodeVers && g.h.ErrCode != ErrCodeChunk && i >= 20 {
				continue // unknown codes carry whatever follows
			}
			if err == nil {
				t.Errorf("%s: prefix of %d bytes accepted", g.name, i)
			}
			var ve *VersionError
			if errors.As(err, &ve) {
				t.Errorf("%s: prefix of %d bytes: version error %v", g.name, i, err)
			}
		}
	}
}

// TestDecodeNoMsgTrailing: bytes after an RDMA_NOMSG header are left to the caller.
func TestDecodeNoMsgTrailing(t *testing.T) {
	var h Header
	msg := append(wire(1, 1, 1, 1, 1, 0, 1, 100, 0, 0, 0, 0, 0), 0xee, 0xee)
	n, err := h.Decode(msg)
	if err != nil || n != len(msg)-2 {
		t.Fatalf("n %d err %v", n, err)
	}
}

// randHeader returns a random valid header.
func randHeader(r *rand.Rand) Header {
	h := Header{XID: r.Uint32(), Vers: Version1, Credits: r.Uint32(), Proc: Proc(r.Intn(5))}
	rs := func() chunks.Segment {
		return chunks.Segment{Handle: r.Uint32(), Length: r.Uint32(), Offset: r.Uint64() >> 1}
	}
	switch h.Proc {
	case ProcMsgP:
		h.Align, h.Thresh = r.Uint32(), r.Uint32()
		fallthrough
	case ProcMsg, ProcNoMsg:
		for i := r.Intn(6); i > 0; i-- {
			h.ReadList = append(h.ReadList, chunks.ReadSegment{Position: r.Uint32() &^ 3, Segment: rs()})
		}
		for i := r.Intn(4); i > 0; i-- {
			c := chunks.WriteChunk{}
			for j := 1 + r.Intn(4); j > 0; j-- {
				c = append(c, rs())
			}
			h.WriteList = append(h.WriteList, c)
		}
		for i := r.Intn(3); i > 0; i-- {
			h.ReplyChunk = append(h.ReplyChunk, rs())
		}
		if h.Proc == ProcNoMsg && !h.HasChunks() {
			h.ReplyChunk = append(h.ReplyChunk, rs())
		}
	case ProcError:
		h.ErrCode = ErrCode(r.Intn(4))
		switch h.ErrCode {
		case ErrCodeVers:
			h.VersLow, h.VersHigh = r.Uint32(), r.Uint32()
		case ErrCodeChunk:
		default:
			h.ErrBody = make([]byte, r.Intn(40))
			r.Read(h.ErrBody)
		}
	}
	return h
}

// TestRoundTripProperty: for random valid headers, Decode(Append(h)) == h, the whole
// encoding is consumed, and re-encoding the decoded header gives the same bytes.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	var d Header
	for i := 0; i < 5000; i++ {
		h := randHeader(r)
		b, err := h.Append(nil)
		if err != nil {
			t.Fatalf("Append(%+v): %v", h, err)
		}
		if len(b) != h.Size() {
			t.Fatalf("Size %d, encoded %d", h.Size(), len(b))
		}
		n, err := d.Decode(b)
		if err != nil {
			t.Fatalf("Decode(%x): %v", b, err)
		}
		if n != len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		if !reflect.DeepEqual(normalize(d), normalize(h)) {
			t.Fatalf("round trip\n%+v\n%+v", h, d)
		}
		b2, _ := d.Append(nil)
		if string(b2) != string(b) {
			t.Fatalf("re-encoding differs")
		}
	}
}

// TestDecodeSteadyStateAllocs: a Header reused across messages of the same shape decodes
// without allocating.
func TestDecodeSteadyStateAllocs(t *testing.T) {
	var h Header
	for _, g := range goldens {
		if _, err := h.Decode(g.wire); err != nil {
			continue
		}
		allocs := testing.AllocsPerRun(50, func() { _, _ = h.Decode(g.wire) })
		if allocs != 0 {
			t.Errorf("%s: %.1f allocs per decode", g.name, allocs)
		}
	}
	buf := make([]byte, 0, 512)
	for _, g := range goldens {
		allocs := testing.AllocsPerRun(50, func() { _, _ = g.h.Append(buf[:0]) })
		if allocs != 0 {
			t.Errorf("%s: %.1f allocs per encode", g.name, allocs)
		}
	}
}

func TestCheckXID(t *testing.T) {
	var h Header
	msg := append(wire(0x55, 1, 1, 0, 0, 0, 0), wire(0x55, 0)...)
	n, err := h.Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.CheckXID(msg[n:]); err != nil {
		t.Errorf("matching XID: %v", err)
	}
	if err := h.CheckXID(wire(0x56)); !errors.Is(err, ErrXIDMismatch) {
		t.Errorf("mismatch: %v", err)
	}
	var ce *ChunkError
	if err := h.CheckXID([]byte{0, 0}); !errors.As(err, &ce) || !errors.Is(err, ErrShort) || ce.XID != 0x55 {
		t.Errorf("short: %v", err)
	}
}
