package credits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWindowStartsAtOne(t *testing.T) {
	w := NewWindow(8)
	if !w.TryAcquire() {
		t.Fatal("first credit not available")
	}
	if w.TryAcquire() {
		t.Fatal("second credit available before any grant")
	}
	w.Update(4)
	for i := 0; i < 3; i++ {
		if !w.TryAcquire() {
			t.Fatalf("credit %d of grant 4 not available", i+2)
		}
	}
	if w.TryAcquire() {
		t.Fatal("fifth credit available with grant 4")
	}
}

func TestWindowZeroGrantIsOne(t *testing.T) {
	w := NewWindow(8)
	w.Update(0)
	if g := w.Granted(); g != 1 {
		t.Fatalf("Granted after grant 0 = %d, want 1", g)
	}
	if !w.TryAcquire() {
		t.Fatal("no credit after a zero grant")
	}
}

func TestWindowCap(t *testing.T) {
	w := NewWindow(3)
	w.Update(1000)
	if g := w.Granted(); g != 3 {
		t.Fatalf("Granted = %d, want cap 3", g)
	}
	if NewWindow(0).Max() != 1 {
		t.Fatal("NewWindow(0).Max() != 1")
	}
}

func TestWindowAcquireBlocksUntilRelease(t *testing.T) {
	w := NewWindow(2)
	if err := w.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- w.Acquire(context.Background()) }()
	select {
	case err := <-got:
		t.Fatalf("Acquire returned %v with the window full", err)
	case <-time.After(20 * time.Millisecond):
	}
	w.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := w.InUse(); n != 1 {
		t.Fatalf("InUse = %d, want 1", n)
	}
}

func TestWindowGrantWakesWaiters(t *testing.T) {
	w := NewWindow(4)
	w.TryAcquire()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Acquire(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	w.Update(4)
	wg.Wait()
	if n := w.InUse(); n != 4 {
		t.Fatalf("InUse = %d, want 4", n)
	}
}

func TestWindowAcquireContext(t *testing.T) {
	w := NewWindow(1)
	w.TryAcquire()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Acquire(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	w.Release()
	if !w.TryAcquire() {
		t.Fatal("credit lost after a cancelled waiter")
	}
}

func TestWindowClose(t *testing.T) {
	w := NewWindow(1)
	w.TryAcquire()
	done := make(chan error, 1)
	go func() { done <- w.Acquire(context.Background()) }()
	time.Sleep(5 * time.Millisecond)
	w.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close = %v, want ErrClosed", err)
	}
	if err := w.Acquire(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire on closed window = %v", err)
	}
}

func TestWindowSetMax(t *testing.T) {
	w := NewWindow(8)
	w.Update(8)
	w.SetMax(2)
	if w.Max() != 2 || w.Granted() != 2 {
		t.Fatalf("after SetMax(2): max %d granted %d", w.Max(), w.Granted())
	}
	w.SetMax(0)
	if w.Max() != 1 {
		t.Fatalf("SetMax(0) gives max %d", w.Max())
	}
	w.SetMax(16)
	w.Update(12)
	if w.Granted() != 12 {
		t.Fatalf("granted %d after raising the cap", w.Granted())
	}
}

// TestWindowRaceNeverExceedsGrant hammers a window with acquirers, releasers and
// changing grants and checks the invariant inUse <= granted at every acquisition.
func TestWindowRaceNeverExceedsGrant(t *testing.T) {
	w := NewWindow(16)
	var inFlight, maxSeen atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		g := uint32(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.Update(g % 20)
			g++
			time.Sleep(10 * time.Microsecond)
		}
	}()
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%3)*time.Millisecond+time.Millisecond)
				err := w.Acquire(ctx)
				cancel()
				if err != nil {
					continue
				}
				n := inFlight.Add(1)
				for {
					m := maxSeen.Load()
					if n <= m || maxSeen.CompareAndSwap(m, n) {
						break
					}
				}
				if n > 16 {
					t.Errorf("%d credits in use, cap 16", n)
				}
				inFlight.Add(-1)
				w.Release()
			}
		}(i)
	}
	wg.Wait()
	close(stop)
	if w.InUse() != 0 {
		t.Fatalf("InUse = %d after all releases", w.InUse())
	}
}

