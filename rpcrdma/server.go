package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/hashicorp/go-hclog"
)

// Server transport defaults.
const (
	// DefaultMaxCall is the largest call a server reassembles from read chunks: 1 MiB
	// of data plus room for headers (Linux RPCSVC_MAXPAYLOAD_RDMA).
	DefaultMaxCall = 1<<20 + 64<<10
	// DefaultDoneTimeout is how long a reply returned in read chunks stays registered
	// waiting for the client's RDMA_DONE.
	DefaultDoneTimeout = 30 * time.Second
	// DefaultExtraRecvs is how many receives a connection posts beyond its largest
	// grant (Linux keeps a batch of 7 more), for RDMA_DONE and error traffic.
	DefaultExtraRecvs = 8
)

// ServerOptions configure a Listener. The zero value selects the defaults.
type ServerOptions struct {
	// InlineSend and InlineRecv are this side's inline thresholds: the largest message
	// it sends and the size of its receive buffers (announced in the RFC 8797 private
	// data). Default DefaultInline (4096, as Linux svcrdma). Replies sent inline are
	// further limited by the client's announced receive size (1024 when it announced
	// none).
	InlineSend, InlineRecv int
	// Credits shares credits between connections. Default: credits.NewServer with
	// credits.Config{} (FairShare of 256, at most 64 per connection). Each connection
	// posts Credits.Config().PerConn + ExtraRecvs receives.
	Credits *credits.Server
	// ExtraRecvs is the number of receives posted beyond the largest grant. Default 8.
	ExtraRecvs int
	// MaxCall bounds a call reassembled from read chunks. Default DefaultMaxCall.
	MaxCall int
	// ORD caps the RDMA Reads in flight per connection (also capped by the client's
	// IRD). Default DefaultIRD.
	ORD int
	// ReplyReadChunks lets the server return a reply that fits neither inline nor the
	// client's reply chunk as a position-zero read chunk the client pulls (seed §3.8),
	// kept registered until the client's RDMA_DONE or DoneTimeout. Off by default:
	// Linux clients reject such replies.
	ReplyReadChunks bool
	// DoneTimeout bounds how long such a reply stays registered. Default
	// DefaultDoneTimeout.
	DoneTimeout time.Duration
	// MSGP accepts RDMA_MSGP calls and answers them with RDMA_MSGP replies padded the
	// same way (see "RDMA_MSGP" in the package documentation). Off by default: Linux svcrdma answers MSGP with ERR_CHUNK,
	// and so does this server unless MSGP is set.
	MSGP bool
	// NoSendInvalidate disables Send With Invalidate even when the client allows it.
	NoSendInvalidate bool
	// Logger receives control-path events. Default: none.
	Logger hclog.Logger
	// Trace, when set, is called with every transport message the server sends and
	// receives. It must not retain msg.
	Trace func(sent bool, msg []byte)
}

func (o *ServerOptions) fill() {
	o.InlineSend, o.InlineRecv = inlineOption(o.InlineSend), inlineOption(o.InlineRecv)
	if o.Credits == nil {
		o.Credits = credits.NewServer(credits.Config{})
	}
	if o.ExtraRecvs <= 0 {
		o.ExtraRecvs = DefaultExtraRecvs
	}
	if o.MaxCall <= 0 {
		o.MaxCall = DefaultMaxCall
	}
	if o.ORD <= 0 {
		o.ORD = DefaultIRD
	}
	if o.DoneTimeout <= 0 {
		o.DoneTimeout = DefaultDoneTimeout
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// Addr is the address of an RPC-over-RDMA endpoint: a TCP-style address whose Network
// is the netid "rdma" (or "rdma6" for IPv6).
type Addr struct{ net.Addr }

// Network returns "rdma" or "rdma6".
func (a Addr) Network() string {
	if t, ok := a.Addr.(*net.TCPAddr); ok && t.IP.To4() == nil && t.IP != nil {
		return "rdma6"
	}
	return "rdma"
}

// Listener is the RPC-over-RDMA server transport's listener: an oncrpc.Listener.
type Listener struct {
	dev   verbs.Device
	ln    verbs.Listener
	pd    verbs.PD
	opts  ServerOptions
	bufs  bufPool
	regs  *regCache
	mu    sync.Mutex
	conns map[*ServerConn]struct{}
	done  bool
}

var _ oncrpc.Listener = (*Listener)(nil)

// Listen starts accepting RPC-over-RDMA connections on addr ("host:port") over dev.
func Listen(ctx context.Context, dev verbs.Device, addr string, opts *ServerOptions) (*Listener, error) {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	o.fill()
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: listen %s: %w", addr, err)
	}
	ln, err := dev.Listen(ctx, addr)
	if err != nil {
		pd.Close()
		return nil, fmt.Errorf("rpcrdma: listen %s: %w", addr, err)
	}
	l := &Listener{dev: dev, ln: ln, pd: pd, opts: o, conns: make(map[*ServerConn]struct{})}
	l.bufs.pd = pd
	l.regs = newRegCache(pd)
	return l, nil
}

// Addr returns the listening address (netid "rdma").
func (l *Listener) Addr() net.Addr { return Addr{l.ln.Addr()} }

// Close stops accepting and closes every connection accepted from l.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return nil
	}
	l.done = true
	conns := make([]*ServerConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	err := l.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	l.bufs.close()
	l.regs.close()
	l.pd.Close()
	return err
}

