// Package connguard bounds the connections of one server listener, for every transport:
// at most Config.Max are open at once (Admit refuses the others and warns about it at a
// limited rate), and one that has had no call for Config.IdleTimeout is closed by a
// sweeper goroutine (one per Set, not a timer per connection), unless a call is in
// progress on it.
//
// A connection reports its activity as a count that moves with every call (or with
// every read of call bytes) and whether a call is in progress (Conn.Activity); the
// transport keeps that count however is cheapest on its per-call path, and the sweeper
// only compares it with what it saw at the previous sweep. An idle connection is thus
// closed between IdleTimeout and IdleTimeout plus a sweep period (IdleTimeout/4) after
// its last activity: by the fourth sweep after the one that saw that activity.
package connguard

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Conn is a connection a Set watches for idleness.
type Conn interface {
	// Activity returns a count that moves whenever the connection receives a call (or
	// bytes of one) and whether a call is in progress on it.
	Activity() (count uint64, busy bool)
	// CloseIfIdle closes the connection if its count is still count and no call is in
	// progress, and reports whether it did. The check and the close are one step as far
	// as the transport can make them so: a call that arrives as the connection is being
	// closed must not be processed half-way.
	CloseIfIdle(count uint64) bool
	// RemoteAddr is the peer's address, for logs.
	RemoteAddr() net.Addr
}

// Config configures a Set.
type Config struct {
	// Max is the most connections open at once; 0 or less means no limit.
	Max int
	// IdleTimeout closes a connection with no call for that long; 0 or less means never.
	IdleTimeout time.Duration
	// WarnEvery is the least time between two warnings about refused connections.
	// Default DefaultWarnEvery.
	WarnEvery time.Duration
	// Logger receives the warnings (refused connections) and the idle closes (Debug).
	// Default: none.
	Logger hclog.Logger
}

// DefaultWarnEvery is the default Config.WarnEvery.
const DefaultWarnEvery = 10 * time.Second

// Set is the connections of one listener: their count against the limit and the idle
// sweeper. Its methods are safe for concurrent use.
type Set struct {
	cfg  Config
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	open   int // admitted, not yet left
	conns  map[Conn]*idleState
	closed bool

	refused atomic.Uint64
	reaped  atomic.Uint64
	sweeps  atomic.Uint64
	// tracked and left move under mu with conns, tracked before a connection is
	// added and left after it is removed, so tracked-left is len(conns) and left
	// never passes tracked (Stats loads left first).
	tracked atomic.Uint64 // connections Tracked, ever
	left    atomic.Uint64 // Tracked connections that Left

	warnMu   sync.Mutex
	lastWarn time.Time
	unwarned uint64 // refusals since the last warning

	buf []Conn // sweeper's snapshot, reused
}

// idleState is what the sweeper remembers of a connection.
type idleState struct {
	count uint64
	since time.Time // when count last moved (or the connection was last busy)
	// swept: since is the time of the sweep that saw the count move (or the
	// connection busy), not of Track, so later sweeps come whole periods after it.
	swept bool
}

