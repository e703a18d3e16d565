package linuxnfs

import (
	"encoding/binary"
	"fmt"
)

// RPC-over-RDMA version 1 procedures (RFC 8166 §4.2.4, seed draft §4.2).
const (
	ProcMsg   = 0 // RDMA_MSG: an RPC message follows the header
	ProcNoMsg = 1 // RDMA_NOMSG: the RPC message travels in a chunk
	ProcMsgp  = 2 // RDMA_MSGP: RDMA_MSG with alignment padding (seed §3.9)
	ProcDone  = 3 // RDMA_DONE (seed §3.8)
	ProcError = 4 // RDMA_ERROR
)

// NFS version 3 procedure numbers the verdicts look at (RFC 1813 §3.3).
const (
	NFSProcRead        = 6
	NFSProcWrite       = 7
	NFSProcReaddir     = 16
	NFSProcReaddirPlus = 17
)

// ProgNFS is the ONC RPC program number of NFS.
const ProgNFS = 100003

// maxAuth is the largest opaque_auth body (RFC 5531 §8.2).
const maxAuth = 400

// HeaderError names the field of an RPC-over-RDMA or RPC header that could not be
// read.
type HeaderError struct {
	Field  string // e.g. "read_list.position", "rpc.cred.length"
	Offset int    // byte offset of the field in the message
	Reason string // what was wrong
}

// Error names the field, its offset and the reason.
func (e *HeaderError) Error() string {
	return fmt.Sprintf("nfsrdma: %s at byte %d: %s", e.Field, e.Offset, e.Reason)
}

// Header is what Parse found in one RPC-over-RDMA message (the payload of one Send).
// It is a summary for verdicts, not a codec: segments are counted and their lengths
// summed, never kept, so Parse does not allocate.
type Header struct {
	XID, Vers, Credits, Proc uint32

	ReadSegs     int    // read list entries (segments)
	ReadZero     bool   // some read segment has XDR position 0 (a long call or reply)
	ReadPosBytes uint64 // bytes of read segments at positions other than 0
	ReadBytes    uint64 // bytes of all read segments

	WriteChunks int    // chunks in the write list
	WriteSegs   int    // segments of all write chunks
	WriteBytes  uint64 // bytes of all write segments (in a reply: the lengths written)

	ReplyChunk bool   // a reply chunk is present
	ReplySegs  int    // its segments
	ReplyBytes uint64 // their total length (in a reply: the bytes written)

	// HasRPC is set for RDMA_MSG and RDMA_MSGP, whose RPC message follows inline
	// (the first words of it, at least, are read).
	HasRPC  bool
	RPCXID  uint32
	IsCall  bool
	Prog    uint32 // calls only
	RPCVers uint32 // calls only: program version
	RPCProc uint32 // calls only
	// InlineLen is the number of bytes after the transport header.
	InlineLen int
}

type reader struct {
	b   []byte
	off int
}

