// Package verbs is the RDMA verbs API that the RPC-over-RDMA transport programs
// against: ibverbs and rdma_cm in Go terms.
//
// The objects mirror the verbs model of RFC 5040 §8 / RFC 5042 and of
// libibverbs:
//
//   - A Device is one RDMA provider instance (the software iWARP provider in
//     package verbs/soft, or a libibverbs device behind a build tag).
//   - A protection domain (PD) groups memory regions and queue pairs: a queue
//     pair can only touch memory registered in its own PD.
//   - A memory region (MR) is a registered []byte with access rights. Its STag
//     (RKey) is what a peer names in RDMA Write/Read; its LKey is what local
//     scatter/gather entries name. Remote tagged offsets (TO) are
//     MR.Addr()+offset.
//   - A completion queue (CQ) collects Completions; Poll drains them without
//     blocking, Wait blocks until one is available or the context ends. A CQ
//     created WithHandler instead delivers each completion inline to a
//     CompletionHandler, from the provider's completion context.
//   - A queue pair (QP) has a send queue (PostSend: Send, Send with Invalidate,
//     Send with Solicited Event, RDMA Write, RDMA Read) and a receive queue
//     (PostRecv). Receives may be posted before the QP is connected.
//   - Connection management follows rdma_cm: Device.Listen returns a Listener
//     whose Accept yields a ConnRequest carrying the peer's private data and
//     IRD/ORD; the ULP answers with ConnRequest.Accept(qp, params) or
//     ConnRequest.Reject(privateData). The active side calls Device.Dial.
//
// # Scatter/gather entries
//
// An SGE names memory as (MR, Offset, Length) rather than ibverbs'
// (lkey, virtual address, length). Go slices have no stable address a caller
// may do arithmetic on, and the MR already knows its buffer; a libibverbs
// provider converts an SGE to ibv_sge as {lkey: MR.LKey(), addr:
// base(MR)+Offset, length: Length}. Remote memory (RDMA Write sink, RDMA Read
// source) is named as (STag, TO) exactly as on the wire, where TO is the
// peer's MR.Addr() plus an offset.
//
// # Errors
//
// Errors a caller must inspect are typed: *QPError (the QP is in the error
// state; its Cause says why, e.g. a *TerminateError or ErrConnectionLost),
// *TerminateError (a Terminate sent or received, with the RFC 5040 §7
// layer/etype/ecode), *RejectedError (the peer rejected the connection, with
// its private data). Work requests outstanding when a QP fails complete with
// StatusFlushed.
//
// # Concurrency
//
// All methods are safe for concurrent use unless documented otherwise. Hot-path
// methods (PostSend, PostRecv, Poll) do not allocate in steady state in the
// software provider.
package verbs

import (
	"context"
	"net"
)

// Access is a set of memory access rights (RFC 5042 §5.2, ibv_access_flags).
type Access uint32

// Access rights. Local read access is always granted.
const (
	// AccessLocalWrite lets local receive and RDMA Read sink operations write the
	// region.
	AccessLocalWrite Access = 1 << iota
	// AccessRemoteRead lets a peer RDMA Read from the region.
	AccessRemoteRead
	// AccessRemoteWrite lets a peer RDMA Write into the region.
	AccessRemoteWrite
)

