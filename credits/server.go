package credits

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// State is what a Policy sees when it computes one connection's grant.
type State struct {
	// Requested is the rdma_credit value of the requester's latest call.
	Requested uint32
	// Outstanding is the number of this connection's calls received and not yet
	// answered.
	Outstanding int
	// Conns is the number of open connections, this one included.
	Conns int
	// Active is the number of active connections, this one included: those with calls
	// outstanding or with a call in the last Config.ActiveWindow (see the package
	// documentation). Idle connections, however many, are not counted.
	Active int
	// Total is Config.Total, the receive budget shared by all connections.
	Total int
	// PerConn is Config.PerConn, the most any one connection may be granted.
	PerConn int
}

// Policy decides how many credits to grant one connection. The Server clamps the result
// to [1, PerConn], and further to the receives the connection has posted
// (Conn.SetReceives), so a policy cannot grant 0 or more than a connection's posted
// receives.
type Policy interface {
	Grant(s State) int
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(s State) int

// Grant calls f.
func (f PolicyFunc) Grant(s State) int { return f(s) }

// Fixed grants every connection PerConn credits whatever it asks for and however many
// connections there are: Linux svcrdma's policy (a constant sc_max_requests, 64).
var Fixed Policy = PolicyFunc(func(s State) int { return s.PerConn })

// FairShare grants each active connection an equal share of Total, Total/Active, but
// not more than it asked for (a requester asking for 0 is treated as asking for 1).
// Connections that are open but idle do not dilute the share. It is the default policy.
var FairShare Policy = PolicyFunc(func(s State) int {
	share := s.Total / max(s.Active, 1)
	req := max(int(s.Requested), 1)
	return min(share, req)
})

// Config configures a Server.
type Config struct {
	// Total is the receive budget shared by all connections (the sum of grants the
	// policy aims for). Default 256.
	Total int
	// PerConn is the most one connection may be granted. A connection need not keep
	// PerConn receives posted: grants never exceed what it reports with
	// Conn.SetReceives, and Conn.Grow tells it when to post more. Default 64 (Linux
	// svcrdma's max_requests).
	PerConn int
	// Policy computes grants; nil means FairShare.
	Policy Policy
	// MaxOverruns is how many calls beyond its grant a connection may send before
	// Arrive answers Disconnect; 0 means PerConn. Calls within the count get Overrun.
	MaxOverruns int
	// ActiveWindow is how long a connection with no call and nothing outstanding
	// stays in the active set (State.Active): it leaves it after between one and two
	// ActiveWindows of silence. Default DefaultActiveWindow.
	ActiveWindow time.Duration
}

// DefaultActiveWindow is the default Config.ActiveWindow.
const DefaultActiveWindow = 2 * time.Second

// Server shares credits between the connections of one listener.
type Server struct {
	cfg    Config
	conns  atomic.Int64 // open connections; atomic, so grants on one connection never wait for another's
	active atomic.Int64 // connections in the active set

	mu       sync.Mutex // guards list and ticking; taken after a Conn's mu, never before
	list     map[*Conn]struct{}
	ticking  bool          // the sweeper goroutine runs
	wake     chan struct{} // tells the sweeper to look at the active count now
	sweepMu  sync.Mutex    // serialises sweeps
	sweepBuf []*Conn       // guarded by sweepMu
}

// NewServer returns a Server with cfg's defaults filled in.
func NewServer(cfg Config) *Server {
	if cfg.Total <= 0 {
		cfg.Total = 256
	}
	if cfg.PerConn <= 0 {
		cfg.PerConn = 64
	}
	if cfg.Policy == nil {
		cfg.Policy = FairShare
	}
	if cfg.MaxOverruns <= 0 {
		cfg.MaxOverruns = cfg.PerConn
	}
	if cfg.ActiveWindow <= 0 {
		cfg.ActiveWindow = DefaultActiveWindow
	}
	return &Server{cfg: cfg, list: make(map[*Conn]struct{}), wake: make(chan struct{}, 1)}
}

// Config returns the configuration in effect (defaults filled in).
func (s *Server) Config() Config { return s.cfg }

// Conns returns the number of open connections.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// Active returns the number of connections in the active set (State.Active).
func (s *Server) Active() int { return int(s.active.Load()) }

// Sweep ends the active period of every connection that has had no call since the
// previous sweep and has none outstanding. A goroutine runs it every ActiveWindow while
// any connection is active; calling it too only hastens the aging.
func (s *Server) Sweep() {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	s.mu.Lock()
	buf := s.sweepBuf[:0]
	for c := range s.list {
		buf = append(buf, c)
	}
	s.mu.Unlock()
	for i, c := range buf {
		c.mu.Lock()
		if c.active && c.outstanding == 0 {
			if c.recent {
				c.recent = false
			} else {
				c.active = false
				s.active.Add(-1)
			}
		}
		c.mu.Unlock()
		buf[i] = nil
	}
	s.sweepBuf = buf[:0]
}

// activate counts a connection that joined the active set and starts the sweeper if it
// is not running. The caller holds c.mu (lock order: Conn.mu, then Server.mu).
func (s *Server) activate() {
	if s.active.Add(1) != 1 {
		return
	}
	s.mu.Lock()
	if !s.ticking {
		s.ticking = true
		go s.sweeper()
	}
	s.mu.Unlock()
}

// sweeper runs Sweep every ActiveWindow while any connection is active.
func (s *Server) sweeper() {
	t := time.NewTimer(s.cfg.ActiveWindow)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.Sweep()
			t.Reset(s.cfg.ActiveWindow)
		case <-s.wake:
		}
		s.mu.Lock()
		if s.active.Load() == 0 {
			s.ticking = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// Open registers a new connection that keeps PerConn receives posted for calls.
func (s *Server) Open() *Conn { return s.OpenWithReceives(s.cfg.PerConn) }

// OpenWithReceives registers a new connection that has n receives posted for calls
// (see Conn.SetReceives; values below 1 mean 1).
func (s *Server) OpenWithReceives(n int) *Conn {
	s.conns.Add(1)
	c := &Conn{s: s, requested: 1, receives: max(n, 1), pending: make([]int32, s.cfg.PerConn+1), sentBound: 1}
	c.lastSent = c.grantLocked()
	s.mu.Lock()
	s.list[c] = struct{}{}
	s.mu.Unlock()
	return c
}

// Verdict is Conn.Arrive's decision about a received call.
type Verdict int

// Verdicts.
const (
	// Accept: the call is within the grant; hand it to the upper layer.
	Accept Verdict = iota
	// Overrun: the requester exceeded its grant; answer the call with a transport
	// error instead of processing it (the connection stays up).
	Overrun
	// Disconnect: the requester keeps overrunning; close the connection.
	Disconnect
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Accept:
		return "Accept"
	case Overrun:
		return "Overrun"
	case Disconnect:
		return "Disconnect"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// ErrOverrun describes a requester that sent more calls than it was granted; transports
// wrap it when they disconnect one.
var ErrOverrun = errors.New("credits: requester exceeded its credit grant")

// Conn is one connection's share of a Server.
//
// It polices the requester by counting calls (RFC 8166 §3.3.1). Number the messages
// carrying grants in the order they go on the wire, 1, 2, ...: a requester that has
// received r of them, the last with grant G_r (G_0 = 1, the initial credit of
// §3.3.3), may have sent at most r + G_r calls, since each message answers one call
// and gives its credit back. The responder does not know how many of its messages
// have arrived, so it accepts call k when k is at most the largest r + G_r over the
// messages that may have reached the requester: those reported Sent, each counted at
// its index or above (the number of grants taken when it was reported), and those
// whose grants were taken and not yet reported (at most the grants taken so far plus
// the highest of them). A call beyond every such bound is one no compliant requester
// sends; a reply overtaken by later ones can let a call or two more through, but the
// calls outstanding never exceed the receives posted.
type Conn struct {
	s           *Server
	mu          sync.Mutex
	requested   uint32
	outstanding int
	arrived     uint64  // calls received (Arrive), overruns included: the requester's count of calls sent
	taken       uint64  // grants taken (Grant): an upper bound on the wire index of every message sent so far
	sentBound   uint64  // the largest index + grant over the messages Sent (1 before any)
	lastSent    int     // the grant of the message Sent last (the open's grant before any)
	pending     []int32 // pending[g]: messages carrying grant g taken and not yet Sent or Dropped
	maxPending  int     // the largest g with pending[g] > 0, or 0
	nPending    int     // the sum of pending
	receives    int     // receives posted for calls: the most any grant may be
	overruns    int
	calls       uint64 // Accepted calls, ever
	active      bool   // in the Server's active set
	recent      bool   // a call arrived since the last sweep
	closed      bool
}

// Arrive accounts for a received call that asked for requested credits (its
// rdma_credit) and says whether to process it. An Accepted call must be matched by one
// Done when it has been answered; Overrun and Disconnect calls must not.
func (c *Conn) Arrive(requested uint32) Verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Disconnect
	}
	c.requested = requested
	c.arrived++
	if c.arrived > c.boundLocked() {
		c.overruns++
		if c.overruns > c.s.cfg.MaxOverruns {
			return Disconnect
		}
		return Overrun
	}
	c.outstanding++
	c.calls++
	c.recent = true
	if !c.active {
		c.active = true
		c.s.activate()
	}
	return Accept
}

// Done accounts for an answered (or dropped) Accepted call.
func (c *Conn) Done() {
	c.mu.Lock()
	if c.outstanding > 0 {
		c.outstanding--
	}
	c.mu.Unlock()
}

// Activity returns the number of calls Accepted on the connection so far and how many
// of them are outstanding: a connection whose count has not moved and that has none
// outstanding has been idle since the count was taken (see CloseIfIdle).
func (c *Conn) Activity() (calls uint64, outstanding int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.outstanding
}

// CloseIfIdle closes the connection's share, as Close, if no call has been Accepted
// since Activity returned calls and none is outstanding, and reports whether it did.
// From then on Arrive answers Disconnect, so a call that races with an idle
// connection's teardown is never processed half-way. The transport then closes the
// connection.
func (c *Conn) CloseIfIdle(calls uint64) bool {
	c.mu.Lock()
	if c.closed || c.calls != calls || c.outstanding != 0 {
		c.mu.Unlock()
		return false
	}
	wasActive := c.closeLocked()
	c.mu.Unlock()
	c.s.remove(c, wasActive)
	return true
}

// Outstanding returns the number of Accepted calls not yet Done.
func (c *Conn) Outstanding() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outstanding
}