// New returns a Set and starts its sweeper when cfg.IdleTimeout is positive. Close
// stops it.
func New(cfg Config) *Set {
	if cfg.WarnEvery <= 0 {
		cfg.WarnEvery = DefaultWarnEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s := &Set{cfg: cfg, conns: make(map[Conn]*idleState), stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.IdleTimeout > 0 {
		go s.sweeper()
	} else {
		close(s.done)
	}
	return s
}

// Admit takes a place for a new connection from remote, or, with Max connections
// already open, counts and (at a limited rate) logs the refusal and returns false: the
// transport then refuses the connection. An admitted connection is either Tracked
// (and Left when it closes) or Released.
func (s *Set) Admit(remote net.Addr) bool {
	s.mu.Lock()
	if s.cfg.Max <= 0 || s.open < s.cfg.Max {
		s.open++
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	total := s.refused.Add(1)
	now := time.Now()
	s.warnMu.Lock()
	s.unwarned++
	if now.Sub(s.lastWarn) >= s.cfg.WarnEvery {
		s.cfg.Logger.Warn("connection limit reached; refusing connections", "limit", s.cfg.Max, "remote", addrString(remote), "refused", s.unwarned, "refused_total", total)
		s.lastWarn, s.unwarned = now, 0
	}
	s.warnMu.Unlock()
	return false
}

// Release gives back the place of an admitted connection that was never Tracked.
func (s *Set) Release() {
	s.mu.Lock()
	s.open--
	s.mu.Unlock()
}

// Track starts watching an admitted connection for idleness. Tracking one already
// tracked restarts its idle time and counts nothing.
func (s *Set) Track(c Conn) {
	count, _ := c.Activity()
	s.mu.Lock()
	if _, ok := s.conns[c]; !ok {
		s.tracked.Add(1) // before Leave can see c: left never passes tracked
	}
	s.conns[c] = &idleState{count: count, since: time.Now()}
	s.mu.Unlock()
}

// Leave forgets a Tracked connection that closed and gives back its place. Calling it
// again for the same connection does nothing.
func (s *Set) Leave(c Conn) {
	s.mu.Lock()
	if _, ok := s.conns[c]; ok {
		delete(s.conns, c)
		s.open--
		s.left.Add(1)
	}
	s.mu.Unlock()
}

// Open returns the number of admitted connections not yet Left or Released.
func (s *Set) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// Stats are a Set's counters.
type Stats struct {
	Refused uint64 // connections refused for the limit
	Reaped  uint64 // connections closed for idleness
	Sweeps  uint64 // idle sweeps done
	Tracked uint64 // connections accepted and Tracked
	Left    uint64 // Tracked connections that closed (Left)
}

// Stats returns the Set's counters. They are read one by one, not as one snapshot,
// but Left is read before Tracked and never passes it, so Left <= Tracked even while
// connections come and go.
func (s *Set) Stats() Stats {
	left := s.left.Load()
	if testHookStats != nil {
		testHookStats()
	}
	return Stats{Refused: s.refused.Load(), Reaped: s.reaped.Load(), Sweeps: s.sweeps.Load(), Tracked: s.tracked.Load(), Left: left}
}

// testHookStats, when not nil, runs in Stats between its reads of left and tracked:
// a test makes a connection come and go there.
var testHookStats func()

// Close stops the sweeper and waits for it. The connections stay open.
func (s *Set) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	<-s.done
}

// sweepPeriod is the time between two sweeps.
func (s *Set) sweepPeriod() time.Duration { return max(s.cfg.IdleTimeout/4, time.Millisecond) }

// sweeper runs sweep every IdleTimeout/4 until Close.
func (s *Set) sweeper() {
	defer close(s.done)
	t := time.NewTicker(s.sweepPeriod())
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.sweep(now)
		}
	}
}

// sweep closes the connections idle since IdleTimeout before now. A connection's
// idle time, once a sweep saw its last activity, runs between sweeps, which come a
// period apart give or take a tick's jitter: the sweep four periods later may find a
// few microseconds less than IdleTimeout (over a third of the time on a loaded
// machine). So that the connection goes at that sweep, not a whole period later, such
// an idle time within half a period of IdleTimeout counts as IdleTimeout. (One idle
// since Track, at no sweep's time, needs the whole of it.)
func (s *Set) sweep(now time.Time) {
	swept := s.cfg.IdleTimeout - s.sweepPeriod()/2
	s.mu.Lock()
	buf := s.buf[:0]
	for c := range s.conns {
		buf = append(buf, c)
	}
	s.mu.Unlock()
	for i, c := range buf {
		buf[i] = nil
		count, busy := c.Activity()
		s.mu.Lock()
		st := s.conns[c]
		s.mu.Unlock()
		if st == nil { // left meanwhile
			continue
		}
		if busy || count != st.count {
			st.count, st.since, st.swept = count, now, true
			continue
		}
		idle := now.Sub(st.since)
		if (idle >= s.cfg.IdleTimeout || st.swept && idle >= swept) && c.CloseIfIdle(count) {
			s.reaped.Add(1)
			s.cfg.Logger.Debug("closed idle connection", "remote", addrString(c.RemoteAddr()), "idle", idle.Round(time.Second).String())
			s.Leave(c) // in case the transport's close did not
		}
	}
	s.buf = buf[:0]
	s.sweeps.Add(1)
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
