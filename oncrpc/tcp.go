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
	// contexts and per-try timeouts).
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

	// wsem is the right to write on the connection, and to use vecs and nb: a
	// one-slot semaphore rather than a mutex, so that a call gives up waiting for its
	// turn when its context ends or its try times out (lockWrite).
	wsem chan struct{}
	vecs recordVecs
	nb   net.Buffers

	// mu guards conn, gen, broken and reconnecting. It is never held across I/O, so
	// that Close and the reader can drop the connection while a write is blocked on
	// it. conn and gen change only with wsem held too.
	mu           sync.Mutex
	conn         net.Conn
	gen          uint64
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
// whenever the connection is lost. It redials from the source address and port of its
// first connection, as the Linux client does, so that a server's duplicate request
// cache, which like knfsd's knows a client by its address and port, recognizes the
// calls retransmitted on the new connection; when that fails (the port is taken, or
// the server refuses it) it dials from a new port and keeps that one.
func DialTCP(ctx context.Context, addr string, opts *TCPOptions) (*TCPTransport, error) {
	d := &tcpDialer{addr: addr}
	c, err := d.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("oncrpc: dial tcp %s: %w", addr, err)
	}
	return newTCPTransport(c, opts, d), nil
}

// tcpDialer dials a server for a TCPTransport, reusing its source port (Linux's
// xprtsock keeps the port of its first connection, transport->srcport, for every
// reconnection). The transport aborts a lost connection (abort), so that the port is
// not held in TIME_WAIT.
type tcpDialer struct {
	addr string
	log  hclog.Logger // set before the transport starts; nil for the first dial

	mu    sync.Mutex
	local *net.TCPAddr // the source address to reuse; nil: none yet
}

// dial connects from d.local, failing that from a new port, which it then keeps.
func (d *tcpDialer) dial(ctx context.Context) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var reuseErr error
	if d.local != nil {
		nd := net.Dialer{LocalAddr: d.local, Control: reuseAddr}
		c, err := nd.DialContext(ctx, "tcp", d.addr)
		if err == nil || ctx.Err() != nil {
			return c, err
		}
		reuseErr = err
	}
	// A new port from bind(2), with SO_REUSEADDR: bind picks one no other socket
	// holds (connect(2) alone may pick one another connection's TIME_WAIT shares,
	// which a later bind to it would find taken), and the flag lets the
	// reconnection bind it again over this connection's own TIME_WAIT.
	nd := net.Dialer{LocalAddr: &net.TCPAddr{}, Control: reuseAddr}
	c, err := nd.DialContext(ctx, "tcp", d.addr)
	if err != nil && ctx.Err() == nil {
		var plain net.Dialer
		c, err = plain.DialContext(ctx, "tcp", d.addr)
	}
	if err != nil {
		return nil, err
	}
	if reuseErr != nil && d.log != nil {
		d.log.Warn("reconnected from a new source port: the server's duplicate request cache will not recognize the retransmitted calls",
			"remote", d.addr, "old", d.local.String(), "new", c.LocalAddr().String(), "error", reuseErr)
	}
	if la, ok := c.LocalAddr().(*net.TCPAddr); ok {
		d.local = la
	}
	return c, nil
}

// abort closes c at once with a reset rather than the orderly close that would leave
// the socket in TIME_WAIT on this side, holding the source port the reconnection is
// to reuse (Linux's client likewise aborts the old connection, xs_abort_connection).
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// NewTCPTransport returns a transport over an established connection, which it owns.
// It does not reconnect.
func NewTCPTransport(c net.Conn, opts *TCPOptions) *TCPTransport {
	return newTCPTransport(c, opts, nil)
}

