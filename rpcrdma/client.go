package rpcrdma

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/hashicorp/go-hclog"
)

// Client transport defaults.
const (
	// DefaultInline is the inline send and receive size this package offers: Linux's
	// RPCRDMA_DEF_INLINE, 4096.
	DefaultInline = 4096
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
	// it sends and the size of its receive buffers. Default DefaultInline. The send
	// size actually used is the smaller of InlineSend and the server's announced
	// receive size (1024 when it announced none).
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
	// MSGPAlign, when not zero, makes the client send calls of at least MSGPThresh
	// bytes as RDMA_MSGP, padded so the RPC message starts on an MSGPAlign boundary of
	// the server's receive buffer (see "RDMA_MSGP" in the package documentation).
	// Only for servers that accept RDMA_MSGP (ServerOptions.MSGP); Linux answers
	// ERR_CHUNK. At most MaxMSGPAlign. Replies in RDMA_MSGP are always understood.
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
}

func (o *ClientOptions) fill() {
	o.InlineSend, o.InlineRecv = inlineOption(o.InlineSend), inlineOption(o.InlineRecv)
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

// Client is the RPC-over-RDMA client transport: an oncrpc.RoundTripper over one RDMA
// connection that is re-established (and outstanding calls retransmitted) when it is
// lost.
type Client struct {
	dev    verbs.Device
	addr   string
	opts   ClientOptions
	pd     verbs.PD
	regs   *regCache
	window *credits.Window

	mu       sync.Mutex
	cc       *clientConn
	dialing  chan struct{} // closed when the current dial attempt ends
	closed   bool
	closedCh chan struct{}

	reqPool sync.Pool
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
	c := &Client{dev: dev, addr: addr, opts: o, pd: pd, regs: newRegCache(pd), window: credits.NewWindow(o.Credits), closedCh: make(chan struct{})}
	c.reqPool.New = func() any { return &request{done: make(chan struct{}, 1)} }
	cc, err := c.dial(ctx)
	if err != nil {
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
	inlineSend int // largest message we may send (guarded by mu after dial)
	maxInline  int // largest reply the server can send inline (guarded by mu after dial)
	ord        int // RDMA Reads at once when pulling reply read chunks (guarded by mu)
	maxORD     int // the negotiated ORD

	mu      sync.Mutex
	pending map[uint32]*request
	dead    chan struct{}
	deadErr error
}

// dial establishes one connection.
func (c *Client) dial(ctx context.Context) (*clientConn, error) {
	o := &c.opts
	nrecv := o.Credits + 8
	ep, err := newEndpoint(c.pd, c.dev, endpointConfig{
		recvSize: o.InlineRecv, nrecv: nrecv,
		sendSize: o.InlineSend, nsend: o.Credits + 8,
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
	if perr != nil {
		o.Logger.Debug("server sent no RFC 8797 private data; using 1024-byte inline sizes", "addr", c.addr, "err", perr)
	}
	cc := &clientConn{
		c: c, ep: ep,
		inlineSend: min(o.InlineSend, peer.RecvSize),
		maxInline:  min(o.InlineRecv, peer.SendSize),
		ord:        max(info.ORD, 1),
		maxORD:     max(info.ORD, 1),
		pending:    make(map[uint32]*request),
		dead:       make(chan struct{}),
	}
	c.window.Reset()
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
	close(cc.dead)
	orphans := make([]*request, 0)
	for xid, r := range cc.pending {
		delete(cc.pending, xid)
		if r.orphan {
			orphans = append(orphans, r)
		}
	}
	cc.mu.Unlock()
	cc.ep.close()
	for _, r := range orphans {
		cc.c.window.Release()
		cc.c.putRequest(r)
	}
	go func() {
		cc.ep.teardown()
	}()
}

// conn returns a live connection, dialling a new one if needed.
func (c *Client) conn(ctx context.Context) (*clientConn, error) {
	delay := c.opts.ReconnectDelay
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, oncrpc.ErrClosed
		}
		if cc := c.cc; cc != nil {
			select {
			case <-cc.dead:
				c.cc = nil
			default:
				c.mu.Unlock()
				return cc, nil
			}
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		c.dialing = ch
		c.mu.Unlock()

		cc, err := c.dial(ctx)
		c.mu.Lock()
		c.dialing = nil
		close(ch)
		if err == nil {
			if c.closed {
				c.mu.Unlock()
				cc.fail(oncrpc.ErrClosed)
				return nil, oncrpc.ErrClosed
			}
			c.cc = cc
			c.mu.Unlock()
			c.opts.Logger.Info("reconnected", "addr", c.addr)
			return cc, nil
		}
		c.mu.Unlock()
		c.opts.Logger.Debug("reconnect failed", "addr", c.addr, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last dial error: %v)", ctx.Err(), err)
		case <-c.closedCh:
			t.Stop()
			return nil, oncrpc.ErrClosed
		}
		delay = min(2*delay, time.Second)
	}
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

// Limits returns the current connection's limits (zero Limits when not connected).
func (c *Client) Limits() Limits {
	cc := c.current()
	if cc == nil {
		return Limits{}
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return Limits{InlineSend: cc.inlineSend, InlineRecv: cc.maxInline, Credits: c.window.Max()}
}

// SetLimits changes the current connection's limits, e.g. to apply a CONF_RDMA
// negotiation. Zero fields are left unchanged. InlineSend and InlineRecv may not exceed
// the registered buffer sizes (ClientOptions.InlineSend and InlineRecv) nor go below
// 1024 bytes. Credits changes the window's cap. A reconnection starts again from the
// private-data values.
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
	}
	if l.InlineRecv != 0 {
		cc.maxInline = l.InlineRecv
	}
	cc.mu.Unlock()
	if l.Credits != 0 {
		c.window.SetMax(l.Credits)
	}
	return nil
}

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
// most n RDMA Reads at once (clamped to [1, its ORD]) when pulling reply read chunks.
func (c *Client) SetMaxRDMARead(n int) {
	cc := c.current()
	if cc == nil {
		return
	}
	cc.mu.Lock()
	cc.ord = max(1, min(n, cc.maxORD))
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
	c.window.Close()
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

	done   chan struct{} // receives one token when a reply is attached
	orphan bool          // the caller gave up; the reply handler cleans up (guarded by cc.mu)
	handed bool          // the receive handler took the reply for the caller (guarded by cc.mu)

	// Set by the receive handler.
	recvIdx int
	recvLen int
	invSTag uint32
	inv     bool
}

func (c *Client) getRequest() *request { return c.reqPool.Get().(*request) }

func (c *Client) putRequest(r *request) {
	r.orphan, r.handed = false, false
	select {
	case <-r.done:
	default:
	}
	c.reqPool.Put(r)
}

// RoundTrip implements oncrpc.RoundTripper: it sends call and waits for its reply,
// retransmitting on a new connection if the connection is lost. A try that times out
// (call.Timeout) drops the connection, as Linux does, so that the Client's
// retransmission with the same XID goes out on a fresh connection and the server's credit
// accounting stays exact.
func (c *Client) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	var timer <-chan time.Time
	if call.Timeout > 0 {
		t := time.NewTimer(call.Timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		cc, err := c.conn(ctx)
		if err != nil {
			return err
		}
		if err := c.window.Acquire(ctx); err != nil {
			if errors.Is(err, credits.ErrClosed) {
				return oncrpc.ErrClosed
			}
			return err
		}
		err = cc.roundTrip(ctx, timer, call, reply)
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

// roundTrip is one try on one connection. It holds one credit, released here unless the
// request is orphaned (then the reply handler releases it).
func (cc *clientConn) roundTrip(ctx context.Context, timer <-chan time.Time, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	c := cc.c
	r := c.getRequest()
	r.xid = call.XID
	err := cc.send(ctx, r, call, reply)
	if err != nil {
		cc.release(r)
		c.window.Release()
		c.putRequest(r)
		return err
	}
	select {
	case <-r.done:
		err = cc.complete(ctx, r, call, reply)
		cc.release(r)
		c.window.Release()
		c.putRequest(r)
		return err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer:
		err = fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, oncrpc.ErrTimeout)
	case <-cc.dead:
		err = errConnLost
	}
	// No reply: revoke the caller's memory now; the credit stays held by the orphan
	// until the reply arrives or the connection ends.
	cc.mu.Lock()
	if !r.handed {
		cc.release(r)
	}
	if _, ok := cc.pending[r.xid]; ok && !r.handed && err != errConnLost {
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
		c.window.Release()
		c.putRequest(r)
		return err
	}
	delete(cc.pending, r.xid)
	cc.mu.Unlock()
	c.window.Release()
	c.putRequest(r)
	if err == errConnLost {
		return fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, errConnLost)
	}
	return err
}

// register registers caller memory for one call (see regCache).
func (cc *clientConn) register(r *request, buf []byte, acc verbs.Access) (verbs.MR, error) {
	g, err := cc.c.regs.register(buf, acc)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: xid %#08x: %w", r.xid, err)
	}
	r.regs = append(r.regs, g)
	return g.mr, nil
}

// release revokes every registration made for the call: when it returns, the server
// can no longer read or write the caller's memory (Linux frwr_unmap_sync).
func (cc *clientConn) release(r *request) {
	for i, g := range r.regs {
		cc.c.regs.release(g)
		r.regs[i] = nil
	}
	r.regs = r.regs[:0]
	r.replyMR = nil
}

// segmentOf describes a whole registered region as one segment.
func segmentOf(mr verbs.MR, n int) chunks.Segment {
	return chunks.Segment{Handle: mr.RKey(), Length: uint32(n), Offset: mr.Addr()}
}

// send marshals the call (Linux rpcrdma_marshal_req) and posts it.
func (cc *clientConn) send(ctx context.Context, r *request, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	cc.mu.Lock()
	inlineSend, maxInline := cc.inlineSend, cc.maxInline
	cc.mu.Unlock()
	h := &r.hdr
	h.Reset()
	h.XID, h.Vers, h.Credits, h.Proc = call.XID, Version1, uint32(cc.c.window.Max()), ProcMsg

	// Write list: one chunk per reply sink. The server puts the i-th DDP-eligible result
	// in the i-th chunk, so an empty sink (which cannot be registered) ends the list:
	// later results travel inline.
	for _, sink := range call.ReplySinks {
		if len(sink) == 0 {
			break
		}
		mr, err := cc.register(r, sink, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			return err
		}
		n := len(h.WriteList)
		if n < cap(h.WriteList) {
			h.WriteList = h.WriteList[:n+1]
		} else {
			h.WriteList = append(h.WriteList, nil)
		}
		h.WriteList[n] = append(h.WriteList[n][:0], segmentOf(mr, len(sink)))
	}

	// Reply chunk whenever the reply may not fit inline.
	maxReply := call.MaxReply
	if maxReply <= 0 {
		maxReply = cc.c.opts.MaxReply
	}
	budget := maxInline - (FixedSize + 4 + 4 + 4) // reply header with empty lists
	for i, c := range h.WriteList {
		budget -= 4 + WriteChunkSize(len(c))
		// Data placed in a write chunk travels neither inline nor in the reply
		// chunk (Linux sizes the reply chunk the same way; knfsd, offered a reply
		// chunk beside a READ's write chunk, writes the data into both).
		if call.MaxReply > 0 {
			maxReply -= xdr.RoundUp(len(call.ReplySinks[i]))
		}
	}
	maxReply = max(maxReply, 0)
	if maxReply > budget {
		if cap(reply.Inline) < maxReply {
			reply.Inline = make([]byte, 0, maxReply)
		}
		buf := reply.Inline[:maxReply]
		mr, err := cc.register(r, buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			return err
		}
		r.replyMR = mr
		h.ReplyChunk = append(h.ReplyChunk[:0], segmentOf(mr, maxReply))
	}

	// Call: inline if it fits, else payloads as read chunks, else a long call.
	total := call.Msg.Len()
	var body []byte // inline body to send, nil when flattening payloads
	flatten := false
	if h.Size()+total <= inlineSend {
		flatten = true
	} else {
		for _, p := range call.Msg.Payloads {
			if len(p.Data) == 0 {
				continue
			}
			mr, err := cc.register(r, p.Data, verbs.AccessRemoteRead)
			if err != nil {
				return err
			}
			h.ReadList = append(h.ReadList, chunks.ReadSegment{Position: uint32(p.Pos), Segment: segmentOf(mr, len(p.Data))})
		}
		body = call.Msg.Inline
		if h.Size()+len(body) > inlineSend {
			// Long call: RDMA_NOMSG, the inline stream as a position-zero read chunk.
			mr, err := cc.register(r, call.Msg.Inline, verbs.AccessRemoteRead)
			if err != nil {
				return err
			}
			h.ReadList = append(h.ReadList, chunks.ReadSegment{})
			copy(h.ReadList[1:], h.ReadList)
			h.ReadList[0] = chunks.ReadSegment{Position: 0, Segment: segmentOf(mr, len(call.Msg.Inline))}
			h.Proc = ProcNoMsg
			body = nil
			if h.Size() > inlineSend {
				return fmt.Errorf("rpcrdma: xid %#08x: transport header of %d bytes exceeds the inline send size %d", call.XID, h.Size(), inlineSend)
			}
		}
	}

	// RDMA_MSGP (opt-in): pad so the RPC message starts on an rdma_align boundary.
	pad := 0
	if o := &cc.c.opts; h.Proc == ProcMsg && o.MSGPAlign > 0 {
		msgLen := len(body)
		if flatten {
			msgLen = total
		}
		if msgLen >= int(o.MSGPThresh) {
			h.Proc, h.Align, h.Thresh = ProcMsgP, o.MSGPAlign, o.MSGPThresh
			pad = msgpPad(h.Size(), h.Align)
			if h.Size()+pad+msgLen > inlineSend {
				h.Proc, h.Align, h.Thresh, pad = ProcMsg, 0, 0, 0
			}
		}
	}

	idx, buf, err := cc.ep.getSendBuf(ctx)
	if err != nil {
		return cc.sendErr(err)
	}
	b, err := h.Append(buf[:0])
	if err != nil {
		cc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, err)
	}
	b = append(b, zeroPad[:pad]...)
	if flatten {
		b = xdr.Flatten(b, call.Msg.Inline, call.Msg.Payloads)
	} else {
		b = append(b, body...)
	}
	if len(b) > len(buf) {
		cc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: xid %#08x: message of %d bytes overflows the send buffer", call.XID, len(b))
	}
	if tr := cc.c.opts.Trace; tr != nil {
		tr(true, b)
	}
	cc.mu.Lock()
	select {
	case <-cc.dead:
		cc.mu.Unlock()
		cc.ep.putSendBuf(idx)
		return errConnLost
	default:
	}
	cc.pending[call.XID] = r
	cc.mu.Unlock()
	if err := cc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil); err != nil {
		cc.mu.Lock()
		delete(cc.pending, call.XID)
		cc.mu.Unlock()
		return cc.sendErr(err)
	}
	return nil
}

