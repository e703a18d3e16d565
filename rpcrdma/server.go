// Server transport: options, the Listener (listen, accept, connection setup with RFC
// 8797 private data) and ServerConn's state and lifecycle (Linux svc_rdma_transport.c).

package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/internal/connguard"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
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
	// DefaultExtraRecvs is how many receives a connection keeps posted beyond its
	// grant, for RDMA_DONE and a client's first calls beyond its grant (answered with
	// ERR_CHUNK rather than lost).
	DefaultExtraRecvs = 2
	// DefaultSendTimeout is the default ServerOptions.SendTimeout: 60 s, the Linux
	// NFS client's default major timeout (timeo=600), after which a well-behaved
	// client gives up on the connection and retransmits on a new one anyway.
	DefaultSendTimeout = 60 * time.Second
	// DefaultReadTimeout is the default ServerOptions.ReadTimeout: 30 s, as
	// DefaultDoneTimeout. A live peer answers an RDMA Read in microseconds to
	// milliseconds (its adapter does, without its CPU); 30 s is far beyond any
	// scheduling or congestion delay.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout is how long a connection may go without a call before the
	// server closes it (ServerOptions.IdleTimeout), as for TCP.
	DefaultIdleTimeout = oncrpc.DefaultIdleTimeout
	// DefaultMaxConns is the default ServerOptions.MaxConns, as for TCP.
	DefaultMaxConns = oncrpc.DefaultMaxConns
	// initialCallRecvs is how many receives for calls a connection posts at first (at
	// most the policy's PerConn); more are registered as the client uses its credits.
	initialCallRecvs = 2
)

// ServerOptions configure a Listener. The zero value selects the defaults.
type ServerOptions struct {
	// InlineSend and InlineRecv are this side's inline thresholds: the largest message
	// it sends and the size of its receive buffers (announced in the RFC 8797 private
	// data). Default DefaultReplyInline (8192) and DefaultInline (5120; Linux svcrdma
	// receives 4096). Replies sent inline are further limited by the client's announced
	// receive size (1024 when it announced none; Linux clients announce 4096).
	InlineSend, InlineRecv int
	// Credits shares credits between connections. Default: credits.NewServer with
	// credits.Config{} (FairShare of 256 among the connections that are calling, at
	// most 64 per connection; idle connections do not dilute it). Each connection
	// starts with min(2, Credits.Config().PerConn) + ExtraRecvs receives posted and
	// registers more, up to PerConn + ExtraRecvs, when its client's calls use most of
	// the credits it was granted (credits.Conn.Grow); grants never exceed the posted
	// receives.
	Credits *credits.Server
	// ExtraRecvs is the number of receives posted beyond the grant. Default 2.
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
	// Budget bounds the bytes that calls in progress hold across the listener's
	// connections: reassembly buffers for calls with read chunks (reserved before
	// they are registered) and reply-chunk buffers. Default: a Budget of
	// oncrpc.DefaultBudget for this listener; share one with
	// oncrpc.ServerOptions.Budget to bound both layers together. A call whose buffer
	// the budget does not allow waits, holding only its receive buffer, which is not
	// reposted meanwhile: the peer runs out of credits instead of the server out of
	// memory.
	Budget *oncrpc.Budget
	// ConnBudget bounds the same bytes per connection. Default
	// oncrpc.DefaultConnBudget; negative: only Budget applies.
	ConnBudget int64
	// SendTimeout closes a connection whose peer takes no data for this long: Sends
	// and RDMA Writes posted and none completing (the peer stopped reading its
	// socket, or its adapter stopped acknowledging). Closing flushes them, which ends
	// the calls waiting for them and frees their buffers and registrations. Default
	// DefaultSendTimeout; negative: none.
	SendTimeout time.Duration
	// ReadTimeout closes a connection whose RDMA Reads (pulling a call's read chunks)
	// do not complete for this long: a peer that never answers them would otherwise
	// hold the call, its credit and its reassembly buffer forever. Default
	// DefaultReadTimeout; negative: none.
	ReadTimeout time.Duration
	// Logger receives control-path events. Default: none.
	Logger hclog.Logger
	// Trace, when set, is called with every transport message the server sends and
	// receives. It must not retain msg.
	Trace func(sent bool, msg []byte)
	// IdleTimeout closes a connection that has had no call for that long and has none
	// in progress (a call being received, pulled, served or answered). One sweeper per
	// Listener checks every IdleTimeout/4, so a connection goes after between
	// IdleTimeout and 1.25 IdleTimeout of silence. Default DefaultIdleTimeout (6
	// minutes, as knfsd); negative: never.
	IdleTimeout time.Duration
	// MaxConns is the most connections open at once: past it connection requests are
	// refused (an MPA Reject), counted (Stats().Conns.Refused) and logged at Warn at most
	// every 10 seconds. Default DefaultMaxConns (1024); negative: no limit.
	MaxConns int
	// BackchannelCredits is the most reverse-direction calls a connection has in
	// flight (ServerConn.Backchannel; RFC 8167), the reverse credits it requests, and
	// the receives it posts for their replies once its back channel is first used.
	// Default DefaultBackchannelCredits.
	BackchannelCredits int
}

