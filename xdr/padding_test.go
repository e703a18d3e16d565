package xdr

import (
	"bytes"
	"errors"
	"testing"
)

// paddedStream is the RPC part of an RDMA_MSGP message whose 32-byte transport header
// (Base 32) announced rdma_align 64 and rdma_thresh 16: a 4-byte opaque below the
// threshold, then two opaques above it, each with padding between its length word and
// its data so that the data starts on a 64-byte boundary of the receive buffer.
//
// Seed §3.9: "Where the decoded length exceeds the rdma_thresh, the XDR decode MUST skip
// over the appropriate padding as indicated by rdma_align and the current XDR stream
// position."
func paddedStream() []byte {
	var b []byte
	b = AppendUint32(b, 7)                           // buffer 32..36
	b = AppendOpaque(b, []byte("tiny"))              // 36..44: below rdma_thresh, no padding
	b = AppendUint32(b, 20)                          // 44..48: length word of the first big opaque
	b = append(b, make([]byte, 16)...)               // 48..64: padding to the 64-byte boundary
	b = append(b, bytes.Repeat([]byte{0xa1}, 20)...) // 64..84: data
	b = AppendUint32(b, 16)                          // 84..88: length 16 = rdma_thresh: padded
	b = append(b, make([]byte, 40)...)               // 88..128: padding
	b = append(b, bytes.Repeat([]byte{0xb2}, 16)...) // 128..144
	return AppendUint32(b, 9)
}

func TestPaddedDecodeSkipsPadding(t *testing.T) {
	msg := paddedStream()
	d := NewDecoder(msg)
	d.SetPadding(Padding{Align: 64, Thresh: 16, Base: 32})
	if v, err := d.Uint32(); err != nil || v != 7 {
		t.Fatalf("first word %d, %v", v, err)
	}
	if s, err := d.String(16); err != nil || s != "tiny" {
		t.Fatalf("string below rdma_thresh: %q, %v", s, err)
	}
	a, err := d.Opaque(100)
	if err != nil || !bytes.Equal(a, bytes.Repeat([]byte{0xa1}, 20)) {
		t.Fatalf("first padded opaque % x, %v", a, err)
	}
	if &a[0] != &msg[64-32] { // buffer offset 64
		t.Fatal("first opaque data not at buffer offset 64")
	}
	b, err := d.Payload(100) // an inline payload is padded the same way
	if err != nil || !bytes.Equal(b, bytes.Repeat([]byte{0xb2}, 16)) || &b[0] != &msg[128-32] {
		t.Fatalf("second padded opaque % x, %v", b, err)
	}
	if v, err := d.Uint32(); err != nil || v != 9 || d.Len() != 0 {
		t.Fatalf("last word %d, %v, %d left", v, err, d.Len())
	}
	// Without the padding rule the same bytes decode as something else entirely.
	d.Reset(msg)
	d.Uint32()
	d.String(16)
	if a, err := d.Opaque(100); err != nil || a[0] != 0 {
		t.Fatalf("unpadded decode: % x, %v", a, err)
	}
}

func TestPaddingBefore(t *testing.T) {
	p := Padding{Align: 4096, Thresh: 512, Base: 28}
	for _, c := range []struct {
		n        uint32
		off, pad int
	}{
		{511, 100, 0},                   // below rdma_thresh
		{512, 100, 4096 - 128},          // at rdma_thresh: padded (the draft's definition)
		{8192, 4096 - 28, 0},            // already aligned
		{8192, 4096 - 28 + 4, 4096 - 4}, // one word past
	} {
		if got := p.Before(c.n, c.off); got != c.pad {
			t.Errorf("Before(%d, %d) = %d, want %d", c.n, c.off, got, c.pad)
		}
	}
	for _, a := range []uint32{0, 1} {
		if got := (Padding{Align: a, Base: 3}).Before(100, 1); got != 0 {
			t.Errorf("align %d pads %d", a, got)
		}
	}
}

func TestPaddedDecodeErrors(t *testing.T) {
	// Padding that runs past the stream is a short opaque, not consumed.
	msg := AppendUint32(nil, 20)
	msg = append(msg, make([]byte, 20)...)
	d := NewDecoder(msg)
	d.SetPadding(Padding{Align: 64, Thresh: 1})
	_, err := d.Opaque(-1)
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrShort) || de.Claimed != 60+20 || d.Offset() != 0 {
		t.Fatalf("err %v (%+v), offset %d", err, de, d.Offset())
	}
	// Reset turns the padding off.
	d.Reset(msg)
	if b, err := d.Opaque(-1); err != nil || len(b) != 20 {
		t.Fatalf("after Reset: %d bytes, %v", len(b), err)
	}
	// A placed payload has no padding in the stream.
	d.Reset(AppendUint32(nil, 20))
	d.SetPadding(Padding{Align: 64, Thresh: 1})
	d.SetPlaced([][]byte{make([]byte, 20)})
	if b, err := d.Payload(-1); err != nil || len(b) != 20 || d.Len() != 0 {
		t.Fatalf("placed payload: %d bytes, %v", len(b), err)
	}
}

func TestPaddedDecodeDoesNotAllocate(t *testing.T) {
	msg := paddedStream()
	var d Decoder
	n := testing.AllocsPerRun(100, func() {
		d.Reset(msg)
		d.SetPadding(Padding{Align: 64, Thresh: 16, Base: 32})
		d.Uint32()
		d.StringBytes(16)
		d.Opaque(100)
		d.Payload(100)
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func BenchmarkDecodePadded(b *testing.B) {
	b.ReportAllocs()
	msg := paddedStream()
	var d Decoder
	for i := 0; i < b.N; i++ {
		d.Reset(msg)
		d.SetPadding(Padding{Align: 64, Thresh: 16, Base: 32})
		d.Uint32()
		d.StringBytes(16)
		d.Opaque(100)
		if p, err := d.Payload(100); err != nil || len(p) != 16 {
			b.Fatal(err)
		}
	}
}
