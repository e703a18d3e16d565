package oncrpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/connguard"
	"github.com/hashicorp/go-hclog"
)

// Server connection defaults, for every transport's listener.
const (
	// DefaultIdleTimeout is how long a server connection may go without a call before
	// the server closes it (knfsd closes idle connections after about 6 minutes).
	DefaultIdleTimeout = 6 * time.Minute
	// DefaultMaxConns is the most connections a listener keeps open at once.
	DefaultMaxConns = 1024
)

// TCPOptions configure the TCP transport, client or server side. The zero value is
// usable.
type TCPOptions struct {
	// MaxRecord bounds a received record (default DefaultMaxRecord). A peer that
	// claims more gets its connection closed.
	MaxRecord int
	// MaxFragment bounds the fragments this side sends (default: one fragment per
	// record, up to MaxFragmentSize). Keep the default towards peers you do not
	// control: rpcbind's non-blocking libtirpc server resets the connection on a
	// multi-fragment call (TestInteropRpcbindRejectsFragments).
	MaxFragment int
	// ReconnectBackoff is the first delay between reconnection attempts of a dialed
	// client transport; it doubles up to 1s (default 10ms).
	ReconnectBackoff time.Duration
	// SendTimeout bounds how long a server connection may take to take one reply: a
	// reply whose write does not finish within it (the peer stopped reading its
	// socket) closes the connection, which ends its calls and frees what they hold.
	// Default DefaultSendTimeout; negative: none. A client transport applies it only
	// to its replies to reverse-direction calls (its calls are bounded by their
	// contexts).
	SendTimeout time.Duration
	// Logger receives control-path events. Default: no logging.
	Logger hclog.Logger
	// IdleTimeout (listener only) closes a connection that has received nothing for
	// that long and has no call in progress (read and not yet answered). One sweeper per
	// listener checks every IdleTimeout/4. Default DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration
	// MaxConns (listener only) is the most connections open at once: past it new
	// connections are closed as soon as they are accepted, counted
	// (TCPListener.Stats().Refused) and logged at Warn at most every 10 seconds. Default
	// DefaultMaxConns; negative: no limit.
	MaxConns int
	// Backchannel (client only) makes the transport serve the calls the server sends
	// on the connection in the reverse direction (NFSv4.1 callbacks; see
	// BackchannelOptions). Without it they are dropped and counted
	// (TCPStats.ReverseDropped).
	Backchannel *BackchannelOptions
}

// DefaultSendTimeout is the default TCPOptions.SendTimeout: 60 s, the Linux NFS
// client's default major timeout over TCP (timeo=600), after which a well-behaved
// client retransmits on a new connection anyway; a peer that takes nothing for that
// long is not coming back for its replies.
const DefaultSendTimeout = 60 * time.Second

func (o *TCPOptions) withDefaults() TCPOptions {
	var r TCPOptions
	if o != nil {
		r = *o
	}
	if r.MaxRecord <= 0 {
		r.MaxRecord = DefaultMaxRecord
	}
	if r.SendTimeout == 0 {
		r.SendTimeout = DefaultSendTimeout
	}
	if r.ReconnectBackoff <= 0 {
		r.ReconnectBackoff = 10 * time.Millisecond
	}
	if r.Logger == nil {
		r.Logger = hclog.NewNullLogger()
	}
	if r.IdleTimeout == 0 {
		r.IdleTimeout = DefaultIdleTimeout
	}
	if r.MaxConns == 0 {
		r.MaxConns = DefaultMaxConns
	}
	return r
}

const tcpBufferSize = 64 << 10

// aLongTimeAgo is a deadline in the past, to wake a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// A TCPTransport is the client side of ONC RPC over TCP: a RoundTripper that sends
// record-marked calls on one connection and matches replies by XID in a reader
// goroutine. A transport made by DialTCP reconnects after losing its connection and
// retransmits every outstanding call (same XID) on the new one, while calls wait (bound
// them with a context); one made by NewTCPTransport fails outstanding and later calls
// instead.
type TCPTransport struct {
	opts    TCPOptions
	dial    func(ctx context.Context) (net.Conn, error)
	pending PendingCalls

	wmu  sync.Mutex // guards conn, gen, vecs, nb, broken, reconnecting
	conn net.Conn
	gen  uint64
	vecs recordVecs
	nb   net.Buffers

	broken       error // set when the connection is lost for good
	reconnecting bool

	closed     atomic.Bool
	ctx        context.Context // ends with Close
	cancel     context.CancelFunc
	readers    sync.WaitGroup
	sendErrs   atomic.Uint64
	reconnects atomic.Uint64

	bcs            *BackchannelServer // nil: reverse calls are dropped
	reverseDropped atomic.Uint64      // without bcs
}