// Accept waits for a connection request, accepts it with this server's RFC 8797 private
// data and returns the connection.
func (l *Listener) Accept(ctx context.Context) (oncrpc.ServerConn, error) {
	for {
		sc, err := l.accept(ctx)
		if err == nil {
			return sc, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		l.mu.Lock()
		done := l.done
		l.mu.Unlock()
		if done || errors.Is(err, verbs.ErrClosed) {
			return nil, fmt.Errorf("rpcrdma: accept: %w", oncrpc.ErrClosed)
		}
		var rej *rejectErr
		if !errors.As(err, &rej) {
			return nil, err
		}
		l.opts.Logger.Warn("connection refused", "err", err)
	}
}

// rejectErr marks a refused connection request; Accept goes on with the next one.
type rejectErr struct{ err error }

func (e *rejectErr) Error() string { return e.err.Error() }
func (e *rejectErr) Unwrap() error { return e.err }

func (l *Listener) accept(ctx context.Context) (*ServerConn, error) {
	cr, err := l.ln.Accept(ctx)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: accept: %w", err)
	}
	o := &l.opts
	peer, perr := PeerPrivate(cr.PrivateData())
	if perr != nil {
		o.Logger.Debug("client sent no RFC 8797 private data; using 1024-byte inline sizes", "remote", cr.RemoteAddr(), "err", perr)
	}
	perConn := o.Credits.Config().PerConn
	nrecv := perConn + o.ExtraRecvs
	ep, err := newEndpoint(l.pd, l.dev, endpointConfig{
		recvSize: o.InlineRecv, nrecv: nrecv,
		sendSize: o.InlineSend, nsend: nrecv,
		sqDepth: 4*nrecv + 64, maxSendSGE: 2,
	})
	if err != nil {
		cr.Reject(nil)
		return nil, &rejectErr{err}
	}
	ord := o.ORD
	if cr.IRD() > 0 {
		ord = min(ord, cr.IRD())
	}
	priv := ConnPrivate{SendInvOK: false, SendSize: o.InlineSend, RecvSize: o.InlineRecv}
	var pd [PrivateSize]byte
	info, err := cr.Accept(ctx, ep.qp, verbs.ConnParams{PrivateData: priv.Append(pd[:0]), IRD: max(cr.ORD(), 1), ORD: ord})
	if err != nil {
		ep.teardown()
		return nil, &rejectErr{fmt.Errorf("rpcrdma: accept from %v: %w", cr.RemoteAddr(), err)}
	}
	sc := &ServerConn{
		l: l, ep: ep, peer: peer,
		cred:       o.Credits.Open(),
		inlineSend: min(o.InlineSend, peer.RecvSize),
		ord:        max(min(info.ORD, ord), 0),
		recvq:      make(chan int, nrecv),
		closed:     make(chan struct{}),
		dones:      make(map[uint32]*doneEntry),
		remote:     Addr{info.RemoteAddr},
		ready:      make(chan *srvCall, nrecv),
		pullq:      make(chan pullJob, nrecv),
	}
	sc.reads = credits.NewWindow(max(sc.ord, 1))
	sc.reads.Update(uint32(max(sc.ord, 1)))
	sc.ctx, sc.cancel = context.WithCancel(context.Background())
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		ep.teardown()
		sc.cred.Close()
		return nil, fmt.Errorf("rpcrdma: accept: %w", oncrpc.ErrClosed)
	}
	l.conns[sc] = struct{}{}
	l.mu.Unlock()
	o.Logger.Debug("accepted", "remote", info.RemoteAddr, "inline_send", min(o.InlineSend, peer.RecvSize), "ord", sc.ord, "send_inv", peer.SendInvOK)
	ep.start(info, peer, sc.onRecv)
	return sc, nil
}