func TestServerNeverGrantsZero(t *testing.T) {
	s := NewServer(Config{Total: 4, PerConn: 8})
	var conns []*Conn
	for i := 0; i < 10; i++ {
		conns = append(conns, s.Open())
	}
	for i, c := range conns {
		c.Arrive(0)
		if g := c.Grant(); g != 1 {
			t.Fatalf("conn %d: grant %d with 10 conns sharing 4, want floor 1", i, g)
		}
		c.Done()
	}
	p := NewServer(Config{Policy: PolicyFunc(func(State) int { return 0 })}).Open()
	if g := p.Grant(); g != 1 {
		t.Fatalf("zero policy grant = %d, want 1", g)
	}
}

func TestServerFairShare(t *testing.T) {
	s := NewServer(Config{Total: 64, PerConn: 48})
	a := s.Open()
	a.Arrive(100)
	if g := a.Grant(); g != 48 {
		t.Fatalf("single conn grant %d, want PerConn 48", g)
	}
	a.Done()
	b := s.Open()
	b.Arrive(100)
	if g := b.Grant(); g != 32 {
		t.Fatalf("second conn grant %d, want 64/2", g)
	}
	b.Done()
	b.Arrive(5)
	if g := b.Grant(); g != 5 {
		t.Fatalf("grant %d for a request of 5", g)
	}
	b.Done()
	b.Close()
	b.Close()
	if s.Conns() != 1 {
		t.Fatalf("Conns = %d", s.Conns())
	}
}

func TestServerFixed(t *testing.T) {
	s := NewServer(Config{Total: 10, PerConn: 64, Policy: Fixed})
	for i := 0; i < 5; i++ {
		c := s.Open()
		if g := c.Grant(); g != 64 {
			t.Fatalf("Fixed grant %d, want 64", g)
		}
	}
}

func TestServerOverrun(t *testing.T) {
	s := NewServer(Config{Total: 8, PerConn: 4, MaxOverruns: 2})
	c := s.Open()
	// Before any grant the requester has one credit.
	if v := c.Arrive(4); v != Accept {
		t.Fatalf("first call: %v", v)
	}
	if v := c.Arrive(4); v != Overrun {
		t.Fatalf("second call before a grant: %v, want Overrun", v)
	}
	if g := c.Grant(); g != 4 {
		t.Fatalf("grant %d", g)
	}
	for i := 0; i < 3; i++ {
		if v := c.Arrive(4); v != Accept {
			t.Fatalf("call %d within grant: %v", i, v)
		}
	}
	if v := c.Arrive(4); v != Overrun {
		t.Fatalf("fifth call: %v", v)
	}
	if v := c.Arrive(4); v != Disconnect {
		t.Fatalf("third overrun: %v, want Disconnect", v)
	}
	if c.Outstanding() != 4 {
		t.Fatalf("Outstanding = %d", c.Outstanding())
	}
}

// reply answers one of c's calls as the transport does (grant, Done, then the Send
// and its completion) and returns the grant.
func reply(c *Conn) uint32 {
	g := c.Grant()
	c.Done()
	c.Sent(g)
	return g
}

// arrive delivers one call to c and fails unless the verdict is want.
func arrive(t *testing.T, c *Conn, what string, want Verdict) {
	t.Helper()
	if v := c.Arrive(64); v != want {
		t.Fatalf("%s: %v, want %v", what, v, want)
	}
}

// connGranting returns a connection, with 64 receives posted, of a Server whose
// policy grants *g.
func connGranting(g *int) *Conn {
	s := NewServer(Config{PerConn: 64, Total: 64, Policy: PolicyFunc(func(State) int { return *g })})
	return s.OpenWithReceives(64)
}

// arriveN delivers n calls to c and fails unless each is Accepted.
func arriveN(t *testing.T, c *Conn, n int, what string) {
	t.Helper()
	for i := range n {
		arrive(t, c, fmt.Sprintf("call %d of %s", i+1, what), Accept)
	}
}

// A lower grant binds once it has reached the requester: a call within the higher
// grant the requester held until then is accepted, and after it the lower one holds.
func TestServerShrinkingGrantIsNotOverrun(t *testing.T) {
	s := NewServer(Config{Total: 8, PerConn: 8})
	a := s.Open()
	arrive(t, a, "first call", Accept)
	if g := reply(a); g != 8 {
		t.Fatalf("grant %d, want 8", g)
	}
	arriveN(t, a, 7, "the 8 granted")
	b := s.Open()
	b.Arrive(8) // b is active: a's share drops to 4
	if g := reply(a); g != 4 {
		t.Fatalf("grant after a second connection = %d, want 4", g)
	}
	// The reply carrying 4 is still on its way: the requester has 7 calls in
	// flight of the 8 it was granted.
	arrive(t, a, "call 8 of 8, within the old grant", Accept)
	// The requester receives 4, and the answers to its other seven calls.
	for range 7 {
		reply(a)
	}
	arriveN(t, a, 4, "the 4 granted")
	arrive(t, a, "a fifth call with grant 4", Overrun)
}