// TCPStats are a client transport's cumulative counters.
type TCPStats struct {
	Unmatched  uint64 // replies whose XID matched no outstanding call, dropped
	SendErrors uint64 // calls whose write failed (the connection was then lost)
	Reconnects uint64 // connections re-established after a loss
	// ReverseCalls counts the reverse-direction calls handed to the
	// TCPOptions.Backchannel handler; ReverseDropped those dropped (no handler, or
	// BackchannelOptions.MaxRequests in progress).
	ReverseCalls, ReverseDropped uint64
}

// DialTCP connects to addr ("host:port") and returns a transport that redials addr
// whenever the connection is lost.
func DialTCP(ctx context.Context, addr string, opts *TCPOptions) (*TCPTransport, error) {
	var d net.Dialer
	dial := func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	c, err := dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("oncrpc: dial tcp %s: %w", addr, err)
	}
	t := newTCPTransport(c, opts)
	t.dial = dial
	return t, nil
}

// NewTCPTransport returns a transport over an established connection, which it owns.
// It does not reconnect.
func NewTCPTransport(c net.Conn, opts *TCPOptions) *TCPTransport {
	return newTCPTransport(c, opts)
}

func newTCPTransport(c net.Conn, opts *TCPOptions) *TCPTransport {
	t := &TCPTransport{opts: opts.withDefaults()}
	t.vecs.maxFrag = t.opts.MaxFragment
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.conn, t.gen = c, 1
	if bo := t.opts.Backchannel; bo != nil && bo.Handler != nil {
		t.bcs = NewBackchannelServer(bo, c.RemoteAddr(), t.writeReverseReply)
	}
	t.startReader(c)
	return t
}

// Unmatched returns the number of replies dropped because their XID matched no
// outstanding call (e.g. late replies to calls that timed out).
func (t *TCPTransport) Unmatched() uint64 { return t.pending.Unmatched() }

// Stats returns the transport's counters.
func (t *TCPTransport) Stats() TCPStats {
	st := TCPStats{Unmatched: t.pending.Unmatched(), SendErrors: t.sendErrs.Load(), Reconnects: t.reconnects.Load(),
		ReverseDropped: t.reverseDropped.Load()}
	if t.bcs != nil {
		// Counted by the callback service as it takes a call, before the call can be
		// answered.
		bs := t.bcs.Stats()
		st.ReverseCalls, st.ReverseDropped = bs.Calls, st.ReverseDropped+bs.Dropped
	}
	return st
}

// RoundTrip implements RoundTripper.
func (t *TCPTransport) RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error {
	if t.closed.Load() {
		return ErrClosed
	}
	p, err := t.pending.Add(call, reply)
	if err != nil {
		return err
	}
	t.wmu.Lock()
	if t.broken != nil || t.closed.Load() {
		err := t.broken
		if t.closed.Load() {
			err = ErrClosed
		}
		t.wmu.Unlock()
		return t.pending.Fail(p, err)
	}
	var after func()
	if t.conn != nil && p.Gen != t.gen {
		p.Gen = t.gen
		// A peer that stops reading must not hold the call past its deadline; a
		// timed-out write leaves a partial record, so the connection is then lost.
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline {
			t.conn.SetWriteDeadline(deadline)
		}
		if werr := t.write(t.conn, &call.Msg); werr != nil {
			t.sendErrs.Add(1)
			after = t.loseLocked(t.conn, werr)
		} else if hasDeadline {
			t.conn.SetWriteDeadline(time.Time{})
		}
	}
	// With no connection, the reconnection resends the call.
	t.wmu.Unlock()
	if after != nil {
		after()
	}
	return t.pending.Wait(ctx, p)
}

// write sends m as one record with one vectored write. t.wmu is held.
func (t *TCPTransport) write(c net.Conn, m *Message) error {
	t.vecs.build(m)
	t.nb = t.vecs.iov
	_, err := t.nb.WriteTo(c)
	return err
}