// sendErr maps a send failure on a dead connection to errConnLost.
func (cc *clientConn) sendErr(err error) error {
	select {
	case <-cc.dead:
		return errConnLost
	case <-cc.ep.qp.Done():
		return errConnLost
	default:
	}
	return err
}

// onRecv handles a receive completion (in the poller goroutine): it matches the reply
// to its call by XID and hands the buffer over. Unknown XIDs are dropped.
func (cc *clientConn) onRecv(idx, n int, wc *verbs.Completion) {
	if wc.Status != verbs.StatusSuccess {
		return // flushed: the connection is going away
	}
	buf := cc.ep.recvBuf(idx)[:n]
	if tr := cc.c.opts.Trace; tr != nil {
		tr(false, buf)
	}
	if n < FixedSize {
		cc.repost(idx)
		return
	}
	xid := binary.BigEndian.Uint32(buf)
	cc.mu.Lock()
	r, ok := cc.pending[xid]
	orphan := false
	if ok {
		delete(cc.pending, xid)
		orphan = r.orphan
		r.handed = !orphan
	}
	cc.mu.Unlock()
	if !ok {
		cc.repost(idx)
		return
	}
	r.recvIdx, r.recvLen = idx, n
	r.inv, r.invSTag = wc.Flags&verbs.WithInvalidate != 0, wc.InvalidatedSTag
	if orphan {
		go cc.finishOrphan(r)
		return
	}
	r.done <- struct{}{}
}