// A reply's Send can be posted after later replies' (it waits for its RDMA Writes):
// the requester then follows the older, higher grant, which reached it last, and none
// of the calls within it is refused, even before the Send's completion is reported.
func TestServerGrantOvertakenByTwoLaterReplies(t *testing.T) {
	g := 16
	c := connGranting(&g)
	arrive(t, c, "first call", Accept)
	reply(c) // 16
	for _, call := range []string{"A", "B", "C"} {
		arrive(t, c, "call "+call, Accept)
	}
	gA := c.Grant() // A's Send waits for its Writes
	g = 4           // more connections became active
	gB := c.Grant()
	c.Done()
	gC := c.Grant()
	c.Done()
	c.Done()
	c.Sent(gB)
	c.Sent(gC)
	if gA != 16 || gB != 4 || gC != 4 {
		t.Fatalf("grants %d, %d, %d", gA, gB, gC)
	}
	// A is posted now: the requester receives 4, 4, then 16, and sends calls before
	// A's completion reaches the transport.
	arriveN(t, c, int(gA), fmt.Sprintf("the %d the last grant allows", gA))
	c.Sent(gA)
	// Once the answers carrying 4 have reached the requester, 4 holds.
	for range gA {
		reply(c)
	}
	arriveN(t, c, 4, "the 4 granted")
	arrive(t, c, "a fifth call with grant 4", Overrun)
}

// Grants that grow as the receives do (a new connection), with a lower one put on the
// wire after a higher one and its completion reported before the requester has
// received it: the requester follows the higher grant, which it received last, and
// is never refused. (CI: nfsrdma get answered ERR_CHUNK after a reconnection.)
func TestServerCompletionBeforeArrival(t *testing.T) {
	g := 2
	c := connGranting(&g)
	arrive(t, c, "first call", Accept)
	reply(c) // 2
	arrive(t, c, "call 2", Accept)
	arrive(t, c, "call 3", Accept)
	g2 := c.Grant() // call 2's answer waits for its Writes
	c.Done()
	g = 8
	g3 := c.Grant() // call 3's answer overtakes it
	c.Done()
	c.Sent(g3) // the requester receives 8 with one call in flight
	c.Sent(g2) // 2 is on the wire, and its completion is reported before it arrives
	if g2 != 2 || g3 != 8 {
		t.Fatalf("grants %d, %d", g2, g3)
	}
	arriveN(t, c, 7, "the 7 more grant 8 allows")
	// Not knowing which of the two went out first, the responder places the 8 as
	// late as the third answer (it was the second): one call more gets through.
	arrive(t, c, "an eighth", Accept)
	arrive(t, c, "a ninth", Overrun)
}

// A message dropped before it was sent leaves its grant out of account.
func TestServerDroppedGrant(t *testing.T) {
	g := 4
	c := connGranting(&g)
	arrive(t, c, "first call", Accept)
	reply(c) // 4
	arriveN(t, c, 4, "the 4 granted")
	g = 16
	high := c.Grant() // the answer to one of them, which may yet go out
	c.Done()
	arrive(t, c, "a call while grant 16 may reach the requester", Accept)
	c.Dropped(high) // it never leaves
	arrive(t, c, "a call beyond grant 4, the 16 never sent", Overrun)
}

// TestServerOverrunDoesNotStallOthers: an overrunning connection's extra calls are
// refused and never counted, so a well-behaved connection keeps its full share.
func TestServerOverrunDoesNotStallOthers(t *testing.T) {
	s := NewServer(Config{Total: 8, PerConn: 8, MaxOverruns: 1 << 30})
	bad, good := s.Open(), s.Open()
	bad.Arrive(8)
	good.Arrive(8)
	bad.Grant()
	good.Grant()
	good.Done()
	bad.Done()
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				if bad.Arrive(8) == Accept {
					accepted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := accepted.Load(); n != 4 {
		t.Fatalf("overrunning conn got %d calls accepted, grant 4", n)
	}
	for i := 0; i < 4; i++ {
		if v := good.Arrive(8); v != Accept {
			t.Fatalf("good conn call %d: %v", i, v)
		}
	}
}

func TestVerdictString(t *testing.T) {
	for v, s := range map[Verdict]string{Accept: "Accept", Overrun: "Overrun", Disconnect: "Disconnect", 9: "Verdict(9)"} {
		if v.String() != s {
			t.Errorf("%d: %q", int(v), v.String())
		}
	}
}

func BenchmarkWindowAcquireRelease(b *testing.B) {
	w := NewWindow(64)
	w.Update(64)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := w.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		w.Release()
	}
}

