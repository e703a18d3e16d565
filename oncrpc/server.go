package oncrpc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Errors a Handler returns to choose the reply. Any error wrapping one of them works.
var (
	// ErrGarbageArgs makes the server answer GARBAGE_ARGS. A handler may also return
	// the *xdr.DecodeError from decoding its arguments.
	ErrGarbageArgs = errors.New("oncrpc: cannot decode the procedure's arguments")
	// ErrProcUnavail makes the server answer PROC_UNAVAIL.
	ErrProcUnavail = errors.New("oncrpc: procedure unavailable")
	// ErrNoReply makes the server drop the call without answering, as a server does
	// for a retransmission of a call it is still executing.
	ErrNoReply = errors.New("oncrpc: no reply")
)

// AuthErr returns the error a Handler returns to deny a call with AUTH_ERROR and stat
// (e.g. AuthTooWeak when the credential's flavor is not acceptable for the operation).
func AuthErr(stat AuthStat) error { return &RejectError{Stat: AuthError, AuthStat: stat} }

// A Handler executes calls to one program (and range of versions). It decodes the
// arguments from req.Args and encodes the results into res, which already holds the
// reply header: res.Pos() and every Payload position are absolute in the reply
// message. Results may use res.Payload for DDP-eligible data, which must then stay
// unchanged until the reply has been sent (see Request.AfterReply).
//
// Returning nil sends the results. Returning an error discards them and sends, by
// the error's kind: GARBAGE_ARGS (ErrGarbageArgs or any *xdr.DecodeError),
// PROC_UNAVAIL (ErrProcUnavail), the status of an *AcceptError or *RejectError (see
// AuthErr), nothing (ErrNoReply), or SYSTEM_ERR for anything else. A panic is
// recovered and answered SYSTEM_ERR.
//
// ServeRPC is called concurrently; replies may leave in any order. ctx ends when the
// caller's connection fails or the Server is closed (not during a graceful Shutdown,
// which waits for handlers).
type Handler interface {
	ServeRPC(ctx context.Context, req *Request, res *xdr.Encoder) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request, res *xdr.Encoder) error

// ServeRPC calls f.
func (f HandlerFunc) ServeRPC(ctx context.Context, req *Request, res *xdr.Encoder) error {
	return f(ctx, req, res)
}

// Procs is a Handler that dispatches on the procedure number; an unknown procedure
// gets PROC_UNAVAIL.
type Procs map[uint32]HandlerFunc

// ServeRPC calls the handler of req.Header.Proc.
func (p Procs) ServeRPC(ctx context.Context, req *Request, res *xdr.Encoder) error {
	h, ok := p[req.Header.Proc]
	if !ok {
		return ErrProcUnavail
	}
	return h(ctx, req, res)
}

// Request is one call as a Handler sees it. It and everything it refers to (Header
// bodies, AuthSys, the bytes Args returns) are valid only until ServeRPC returns.
type Request struct {
	Header CallHeader
	// AuthSys is the decoded credential when Header.Cred.Flavor is AuthSys, else nil.
	AuthSys *AuthSysParams
	// Args reads the procedure's arguments.
	Args *xdr.Decoder
	// RemoteAddr is the caller's address; Netid is its netid, Netid(RemoteAddr)
	// ("tcp", "tcp6", "rdma", "rdma6").
	RemoteAddr net.Addr
	Netid      string
	// Conn is the connection the call arrived on. A handler may look for what the
	// transport offers beyond ServerConn (e.g. confproto.Configurable on an
	// RPC-over-RDMA connection, to apply negotiated parameters to it); it must not
	// read calls from it or close it.
	Conn ServerConn

	sys      AuthSysParams
	after    []func()
	acct     *Account // the connection's share of the Server's Budget
	reserved int64    // bytes Reserve took, released after the reply
}

// Reserve accounts n bytes the handler is about to allocate for this call (a READ
// reply buffer) against the connection's and the Server's memory budgets, waiting
// while either is spent (see Account): a peer that does not take its replies then
// holds at most its budget. The bytes are given back once the reply has been handed
// to the transport and the AfterReply functions have run. It returns ctx's error
// if ctx ends first. Handlers declared NonBlocking must not call it.
func (r *Request) Reserve(ctx context.Context, n int) error {
	if r.acct == nil || n <= 0 {
		return nil
	}
	if err := r.acct.Reserve(ctx, int64(n)); err != nil {
		return fmt.Errorf("oncrpc: reserving %d bytes for the call: %w", n, err)
	}
	r.reserved += int64(n)
	return nil
}