// ServerConn is one accepted RPC-over-RDMA connection: an oncrpc.ServerConn.
type ServerConn struct {
	l          *Listener
	ep         *endpoint
	peer       ConnPrivate
	cred       *credits.Conn
	inlineSend int
	ord        int // RDMA Reads in flight at most; 0: the client allows none
	remote     net.Addr

	recvq     chan int // received messages, by receive buffer index
	closed    chan struct{}
	closeOnce sync.Once

	mu          sync.Mutex
	free        []*srvCall
	dones       map[uint32]*doneEntry
	pullers     int // puller goroutines running
	idlePullers int // of which waiting for a job

	readMu sync.Mutex      // serialises ReadCall
	ready  chan *srvCall   // calls whose read chunks have been pulled
	pullq  chan pullJob    // calls whose read chunks are to be pulled
	reads  *credits.Window // one credit per RDMA Read the connection may have in flight (ORD)
	ctx    context.Context
	cancel context.CancelFunc
}

var _ oncrpc.ServerConn = (*ServerConn)(nil)

// srvCall is the transport state of one call (oncrpc.ServerCall.Cookie).
type srvCall struct {
	call     oncrpc.ServerCall
	h        Header    // the call's transport header: write list, reply chunk, read list
	asm      assembler // read chunk placement
	msgp     bool
	finished bool // finishCall ran
	recvIdx  int  // receive buffer holding the inline call, or -1
	big      *bigBuf
	// reply state
	wr    verbs.SendWR
	sge   [1]verbs.SGE
	out   Header
	regs  []*reg
	fills []chunks.WriteChunk
}

// Limits returns the connection's limits: InlineSend is the largest reply sent inline
// (the client's announced receive size, at most ServerOptions.InlineSend); InlineRecv
// the receive buffer size.
func (sc *ServerConn) Limits() Limits {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return Limits{InlineSend: sc.inlineSend, InlineRecv: sc.ep.recvSize}
}

// SetLimits changes the largest reply sent inline (e.g. after CONF_RDMA), between 1024
// and ServerOptions.InlineSend. Other fields are ignored; a zero InlineSend is no change.
func (sc *ServerConn) SetLimits(l Limits) error {
	if l.InlineSend == 0 {
		return nil
	}
	if err := checkInlineLimit("InlineSend", l.InlineSend, sc.l.opts.InlineSend); err != nil {
		return err
	}
	sc.mu.Lock()
	sc.inlineSend = l.InlineSend
	sc.mu.Unlock()
	return nil
}

// SetInlineThresholds implements confproto.Configurable: send is the largest reply sent
// inline, clamped to [1024, ServerOptions.InlineSend]; recv is ignored (the receive
// buffers posted for the connection keep their size).
func (sc *ServerConn) SetInlineThresholds(send, recv int) {
	send = clampInline(send, sc.l.opts.InlineSend)
	sc.mu.Lock()
	sc.inlineSend = send
	sc.mu.Unlock()
}

// SetMaxRDMARead implements confproto.Configurable: at most n RDMA Reads (clamped to
// [1, the connection's ORD]) are in flight at once from now on.
func (sc *ServerConn) SetMaxRDMARead(n int) {
	sc.reads.Update(uint32(max(n, 1)))
}

// RemoteAddr returns the client's address (netid "rdma").
func (sc *ServerConn) RemoteAddr() net.Addr { return sc.remote }

// Close closes the connection.
func (sc *ServerConn) Close() error {
	sc.closeOnce.Do(func() {
		close(sc.closed)
		sc.cancel()
		sc.reads.Close()
		sc.ep.teardown()
		sc.cred.Close()
		sc.mu.Lock()
		for xid, d := range sc.dones {
			delete(sc.dones, xid)
			d.release(sc)
		}
		sc.mu.Unlock()
		sc.l.mu.Lock()
		delete(sc.l.conns, sc)
		sc.l.mu.Unlock()
	})
	return nil
}

// onRecv queues a received message for ReadCall (poller goroutine).
func (sc *ServerConn) onRecv(idx, n int, wc *verbs.Completion) {
	if wc.Status != verbs.StatusSuccess {
		return
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(false, sc.ep.recvBuf(idx)[:n])
	}
	sc.ep.recvSGE[idx].Length = n // remember the length until ReadCall takes it
	sc.recvq <- idx
}

// repost returns receive buffer idx to the receive queue.
func (sc *ServerConn) repost(idx int) {
	sc.ep.recvSGE[idx].Length = sc.ep.recvSize
	if err := sc.ep.postRecv(idx); err != nil {
		sc.ep.close()
	}
}

