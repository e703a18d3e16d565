package chunks

import (
	"errors"
	"math/rand"
	"reflect"
	"testing"
)

func seg(h, l uint32, o uint64) Segment { return Segment{Handle: h, Length: l, Offset: o} }

func rseg(p, h, l uint32, o uint64) ReadSegment {
	return ReadSegment{Position: p, Segment: seg(h, l, o)}
}

func TestRoundUpPad(t *testing.T) {
	for _, tc := range []struct{ n, up, pad uint64 }{
		{0, 0, 0}, {1, 4, 3}, {2, 4, 2}, {3, 4, 1}, {4, 4, 0}, {5, 8, 3},
		{131072, 131072, 0}, {131073, 131076, 3}, {1<<32 - 1, 1 << 32, 1},
	} {
		if got := RoundUp(tc.n); got != tc.up {
			t.Errorf("RoundUp(%d) = %d, want %d", tc.n, got, tc.up)
		}
		if got := Pad(tc.n); got != tc.pad {
			t.Errorf("Pad(%d) = %d, want %d", tc.n, got, tc.pad)
		}
	}
}

func TestReadChunkEnd(t *testing.T) {
	// A 5-byte opaque at position 108: the sender elides the 3 pad bytes, the receiver
	// resumes decoding at 108+8 = 116.
	c := ReadChunk{Position: 108, Segments: []Segment{seg(1, 3, 0), seg(2, 2, 0)}}
	if c.Length() != 5 || c.End() != 116 {
		t.Errorf("chunk Length %d End %d, want 5 116", c.Length(), c.End())
	}
	// Maximum position and length do not overflow 64 bits.
	c = ReadChunk{Position: 1<<32 - 4, Segments: []Segment{seg(1, 1<<32-1, 0)}}
	if got := c.End(); got != (1<<32-4)+(1<<32) {
		t.Errorf("End max = %d", got)
	}
}

func TestCheckPositionSegment(t *testing.T) {
	for p := uint32(0); p < 16; p++ {
		err := CheckPosition(p)
		if (err == nil) != (p%4 == 0) {
			t.Errorf("CheckPosition(%d) = %v", p, err)
		}
		if err != nil && !errors.Is(err, ErrMisalignedPosition) {
			t.Errorf("wrong error %v", err)
		}
	}
	if err := CheckSegment(seg(1, 1, 1<<64-1)); !errors.Is(err, ErrOffsetOverflow) {
		t.Errorf("overflow not detected: %v", err)
	}
	if err := CheckSegment(seg(1, 1, 1<<64-2)); err != nil {
		t.Errorf("Offset+Length == 2^64-1 is fine: %v", err)
	}
}

func TestTotals(t *testing.T) {
	max := uint32(1<<32 - 1)
	w := WriteChunk{seg(1, max, 0), seg(2, max, 0), seg(3, max, 0)}
	if got, want := w.Length(), 3*uint64(max); got != want {
		t.Errorf("WriteChunk.Length = %d, want %d (no 32-bit overflow)", got, want)
	}
}

