// Package chunks holds the RPC-over-RDMA version 1 chunk types and the small, pure rules
// that govern them, in the one place the header codec and the transports (package
// rpcrdma) take them from: grouping a read list into read chunks, validating positions
// and segments, overflow-safe totals, the XDR roundup rules of seed draft §3.7 (RFC 8166
// §3.4.5, §3.4.6), and filling a write chunk.
//
// Terms follow RFC 8166: a Segment is one registered memory area (handle = STag, length,
// offset); a read chunk is one or more read segments that share an XDR position; a write
// chunk is a counted array of segments; the reply chunk is a write chunk.
//
// The package knows nothing of the header wire format (see package rpcrdma) or of memory
// registration. Its functions do not allocate unless a caller-supplied slice must grow.
package chunks

import (
	"errors"
	"fmt"
)

// Segment is an RDMA segment (RFC 8166 §3.4.3, xdr_rdma_segment): a registered memory
// area of the sender identified by an STag (Handle), a byte count and an offset (the
// tagged offset, often a virtual address). Handle and Offset are opaque to the peer.
type Segment struct {
	Handle uint32 // STag of the registered memory
	Length uint32 // length of the area in bytes
	Offset uint64 // tagged offset (virtual address or zero-based offset)
}

// End returns Offset+Length, and false if that sum overflows 64 bits.
func (s Segment) End() (uint64, bool) {
	e := s.Offset + uint64(s.Length)
	return e, e >= s.Offset
}

// ReadSegment is one entry of a read list (xdr_read_chunk in the seed draft, a "Read
// segment" in RFC 8166 §3.4.5): a segment plus the XDR position at which its data belongs.
type ReadSegment struct {
	Position uint32 // byte offset in the whole XDR stream of the RPC message
	Segment
}

// ReadChunk is a read chunk: the read segments that share one position, in list order.
// Position 0 denotes a position-zero read chunk (PZRC), which carries a whole RPC message.
type ReadChunk struct {
	Position uint32
	Segments []Segment
}

// Length returns the sum of the segment lengths.
func (c ReadChunk) Length() uint64 { return TotalLength(c.Segments) }

// End returns the XDR position just after the chunk's data, including the XDR roundup:
// Position + RoundUp(Length). Seed §3.7: the sender elides the roundup of a read chunk
// (RFC 8166 §3.4.5: it SHOULD NOT include it) and the receiver infers it, so the XDR
// stream resumes at the next 4-byte boundary whether or not the pad was sent.
func (c ReadChunk) End() uint64 { return uint64(c.Position) + RoundUp(c.Length()) }

// WriteChunk is a write chunk: a counted array of segments (xdr_write_chunk) that the
// responder fills in order. The reply chunk is a WriteChunk as well. A chunk on the wire
// must have at least one segment.
type WriteChunk []Segment

// Length returns the sum of the segment lengths.
func (c WriteChunk) Length() uint64 { return TotalLength(c) }

// Errors of this package: the Check functions return them bare, Group and Fill wrap them
// with the offending index and value. Test with errors.Is.
var (
	// ErrMisalignedPosition: a read segment position is not a multiple of 4. XDR items
	// start on 4-byte boundaries (RFC 4506 §3), and Linux svcrdma rejects such lists.
	ErrMisalignedPosition = errors.New("position not a multiple of 4")
	// ErrPositionOrder: read chunk positions decrease along the read list.
	ErrPositionOrder = errors.New("read list positions decrease")
	// ErrOverlap: a read chunk starts before the previous chunk's data (plus roundup) ends.
	ErrOverlap = errors.New("read chunk overlaps the previous chunk")
	// ErrEmptyChunk: a chunk without segments.
	ErrEmptyChunk = errors.New("chunk has no segments")
	// ErrOffsetOverflow: a segment's Offset+Length overflows 64 bits.
	ErrOffsetOverflow = errors.New("segment offset plus length overflows")
	// ErrTooLong: data does not fit the chunk or a limit.
	ErrTooLong = errors.New("length exceeds the chunk")
)

// CheckPosition returns ErrMisalignedPosition when p is not a valid read segment
// position (a multiple of 4), else nil. Like the other Check functions it returns the
// bare reason, without allocating, for the caller to wrap with where it was found.
func CheckPosition(p uint32) error {
	if p&3 != 0 {
		return ErrMisalignedPosition
	}
	return nil
}

// CheckSegment returns ErrOffsetOverflow when s's Offset+Length overflows 64 bits, else
// nil.
func CheckSegment(s Segment) error {
	if _, ok := s.End(); !ok {
		return ErrOffsetOverflow
	}
	return nil
}