func (t *TCPTransport) startReader(c net.Conn) {
	t.readers.Add(1)
	go func() {
		defer t.readers.Done()
		err := t.readLoop(c)
		var tooLarge *RecordTooLargeError
		if errors.As(err, &tooLarge) {
			// The reply cannot be matched to its call, and retransmitting would only
			// bring it back: fail the outstanding calls rather than resend them.
			t.pending.FailAll(fmt.Errorf("oncrpc: reply from %v: %w", c.RemoteAddr(), err))
		}
		t.connLost(c, err)
	}()
}

func (t *TCPTransport) readLoop(c net.Conn) error {
	rr := NewRecordReader(bufio.NewReaderSize(c, tcpBufferSize), t.opts.MaxRecord)
	var buf []byte // one per connection, at most MaxRecord, reused for every reply
	for {
		var err error
		buf, err = rr.ReadRecord(buf[:0])
		if err != nil {
			return err
		}
		if !isReply(buf) {
			if isCall(buf) {
				t.serveReverse(c, buf) // a reverse-direction call from the server
			} else {
				t.pending.unmatched.Add(1) // too short to be an RPC message
			}
			continue
		}
		p := t.pending.Claim(binary.BigEndian.Uint32(buf))
		if p == nil {
			continue
		}
		p.Reply.Inline = append(p.Reply.Inline[:0], buf...)
		p.Reply.Placed = p.Reply.Placed[:0]
		p.Complete(nil)
	}
}

// connLost handles the end of connection c: once per connection, it closes c and
// either starts reconnecting or fails every outstanding call.
func (t *TCPTransport) connLost(c net.Conn, cause error) {
	t.wmu.Lock()
	after := t.loseLocked(c, cause)
	t.wmu.Unlock()
	after()
}

// loseLocked is connLost with t.wmu held, so that no other call is written to a
// connection known to be dead. It returns what to do once t.wmu is released.
func (t *TCPTransport) loseLocked(c net.Conn, cause error) (after func()) {
	nothing := func() {}
	if t.conn != c {
		return nothing
	}
	t.conn = nil
	c.Close()
	if t.closed.Load() {
		return nothing
	}
	if t.dial == nil {
		broken := fmt.Errorf("oncrpc: tcp connection to %v lost: %w", c.RemoteAddr(), cause)
		t.broken = broken
		return func() { t.pending.FailAll(broken) }
	}
	t.opts.Logger.Info("tcp connection lost, reconnecting", "remote", c.RemoteAddr().String(), "error", cause)
	if t.reconnecting {
		return nothing
	}
	t.reconnecting = true
	remote := c.RemoteAddr()
	return func() { go t.reconnect(remote) }
}

// reconnect redials with exponential backoff, then retransmits outstanding calls.
func (t *TCPTransport) reconnect(remote net.Addr) {
	delay := t.opts.ReconnectBackoff
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(delay):
		}
		c, err := t.dial(t.ctx)
		if err != nil {
			t.opts.Logger.Debug("reconnect failed", "remote", remote.String(), "error", err)
			delay = min(2*delay, time.Second)
			continue
		}
		t.wmu.Lock()
		t.reconnecting = false
		if t.closed.Load() {
			t.wmu.Unlock()
			c.Close()
			return
		}
		t.conn = c
		t.gen++
		t.reconnects.Add(1)
		t.startReader(c)
		var werr error
		n := 0
		// Bound the resend so that a peer that does not read cannot hold the table.
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		t.pending.Each(func(p *PendingCall) {
			if werr == nil {
				p.Gen = t.gen
				werr = t.write(c, &p.Call.Msg)
				n++
			}
		})
		c.SetWriteDeadline(time.Time{})
		after := func() {}
		if werr != nil {
			t.sendErrs.Add(1)
			after = t.loseLocked(c, werr)
		}
		t.wmu.Unlock()
		t.opts.Logger.Info("tcp reconnected", "remote", c.RemoteAddr().String(), "retransmitted", n)
		after()
		return
	}
}

// Close closes the connection and fails outstanding and later calls with ErrClosed.
func (t *TCPTransport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.cancel()
	t.wmu.Lock()
	c := t.conn
	t.conn = nil
	t.wmu.Unlock()
	var err error
	if c != nil {
		err = c.Close()
	}
	t.readers.Wait()
	t.pending.FailAll(ErrClosed)
	if t.bcs != nil {
		t.bcs.Close()
	}
	return err
}