func (o *ServerOptions) fill() {
	o.InlineSend, o.InlineRecv = inlineOption(o.InlineSend, DefaultReplyInline), inlineOption(o.InlineRecv, DefaultInline)
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
	if o.Budget == nil {
		o.Budget = oncrpc.NewBudget(oncrpc.DefaultBudget)
	}
	if o.ConnBudget == 0 {
		o.ConnBudget = oncrpc.DefaultConnBudget
	}
	if o.SendTimeout == 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.BackchannelCredits <= 0 {
		o.BackchannelCredits = DefaultBackchannelCredits
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

// AddrPort returns the IP address and port of a TCP-style address (the zero AddrPort
// otherwise), so that servers can match callers' addresses without formatting them.
func (a Addr) AddrPort() netip.AddrPort {
	if t, ok := a.Addr.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}

// Listener is the RPC-over-RDMA server transport's listener: an oncrpc.Listener.
type Listener struct {
	dev     verbs.Device
	ln      verbs.Listener
	pd      verbs.PD
	opts    ServerOptions
	bufs    bufPool
	guard   *connguard.Set // connection limit and idle sweeper
	stats   serverCounters // the counters of closed connections (Close adds them); see Stats
	mu      sync.Mutex
	conns   map[*ServerConn]struct{}
	pending int  // connections being set up (Listener.setup), not yet in conns
	done    bool // Close has run: no more connections are accepted

	release sync.Once     // frees bufs and pd, once closed with no connection left
	stalled atomic.Uint64 // connections closed by the stall watch
}

// Stalled returns the number of connections closed because their peer took no data
// within ServerOptions.SendTimeout or left RDMA Reads unanswered for ReadTimeout.
func (l *Listener) Stalled() uint64 { return l.stalled.Load() }

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
	l.guard = connguard.New(connguard.Config{Max: o.MaxConns, IdleTimeout: o.IdleTimeout, Logger: o.Logger})
	return l, nil
}

// Addr returns the listening address (netid "rdma").
func (l *Listener) Addr() net.Addr { return Addr{l.ln.Addr()} }

// Close stops accepting: Accept then returns an error wrapping oncrpc.ErrClosed. As
// with a net.Listener, the connections already accepted stay open until they are
// closed themselves, so that a graceful oncrpc.Server.Shutdown, which closes its
// listeners first, can still answer the calls it is executing and close each
// connection after. The protection domain and the receive buffer pool the connections
// share are freed when the last of them closes.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return nil
	}
	l.done = true
	l.mu.Unlock()
	err := l.ln.Close()
	l.guard.Close()
	l.freeIfDone()
	return err
}

// freeIfDone frees what the connections share (the buffer pool, the protection
// domain) once l is closed and no connection uses it or is being set up with it.
func (l *Listener) freeIfDone() {
	l.mu.Lock()
	unused := l.done && len(l.conns) == 0 && l.pending == 0
	l.mu.Unlock()
	if unused {
		l.release.Do(func() {
			l.bufs.close()
			l.pd.Close()
		})
	}
}

