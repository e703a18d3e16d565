// Transport header codec. This file and errors.go hold Header, its allocation-free
// encoder (Header.Append, AppendErrVers, AppendErrChunk) and decoder (Header.Decode,
// Decoder.Decode), the typed decode errors a responder maps to RDMA_ERROR replies
// (*VersionError → ERR_VERS, *ChunkError → ERR_CHUNK), and size helpers. The chunk types
// and their rules live in package chunks.

package rpcrdma

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// Wire layout (RFC 8166 §4.1.2, §4.2-4.3; seed §4.1, §4.3); every field is a big-endian 32-bit XDR
// word except the 64-bit segment offset:
//
//	 0  rdma_xid      mirrors the RPC XID
//	 4  rdma_vers     1
//	 8  rdma_credit   credits requested (call) / granted (reply)
//	12  rdma_proc     0 RDMA_MSG, 1 RDMA_NOMSG, 2 RDMA_MSGP, 3 RDMA_DONE, 4 RDMA_ERROR
//	16  body:
//	    RDMA_MSG, RDMA_NOMSG:  read list, write list, reply chunk
//	    RDMA_MSGP:             rdma_align, rdma_thresh, read list, write list, reply chunk
//	    RDMA_DONE:             nothing
//	    RDMA_ERROR:            rdma_err (1 ERR_VERS: rdma_vers_low, rdma_vers_high;
//	                           2 ERR_CHUNK: nothing)
//
//	read list    = { 1, position, handle, length, offset(2 words) }* 0   (24 bytes/entry)
//	write list   = { 1, segcount, { handle, length, offset(2 words) } × segcount }* 0
//	reply chunk  = 0 | 1, segcount, { handle, length, offset(2 words) } × segcount
//
// An RPC message follows the header of RDMA_MSG and RDMA_MSGP messages.

// Version1 is the RPC-over-RDMA protocol version this package implements (rdma_vers).
const Version1 = 1

// Proc is the rdma_proc message type.
type Proc uint32

// Message types (RFC 8166 §4.2.4 and its XDR, §4.1.2: enum rdma_proc; RDMA_MSGP and
// RDMA_DONE are no longer used, §4.6).
const (
	ProcMsg   Proc = 0 // RDMA_MSG: chunk lists, then an RPC message
	ProcNoMsg Proc = 1 // RDMA_NOMSG: chunk lists only; the RPC message travels in chunks
	ProcMsgP  Proc = 2 // RDMA_MSGP: padded message (seed §3.9); "not used" in RFC 8166
	ProcDone  Proc = 3 // RDMA_DONE: reply read chunks released; "not used" in RFC 8166
	ProcError Proc = 4 // RDMA_ERROR: a transport header error
)

// String returns the RFC name of p, or "rdma_proc(N)".
func (p Proc) String() string {
	switch p {
	case ProcMsg:
		return "RDMA_MSG"
	case ProcNoMsg:
		return "RDMA_NOMSG"
	case ProcMsgP:
		return "RDMA_MSGP"
	case ProcDone:
		return "RDMA_DONE"
	case ProcError:
		return "RDMA_ERROR"
	}
	return fmt.Sprintf("rdma_proc(%d)", uint32(p))
}

// ErrCode is the rdma_err code of an RDMA_ERROR message.
type ErrCode uint32

// Error codes (RFC 8166 §4.5 and its XDR, §4.1.2: enum rpc_rdma_errcode).
const (
	ErrCodeVers  ErrCode = 1 // ERR_VERS: unsupported version; carries the supported range
	ErrCodeChunk ErrCode = 2 // ERR_CHUNK: malformed header or chunks
)

// String returns the RFC name of c, or "rdma_err(N)".
func (c ErrCode) String() string {
	switch c {
	case ErrCodeVers:
		return "ERR_VERS"
	case ErrCodeChunk:
		return "ERR_CHUNK"
	}
	return fmt.Sprintf("rdma_err(%d)", uint32(c))
}

// Sizes in bytes.
const (
	FixedSize       = 16 // xid, vers, credits, proc
	MinSize         = 28 // RDMA_MSG/RDMA_NOMSG with three empty lists (Linux RPCRDMA_HDRLEN_MIN)
	ErrChunkSize    = 20 // RDMA_ERROR / ERR_CHUNK (Linux RPCRDMA_HDRLEN_ERR)
	ErrVersSize     = 28 // RDMA_ERROR / ERR_VERS with low and high
	DoneSize        = 16 // RDMA_DONE
	SegmentSize     = 16 // handle, length, 64-bit offset
	ReadSegmentSize = 24 // discriminator, position, segment: one read list entry
)

