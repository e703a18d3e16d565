// Package chunks holds the RPC-over-RDMA version 1 chunk types and the small, pure rules
// that govern them: grouping a read list into read chunks, validating positions and lengths,
// overflow-safe totals, the XDR roundup rules of seed draft §3.7 (RFC 8166 §3.4.5,
// §3.4.6), the extra 4-byte pad segment Linux appends to write chunks, and splitting a byte
// range into segments.
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

// End returns the XDR position just after the chunk's data, including the XDR roundup the
// sender elided: Position + RoundUp(Length). See NextPosition.
func (c ReadChunk) End() uint64 { return NextPosition(c.Position, c.Length()) }

// WriteChunk is a write chunk: a counted array of segments (xdr_write_chunk) that the
// responder fills in order. The reply chunk is a WriteChunk as well. A chunk on the wire
// must have at least one segment.
type WriteChunk []Segment

// Length returns the sum of the segment lengths.
func (c WriteChunk) Length() uint64 { return TotalLength(c) }

// Errors returned, wrapped with the offending index and value, by this package. Test with
// errors.Is.
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
	// ErrLengthMismatch: a chunk's length disagrees with the XDR length word of its item.
	ErrLengthMismatch = errors.New("chunk length does not match the XDR length")
)

// CheckPosition reports whether p is a valid read segment position (a multiple of 4).
func CheckPosition(p uint32) error {
	if p&3 != 0 {
		return fmt.Errorf("chunks: position %d: %w", p, ErrMisalignedPosition)
	}
	return nil
}

// CheckSegment reports a segment whose Offset+Length overflows.
func CheckSegment(s Segment) error {
	if _, ok := s.End(); !ok {
		return fmt.Errorf("chunks: segment handle %#x offset %#x length %d: %w",
			s.Handle, s.Offset, s.Length, ErrOffsetOverflow)
	}
	return nil
}

