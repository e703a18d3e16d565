package credits

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// noAging is an ActiveWindow long enough that the sweeper goroutine never runs during a
// test: the tests age the active set with Sweep.
const noAging = time.Hour

// TestServerIdleConnsDoNotDilute: 300 connections that never call leave a working
// connection's grant where it would be alone (the FairShare of 256 used to be
// 256/301 = 0, so 1).
func TestServerIdleConnsDoNotDilute(t *testing.T) {
	s := NewServer(Config{Total: 256, PerConn: 64, ActiveWindow: noAging})
	for i := 0; i < 300; i++ {
		defer s.Open().Close()
	}
	c := s.Open()
	defer c.Close()
	if v := c.Arrive(32); v != Accept {
		t.Fatal(v)
	}
	if g := c.Grant(); g != 32 {
		t.Fatalf("grant %d with 300 idle connections open, want the 32 asked for", g)
	}
	if s.Conns() != 301 || s.Active() != 1 {
		t.Fatalf("%d open, %d active; want 301, 1", s.Conns(), s.Active())
	}
}

// TestServerActiveSetAges: a connection leaves the active set after two sweeps without a
// call and with nothing outstanding; one with a call outstanding never does; the
// shares of the others grow as it leaves, and shrink when it calls again.
func TestServerActiveSetAges(t *testing.T) {
	s := NewServer(Config{Total: 64, PerConn: 64, ActiveWindow: noAging})
	a, b, busy := s.Open(), s.Open(), s.Open()
	defer a.Close()
	defer b.Close()
	defer busy.Close()
	for _, c := range []*Conn{a, b, busy} {
		c.Arrive(64)
		c.Grant()
	}
	a.Done()
	b.Done() // busy keeps its call outstanding
	if got := s.Active(); got != 3 {
		t.Fatalf("active %d, want 3", got)
	}
	a.Arrive(64)
	if g := a.Grant(); g != 64/3 {
		t.Fatalf("grant %d with 3 active, want %d", g, 64/3)
	}
	a.Done()
	s.Sweep() // all three called since the last sweep (there was none)
	if got := s.Active(); got != 3 {
		t.Fatalf("after one sweep: active %d, want 3", got)
	}
	a.Arrive(64) // a calls again between the sweeps, b does not
	a.Done()
	s.Sweep()
	if got := s.Active(); got != 2 {
		t.Fatalf("after two sweeps: active %d, want 2 (b idle)", got)
	}
	for i := 0; i < 3; i++ {
		s.Sweep()
	}
	if got := s.Active(); got != 1 {
		t.Fatalf("after five sweeps: active %d, want 1 (busy has a call outstanding)", got)
	}
	a.Arrive(64)
	if g := a.Grant(); g != 32 {
		t.Fatalf("grant %d with a and busy active, want 32", g)
	}
	a.Done()
	b.Arrive(64) // b comes back
	if g := b.Grant(); g != 64/3 {
		t.Fatalf("b's grant %d on its return, want %d", g, 64/3)
	}
	b.Done()
}

// TestServerCloseIfIdle: only a connection whose call count has not moved and that has
// nothing outstanding is closed; after that its calls are refused and it is out of the
// counts.
func TestServerCloseIfIdle(t *testing.T) {
	s := NewServer(Config{Total: 8, PerConn: 8, ActiveWindow: noAging})
	c := s.Open()
	calls, out := c.Activity()
	if calls != 0 || out != 0 {
		t.Fatalf("fresh connection activity %d, %d", calls, out)
	}
	c.Arrive(8)
	if c.CloseIfIdle(calls) {
		t.Fatal("closed although a call arrived since the count was taken")
	}
	calls, out = c.Activity()
	if calls != 1 || out != 1 {
		t.Fatalf("activity %d, %d; want 1, 1", calls, out)
	}
	if c.CloseIfIdle(calls) {
		t.Fatal("closed with a call outstanding")
	}
	c.Done()
	if s.Active() != 1 {
		t.Fatalf("active %d", s.Active())
	}
	if !c.CloseIfIdle(calls) {
		t.Fatal("idle connection not closed")
	}
	if c.CloseIfIdle(calls) {
		t.Fatal("closed twice")
	}
	if s.Conns() != 0 || s.Active() != 0 {
		t.Fatalf("after close: %d open, %d active", s.Conns(), s.Active())
	}
	if v := c.Arrive(8); v != Disconnect {
		t.Fatalf("call on a closed connection: %v, want Disconnect", v)
	}
	c.Close() // safe after CloseIfIdle
	if s.Conns() != 0 {
		t.Fatalf("Close after CloseIfIdle: %d open", s.Conns())
	}
}