// ReadCall waits for the next call. Transport messages that are not calls (RDMA_DONE,
// RDMA_ERROR) and calls with bad headers (answered with RDMA_ERROR here) are handled
// without returning. The connection stays up after header errors.
func (sc *ServerConn) ReadCall(ctx context.Context) (*oncrpc.ServerCall, error) {
	sc.readMu.Lock()
	defer sc.readMu.Unlock()
	for {
		var idx int
		select {
		case c := <-sc.ready:
			return &c.call, nil
		case idx = <-sc.recvq:
		default:
			select {
			case c := <-sc.ready:
				return &c.call, nil
			case idx = <-sc.recvq:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-sc.closed:
				return nil, fmt.Errorf("rpcrdma: read call: %w", oncrpc.ErrClosed)
			case <-sc.ep.stopped:
				return nil, fmt.Errorf("rpcrdma: read call: %w", sc.ep.err())
			}
		}
		call, err := sc.receive(ctx, idx)
		if err != nil {
			sc.Close()
			return nil, err
		}
		if call != nil {
			return &call.call, nil
		}
	}
}

// pull RDMA-Reads a call's chunks (in its own goroutine, so that other calls on the
// connection are not held up) and queues the call for ReadCall. A failure ends the
// connection, as in Linux svcrdma.
func (sc *ServerConn) pull(c *srvCall, body []byte, total int) {
	if err := c.asm.run(sc.ctx, sc.ep, c.big.mr, body, sc.ord, sc.reads); err != nil {
		sc.l.opts.Logger.Debug("read chunks failed; closing", "remote", sc.remote, "xid", c.h.XID, "err", err)
		sc.cred.Done()
		sc.putCall(c)
		sc.Close()
		return
	}
	// The inline part has been copied: the receive buffer can go back now.
	sc.repost(c.recvIdx)
	c.recvIdx = -1
	c.call.Msg = oncrpc.Message{Inline: c.big.mr.Buf()[:total]}
	sc.ready <- c
}

// getCall returns an idle srvCall.
func (sc *ServerConn) getCall() *srvCall {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if n := len(sc.free); n > 0 {
		c := sc.free[n-1]
		sc.free = sc.free[:n-1]
		c.finished = false
		return c
	}
	c := &srvCall{recvIdx: -1}
	c.call.Cookie = c
	return c
}

func (sc *ServerConn) putCall(c *srvCall) {
	sc.releaseBuffers(c)
	c.call.Msg = oncrpc.Message{}
	sc.mu.Lock()
	sc.free = append(sc.free, c)
	sc.mu.Unlock()
}

// receive processes one received message. It returns the call to hand up, nil when the
// message was consumed here, or an error that ends the connection.
func (sc *ServerConn) receive(ctx context.Context, idx int) (*srvCall, error) {
	n := sc.ep.recvSGE[idx].Length
	buf := sc.ep.recvBuf(idx)[:n]
	c := sc.getCall()
	c.recvIdx = idx
	h := &c.h
	hl, err := h.Decode(buf)
	if err != nil {
		var ve *VersionError
		var ce *ChunkError
		switch {
		case errors.As(err, &ve):
			sc.sendError(ctx, ErrCodeVers, ve.XID)
		case errors.As(err, &ce) && ce.HaveXID:
			sc.sendError(ctx, ErrCodeChunk, ce.XID)
		}
		sc.l.opts.Logger.Debug("bad transport header", "remote", sc.remote, "err", err)
		sc.putCall(c)
		return nil, nil
	}
	switch h.Proc {
	case ProcDone:
		sc.done(h.XID)
		sc.putCall(c)
		return nil, nil
	case ProcError:
		sc.putCall(c)
		return nil, nil
	}
	c.msgp = h.Proc == ProcMsgP
	body, grouped, cerr := checkCall(h, buf[hl:], hl, sc.l.opts.MSGP, c.asm.grouped[:0])
	if grouped != nil {
		c.asm.grouped = grouped
	}
	if cerr != nil {
		sc.l.opts.Logger.Debug("bad call", "remote", sc.remote, "xid", h.XID, "err", cerr)
		sc.sendError(ctx, ErrCodeChunk, h.XID)
		sc.putCall(c)
		return nil, nil
	}

	switch sc.cred.Arrive(h.Credits) {
	case credits.Overrun:
		sc.l.opts.Logger.Debug("credit overrun", "remote", sc.remote, "xid", h.XID)
		sc.sendError(ctx, ErrCodeChunk, h.XID)
		sc.putCall(c)
		return nil, nil
	case credits.Disconnect:
		sc.putCall(c)
		return nil, fmt.Errorf("rpcrdma: %v: %w", sc.remote, credits.ErrOverrun)
	}

	if len(grouped) == 0 {
		c.call.Msg = oncrpc.Message{Inline: body}
		return c, nil
	}

	if sc.ord == 0 {
		// The client offered no inbound RDMA Read (IRD 0, e.g. MPA revision 1): its
		// chunks cannot be pulled. (Linux svcrdma refuses such connections outright.)
		sc.l.opts.Logger.Debug("read chunks on a connection without RDMA Read", "remote", sc.remote, "xid", h.XID)
		sc.cred.Done()
		sc.sendError(ctx, ErrCodeChunk, h.XID)
		sc.putCall(c)
		return nil, nil
	}

	// Pull the read chunks straight into their place in a registered buffer.
	var pzrc []chunks.Segment
	rcs := grouped
	if grouped[0].Position == 0 {
		pzrc, rcs = grouped[0].Segments, grouped[1:]
		body = nil
	}
	total, err := c.asm.planAssembly(len(body), pzrc, rcs, sc.l.opts.MaxCall)
	if err != nil {
		sc.l.opts.Logger.Debug("read chunks do not fit", "remote", sc.remote, "xid", h.XID, "err", err)
		sc.cred.Done()
		sc.sendError(ctx, ErrCodeChunk, h.XID)
		sc.putCall(c)
		return nil, nil
	}
	big, err := sc.l.bufs.get(total, verbs.AccessLocalWrite)
	if err != nil {
		sc.cred.Done()
		sc.putCall(c)
		return nil, err
	}
	c.big = big
	sc.startPull(pullJob{c: c, body: body, total: total})
	return nil, nil
}