// AfterReply registers f to run once the reply has been handed to the transport (or
// the call dropped), e.g. to release a buffer given to res.Payload.
func (r *Request) AfterReply(f func()) { r.after = append(r.after, f) }

// ServerOptions configure a Server. The zero value is usable.
type ServerOptions struct {
	// MaxConcurrent bounds the calls executing at once per connection (default 64).
	// The server stops reading a connection while it is at the bound.
	MaxConcurrent int
	// Logger receives control-path events: connections accepted and closed, garbage
	// received, recovered panics. Default: no logging.
	Logger hclog.Logger
	// Flavors are the credential flavors calls may carry (default: AuthNone and
	// AuthSys, the ones this package implements). A well-formed credential of an
	// implemented flavor that is not listed gets AUTH_TOOWEAK, except on procedure 0
	// (NULL), which accepts AUTH_NONE so that clients can always ping the server
	// (RFC 2623 §2.3.1). NewServer panics if Flavors names a flavor this package does
	// not implement.
	Flavors []Flavor
	// Budget bounds the bytes calls in progress hold across the Server's connections:
	// what handlers reserve (Request.Reserve, e.g. READ reply buffers) and, over TCP,
	// the call records read. Default: a Budget of DefaultBudget for this Server. Share
	// one with rpcrdma.ServerOptions.Budget to bound both together.
	Budget *Budget
	// ConnBudget bounds the same bytes per connection (default DefaultConnBudget;
	// negative: only Budget applies). A connection over its budget, or whose Budget is
	// spent, is not read (TCP) and its handlers wait in Request.Reserve (every
	// transport) until its replies have been sent.
	ConnBudget int64
	// Observe, when set, is called once for every call whose header could be
	// decoded, after its reply has been handed to the transport (or the call
	// dropped), with the procedure, netid, Outcome and the time since the Server
	// received the call. It runs on the per-call path: it must be quick and should
	// not allocate (ProcStats.Observe is such a function). Nil costs nothing, not
	// even a clock reading. The numbers of a call to a program, version or
	// procedure the server does not serve are the client's, made up at will:
	// ProcStats counts all such calls under one key, OtherProc.
	Observe func(CallInfo)
}

// ServerStats are cumulative counters.
type ServerStats struct {
	Calls       uint64 // calls read from a transport
	Garbage     uint64 // calls dropped or denied because the header was malformed
	SystemErrs  uint64 // SYSTEM_ERR replies (handler errors and panics)
	WriteErrors uint64 // replies the transport failed to send
}

type versionRange struct {
	low, high uint32
	h         Handler
}

// A Server dispatches ONC RPC calls from any number of Listeners (or ServerConns) to
// registered Handlers.
type Server struct {
	maxConc int
	log     hclog.Logger
	observe func(CallInfo) // ServerOptions.Observe
	// allowNone and allowSys are the Flavors policy.
	allowNone, allowSys bool

	// progs is the registry, replaced whole under mu by RegisterRange (copy on write),
	// so lookup on the per-call path takes no lock shared by every connection.
	mu    sync.Mutex
	progs atomic.Pointer[map[uint32][]versionRange]

	// readCtx stops reading (Shutdown); callCtx is handed to handlers and ends with Close.
	readCtx    context.Context
	stopRead   context.CancelFunc
	callCtx    context.Context
	stopCalls  context.CancelFunc
	connMu     sync.Mutex
	listeners  map[Listener]struct{}
	conns      map[ServerConn]struct{}
	active     sync.WaitGroup // ServeConn loops
	shutdown   atomic.Bool
	calls      atomic.Uint64
	garbage    atomic.Uint64
	systemErrs atomic.Uint64
	writeErrs  atomic.Uint64

	pool    sync.Pool // *serverCallState
	workers workerPool

	budget     *Budget
	connBudget int64

	// fallback, when set, serves every program that is not registered (a client
	// transport's BackchannelServer).
	fallback Handler
}

