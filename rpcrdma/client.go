// Client transport: options, Dial, connection management (reconnect, limits, close) and
// RoundTrip (Linux xprtrdma transport.c).

package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/hashicorp/go-hclog"
)

// Client transport defaults.
const (
	// DefaultInline is the inline threshold for calls this package offers: a client's
	// send size and a server's receive size, 5 KiB, so that a 4 KiB WRITE's call (its
	// data with the RPC, NFS and transport headers: about 4,350 bytes for NFSv3 with
	// AUTH_SYS) fits a Send, and its data needs no read chunk and no RDMA Read by the
	// server, a round trip more per WRITE. Linux keeps 4096 (RPCRDMA_DEF_INLINE); the
	// RFC 8797 private data makes each side use the smaller of what the two announce,
	// so a Linux client still sends at most 4096 inline to our server and our client at
	// most what a Linux server receives.
	DefaultInline = 5120
	// DefaultReplyInline is the inline threshold for replies this package offers: a
	// client's receive size and a server's send size, 8 KiB, so that a reply with 4 KiB
	// of results and its RPC and transport headers (a 4 KiB NFS READ's) fits a Send
	// and needs no write chunk, no registration of the caller's buffer and no RDMA
	// Write (see planCall). Linux keeps 4096 both ways; the RFC 8797 private data
	// makes each side use the smaller of what the two announce, so a Linux peer's
	// replies stay within its own receive size.
	DefaultReplyInline = 8192
	// DefaultClientCredits is the number of credits a client asks for (Linux: 128).
	DefaultClientCredits = 128
	// DefaultMaxReply is the reply chunk size offered when ClientCall.MaxReply is 0:
	// 1 MiB, the largest reply buffer oncrpc.Client keeps pooled.
	DefaultMaxReply = 1 << 20
	// DefaultIRD is the RDMA Read depth offered to the peer and requested from it.
	DefaultIRD = 16
)

// ClientOptions configure a Client. The zero value selects the defaults.
type ClientOptions struct {
	// InlineSend and InlineRecv are this side's inline thresholds: the largest message
	// it sends and the size of its receive buffers. Default DefaultInline and
	// DefaultReplyInline. The send size actually used is the smaller of InlineSend and
	// the server's announced receive size (1024 when it announced none); replies come
	// inline up to the smaller of InlineRecv and the server's announced send size,
	// and a call whose reply fits that whole (its MaxReply, results included) offers
	// no write chunks.
	InlineSend, InlineRecv int
	// Credits is the number of credits requested (the window's cap). Default 128.
	Credits int
	// MaxReply is the reply chunk size offered for calls whose MaxReply is 0. Default
	// DefaultMaxReply.
	MaxReply int
	// IRD is the inbound RDMA Read depth offered (the server's Reads of our read
	// chunks); ORD the outbound depth wanted (our Reads of reply read chunks).
	// Default DefaultIRD each.
	IRD, ORD int
	// MSGPThresh, when not zero, lets the client send RDMA_MSGP (see "RDMA_MSGP" in
	// the package documentation): calls sent whole inline with a payload of at least
	// MSGPThresh bytes (the rdma_thresh; raised per call above its other opaques) are
	// padded so each such payload's data starts on an rdma_align boundary of the
	// server's receive buffer. rdma_align is what the server recommended in CONF_RDMA
	// (SetMSGPAlign, applied by confproto), else MSGPAlign, which is for servers known
	// to accept RDMA_MSGP (ServerOptions.MSGP); Linux answers ERR_CHUNK. An align of at
	// most 4 or above MaxMSGPAlign means RDMA_MSG. Off by default; RDMA_MSGP replies
	// are always understood.
	MSGPAlign, MSGPThresh uint32
	// NoSendInvalidate stops the client announcing that it accepts Send With
	// Invalidate.
	NoSendInvalidate bool
	// ReconnectDelay is the first wait before redialling after a connection loss; it
	// doubles per failed attempt up to one second. Default 10 ms.
	ReconnectDelay time.Duration
	// Logger receives control-path events (connects, losses). Default: none.
	Logger hclog.Logger
	// Trace, when set, is called with every transport message the client sends and
	// receives (header and inline body), for tests and debugging. It must not retain
	// msg.
	Trace func(sent bool, msg []byte)
	// Backchannel makes the client serve the calls the server sends in the reverse
	// direction (RFC 8167; NFSv4.1 callbacks): each connection keeps MaxRequests (at
	// most MaxBackchannelRequests) receives posted for them beyond its forward
	// credits, grants that many reverse credits in its replies, and answers on the
	// connection the call came on. Without it reverse calls are dropped and counted
	// (ClientStats.ReverseDropped), as by Linux's client without a callback service.
	Backchannel *oncrpc.BackchannelOptions
}

