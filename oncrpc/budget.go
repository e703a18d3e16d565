// Memory budgets: the bytes calls in progress hold (READ reply buffers, reassembled
// calls, received records), bounded across connections and per connection.

package oncrpc

import (
	"context"
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
	waiting atomic.Int32

	mu   sync.Mutex
	wake chan struct{} // closed and replaced on a release while someone waits
}

// NewBudget returns a Budget of limit bytes; limit <= 0 means no global bound (only
// the Accounts' own bounds apply).
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit, wake: make(chan struct{})}
}

// Limit returns the budget's bound in bytes (<= 0: none).
func (b *Budget) Limit() int64 { return b.limit }

// InUse returns the bytes currently reserved or charged from the budget.
func (b *Budget) InUse() int64 { return b.used.Load() }

// Account returns a new account (one per connection) drawing on b, bounded by limit
// bytes of its own (<= 0: only b's bound applies).
func (b *Budget) Account(limit int64) *Account { return &Account{b: b, limit: limit} }

// over reports whether b is at or over its bound.
func (b *Budget) over() bool { return b.limit > 0 && b.used.Load() >= b.limit }

// release gives back n bytes and wakes the waiters, if any.
func (b *Budget) release(n int64) {
	b.used.Add(-n)
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
	}
}

// wait waits until some bytes are released after cond reported false, or ctx ends.
func (b *Budget) wait(ctx context.Context, cond func() bool) error {
	for {
		if cond() {
			return nil
		}
		b.waiting.Add(1)
		b.mu.Lock()
		w := b.wake
		b.mu.Unlock()
		// Bytes released between the check above and taking w woke nobody: check again.
		if cond() {
			b.waiting.Add(-1)
			return nil
		}
		select {
		case <-w:
			b.waiting.Add(-1)
		case <-ctx.Done():
			b.waiting.Add(-1)
			return ctx.Err()
		}
	}
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
func (a *Account) TryReserve(n int64) bool {
	r := a.reserved.Add(n)
	au := a.used.Add(n)
	bu := a.b.used.Add(n)
	if r == n || ((a.limit <= 0 || au <= a.limit) && (a.b.limit <= 0 || bu <= a.b.limit)) {
		return true
	}
	a.Release(n)
	return false
}

// Reserve waits until it can take n bytes (see TryReserve) or ctx ends.
func (a *Account) Reserve(ctx context.Context, n int64) error {
	if a.TryReserve(n) {
		return nil
	}
	return a.b.wait(ctx, func() bool { return a.TryReserve(n) })
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
	return a.b.wait(ctx, func() bool { return !a.Over() })
}
