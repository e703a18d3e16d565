package soft

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// compQueue is the software provider's verbs.CQ: a ring of completions that
// holds up to depth of them. The ring starts small (cqInitRing entries) and
// doubles when a push finds it full, up to depth, so that an idle CQ holds
// little memory; a busy one stops allocating once it has grown to the most it
// ever held at once.
//
// A CQ with a handler (verbs.WithHandler) uses the ring only as a staging
// area: completions are pushed under the QP's lock, as for a polled CQ, and
// the goroutine that pushed them hands them to the handler (deliver) once it
// has released every provider lock, so the handler may post again. One
// goroutine delivers at a time; another that finds delivery in progress leaves
// its completions to it.
type compQueue struct {
	dev    *Device
	mu     sync.Mutex
	ring   []verbs.Completion // len: current capacity, at most depth
	depth  int                // the most completions the CQ holds (overrun beyond)
	head   int                // oldest
	n      int                // count
	err    error
	closed bool
	notify chan struct{} // capacity 1: "something changed"

	handler    verbs.CompletionHandler
	staged     atomic.Int32     // mirrors n for deliver's lock-free check
	delivering atomic.Bool      // a goroutine is in deliver (written under mu; read without it by inDelivery)
	cur        verbs.Completion // the completion being delivered (deliverer only)
	idle       sync.Cond        // Close waits on it for the deliverer (L = &mu)
}

var _ verbs.CQ = (*compQueue)(nil)

// CreateCQ creates a completion queue holding up to depth completions.
func (d *Device) CreateCQ(depth int, opts ...verbs.CQOption) (verbs.CQ, error) {
	if depth <= 0 || depth > 1<<20 {
		return nil, fmt.Errorf("soft: CreateCQ: depth %d out of range [1, %d]", depth, 1<<20)
	}
	o := verbs.ApplyCQOptions(opts)
	c := &compQueue{dev: d, ring: make([]verbs.Completion, min(depth, cqInitRing)), depth: depth,
		notify: make(chan struct{}, 1), handler: o.Handler}
	c.idle.L = &c.mu
	return c, nil
}

// cqInitRing is how many completions a new CQ's ring holds before it first grows.
const cqInitRing = 8

// grow doubles the ring (at most to depth), keeping the completions in order.
// Caller holds mu and has checked that the ring is full and below depth.
func (c *compQueue) grow() {
	ring := make([]verbs.Completion, min(2*len(c.ring), c.depth))
	k := copy(ring, c.ring[c.head:])
	copy(ring[k:], c.ring[:c.head])
	c.ring, c.head = ring, 0
}

// push appends a completion, growing the ring when it is full. A CQ holding
// depth completions is overrun (ibverbs IBV_EVENT_CQ_ERR); the completion is
// dropped. With a handler the caller
// (which holds the QP's lock) must call deliver once it holds no lock.
func (c *compQueue) push(wc *verbs.Completion) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.n == len(c.ring) && c.n < c.depth {
		c.grow()
	}
	if c.n == c.depth {
		if c.err == nil {
			c.err = &verbs.CQOverrunError{Depth: c.depth}
		}
	} else {
		i := c.head + c.n
		if i >= len(c.ring) {
			i -= len(c.ring)
		}
		c.ring[i] = *wc
		c.n++
		if c.handler != nil {
			c.staged.Add(1)
			c.mu.Unlock()
			return
		}
	}
	c.mu.Unlock()
	c.signal()
}

// pop drops the oldest completion (already taken). An emptied ring starts
// again at its first entry, so a CQ that holds one completion at a time, as
// most do, writes and reads the same entry every time rather than a
// different line of memory each, which at many connections is a cache miss
// each. Caller holds mu; c.n > 0.
func (c *compQueue) pop() {
	c.n--
	if c.n == 0 {
		c.head = 0
		return
	}
	c.head++
	if c.head == len(c.ring) {
		c.head = 0
	}
}

// deliver hands staged completions to the handler, unless another goroutine
// is doing so already (it takes them too before it stops). The caller must
// hold no provider lock.
func (c *compQueue) deliver() {
	if c.handler == nil || c.staged.Load() == 0 {
		return
	}
	c.mu.Lock()
	if c.delivering.Load() {
		c.mu.Unlock()
		return
	}
	c.delivering.Store(true)
	for c.n > 0 && !c.closed {
		c.cur = c.ring[c.head]
		c.ring[c.head] = verbs.Completion{}
		c.pop()
		c.staged.Add(-1)
		c.mu.Unlock()
		c.handler(&c.cur)
		c.mu.Lock()
	}
	c.cur = verbs.Completion{}
	c.delivering.Store(false)
	c.idle.Broadcast()
	c.mu.Unlock()
}

// awaitIdle waits until no goroutine is handing completions to the handler
// and reports whether it had to wait. A goroutine whose deliver found another
// delivering left its completions to that one, which takes every staged
// completion before it stops: after awaitIdle, whatever the caller staged has
// reached the handler.
func (c *compQueue) awaitIdle() bool {
	if !c.delivering.Load() {
		return false
	}
	c.mu.Lock()
	for c.delivering.Load() {
		c.idle.Wait()
	}
	c.mu.Unlock()
	return true
}

// inDelivery reports whether a goroutine is handing completions to the
// handler: a PostSend that sees it is (almost always) made by that handler, in
// the receive context.
func (c *compQueue) inDelivery() bool { return c.delivering.Load() }

func (c *compQueue) signal() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *compQueue) Poll(wc []verbs.Completion) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, fmt.Errorf("soft: Poll: %w", verbs.ErrClosed)
	}
	k := 0
	for c.handler == nil && k < len(wc) && c.n > 0 {
		wc[k] = c.ring[c.head]
		c.ring[c.head] = verbs.Completion{} // drop references
		c.pop()
		k++
	}
	if k == 0 && c.err != nil {
		return 0, c.err
	}
	return k, nil
}

func (c *compQueue) Wait(ctx context.Context) error {
	for {
		c.mu.Lock()
		n, err, closed := c.n, c.err, c.closed
		c.mu.Unlock()
		// Whatever ends this Wait ends every other one too, and notify holds a single
		// wake-up (Close and a failing push send one each, however many wait): pass it
		// on, so that the next waiter wakes, sees the same and passes it on in turn.
		// No waiter is left blocked: one that checks after the change sees it, and one
		// already blocked gets the wake-up the waiter before it passed on.
		switch {
		case closed:
			c.signal()
			return fmt.Errorf("soft: Wait: %w", verbs.ErrClosed)
		case n > 0 && c.handler == nil:
			c.signal()
			return nil
		case err != nil:
			c.signal()
			return err
		}
		select {
		case <-c.notify:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close destroys the CQ. Staged completions are dropped; a delivery in
// progress on another goroutine ends (after its current handler call)
// before Close returns.
func (c *compQueue) Close() error {
	c.mu.Lock()
	c.closed = true
	for i := 0; i < c.n; i++ {
		c.ring[(c.head+i)%len(c.ring)] = verbs.Completion{}
	}
	c.n = 0
	c.staged.Store(0)
	for c.delivering.Load() {
		c.idle.Wait()
	}
	c.mu.Unlock()
	c.signal()
	return nil
}