func (o *ClientOptions) fill() {
	o.InlineSend, o.InlineRecv = inlineOption(o.InlineSend, DefaultInline), inlineOption(o.InlineRecv, DefaultReplyInline)
	if o.Credits <= 0 {
		o.Credits = DefaultClientCredits
	}
	if o.MaxReply <= 0 {
		o.MaxReply = DefaultMaxReply
	}
	if o.IRD <= 0 {
		o.IRD = DefaultIRD
	}
	if o.ORD <= 0 {
		o.ORD = DefaultIRD
	}
	if o.ReconnectDelay <= 0 {
		o.ReconnectDelay = 10 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// RemoteError is an RDMA_ERROR reply (RFC 8166 §4.5): the server could not process the
// call's transport header. RoundTrip returns it; the call was not executed.
type RemoteError struct {
	XID      uint32
	Code     ErrCode
	VersLow  uint32 // ERR_VERS: the server's supported range
	VersHigh uint32
}

// Error describes the RDMA_ERROR reply.
func (e *RemoteError) Error() string {
	if e.Code == ErrCodeVers {
		return fmt.Sprintf("rpcrdma: xid %#08x: server answered ERR_VERS (supports versions %d..%d)", e.XID, e.VersLow, e.VersHigh)
	}
	return fmt.Sprintf("rpcrdma: xid %#08x: server answered %v", e.XID, e.Code)
}

// ErrBadReply is wrapped by errors for replies that violate the protocol (a malformed
// header, a write chunk longer than offered, a reply chunk missing in RDMA_NOMSG).
var ErrBadReply = errors.New("rpcrdma: malformed reply")

// errConnLost marks a try that failed because its connection went away; RoundTrip
// retransmits it on a new connection.
var errConnLost = errors.New("rpcrdma: connection lost")

// errXIDInFlight refuses a call whose XID is that of another call still waiting for
// its reply on the connection.
var errXIDInFlight = errors.New("a call with this XID is already in flight")

// Client is the RPC-over-RDMA client transport: an oncrpc.RoundTripper over one RDMA
// connection that is re-established (and outstanding calls retransmitted) when it is
// lost.
type Client struct {
	dev  verbs.Device
	addr string
	opts ClientOptions
	pd   verbs.PD
	regs *regCache

	mu sync.Mutex
	cc *clientConn
	// applyMu is held by ApplyToConn while it changes a connection's settings and
	// by conn while it installs a new connection (before mu), so that settings
	// meant for one connection never land on the next.
	applyMu  sync.Mutex
	connSeq  atomic.Uint64 // the ID of the last connection dialled
	dialing  chan struct{} // closed when the current dial attempt ends
	closed   bool
	closedCh chan struct{}

	reqPool sync.Pool

	// The reverse direction (backchannel_client.go): the callback service (nil:
	// none), the reverse credits granted, and the receives kept posted beyond one
	// per call in flight (clientExtraRecvs plus bcGrant).
	bcs                             *oncrpc.BackchannelServer
	bcGrant, extraRecvs             int
	reverseDropped, reverseTooLarge atomic.Uint64 // without a callback service; replies over the inline threshold
}

var _ oncrpc.RoundTripper = (*Client)(nil)

// Dial connects to the RPC-over-RDMA server at addr ("host:port") over dev.
func Dial(ctx context.Context, dev verbs.Device, addr string, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	o.fill()
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: dial %s: %w", addr, err)
	}
	c := &Client{dev: dev, addr: addr, opts: o, pd: pd, regs: newRegCache(pd), closedCh: make(chan struct{})}
	c.reqPool.New = func() any {
		r := &request{done: make(chan struct{}, 1)}
		r.replied = func() bool { return r.state.Load() == reqDelivered }
		return r
	}
	c.startBackchannel()
	cc, err := c.dial(ctx)
	if err != nil {
		if c.bcs != nil {
			c.bcs.Close()
		}
		pd.Close()
		return nil, err
	}
	c.cc = cc
	return c, nil
}

// clientConn is one connection of a Client.
type clientConn struct {
	c          *Client
	ep         *endpoint
	id         uint64 // ConnID: a new one for each connection
	inlineSend int    // largest message we may send (guarded by mu after dial)
	peerRecv   int    // the server's receive buffers, as its RFC 8797 private data announced (0: none)
	peerSend   int    // the server's send buffers, as its RFC 8797 private data announced (0: none)
	maxInline  int    // largest reply the server can send inline (guarded by mu after dial)
	ord        int    // RDMA Reads at once when pulling reply read chunks; 0: none (guarded by mu)
	msgpAlign  uint32 // rdma_align of our RDMA_MSGP calls; 0: none (guarded by mu)
	// noReadChunks: we announced maxrdmaread 0 (SetReadTarget); guarded by mu.
	noReadChunks bool
	maxORD       int // the negotiated ORD

	// callRecvs is the number of receives registered for replies (beyond
	// clientExtraRecvs); it grows with the calls in flight (growRecvs).
	callRecvs atomic.Int32

	// window holds this connection's credits. Credits are valid only on the
	// connection that granted them (RFC 8166 §3.3.3): a new connection starts a new
	// window at one credit, and a reply that arrived on a lost connection but is
	// decoded after the reconnection changes only the lost connection's window.
	window *credits.Window

	mu      sync.Mutex
	pending pendingCalls // calls awaiting replies, by XID
	dead    chan struct{}
	isDead  atomic.Bool // set just before dead is closed: a check without a channel operation
	deadErr error
}

// dial establishes one connection.
func (c *Client) dial(ctx context.Context) (*clientConn, error) {
	o := &c.opts
	nrecv := o.Credits + c.extraRecvs
	callRecvs := min(initialCallRecvs, o.Credits)
	ep, err := newEndpoint(c.pd, c.dev, endpointConfig{
		recvSize: o.InlineRecv, nrecv: nrecv, initRecv: callRecvs + c.extraRecvs,
		sendSize: o.InlineSend, nsend: nrecv,
		sqDepth: 2*o.Credits + 64, maxSendSGE: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: dial %s: %w", c.addr, err)
	}
	priv := ConnPrivate{SendInvOK: !o.NoSendInvalidate, SendSize: o.InlineSend, RecvSize: o.InlineRecv}
	var pd [PrivateSize]byte
	info, err := c.dev.Dial(ctx, c.addr, ep.qp, verbs.ConnParams{PrivateData: priv.Append(pd[:0]), IRD: o.IRD, ORD: o.ORD})
	if err != nil {
		ep.teardown()
		return nil, fmt.Errorf("rpcrdma: dial %s: %w", c.addr, err)
	}
	peer, perr := PeerPrivate(info.PrivateData)
	peerRecv, peerSend := peer.RecvSize, peer.SendSize
	if perr != nil {
		o.Logger.Debug("server sent no RFC 8797 private data; using 1024-byte inline sizes", "addr", c.addr, "err", perr)
		peerRecv, peerSend = 0, 0
	}
	cc := &clientConn{
		c: c, ep: ep, id: c.connSeq.Add(1),
		inlineSend: min(o.InlineSend, peer.RecvSize),
		peerRecv:   peerRecv,
		peerSend:   peerSend,
		maxInline:  min(o.InlineRecv, peer.SendSize),
		ord:        max(info.ORD, 1),
		maxORD:     max(info.ORD, 1),
		msgpAlign:  msgpOption(o),
		pending:    newPendingCalls(),
		dead:       make(chan struct{}),
		window:     credits.NewWindow(o.Credits),
	}
	cc.callRecvs.Store(int32(callRecvs))
	ep.start(info, peer, cc.onRecv)
	go func() {
		select {
		case <-ep.qp.Done():
		case <-ep.closing:
		}
		cc.fail(ep.err())
	}()
	o.Logger.Debug("connected", "addr", c.addr, "inline_send", cc.inlineSend, "max_inline_reply", cc.maxInline, "ord", cc.ord)
	return cc, nil
}

// clientExtraRecvs is how many receives a client connection keeps posted beyond one per
// call in flight, for replies the server sends unasked (an RDMA_ERROR for a call it
// could not parse counts as that call's reply).
const clientExtraRecvs = 8

// growRecvs makes sure a receive is registered (and posted, unless it holds a reply
// still being processed) for each of the inFlight calls holding credits, this one
// included, before the call is sent: it registers more, doubling, when they do not
// suffice. A failure to register leaves the count as it is; the server's grant then
// bounds how many calls can be in flight, and a reply without a posted receive ends
// the connection (iWARP/IB receiver-not-ready), from which the client reconnects.
func (cc *clientConn) growRecvs(inFlight int) {
	have := int(cc.callRecvs.Load())
	if inFlight <= have {
		return
	}
	want := min(max(inFlight, 2*have), cc.c.opts.Credits)
	total, err := cc.ep.growRecv(want + cc.c.extraRecvs)
	if err != nil {
		cc.c.opts.Logger.Debug("cannot post more receives", "addr", cc.c.addr, "posted", total, "err", err)
	}
	for {
		cur := cc.callRecvs.Load()
		n := int32(total - cc.c.extraRecvs)
		if n <= cur || cc.callRecvs.CompareAndSwap(cur, n) {
			return
		}
	}
}

// fail marks the connection dead and wakes every pending call.
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	select {
	case <-cc.dead:
		cc.mu.Unlock()
		return
	default:
	}
	cc.deadErr = err
	cc.isDead.Store(true)
	close(cc.dead)
	orphans := make([]*request, 0)
	cc.pending.drain(func(r *request) {
		if r.orphan {
			orphans = append(orphans, r)
			return
		}
		r.lost = true
		r.deliver()
	})
	cc.mu.Unlock()
	cc.window.Close() // callers waiting for a credit retry on the next connection
	cc.ep.close()
	for _, r := range orphans {
		cc.releaseRevoked(r)
		cc.window.Release()
		cc.c.putRequest(r)
	}
	go func() {
		cc.ep.teardown()
	}()
}

// conn returns a live connection, dialling a new one if needed. Waiting for it ends
// with ctx, or with an error wrapping oncrpc.ErrTimeout when timer (the call's per-try
// timer; nil: none) fires, so that a server that is down counts as not responding.
func (c *Client) conn(ctx context.Context, timer <-chan time.Time) (*clientConn, error) {
	delay := c.opts.ReconnectDelay
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, oncrpc.ErrClosed
		}
		if cc := c.cc; cc != nil {
			if !cc.isDead.Load() {
				c.mu.Unlock()
				return cc, nil
			}
			c.cc = nil
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer:
				return nil, fmt.Errorf("rpcrdma: connecting to %s: %w", c.addr, oncrpc.ErrTimeout)
			}
		}
		ch := make(chan struct{})
		c.dialing = ch
		c.mu.Unlock()

		cc, expired, err := c.redial(ctx, timer)
		c.applyMu.Lock() // not while settings are applied to the connection cc replaces
		c.mu.Lock()
		c.dialing = nil
		close(ch)
		if err == nil {
			if c.closed {
				c.mu.Unlock()
				c.applyMu.Unlock()
				cc.fail(oncrpc.ErrClosed)
				return nil, oncrpc.ErrClosed
			}
			c.cc = cc
			c.mu.Unlock()
			c.applyMu.Unlock()
			c.opts.Logger.Info("reconnected", "addr", c.addr)
			if expired {
				// Connected as the try ended: the connection serves the next calls,
				// this one's try is over (its timer has fired).
				return nil, fmt.Errorf("rpcrdma: connecting to %s: %w", c.addr, oncrpc.ErrTimeout)
			}
			return cc, nil
		}
		c.mu.Unlock()
		c.applyMu.Unlock()
		c.opts.Logger.Debug("reconnect failed", "addr", c.addr, "err", err)
		if expired {
			return nil, fmt.Errorf("rpcrdma: reconnecting to %s: %w (last dial error: %v)", c.addr, oncrpc.ErrTimeout, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last dial error: %v)", ctx.Err(), err)
		case <-timer:
			t.Stop()
			return nil, fmt.Errorf("rpcrdma: reconnecting to %s: %w (last dial error: %v)", c.addr, oncrpc.ErrTimeout, err)
		case <-c.closedCh:
			t.Stop()
			return nil, oncrpc.ErrClosed
		}
		delay = min(2*delay, time.Second)
	}
}

