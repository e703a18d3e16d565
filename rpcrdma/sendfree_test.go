package rpcrdma

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

// TestSendFreeListWaitersAllWake has more takers than buffers, each taking and
// giving back an index many times: every taker must get one (a lost wake-up hangs
// the test), no index may be held twice at once, and every index must be free at
// the end.
func TestSendFreeListWaitersAllWake(t *testing.T) {
	const nbuf, takers, rounds = 2, 16, 50
	var l sendFreeList
	l.init(nbuf)
	for i := range nbuf {
		l.put(i)
	}
	var held [nbuf]sync.Mutex // TryLock fails if an index is handed out twice
	var wg sync.WaitGroup
	for range takers {
		wg.Go(func() {
			for range rounds {
				i, err := l.get(context.Background(), nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if !held[i].TryLock() {
					t.Errorf("index %d handed out while held", i)
					return
				}
				runtime.Gosched() // hold it a while
				held[i].Unlock()
				l.put(i)
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for {
		i, ok := l.tryGet()
		if !ok {
			break
		}
		seen[i] = true
	}
	if len(seen) != nbuf {
		t.Fatalf("free at the end: %v, want %d distinct indexes", seen, nbuf)
	}
	if got := l.waiters.Load(); got != 0 {
		t.Fatalf("waiters at the end: %d, want 0", got)
	}
}

func TestSendFreeListGetGivesUp(t *testing.T) {
	var l sendFreeList
	l.init(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.get(ctx, nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("get with a cancelled context: %v, want context.Canceled", err)
	}
	done := make(chan struct{})
	close(done)
	if _, err := l.get(context.Background(), done, nil); err != errSendFreeStopped {
		t.Fatalf("get on a stopped endpoint: %v, want errSendFreeStopped", err)
	}
	if _, err := l.get(context.Background(), nil, done); err != errSendFreeStopped {
		t.Fatalf("get on a closing endpoint: %v, want errSendFreeStopped", err)
	}
	if got := l.waiters.Load(); got != 0 {
		t.Fatalf("waiters after giving up: %d, want 0", got)
	}
	l.put(0)
	if i, err := l.get(context.Background(), done, done); err != nil || i != 0 {
		t.Fatalf("get with index 0 free: %d, %v", i, err)
	}
}
