//go:build linux

package nfsd

import (
	"context"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"testing"
	"time"
)

// waitFor polls cond until it holds, for at most a minute (or until shortly before
// the test's deadline): far longer than any of these waits takes, and short enough
// that a failure does not take all of CI's time. No timing is asserted.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	const most = time.Minute
	start := time.Now()
	for !cond() {
		if time.Since(start) > most {
			t.Fatalf("gave up waiting for %s after %v", what, most)
		}
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

// TestHostileMemoryStalledReplies: the same flood with a short send timeout. The
// server closes the connections that take no data (RDMA: Sends and RDMA Writes not
// completing; TCP: a reply write not finishing), which ends their calls: everything
// they held goes back to the budget and the heap, and the server still serves.
func TestHostileMemoryStalledReplies(t *testing.T) {
	const qd = 64
	s := startHostileServer(t, Config{SendTimeout: 300 * time.Millisecond, ReadTimeout: -1})
	good := s.dialRDMA(t, s.info.RDMA.String())
	base := heapInUse()
	b := s.info.Budget
	for _, tcp := range []bool{false, true} {
		h := s.startHostile(t, qd, tcp)
		waitFor(t, "the hostile calls to hold memory", func() bool { return b.InUse() >= 4<<20 })
		// Nothing else will release it: only the stall timeout closing the connection.
		waitFor(t, "the stalled connection to be closed and its memory released", func() bool { return b.InUse() == 0 })
		h.stop()
	}
	after := heapInUse()
	t.Logf("heap in use: %d MiB before, %d MiB after the stalled connections were closed", base>>20, after>>20)
	if grown := int64(after) - int64(base); grown > 24<<20 {
		t.Errorf("heap still %d MiB above its level before the attack", grown>>20)
	}
	buf := make([]byte, 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, _, err := good.Read(ctx, good.fh, 0, buf); err != nil || n != len(buf) {
		t.Fatalf("READ after the attack: n=%d err=%v", n, err)
	}
}

// TestHostileMemoryStalledReadChunk: a WRITE of 1 MiB whose read chunk the client
// never lets the server read (its RDMA Reads go unanswered) holds a reassembly
// buffer; after the read timeout the connection is closed and the buffer released.
func TestHostileMemoryStalledReadChunk(t *testing.T) {
	s := startHostileServer(t, Config{SendTimeout: -1, ReadTimeout: 300 * time.Millisecond})
	p := newFreezeProxy(t, s.info.RDMA.String())
	c := s.dialRDMA(t, p.Addr())
	p.Freeze()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(ctx, c.fh, 0, make([]byte, 1<<20), nfs3.FileSync)
		done <- err
	}()
	b := s.info.Budget
	waitFor(t, "the WRITE's reassembly buffer to be reserved", func() bool { return b.InUse() >= 1<<20 })
	waitFor(t, "the connection to be closed and the buffer released", func() bool { return b.InUse() == 0 })
	cancel()
	if err := <-done; err == nil {
		t.Error("the stalled WRITE succeeded")
	}
	// The server still serves others.
	good := s.dialRDMA(t, s.info.RDMA.String())
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if _, err := good.Write(wctx, good.fh, 0, make([]byte, 1<<20), nfs3.FileSync); err != nil {
		t.Fatalf("WRITE from a well-behaved client: %v", err)
	}
}