// redial is dial for conn: the dial also ends when timer (the try's timer; nil: none)
// fires, then reporting expired, or when the Client closes. Without them a dial to a
// server that accepts the connection and never answers it would wait on ctx alone:
// the try's Timeout would not bound it (the callers queued behind the dial give up
// at their timers, the dialer would not), and Close, which waits for the dial in
// progress, would wait with it. The watch is a goroutine per dial, which only a
// reconnection pays. It has returned before redial does, so expired says exactly
// whether it took timer's one tick, which the caller then no longer waits for.
func (c *Client) redial(ctx context.Context, timer <-chan time.Time) (cc *clientConn, expired bool, err error) {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-timer:
			expired = true
			cancel()
		case <-c.closedCh:
			cancel()
		case <-stop:
		}
	}()
	cc, err = c.dial(dctx)
	close(stop)
	<-watched
	return cc, expired, err
}

// Limits are a connection's transfer limits, as negotiated through the RFC 8797 private
// data or later by CONF_RDMA (seed §6), which applies its results with SetLimits.
type Limits struct {
	// InlineSend is the largest transport message this side sends (header and inline
	// RPC message); longer calls use chunks, longer replies the reply chunk.
	InlineSend int
	// InlineRecv is the largest message the peer may send this side inline: a client
	// offers a reply chunk for replies that may be longer.
	InlineRecv int
	// Credits is, for a client, the number of credits requested (the window's cap);
	// for a server connection, unused.
	Credits int
}

