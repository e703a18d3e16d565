package soft

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// compQueue is the software provider's verbs.CQ: a fixed ring of
// completions allocated once at creation.
type compQueue struct {
	dev    *Device
	mu     sync.Mutex
	ring   []verbs.Completion
	head   int // oldest
	n      int // count
	err    error
	closed bool
	notify chan struct{} // capacity 1: "something changed"
}

var _ verbs.CQ = (*compQueue)(nil)

// CreateCQ creates a completion queue holding up to depth completions.
func (d *Device) CreateCQ(depth int) (verbs.CQ, error) {
	if depth <= 0 || depth > 1<<20 {
		return nil, fmt.Errorf("soft: CreateCQ: depth %d out of range [1, %d]", depth, 1<<20)
	}
	return &compQueue{dev: d, ring: make([]verbs.Completion, depth), notify: make(chan struct{}, 1)}, nil
}

// push appends a completion. A full ring marks the CQ overrun (ibverbs
// IBV_EVENT_CQ_ERR); the completion is dropped.
func (c *compQueue) push(wc *verbs.Completion) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.n == len(c.ring) {
		if c.err == nil {
			c.err = &verbs.CQOverrunError{Depth: len(c.ring)}
		}
	} else {
		i := c.head + c.n
		if i >= len(c.ring) {
			i -= len(c.ring)
		}
		c.ring[i] = *wc
		c.n++
	}
	c.mu.Unlock()
	c.signal()
}

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
	for k < len(wc) && c.n > 0 {
		wc[k] = c.ring[c.head]
		c.ring[c.head] = verbs.Completion{} // drop references
		c.head++
		if c.head == len(c.ring) {
			c.head = 0
		}
		c.n--
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
		switch {
		case closed:
			return fmt.Errorf("soft: Wait: %w", verbs.ErrClosed)
		case n > 0:
			// Pass the wake-up on, in case another goroutine waits too.
			c.signal()
			return nil
		case err != nil:
			return err
		}
		select {
		case <-c.notify:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *compQueue) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
	return nil
}