// Grant returns the rdma_credit value to put in the next message sent on the
// connection, and counts the message as in flight until Sent or Dropped says what
// became of it: every Grant must be followed by exactly one of them with the value it
// returned. Messages may go on the wire in another order than their grants were
// taken (a reply waits for its RDMA Writes, another overtakes it), and may reach the
// requester before their Sent is reported: the grant counts from the moment it is
// taken (see Conn).
func (c *Conn) Grant() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.grantLocked()
	c.taken++
	c.pending[g]++
	c.maxPending = max(c.maxPending, g)
	c.nPending++
	return uint32(g)
}

// Sent reports that the message carrying grant g (from Grant) has been sent, in the
// order the requester receives the connection's messages: a transport calls it from
// the Send's completion.
func (c *Conn) Sent(g uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unpendLocked(g) {
		c.lastSent = int(g)
		// Its index is at most the grants taken so far.
		c.sentBound = max(c.sentBound, c.taken+uint64(g))
	}
}

// Dropped reports that the message carrying grant g (from Grant) will not be sent.
func (c *Conn) Dropped(g uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unpendLocked(g)
}

// unpendLocked takes one message carrying grant g out of flight, and reports whether
// there was one.
func (c *Conn) unpendLocked(g uint32) bool {
	if int(g) >= len(c.pending) || c.pending[g] == 0 {
		return false
	}
	c.pending[g]--
	if c.nPending--; c.nPending == 0 {
		c.maxPending = 0 // the usual case at low queue depth: no walk down
	}
	for c.maxPending > 0 && c.pending[c.maxPending] == 0 {
		c.maxPending--
	}
	return true
}