// current returns the current connection, nil when there is none.
func (c *Client) current() *clientConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cc
}

// ConnID implements confproto.ConnScoped: it names the current connection, 0 when
// there is none. Each connection the Client establishes gets a new ID, so a
// negotiation's outcome can be tied to the connection it ran on (ApplyToConn).
func (c *Client) ConnID() uint64 {
	cc := c.current()
	if cc == nil {
		return 0
	}
	return cc.id
}

// ApplyToConn implements confproto.ConnScoped: it calls apply, which changes the
// current connection's settings (SetLimits, SetInlineThresholds, SetMaxRDMARead,
// SetReadTarget, SetMSGPAlign), only when the connection named id is still the
// current one and alive, and reports whether it did. No new connection replaces it
// until apply returns. Settings negotiated on a connection since lost are thus not
// applied to the next one, whose server never agreed to them (it may be another
// instance, restarted with other limits); that connection keeps what it started with
// (the RFC 8797 private data values) until it is negotiated itself.
func (c *Client) ApplyToConn(id uint64, apply func()) bool {
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	cc := c.current()
	if cc == nil || cc.id != id || cc.isDead.Load() {
		return false
	}
	apply()
	return true
}

// Limits returns the current connection's limits (zero Limits when not connected).
func (c *Client) Limits() Limits {
	cc := c.current()
	if cc == nil {
		return Limits{}
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return Limits{InlineSend: cc.inlineSend, InlineRecv: cc.maxInline, Credits: cc.window.Max()}
}

// SetLimits changes the current connection's limits, e.g. to apply a CONF_RDMA
// negotiation. Zero fields are left unchanged. InlineSend and InlineRecv may not exceed
// the registered buffer sizes (ClientOptions.InlineSend and InlineRecv) nor go below
// 1024 bytes; InlineSend is also held to the receive buffers the connection's server
// announced in RFC 8797 private data, if it did (limits negotiated on a connection
// since lost must not overrun the next one's server), and InlineRecv to the send
// buffers it announced there: a CONF_RDMA reply does not say how large the server's
// inline replies may be, and a reply the client expects inline gets no reply chunk,
// so one longer than the server can send would draw ERR_CHUNK. Credits changes the window's
// cap. A reconnection starts again from the private-data values and
// ClientOptions.Credits.
func (c *Client) SetLimits(l Limits) error {
	o := &c.opts
	if err := checkInlineLimit("InlineSend", l.InlineSend, o.InlineSend); err != nil {
		return err
	}
	if err := checkInlineLimit("InlineRecv", l.InlineRecv, o.InlineRecv); err != nil {
		return err
	}
	if l.Credits < 0 || l.Credits > o.Credits {
		return fmt.Errorf("rpcrdma: SetLimits: Credits %d outside [1, %d]", l.Credits, o.Credits)
	}
	cc := c.current()
	if cc == nil {
		return fmt.Errorf("rpcrdma: SetLimits: %w", errConnLost)
	}
	cc.mu.Lock()
	if l.InlineSend != 0 {
		cc.inlineSend = l.InlineSend
		if cc.peerRecv > 0 {
			cc.inlineSend = min(cc.inlineSend, cc.peerRecv)
		}
	}
	if l.InlineRecv != 0 {
		cc.maxInline = l.InlineRecv
		if cc.peerSend > 0 {
			cc.maxInline = min(cc.maxInline, cc.peerSend)
		}
	}
	cc.mu.Unlock()
	if l.Credits != 0 {
		cc.window.SetMax(l.Credits)
	}
	return nil
}

// InlineBuffers implements confproto.InlineBuffered: the sizes of the send and receive
// buffers every connection registers (ClientOptions.InlineSend and InlineRecv), so
// that CONF_RDMA asks for no more than they hold.
func (c *Client) InlineBuffers() (send, recv int) { return c.opts.InlineSend, c.opts.InlineRecv }

// SetInlineThresholds implements confproto.Configurable for the current connection:
// send is the largest call sent inline, recv the largest reply the server may send
// inline (longer ones get a reply chunk); both are clamped to [1024, the registered
// buffer sizes].
func (c *Client) SetInlineThresholds(send, recv int) {
	o := &c.opts
	c.SetLimits(Limits{
		InlineSend: clampInline(send, o.InlineSend),
		InlineRecv: clampInline(recv, o.InlineRecv),
	})
}

// SetMaxRDMARead implements confproto.Configurable: the current connection issues at
// most n RDMA Reads at once (clamped to its ORD) when pulling reply read chunks. n is 0
// when the server announced maxrdmaread 0: a reply in read chunks is then refused
// (seed §6.2: the peer "MUST NOT issue requests which require RDMA Read").
func (c *Client) SetMaxRDMARead(n int) {
	cc := c.current()
	if cc == nil {
		return
	}
	cc.mu.Lock()
	cc.ord = max(0, min(n, cc.maxORD))
	cc.mu.Unlock()
}

// Close closes the transport; pending calls fail with oncrpc.ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closedCh)
	cc := c.cc
	c.cc = nil
	dialing := c.dialing
	c.mu.Unlock()
	if dialing != nil {
		<-dialing
	}
	if cc != nil {
		cc.fail(oncrpc.ErrClosed)
		cc.ep.teardown()
	}
	c.mu.Lock()
	cc = c.cc
	c.mu.Unlock()
	if cc != nil {
		cc.fail(oncrpc.ErrClosed)
		cc.ep.teardown()
	}
	if c.bcs != nil {
		c.bcs.Close() // its handlers' replies find the connection dead
	}
	c.regs.close()
	return c.pd.Close()
}