// TestServerSweeperRunsOnlyWhileActive: the sweeper goroutine ages connections out by
// itself and stops once no connection is active.
func TestServerSweeperRunsOnlyWhileActive(t *testing.T) {
	s := NewServer(Config{ActiveWindow: time.Millisecond})
	c := s.Open()
	defer c.Close()
	c.Arrive(1)
	c.Done()
	waitFor(t, "the connection to age out", func() bool { return s.Active() == 0 })
	waitFor(t, "the sweeper to stop", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.ticking
	})
	c.Arrive(1) // active again: a new sweeper
	c.Done()
	waitFor(t, "the connection to age out again", func() bool { return s.Active() == 0 })
	d := s.Open()
	d.Arrive(1)
	d.Close() // closing the last active connection stops the sweeper too
	waitFor(t, "the sweeper to stop after Close", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.ticking && s.Active() == 0
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServerGrantProperties drives random sequences of calls, replies, receive growth,
// sweeps, closes and opens through a Server with a policy that answers anything
// (negative, 0, huge), with calls and replies in transit for random times and replies
// put on the wire out of the order their grants were taken, and checks after every
// step that a grant is never 0, never above PerConn or the receives posted, that the
// calls outstanding never exceed the receives posted (also when the requester
// overruns), that a requester that keeps to the latest grant it received is never
// refused, and that the active count matches the connections.
func TestServerGrantProperties(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		checkGrantProperties(t, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), 1500)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// FuzzServerGrants is TestServerGrantProperties with the fuzzer choosing the seed and the
// length of the run.
func FuzzServerGrants(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(100))
	f.Add(uint64(0xdeadbeef), uint64(7), uint16(3000))
	f.Fuzz(func(t *testing.T, a, b uint64, steps uint16) {
		checkGrantProperties(t, rand.New(rand.NewPCG(a, b)), int(steps))
	})
}

// modelConn is a requester, and what is in transit between it and the responder, as
// the property test sees them.
type modelConn struct {
	c         *Conn
	grant     uint32   // latest grant received (1 before any)
	inUse     int      // calls sent whose answers have not been received
	toServer  []bool   // calls sent and not yet received, in order: whether each kept to the grant
	srvOut    int      // calls Accepted and not yet answered
	unsent    []uint32 // grants of answers built and not yet posted, in the order taken
	wire      []uint32 // grants of answers posted and not yet received, in posting order
	completed []uint32 // grants of answers posted whose completions have not run, in posting order
}