// finishOrphan completes a call whose caller gave up: it acknowledges reply read chunks
// with RDMA_DONE so the server can release them, then frees the credit.
func (cc *clientConn) finishOrphan(r *request) {
	buf := cc.ep.recvBuf(r.recvIdx)[:r.recvLen]
	if _, err := r.rhdr.Decode(buf); err == nil {
		cc.c.window.Update(r.rhdr.Credits)
		if len(r.rhdr.ReadList) > 0 {
			cc.sendDone(context.Background(), r.xid)
		}
	}
	cc.repost(r.recvIdx)
	cc.c.window.Release()
	cc.c.putRequest(r)
}

// repost gives a receive buffer back to the receive queue.
func (cc *clientConn) repost(idx int) {
	if err := cc.ep.postRecv(idx); err != nil {
		cc.fail(err)
	}
}

// sendDone sends RDMA_DONE for xid (seed §3.8).
func (cc *clientConn) sendDone(ctx context.Context, xid uint32) error {
	idx, buf, err := cc.ep.getSendBuf(ctx)
	if err != nil {
		return err
	}
	d := Header{XID: xid, Vers: Version1, Credits: uint32(cc.c.window.Max()), Proc: ProcDone}
	b, _ := d.Append(buf[:0])
	if tr := cc.c.opts.Trace; tr != nil {
		tr(true, b)
	}
	return cc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil)
}