// newTCPTransport returns a transport over c that redials with d (nil: never).
func newTCPTransport(c net.Conn, opts *TCPOptions, d *tcpDialer) *TCPTransport {
	t := &TCPTransport{opts: opts.withDefaults(), wsem: make(chan struct{}, 1)}
	if d != nil {
		// Before the reader starts: it may lose the connection at once.
		d.log = t.opts.Logger
		t.dial = d.dial
	}
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

// RoundTrip implements RoundTripper. The call's context and its try's Timeout bound
// every step: waiting for its turn to write, writing (a peer that stops reading blocks
// the write), and waiting for the reply. A call given up on in the middle of its
// record leaves a partial record on the connection, which is then dropped (and
// redialed by a transport made by DialTCP).
func (t *TCPTransport) RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error {
	if t.closed.Load() {
		return ErrClosed
	}
	p, err := t.pending.Add(call, reply)
	if err != nil {
		return err
	}
	timeout, tryDeadline := p.startTimer()
	if err := t.lockWrite(ctx, timeout); err != nil {
		return t.pending.Fail(p, err)
	}
	t.mu.Lock()
	c, gen, broken := t.conn, t.gen, t.broken
	t.mu.Unlock()
	if broken != nil || t.closed.Load() {
		t.unlockWrite()
		if t.closed.Load() {
			broken = ErrClosed
		}
		return t.pending.Fail(p, broken)
	}
	if c == nil || p.Gen == gen {
		// With no connection, the reconnection resends the call; with p.Gen == gen,
		// it has.
		t.unlockWrite()
		return t.pending.Wait(ctx, p)
	}
	p.Gen = gen
	n, gaveUp, werr := t.send(ctx, c, &call.Msg, tryDeadline)
	if werr == nil {
		t.unlockWrite()
		return t.pending.Wait(ctx, p)
	}
	if gaveUp && n == 0 {
		// Nothing of the record went out: the connection is intact.
		t.unlockWrite()
		return t.pending.Fail(p, werr)
	}
	// A partial record corrupts the stream: drop the connection before another call
	// can be written to it.
	t.sendErrs.Add(1)
	t.mu.Lock()
	after := t.loseLocked(c, fmt.Errorf("writing call xid %#x (%d bytes sent): %w", call.XID, n, werr))
	t.mu.Unlock()
	t.unlockWrite()
	if gaveUp {
		err := t.pending.Fail(p, werr)
		after()
		return err
	}
	after()
	return t.pending.Wait(ctx, p)
}

// lockWrite waits for the right to write (t.wsem), for ctx to be done, for timeout
// to fire (ErrTimeout) or for the transport to close (ErrClosed).
func (t *TCPTransport) lockWrite(ctx context.Context, timeout <-chan time.Time) error {
	select {
	case t.wsem <- struct{}{}:
		return nil
	default:
	}
	select {
	case t.wsem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return ErrTimeout
	case <-t.ctx.Done():
		return ErrClosed
	}
}

// unlockWrite gives the right to write back. The connection's write deadline is then
// clear (or the connection dropped).
func (t *TCPTransport) unlockWrite() { <-t.wsem }

// writeWatchAfter is how long a call's write may stay blocked before its context is
// watched (context.AfterFunc), on a connection whose writes resume after a deadline:
// nearly every write completes at once and does not pay for the watch, which
// allocates. It also bounds how late a cancellation interrupts a blocked write.
const writeWatchAfter = time.Millisecond

// resumable reports whether a write to c that hit its deadline can be taken up
// where it stopped: true of the net package's socket connections, whose writes
// report exactly what went out (a write timeout breaks a tls.Conn, say).
func resumable(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// send writes m as one record on c, with t.wsem held. It gives up when ctx ends or at
// tryDeadline (zero: none) and then reports gaveUp with ctx's error or ErrTimeout. n
// is the bytes of the record that went out. It leaves c's write deadline clear.
func (t *TCPTransport) send(ctx context.Context, c net.Conn, m *Message, tryDeadline time.Time) (n int64, gaveUp bool, err error) {
	t.vecs.build(m)
	t.nb = t.vecs.iov
	limit := tryDeadline
	if d, ok := ctx.Deadline(); ok && (limit.IsZero() || d.Before(limit)) {
		limit = d
	}
	watch := ctx.Done() != nil
	if !watch && limit.IsZero() {
		n, err = t.nb.WriteTo(c) // nothing to honour
		return n, false, err
	}
	if watch && resumable(c) {
		first := time.Now().Add(writeWatchAfter)
		if !limit.IsZero() && !limit.After(first) {
			watch = false // the deadline comes first
		} else {
			c.SetWriteDeadline(first)
			n, err = t.nb.WriteTo(c)
			if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
				c.SetWriteDeadline(time.Time{})
				return n, false, err
			}
			// Still blocked: go on, watching ctx.
		}
	}
	c.SetWriteDeadline(limit) // before the watch, which may set a past deadline at once
	var stop func() bool
	var woken chan struct{}
	if watch {
		woken = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			c.SetWriteDeadline(aLongTimeAgo)
			close(woken)
		})
	}
	more, err := t.nb.WriteTo(c)
	n += more
	if stop != nil && !stop() {
		<-woken // then clear the deadline it set
	}
	c.SetWriteDeadline(time.Time{})
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
			if !tryDeadline.IsZero() && !time.Now().Before(tryDeadline) {
				cause = ErrTimeout
			}
		}
		return n, true, fmt.Errorf("oncrpc: sending call to %v: %w", c.RemoteAddr(), cause)
	}
	return n, false, err
}