func checkGrantProperties(t *testing.T, r *rand.Rand, steps int) {
	t.Helper()
	perConn := 1 + r.IntN(80)
	policy := PolicyFunc(func(st State) int {
		switch r.IntN(6) {
		case 0:
			return 0
		case 1:
			return -r.IntN(100)
		case 2:
			return 1 << 40
		case 3:
			return int(st.Requested)
		default:
			return FairShare.Grant(st)
		}
	})
	s := NewServer(Config{Total: 1 + r.IntN(300), PerConn: perConn, Policy: policy, MaxOverruns: 1 << 30, ActiveWindow: noAging})
	maxRecv := map[*Conn]int{}
	var conns []*modelConn
	open := func() {
		n := 1 + r.IntN(4)
		c := s.OpenWithReceives(n)
		maxRecv[c] = n
		conns = append(conns, &modelConn{c: c, grant: 1})
	}
	answer := func(m *modelConn) {
		g := m.c.Grant()
		checkGrant(t, m.c, g, perConn)
		m.unsent = append(m.unsent, g)
	}
	open()
	for step := 0; step < steps; step++ {
		if len(conns) == 0 {
			open()
		}
		m := conns[r.IntN(len(conns))]
		c := m.c
		switch op := r.IntN(100); {
		case op < 25: // the requester sends a call if its grant allows (sometimes not)
			compliant := m.inUse < int(m.grant)
			if !compliant && r.IntN(4) != 0 {
				continue
			}
			m.inUse++
			m.toServer = append(m.toServer, compliant)
		case op < 40: // the responder receives the oldest call in transit
			if len(m.toServer) == 0 {
				continue
			}
			compliant := m.toServer[0]
			m.toServer = m.toServer[1:]
			switch v := c.Arrive(uint32(r.IntN(200))); v {
			case Accept:
				m.srvOut++
			case Overrun:
				if compliant {
					t.Fatalf("step %d: a call within the grant %d received last refused (%d in use)", step, m.grant, m.inUse)
				}
				answer(m) // the ERR_CHUNK answer carries a grant
			default:
				t.Fatalf("step %d: Arrive %v", step, v)
			}
		case op < 55: // an answer is built: grant, then Done, as the transport does
			if m.srvOut == 0 {
				continue
			}
			answer(m)
			c.Done()
			m.srvOut--
		case op < 65: // a built answer is posted, not necessarily the oldest
			if len(m.unsent) == 0 {
				continue
			}
			i := 0 // mostly in order
			if r.IntN(2) == 0 {
				i = r.IntN(len(m.unsent))
			}
			g := m.unsent[i]
			m.unsent = slices.Delete(m.unsent, i, i+1)
			m.wire = append(m.wire, g)
			m.completed = append(m.completed, g)
		case op < 75: // the requester receives the oldest answer on the wire, maybe before its completion runs
			if len(m.wire) == 0 {
				continue
			}
			m.grant = m.wire[0]
			m.wire = m.wire[1:]
			m.inUse--
		case op < 82: // the oldest posted answer's completion reaches the transport
			if len(m.completed) == 0 {
				continue
			}
			c.Sent(m.completed[0])
			m.completed = m.completed[1:]
		case op < 83: // a built answer is dropped (the transport failed to post it)
			if len(m.unsent) == 0 {
				continue
			}
			i := r.IntN(len(m.unsent))
			c.Dropped(m.unsent[i])
			m.unsent = slices.Delete(m.unsent, i, i+1)
		case op < 88: // the transport grows receives when asked
			if n := c.Grow(); n > 0 {
				if n <= c.receives || n > perConn {
					t.Fatalf("step %d: Grow %d with %d receives, PerConn %d", step, n, c.receives, perConn)
				}
				c.SetReceives(n)
				maxRecv[c] = max(maxRecv[c], n)
			}
		case op < 92:
			s.Sweep()
		case op < 94:
			calls, out := c.Activity()
			closed := c.CloseIfIdle(calls)
			if closed != (out == 0) {
				t.Fatalf("step %d: CloseIfIdle %v with %d outstanding", step, closed, out)
			}
			if closed {
				conns = removeConn(conns, m)
			}
		case op < 96:
			c.Close()
			conns = removeConn(conns, m)
		default:
			open()
		}
		// Invariants over every open connection.
		active := 0
		for _, m := range conns {
			c := m.c
			c.mu.Lock()
			if c.outstanding != m.srvOut {
				t.Fatalf("step %d: server counts %d outstanding, model %d", step, c.outstanding, m.srvOut)
			}
			if c.outstanding > maxRecv[c] {
				t.Fatalf("step %d: %d calls outstanding, %d receives posted", step, c.outstanding, maxRecv[c])
			}
			if c.outstanding > 0 && !c.active {
				t.Fatalf("step %d: a connection with calls outstanding is not active", step)
			}
			if c.active {
				active++
			}
			c.mu.Unlock()
		}
		if s.Active() != active || s.Conns() != len(conns) {
			t.Fatalf("step %d: server counts %d open, %d active; want %d, %d", step, s.Conns(), s.Active(), len(conns), active)
		}
	}
	for _, m := range conns {
		m.c.Close()
	}
	if s.Conns() != 0 || s.Active() != 0 {
		t.Fatalf("after closing all: %d open, %d active", s.Conns(), s.Active())
	}
}

func checkGrant(t *testing.T, c *Conn, g uint32, perConn int) {
	t.Helper()
	c.mu.Lock()
	recv := c.receives
	c.mu.Unlock()
	if g == 0 || int(g) > perConn || int(g) > recv {
		t.Fatalf("grant %d: want 1 to min(PerConn %d, receives %d)", g, perConn, recv)
	}
}

func removeConn(conns []*modelConn, m *modelConn) []*modelConn {
	for i, x := range conns {
		if x == m {
			return append(conns[:i], conns[i+1:]...)
		}
	}
	return conns
}