// request is one call's transport state (Linux rpcrdma_req). Requests are pooled.
type request struct {
	xid     uint32
	hdr     Header   // call header
	rhdr    Header   // reply header
	regs    []*reg   // caller memory registered for this call
	replyMR verbs.MR // the reply chunk / reassembly MR (registered reply.Inline)
	asm     assembler
	rcs     []chunks.ReadChunk

	// state says how the caller learns that a reply is attached or the connection is
	// lost (deliver): reqIdle until either the caller blocks on done (reqBlocked: the
	// deliverer sends it a token) or the deliverer comes first (reqDelivered: no
	// token). A caller that received its reply itself (ProcessDirect) thus costs no
	// channel operation.
	state atomic.Uint32
	done  chan struct{} // receives one token for a caller in reqBlocked
	// replied reports reqDelivered (verbs.DirectProcessor's done, made once per
	// request so that waiting allocates nothing); sole: the call was the
	// connection's only pending one when it was posted (guarded by cc.mu).
	replied func() bool
	sole    bool
	orphan  bool // the caller gave up; the reply handler cleans up (guarded by cc.mu)
	handed  bool // the receive handler took the reply for the caller (guarded by cc.mu)
	lost    bool // the connection failed while the call was pending; set with the token in done (guarded by cc.mu)

	// Set by the receive handler.
	recvIdx int
	recvLen int
	invSTag uint32
	inv     bool
}