// write sends m as one record with one vectored write. t.wsem is held.
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
	t.mu.Lock()
	after := t.loseLocked(c, cause)
	t.mu.Unlock()
	after()
}

// loseLocked is connLost with t.mu held. A writer calls it before giving back t.wsem,
// so that no other call is written to a connection known to be dead. It returns what
// to do once t.mu is released.
func (t *TCPTransport) loseLocked(c net.Conn, cause error) (after func()) {
	nothing := func() {}
	if t.conn != c {
		return nothing
	}
	t.conn = nil
	if t.closed.Load() {
		c.Close()
		return nothing
	}
	if t.dial != nil {
		abort(c) // the reconnection reuses the source port
	} else {
		c.Close()
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

// resendTimeout bounds the retransmission of the outstanding calls on a new
// connection, so that a peer that does not read cannot keep the right to write.
const resendTimeout = 10 * time.Second

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
		// No call is written to the new connection before the retransmissions.
		if t.lockWrite(t.ctx, nil) != nil {
			c.Close()
			return
		}
		t.mu.Lock()
		t.reconnecting = false
		if t.closed.Load() {
			t.mu.Unlock()
			t.unlockWrite()
			c.Close()
			return
		}
		t.conn = c
		t.gen++
		gen := t.gen
		t.reconnects.Add(1)
		t.startReader(c) // under t.mu: before Close waits for the readers
		t.mu.Unlock()
		n, werr := t.resend(c, gen)
		after := func() {}
		if werr != nil {
			t.sendErrs.Add(1)
			t.mu.Lock()
			after = t.loseLocked(c, fmt.Errorf("retransmitting: %w", werr))
			t.mu.Unlock()
		}
		t.unlockWrite()
		t.opts.Logger.Info("tcp reconnected", "remote", c.RemoteAddr().String(), "retransmitted", n)
		after()
		return
	}
}

// resend retransmits on c, with t.wsem held, every outstanding call not yet sent on
// generation gen, and returns how many it sent. Each record is written from a copy
// (PendingCalls.copyForResend), so that the table is not locked while writing: a
// call whose context ends meanwhile is abandoned at once. Close ends the writes by
// closing c.
func (t *TCPTransport) resend(c net.Conn, gen uint64) (int, error) {
	c.SetWriteDeadline(time.Now().Add(resendTimeout))
	defer c.SetWriteDeadline(time.Time{})
	var buf []byte
	n := 0
	for _, xid := range t.pending.xids(nil) {
		var ok bool
		buf, ok = t.pending.copyForResend(xid, gen, &t.vecs, buf[:0])
		if !ok {
			continue
		}
		if _, err := c.Write(buf); err != nil {
			return n, fmt.Errorf("call xid %#x: %w", xid, err)
		}
		n++
	}
	return n, nil
}

// Close closes the connection and fails outstanding and later calls with ErrClosed.
// It does not wait for a call's write in progress: closing the connection ends it.
func (t *TCPTransport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.cancel()
	t.mu.Lock()
	c := t.conn
	t.conn = nil
	t.mu.Unlock()
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