// Accept waits for a connection request, accepts it with this server's RFC 8797 private
// data and returns the connection. A request it cannot serve (past
// ServerOptions.MaxConns, truncated RFC 8797 private data, or no resources for the
// endpoint) is rejected, logged, and Accept waits for the next one.
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
		if errors.Is(err, errTooManyConns) {
			continue // counted and logged by the guard
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

// errTooManyConns marks a connection request refused for ServerOptions.MaxConns.
var errTooManyConns = errors.New("rpcrdma: connection limit reached")

func (l *Listener) accept(ctx context.Context) (*ServerConn, error) {
	cr, err := l.ln.Accept(ctx)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: accept: %w", err)
	}
	o := &l.opts
	if !l.guard.Admit(cr.RemoteAddr()) {
		cr.Reject(nil)
		return nil, errTooManyConns
	}
	sc, info, err := l.setup(ctx, cr)
	if err != nil {
		l.guard.Release()
		return nil, err
	}
	l.guard.Track((*idleView)(sc))
	sc.mu.Lock() // the conn is listed: CONF_RDMA (SetInlineThresholds) may already change it
	inlineSend := sc.inlineSend
	sc.mu.Unlock()
	o.Logger.Debug("accepted", "remote", sc.remote, "inline_send", inlineSend, "ord", sc.ord, "send_inv", sc.peer.SendInvOK)
	sc.ep.start(info, sc.peer, sc.onRecv)
	sc.startStallWatch(o.SendTimeout, o.ReadTimeout)
	return sc, nil
}

// setup accepts the connection request cr and builds its ServerConn; the caller starts
// its endpoint with info.
func (l *Listener) setup(ctx context.Context, cr verbs.ConnRequest) (*ServerConn, *verbs.ConnInfo, error) {
	o := &l.opts
	priv := ConnPrivate{SendInvOK: false, SendSize: o.InlineSend, RecvSize: o.InlineRecv}
	var pd [PrivateSize]byte
	peer, perr := PeerPrivate(cr.PrivateData())
	if errors.Is(perr, ErrPrivateTruncated) {
		// RFC 8797 data that is malformed, rather than absent or of another
		// format: refuse, telling the client our sizes.
		rerr := cr.Reject(priv.Append(pd[:0]))
		return nil, nil, &rejectErr{errors.Join(fmt.Errorf("rpcrdma: connection request from %v refused: %w", cr.RemoteAddr(), perr), rerr)}
	}
	if perr != nil {
		o.Logger.Debug("client sent no RFC 8797 private data; using 1024-byte inline sizes", "remote", cr.RemoteAddr(), "err", perr)
	}
	if !l.beginSetup() {
		cr.Reject(nil)
		return nil, nil, fmt.Errorf("rpcrdma: accept: %w", oncrpc.ErrClosed)
	}
	defer l.endSetup()
	perConn := o.Credits.Config().PerConn
	nrecv := perConn + o.ExtraRecvs + o.BackchannelCredits // the last only once a back channel is used
	callRecvs := min(initialCallRecvs, perConn)
	ep, err := newEndpoint(l.pd, l.dev, endpointConfig{
		recvSize: o.InlineRecv, nrecv: nrecv, initRecv: callRecvs + o.ExtraRecvs,
		sendSize: o.InlineSend, nsend: nrecv,
		// A reply takes a Send and usually one RDMA Write; the RDMA Reads of calls
		// being pulled are bounded by ORD. More work requests wait for a slot.
		sqDepth: 2*nrecv + o.ORD, maxSendSGE: 2,
	})
	if err != nil {
		cr.Reject(nil)
		return nil, nil, &rejectErr{err}
	}
	ord := o.ORD
	if cr.IRD() > 0 {
		ord = min(ord, cr.IRD())
	}
	info, err := cr.Accept(ctx, ep.qp, verbs.ConnParams{PrivateData: priv.Append(pd[:0]), IRD: max(cr.ORD(), 1), ORD: ord})
	if err != nil {
		ep.teardown()
		return nil, nil, &rejectErr{fmt.Errorf("rpcrdma: accept from %v: %w", cr.RemoteAddr(), err)}
	}
	sc := &ServerConn{
		l: l, ep: ep, peer: peer,
		cred:       o.Credits.OpenWithReceives(callRecvs),
		callRecvs:  callRecvs,
		inlineSend: min(o.InlineSend, peer.RecvSize),
		peerRecv:   peerRecv(peer, perr),
		ord:        max(min(info.ORD, ord), 0),
		recvq:      make(chan int, nrecv),
		closed:     make(chan struct{}),
		dones:      make(map[uint32]*doneEntry),
		remote:     Addr{info.RemoteAddr},
		ready:      make(chan *srvCall, nrecv),
		pullq:      make(chan pullJob, nrecv),
		acct:       o.Budget.Account(o.ConnBudget),
	}
	ep.grants = sc.cred
	sc.regs.pd = l.pd
	if o.ConnBudget > 0 {
		sc.regs.maxBytes = int(min(o.ConnBudget, maxCachedBytes))
	}
	sc.reads = credits.NewWindow(max(sc.ord, 1))
	sc.reads.Update(uint32(max(sc.ord, 1)))
	sc.ctx, sc.cancel = context.WithCancel(context.Background())
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		ep.teardown()
		sc.cred.Close()
		return nil, nil, fmt.Errorf("rpcrdma: accept: %w", oncrpc.ErrClosed)
	}
	l.conns[sc] = struct{}{}
	l.mu.Unlock()
	return sc, info, nil
}