// complete decodes the reply attached to r into reply (Linux rpcrdma_reply_handler).
func (cc *clientConn) complete(ctx context.Context, r *request, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	defer cc.repost(r.recvIdx)
	buf := cc.ep.recvBuf(r.recvIdx)[:r.recvLen]
	h := &r.rhdr
	hl, err := h.Decode(buf)
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w: %w", call.XID, ErrBadReply, err)
	}
	cc.c.window.Update(h.Credits)
	reply.Placed = reply.Placed[:0]
	switch h.Proc {
	case ProcError:
		return &RemoteError{XID: h.XID, Code: h.ErrCode, VersLow: h.VersLow, VersHigh: h.VersHigh}
	case ProcMsg, ProcNoMsg, ProcMsgP:
	default:
		return fmt.Errorf("rpcrdma: xid %#08x: %w: unexpected %v", call.XID, ErrBadReply, h.Proc)
	}

	replyCap := 0
	if r.replyMR != nil {
		replyCap = min(len(r.replyMR.Buf()), cap(reply.Inline))
	}
	kind, body, grouped, replyLen, err := parseReply(h, buf[hl:], hl, call.ReplySinks, replyCap, r.rcs[:0])
	if grouped != nil {
		r.rcs = grouped
	}
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w: %w", call.XID, ErrBadReply, err)
	}
	// Write chunks: lengths tell how much of each sink was filled.
	for i, wc := range h.WriteList {
		reply.Placed = append(reply.Placed, call.ReplySinks[i][:wc.Length()])
	}

	switch kind {
	case replyInReadChunks:
		// A long reply returned as read chunks: pull them, then RDMA_DONE.
		err = cc.pullReply(ctx, r, h, body, grouped, call, reply)
		if derr := cc.sendDone(ctx, call.XID); err == nil && derr != nil {
			err = fmt.Errorf("rpcrdma: xid %#08x: send RDMA_DONE: %w", call.XID, derr)
		}
		return err
	case replyInChunk:
		// Revoke the server's access before handing the bytes to the caller.
		cc.release(r)
		reply.Inline = reply.Inline[:replyLen]
		return nil
	default:
		cc.release(r)
		reply.Inline = append(reply.Inline[:0], body...)
		return nil
	}
}

