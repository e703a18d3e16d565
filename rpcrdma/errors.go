package rpcrdma

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// VersionError is returned by header decoding when rdma_vers is not Version1. The caller
// (a responder) answers with an RDMA_ERROR / ERR_VERS message (AppendErrVers) echoing XID;
// RFC 8166 §4.5.1. The version is checked before anything else, so this error is available
// even when the rest of the header is garbage.
type VersionError struct {
	XID  uint32 // rdma_xid of the offending message
	Vers uint32 // the unsupported rdma_vers it carried
}

// Error describes the unsupported version.
func (e *VersionError) Error() string {
	return fmt.Sprintf("rpcrdma: xid %#08x: unsupported version %d (supported %d..%d)",
		e.XID, e.Vers, Version1, Version1)
}

// Sentinel reasons carried by ChunkError.Err; test with errors.Is.
var (
	// ErrShort: the message ends inside a field.
	ErrShort = errors.New("truncated")
	// ErrTooManySegments: a segment count above the decoder's limit, or above what the
	// remaining bytes could hold.
	ErrTooManySegments = errors.New("too many segments")
	// ErrTooManyChunks: more write chunks than the decoder's limit.
	ErrTooManyChunks = errors.New("too many write chunks")
	// ErrMisalignedPosition: a read segment position that is not a multiple of 4 (the
	// same value as chunks.ErrMisalignedPosition).
	ErrMisalignedPosition = chunks.ErrMisalignedPosition
	// ErrEmptyChunk: a write chunk or reply chunk with segment count 0 (the same value as
	// chunks.ErrEmptyChunk).
	ErrEmptyChunk = chunks.ErrEmptyChunk
	// ErrBadProc: an rdma_proc value that is not one of the five defined.
	ErrBadProc = errors.New("unknown procedure")
	// ErrTrailing: bytes after a message whose procedure allows none.
	ErrTrailing = errors.New("trailing bytes")
	// ErrBadDiscriminator: an optional-data discriminator other than 0 or 1.
	ErrBadDiscriminator = errors.New("optional-data discriminator not 0 or 1")
	// ErrNoChunks: an RDMA_NOMSG message with no chunk at all (RFC 8166 §4.5.2).
	ErrNoChunks = errors.New("RDMA_NOMSG without chunks")
	// ErrOffsetOverflow: a segment whose offset plus length overflows 64 bits (the same
	// value as chunks.ErrOffsetOverflow).
	ErrOffsetOverflow = chunks.ErrOffsetOverflow
	// ErrXIDMismatch: the RPC message's XID differs from rdma_xid (RFC 8166 §4.5.2).
	ErrXIDMismatch = errors.New("RPC XID differs from rdma_xid")
)

// ChunkError is returned by header decoding when rdma_vers is valid but the rest of the
// header is malformed. The caller (a responder) answers with an RDMA_ERROR / ERR_CHUNK
// message (AppendErrChunk); RFC 8166 §4.5.2. When the message held at least 4 bytes, XID
// holds its rdma_xid and HaveXID is true.
type ChunkError struct {
	XID     uint32
	HaveXID bool
	Field   string // the field being decoded, in RFC 8166 terms ("write list", "rdma_proc", ...)
	Index   int    // entry index within a list, or -1
	Offset  int    // byte offset in the message where the problem was found
	Err     error  // the reason: one of the sentinel errors above
}

// Error names the XID, the field, the byte offset and the reason.
func (e *ChunkError) Error() string {
	idx := ""
	if e.Index >= 0 {
		idx = fmt.Sprintf("[%d]", e.Index)
	}
	if e.HaveXID {
		return fmt.Sprintf("rpcrdma: xid %#08x: %s%s at byte %d: %v", e.XID, e.Field, idx, e.Offset, e.Err)
	}
	return fmt.Sprintf("rpcrdma: %s%s at byte %d: %v", e.Field, idx, e.Offset, e.Err)
}

// Unwrap returns the reason.
func (e *ChunkError) Unwrap() error { return e.Err }