// Decoder limits used when a Decoder field is zero.
const (
	// DefaultMaxSegments bounds the segments of one header (read, write and reply
	// together). A 4 KiB inline buffer holds at most 255; Linux sends at most 16 per chunk
	// and accepts up to about 258 per write chunk.
	DefaultMaxSegments = 512
	// DefaultMaxWriteChunks bounds the chunks of one write list (Linux sends one).
	DefaultMaxWriteChunks = 32
)

// Header is a decoded or to-be-encoded RPC-over-RDMA version 1 transport header. Which
// fields are meaningful depends on Proc. The zero value is ready to use; Decode reuses the
// slices' capacity, so a Header kept across messages decodes without allocating.
type Header struct {
	XID     uint32 // rdma_xid
	Vers    uint32 // rdma_vers: Version1 on every valid message
	Credits uint32 // rdma_credit
	Proc    Proc   // rdma_proc

	// RDMA_MSGP only (seed §3.9): padding alignment and threshold.
	Align, Thresh uint32

	// RDMA_MSG, RDMA_NOMSG, RDMA_MSGP: the chunk lists. ReadList is in wire order (group
	// it with chunks.Group); an empty ReplyChunk means none is present.
	ReadList   []chunks.ReadSegment
	WriteList  []chunks.WriteChunk
	ReplyChunk chunks.WriteChunk

	// RDMA_ERROR only.
	ErrCode           ErrCode
	VersLow, VersHigh uint32 // ERR_VERS: supported version range, inclusive
	// ErrBody holds the bytes after rdma_err for error codes other than ERR_VERS and
	// ERR_CHUNK, carried as-is and of any length: the seed draft's default arm is eight
	// words (uint32 rdma_extra[8]), RFC 8166 has no default arm, so a newer peer may send
	// anything. After Decode it aliases the decoded message.
	ErrBody []byte
}

// Reset clears h, keeping the capacity of its slices.
func (h *Header) Reset() {
	*h = Header{
		ReadList:   h.ReadList[:0],
		WriteList:  h.WriteList[:0],
		ReplyChunk: h.ReplyChunk[:0],
	}
}

// HasChunks reports whether any of the three lists is non-empty.
func (h *Header) HasChunks() bool {
	return len(h.ReadList) > 0 || len(h.WriteList) > 0 || len(h.ReplyChunk) > 0
}

// ReadListSize returns the encoded size of n read list entries including the list
// terminator.
func ReadListSize(n int) int { return n*ReadSegmentSize + 4 }

// WriteChunkSize returns the encoded size of one write chunk of n segments (segment count
// plus segments), without the list discriminator.
func WriteChunkSize(n int) int { return 4 + n*SegmentSize }

// WriteListSize returns the encoded size of a write list whose chunks have the given
// segment counts, including discriminators and terminator.
func WriteListSize(segsPerChunk ...int) int {
	n := 4
	for _, s := range segsPerChunk {
		n += 4 + WriteChunkSize(s)
	}
	return n
}

// ReplyChunkSize returns the encoded size of a reply chunk of n segments (4 when n is 0:
// the "absent" discriminator).
func ReplyChunkSize(n int) int {
	if n == 0 {
		return 4
	}
	return 4 + WriteChunkSize(n)
}

// Size returns the number of bytes Append would produce for h (valid or not).
func (h *Header) Size() int {
	switch h.Proc {
	case ProcMsg, ProcNoMsg, ProcMsgP:
		n := FixedSize + ReadListSize(len(h.ReadList)) + 4 + ReplyChunkSize(len(h.ReplyChunk))
		for _, c := range h.WriteList {
			n += 4 + WriteChunkSize(len(c))
		}
		if h.Proc == ProcMsgP {
			n += 8
		}
		return n
	case ProcError:
		switch h.ErrCode {
		case ErrCodeVers:
			return ErrVersSize
		case ErrCodeChunk:
			return ErrChunkSize
		}
		return ErrChunkSize + len(h.ErrBody)
	}
	return FixedSize
}

