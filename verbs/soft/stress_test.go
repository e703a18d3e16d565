package soft

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestStressMixedThenClose runs Sends, Writes and Reads from several
// goroutines at once while the peer re-posts receives and re-registers
// memory, then tears the connection down in the middle of it. Every posted
// work request must complete exactly once (successfully or flushed), and
// nothing may leak.
func TestStressMixedThenClose(t *testing.T) {
	checkGoroutines(t)
	const depth = 32
	cli, srv := connectPair(t, pairConfig{client: Config{MaxFPDU: 700}, depth: depth, beforeAccept: func(e *endpoint) {}})
	srvMem := srv.reg(t, make([]byte, 1<<16), verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	recvMem := srv.reg(t, make([]byte, depth*4096), verbs.AccessLocalWrite)
	for i := 0; i < depth; i++ {
		srv.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: recvMem, Offset: i * 4096, Length: 4096}}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Server: re-post every receive as it completes.
	var srvDone sync.WaitGroup
	srvDone.Add(1)
	go func() {
		defer srvDone.Done()
		wc := make([]verbs.Completion, 16)
		for {
			n, err := srv.cq.Poll(wc)
			if err != nil {
				return
			}
			for _, c := range wc[:n] {
				if c.Status != verbs.StatusSuccess {
					return
				}
				srv.qp.PostRecv(&verbs.RecvWR{ID: c.ID, SGL: []verbs.SGE{{MR: recvMem, Offset: int(c.ID) * 4096, Length: 4096}}})
			}
			if n == 0 {
				if srv.cq.Wait(ctx) != nil {
					return
				}
			}
		}
	}()
	// Client: three posters share the send queue; a counter tracks
	// completions per ID.
	src := cli.reg(t, make([]byte, 1<<16), verbs.AccessLocalWrite)
	var mu sync.Mutex
	posted := map[uint64]bool{}
	completed := map[uint64]int{}
	var credits = make(chan struct{}, depth/2) // bound in-flight sends below the receive depth
	for i := 0; i < depth/2; i++ {
		credits <- struct{}{}
	}
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; ; i++ {
				select {
				case <-credits:
				case <-ctx.Done():
					return
				}
				id := uint64(g)<<32 | uint64(i)
				n := rng.Intn(3000)
				off := rng.Intn(1<<16 - 3000)
				wr := verbs.SendWR{ID: id, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: src, Offset: off, Length: n}}}
				switch rng.Intn(3) {
				case 0:
					wr.Op = verbs.OpSend
				case 1:
					wr.Op, wr.RemoteSTag, wr.RemoteTO = verbs.OpWrite, srvMem.RKey(), srvMem.Addr()+uint64(off)
				case 2:
					wr.Op, wr.RemoteSTag, wr.RemoteTO = verbs.OpRead, srvMem.RKey(), srvMem.Addr()+uint64(off)
				}
				mu.Lock()
				posted[id] = true
				mu.Unlock()
				if err := cli.qp.PostSend(&wr); err != nil {
					mu.Lock()
					delete(posted, id)
					mu.Unlock()
					credits <- struct{}{}
					if cli.qp.State() != verbs.StateRTS {
						return
					}
					continue
				}
			}
		}()
	}
	// Completion reaper.
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		wc := make([]verbs.Completion, 8)
		for {
			n, err := cli.cq.Poll(wc)
			if err != nil {
				return
			}
			mu.Lock()
			for _, c := range wc[:n] {
				completed[c.ID]++
				if c.Status != verbs.StatusSuccess && c.Status != verbs.StatusFlushed {
					t.Errorf("WR %#x: %v (%v)", c.ID, c.Status, c.Err)
				}
			}
			mu.Unlock()
			for range wc[:n] {
				select {
				case credits <- struct{}{}:
				default:
				}
			}
			if n == 0 {
				wctx, wcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				err := cli.cq.Wait(wctx)
				wcancel()
				if err != nil && ctx.Err() != nil {
					return
				}
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	// Tear down mid-flight: the server side goes away.
	srv.qp.Close()
	<-cli.qp.Done()
	cancel()
	wg.Wait()
	// Let the reaper collect the flushes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		missing := 0
		for id := range posted {
			if completed[id] == 0 {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d work requests never completed", missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cli.cq.Close()
	<-reaped
	mu.Lock()
	defer mu.Unlock()
	for id, n := range completed {
		if n != 1 {
			t.Errorf("WR %#x completed %d times", id, n)
		}
		if !posted[id] {
			t.Errorf("completion for unposted WR %#x", id)
		}
	}
	t.Logf("%d work requests posted", len(posted))
	if len(posted) < 10 {
		t.Errorf("only %d work requests posted", len(posted))
	}
	srvDone.Wait()
}
