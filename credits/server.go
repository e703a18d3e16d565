package credits

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// FairShare grants each connection an equal share of Total, Total/Conns, but not more
// than it asked for (a requester asking for 0 is treated as asking for 1). It is the
// default policy.
var FairShare Policy = PolicyFunc(func(s State) int {
	share := s.Total / max(s.Conns, 1)
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
}

// Server shares credits between the connections of one listener.
type Server struct {
	cfg   Config
	conns atomic.Int64 // open connections; atomic, so grants on one connection never wait for another's
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
	return &Server{cfg: cfg}
}

// Config returns the configuration in effect (defaults filled in).
func (s *Server) Config() Config { return s.cfg }

// Conns returns the number of open connections.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// Open registers a new connection that keeps PerConn receives posted for calls.
func (s *Server) Open() *Conn { return s.OpenWithReceives(s.cfg.PerConn) }

// OpenWithReceives registers a new connection that has n receives posted for calls
// (see Conn.SetReceives; values below 1 mean 1).
func (s *Server) OpenWithReceives(n int) *Conn {
	s.conns.Add(1)
	c := &Conn{s: s, requested: 1, receives: max(n, 1)}
	c.limit = c.grantLocked()
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
type Conn struct {
	s           *Server
	mu          sync.Mutex
	requested   uint32
	outstanding int
	limit       int // calls allowed outstanding: the grants still in force
	receives    int // receives posted for calls: the most any grant may be
	overruns    int
	closed      bool
}

// Arrive accounts for a received call that asked for requested credits (its
// rdma_credit) and says whether to process it. An Accepted call must be matched by one
// Done when it has been answered; Overrun and Disconnect calls must not.
func (c *Conn) Arrive(requested uint32) Verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requested = requested
	if c.outstanding >= c.limit {
		c.overruns++
		if c.overruns > c.s.cfg.MaxOverruns {
			return Disconnect
		}
		return Overrun
	}
	c.outstanding++
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

// Outstanding returns the number of Accepted calls not yet Done.
func (c *Conn) Outstanding() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outstanding
}

// Grant returns the rdma_credit value to put in the next message sent on the
// connection. A lower grant than before takes effect once the requester's outstanding
// calls have drained to it; until then its earlier calls are not counted as overruns.
func (c *Conn) Grant() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.grantLocked()
	if g >= c.limit || c.outstanding <= g {
		c.limit = g
	}
	return uint32(g)
}

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
// is using them (at least half of them outstanding), and the policy would grant more.
// It returns 0 when no growth is needed. The transport posts the receives, then calls
// SetReceives. Growth at most doubles the receives at a time, and waits for the
// requester to be granted (and to use) what it added before adding more.
func (c *Conn) Grow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if 2*c.outstanding < c.receives || c.receives > c.limit || c.receives >= c.s.cfg.PerConn {
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
	g := s.cfg.Policy.Grant(State{
		Requested:   c.requested,
		Outstanding: c.outstanding,
		Conns:       n,
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
	c.closed = true
	c.mu.Unlock()
	c.s.conns.Add(-1)
}