// LinuxMaxInlineSend returns the payload a Linux client (xprtrdma) can send inline in a
// call, given the negotiated inline send size and its maximum segments per chunk: it
// reserves room for a header with a full read list and a one-segment reply chunk,
// inlineSend − (28 + maxSegs×24 + 4 + 16 + 4) (rpcrdma_set_max_header_sizes; notes
// §1.1). With siw, LinuxMaxInlineSend(4096, 4) is 3948.
func LinuxMaxInlineSend(inlineSend, maxSegs int) int {
	return inlineSend - (MinSize + maxSegs*ReadSegmentSize + 4 + SegmentSize + 4)
}

// LinuxMaxInlineRecv returns the reply payload a Linux client expects inline, given its
// inline receive size and maximum segments per chunk: it reserves room for a header with
// one full write chunk, inlineRecv − (28 + 4 + maxSegs×16 + 4) (notes §1.1). With siw,
// LinuxMaxInlineRecv(4096, 4) is 3996.
func LinuxMaxInlineRecv(inlineRecv, maxSegs int) int {
	return inlineRecv - (MinSize + 4 + maxSegs*SegmentSize + 4)
}

// encodeError builds the error Append returns.
func encodeError(field string, index int, reason error) error {
	if index >= 0 {
		return fmt.Errorf("rpcrdma: encode %s[%d]: %w", field, index, reason)
	}
	return fmt.Errorf("rpcrdma: encode %s: %w", field, reason)
}

// check validates h for encoding with the rules Decode enforces.
func (h *Header) check() error {
	switch h.Proc {
	case ProcMsg, ProcNoMsg, ProcMsgP:
		for i := range h.ReadList {
			if err := chunks.CheckPosition(h.ReadList[i].Position); err != nil {
				return encodeError("read list position", i, err)
			}
			if err := chunks.CheckSegment(h.ReadList[i].Segment); err != nil {
				return encodeError("read list segment", i, err)
			}
		}
		for i, c := range h.WriteList {
			if err := chunks.CheckWriteChunk(c, 0); err != nil {
				return encodeError("write list", i, err)
			}
		}
		if len(h.ReplyChunk) > 0 {
			if err := chunks.CheckWriteChunk(h.ReplyChunk, 0); err != nil {
				return encodeError("reply chunk", -1, err)
			}
		}
		if h.Proc == ProcNoMsg && !h.HasChunks() {
			return encodeError("RDMA_NOMSG", -1, ErrNoChunks)
		}
	case ProcDone, ProcError:
	default:
		return encodeError("rdma_proc", -1, fmt.Errorf("%w: %d", ErrBadProc, uint32(h.Proc)))
	}
	return nil
}

// Append appends the encoding of h to b and returns the extended slice. It does not
// allocate when b has h.Size() bytes of spare capacity. It refuses (returning b unchanged
// and an error wrapping one of the ChunkError reasons) what Decode would reject: an
// unknown Proc, a read position that is not a multiple of 4, an empty write chunk, a
// segment whose offset plus length overflows, or an RDMA_NOMSG without chunks. Decoder
// limits (segment and chunk counts) are a receiver's policy and are not applied here.
func (h *Header) Append(b []byte) ([]byte, error) {
	if err := h.check(); err != nil {
		return b, err
	}
	if n := h.Size(); cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	be := binary.BigEndian
	b = be.AppendUint32(b, h.XID)
	b = be.AppendUint32(b, h.Vers)
	b = be.AppendUint32(b, h.Credits)
	b = be.AppendUint32(b, uint32(h.Proc))
	switch h.Proc {
	case ProcMsgP:
		b = be.AppendUint32(b, h.Align)
		b = be.AppendUint32(b, h.Thresh)
		fallthrough
	case ProcMsg, ProcNoMsg:
		for i := range h.ReadList {
			rs := &h.ReadList[i]
			b = be.AppendUint32(b, 1)
			b = be.AppendUint32(b, rs.Position)
			b = appendSegment(b, rs.Segment)
		}
		b = be.AppendUint32(b, 0)
		for _, c := range h.WriteList {
			b = be.AppendUint32(b, 1)
			b = appendChunk(b, c)
		}
		b = be.AppendUint32(b, 0)
		if len(h.ReplyChunk) == 0 {
			b = be.AppendUint32(b, 0)
		} else {
			b = be.AppendUint32(b, 1)
			b = appendChunk(b, h.ReplyChunk)
		}
	case ProcError:
		b = be.AppendUint32(b, uint32(h.ErrCode))
		switch h.ErrCode {
		case ErrCodeVers:
			b = be.AppendUint32(b, h.VersLow)
			b = be.AppendUint32(b, h.VersHigh)
		case ErrCodeChunk:
		default:
			b = append(b, h.ErrBody...)
		}
	}
	return b, nil
}