// pullJob is a call whose read chunks are to be pulled.
type pullJob struct {
	c     *srvCall
	body  []byte
	total int
}

// maxPullers bounds the goroutines pulling read chunks for one connection.
const maxPullers = 4

// startPull hands a job to an idle puller, starting one if all are busy and fewer than
// maxPullers run; otherwise the job waits in the queue.
func (sc *ServerConn) startPull(j pullJob) {
	select {
	case sc.pullq <- j:
	default:
		// Queue full cannot happen (it holds every receive); fall through safely.
		go sc.pull(j.c, j.body, j.total)
		return
	}
	sc.mu.Lock()
	start := sc.pullers < maxPullers && sc.idlePullers == 0
	if start {
		sc.pullers++
	}
	sc.mu.Unlock()
	if start {
		go sc.puller()
	}
}

// puller pulls queued jobs until the connection closes.
func (sc *ServerConn) puller() {
	for {
		sc.mu.Lock()
		sc.idlePullers++
		sc.mu.Unlock()
		var j pullJob
		select {
		case j = <-sc.pullq:
		case <-sc.closed:
			return
		}
		sc.mu.Lock()
		sc.idlePullers--
		sc.mu.Unlock()
		sc.pull(j.c, j.body, j.total)
	}
}

// checkCall checks what the header decoder cannot for a call (h.Proc RDMA_MSG,
// RDMA_NOMSG or RDMA_MSGP; body follows the hl-byte header): RDMA_MSGP only when
// allowed, and its padding within the message; the read list grouped into read chunks
// (into rcs) in position order without overlap; an RDMA_NOMSG call carrying its message
// in a position-zero read chunk. It returns the inline body (padding removed) and the
// read chunks. Any error is answered with ERR_CHUNK.
func checkCall(h *Header, body []byte, hl int, allowMSGP bool, rcs []chunks.ReadChunk) ([]byte, []chunks.ReadChunk, error) {
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
	case ProcMsgP:
		if !allowMSGP {
			return nil, nil, errors.New("RDMA_MSGP not accepted")
		}
		pad := msgpPad(hl, h.Align)
		if pad > len(body) {
			return nil, nil, errors.New("RDMA_MSGP padding beyond the message")
		}
		body = body[pad:]
	default:
		return nil, nil, fmt.Errorf("%v is not a call", h.Proc)
	}
	grouped, err := chunks.Group(rcs, h.ReadList)
	if err != nil {
		return nil, grouped, err
	}
	if h.Proc == ProcNoMsg && (len(grouped) == 0 || grouped[0].Position != 0) {
		return nil, grouped, errors.New("RDMA_NOMSG call without a position-zero read chunk")
	}
	return body, grouped, nil
}

// sendError answers xid with RDMA_ERROR (plain Send, never remote invalidation).
func (sc *ServerConn) sendError(ctx context.Context, code ErrCode, xid uint32) {
	idx, buf, err := sc.ep.getSendBuf(ctx)
	if err != nil {
		return
	}
	var b []byte
	if code == ErrCodeVers {
		b = AppendErrVers(buf[:0], xid, Version1, sc.cred.Grant())
	} else {
		b = AppendErrChunk(buf[:0], xid, Version1, sc.cred.Grant())
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	sc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil)
}

// errReplyTooLarge is returned by WriteReply when the reply fits neither inline nor the
// client's reply chunk; the client is sent ERR_CHUNK (RFC 8166 §4.5.3).
var errReplyTooLarge = errors.New("rpcrdma: reply too large for what the client offered")