// boundLocked returns the most calls a requester that follows the grants can have
// sent so far (see Conn).
func (c *Conn) boundLocked() uint64 {
	b := c.sentBound
	if c.nPending > 0 {
		b = max(b, c.taken+uint64(c.maxPending))
	}
	return b
}

// inForceLocked returns the highest grant the requester may be following: the one
// sent last, or one still in flight.
func (c *Conn) inForceLocked() int { return max(c.lastSent, c.maxPending) }

// SetReceives tells the connection how many receives its transport has posted for
// calls (beyond any kept for other traffic): no grant exceeds it from now on. A
// transport raises it only after the receives are posted. Values below 1 mean 1.
func (c *Conn) SetReceives(n int) {
	c.mu.Lock()
	c.receives = max(n, 1)
	c.mu.Unlock()
}

// Grow returns how many receives for calls the connection should have posted, when
// that is more than it has: the requester has been granted all the posted receives and
// is using them (more than half of them outstanding: a client that keeps exactly half
// in flight has all it needs), and the policy would grant more.
// It returns 0 when no growth is needed. The transport posts the receives, then calls
// SetReceives. Growth at most doubles the receives at a time, and waits for the
// requester to be granted (and to use) what it added before adding more.
func (c *Conn) Grow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if 2*c.outstanding <= c.receives || c.receives > c.inForceLocked() || c.receives >= c.s.cfg.PerConn {
		return 0
	}
	want := c.policyLocked()
	if want <= c.receives {
		return 0
	}
	return min(want, 2*c.receives)
}