func appendSegment(b []byte, s chunks.Segment) []byte {
	b = binary.BigEndian.AppendUint32(b, s.Handle)
	b = binary.BigEndian.AppendUint32(b, s.Length)
	return binary.BigEndian.AppendUint64(b, s.Offset)
}

func appendChunk(b []byte, c chunks.WriteChunk) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
	for _, s := range c {
		b = appendSegment(b, s)
	}
	return b
}

// AppendErrVers appends an RDMA_ERROR / ERR_VERS message (28 bytes) announcing that this
// implementation supports versions Version1 through Version1. xid must echo the offending
// message's rdma_xid (RFC 8166 §4.5.1). vers is the rdma_vers to put in the reply: Linux
// svcrdma echoes the request's version, while the Linux client drops any reply whose
// rdma_vers is not 1, so Version1 is the interoperable choice.
func AppendErrVers(b []byte, xid, vers, credits uint32) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, xid)
	b = be.AppendUint32(b, vers)
	b = be.AppendUint32(b, credits)
	b = be.AppendUint32(b, uint32(ProcError))
	b = be.AppendUint32(b, uint32(ErrCodeVers))
	b = be.AppendUint32(b, Version1)
	return be.AppendUint32(b, Version1)
}

// AppendErrChunk appends an RDMA_ERROR / ERR_CHUNK message (20 bytes) answering the
// message with rdma_xid xid (RFC 8166 §4.5.2).
func AppendErrChunk(b []byte, xid, vers, credits uint32) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, xid)
	b = be.AppendUint32(b, vers)
	b = be.AppendUint32(b, credits)
	b = be.AppendUint32(b, uint32(ProcError))
	return be.AppendUint32(b, uint32(ErrCodeChunk))
}

// Decoder decodes transport headers with configurable limits. The zero value uses the
// defaults. A Decoder holds no state and may be shared.
type Decoder struct {
	MaxSegments    int // segments per header, all lists together; 0: DefaultMaxSegments
	MaxWriteChunks int // chunks per write list; 0: DefaultMaxWriteChunks
}

// Decode decodes one transport header from the start of b into h with the default
// limits. See Decoder.Decode.
func (h *Header) Decode(b []byte) (int, error) {
	var d Decoder
	return d.Decode(h, b)
}