// CheckWriteChunk validates a write chunk or reply chunk: at least one segment (an empty
// chunk is ErrEmptyChunk; Linux svcrdma rejects segcount 0), at most maxSegs segments
// when maxSegs > 0 (ErrTooLong), and no segment whose Offset+Length overflows
// (ErrOffsetOverflow).
func CheckWriteChunk(c WriteChunk, maxSegs int) error {
	if len(c) == 0 {
		return ErrEmptyChunk
	}
	if maxSegs > 0 && len(c) > maxSegs {
		return ErrTooLong
	}
	for _, seg := range c {
		if err := CheckSegment(seg); err != nil {
			return err
		}
	}
	return nil
}

// TotalLength returns the sum of the lengths of segs. The sum is computed in 64 bits and
// cannot overflow for any slice that fits in memory (each term is below 2^32).
func TotalLength(segs []Segment) uint64 {
	var n uint64
	for i := range segs {
		n += uint64(segs[i].Length)
	}
	return n
}

// Group groups a read list into read chunks and validates it. It reuses dst (and the
// Segments slices of dst's elements up to its capacity), so a caller that keeps the result
// for the next call does not allocate in steady state.
//
// Rules (seed §3.4, RFC 8166 §3.4.5, Linux svcrdma): every position is a multiple of 4;
// consecutive entries with the same position form one chunk; positions never decrease
// along the list (a later entry with a smaller position is ErrPositionOrder, so segments of
// one chunk are always adjacent); and every chunk at a nonzero position starts at or
// after the previous nonzero-position chunk's End (ErrOverlap). A position-zero chunk
// carries the whole message, so chunks at other positions may lie inside it. Segments
// whose Offset+Length overflows are rejected.
//
// On ordering: the specifications say only that the segments of one chunk share a
// position (seed §3.4: "all chunks belonging to a single RPC argument or result will
// have the same position"); they do not order the list. Every known sender emits
// segments in XDR order (the Linux client sends a single chunk; the Linux server sorts
// what it receives and then requires increasing, non-overlapping chunks). Requiring a
// nondecreasing list here keeps grouping one pass and allocation-free and makes an
// interleaved list (P8, P16, P8), whose meaning no specification defines, an error.
func Group(dst []ReadChunk, list []ReadSegment) ([]ReadChunk, error) {
	dst = dst[:0]
	var prevEnd uint64
	havePrev := false
	for i := range list {
		rs := &list[i]
		if err := CheckPosition(rs.Position); err != nil {
			return dst, fmt.Errorf("chunks: read segment %d: %w", i, err)
		}
		if err := CheckSegment(rs.Segment); err != nil {
			return dst, fmt.Errorf("chunks: read segment %d: %w", i, err)
		}
		if n := len(dst); n > 0 && dst[n-1].Position == rs.Position {
			dst[n-1].Segments = append(dst[n-1].Segments, rs.Segment)
			continue
		}
		if n := len(dst); n > 0 {
			last := &dst[n-1]
			if rs.Position < last.Position {
				return dst, fmt.Errorf("chunks: read segment %d: position %d after %d: %w",
					i, rs.Position, last.Position, ErrPositionOrder)
			}
			if last.Position != 0 {
				prevEnd, havePrev = last.End(), true
			}
			if havePrev && uint64(rs.Position) < prevEnd {
				return dst, fmt.Errorf("chunks: read segment %d: position %d before end %d of previous chunk: %w",
					i, rs.Position, prevEnd, ErrOverlap)
			}
		}
		dst = growChunks(dst)
		c := &dst[len(dst)-1]
		c.Position = rs.Position
		c.Segments = append(c.Segments[:0], rs.Segment)
	}
	return dst, nil
}

// growChunks extends dst by one element, reusing the element already in its capacity.
func growChunks(dst []ReadChunk) []ReadChunk {
	if len(dst) < cap(dst) {
		return dst[:len(dst)+1]
	}
	return append(dst, ReadChunk{})
}

// RoundUp returns n rounded up to a multiple of 4, the XDR unit (RFC 4506 §3). Values
// within 3 of 2^64 wrap; lengths here are sums of 32-bit values and never get there.
func RoundUp(n uint64) uint64 { return (n + 3) &^ 3 }

// Pad returns the number of XDR roundup bytes that follow n data bytes (0 to 3).
func Pad(n uint64) uint64 { return RoundUp(n) - n }

// Fill returns, in dst, the write chunk a responder sends back after writing n bytes into
// offered: the same segments (handles and offsets) with each length rewritten to the
// bytes placed in it, min(remaining, offered length), so unused segments report 0 (RFC
// 8166 §3.4.6, as Linux does). dst is reused; it may be offered[:0] to rewrite in place.
// It returns ErrTooLong if n exceeds offered's capacity.
func Fill(dst, offered WriteChunk, n uint64) (WriteChunk, error) {
	if total := offered.Length(); n > total {
		return dst[:0], fmt.Errorf("chunks: %d bytes into a write chunk of %d: %w", n, total, ErrTooLong)
	}
	dst = dst[:0]
	for _, s := range offered {
		l := uint64(s.Length)
		if n < l {
			l = n
		}
		n -= l
		s.Length = uint32(l)
		dst = append(dst, s)
	}
	return dst, nil
}