// replyKind says where a reply's RPC message is.
type replyKind int

const (
	replyInline       replyKind = iota // after the header (RDMA_MSG, RDMA_MSGP)
	replyInChunk                       // written into the reply chunk (RDMA_NOMSG)
	replyInReadChunks                  // to be pulled from read chunks, then RDMA_DONE
)

// parseReply checks a decoded RDMA_MSG, RDMA_NOMSG or RDMA_MSGP reply header h against
// what the call offered (sinks: the write chunks, in order; replyCap: the reply chunk's
// size, 0 when none was offered) and says where the RPC message is: body is what follows
// the header (hl bytes long) with any RDMA_MSGP padding removed, grouped the reply's read
// chunks (grouped into rcs), replyLen the bytes written to the reply chunk. Linux
// (rpcrdma_reply_handler) applies the same rules, less read chunks and RDMA_MSGP.
func parseReply(h *Header, body []byte, hl int, sinks [][]byte, replyCap int, rcs []chunks.ReadChunk) (kind replyKind, _ []byte, grouped []chunks.ReadChunk, replyLen uint64, err error) {
	switch h.Proc {
	case ProcMsg, ProcNoMsg, ProcMsgP:
	default:
		return 0, nil, nil, 0, fmt.Errorf("unexpected %v", h.Proc)
	}
	if len(h.WriteList) > len(sinks) {
		return 0, nil, nil, 0, fmt.Errorf("%d write chunks returned, %d offered", len(h.WriteList), len(sinks))
	}
	for i, wc := range h.WriteList {
		if n := wc.Length(); n > uint64(len(sinks[i])) {
			return 0, nil, nil, 0, fmt.Errorf("write chunk %d reports %d bytes, %d offered", i, n, len(sinks[i]))
		}
	}
	if h.Proc == ProcMsgP {
		// Seed §3.9: padding between the header and the message, to rdma_align.
		pad := msgpPad(hl, h.Align)
		if pad > len(body) {
			return 0, nil, nil, 0, errors.New("RDMA_MSGP padding beyond the message")
		}
		body = body[pad:]
	}
	if len(h.ReadList) > 0 {
		if grouped, err = chunks.Group(rcs, h.ReadList); err != nil {
			return 0, nil, grouped, 0, err
		}
		return replyInReadChunks, body, grouped, 0, nil
	}
	if h.Proc == ProcNoMsg {
		if len(h.ReplyChunk) == 0 || replyCap == 0 {
			return 0, nil, nil, 0, errors.New("RDMA_NOMSG reply without a reply chunk")
		}
		n := h.ReplyChunk.Length()
		if n > uint64(replyCap) {
			return 0, nil, nil, 0, fmt.Errorf("reply chunk reports %d bytes, %d offered", n, replyCap)
		}
		return replyInChunk, nil, nil, n, nil
	}
	if h.ReplyChunk.Length() != 0 {
		return 0, nil, nil, 0, fmt.Errorf("%v reply with a non-empty reply chunk", h.Proc)
	}
	return replyInline, body, nil, 0, nil
}

