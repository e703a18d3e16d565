package rpcrdma

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestSQSlotsTryTake(t *testing.T) {
	var s sqSlots
	s.init(3)
	if !s.tryTake(2) {
		t.Fatal("tryTake(2) of 3 free failed")
	}
	if s.tryTake(2) {
		t.Fatal("tryTake(2) of 1 free succeeded")
	}
	if !s.tryTake(1) || s.tryTake(1) {
		t.Fatal("the last slot was not taken exactly once")
	}
	s.give(3)
	if got := s.free.Load(); got != 3 {
		t.Fatalf("free after giving back everything: %d, want 3", got)
	}
}

// TestSQSlotsWaitersAllWake blocks more takers than there are slots and gives the
// slots back one by one from other goroutines: every taker must get one (a lost
// wake-up hangs the test), and the count must end where it started.
func TestSQSlotsWaitersAllWake(t *testing.T) {
	const depth, takers, rounds = 2, 16, 50
	var s sqSlots
	s.init(depth)
	stopped := make(chan struct{})
	var wg sync.WaitGroup
	for range takers {
		wg.Go(func() {
			for range rounds {
				if err := s.take(context.Background(), stopped); err != nil {
					t.Error(err)
					return
				}
				s.give(1)
			}
		})
	}
	wg.Wait()
	if got := s.free.Load(); got != depth {
		t.Fatalf("free at the end: %d, want %d", got, depth)
	}
	if got := s.waiters.Load(); got != 0 {
		t.Fatalf("waiters at the end: %d, want 0", got)
	}
}

func TestSQSlotsTakeGivesUp(t *testing.T) {
	var s sqSlots
	s.init(1)
	if !s.tryTake(1) {
		t.Fatal("tryTake of the only slot failed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.take(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("take with a cancelled context: %v, want context.Canceled", err)
	}
	stopped := make(chan struct{})
	close(stopped)
	if err := s.take(context.Background(), stopped); err != errSQStopped {
		t.Fatalf("take on a stopped endpoint: %v, want errSQStopped", err)
	}
	if got := s.waiters.Load(); got != 0 {
		t.Fatalf("waiters after giving up: %d, want 0", got)
	}
	s.give(1)
	if err := s.take(context.Background(), stopped); err != nil {
		t.Fatalf("take with a slot free: %v", err)
	}
}
