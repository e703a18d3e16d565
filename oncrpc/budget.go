// Memory budgets: the bytes calls in progress hold (READ reply buffers, reassembled
// calls, received records), bounded across connections and per connection.

package oncrpc

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Budget defaults, chosen so that peers that send calls and never take the replies
// hold tens of MiB, not hundreds: 16 such connections each asking for 64 READs of
// 1 MiB hold at most DefaultBudget plus one reservation each (see Account).
const (
	// DefaultBudget bounds the bytes held by calls in progress across the connections
	// of a Server (and of an rpcrdma Listener): 32 MiB, room for 32 READs or 25
	// WRITEs of 1 MiB in progress at once.
	DefaultBudget = 32 << 20
	// DefaultConnBudget bounds the bytes held by the calls in progress of one
	// connection: 8 MiB, eight 1 MiB READs in progress, which keeps a single client's
	// 1 MiB pipeline busy on this server while four stalled peers cannot take the
	// whole global budget.
	DefaultConnBudget = 8 << 20
)

// A Budget bounds the bytes that calls in progress hold across every connection that
// draws on it through an Account. Accounting is a pair of atomic additions; waiting
// (Account.Reserve, Account.WaitUnder) is the only slow path. A Budget is safe for
// concurrent use; share one between a Server and an RPC-over-RDMA listener to bound
// both together.
type Budget struct {
	limit   int64
	used    atomic.Int64
	waiting atomic.Int32 // len(queue), read without mu on the release path

	mu    sync.Mutex
	queue []*budgetWaiter // oldest first
}

// A budgetWaiter is a caller waiting in Reserve (n bytes) or WaitUnder (n == 0).
type budgetWaiter struct {
	a       *Account
	n       int64
	ready   chan struct{} // one token once granted
	granted bool          // guarded by the Budget's mu
}

var budgetWaiters = sync.Pool{New: func() any { return &budgetWaiter{ready: make(chan struct{}, 1)} }}

// NewBudget returns a Budget of limit bytes; limit <= 0 means no global bound (only
// the Accounts' own bounds apply).
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Limit returns the budget's bound in bytes (<= 0: none).
func (b *Budget) Limit() int64 { return b.limit }

// InUse returns the bytes currently reserved or charged from the budget.
func (b *Budget) InUse() int64 { return b.used.Load() }

// Account returns a new account (one per connection) drawing on b, bounded by limit
// bytes of its own (<= 0: only b's bound applies).
func (b *Budget) Account(limit int64) *Account { return &Account{b: b, limit: limit} }

// over reports whether b is at or over its bound.
func (b *Budget) over() bool { return b.limit > 0 && b.used.Load() >= b.limit }

// release gives back n bytes and serves the waiters, if any.
func (b *Budget) release(n int64) {
	b.used.Add(-n)
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		b.grantLocked()
		b.mu.Unlock()
	}
}

// satisfyLocked takes w's reservation (or checks w's account is not over) and
// reports whether w may go. It runs under b.mu, so a failed reservation is rolled
// back without serving the queue: waiters check again under b.mu anyway.
func (w *budgetWaiter) satisfyLocked() bool {
	if w.n == 0 {
		return !w.a.Over()
	}
	return w.a.tryReserve(w.n, false)
}

// grantLocked lets go, oldest first, every waiter whose reservation now fits, handing
// it the reservation: one release wakes only the callers it lets proceed.
func (b *Budget) grantLocked() {
	q := b.queue[:0]
	for _, w := range b.queue {
		if w.satisfyLocked() {
			w.granted = true
			b.waiting.Add(-1)
			w.ready <- struct{}{}
			continue
		}
		q = append(q, w)
	}
	clear(b.queue[len(q):])
	b.queue = q
}