// WriteReply sends reply for call: payloads into the client's write chunks (the i-th
// payload into the i-th write chunk) by RDMA Write, the rest inline or, when too long,
// through the reply chunk (RDMA_NOMSG), or as read chunks when ReplyReadChunks allows.
// A reply that fits nothing the client offered is answered with ERR_CHUNK and
// WriteReply returns an error. It returns when the transport no longer refers to reply.
func (sc *ServerConn) WriteReply(call *oncrpc.ServerCall, reply *oncrpc.Message) error {
	c, ok := call.Cookie.(*srvCall)
	if !ok || c == nil {
		return errors.New("rpcrdma: WriteReply: call does not come from this transport")
	}
	defer sc.putCall(c)
	if reply == nil {
		sc.finishCall(c)
		return nil
	}
	select {
	case <-sc.closed:
		sc.finishCall(c)
		return fmt.Errorf("rpcrdma: write reply: %w", oncrpc.ErrClosed)
	default:
	}
	err := sc.writeReply(c, reply)
	sc.finishCall(c)
	for i, g := range c.regs {
		sc.l.regs.release(g)
		c.regs[i] = nil
	}
	c.regs = c.regs[:0]
	if errors.Is(err, errReplyTooLarge) {
		sc.sendError(context.Background(), ErrCodeChunk, c.h.XID)
	}
	return err
}

// finishCall releases what the call holds on the connection (its receive buffer or
// reassembly buffer, and its credit) once nothing refers to the call's memory any more.
// It runs before the reply's Send is posted: the client may send its next call as soon
// as the reply arrives, and that call must find a posted receive and a free credit.
func (sc *ServerConn) finishCall(c *srvCall) {
	if c.finished {
		return
	}
	c.finished = true
	sc.releaseBuffers(c)
	sc.cred.Done()
}

// releaseBuffers gives back the call's receive buffer (reposted) and its reassembly
// buffer, if it still holds them.
func (sc *ServerConn) releaseBuffers(c *srvCall) {
	if c.recvIdx >= 0 {
		sc.repost(c.recvIdx)
		c.recvIdx = -1
	}
	if c.big != nil {
		sc.l.bufs.put(c.big)
		c.big = nil
	}
}