// NewServer returns a Server with no programs registered. opts may be nil.
func NewServer(opts *ServerOptions) *Server {
	s := &Server{
		maxConc:    64,
		log:        hclog.NewNullLogger(),
		allowNone:  true,
		allowSys:   true,
		listeners:  make(map[Listener]struct{}),
		conns:      make(map[ServerConn]struct{}),
		connBudget: DefaultConnBudget,
	}
	if opts != nil {
		s.budget = opts.Budget
		if opts.ConnBudget != 0 {
			s.connBudget = opts.ConnBudget
		}
		if opts.MaxConcurrent > 0 {
			s.maxConc = opts.MaxConcurrent
		}
		if opts.Logger != nil {
			s.log = opts.Logger
		}
		s.observe = opts.Observe
		if opts.Flavors != nil {
			s.allowNone, s.allowSys = false, false
			for _, f := range opts.Flavors {
				switch f {
				case AuthNone:
					s.allowNone = true
				case AuthSys:
					s.allowSys = true
				default:
					panic(fmt.Sprintf("oncrpc: ServerOptions.Flavors: %v is not implemented", f))
				}
			}
		}
	}
	// As many parked push workers as one connection may keep busy: a burst of
	// concurrent calls (4 KiB NFS READ at qd32) then reuses grown goroutines instead
	// of starting new ones that grow their stacks again (copystack was ~3% of CPU with
	// max(8, 4*GOMAXPROCS)). TCP's servePull keeps up to maxConc per connection.
	s.workers.max = s.maxConc
	if s.budget == nil {
		s.budget = NewBudget(DefaultBudget)
	}
	s.readCtx, s.stopRead = context.WithCancel(context.Background())
	s.callCtx, s.stopCalls = context.WithCancel(context.Background())
	s.pool.New = func() any { return new(serverCallState) }
	return s
}

// Register makes h serve version vers of program prog.
func (s *Server) Register(prog, vers uint32, h Handler) { s.RegisterRange(prog, vers, vers, h) }

// RegisterRange makes h serve versions low through high of program prog; h reads the
// version from req.Header.Vers. A call to a registered program with a version no
// handler serves is answered PROG_MISMATCH with the lowest and highest registered
// versions. It panics if low > high or the range overlaps one already registered.
func (s *Server) RegisterRange(prog, low, high uint32, h Handler) {
	if low > high || h == nil {
		panic("oncrpc: RegisterRange with low > high or nil handler")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	progs := make(map[uint32][]versionRange)
	if old := s.progs.Load(); old != nil {
		maps.Copy(progs, *old)
	}
	for _, r := range progs[prog] {
		if low <= r.high && r.low <= high {
			panic(fmt.Sprintf("oncrpc: program %d versions %d..%d registered twice", prog, low, high))
		}
	}
	progs[prog] = append(slices.Clip(progs[prog]), versionRange{low, high, h})
	s.progs.Store(&progs)
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	return ServerStats{Calls: s.calls.Load(), Garbage: s.garbage.Load(), SystemErrs: s.systemErrs.Load(), WriteErrors: s.writeErrs.Load()}
}

// Serve accepts connections from l and serves each in its own goroutine until l fails
// or the server shuts down (then it returns ErrClosed). It closes l when it returns.
func (s *Server) Serve(l Listener) error {
	s.connMu.Lock()
	if s.shutdown.Load() {
		s.connMu.Unlock()
		l.Close()
		return ErrClosed
	}
	s.listeners[l] = struct{}{}
	s.connMu.Unlock()
	defer func() {
		s.connMu.Lock()
		delete(s.listeners, l)
		s.connMu.Unlock()
		l.Close()
	}()
	s.log.Info("serving", "addr", l.Addr().String(), "netid", Netid(l.Addr()))
	delay := 5 * time.Millisecond
	for {
		c, err := l.Accept(s.readCtx)
		if err != nil {
			if s.shutdown.Load() {
				return ErrClosed
			}
			if transientAcceptError(err) {
				// Out of descriptors or buffers, or a connection aborted before
				// it was accepted: wait and carry on serving.
				s.log.Warn("accept failed, retrying", "addr", l.Addr().String(), "error", err, "delay", delay)
				select {
				case <-time.After(delay):
				case <-s.readCtx.Done():
					return ErrClosed
				}
				delay = min(2*delay, time.Second)
				continue
			}
			return fmt.Errorf("oncrpc: accept on %v: %w", l.Addr(), err)
		}
		delay = 5 * time.Millisecond
		if !s.track() {
			c.Close()
			return ErrClosed
		}
		go func() {
			defer s.active.Done()
			s.serveConn(c)
		}()
	}
}

// transientAcceptError reports whether an Accept error is worth retrying.
func transientAcceptError(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR:
		return true
	}
	return false
}