// The states of request.state.
const (
	reqIdle      = iota // neither the caller nor the deliverer has come yet
	reqBlocked          // the caller waits on done
	reqDelivered        // delivered with the caller not blocked: no token
)

// deliver tells the caller that its reply is attached or (r.lost) that the connection
// failed: by the state alone, or by a token in done if the caller already blocks on it.
// It never blocks: done holds one token, and only one delivery happens per request.
func (r *request) deliver() {
	if r.state.CompareAndSwap(reqIdle, reqDelivered) {
		return
	}
	r.done <- struct{}{}
}

// block marks the caller as waiting on done and reports whether it must: false when
// the delivery came first.
func (r *request) block() bool { return r.state.CompareAndSwap(reqIdle, reqBlocked) }

func (c *Client) getRequest() *request { return c.reqPool.Get().(*request) }

func (c *Client) putRequest(r *request) {
	r.orphan, r.handed, r.lost, r.inv = false, false, false, false
	select {
	case <-r.done:
	default:
	}
	r.state.Store(reqIdle)
	c.reqPool.Put(r)
}

// RoundTrip implements oncrpc.RoundTripper: it sends call and waits for its reply,
// retransmitting on a new connection if the connection is lost. A try that times out
// (call.Timeout) drops the connection, as Linux does, so that the Client's
// retransmission with the same XID goes out on a fresh connection and the server's credit
// accounting stays exact.
func (c *Client) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	var timer <-chan time.Time
	var tryDeadline time.Time
	if call.Timeout > 0 {
		tryDeadline = time.Now().Add(call.Timeout)
		t := getTimer(call.Timeout)
		defer putTimer(t)
		timer = t.C
	}
	for {
		cc, err := c.conn(ctx, timer)
		if err != nil {
			return err
		}
		if err := cc.window.AcquireWithin(ctx, timer); err != nil {
			if errors.Is(err, credits.ErrClosed) {
				continue // the connection was lost (or the Client closed: conn says so)
			}
			if errors.Is(err, credits.ErrExpired) {
				// Every credit is held by a call the server has not answered within
				// this call's try: drop the connection, as a try that times out does.
				cc.fail(errConnLost)
				return fmt.Errorf("rpcrdma: xid %#08x: waiting for a credit: %w", call.XID, oncrpc.ErrTimeout)
			}
			return err
		}
		err = cc.roundTrip(ctx, timer, tryDeadline, call, reply)
		if errors.Is(err, errConnLost) {
			c.mu.Lock()
			closed := c.closed
			c.mu.Unlock()
			if closed {
				return oncrpc.ErrClosed
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.opts.Logger.Debug("retransmitting after connection loss", "xid", call.XID)
			continue
		}
		return err
	}
}

