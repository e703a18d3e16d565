package oncrpc

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Message is one RPC message as a transport carries it: the XDR stream with the data of
// DDP-eligible items elided (Inline), and those items (Payloads) in increasing Pos
// order. Pos is the item's position in the whole logical stream (see package xdr).
type Message struct {
	Inline   []byte
	Payloads []xdr.Payload
	// Padding is, on a received call, the RDMA_MSGP padding (seed §3.9) that the
	// transport left in Inline and the Server's argument decoder skips (see
	// xdr.Decoder.SetPadding); zero for every other message.
	Padding xdr.Padding
}

// Len returns the size of the whole logical XDR stream: inline bytes plus the data and
// pad of every payload.
func (m *Message) Len() int {
	n := len(m.Inline)
	for _, p := range m.Payloads {
		n += xdr.RoundUp(len(p.Data))
	}
	return n
}

// ClientCall is one call handed to a RoundTripper.
type ClientCall struct {
	// XID identifies the call; replies are matched to it. A retransmission reuses it.
	XID uint32
	// Msg is the whole call: RPC header and arguments. The transport must not retain
	// it after RoundTrip returns.
	Msg Message
	// ReplySinks are caller buffers where DDP-eligible results may be placed (an RDMA
	// transport's write chunks), in result order. A stream transport ignores them.
	ReplySinks [][]byte
	// MaxReply is an upper bound on the reply size, used to size a reply chunk (0: not
	// known; the transport uses its own limit).
	MaxReply int
	// Timeout bounds this try: when it is positive and no reply has arrived after it,
	// RoundTrip forgets the XID and returns an error wrapping ErrTimeout, and the
	// Client may retransmit with the same XID.
	Timeout time.Duration
}

// ClientReply receives a reply.
type ClientReply struct {
	// Inline is the reply's XDR stream with placed items elided. The transport appends
	// it to Inline[:0], so a caller that reuses a ClientReply reuses the buffer.
	Inline []byte
	// Placed[i] is ReplySinks[i][:n] when the transport placed the i-th DDP-eligible
	// result there, and empty when it did not (the item is then inline). A stream
	// transport sets Placed to Placed[:0].
	Placed [][]byte
	// Padding is the RDMA_MSGP padding (seed §3.9) the transport left in Inline, which
	// the Client's reply decoder skips (see xdr.Decoder.SetPadding); a transport that
	// does not set it leaves it zero (no padding).
	Padding xdr.Padding
}

// A RoundTripper sends calls and delivers their replies, matching them by XID. It
// must be safe for any number of concurrent RoundTrip calls.
type RoundTripper interface {
	// RoundTrip sends call and waits until its reply has been stored in reply, ctx
	// is done, or call.Timeout expires. Errors other than a reply are transport
	// errors: ErrTimeout for a try that timed out, ctx.Err() for a done context,
	// ErrClosed after Close, or a connection error.
	RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error
	// Close stops the transport; pending and later RoundTrips return ErrClosed.
	Close() error
}

// ServerCall is one received call. A transport allocates (or pools) it and gets it back
// in ServerConn.WriteReply.
type ServerCall struct {
	// Msg.Inline is the whole call stream: header and arguments, with any data the
	// transport moved out of line put back in place. Msg.Payloads is empty.
	Msg Message
	// Cookie is the transport's private per-call state (for RPC-over-RDMA, the
	// client's write list and reply chunk). The Server never touches it.
	Cookie any
}

// A Listener accepts transport connections for a Server.
type Listener interface {
	// Accept waits for the next connection or for ctx to be done.
	Accept(ctx context.Context) (ServerConn, error)
	// Close stops accepting; Accept then returns an error wrapping ErrClosed.
	Close() error
	// Addr is the local address.
	Addr() net.Addr
}

// A ServerConn is one transport connection on the server side.
type ServerConn interface {
	// ReadCall waits for the next call or for ctx to be done. Only one goroutine
	// calls it at a time. Any error ends reading from the connection: after ctx's
	// error the stream may have been interrupted inside a record, so the caller
	// finishes the calls it holds and closes the connection.
	ReadCall(ctx context.Context) (*ServerCall, error)
	// WriteReply sends reply to the caller of call, then releases call: call, its
	// Msg.Inline, and anything aliasing them must not be used afterwards. A nil
	// reply releases call without answering (the call is dropped). When WriteReply
	// returns, the transport no longer refers to reply or its payload data. Safe for
	// concurrent use with other WriteReply calls and with ReadCall.
	WriteReply(call *ServerCall, reply *Message) error
	// Close closes the connection. ReadCall and WriteReply then fail.
	Close() error
	// RemoteAddr is the peer's address; its Network() is the netid ("tcp", "rdma").
	RemoteAddr() net.Addr
}

// A PushServerConn is a ServerConn that hands calls to the Server as they arrive,
// from its own receive context, instead of having the Server wait in ReadCall: one
// goroutine hand-off fewer per call. A Server uses ServeCalls instead of ReadCall when
// the connection implements it.
type PushServerConn interface {
	ServerConn
	// ServeCalls calls deliver with each call as it arrives, until the connection fails
	// or is closed or ctx is done, and then returns the error that ended it, as
	// ReadCall would have. No deliver call runs or starts after it returns.
	//
	// deliver may run on the transport's receive goroutine, and concurrently on
	// another; it must not block. When inline is true the transport has reserved what
	// answering the call takes, so deliver may run the call's handler and call
	// WriteReply right there (a reply the reservation does not cover is still sent,
	// without blocking deliver); otherwise it must hand the call to another goroutine.
	ServeCalls(ctx context.Context, deliver func(call *ServerCall, inline bool)) error
}

// A BackchannelConn is a ServerConn that can carry calls in the reverse direction,
// from the server to the connected client (RFC 8167 over RPC-over-RDMA; the same
// record-marked stream over TCP), as an NFSv4.1 server's callbacks need. A Handler
// finds it through Request.Conn:
//
//	bc, ok := req.Conn.(oncrpc.BackchannelConn)
//	if ok { rt, err := bc.Backchannel(); ... oncrpc.NewClient(rt, cbProg, 1).Call(ctx, ...) }
//
// The replies of the client are told apart from its forward calls by msg_type and
// matched to the reverse calls by XID (the server's XID space: use NextXID, as
// Client does).
type BackchannelConn interface {
	ServerConn
	// Backchannel returns the connection's reverse-direction RoundTripper: the same
	// one for every call of Backchannel. It fails wrapping ErrNoBackchannel when the
	// connection cannot carry reverse calls (an RPC-over-RDMA connection that cannot
	// post the receives their replies need), and wrapping ErrClosed when the
	// connection closed before the first call. RoundTrip's ReplySinks and MaxReply
	// are ignored: reverse calls and replies travel inline. Closing the RoundTripper
	// fails its outstanding calls and those after and leaves the connection open;
	// when the connection closes, its calls fail with an error wrapping ErrClosed.
	Backchannel() (RoundTripper, error)
}

// Transport errors.
var (
	// ErrNoBackchannel is wrapped by BackchannelConn.Backchannel's error when the
	// connection cannot carry reverse-direction calls.
	ErrNoBackchannel = errors.New("oncrpc: no reverse-direction channel on this connection")
	// ErrClosed is returned by a transport, Client or Server that has been closed.
	ErrClosed = errors.New("oncrpc: closed")
	// ErrTimeout is returned by RoundTrip when a try's Timeout expires.
	ErrTimeout = errors.New("oncrpc: no reply within the per-try timeout")
)