// ServeConn serves one connection until it fails or the server shuts down, then
// closes it.
func (s *Server) ServeConn(c ServerConn) {
	if !s.track() {
		c.Close()
		return
	}
	defer s.active.Done()
	s.serveConn(c)
}

// track counts a connection loop in s.active unless the server is shutting down, so
// that Shutdown's Wait never races with an Add.
func (s *Server) track() bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.shutdown.Load() {
		return false
	}
	s.active.Add(1)
	return true
}

func (s *Server) serveConn(c ServerConn) {
	s.connMu.Lock()
	if s.shutdown.Load() {
		s.connMu.Unlock()
		c.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.connMu.Unlock()
	remote := c.RemoteAddr()
	s.log.Debug("connection accepted", "remote", remote.String(), "netid", Netid(remote))

	// Handlers get a context that ends when the connection fails or the server is
	// closed, but not when a graceful Shutdown merely stops reading.
	ctx, cancel := context.WithCancel(s.callCtx)
	defer cancel()

	// When reading fails (not merely stopped by Shutdown), the handlers still running
	// are told before the server waits for them.
	stop := func() {
		if s.readCtx.Err() == nil {
			cancel()
		}
	}
	acct := s.budget.Account(s.connBudget)
	var err error
	if pc, ok := c.(PushServerConn); ok {
		err = s.servePush(ctx, pc, remote, acct, stop)
	} else {
		err = s.servePull(ctx, c, remote, acct, stop)
	}
	c.Close()
	s.connMu.Lock()
	delete(s.conns, c)
	s.connMu.Unlock()
	var tooLarge *RecordTooLargeError
	switch {
	case s.readCtx.Err() != nil:
		s.log.Debug("connection closed by shutdown", "remote", remote.String())
	case errors.As(err, &tooLarge) || errors.Is(err, ErrRecordTruncated):
		s.log.Warn("connection closed: bad record", "remote", remote.String(), "error", err)
	default:
		s.log.Debug("connection closed", "remote", remote.String(), "reason", err)
	}
}

// servePull reads calls with ReadCall until it fails. Calls go to per-connection
// workers, started on demand up to maxConc; an idle worker takes the next call, so
// steady-state dispatch does not allocate. (Running non-blocking procedures in this
// loop instead was measured over TCP: no CPU saved, NULL latency up to 5% worse,
// since the worker overlaps the reply with the loop's next read.) When ReadCall fails
// it calls stop, and it returns when every call it read has been answered.
func (s *Server) servePull(ctx context.Context, c ServerConn, remote net.Addr, acct *Account, stop func()) error {
	work := make(chan *ServerCall)
	var inflight sync.WaitGroup
	workers := 0
	worker := func(call *ServerCall) {
		defer inflight.Done()
		for ; call != nil; call = <-work {
			n := int64(len(call.Msg.Inline))
			s.handle(ctx, c, call, remote, acct)
			acct.Uncharge(n)
		}
	}
	defer func() {
		close(work)
		inflight.Wait()
	}()
	for {
		// Back-pressure: while the connection's calls in progress hold its budget
		// (or the Server's is spent), read nothing more from it. Its own calls
		// finishing (answered, or failed when the connection is closed) ends the wait.
		if acct.Over() {
			if err := acct.WaitUnder(s.readCtx); err != nil {
				stop()
				return err
			}
		}
		call, err := c.ReadCall(s.readCtx)
		if err != nil {
			stop()
			return err
		}
		// The record is held until the call is answered.
		acct.Charge(int64(len(call.Msg.Inline)))
		s.calls.Add(1)
		select {
		case work <- call:
			continue
		default:
		}
		if workers < s.maxConc {
			workers++
			inflight.Add(1)
			go worker(call)
			continue
		}
		work <- call // at the bound: wait for a worker
	}
}

// servePush serves a connection that delivers its calls itself (PushServerConn). Calls
// to non-blocking procedures run in deliver when the transport allows it; the rest are
// queued for per-connection workers (at most maxConc run; the queue is bounded by what
// the transport lets its peer send, e.g. RPC-over-RDMA credits), since deliver must not
// block. When ServeCalls returns it calls stop, and it returns when every delivered call
// has been answered.
func (s *Server) servePush(ctx context.Context, c PushServerConn, remote net.Addr, acct *Account, stop func()) error {
	q := &pushQueue{s: s, ctx: ctx, c: c, remote: remote, acct: acct}
	err := c.ServeCalls(s.readCtx, q.deliver)
	stop()
	q.inflight.Wait() // deliver is not called again: wait for the calls delivered
	return err
}

// pushQueue hands pushed calls to workers without blocking the deliverer. Its workers
// come from the Server's workerPool and go back to it when the queue is empty, so an
// idle connection holds no goroutine.
type pushQueue struct {
	s      *Server
	ctx    context.Context
	c      ServerConn
	remote net.Addr
	acct   *Account

	inflight sync.WaitGroup // workers serving this queue
	mu       sync.Mutex
	workers  int           // workers serving this queue
	backlog  []*ServerCall // calls waiting for a worker, oldest first
}

// deliver is the PushServerConn's deliver function.
func (q *pushQueue) deliver(call *ServerCall, inline bool) {
	q.s.calls.Add(1)
	if inline && q.s.inline(call) {
		q.s.handle(q.ctx, q.c, call, q.remote, q.acct)
		return
	}
	q.mu.Lock()
	q.backlog = append(q.backlog, call)
	// Past its memory budget a connection gets no more workers: its calls wait in
	// the backlog (holding only what the transport received them in, which it does
	// not reuse meanwhile) until the workers it has take them.
	start := q.workers < q.s.maxConc && (q.workers == 0 || !q.acct.Over())
	if start {
		q.workers++
		q.inflight.Add(1)
	}
	q.mu.Unlock()
	if start {
		q.s.workers.start(q)
	}
}

// drain answers the queued calls until none is left; the caller was counted in
// q.workers and q.inflight.
func (q *pushQueue) drain() {
	defer q.inflight.Done()
	for {
		q.mu.Lock()
		n := len(q.backlog)
		if n == 0 {
			q.workers--
			q.mu.Unlock()
			return
		}
		call := q.backlog[0]
		copy(q.backlog, q.backlog[1:])
		q.backlog[n-1] = nil
		q.backlog = q.backlog[:n-1]
		q.mu.Unlock()
		q.s.handle(q.ctx, q.c, call, q.remote, q.acct)
	}
}

// workerPool keeps up to max idle push workers, shared by a Server's connections: a
// call that needs a worker reuses a parked goroutine (whose stack has already grown)
// rather than starting one, and no worker waits on an idle connection. close ends the
// idle workers; the others end when their queue is empty.
type workerPool struct {
	mu     sync.Mutex
	idle   []chan *pushQueue // one per parked worker; a send never blocks (buffered 1)
	max    int
	closed bool
}

// start has a worker drain q, a parked one if any. It never blocks.
func (p *workerPool) start(q *pushQueue) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		c <- q
		return
	}
	p.mu.Unlock()
	go p.run(q)
}