// beginSetup counts a connection being set up, so that Close leaves the shared
// resources to the setup, and reports false once l is closed.
func (l *Listener) beginSetup() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return false
	}
	l.pending++
	return true
}

// endSetup ends what beginSetup began; the connection, if set up, is in l.conns by now.
func (l *Listener) endSetup() {
	l.mu.Lock()
	l.pending--
	l.mu.Unlock()
	l.freeIfDone()
}

// ServerConn is one accepted RPC-over-RDMA connection: an oncrpc.ServerConn.
type ServerConn struct {
	l          *Listener
	ep         *endpoint
	peer       ConnPrivate
	cred       *credits.Conn
	regs       regCache        // reply payloads registered for RDMA Write (its own, so connections never wait for each other)
	stats      serverCounters  // its counters, summed by Listener.Stats (its own, so connections share no cache line per call)
	acct       *oncrpc.Account // the connection's share of ServerOptions.Budget
	inlineSend int
	peerRecv   int // the client's receive buffers, as its RFC 8797 private data announced (0: none)
	ord        int // RDMA Reads in flight at most; 0: the client allows none
	remote     net.Addr
	// CONF_RDMA maxrdmaread 0 (seed §6.2; see maxrdmaread.go): noPull, the client
	// announced it (no RDMA Reads from the client); noReadTarget, we did.
	noPull, noReadTarget atomic.Bool

	callRecvs int      // receives posted for calls (beyond ExtraRecvs); guarded by mu
	recvq     chan int // received messages, by receive buffer index
	closed    chan struct{}
	isClosed  atomic.Bool // set just before closed is closed: a check without a channel operation
	closeOnce sync.Once

	mu          sync.Mutex
	stall       *stallWatch // nil: not watched
	free        []*srvCall
	dones       map[uint32]*doneEntry
	pullers     int // puller goroutines running
	idlePullers int // of which waiting for a job

	readMu sync.Mutex // serialises ReadCall and ServeCalls
	// push is ServeCalls' deliver while it runs: onRecv hands plain calls to it
	// straight from the completion (under pushMu's read lock, so ServeCalls can wait
	// for the last one before it returns).
	pushMu sync.RWMutex
	push   func(call *oncrpc.ServerCall, inline bool)
	ready  chan *srvCall   // calls whose read chunks have been pulled
	pullq  chan pullJob    // calls whose read chunks are to be pulled
	reads  *credits.Window // one credit per RDMA Read the connection may have in flight (ORD)
	ctx    context.Context
	cancel context.CancelFunc

	bcState // the reverse direction (backchannel_server.go)
}

var (
	_ oncrpc.ServerConn     = (*ServerConn)(nil)
	_ oncrpc.PushServerConn = (*ServerConn)(nil)
)

