package credits

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrClosed is returned by Window.Acquire after Close.
var ErrClosed = errors.New("credits: window closed")

// Window is a requester's credit window for one transport connection. Credits are valid
// only on the connection that granted them (RFC 8166 §3.3.3): a new connection gets a
// new Window. The zero value is not usable; use NewWindow.
type Window struct {
	mu      sync.Mutex
	max     int // cap on the window: the credits the requester asks for
	granted int // current window size (at least 1)
	inUse   int // credits held by calls (and owed RDMA_DONEs)
	closed  bool
	waiters []chan struct{} // FIFO of blocked Acquire calls
	free    []chan struct{} // recycled waiter channels
}

// NewWindow returns a window that starts with one credit and never grows beyond max
// (values below 1 mean 1). max is also the rdma_credit value the requester should put in
// its calls (Window.Max).
func NewWindow(max int) *Window {
	if max < 1 {
		max = 1
	}
	return &Window{max: max, granted: 1}
}

// Max returns the cap on the window, the number of credits to request.
func (w *Window) Max() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// SetMax changes the cap on the window (values below 1 mean 1), e.g. after a CONF_RDMA
// negotiation. A window above the new cap shrinks at once; credits already held are not
// revoked.
func (w *Window) SetMax(n int) {
	w.mu.Lock()
	w.max = max(n, 1)
	w.granted = min(w.granted, w.max)
	w.wakeLocked()
	w.mu.Unlock()
}

// Granted returns the current window size.
func (w *Window) Granted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.granted
}

// InUse returns the number of credits currently held.
func (w *Window) InUse() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inUse
}

// Acquire waits until a credit is available and takes it, or returns ctx.Err() (or
// ErrClosed after Close). Waiters are served in arrival order.
func (w *Window) Acquire(ctx context.Context) error { return w.AcquireWithin(ctx, nil) }

// ErrExpired is AcquireWithin's answer when its expiry came before a credit.
var ErrExpired = errors.New("credits: no credit before the expiry")

// AcquireWithin is Acquire that also gives up, with ErrExpired, when expired delivers
// first (a caller's per-try timer; nil never does).
func (w *Window) AcquireWithin(ctx context.Context, expired <-chan time.Time) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if len(w.waiters) == 0 && w.inUse < w.granted {
		w.inUse++
		w.mu.Unlock()
		return nil
	}
	var ch chan struct{}
	if n := len(w.free); n > 0 {
		ch = w.free[n-1]
		w.free = w.free[:n-1]
	} else {
		ch = make(chan struct{}, 1)
	}
	w.waiters = append(w.waiters, ch)
	w.mu.Unlock()

	var err error
	select {
	case <-ch:
		// The credit was handed over by wake (inUse already counts it), or Close woke us.
		w.mu.Lock()
		closed := w.closed
		w.free = append(w.free, ch)
		w.mu.Unlock()
		if closed {
			// Close hands no credit over; nothing to give back.
			return ErrClosed
		}
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
		err = ErrExpired
	}
	w.mu.Lock()
	removed := false
	for i, c := range w.waiters {
		if c == ch {
			w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
			removed = true
			break
		}
	}
	if !removed && !w.closed {
		// wake handed us a credit concurrently: give it back.
		<-ch
		w.inUse--
		w.wakeLocked()
	} else if !removed {
		<-ch
	}
	w.free = append(w.free, ch)
	w.mu.Unlock()
	return err
}

// TryAcquire takes a credit if one is available without waiting.
func (w *Window) TryAcquire() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.waiters) > 0 || w.inUse >= w.granted {
		return false
	}
	w.inUse++
	return true
}

// Release returns a credit taken by Acquire or TryAcquire.
func (w *Window) Release() {
	w.mu.Lock()
	if w.inUse > 0 {
		w.inUse--
	}
	w.wakeLocked()
	w.mu.Unlock()
}

// Update applies the rdma_credit value of a received reply: the window becomes grant,
// with 0 treated as 1 (RFC 8166 §3.3.1 forbids a zero grant to a requester with nothing
// outstanding; Linux does the same to avoid deadlock) and values above Max capped. A
// smaller window takes effect as calls complete: credits already held are not revoked.
// Call it for each message in the order the messages arrive, before the credit of the
// call a message answers is released: the responder counts on the requester following
// the grant it received last (Conn).
func (w *Window) Update(grant uint32) {
	w.mu.Lock()
	g := int(min(grant, uint32(w.max)))
	if g < 1 {
		g = 1
	}
	w.granted = g
	w.wakeLocked()
	w.mu.Unlock()
}

// Close wakes every waiter with ErrClosed; later Acquire calls fail.
func (w *Window) Close() {
	w.mu.Lock()
	w.closed = true
	for _, ch := range w.waiters {
		ch <- struct{}{}
	}
	w.waiters = w.waiters[:0]
	w.mu.Unlock()
}

// wakeLocked hands free credits to waiters in order.
func (w *Window) wakeLocked() {
	for len(w.waiters) > 0 && w.inUse < w.granted && !w.closed {
		ch := w.waiters[0]
		copy(w.waiters, w.waiters[1:])
		w.waiters = w.waiters[:len(w.waiters)-1]
		w.inUse++
		ch <- struct{}{}
	}
}