// run drains queues until the pool is closed or has enough idle workers.
func (p *workerPool) run(q *pushQueue) {
	var c chan *pushQueue
	for q != nil {
		q.drain()
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.max {
			p.mu.Unlock()
			return
		}
		if c == nil {
			c = make(chan *pushQueue, 1)
		}
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		q = <-c
	}
}

// close ends the idle workers; workers still draining end when they are done.
func (p *workerPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c <- nil
	}
}

// Shutdown stops accepting connections and reading calls, waits for the calls being
// executed to be answered, and closes every connection. If ctx ends first, it closes
// everything at once (as Close does) and returns ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	s.connMu.Lock()
	s.shutdown.Store(true)
	for l := range s.listeners {
		l.Close()
	}
	s.connMu.Unlock()
	s.stopRead()
	done := make(chan struct{})
	go func() {
		s.active.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.stopCalls()
		s.workers.close()
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// Close stops the server at once: listeners and connections are closed and handlers'
// contexts are cancelled. It does not wait for handlers to return.
func (s *Server) Close() error {
	s.connMu.Lock()
	s.shutdown.Store(true)
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.connMu.Unlock()
	s.stopRead()
	s.stopCalls()
	s.workers.close()
	return nil
}

// serverCallState is the pooled per-call state: the request, the argument decoder and
// the reply encoder with its buffer.
type serverCallState struct {
	req Request
	dec xdr.Decoder
	enc xdr.Encoder
	msg Message
	// decoded says the call's header was decoded (dispatch), for ServerOptions.Observe.
	decoded bool
}

var noneVerf = OpaqueAuth{Flavor: AuthNone}

func (s *Server) handle(ctx context.Context, c ServerConn, call *ServerCall, remote net.Addr, acct *Account) {
	st := s.pool.Get().(*serverCallState)
	var start time.Time
	if s.observe != nil {
		start = time.Now()
	}
	req := &st.req
	req.RemoteAddr, req.Netid, req.Conn, req.acct = remote, Netid(remote), c, acct
	st.dec.Reset(call.Msg.Inline)
	st.dec.SetPadding(call.Msg.Padding)
	req.Args = &st.dec
	st.enc.Reset(st.enc.Bytes()[:0])

	rh := ReplyHeader{Stat: MsgAccepted, Verf: noneVerf}
	send := s.dispatch(ctx, st, &rh, remote)
	if send {
		st.msg = Message{Inline: st.enc.Bytes(), Payloads: st.enc.Payloads()}
		if err := c.WriteReply(call, &st.msg); err != nil {
			s.writeErrs.Add(1)
		}
	} else {
		c.WriteReply(call, nil)
	}
	if s.observe != nil && st.decoded {
		s.observe(CallInfo{Prog: req.Header.Prog, Vers: req.Header.Vers, Proc: req.Header.Proc, Netid: req.Netid,
			Outcome: replyOutcome(send, &rh), Duration: time.Since(start)})
	}
	st.decoded = false
	for _, f := range req.after {
		f()
	}
	if req.reserved > 0 {
		acct.Release(req.reserved)
	}
	clear(req.after)
	buf := st.enc.Bytes()
	*req = Request{after: req.after[:0], sys: AuthSysParams{GIDs: req.sys.GIDs[:0]}}
	clear(st.enc.Payloads()) // do not keep the handler's payload data alive
	st.dec.Reset(nil)
	st.msg = Message{}
	if cap(buf) > maxPooledBuffer {
		buf = nil
	}
	st.enc.Reset(buf[:0])
	s.pool.Put(st)
}

// dispatch decodes and authenticates the call, runs the handler and leaves the reply
// in st.enc. It reports whether a reply is to be sent.
func (s *Server) dispatch(ctx context.Context, st *serverCallState, rh *ReplyHeader, remote net.Addr) bool {
	req := &st.req
	hdr := &req.Header
	if err := hdr.DecodeXDR(&st.dec); err != nil {
		s.garbage.Add(1)
		var he *HeaderError
		errors.As(err, &he)
		rh.XID = hdr.XID
		switch {
		case he == nil || he.Field == "xid" || he.Field == "msg_type" || (he.Field == "rpcvers" && he.Err != ErrRPCVersion):
			s.log.Warn("dropping garbage", "remote", remote.String(), "error", err)
			return false
		case he.Err == ErrRPCVersion:
			*rh = ReplyHeader{XID: hdr.XID, Stat: MsgDenied, RejectStat: RPCMismatch, Low: RPCVersion, High: RPCVersion}
		case len(he.Field) >= 4 && he.Field[:4] == "cred":
			*rh = ReplyHeader{XID: hdr.XID, Stat: MsgDenied, RejectStat: AuthError, AuthStat: AuthBadCred}
		case len(he.Field) >= 4 && he.Field[:4] == "verf":
			*rh = ReplyHeader{XID: hdr.XID, Stat: MsgDenied, RejectStat: AuthError, AuthStat: AuthBadVerf}
		default: // prog, vers or proc truncated
			rh.AcceptStat = GarbageArgs
		}
		s.log.Warn("malformed call header", "remote", remote.String(), "xid", hdr.XID, "error", err)
		rh.EncodeXDR(&st.enc)
		return true
	}
	rh.XID = hdr.XID
	st.decoded = true
	if stat := s.authenticate(req); stat != AuthOK {
		if stat == AuthBadCred || stat == AuthBadVerf {
			s.garbage.Add(1)
		}
		*rh = ReplyHeader{XID: hdr.XID, Stat: MsgDenied, RejectStat: AuthError, AuthStat: stat}
		rh.EncodeXDR(&st.enc)
		return true
	}
	h, low, high, ok := s.lookup(hdr.Prog, hdr.Vers)
	if h == nil {
		if ok {
			rh.AcceptStat, rh.Low, rh.High = ProgMismatch, low, high
		} else {
			rh.AcceptStat = ProgUnavail
		}
		rh.EncodeXDR(&st.enc)
		return true
	}
	rh.EncodeXDR(&st.enc)
	err := s.run(ctx, h, req, &st.enc)
	if err == nil {
		return true
	}
	var (
		ae *AcceptError
		re *RejectError
		de *xdr.DecodeError
	)
	switch {
	case errors.Is(err, ErrNoReply):
		return false
	case errors.As(err, &re):
		*rh = ReplyHeader{XID: hdr.XID, Stat: MsgDenied, RejectStat: re.Stat, AuthStat: re.AuthStat, Low: re.Low, High: re.High}
	case errors.As(err, &ae):
		rh.AcceptStat, rh.Low, rh.High = ae.Stat, ae.Low, ae.High
	case errors.Is(err, ErrProcUnavail):
		rh.AcceptStat = ProcUnavail
	case errors.Is(err, ErrGarbageArgs) || errors.As(err, &de):
		rh.AcceptStat = GarbageArgs
	default:
		s.systemErrs.Add(1)
		rh.AcceptStat = SystemErr
	}
	st.enc.Truncate(0)
	rh.EncodeXDR(&st.enc)
	return true
}

// authenticate checks the credential and verifier (RFC 5531 §8.2, Appendix A).
// AUTH_NONE and AUTH_SYS are understood; a malformed one gets AUTH_BADCRED, a
// verifier other than an empty AUTH_NONE gets AUTH_BADVERF, and any other flavor
// AUTH_REJECTEDCRED (the server has no context for it: the client must begin anew
// with a flavor the server accepts). A flavor excluded by ServerOptions.Flavors gets
// AUTH_TOOWEAK (but AUTH_NONE is always good for NULL); handlers may be stricter
// (AuthErr(AuthTooWeak)).
func (s *Server) authenticate(req *Request) AuthStat {
	hdr := &req.Header
	switch hdr.Cred.Flavor {
	case AuthNone:
		if len(hdr.Cred.Body) != 0 {
			return AuthBadCred
		}
	case AuthSys:
		if err := DecodeAuthSysBody(&req.sys, hdr.Cred.Body); err != nil {
			return AuthBadCred
		}
		req.AuthSys = &req.sys
	default:
		return AuthRejectedCred
	}
	if hdr.Verf.Flavor != AuthNone || len(hdr.Verf.Body) != 0 {
		return AuthBadVerf
	}
	switch {
	case hdr.Cred.Flavor == AuthNone && !s.allowNone && hdr.Proc != 0:
		return AuthTooWeak
	case hdr.Cred.Flavor == AuthSys && !s.allowSys:
		return AuthTooWeak
	}
	return AuthOK
}

// lookup finds the handler of prog/vers. With no handler, ok says whether the program
// is known, and low/high give its version range.
func (s *Server) lookup(prog, vers uint32) (h Handler, low, high uint32, ok bool) {
	p := s.progs.Load()
	if p == nil {
		return s.fallback, 0, 0, s.fallback != nil
	}
	rs := (*p)[prog]
	if len(rs) == 0 {
		return s.fallback, 0, 0, s.fallback != nil
	}
	low, high = rs[0].low, rs[0].high
	for _, r := range rs {
		if r.low <= vers && vers <= r.high {
			return r.h, 0, 0, true
		}
		low, high = min(low, r.low), max(high, r.high)
	}
	return nil, low, high, true
}

// errPanic is what a recovered handler panic becomes.
var errPanic = errors.New("oncrpc: handler panicked")

func (s *Server) run(ctx context.Context, h Handler, req *Request, res *xdr.Encoder) (err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 4096)
			buf = buf[:runtime.Stack(buf, false)]
			s.log.Error("handler panic", "prog", req.Header.Prog, "vers", req.Header.Vers,
				"proc", req.Header.Proc, "xid", req.Header.XID, "panic", fmt.Sprint(p), "stack", string(buf))
			err = errPanic
		}
	}()
	return h.ServeRPC(ctx, req, res)
}