func (sc *ServerConn) writeReply(c *srvCall, reply *oncrpc.Message) error {
	ctx := context.Background()
	in := &c.h
	out := &c.out
	out.Reset()
	out.XID, out.Vers, out.Credits, out.Proc = in.XID, Version1, sc.cred.Grant(), ProcMsg
	w := sc.ep.newWaiter()

	// Payloads into write chunks.
	placed := uint64(0) // bitmap of payloads placed (first 64)
	c.fills = c.fills[:0]
	for i := range in.WriteList {
		n := len(c.fills)
		if n < cap(c.fills) {
			c.fills = c.fills[:n+1]
		} else {
			c.fills = append(c.fills, nil)
		}
		var data []byte
		if i < len(reply.Payloads) && i < 64 {
			data = reply.Payloads[i].Data
		}
		if data == nil || uint64(len(data)) > in.WriteList[i].Length() {
			if data != nil {
				sc.l.opts.Logger.Debug("payload larger than its write chunk; sending it inline", "xid", in.XID, "chunk", i, "len", len(data))
			}
			c.fills[n], _ = chunks.Fill(c.fills[n][:0], in.WriteList[i], 0)
			continue
		}
		if len(data) > 0 {
			g, err := sc.l.regs.register(data, 0)
			if err != nil {
				sc.ep.wait(ctx, w)
				return fmt.Errorf("rpcrdma: xid %#08x: register payload: %w", in.XID, err)
			}
			c.regs = append(c.regs, g)
			mr := g.mr
			if err := sc.ep.writeChunk(ctx, w, &c.wr, &c.sge, mr, 0, len(data), in.WriteList[i]); err != nil {
				sc.ep.wait(ctx, w)
				return fmt.Errorf("rpcrdma: xid %#08x: write chunk %d: %w", in.XID, i, err)
			}
		}
		c.fills[n], _ = chunks.Fill(c.fills[n][:0], in.WriteList[i], uint64(len(data)))
		placed |= 1 << i
	}
	out.WriteList = append(out.WriteList[:0], c.fills...)

	// The rest of the reply stream: inline with unplaced payloads put back.
	streamLen := len(reply.Inline)
	for i, p := range reply.Payloads {
		if i >= 64 || placed&(1<<i) == 0 {
			streamLen += xdr.RoundUp(len(p.Data))
		}
	}
	idx, buf, err := sc.ep.getSendBuf(ctx)
	if err != nil {
		sc.ep.wait(ctx, w)
		return err
	}
	sc.mu.Lock()
	limit := min(sc.inlineSend, len(buf))
	sc.mu.Unlock()
	// RDMA_MSGP only for a client that sent RDMA_MSGP, for replies of at least its
	// rdma_thresh, and only when the padded reply still fits inline.
	msgp, pad := c.msgp && streamLen >= int(in.Thresh), 0
	if msgp {
		pad = msgpPad(out.Size()+8, in.Align)
		if out.Size()+8+pad+streamLen > limit {
			msgp, pad = false, 0
		}
	}
	hdrSize := out.Size()
	if msgp {
		hdrSize += 8
	}
	op, inv := sc.invalidate(c)
	var b []byte
	switch {
	case hdrSize+pad+streamLen <= limit:
		if msgp {
			out.Proc, out.Align, out.Thresh = ProcMsgP, in.Align, in.Thresh
		}
		b, err = out.Append(buf[:0])
		if err == nil {
			b = append(b, zeroPad[:pad]...)
			b = appendStream(b, reply, placed)
		}
	case len(in.ReplyChunk) > 0 && uint64(streamLen) <= in.ReplyChunk.Length():
		big, gerr := sc.l.bufs.get(streamLen, 0)
		if gerr != nil {
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return gerr
		}
		defer sc.l.bufs.put(big)
		appendStream(big.mr.Buf()[:0], reply, placed)
		if err := sc.ep.writeChunk(ctx, w, &c.wr, &c.sge, big.mr, 0, streamLen, in.ReplyChunk); err != nil {
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return fmt.Errorf("rpcrdma: xid %#08x: reply chunk: %w", in.XID, err)
		}
		out.Proc = ProcNoMsg
		out.ReplyChunk, _ = chunks.Fill(out.ReplyChunk[:0], in.ReplyChunk, uint64(streamLen))
		b, err = out.Append(buf[:0])
	case sc.l.opts.ReplyReadChunks:
		big, gerr := sc.l.bufs.get(streamLen, 0)
		if gerr != nil {
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return gerr
		}
		appendStream(big.mr.Buf()[:0], reply, placed)
		if rerr := big.mr.Reregister(verbs.AccessRemoteRead); rerr != nil {
			sc.l.bufs.put(big)
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return fmt.Errorf("rpcrdma: xid %#08x: register reply read chunk: %w", in.XID, rerr)
		}
		out.Proc = ProcNoMsg
		out.ReadList = append(out.ReadList[:0], chunks.ReadSegment{Position: 0, Segment: segmentOf(big.mr, streamLen)})
		sc.keepUntilDone(in.XID, big)
		b, err = out.Append(buf[:0])
		op = verbs.OpSend // the client must keep its own STags for nothing; no invalidation ambiguity
		inv = 0
	default:
		sc.ep.putSendBuf(idx)
		sc.ep.wait(ctx, w)
		return fmt.Errorf("rpcrdma: xid %#08x: %d-byte reply, inline limit %d, reply chunk %d: %w",
			in.XID, streamLen, limit, in.ReplyChunk.Length(), errReplyTooLarge)
	}
	if err != nil {
		sc.ep.putSendBuf(idx)
		sc.ep.wait(ctx, w)
		return fmt.Errorf("rpcrdma: xid %#08x: encode reply header: %w", in.XID, err)
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	// The reply no longer needs the call's memory once its RDMA Writes have been
	// transmitted (the header and inline part are in the send buffer already).
	if err := sc.ep.wait(ctx, w); err != nil {
		sc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: xid %#08x: write chunks: %w", in.XID, err)
	}
	w = sc.ep.newWaiter()
	sc.finishCall(c)
	w.add(1)
	if err := sc.ep.postSendBuf(ctx, idx, len(b), op, inv, w); err != nil {
		w.complete(nil)
		sc.ep.wait(ctx, w)
		return err
	}
	if err := sc.ep.wait(ctx, w); err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: send reply: %w", in.XID, err)
	}
	return nil
}

// appendStream appends the reply stream with the payloads not in placed put back in
// their places (data and XDR pad).
func appendStream(b []byte, m *oncrpc.Message, placed uint64) []byte {
	off := 0 // offset in m.Inline
	pos := 0 // logical position
	for i, p := range m.Payloads {
		// Inline bytes up to this payload's data.
		n := p.Pos - pos
		b = append(b, m.Inline[off:off+n]...)
		off += n
		pos = p.Pos + xdr.RoundUp(len(p.Data))
		if i < 64 && placed&(1<<i) != 0 {
			continue
		}
		b = append(b, p.Data...)
		b = append(b, make([]byte, xdr.PadLen(len(p.Data)))...)
	}
	return append(b, m.Inline[off:]...)
}