// TCPListener accepts ONC RPC connections over TCP for a Server.
type TCPListener struct {
	l     *net.TCPListener
	opts  TCPOptions
	guard *connguard.Set // connection limit and idle sweeper
	bc    bcCounters     // its connections' reverse directions, summed
}

// ListenTCP listens on addr ("host:port"; port 0 picks one).
func ListenTCP(addr string, opts *TCPOptions) (*TCPListener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("oncrpc: listen tcp %s: %w", addr, err)
	}
	o := opts.withDefaults()
	g := connguard.New(connguard.Config{Max: o.MaxConns, IdleTimeout: o.IdleTimeout, Logger: o.Logger})
	return &TCPListener{l: l.(*net.TCPListener), opts: o, guard: g}, nil
}

// Accept waits for a connection or for ctx to be done. Connections past
// TCPOptions.MaxConns are closed at once and Accept goes on waiting.
func (l *TCPListener) Accept(ctx context.Context) (ServerConn, error) {
	for {
		c, err := l.accept(ctx)
		if err != nil {
			return nil, err
		}
		if !l.guard.Admit(c.RemoteAddr()) {
			c.SetLinger(0) // a reset: the client learns at once
			c.Close()
			continue
		}
		sc := newTCPServerConn(c, &l.opts, l.guard)
		sc.bcSum = &l.bc
		l.guard.Track(sc)
		return sc, nil
	}
}

// accept waits for the next TCP connection.
func (l *TCPListener) accept(ctx context.Context) (*net.TCPConn, error) {
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		l.l.SetDeadline(aLongTimeAgo)
		close(woken)
	})
	c, err := l.l.AcceptTCP()
	if !stop() {
		<-woken // then clear the deadline for the next Accept
		l.l.SetDeadline(time.Time{})
		if c != nil {
			c.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return nil, fmt.Errorf("oncrpc: accept: %w (%w)", ErrClosed, err)
		}
		return nil, fmt.Errorf("oncrpc: accept: %w", err)
	}
	c.SetNoDelay(true)
	return c, nil
}

// Close stops listening (and sweeping for idle connections; those accepted stay open).
func (l *TCPListener) Close() error {
	err := l.l.Close()
	l.guard.Close()
	return err
}

// Addr returns the listening address.
func (l *TCPListener) Addr() net.Addr { return l.l.Addr() }

// tcpServerConn is the server side of one TCP connection.
type tcpServerConn struct {
	c           net.Conn
	rr          *RecordReader
	sendTimeout time.Duration
	log         hclog.Logger

	// Activity for the listener's idle sweeper (connguard.Conn): reads counts the
	// socket reads that returned data, calls the calls read and replies the calls
	// answered or dropped; a call is in progress while they differ.
	rd      activityReader
	calls   atomic.Uint64
	replies atomic.Uint64
	guard   *connguard.Set // the listener's, or nil
	closed  atomic.Bool

	smu     sync.Mutex // guards watched, stop
	watched context.Context
	stop    func() bool

	wmu  sync.Mutex
	vecs recordVecs
	nb   net.Buffers

	pool sync.Pool // *tcpCall

	bcMu  sync.Mutex // serializes the creation of bc
	bc    atomic.Pointer[tcpBackchannel]
	bcSum *bcCounters // the listener's, or nil
}

type tcpCall struct {
	ServerCall
	buf []byte
}

// NewTCPServerConn returns a ServerConn over an accepted connection, which it owns.
// (The idle timeout and the connection limit are the listener's: they do not apply.)
func NewTCPServerConn(c net.Conn, opts *TCPOptions) ServerConn {
	return newTCPServerConn(c, opts, nil)
}

func newTCPServerConn(c net.Conn, opts *TCPOptions, guard *connguard.Set) *tcpServerConn {
	o := opts.withDefaults()
	sc := &tcpServerConn{c: c, guard: guard, sendTimeout: o.SendTimeout, log: o.Logger}
	sc.rd.c = c
	sc.rr = NewRecordReader(bufio.NewReaderSize(&sc.rd, tcpBufferSize), o.MaxRecord)
	sc.vecs.maxFrag = o.MaxFragment
	return sc
}