// cancelCheck bounds how long a caller whose context can be cancelled receives
// directly (the receiving goroutine waits for the socket, not for the context) before
// it waits on its context too: the longest a cancellation can go unnoticed. Replies
// mostly come far sooner; a call still waiting then waits as without a
// DirectProcessor. A variable only so that the tests that count direct receipts can
// widen it: how soon a reply comes on a loaded machine is not theirs to assert.
var cancelCheck = 2 * time.Millisecond

// receive lets the caller receive its own reply when the provider can receive on the
// caller's goroutine (verbs.DirectProcessor) and the call is the connection's only
// pending one, so that no goroutine has to wake it (at one call in flight, the
// hand-off from the provider's goroutine to the caller is a thread wake-up per call).
// The try's deadline (zero: none), ctx's deadline, and for a ctx that can be
// cancelled cancelCheck from now, whichever comes first, end that. It returns with
// r delivered, or after asking the provider's goroutine to keep receiving (Resume);
// the caller then waits on r.done (and ctx and its timer) as without a
// DirectProcessor.
func (cc *clientConn) receive(ctx context.Context, r *request, deadline time.Time) {
	d := cc.ep.direct
	if d == nil {
		return
	}
	if r.sole {
		if ctx.Done() != nil {
			if dl := time.Now().Add(cancelCheck); deadline.IsZero() || dl.Before(deadline) {
				deadline = dl
			}
		}
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		if d.ProcessDirect(r.replied, deadline) {
			return
		}
	}
	d.Resume() // this wait does not receive: someone must
}