// CheckWriteChunk validates a write chunk or reply chunk: at least one segment (an empty
// chunk is ErrEmptyChunk; Linux svcrdma rejects segcount 0), at most maxSegs segments
// when maxSegs > 0 (ErrTooLong), and no segment whose Offset+Length overflows.
func CheckWriteChunk(c WriteChunk, maxSegs int) error {
	if len(c) == 0 {
		return fmt.Errorf("chunks: write chunk: %w", ErrEmptyChunk)
	}
	if maxSegs > 0 && len(c) > maxSegs {
		return fmt.Errorf("chunks: write chunk of %d segments, limit %d: %w", len(c), maxSegs, ErrTooLong)
	}
	for i, s := range c {
		if err := CheckSegment(s); err != nil {
			return fmt.Errorf("chunks: write chunk segment %d: %w", i, err)
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

// ReadListLength returns the sum of the lengths of all read segments.
func ReadListLength(list []ReadSegment) uint64 {
	var n uint64
	for i := range list {
		n += uint64(list[i].Length)
	}
	return n
}

// WriteListLength returns the sum of the lengths of all segments of all write chunks.
func WriteListLength(list []WriteChunk) uint64 {
	var n uint64
	for _, c := range list {
		n += c.Length()
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

// Flatten appends the read list that encodes chunks to dst: one read segment per chunk
// segment, each carrying its chunk's position (the encoding Linux uses and RFC 8166
// §3.4.5 describes).
func Flatten(dst []ReadSegment, chunks []ReadChunk) []ReadSegment {
	for _, c := range chunks {
		for _, s := range c.Segments {
			dst = append(dst, ReadSegment{Position: c.Position, Segment: s})
		}
	}
	return dst
}

// RoundUp returns n rounded up to a multiple of 4, the XDR unit (RFC 4506 §3). Values
// within 3 of 2^64 wrap; lengths here are sums of 32-bit values and never get there.
func RoundUp(n uint64) uint64 { return (n + 3) &^ 3 }

// Pad returns the number of XDR roundup bytes that follow n data bytes (0 to 3).
func Pad(n uint64) uint64 { return RoundUp(n) - n }

// NextPosition returns the XDR position of the item that follows a read chunk with data
// length n at position pos: pos + RoundUp(n). Seed §3.7: the sender elides the roundup of
// a read chunk (RFC 8166 §3.4.5: it SHOULD NOT include it), and the receiver infers it, so
// the XDR stream resumes at the next 4-byte boundary whether or not the pad was sent.
func NextPosition(pos uint32, n uint64) uint64 { return uint64(pos) + RoundUp(n) }

// ReadChunkLength returns the chunk length a sender puts in a read chunk that carries an
// opaque item of xdrLen data bytes: the bare data length, since the roundup is elided
// (seed §3.7, RFC 8166 §3.4.5; Linux since v5.16 never sends it).
func ReadChunkLength(xdrLen uint32) uint64 { return uint64(xdrLen) }

// CheckReadChunkLength checks a received read chunk of chunkLen bytes against the XDR
// length word xdrLen of the item it carries. Both the elided form (chunkLen == xdrLen) and
// the padded form (chunkLen == RoundUp(xdrLen)) are accepted, as Linux svcrdma does; padded
// reports which one it was. Any other value is ErrLengthMismatch.
func CheckReadChunkLength(xdrLen uint32, chunkLen uint64) (padded bool, err error) {
	switch {
	case chunkLen == uint64(xdrLen):
		return false, nil
	case chunkLen == RoundUp(uint64(xdrLen)):
		return true, nil
	}
	return false, fmt.Errorf("chunks: read chunk length %d for XDR length %d: %w",
		chunkLen, xdrLen, ErrLengthMismatch)
}

// WriteChunkReportLength returns the length a responder reports for a write chunk into
// which it wrote n payload bytes. Seed §3.7: roundup bytes are not transferred; instead
// the length reported for the final chunk receiving data is increased to include them
// (roundup true). Linux svcrdma reports the bare payload length (roundup false), and the
// Linux client accepts either.
func WriteChunkReportLength(n uint64, final, roundup bool) uint64 {
	if final && roundup {
		return RoundUp(n)
	}
	return n
}

// CheckWriteChunkLength checks the length a responder reported for a write chunk
// (reported, the sum of its segment lengths) against the XDR length word xdrLen of the
// result it carries. The bare length and the rounded-up length (seed §3.7) are both
// valid; anything else is ErrLengthMismatch.
func CheckWriteChunkLength(xdrLen uint32, reported uint64) error {
	if reported == uint64(xdrLen) || reported == RoundUp(uint64(xdrLen)) {
		return nil
	}
	return fmt.Errorf("chunks: write chunk reports %d bytes for XDR length %d: %w",
		reported, xdrLen, ErrLengthMismatch)
}

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

// PadSegmentLength is the length of the extra segment the Linux client appends to a write
// chunk when the expected payload length is not a multiple of 4 (it points at a 4-byte
// per-connection "write pad" buffer; notes §1.2, Linux commit 21037b8c2258).
const PadSegmentLength = 4

// SplitPad recognises a Linux-style pad segment. It reports, for a write chunk offered to
// carry a payload of n bytes, the part that carries data and whether the final segment is
// a pad sink: true when n is not 4-aligned, the chunk has at least two segments, the last
// one is exactly PadSegmentLength bytes, and the segments before it hold at least n
// bytes. A responder that does not write XDR roundup (Linux svcrdma) writes only into
// data and reports length 0 for the pad segment; one that follows seed §3.7 writes the
// roundup into it.
func SplitPad(c WriteChunk, n uint64) (data WriteChunk, pad bool) {
	k := len(c)
	if n&3 == 0 || k < 2 || c[k-1].Length != PadSegmentLength || c[:k-1].Length() < n {
		return c, false
	}
	return c[:k-1], true
}

// AppendPad appends pad, a 4-byte segment, to c when the payload length n is not a
// multiple of 4, as the Linux client does (notes §1.2). Otherwise it returns c unchanged.
func AppendPad(c WriteChunk, n uint64, pad Segment) WriteChunk {
	if n&3 == 0 {
		return c
	}
	pad.Length = PadSegmentLength
	return append(c, pad)
}

// Split appends to dst the segments that cover length bytes of one registered area
// (handle, starting at offset), each at most maxSeg bytes long (maxSeg 0 means 2^32-1,
// the largest a segment can express). A zero length appends nothing. It returns
// ErrOffsetOverflow if offset+length overflows 64 bits.
func Split(dst []Segment, handle uint32, offset, length uint64, maxSeg uint32) ([]Segment, error) {
	if offset+length < offset {
		return dst, fmt.Errorf("chunks: split offset %#x length %d: %w", offset, length, ErrOffsetOverflow)
	}
	m := uint64(maxSeg)
	if m == 0 {
		m = 1<<32 - 1
	}
	for length > 0 {
		l := length
		if l > m {
			l = m
		}
		dst = append(dst, Segment{Handle: handle, Length: uint32(l), Offset: offset})
		offset += l
		length -= l
	}
	return dst, nil
}