// invalidate chooses Send With Invalidate: when the client allows it and the call's
// chunks name exactly one distinct STag (Linux svc_rdma_get_inv_rkey).
func (sc *ServerConn) invalidate(c *srvCall) (verbs.SendOp, uint32) {
	if !sc.peer.SendInvOK || sc.l.opts.NoSendInvalidate {
		return verbs.OpSend, 0
	}
	var stag uint32
	n := 0
	see := func(s uint32) {
		if n == 0 || s != stag {
			stag = s
			n++
		}
	}
	for _, rs := range c.h.ReadList {
		see(rs.Handle)
	}
	for _, wc := range c.h.WriteList {
		for _, s := range wc {
			see(s.Handle)
		}
	}
	for _, s := range c.h.ReplyChunk {
		see(s.Handle)
	}
	if n != 1 {
		return verbs.OpSend, 0
	}
	return verbs.OpSendInv, stag
}

// doneEntry is a reply kept registered as read chunks until RDMA_DONE or a timeout.
type doneEntry struct {
	big   *bigBuf
	timer *time.Timer
}

func (d *doneEntry) release(sc *ServerConn) {
	d.timer.Stop()
	d.big.mr.Invalidate()
	sc.l.bufs.put(d.big)
}

func (sc *ServerConn) keepUntilDone(xid uint32, big *bigBuf) {
	d := &doneEntry{big: big}
	sc.mu.Lock()
	if old, ok := sc.dones[xid]; ok {
		delete(sc.dones, xid)
		old.release(sc)
	}
	sc.dones[xid] = d
	d.timer = time.AfterFunc(sc.l.opts.DoneTimeout, func() {
		sc.mu.Lock()
		if sc.dones[xid] == d {
			delete(sc.dones, xid)
			sc.mu.Unlock()
			sc.l.opts.Logger.Debug("RDMA_DONE timeout; reply read chunks reclaimed", "xid", xid)
			d.release(sc)
			return
		}
		sc.mu.Unlock()
	})
	sc.mu.Unlock()
}

// done handles RDMA_DONE: the client has pulled the reply's read chunks.
func (sc *ServerConn) done(xid uint32) {
	sc.mu.Lock()
	d, ok := sc.dones[xid]
	if ok {
		delete(sc.dones, xid)
	}
	sc.mu.Unlock()
	if ok {
		d.release(sc)
	}
}

// bigBuf is a registered buffer for reassembled calls and long replies.
type bigBuf struct {
	mr verbs.MR
}

// bufPool keeps registered buffers (registered once, re-keyed per use) in power-of-two
// sizes from 64 KiB.
type bufPool struct {
	pd        verbs.PD
	mu        sync.Mutex
	free      []*bigBuf
	freeBytes int
	all       []*bigBuf
}

// Bounds on the idle buffers a pool keeps.
const (
	maxPooled      = 64
	maxPooledBytes = 64 << 20
)

// get returns a registered buffer of at least n bytes with the given access, reusing an
// idle one (re-registered, so its STag is new) when it can. A pooled buffer whose
// re-registration fails is deregistered and dropped, never handed out with stale rights,
// and a fresh buffer is registered instead.
func (p *bufPool) get(n int, access verbs.Access) (*bigBuf, error) {
	if b := p.takeFree(n); b != nil {
		if err := b.mr.Reregister(access | verbs.AccessLocalWrite); err == nil {
			return b, nil
		}
		p.drop(b)
	}
	size := 64 << 10
	for size < n {
		size <<= 1
	}
	mr, err := p.pd.RegMR(make([]byte, size), access|verbs.AccessLocalWrite)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: register %d-byte buffer: %w", size, err)
	}
	b := &bigBuf{mr: mr}
	p.mu.Lock()
	p.all = append(p.all, b)
	p.mu.Unlock()
	return b, nil
}

func (p *bufPool) put(b *bigBuf) {
	b.mr.Invalidate()
	p.mu.Lock()
	if len(p.free) >= maxPooled || p.freeBytes+len(b.mr.Buf()) > maxPooledBytes {
		p.mu.Unlock()
		p.drop(b)
		return
	}
	p.free = append(p.free, b)
	p.freeBytes += len(b.mr.Buf())
	p.mu.Unlock()
}

// takeFree removes and returns an idle buffer of at least n bytes, or nil.
func (p *bufPool) takeFree(n int) *bigBuf {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.free {
		if len(b.mr.Buf()) >= n {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.freeBytes -= len(b.mr.Buf())
			return b
		}
	}
	return nil
}

// drop forgets b, which is not on the free list, and deregisters it.
func (p *bufPool) drop(b *bigBuf) {
	p.mu.Lock()
	for i, x := range p.all {
		if x == b {
			p.all = append(p.all[:i], p.all[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	b.mr.Close()
}

func (p *bufPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.all {
		b.mr.Close()
	}
	p.all, p.free, p.freeBytes = nil, nil, 0
}
