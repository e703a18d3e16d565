package verbs

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrQueueFull: the send or receive queue already holds its maximum number
	// of outstanding work requests.
	ErrQueueFull = errors.New("verbs: work queue full")
	// ErrInvalidWR: a work request is malformed (bad opcode, SGE outside its
	// MR, too many SGEs, missing MR). The error returned wraps it with detail.
	ErrInvalidWR = errors.New("verbs: invalid work request")
	// ErrFlushed is the Err of completions flushed by a QP error; it is also
	// wrapped in the QPError.
	ErrFlushed = errors.New("verbs: work request flushed")
	// ErrConnectionLost: the transport connection broke.
	ErrConnectionLost = errors.New("verbs: connection lost")
	// ErrClosed: the object was closed.
	ErrClosed = errors.New("verbs: closed")
	// ErrBadState: the operation is not allowed in the QP's current state.
	ErrBadState = errors.New("verbs: operation not allowed in this QP state")
	// ErrPrivateDataTooLong: more than MaxPrivateData bytes of private data.
	ErrPrivateDataTooLong = errors.New("verbs: private data too long")
)

// TerminateError describes an iWARP Terminate message (RFC 5040 §7), sent by
// this side (Received false) or by the peer (Received true). Layer, EType and
// ECode use the RFC 5040 §7.2 / RFC 5041 §7.2 / RFC 5044 §8 numbering: layer
// 0 RDMAP, 1 DDP, 2 LLP (MPA).
type TerminateError struct {
	Received bool
	Layer    uint8
	EType    uint8
	ECode    uint8
	// Reason is a human-readable description (for locally detected errors,
	// what check failed).
	Reason string
}

// Error implements error.
func (e *TerminateError) Error() string {
	dir := "sent"
	if e.Received {
		dir = "received"
	}
	s := fmt.Sprintf("verbs: Terminate %s: layer %s, etype %d, ecode %#02x", dir, layerName(e.Layer), e.EType, e.ECode)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

func layerName(l uint8) string {
	switch l {
	case 0:
		return "RDMAP"
	case 1:
		return "DDP"
	case 2:
		return "MPA"
	}
	return fmt.Sprintf("%d", l)
}

// QPError reports that a queue pair entered the error state.
type QPError struct {
	// Cause is why: a *TerminateError, ErrConnectionLost (wrapping the I/O
	// error), ErrClosed, or a local protocol failure.
	Cause error
}

// Error implements error.
func (e *QPError) Error() string { return "verbs: QP in error state: " + e.Cause.Error() }

// Unwrap returns Cause and ErrFlushed, so errors.Is(err, ErrFlushed) and
// errors.As(err, **TerminateError) both work.
func (e *QPError) Unwrap() []error { return []error{e.Cause, ErrFlushed} }

// RejectedError reports that the peer rejected a connection request.
type RejectedError struct {
	// PrivateData is the peer's reject private data.
	PrivateData []byte
	// Reason describes the rejection when it was protocol-level rather than a
	// ULP decision (e.g. "peer requires markers").
	Reason string
}

// Error implements error.
func (e *RejectedError) Error() string {
	s := "verbs: connection rejected by peer"
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if len(e.PrivateData) > 0 {
		s += fmt.Sprintf(" (%d bytes private data)", len(e.PrivateData))
	}
	return s
}

// CQOverrunError reports that more completions arrived than the CQ could hold.
type CQOverrunError struct{ Depth int }

// Error implements error.
func (e *CQOverrunError) Error() string {
	return fmt.Sprintf("verbs: completion queue overrun (depth %d)", e.Depth)
}