// Decode decodes the transport header at the start of b into h, reusing h's slices, and
// returns the number of header bytes; for RDMA_MSG and RDMA_MSGP the RPC message is
// b[n:] (not copied). Decoded segments are copied into h; only h.ErrBody aliases b.
// Decode writes into the backing arrays of h's slices (that is how it avoids allocating),
// so do not decode into a Header whose slices share memory with data still in use.
//
// Checks, in order:
//
//  1. rdma_vers, as soon as its word is present (8 bytes): any value but Version1 gives a
//     *VersionError carrying the XID, whatever follows, so the caller can answer ERR_VERS.
//     (Linux svcrdma answers ERR_CHUNK instead when the message is shorter than 16 bytes.)
//  2. Structure, giving a *ChunkError naming the field (answer ERR_CHUNK): a message
//     shorter than 16 bytes; an unknown rdma_proc; a list or body cut short; an
//     optional-data discriminator other than 0 or 1; a read position that is not a
//     multiple of 4; a write or reply chunk with segment count 0; a segment count above
//     the limits or above what the remaining bytes can hold (checked before anything is
//     stored, so a claimed count never drives an allocation); a segment whose offset plus
//     length overflows 64 bits; too many write chunks; an RDMA_NOMSG with no chunks at
//     all (RFC 8166 §4.5.2); and bytes after an RDMA_DONE, ERR_VERS or ERR_CHUNK message,
//     whose bodies in the RFC 8166 XDR (§4.1.2) end there.
//
// Bytes after an RDMA_NOMSG header are not an error (RFC 8166 says none follow, and Linux
// ignores any); n tells the caller where they start. For an unknown error code the rest of
// the message is carried in h.ErrBody. Read positions are not checked for order or overlap
// here: chunks.Group does that when grouping.
//
// On error, h holds what was decoded so far (at least XID and Vers when present).
func (d *Decoder) Decode(h *Header, b []byte) (int, error) {
	h.Reset()
	be := binary.BigEndian
	if len(b) >= 4 {
		h.XID = be.Uint32(b)
	}
	if len(b) >= 8 {
		h.Vers = be.Uint32(b[4:])
		if h.Vers != Version1 {
			return 0, &VersionError{XID: h.XID, Vers: h.Vers}
		}
	}
	if len(b) < FixedSize {
		return 0, h.chunkErr(len(b) >= 4, "header", -1, len(b), ErrShort)
	}
	h.Credits = be.Uint32(b[8:])
	h.Proc = Proc(be.Uint32(b[12:]))
	p := FixedSize
	switch h.Proc {
	case ProcMsgP:
		if len(b) < p+8 {
			return 0, h.chunkErr(true, "rdma_align/rdma_thresh", -1, len(b), ErrShort)
		}
		h.Align = be.Uint32(b[p:])
		h.Thresh = be.Uint32(b[p+4:])
		p += 8
		fallthrough
	case ProcMsg, ProcNoMsg:
		var err error
		if p, err = d.lists(h, b, p); err != nil {
			return 0, err
		}
		if h.Proc == ProcNoMsg && !h.HasChunks() {
			return 0, h.chunkErr(true, "RDMA_NOMSG", -1, p, ErrNoChunks)
		}
		return p, nil
	case ProcDone:
		if len(b) != DoneSize {
			return 0, h.chunkErr(true, "RDMA_DONE", -1, DoneSize, ErrTrailing)
		}
		return DoneSize, nil
	case ProcError:
		if len(b) < p+4 {
			return 0, h.chunkErr(true, "rdma_err", -1, len(b), ErrShort)
		}
		h.ErrCode = ErrCode(be.Uint32(b[p:]))
		p += 4
		switch h.ErrCode {
		case ErrCodeVers:
			if len(b) < p+8 {
				return 0, h.chunkErr(true, "rdma_vers_low/rdma_vers_high", -1, len(b), ErrShort)
			}
			h.VersLow = be.Uint32(b[p:])
			h.VersHigh = be.Uint32(b[p+4:])
			p += 8
		case ErrCodeChunk:
		default:
			h.ErrBody = b[p:len(b):len(b)]
			return len(b), nil
		}
		if len(b) != p {
			return 0, h.chunkErr(true, "RDMA_ERROR", -1, p, ErrTrailing)
		}
		return p, nil
	}
	return 0, h.chunkErr(true, "rdma_proc", -1, 12, fmt.Errorf("%w: %d", ErrBadProc, uint32(h.Proc)))
}

// CheckXID checks that the RPC message behind an RDMA_MSG or RDMA_MSGP header (msg, the
// bytes from the decoded length on) starts with the header's XID, as RFC 8166 §4.2.1
// requires; a mismatch is an XDR error to be answered with ERR_CHUNK (§4.5.2). It
// returns a *ChunkError with reason ErrXIDMismatch or, when msg holds no XID, ErrShort.
func (h *Header) CheckXID(msg []byte) error {
	if len(msg) < 4 {
		return h.chunkErr(true, "RPC message", -1, 0, ErrShort)
	}
	if x := binary.BigEndian.Uint32(msg); x != h.XID {
		return h.chunkErr(true, "RPC message", -1, 0, fmt.Errorf("%w: %#08x", ErrXIDMismatch, x))
	}
	return nil
}

func (h *Header) chunkErr(haveXID bool, field string, index, off int, reason error) error {
	return &ChunkError{XID: h.XID, HaveXID: haveXID, Field: field, Index: index, Offset: off, Err: reason}
}

