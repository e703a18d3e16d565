package rpcrdma

import (
	"context"
	"errors"
	"sync/atomic"
)

// errSQStopped is what sqSlots.take returns when the endpoint stopped while it waited.
var errSQStopped = errors.New("rpcrdma: send queue stopped")

// sqSlots counts an endpoint's free send-queue slots. Taking and giving back a
// slot is an atomic operation on the count, not a channel operation (a buffered
// channel of tokens took the channel's lock for each, about 150 instructions, and
// every call takes and gives back at least one slot on each side). A taker that
// finds none waits on wake, which a giver signals only when someone waits.
type sqSlots struct {
	free  atomic.Int64
	depth int
	wakeup
}

// wakeup is how takers of sqSlots and sendFreeList wait for a giver: a waiter counts
// itself in waiters and waits on wake, which a giver signals only when someone waits.
type wakeup struct {
	waiters atomic.Int32
	wake    chan struct{} // capacity 1: one pending wake-up
}

func (w *wakeup) init() { w.wake = make(chan struct{}, 1) }

// notify wakes a waiter, if any; a giver calls it after giving back.
func (w *wakeup) notify() {
	if w.waiters.Load() > 0 {
		w.signal()
	}
}

func (w *wakeup) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is pending already; its taker passes it on
	}
}

// init makes depth slots free.
func (s *sqSlots) init(depth int) {
	s.depth = depth
	s.wakeup.init()
	s.free.Store(int64(depth))
}

// tryTake takes k slots if k are free now.
func (s *sqSlots) tryTake(k int) bool {
	for {
		f := s.free.Load()
		if f < int64(k) {
			return false
		}
		if s.free.CompareAndSwap(f, f-int64(k)) {
			return true
		}
	}
}

// give gives back k slots and wakes a waiter, if any.
func (s *sqSlots) give(k int) {
	s.free.Add(int64(k))
	s.notify()
}

// take takes one slot, waiting for one until ctx is done (it returns ctx.Err()) or
// stopped is closed (it returns errSQStopped, for the caller to replace with why).
//
// No wake-up is lost: a waiter counts itself in waiters before it looks at free, and
// a giver adds to free before it looks at waiters, so either the waiter sees the
// slot or the giver sees the waiter. A waiter that takes a slot and sees more slots
// free and more waiters passes the wake-up on, since only one can be pending.
func (s *sqSlots) take(ctx context.Context, stopped <-chan struct{}) error {
	if s.tryTake(1) {
		return nil
	}
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	for {
		if s.tryTake(1) {
			if s.free.Load() > 0 && s.waiters.Load() > 1 {
				s.signal()
			}
			return nil
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-stopped:
			return errSQStopped
		}
	}
}