// srvCall is the transport state of one call (oncrpc.ServerCall.Cookie).
type srvCall struct {
	call     oncrpc.ServerCall
	h        Header    // the call's transport header: write list, reply chunk, read list
	asm      assembler // read chunk placement
	msgp     bool
	finished bool // finishCall ran
	recvIdx  int  // receive buffer holding the inline call, or -1
	big      *bigBuf
	charge   int64 // bytes of the memory budget reserved for big
	// What the reply may use without waiting, reserved when the call was received
	// (see receiveInline): a send buffer (-1: none) and a send-queue slot.
	sendIdx int
	sqHeld  bool
	// reply state
	out  Header
	regs []*reg
	wrs  []rdmaWR // the reply's RDMA Writes
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
// and ServerOptions.InlineSend, and held to the receive buffers the client announced
// in RFC 8797 private data, if it did. Other fields are ignored; a zero InlineSend is
// no change.
func (sc *ServerConn) SetLimits(l Limits) error {
	if l.InlineSend == 0 {
		return nil
	}
	if err := checkInlineLimit("InlineSend", l.InlineSend, sc.l.opts.InlineSend); err != nil {
		return err
	}
	sc.setInlineSend(l.InlineSend)
	return nil
}

// setInlineSend sets the largest reply sent inline to n, held to the client's
// announced receive buffers: RFC 8797 private data states their size, and a message
// longer than the buffer posted for it fails the client's receive.
func (sc *ServerConn) setInlineSend(n int) {
	if sc.peerRecv > 0 {
		n = min(n, sc.peerRecv)
	}
	sc.mu.Lock()
	sc.inlineSend = n
	sc.mu.Unlock()
}

// peerRecv returns the receive size a client announced in RFC 8797 private data
// (peer, decoded with error perr), or 0 when it sent none: then only the RFC 8166
// default is known, which CONF_RDMA may raise.
func peerRecv(peer ConnPrivate, perr error) int {
	if perr != nil {
		return 0
	}
	return peer.RecvSize
}

// InlineBuffers implements confproto.InlineBuffered: the sizes of the connection's
// send buffers (ServerOptions.InlineSend) and receive buffers (ServerOptions.InlineRecv),
// so that CONF_RDMA announces no larger calls than the receive buffers hold.
func (sc *ServerConn) InlineBuffers() (send, recv int) { return sc.ep.sendSize, sc.ep.recvSize }

// SetInlineThresholds implements confproto.Configurable: send is the largest reply sent
// inline, clamped to [1024, ServerOptions.InlineSend] and to the receive buffers the
// client announced in RFC 8797 private data, if it did; recv is ignored (the receive
// buffers posted for the connection keep their size).
func (sc *ServerConn) SetInlineThresholds(send, recv int) {
	sc.setInlineSend(clampInline(send, sc.l.opts.InlineSend))
}

// SetMaxRDMARead implements confproto.Configurable: at most n RDMA Reads (clamped to
// the connection's ORD) are in flight at once from now on. n is 0 when the client
// announced maxrdmaread 0: calls with read chunks are then answered with ERR_CHUNK
// (seed §6.2: the peer "MUST NOT issue requests which require RDMA Read").
func (sc *ServerConn) SetMaxRDMARead(n int) {
	sc.noPull.Store(n <= 0)
	sc.reads.Update(uint32(max(n, 1)))
}

// RemoteAddr returns the client's address (netid "rdma").
func (sc *ServerConn) RemoteAddr() net.Addr { return sc.remote }

// Close closes the connection.
func (sc *ServerConn) Close() error {
	sc.closeOnce.Do(func() {
		sc.isClosed.Store(true)
		close(sc.closed)
		sc.mu.Lock()
		if sc.stall != nil {
			sc.stall.stop()
		}
		sc.mu.Unlock()
		sc.cancel()
		sc.reads.Close()
		sc.ep.teardown()
		sc.regs.close()
		sc.cred.Close()
		sc.mu.Lock()
		for xid, d := range sc.dones {
			delete(sc.dones, xid)
			d.release(sc)
		}
		sc.mu.Unlock()
		sc.l.mu.Lock()
		delete(sc.l.conns, sc)
		sc.stats.fold(&sc.l.stats)
		sc.l.mu.Unlock()
		sc.l.guard.Leave((*idleView)(sc))
		sc.closeBackchannel()
		sc.l.freeIfDone()
	})
	return nil
}

// idleView is a ServerConn as the listener's idle sweeper sees it (connguard.Conn).
type idleView ServerConn

// Activity reports the calls accepted on the connection and whether any is
// outstanding: received and not yet answered, whatever stage it is in, or a reverse
// call awaiting its reply.
func (v *idleView) Activity() (uint64, bool) {
	calls, out := v.cred.Activity()
	return calls, out > 0 || (*ServerConn)(v).reverseBusy()
}

// CloseIfIdle closes the connection if no call arrived since Activity counted calls and
// none is outstanding. The credit share is closed first, under the same lock that
// admits calls, so a call that arrives meanwhile is refused rather than half served.
func (v *idleView) CloseIfIdle(calls uint64) bool {
	if (*ServerConn)(v).reverseBusy() || !v.cred.CloseIfIdle(calls) {
		return false
	}
	(*ServerConn)(v).Close()
	return true
}

// RemoteAddr returns the client's address.
func (v *idleView) RemoteAddr() net.Addr { return v.remote }
