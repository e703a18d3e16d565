package rpcrdma

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// fuzzReadList turns b into read segments, 12 bytes each: position, length, handle.
func fuzzReadList(b []byte) []chunks.ReadSegment {
	var list []chunks.ReadSegment
	for len(b) >= 12 && len(list) < 64 {
		list = append(list, chunks.ReadSegment{
			Position: binary.BigEndian.Uint32(b),
			Segment: chunks.Segment{
				Length: binary.BigEndian.Uint32(b[4:]),
				Handle: binary.BigEndian.Uint32(b[8:]),
				Offset: uint64(binary.BigEndian.Uint32(b[8:])) << 20,
			},
		})
		b = b[12:]
	}
	return list
}

// FuzzAssemblyPlan checks the placement of untrusted read chunks (what a server does with
// a call's read list, and a client with a reply's): either a clear ErrChunkPlacement, or
// pieces that tile the message exactly, stay within the limit, the inline data and each
// segment, and never read a remote byte twice.
func FuzzAssemblyPlan(f *testing.F) {
	f.Fuzz(func(t *testing.T, inlineLen uint16, list []byte) {
		const limit = 1 << 17
		grouped, err := chunks.Group(nil, fuzzReadList(list))
		if err != nil {
			return // the transport answers ERR_CHUNK before planning
		}
		var pzrc []chunks.Segment
		rcs := grouped
		if len(grouped) > 0 && grouped[0].Position == 0 {
			pzrc, rcs = grouped[0].Segments, grouped[1:]
		}
		var a assembler
		total, err := a.planAssembly(int(inlineLen), pzrc, rcs, limit)
		if err != nil {
			if !errors.Is(err, ErrChunkPlacement) {
				t.Fatalf("error %v does not wrap ErrChunkPlacement", err)
			}
			return
		}
		if total > limit || total < 0 {
			t.Fatalf("total %d beyond limit %d", total, limit)
		}
		next := 0
		srcLen := int(inlineLen)
		if len(pzrc) > 0 {
			srcLen = -1 // inline comes from the PZRC
		}
		for i, p := range a.plan {
			if p.dstOff != next || p.n <= 0 {
				t.Fatalf("piece %d at %d (%d bytes), want at %d", i, p.dstOff, p.n, next)
			}
			next += p.n
			switch p.kind {
			case pieceInline:
				if srcLen < 0 || p.srcOff < 0 || p.srcOff+p.n > srcLen {
					t.Fatalf("inline piece %d reads [%d,%d) of %d inline bytes", i, p.srcOff, p.srcOff+p.n, srcLen)
				}
			case pieceRemote:
				if int(p.seg.Length) != p.n {
					t.Fatalf("remote piece %d: segment length %d for %d bytes", i, p.seg.Length, p.n)
				}
			case pieceZero:
				if p.n > 3 {
					t.Fatalf("pad piece %d of %d bytes", i, p.n)
				}
			}
		}
		if next != total {
			t.Fatalf("pieces cover %d bytes, total %d", next, total)
		}
	})
}
