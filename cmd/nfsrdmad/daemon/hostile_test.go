//go:build linux

package daemon

import (
	"context"
	"testing"
	"time"
)

// waitFor polls cond until it holds; the test's own deadline bounds the wait (no
// timing is asserted).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if d, ok := t.(*testing.T); ok {
			if dl, ok := d.Deadline(); ok && time.Until(dl) < 5*time.Second {
				t.Fatalf("gave up waiting for %s", what)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHostileMemoryReadFlood is the attack of issue #11: clients that each send 64
// READs of 1 MiB with write chunks and never read their socket. With the default
// budgets (32 MiB, 8 MiB per connection) the server's heap stays within tens of MiB
// however long they stay (before budgets: ~570 MiB for 16 clients), and a
// well-behaved client on another connection still gets its READs answered.
func TestHostileMemoryReadFlood(t *testing.T) {
	const clients, qd = 6, 64
	s := startHostileServer(t, Config{SendTimeout: -1, ReadTimeout: -1}) // the stall timeouts have their own test
	good := s.dialRDMA(t, s.info.RDMA.String())
	base := heapInUse()
	var hs []*hostile
	for i := 0; i < clients; i++ {
		// One of them over TCP: the budget is the same for both transports.
		hs = append(hs, s.startHostile(t, qd, i == clients-1))
	}
	b := s.info.Budget
	// The global budget is spent once the hostile calls have reached the server.
	waitFor(t, "the hostile calls to spend the budget", func() bool { return b.InUse() >= b.Limit() })
	buf := make([]byte, 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var peak uint64
	for i := 0; i < 8; i++ {
		n, _, err := good.Read(ctx, good.fh, 0, buf)
		if err != nil || n != len(buf) {
			t.Fatalf("well-behaved READ %d during the attack: n=%d err=%v", i, n, err)
		}
		peak = max(peak, heapInUse())
	}
	grown := int64(peak) - int64(base)
	// Budget (32 MiB) + one 1 MiB READ per connection + 1 MiB per client's sink and
	// the good client's buffer, pools and goroutines: a bound of 96 MiB is generous
	// and still far below the 64 MiB per client the attack took without budgets.
	t.Logf("heap in use: %d MiB before, %d MiB during the attack (+%d MiB); budget in use %d MiB",
		base>>20, peak>>20, grown>>20, b.InUse()>>20)
	if grown > 96<<20 {
		t.Errorf("heap grew by %d MiB under %d clients × %d READs of 1 MiB, want < 96 MiB", grown>>20, clients, qd)
	}
	for _, h := range hs {
		h.stop()
	}
}