// activityReader counts the reads of a connection that returned data.
type activityReader struct {
	c     net.Conn
	reads atomic.Uint64
}

func (r *activityReader) Read(p []byte) (int, error) {
	n, err := r.c.Read(p)
	if n > 0 {
		r.reads.Add(1)
	}
	return n, err
}

// Activity implements connguard.Conn: the reads that returned data, and whether a call
// is read and not yet answered.
func (sc *tcpServerConn) Activity() (uint64, bool) {
	return sc.rd.reads.Load(), sc.calls.Load() != sc.replies.Load() || sc.reverseBusy()
}

// reverseBusy reports whether a reverse-direction call waits for its reply.
func (sc *tcpServerConn) reverseBusy() bool {
	bc := sc.bc.Load()
	return bc != nil && bc.pending.Len() > 0
}

// CloseIfIdle implements connguard.Conn: it closes the connection if nothing was read
// since Activity counted reads and no call is in progress.
func (sc *tcpServerConn) CloseIfIdle(reads uint64) bool {
	if sc.rd.reads.Load() != reads || sc.calls.Load() != sc.replies.Load() || sc.reverseBusy() {
		return false
	}
	sc.Close()
	return true
}

// ReadCall reads the next record. Only one goroutine calls it at a time.
func (sc *tcpServerConn) ReadCall(ctx context.Context) (*ServerCall, error) {
	sc.smu.Lock()
	if ctx != sc.watched {
		if sc.stop != nil {
			sc.stop()
		}
		sc.watched = ctx
		sc.stop = context.AfterFunc(ctx, func() { sc.c.SetReadDeadline(aLongTimeAgo) })
	}
	sc.smu.Unlock()
	tc, _ := sc.pool.Get().(*tcpCall)
	if tc == nil {
		tc = new(tcpCall)
		tc.Cookie = tc
	}
	for {
		var err error
		tc.buf, err = sc.rr.ReadRecord(tc.buf[:0])
		if err != nil {
			sc.pool.Put(tc)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		bc := sc.bc.Load()
		if bc == nil || !isReply(tc.buf) {
			break
		}
		bc.receive(tc.buf) // a reply to a reverse-direction call
	}
	tc.Msg = Message{Inline: tc.buf}
	sc.calls.Add(1)
	return &tc.ServerCall, nil
}

// WriteReply sends reply as one record and recycles call.
func (sc *tcpServerConn) WriteReply(call *ServerCall, reply *Message) error {
	tc, ok := call.Cookie.(*tcpCall)
	if !ok {
		return errors.New("oncrpc: WriteReply with a call from another transport")
	}
	var err error
	if reply != nil {
		sc.wmu.Lock()
		if sc.sendTimeout > 0 {
			// Under wmu: the deadline covers this write only, not its wait for the lock.
			sc.c.SetWriteDeadline(time.Now().Add(sc.sendTimeout))
		}
		sc.vecs.build(reply)
		sc.nb = sc.vecs.iov
		_, err = sc.nb.WriteTo(sc.c)
		sc.wmu.Unlock()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				sc.log.Warn("peer took no reply data within the send timeout; closing", "remote", sc.c.RemoteAddr().String(), "timeout", sc.sendTimeout)
			}
			// A partial record corrupts the stream: end the connection.
			sc.c.Close()
			err = fmt.Errorf("oncrpc: writing reply to %v: %w", sc.c.RemoteAddr(), err)
		}
	}
	sc.replies.Add(1)
	tc.Msg = Message{}
	if cap(tc.buf) > maxPooledBuffer {
		tc.buf = nil
	}
	sc.pool.Put(tc)
	return err
}

// Close closes the connection.
func (sc *tcpServerConn) Close() error {
	sc.smu.Lock()
	if sc.stop != nil {
		sc.stop()
	}
	sc.smu.Unlock()
	first := !sc.closed.Swap(true)
	if first && sc.guard != nil {
		sc.guard.Leave(sc)
	}
	err := sc.c.Close()
	if first {
		sc.bcMu.Lock() // Backchannel creates no bc after this
		bc := sc.bc.Load()
		sc.bcMu.Unlock()
		if bc != nil {
			bc.connClosed()
		}
	}
	return err
}

// RemoteAddr returns the peer's address.
func (sc *tcpServerConn) RemoteAddr() net.Addr { return sc.c.RemoteAddr() }
