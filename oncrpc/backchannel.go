package oncrpc

// Client side of the reverse direction: a client transport that hosts a callback
// program hands the CALLs its server sends to a BackchannelServer, which runs them on
// a Handler (through this package's Server, so they get the same header checks,
// authentication and error replies as forward calls) and gives the replies back to the
// transport to send on the connection the call came on.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// DefaultBackchannelRequests is the default BackchannelOptions.MaxRequests.
const DefaultBackchannelRequests = 8

// BackchannelOptions make a client transport serve the calls its server sends in the
// reverse direction (RFC 8167; NFSv4.1 callbacks). A transport without them (or with a
// nil Handler) drops reverse-direction calls and counts them, as Linux's client does
// when it has no callback service: a server may send them only once the client asked
// for a back channel (NFSv4.1 CREATE_SESSION with CONN_BACK_CHAN), so such a call is a
// protocol violation, and answering it would spend resources the forward direction is
// counted on.
type BackchannelOptions struct {
	// Handler serves every reverse-direction call, whatever its program and version:
	// it reads them from req.Header and answers a program it does not host with
	// &AcceptError{Stat: ProgUnavail}. req.Conn is the reverse direction of the
	// client transport; it carries no further calls. It must return once its ctx
	// ends: closing the transport waits for it.
	Handler Handler
	// MaxRequests bounds the reverse calls in progress (received and not yet
	// answered) at once, default DefaultBackchannelRequests. An RPC-over-RDMA client
	// keeps that many receives posted for them and grants that many reverse credits
	// to the server (RFC 8167); a call past the bound is dropped and counted. Calls
	// still running from a lost connection count until they return. An NFSv4.1
	// client offers at most this many back-channel slots (CREATE_SESSION's
	// ca_maxrequests).
	MaxRequests int
	// Logger receives control-path events of the callback service (handler panics,
	// garbage). Default: no logging.
	Logger hclog.Logger
}

// MaxReqs returns MaxRequests, or its default when it is not positive.
func (o *BackchannelOptions) MaxReqs() int {
	if o.MaxRequests <= 0 {
		return DefaultBackchannelRequests
	}
	return o.MaxRequests
}

// BackchannelReplyFunc is how a client transport sends the reply to a reverse call: it
// sends reply (nil: none, the call is dropped) on the connection call arrived on, if
// that connection is still up, and releases call (its Msg.Inline and the transport's
// Cookie) for reuse. It must release what the call holds (an RDMA receive) before the
// reply can reach the server, which may send its next call as soon as it has the reply.
type BackchannelReplyFunc func(call *ServerCall, reply *Message) error

// A BackchannelServer runs the reverse-direction calls a client transport receives
// (see BackchannelOptions). Transports create one with NewBackchannelServer and feed
// it with Deliver; it is safe for concurrent use.
type BackchannelServer struct {
	srv  *Server
	conn *backchannelConn
	max  int64
	done chan struct{} // closed when the Server's connection loop has ended

	inProgress     atomic.Int64
	calls, replies atomic.Uint64
	dropped        atomic.Uint64
	closeOnce      sync.Once
}

// BackchannelStats are a BackchannelServer's counters.
type BackchannelStats struct {
	Calls   uint64 // reverse calls received and handed to the Handler
	Replies uint64 // replies to them handed back to the transport
	Dropped uint64 // reverse calls dropped: past MaxRequests, or after Close
}

// NewBackchannelServer starts serving reverse calls with o.Handler (which must not be
// nil); replies go to write. remote is the server's address (Request.RemoteAddr).
func NewBackchannelServer(o *BackchannelOptions, remote net.Addr, write BackchannelReplyFunc) *BackchannelServer {
	if o == nil || o.Handler == nil {
		panic("oncrpc: NewBackchannelServer without a Handler")
	}
	max := o.MaxReqs()
	srv := NewServer(&ServerOptions{MaxConcurrent: max, Logger: o.Logger})
	srv.fallback = o.Handler
	b := &BackchannelServer{srv: srv, max: int64(max), done: make(chan struct{})}
	b.conn = &backchannelConn{b: b, remote: remote, write: write, ready: make(chan struct{}), closed: make(chan struct{})}
	go func() {
		defer close(b.done)
		srv.ServeConn(b.conn)
	}()
	select {
	case <-b.conn.ready:
	case <-b.done:
	}
	return b
}

// Deliver hands a received reverse call to the Handler without blocking. It reports
// false, and the transport keeps and releases call itself, when MaxRequests calls are
// in progress or the server is closed; the call is then counted as dropped. Otherwise
// the call comes back to the transport's BackchannelReplyFunc.
func (b *BackchannelServer) Deliver(call *ServerCall) bool {
	if b.inProgress.Add(1) > b.max {
		b.inProgress.Add(-1)
		b.dropped.Add(1)
		return false
	}
	c := b.conn
	c.mu.Lock()
	if c.deliver == nil {
		c.mu.Unlock()
		b.inProgress.Add(-1)
		b.dropped.Add(1)
		return false
	}
	b.calls.Add(1)
	c.deliver(call, false)
	c.mu.Unlock()
	return true
}

// InProgress returns the reverse calls delivered and not yet answered.
func (b *BackchannelServer) InProgress() int { return int(b.inProgress.Load()) }

// Stats returns the counters.
func (b *BackchannelServer) Stats() BackchannelStats {
	return BackchannelStats{Calls: b.calls.Load(), Replies: b.replies.Load(), Dropped: b.dropped.Load()}
}

// Close stops taking calls, cancels the contexts of the handlers in progress and waits
// for them to return (their replies still go to the transport's BackchannelReplyFunc,
// which must not wait for whoever calls Close).
func (b *BackchannelServer) Close() {
	b.closeOnce.Do(func() {
		b.srv.Close()
		<-b.done
	})
}

// backchannelConn is the PushServerConn through which the Server sees the reverse
// calls of one client transport.
type backchannelConn struct {
	b      *BackchannelServer
	remote net.Addr
	write  BackchannelReplyFunc

	ready     chan struct{} // closed once ServeCalls has set deliver
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex // guards deliver: no Deliver runs after ServeCalls returns
	deliver func(*ServerCall, bool)
}

var errBackchannelPush = errors.New("oncrpc: reverse-direction calls are pushed, not read")

// ServeCalls implements PushServerConn.
func (c *backchannelConn) ServeCalls(ctx context.Context, deliver func(*ServerCall, bool)) error {
	c.mu.Lock()
	c.deliver = deliver
	c.mu.Unlock()
	close(c.ready)
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.closed:
		err = ErrClosed
	}
	c.mu.Lock()
	c.deliver = nil
	c.mu.Unlock()
	return err
}

// ReadCall is never used: the Server uses ServeCalls.
func (c *backchannelConn) ReadCall(ctx context.Context) (*ServerCall, error) {
	return nil, errBackchannelPush
}

// WriteReply implements ServerConn by handing the reply to the transport. The call
// stops counting against MaxRequests first: once the reply is out, the server may send
// the next call at once, and the transport has given back the call's resources by then.
func (c *backchannelConn) WriteReply(call *ServerCall, reply *Message) error {
	c.b.inProgress.Add(-1)
	c.b.replies.Add(1)
	err := c.write(call, reply)
	if err != nil {
		return fmt.Errorf("oncrpc: reverse-direction reply to %v: %w", c.remote, err)
	}
	return nil
}

// Close implements ServerConn.
func (c *backchannelConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// RemoteAddr implements ServerConn: the server's address.
func (c *backchannelConn) RemoteAddr() net.Addr { return c.remote }