// grantLocked computes the policy's grant clamped to [1, min(PerConn, receives)].
func (c *Conn) grantLocked() int {
	return max(1, min(c.policyLocked(), c.receives))
}

// policyLocked computes the policy's grant clamped to [1, PerConn].
func (c *Conn) policyLocked() int {
	s := c.s
	n := int(s.conns.Load())
	active := int(s.active.Load())
	if !c.active {
		active++ // counts itself: it is asking
	}
	g := s.cfg.Policy.Grant(State{
		Requested:   c.requested,
		Outstanding: c.outstanding,
		Conns:       n,
		Active:      max(active, 1),
		Total:       s.cfg.Total,
		PerConn:     s.cfg.PerConn,
	})
	return max(1, min(g, s.cfg.PerConn))
}

// Close removes the connection from the Server's share. It is safe to call twice.
func (c *Conn) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	wasActive := c.closeLocked()
	c.mu.Unlock()
	c.s.remove(c, wasActive)
}

// closeLocked marks the connection closed and reports whether it was in the active
// set. The caller holds c.mu and then calls Server.remove.
func (c *Conn) closeLocked() (wasActive bool) {
	c.closed = true
	wasActive, c.active = c.active, false
	return wasActive
}

// remove takes a closed connection out of the counts.
func (s *Server) remove(c *Conn, wasActive bool) {
	s.conns.Add(-1)
	if wasActive && s.active.Add(-1) == 0 {
		select {
		case s.wake <- struct{}{}: // let the sweeper stop now
		default:
		}
	}
	s.mu.Lock()
	delete(s.list, c)
	s.mu.Unlock()
}