// wait queues a caller of Reserve (n bytes) or WaitUnder (n == 0) on a's behalf
// until it is granted or ctx ends.
func (b *Budget) wait(ctx context.Context, a *Account, n int64) error {
	w := budgetWaiters.Get().(*budgetWaiter)
	defer budgetWaiters.Put(w)
	w.a, w.n, w.granted = a, n, false
	b.mu.Lock()
	// Counted before the check: a release gives its bytes back before it looks for
	// waiters (release), so either this check sees the bytes or that release sees
	// the count and serves the queue once this caller is in it. Counted after, a
	// release in between would find neither and the caller would wait for the next.
	b.waiting.Add(1)
	if w.satisfyLocked() { // bytes released since the caller's attempt
		b.waiting.Add(-1)
		b.mu.Unlock()
		return nil
	}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted { // granted as ctx ended: the caller has it
		<-w.ready
		return nil
	}
	if i := slices.Index(b.queue, w); i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1) // zeroes the freed slot
	}
	b.waiting.Add(-1)
	return ctx.Err()
}

// An Account is one connection's share of a Budget. A reservation succeeds when it
// keeps both the account and the budget within their bounds, or when the account
// holds no other reservation (only charges, or nothing): every connection can always
// have one call in progress, so a peer that stalls its own connection cannot starve
// the others of all progress. Memory is therefore bounded by the budget plus one
// reservation per connection.
type Account struct {
	b        *Budget
	limit    int64
	used     atomic.Int64 // reserved and charged
	reserved atomic.Int64 // of which reserved
}

// Limit returns the account's own bound in bytes (<= 0: none).
func (a *Account) Limit() int64 { return a.limit }

// InUse returns the bytes the account holds.
func (a *Account) InUse() int64 { return a.used.Load() }

// TryReserve takes n bytes if that keeps the account and its budget within their
// bounds, or if the account holds nothing, and reports whether it did. It never
// blocks.
func (a *Account) TryReserve(n int64) bool { return a.tryReserve(n, true) }

// tryReserve is TryReserve; a failed attempt serves the budget's waiters when serve
// is set (its bytes, counted for a moment, may have made one of them queue).
func (a *Account) tryReserve(n int64, serve bool) bool {
	r := a.reserved.Add(n)
	au := a.used.Add(n)
	bu := a.b.used.Add(n)
	if r == n || ((a.limit <= 0 || au <= a.limit) && (a.b.limit <= 0 || bu <= a.b.limit)) {
		return true
	}
	a.reserved.Add(-n)
	a.used.Add(-n)
	if serve {
		a.b.release(n)
	} else {
		a.b.used.Add(-n)
	}
	return false
}

// Reserve waits until it can take n bytes (see TryReserve) or ctx ends. Waiters are
// served oldest first, as releases make room.
func (a *Account) Reserve(ctx context.Context, n int64) error {
	if a.TryReserve(n) {
		return nil
	}
	return a.b.wait(ctx, a, n)
}

// Charge takes n bytes whatever the bounds: memory already held (a record received)
// is accounted so that later reservations and WaitUnder see it.
func (a *Account) Charge(n int64) {
	a.used.Add(n)
	a.b.used.Add(n)
}

// Release gives back n bytes taken by TryReserve or Reserve.
func (a *Account) Release(n int64) {
	a.reserved.Add(-n)
	a.Uncharge(n)
}

// Uncharge gives back n bytes taken by Charge.
func (a *Account) Uncharge(n int64) {
	a.used.Add(-n)
	a.b.release(n)
}

// Over reports whether the account holds something and it or its budget is at or
// over its bound: a transport stops reading calls from the connection until it is
// not.
func (a *Account) Over() bool {
	u := a.used.Load()
	return u > 0 && ((a.limit > 0 && u >= a.limit) || a.b.over())
}

// WaitUnder waits until Over is false or ctx ends.
func (a *Account) WaitUnder(ctx context.Context) error {
	if !a.Over() {
		return nil
	}
	return a.b.wait(ctx, a, 0)
}