// lists decodes the read list, write list and reply chunk starting at b[p:].
func (d *Decoder) lists(h *Header, b []byte, p int) (int, error) {
	be := binary.BigEndian
	maxSegs := d.MaxSegments
	if maxSegs <= 0 {
		maxSegs = DefaultMaxSegments
	}
	maxChunks := d.MaxWriteChunks
	if maxChunks <= 0 {
		maxChunks = DefaultMaxWriteChunks
	}
	nsegs := 0

	// Read list: { 1, position, segment }* 0.
	for i := 0; ; i++ {
		if len(b)-p < 4 {
			return 0, h.chunkErr(true, "read list", i, p, ErrShort)
		}
		switch be.Uint32(b[p:]) {
		case 0:
			p += 4
		case 1:
			if len(b)-p < ReadSegmentSize {
				return 0, h.chunkErr(true, "read list", i, p, ErrShort)
			}
			if nsegs >= maxSegs {
				return 0, h.chunkErr(true, "read list", i, p, ErrTooManySegments)
			}
			rs := chunks.ReadSegment{Position: be.Uint32(b[p+4:]), Segment: segmentAt(b[p+8:])}
			if err := chunks.CheckPosition(rs.Position); err != nil {
				return 0, h.chunkErr(true, "read list position", i, p+4, err)
			}
			if err := chunks.CheckSegment(rs.Segment); err != nil {
				return 0, h.chunkErr(true, "read list segment", i, p+8, err)
			}
			h.ReadList = append(h.ReadList, rs)
			nsegs++
			p += ReadSegmentSize
			continue
		default:
			return 0, h.chunkErr(true, "read list", i, p, ErrBadDiscriminator)
		}
		break
	}

	// Write list: { 1, chunk }* 0.
	for i := 0; ; i++ {
		if len(b)-p < 4 {
			return 0, h.chunkErr(true, "write list", i, p, ErrShort)
		}
		switch be.Uint32(b[p:]) {
		case 0:
			p += 4
		case 1:
			if i >= maxChunks {
				return 0, h.chunkErr(true, "write list", i, p, ErrTooManyChunks)
			}
			n := len(h.WriteList)
			if n < cap(h.WriteList) {
				h.WriteList = h.WriteList[:n+1]
			} else {
				h.WriteList = append(h.WriteList, nil)
			}
			var err error
			h.WriteList[n], p, err = d.chunk(h, b, p+4, h.WriteList[n][:0], "write list", i, &nsegs, maxSegs)
			if err != nil {
				return 0, err
			}
			continue
		default:
			return 0, h.chunkErr(true, "write list", i, p, ErrBadDiscriminator)
		}
		break
	}

	// Reply chunk: 0 | 1, chunk.
	if len(b)-p < 4 {
		return 0, h.chunkErr(true, "reply chunk", -1, p, ErrShort)
	}
	switch be.Uint32(b[p:]) {
	case 0:
		p += 4
	case 1:
		var err error
		h.ReplyChunk, p, err = d.chunk(h, b, p+4, h.ReplyChunk[:0], "reply chunk", -1, &nsegs, maxSegs)
		if err != nil {
			return 0, err
		}
	default:
		return 0, h.chunkErr(true, "reply chunk", -1, p, ErrBadDiscriminator)
	}
	return p, nil
}

// chunk decodes a counted segment array at b[p:] into dst.
func (d *Decoder) chunk(h *Header, b []byte, p int, dst chunks.WriteChunk, field string, index int, nsegs *int, maxSegs int) (chunks.WriteChunk, int, error) {
	if len(b)-p < 4 {
		return dst, 0, h.chunkErr(true, field, index, p, ErrShort)
	}
	count := binary.BigEndian.Uint32(b[p:])
	switch {
	case count == 0:
		return dst, 0, h.chunkErr(true, field, index, p, ErrEmptyChunk)
	case uint64(count) > uint64(maxSegs-*nsegs):
		return dst, 0, h.chunkErr(true, field, index, p, fmt.Errorf("%w: count %d, limit %d", ErrTooManySegments, count, maxSegs))
	case uint64(count)*SegmentSize > uint64(len(b)-p-4):
		return dst, 0, h.chunkErr(true, field, index, p, fmt.Errorf("%w: count %d needs %d bytes, %d remain",
			ErrShort, count, uint64(count)*SegmentSize, len(b)-p-4))
	}
	p += 4
	for j := uint32(0); j < count; j++ {
		s := segmentAt(b[p:])
		if err := chunks.CheckSegment(s); err != nil {
			return dst, 0, h.chunkErr(true, field+" segment", index, p, err)
		}
		dst = append(dst, s)
		p += SegmentSize
	}
	*nsegs += int(count)
	return dst, p, nil
}

func segmentAt(b []byte) chunks.Segment {
	_ = b[15]
	return chunks.Segment{
		Handle: binary.BigEndian.Uint32(b),
		Length: binary.BigEndian.Uint32(b[4:]),
		Offset: binary.BigEndian.Uint64(b[8:]),
	}
}