func TestGroup(t *testing.T) {
	list := []ReadSegment{
		rseg(0, 0x10, 100, 0x1000), // PZRC, two segments
		rseg(0, 0x11, 28, 0x2000),
		rseg(16, 0x20, 5, 0x3000), // inside the PZRC: allowed
		rseg(16, 0x21, 3, 0x4000),
		rseg(24, 0x30, 4096, 0x5000), // 16 + RoundUp(8) = 24: adjacent, allowed
	}
	got, err := Group(nil, list)
	if err != nil {
		t.Fatal(err)
	}
	want := []ReadChunk{
		{0, []Segment{seg(0x10, 100, 0x1000), seg(0x11, 28, 0x2000)}},
		{16, []Segment{seg(0x20, 5, 0x3000), seg(0x21, 3, 0x4000)}},
		{24, []Segment{seg(0x30, 4096, 0x5000)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Group =\n%v\nwant\n%v", got, want)
	}
	if back := flatten(got); !reflect.DeepEqual(back, list) {
		t.Fatalf("flatten = %v", back)
	}
	// Reuse: a second call with the returned slice does not allocate.
	allocs := testing.AllocsPerRun(100, func() { got, _ = Group(got, list) })
	if allocs != 0 {
		t.Errorf("Group reuse allocates %.1f times", allocs)
	}
	if got, _ := Group(got, nil); len(got) != 0 {
		t.Errorf("empty list gives %v", got)
	}
}

func TestGroupErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		list []ReadSegment
		want error
	}{
		{"misaligned", []ReadSegment{rseg(6, 1, 4, 0)}, ErrMisalignedPosition},
		{"decreasing", []ReadSegment{rseg(16, 1, 4, 0), rseg(8, 2, 4, 0)}, ErrPositionOrder},
		{"same position not adjacent", []ReadSegment{rseg(8, 1, 4, 0), rseg(16, 2, 4, 0), rseg(8, 3, 4, 0)}, ErrPositionOrder},
		{"overlap", []ReadSegment{rseg(8, 1, 9, 0), rseg(16, 2, 4, 0)}, ErrOverlap},
		{"overlap by roundup", []ReadSegment{rseg(8, 1, 5, 0), rseg(12, 2, 4, 0)}, ErrOverlap},
		{"offset overflow", []ReadSegment{rseg(8, 1, 5, 1<<64-2)}, ErrOffsetOverflow},
	} {
		_, err := Group(nil, tc.list)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestFill(t *testing.T) {
	offered := WriteChunk{seg(1, 4096, 0x1000), seg(2, 4096, 0x9000), seg(3, 4, 0xf000)}
	got, err := Fill(nil, offered, 5000)
	if err != nil {
		t.Fatal(err)
	}
	want := WriteChunk{seg(1, 4096, 0x1000), seg(2, 904, 0x9000), seg(3, 0, 0xf000)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fill = %v, want %v", got, want)
	}
	if _, err := Fill(nil, offered, 8197); !errors.Is(err, ErrTooLong) {
		t.Errorf("overfill: %v", err)
	}
	// In place.
	c := append(WriteChunk(nil), offered...)
	c, _ = Fill(c[:0], c, 0)
	if c.Length() != 0 || len(c) != 3 || c[2].Handle != 3 {
		t.Errorf("in-place zero fill = %v", c)
	}
}

// TestGroupProperty: grouping random valid lists and flattening them back is the identity,
// and every chunk's segments share its position.
func TestGroupProperty(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var out []ReadChunk
	for i := 0; i < 2000; i++ {
		var list []ReadSegment
		pos := uint32(0)
		if r.Intn(2) == 0 {
			pos = 4 * uint32(1+r.Intn(10))
		}
		for c := r.Intn(5); c > 0; c-- {
			var n uint64
			for s := 1 + r.Intn(4); s > 0; s-- {
				l := uint32(r.Intn(9000))
				list = append(list, rseg(pos, r.Uint32(), l, uint64(r.Uint32())))
				n += uint64(l)
			}
			step := ReadChunk{Position: pos, Segments: []Segment{{Length: uint32(n)}}}.End()
			if pos == 0 {
				step = 4
			}
			pos = uint32(step) + 4*uint32(r.Intn(4))
		}
		var err error
		out, err = Group(out, list)
		if err != nil {
			t.Fatalf("valid list %v: %v", list, err)
		}
		if back := flatten(out); !(len(back) == 0 && len(list) == 0) && !reflect.DeepEqual(back, list) {
			t.Fatalf("round trip %v -> %v", list, back)
		}
		for j := 1; j < len(out); j++ {
			if out[j].Position <= out[j-1].Position {
				t.Fatalf("positions not increasing: %v", out)
			}
		}
	}
}

// flatten turns chunks back into the read list that encodes them: one read segment per
// chunk segment, each carrying its chunk's position (RFC 8166 §3.4.5).
func flatten(cs []ReadChunk) []ReadSegment {
	var out []ReadSegment
	for _, c := range cs {
		for _, s := range c.Segments {
			out = append(out, ReadSegment{Position: c.Position, Segment: s})
		}
	}
	return out
}

func TestCheckWriteChunk(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    WriteChunk
		max  int
		want error
	}{
		{"ok", WriteChunk{seg(1, 2, 3)}, 0, nil},
		{"empty", WriteChunk{}, 0, ErrEmptyChunk},
		{"over limit", WriteChunk{seg(1, 2, 3), seg(1, 2, 3)}, 1, ErrTooLong},
		{"at limit", WriteChunk{seg(1, 2, 3), seg(1, 2, 3)}, 2, nil},
		{"overflow", WriteChunk{seg(1, 2, 3), seg(1, 2, 1<<64-1)}, 0, ErrOffsetOverflow},
	} {
		err := CheckWriteChunk(tc.c, tc.max)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestFillProperty: for random offered chunks and byte counts, Fill keeps handles and
// offsets, reports exactly n bytes, never more than a segment offers, and fills segments
// in order (only the last non-empty segment may be partly filled).
func TestFillProperty(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	var out WriteChunk
	for i := 0; i < 3000; i++ {
		var offered WriteChunk
		for j := 1 + r.Intn(6); j > 0; j-- {
			offered = append(offered, seg(r.Uint32(), uint32(r.Intn(10000)), r.Uint64()>>1))
		}
		n := uint64(r.Int63n(int64(offered.Length()) + 1))
		var err error
		out, err = Fill(out, offered, n)
		if err != nil {
			t.Fatal(err)
		}
		if out.Length() != n || len(out) != len(offered) {
			t.Fatalf("Fill(%v, %d) = %v", offered, n, out)
		}
		partial := false
		for j := range out {
			o, g := offered[j], out[j]
			if g.Handle != o.Handle || g.Offset != o.Offset || g.Length > o.Length {
				t.Fatalf("segment %d: %v from %v", j, g, o)
			}
			if partial && g.Length != 0 {
				t.Fatalf("data after a partly filled segment: %v", out)
			}
			if g.Length < o.Length {
				partial = true
			}
		}
		if _, err := Fill(nil, offered, offered.Length()+1); !errors.Is(err, ErrTooLong) {
			t.Fatalf("overfill accepted")
		}
	}
}