func BenchmarkServerArriveGrantDone(b *testing.B) {
	c := NewServer(Config{}).Open()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Arrive(64)
		c.Grant()
		c.Done()
	}
}

// TestServerGrantsFollowReceives: grants never exceed the receives a connection has
// posted; Grow asks for more (doubling, up to what the policy grants) only once the
// requester has been granted all of them and keeps more than half outstanding.
func TestServerGrantsFollowReceives(t *testing.T) {
	s := NewServer(Config{Total: 256, PerConn: 64, Policy: Fixed})
	c := s.OpenWithReceives(4)
	defer c.Close()
	if g := c.Grant(); g != 4 {
		t.Fatalf("grant %d with 4 receives posted, want 4", g)
	}
	if n := c.Grow(); n != 0 {
		t.Fatalf("Grow %d with nothing outstanding, want 0", n)
	}
	c.Arrive(64)
	if n := c.Grow(); n != 0 {
		t.Fatalf("Grow %d with 1 of 4 outstanding, want 0", n)
	}
	c.Arrive(64)
	if n := c.Grow(); n != 0 {
		t.Fatalf("Grow %d with 2 of 4 outstanding, want 0", n)
	}
	c.Arrive(64)
	if n := c.Grow(); n != 8 {
		t.Fatalf("Grow %d with 3 of 4 outstanding, want 8", n)
	}
	// Until the transport reports the new receives, grants stay within the old ones.
	if g := c.Grant(); g != 4 {
		t.Fatalf("grant %d before SetReceives, want 4", g)
	}
	c.SetReceives(8)
	// Not granted yet: no further growth however many are outstanding.
	c.Arrive(64)
	c.Arrive(64)
	if n := c.Grow(); n != 0 {
		t.Fatalf("Grow %d before the requester was granted the new receives, want 0", n)
	}
	if g := c.Grant(); g != 8 {
		t.Fatalf("grant %d with 8 receives posted, want 8", g)
	}
	c.Arrive(64)
	if n := c.Grow(); n != 16 {
		t.Fatalf("Grow %d with 6 of 8 granted outstanding, want 16", n)
	}
	for r := 16; r < 64; r *= 2 {
		c.SetReceives(r)
		c.Grant()
		for c.Outstanding() <= r/2 {
			c.Arrive(64)
		}
		if n := c.Grow(); n != min(2*r, 64) {
			t.Fatalf("Grow %d at %d receives, want %d", n, r, min(2*r, 64))
		}
	}
	c.SetReceives(64)
	c.Grant()
	for c.Outstanding() < 64 {
		c.Arrive(64)
	}
	if n := c.Grow(); n != 0 {
		t.Fatalf("Grow %d at PerConn, want 0", n)
	}
	// The policy's share bounds growth too.
	fs := NewServer(Config{Total: 8, PerConn: 64})
	d := fs.OpenWithReceives(4)
	defer d.Close()
	d.Arrive(64)
	d.Grant() // the reply to the first call grants the 4 posted receives
	d.Arrive(64)
	d.Arrive(64)
	if n := d.Grow(); n != 8 {
		t.Fatalf("FairShare of 8: Grow %d, want 8", n)
	}
	d.SetReceives(8)
	d.Grant()
	for d.Outstanding() < 8 {
		d.Arrive(64)
	}
	if n := d.Grow(); n != 0 {
		t.Fatalf("FairShare of 8 at 8 receives: Grow %d, want 0", n)
	}
}

// AcquireWithin gives up with ErrExpired when its expiry comes first, taking nothing,
// and otherwise acts as Acquire.
func TestWindowAcquireWithin(t *testing.T) {
	w := NewWindow(4)
	w.Update(1)
	if err := w.AcquireWithin(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	expired := make(chan time.Time, 1)
	expired <- time.Time{}
	if err := w.AcquireWithin(context.Background(), expired); !errors.Is(err, ErrExpired) {
		t.Fatalf("AcquireWithin with every credit held and an expiry: %v, want ErrExpired", err)
	}
	if n := w.InUse(); n != 1 {
		t.Fatalf("InUse = %d after an expired wait, want 1", n)
	}
	w.Release()
	if err := w.AcquireWithin(context.Background(), expired); err != nil {
		t.Fatalf("AcquireWithin with a credit free: %v", err)
	}
}
