package rpcrdma

import (
	"context"
	"errors"
	"sync"
)

// errSendFreeStopped is what sendFreeList.get returns when the endpoint stopped or
// closed while it waited.
var errSendFreeStopped = errors.New("rpcrdma: send buffers stopped")

// sendFreeList holds the indexes of an endpoint's free send buffers. Taking and
// giving back an index is a slice operation under a mutex, not a channel operation
// (a buffered channel of indexes cost about 150-200 instructions each, and a call
// takes and gives back a send buffer on each side). A taker that finds none waits on
// wake, which a giver signals only when someone waits, as sqSlots does.
type sendFreeList struct {
	mu   sync.Mutex
	free []int // capacity: the pool's maximum, so put never reallocates
	wakeup
}

// init makes an empty list for a pool of at most max buffers.
func (l *sendFreeList) init(max int) {
	l.free = make([]int, 0, max)
	l.wakeup.init()
}

// tryGet takes a free index if there is one.
func (l *sendFreeList) tryGet() (int, bool) {
	l.mu.Lock()
	n := len(l.free)
	if n == 0 {
		l.mu.Unlock()
		return -1, false
	}
	i := l.free[n-1]
	l.free = l.free[:n-1]
	l.mu.Unlock()
	return i, true
}

// put gives back index i and wakes a waiter, if any.
func (l *sendFreeList) put(i int) {
	l.mu.Lock()
	l.free = append(l.free, i)
	l.mu.Unlock()
	l.notify()
}

// get takes a free index, waiting for one until ctx is done (it returns ctx.Err())
// or stopped or closing is closed (it returns errSendFreeStopped, for the caller to
// replace with why). No wake-up is lost, for the reasons sqSlots.take gives.
func (l *sendFreeList) get(ctx context.Context, stopped, closing <-chan struct{}) (int, error) {
	if i, ok := l.tryGet(); ok {
		return i, nil
	}
	l.waiters.Add(1)
	defer l.waiters.Add(-1)
	for {
		if i, ok := l.tryGet(); ok {
			if l.waiters.Load() > 1 && l.hasFree() {
				l.signal()
			}
			return i, nil
		}
		select {
		case <-l.wake:
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-stopped:
			return -1, errSendFreeStopped
		case <-closing:
			return -1, errSendFreeStopped
		}
	}
}

// hasFree reports whether an index is free now.
func (l *sendFreeList) hasFree() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.free) > 0
}