func (r *reader) u32(field string) (uint32, error) {
	if len(r.b)-r.off < 4 {
		return 0, &HeaderError{Field: field, Offset: r.off, Reason: fmt.Sprintf("%d bytes left, need 4", len(r.b)-r.off)}
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v, nil
}

func (r *reader) present(field string) (bool, error) {
	off := r.off
	v, err := r.u32(field)
	if err != nil {
		return false, err
	}
	switch v {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, &HeaderError{Field: field, Offset: off, Reason: fmt.Sprintf("XDR optional-data discriminant %d, want 0 or 1", v)}
}

// segNames are the field names of one kind of segment list, spelled out so that
// the success path builds no strings.
type segNames struct{ count, handle, length, offset string }

var (
	readSeg  = segNames{"", "read_list.segment.handle", "read_list.segment.length", "read_list.segment.offset"}
	writeSeg = segNames{"write_list.chunk.count", "write_list.chunk.segment.handle", "write_list.chunk.segment.length", "write_list.chunk.segment.offset"}
	replySeg = segNames{"reply_chunk.count", "reply_chunk.segment.handle", "reply_chunk.segment.length", "reply_chunk.segment.offset"}
)

// segment reads an RDMA segment (handle, length, 64-bit offset) and returns its
// length.
func (r *reader) segment(f *segNames) (uint32, error) {
	if _, err := r.u32(f.handle); err != nil {
		return 0, err
	}
	n, err := r.u32(f.length)
	if err != nil {
		return 0, err
	}
	if _, err := r.u32(f.offset); err != nil {
		return 0, err
	}
	_, err = r.u32(f.offset)
	return n, err
}

// segments reads a counted array of segments (a write chunk or the reply chunk).
func (r *reader) segments(f *segNames) (n int, bytes uint64, err error) {
	off := r.off
	count, err := r.u32(f.count)
	if err != nil {
		return 0, 0, err
	}
	if uint64(count)*16 > uint64(len(r.b)-r.off) {
		return 0, 0, &HeaderError{Field: f.count, Offset: off, Reason: fmt.Sprintf("%d segments do not fit in the %d bytes left", count, len(r.b)-r.off)}
	}
	for i := uint32(0); i < count; i++ {
		l, err := r.segment(f)
		if err != nil {
			return 0, 0, err
		}
		bytes += uint64(l)
	}
	return int(count), bytes, nil
}

// Parse reads the transport header of one RPC-over-RDMA version 1 message (RFC 8166
// §4.2) and, for RDMA_MSG and RDMA_MSGP, the start of the RPC message after it (RFC
// 5531 §9): XID and direction, and for a call its program, version and procedure.
// RDMA_DONE and RDMA_ERROR are returned after the fixed words. Errors are
// *HeaderError.
func Parse(msg []byte) (Header, error) {
	var h Header
	r := reader{b: msg}
	var err error
	if h.XID, err = r.u32("xid"); err != nil {
		return h, err
	}
	if h.Vers, err = r.u32("vers"); err != nil {
		return h, err
	}
	if h.Vers != 1 {
		return h, &HeaderError{Field: "vers", Offset: 4, Reason: fmt.Sprintf("version %d, want 1", h.Vers)}
	}
	if h.Credits, err = r.u32("credits"); err != nil {
		return h, err
	}
	if h.Proc, err = r.u32("proc"); err != nil {
		return h, err
	}
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
	case ProcMsgp:
		if _, err := r.u32("msgp.align"); err != nil {
			return h, err
		}
		if _, err := r.u32("msgp.thresh"); err != nil {
			return h, err
		}
	case ProcDone, ProcError:
		h.InlineLen = len(msg) - r.off
		return h, nil
	default:
		return h, &HeaderError{Field: "proc", Offset: 12, Reason: fmt.Sprintf("procedure %d, want 0 to 4", h.Proc)}
	}
	for {
		more, err := r.present("read_list")
		if err != nil {
			return h, err
		}
		if !more {
			break
		}
		pos, err := r.u32("read_list.position")
		if err != nil {
			return h, err
		}
		n, err := r.segment(&readSeg)
		if err != nil {
			return h, err
		}
		h.ReadSegs++
		h.ReadBytes += uint64(n)
		if pos == 0 {
			h.ReadZero = true
		} else {
			h.ReadPosBytes += uint64(n)
		}
	}
	for {
		more, err := r.present("write_list")
		if err != nil {
			return h, err
		}
		if !more {
			break
		}
		n, b, err := r.segments(&writeSeg)
		if err != nil {
			return h, err
		}
		h.WriteChunks++
		h.WriteSegs += n
		h.WriteBytes += b
	}
	if h.ReplyChunk, err = r.present("reply_chunk"); err != nil {
		return h, err
	}
	if h.ReplyChunk {
		if h.ReplySegs, h.ReplyBytes, err = r.segments(&replySeg); err != nil {
			return h, err
		}
	}
	h.InlineLen = len(msg) - r.off
	if h.Proc == ProcNoMsg {
		return h, nil
	}
	h.HasRPC = true
	if h.RPCXID, err = r.u32("rpc.xid"); err != nil {
		return h, err
	}
	off := r.off
	mtype, err := r.u32("rpc.mtype")
	if err != nil {
		return h, err
	}
	switch mtype {
	case 0:
		h.IsCall = true
	case 1:
		return h, nil
	default:
		return h, &HeaderError{Field: "rpc.mtype", Offset: off, Reason: fmt.Sprintf("message type %d, want 0 (CALL) or 1 (REPLY)", mtype)}
	}
	off = r.off
	rv, err := r.u32("rpc.rpcvers")
	if err != nil {
		return h, err
	}
	if rv != 2 {
		return h, &HeaderError{Field: "rpc.rpcvers", Offset: off, Reason: fmt.Sprintf("RPC version %d, want 2", rv)}
	}
	if h.Prog, err = r.u32("rpc.prog"); err != nil {
		return h, err
	}
	if h.RPCVers, err = r.u32("rpc.vers"); err != nil {
		return h, err
	}
	if h.RPCProc, err = r.u32("rpc.proc"); err != nil {
		return h, err
	}
	for _, f := range [2][2]string{{"rpc.cred.flavor", "rpc.cred.length"}, {"rpc.verf.flavor", "rpc.verf.length"}} {
		if _, err := r.u32(f[0]); err != nil {
			return h, err
		}
		off := r.off
		n, err := r.u32(f[1])
		if err != nil {
			return h, err
		}
		if n > maxAuth || int(n+3)&^3 > len(msg)-r.off {
			return h, &HeaderError{Field: f[1], Offset: off, Reason: fmt.Sprintf("body of %d bytes: more than %d or past the %d bytes left", n, maxAuth, len(msg)-r.off)}
		}
		r.off += int(n+3) &^ 3
	}
	return h, nil
}