// tryTimers pools the timers of calls with a per-try Timeout, so that a Client that
// retransmits after a timeout (as nfsrdma's does) allocates nothing per call.
var tryTimers sync.Pool

// getTimer returns a timer that fires after d.
func getTimer(d time.Duration) *time.Timer {
	if t, _ := tryTimers.Get().(*time.Timer); t != nil {
		t.Reset(d) // stopped in putTimer: since Go 1.23 no stale tick remains
		return t
	}
	return time.NewTimer(d)
}

// putTimer stops t and keeps it for getTimer.
func putTimer(t *time.Timer) {
	t.Stop()
	tryTimers.Put(t)
}

// roundTrip is one try on one connection. It holds one credit, released here unless the
// request is orphaned (then the reply handler releases it).
func (cc *clientConn) roundTrip(ctx context.Context, timer <-chan time.Time, tryDeadline time.Time, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	c := cc.c
	r := c.getRequest()
	r.xid = call.XID
	err := cc.send(ctx, r, call, reply)
	if err != nil {
		cc.release(r)
		cc.window.Release()
		c.putRequest(r)
		return err
	}
	// A delivery (r.deliver) says a reply is attached, or (r.lost) that the connection
	// failed with the call pending (fail). A caller that must wait for it, and has no
	// deadline, waits on the one channel, not in a select that also queues it on the
	// connection's shared dead channel.
	woken := true
	cc.receive(ctx, r, tryDeadline)
	if !r.block() {
		// Delivered already (received directly, as a sole call usually is).
	} else if done := ctx.Done(); done == nil && timer == nil {
		<-r.done
	} else {
		select {
		case <-r.done:
		case <-done:
			err, woken = ctx.Err(), false
		case <-timer:
			err, woken = fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, oncrpc.ErrTimeout), false
		}
	}
	if woken && !r.lost { // r.lost was set before the delivery
		err = cc.complete(ctx, r, call, reply)
		cc.release(r)
		cc.window.Release()
		c.putRequest(r)
		return err
	}
	// No reply: revoke the caller's memory now; the credit stays held by the orphan
	// until the reply arrives or the connection ends.
	cc.mu.Lock()
	if r.lost {
		err = errConnLost // the token, if not taken yet, is dropped by putRequest
	}
	orphan := cc.pending.has(r.xid) && !r.handed && err != errConnLost
	if orphan {
		cc.revoke(r) // handed back with the reply, or when the connection ends
	} else if !r.handed {
		cc.release(r)
	}
	if orphan {
		r.orphan = true
		cc.mu.Unlock()
		if errors.Is(err, oncrpc.ErrTimeout) {
			// Linux xprt_rdma_timer: a timeout on a connected transport forces a
			// disconnect; the retransmission goes out on a new connection.
			cc.fail(errConnLost)
		}
		return err
	}
	if r.handed {
		// The receive handler took the reply as we gave up: use it.
		cc.mu.Unlock()
		<-r.done
		err = cc.complete(ctx, r, call, reply)
		cc.release(r)
		cc.window.Release()
		c.putRequest(r)
		return err
	}
	cc.pending.take(r.xid)
	cc.mu.Unlock()
	cc.window.Release()
	c.putRequest(r)
	if err == errConnLost {
		return fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, errConnLost)
	}
	return err
}