// MaxMSGPAlign is the largest rdma_align this package pads to; larger values are
// treated as no padding.
const MaxMSGPAlign = 4096

var zeroPad [MaxMSGPAlign]byte

// msgpPad returns the padding an RDMA_MSGP sender puts between a header of hl bytes and
// the RPC message so that the message starts on an align boundary.
//
// RDMA_MSGP (seed §3.9) asks the XDR decoder to skip padding before opaque data of at
// least rdma_thresh bytes. A transport cannot find opaque items in a stream it does not
// parse, so this package applies the padding where the transport can: once, between the
// transport header and the RPC message, aligning the whole message (and so its
// 4-byte-aligned items) to rdma_align in the receive buffer; a sender uses RDMA_MSGP only
// for messages of at least rdma_thresh bytes. Both sides of this package strip it, and
// only peers that opted in send it (Linux removed RDMA_MSGP on both sides).
func msgpPad(hl int, align uint32) int {
	if align <= 1 || align > MaxMSGPAlign {
		return 0
	}
	a := int(align)
	return (a - hl%a) % a
}

// pullReply reads a reply returned in read chunks into reply.Inline.
func (cc *clientConn) pullReply(ctx context.Context, r *request, h *Header, body []byte, grouped []chunks.ReadChunk, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	var pzrc []chunks.Segment
	rcs := grouped
	if grouped[0].Position == 0 {
		pzrc = grouped[0].Segments
		rcs = grouped[1:]
		body = nil
	}
	limit := max(cc.c.opts.MaxReply, call.MaxReply)
	total, err := r.asm.planAssembly(len(body), pzrc, rcs, limit)
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w: %w", call.XID, ErrBadReply, err)
	}
	mr := r.replyMR
	if mr == nil || len(mr.Buf()) < total {
		if cap(reply.Inline) < total {
			reply.Inline = make([]byte, 0, total)
		}
		if mr, err = cc.register(r, reply.Inline[:total], verbs.AccessLocalWrite); err != nil {
			return err
		}
	}
	cc.mu.Lock()
	ord := cc.ord
	cc.mu.Unlock()
	if err := r.asm.run(ctx, cc.ep, mr, body, ord, nil); err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: read reply chunks: %w", call.XID, err)
	}
	cc.release(r)
	reply.Inline = reply.Inline[:total]
	return nil
}