// String returns the access flags as "LocalWrite|RemoteRead|...".
func (a Access) String() string {
	if a == 0 {
		return "None"
	}
	s := ""
	add := func(b Access, n string) {
		if a&b != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	add(AccessLocalWrite, "LocalWrite")
	add(AccessRemoteRead, "RemoteRead")
	add(AccessRemoteWrite, "RemoteWrite")
	if rest := a &^ (AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite); rest != 0 {
		if s != "" {
			s += "|"
		}
		s += "Unknown"
	}
	return s
}

// MaxPrivateData is the largest amount of ULP private data a ConnParams may
// carry. Enhanced MPA (RFC 6581) spends 4 of Linux siw's 256 bytes on IRD/ORD.
const MaxPrivateData = 252

// Device is one RDMA device (a provider instance).
type Device interface {
	// Name identifies the device, e.g. "soft0".
	Name() string
	// AllocPD allocates a protection domain.
	AllocPD() (PD, error)
	// CreateCQ creates a completion queue that holds up to depth completions.
	// With WithHandler its completions are delivered inline to a handler
	// instead (see CompletionHandler for the contract).
	CreateCQ(depth int, opts ...CQOption) (CQ, error)
	// Listen starts accepting connection requests on a TCP address such as
	// "127.0.0.1:20049".
	Listen(ctx context.Context, addr string) (Listener, error)
	// Dial connects qp to a listening peer at addr, sending p.PrivateData and
	// p.IRD/ORD in the connection request. qp must be in StateInit. On success
	// qp is in StateRTS and the result describes the peer's reply. A peer
	// reject gives a *RejectedError.
	Dial(ctx context.Context, addr string, qp QP, p ConnParams) (*ConnInfo, error)
	// Close releases the device. Objects created from it must be closed first.
	Close() error
}

// PD is a protection domain.
type PD interface {
	// RegMR registers buf with the given access rights. The caller must not
	// let buf be garbage-collected or resized while the MR is registered.
	RegMR(buf []byte, access Access) (MR, error)
	// CreateQP creates a queue pair in StateInit.
	CreateQP(cfg QPConfig) (QP, error)
	// Close deallocates the PD. Its MRs and QPs must be closed first.
	Close() error
}

// MR is a registered memory region.
type MR interface {
	// Buf is the registered memory.
	Buf() []byte
	// LKey names the region in local SGEs.
	LKey() uint32
	// RKey is the region's STag (RFC 5040 §2.1): index<<8 | 8-bit key in the
	// software provider. It changes on every Reregister.
	RKey() uint32
	// Addr is the tagged offset (TO) of Buf()[0]: a peer addresses byte i of
	// the region as (RKey(), Addr()+i).
	Addr() uint64
	// Access is the region's current access rights.
	Access() Access
	// Valid reports whether the STag is currently valid (not invalidated).
	Valid() bool
	// Invalidate invalidates the STag locally (RFC 5040 §6.1 local
	// invalidate). When Invalidate returns, no peer operation will touch the
	// region until Reregister. Invalidating an invalid region is not an error.
	Invalidate() error
	// Reregister gives the region a new STag key (RKey changes) and the given
	// access rights, and makes it valid again (a fast-register in ibverbs
	// terms). Operations naming the old STag fail with an invalid-STag error.
	Reregister(access Access) error
	// Close deregisters the region. When it returns, no peer operation will
	// touch the memory again.
	Close() error
}

// ConnParams are the connection parameters a ULP supplies (rdma_conn_param).
type ConnParams struct {
	// PrivateData is sent to the peer in the connection request or reply;
	// at most MaxPrivateData bytes.
	PrivateData []byte
	// IRD is the inbound RDMA Read queue depth offered (responder_resources):
	// how many RDMA Read Requests from the peer may be outstanding at once.
	// Zero selects the provider default.
	IRD int
	// ORD is the outbound RDMA Read depth wanted (initiator_depth). Zero
	// selects the provider default.
	ORD int
}

// ConnInfo describes an established connection.
type ConnInfo struct {
	// PrivateData is the peer's private data (from its request or reply).
	PrivateData []byte
	// IRD and ORD are the negotiated local values: at most IRD inbound Read
	// Requests are accepted, at most ORD outbound ones are in flight.
	IRD, ORD int
	// LocalAddr and RemoteAddr are the transport addresses.
	LocalAddr, RemoteAddr net.Addr
}

// Listener yields incoming connection requests.
type Listener interface {
	// Accept waits for the next connection request.
	Accept(ctx context.Context) (ConnRequest, error)
	// Addr is the listening address.
	Addr() net.Addr
	// Close stops listening; pending requests are rejected.
	Close() error
}

// ConnRequest is an incoming connection request awaiting Accept or Reject.
type ConnRequest interface {
	// PrivateData is the peer's private data.
	PrivateData() []byte
	// IRD and ORD are the peer's advertised values (0 when the peer's protocol
	// does not carry them).
	IRD() int
	ORD() int
	// RemoteAddr is the peer's address.
	RemoteAddr() net.Addr
	// Accept binds the connection to qp (in StateInit; receives may already be
	// posted) and answers the peer with p. On success qp is in StateRTS.
	//
	// On iWARP, unless the initiator asked for the peer-to-peer model (RTR),
	// the accepting side transmits nothing before the initiator's first
	// message arrives (RFC 5044 §7.1.2): sends posted earlier wait for it.
	// RPC servers, which only answer, never notice.
	Accept(ctx context.Context, qp QP, p ConnParams) (*ConnInfo, error)
	// Reject refuses the connection, sending privateData to the peer.
	Reject(privateData []byte) error
}

// QPConfig configures a new queue pair.
type QPConfig struct {
	// SendCQ and RecvCQ receive the send- and receive-queue completions; they
	// may be the same CQ.
	SendCQ, RecvCQ CQ
	// MaxSendWR and MaxRecvWR are the queue depths.
	MaxSendWR, MaxRecvWR int
	// MaxSendSGE and MaxRecvSGE bound the scatter/gather list lengths.
	// Zero means 1.
	MaxSendSGE, MaxRecvSGE int
	// Context is an opaque value returned by QP.Context.
	Context any
}

// QPState is a queue pair state (RFC 5040 §8.1 / ibv_qp_state).
type QPState int

// Queue pair states.
const (
	// StateInit: created, not connected. Receives may be posted.
	StateInit QPState = iota
	// StateConnecting: connection setup in progress.
	StateConnecting
	// StateRTS: connected; sends and receives flow.
	StateRTS
	// StateError: failed or disconnected; outstanding work was flushed.
	StateError
	// StateClosed: destroyed.
	StateClosed
)

// String names the state.
func (s QPState) String() string {
	switch s {
	case StateInit:
		return "Init"
	case StateConnecting:
		return "Connecting"
	case StateRTS:
		return "RTS"
	case StateError:
		return "Error"
	case StateClosed:
		return "Closed"
	}
	return "QPState(?)"
}

// QP is a queue pair.
type QP interface {
	// PostSend queues a send-queue work request. It returns ErrQueueFull when
	// MaxSendWR requests are outstanding and ErrInvalidWR for malformed
	// requests. On a QP in StateError the request completes at once with
	// StatusFlushed. wr and its SGL may be reused as soon as PostSend returns,
	// but the memory the SGL names must stay unchanged until the request
	// completes. PostSend never waits for the network.
	//
	// A chain (wr.Next, at most MaxChain requests) is posted as one batch:
	// every request is checked and the queue must have room for all of them
	// before any is queued (otherwise the error says which request failed
	// and none was posted), and the requests are queued back to back in
	// chain order, with no other poster's request between them, so the
	// provider can hand them to the device or the wire together (one
	// ibv_post_send call and doorbell; one vectored write in verbs/soft).
	PostSend(wr *SendWR) error
	// PostRecv queues a receive buffer. It may be called in StateInit, before
	// the connection exists. wr may be reused when PostRecv returns.
	PostRecv(wr *RecvWR) error
	// State is the current state.
	State() QPState
	// Err is nil until the QP enters StateError, then the *QPError that moved
	// it there.
	Err() error
	// Done is closed when the QP enters StateError or StateClosed.
	Done() <-chan struct{}
	// Context returns QPConfig.Context.
	Context() any
	// Close disconnects (if connected), flushes outstanding work and releases
	// the QP. It is safe to call more than once.
	Close() error
}

// CQ is a completion queue.
type CQ interface {
	// Poll moves up to len(wc) completions into wc without blocking and
	// returns how many it moved. It returns an error only when the CQ itself
	// failed (e.g. *CQOverrunError) or was closed. A CQ created WithHandler
	// holds no completions: Poll moves none and only reports the CQ's failure
	// or closure, and Wait returns only then (or when ctx ends).
	Poll(wc []Completion) (int, error)
	// Wait blocks until at least one completion is available, the CQ fails or
	// is closed, or ctx ends.
	Wait(ctx context.Context) error
	// Close destroys the CQ.
	Close() error
}
