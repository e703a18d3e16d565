package soft

import (
	"runtime"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestCrowdCounts drives crowd.note with a clock of its own: a QP counts once
// per epoch, the previous epoch's count carries over one epoch and no
// further, and the device is crowded when either count exceeds GOMAXPROCS.
func TestCrowdCounts(t *testing.T) {
	var now int64
	c := crowd{clock: func() int64 { return now }}
	const epoch = 1 << crowdEpochShift
	procs := runtime.GOMAXPROCS(0)
	qps := make([]int64, procs+1) // each QP's last counted epoch

	// procs QPs posting, several times each, in one epoch: not crowded.
	for round := 0; round < 3; round++ {
		for i := 0; i < procs; i++ {
			if c.note(&qps[i]) {
				t.Fatalf("crowded with %d QPs posting and GOMAXPROCS %d", i+1, procs)
			}
		}
	}
	if n := c.n.Load(); n != int32(procs) {
		t.Fatalf("counted %d QPs, want %d: a QP counts once per epoch", n, procs)
	}
	// One more: crowded.
	if !c.note(&qps[procs]) {
		t.Fatalf("not crowded with %d QPs posting and GOMAXPROCS %d", procs+1, procs)
	}
	// Next epoch: one QP posts; the previous epoch's count still holds.
	now += epoch
	if !c.note(&qps[0]) {
		t.Fatal("not crowded in the epoch after a crowded one")
	}
	if n, p := c.n.Load(), c.prev.Load(); n != 1 || p != int32(procs+1) {
		t.Fatalf("counts %d (previous %d), want 1 (%d)", n, p, procs+1)
	}
	// The epoch after that: only the one QP of the last epoch counts.
	now += epoch
	if c.note(&qps[0]) {
		t.Fatal("still crowded two epochs after the crowded one")
	}
	// After a gap of epochs with no post, nothing carries over.
	now += 5 * epoch
	if c.note(&qps[1]) {
		t.Fatal("crowded after a gap")
	}
	if n, p := c.n.Load(), c.prev.Load(); n != 1 || p != 0 {
		t.Fatalf("after a gap: counts %d (previous %d), want 1 (0)", n, p)
	}
}

// TestSpinWakeOnlyWhenNotCrowded checks that PostSend, writing a Send itself
// outside the receive context, wakes the writer to keep a thread spinning
// while its device is not crowded, and not once the device is.
func TestSpinWakeOnlyWhenNotCrowded(t *testing.T) {
	const n, size = 10, 100
	var now int64
	cli, srv := connectPair(t, pairConfig{
		client: Config{SiwKick: -1},
		depth:  2 * n,
		beforeAccept: func(e *endpoint) {
			for i := 0; i < 2*n; i++ {
				mr := e.reg(t, make([]byte, size), verbs.AccessLocalWrite)
				if err := e.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: mr, Length: size}}}); err != nil {
					t.Fatal(err)
				}
			}
		},
		beforeDial: func(e *endpoint) {
			// Frozen: every post lands in one epoch.
			e.qp.(*queuePair).dev.crowd.clock = func() int64 { return now }
		},
	})
	q := cli.qp.(*queuePair)
	src := cli.reg(t, make([]byte, size), 0)
	spinWakes := func() uint64 {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.spinWakes
	}
	send := func(i int) {
		t.Helper()
		waitWriterIdle(t, cli.qp)
		if err := cli.qp.PostSend(&verbs.SendWR{ID: 100 + uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: src, Length: size}}}); err != nil {
			t.Fatal(err)
		}
		cli.expect(t, 100+uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
		srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
	}
	for i := 0; i < n; i++ {
		send(i)
	}
	// A post also wakes the writer, but for another reason, when it finds
	// the writer not parked yet after the last one's wake-up.
	w0 := spinWakes()
	if w0 < n/2 {
		t.Fatalf("%d spin wake-ups for %d Sends on an uncrowded device, want about one each", w0, n)
	}
	// As many other QPs as there are processors posted in this epoch.
	q.dev.crowd.n.Add(int32(runtime.GOMAXPROCS(0)))
	for i := n; i < 2*n; i++ {
		send(i)
	}
	if w := spinWakes(); w != w0 {
		t.Fatalf("%d spin wake-ups for %d Sends on a crowded device, want none", w-w0, n)
	}
}
