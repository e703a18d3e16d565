package chunks

import (
	"encoding/binary"
	"errors"
	"testing"
)

// parseReadList turns fuzz bytes into a read list: 24 bytes per entry, the wire layout of a
// read segment without its discriminator (position, handle, length, offset; big-endian).
func parseReadList(b []byte) []ReadSegment {
	var list []ReadSegment
	for len(b) >= 24 {
		list = append(list, ReadSegment{
			Position: binary.BigEndian.Uint32(b[0:]),
			Segment: Segment{
				Handle: binary.BigEndian.Uint32(b[4:]),
				Length: binary.BigEndian.Uint32(b[8:]),
				Offset: binary.BigEndian.Uint64(b[12:]),
			},
		})
		b = b[24:]
	}
	return list
}

// FuzzGroup checks that Group never panics, reports only its documented errors, and that
// a grouping it accepts flattens back to the input with valid, increasing positions.
func FuzzGroup(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		list := parseReadList(b)
		out, err := Group(nil, list)
		if err != nil {
			for _, e := range []error{ErrMisalignedPosition, ErrPositionOrder, ErrOverlap, ErrOffsetOverflow} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("undocumented error %v", err)
		}
		back := flatten(out)
		if len(back) != len(list) {
			t.Fatalf("flatten lost entries: %d != %d", len(back), len(list))
		}
		for i := range back {
			if back[i] != list[i] {
				t.Fatalf("entry %d: %v != %v", i, back[i], list[i])
			}
		}
		for i, c := range out {
			if c.Position%4 != 0 || len(c.Segments) == 0 {
				t.Fatalf("chunk %d invalid: %v", i, c)
			}
			if i > 0 && c.Position <= out[i-1].Position {
				t.Fatalf("positions not increasing")
			}
			if i > 0 && out[i-1].Position != 0 && uint64(c.Position) < out[i-1].End() {
				t.Fatalf("overlap accepted")
			}
		}
	})
}
