package oncrpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBudgetBounds(t *testing.T) {
	b := NewBudget(10)
	a1, a2 := b.Account(6), b.Account(6)
	if !a1.TryReserve(5) {
		t.Fatal("first reservation refused")
	}
	if a1.TryReserve(2) {
		t.Error("reservation past the account's bound (5+2 > 6) accepted")
	}
	if !a2.TryReserve(5) {
		t.Fatal("second account's first reservation refused")
	}
	if a2.TryReserve(1) {
		t.Error("reservation past the budget (11 > 10) accepted")
	}
	if got := b.InUse(); got != 10 {
		t.Errorf("budget in use %d, want 10 (refusals give back what they took)", got)
	}
	if !a1.Over() || !a2.Over() {
		t.Error("accounts of a spent budget not Over")
	}
	// An account holding no reservation may always take one: progress for every
	// connection whatever the others hold.
	a3 := b.Account(6)
	a3.Charge(3) // a record received: charged, not reserved
	if !a3.TryReserve(8) {
		t.Error("an account without reservations was refused its first")
	}
	if a3.TryReserve(1) {
		t.Error("a second reservation past the bounds accepted")
	}
	a3.Release(8)
	a3.Uncharge(3)
	a1.Release(5)
	a2.Release(5)
	if b.InUse() != 0 || a1.InUse() != 0 || a3.InUse() != 0 {
		t.Errorf("in use after releasing everything: budget %d, accounts %d %d", b.InUse(), a1.InUse(), a3.InUse())
	}
}

func TestBudgetReserveWaits(t *testing.T) {
	b := NewBudget(4)
	holder, waiter := b.Account(0), b.Account(0)
	holder.Charge(1)
	if !holder.TryReserve(3) || !waiter.TryReserve(1) {
		t.Fatal("reservations within the budget refused")
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Reserve(context.Background(), 2) }()
	// The waiter cannot proceed until the holder releases: nothing else does.
	select {
	case err := <-got:
		t.Fatalf("Reserve returned %v with the budget spent", err)
	default:
	}
	holder.Release(3)
	if err := <-got; err != nil {
		t.Fatalf("Reserve after a release: %v", err)
	}
	if waiter.InUse() != 3 {
		t.Errorf("waiter holds %d, want 3", waiter.InUse())
	}
	// A spent budget and a cancelled context: Reserve gives up with ctx's error.
	holder.TryReserve(4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waiter.Reserve(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a cancelled context: %v", err)
	}
	// WaitUnder returns once the account's own calls are done.
	done := make(chan error, 1)
	go func() { done <- waiter.WaitUnder(context.Background()) }()
	waiter.Release(3)
	if err := <-done; err != nil {
		t.Errorf("WaitUnder: %v", err)
	}
}

func TestBudgetUnbounded(t *testing.T) {
	b := NewBudget(0)
	a := b.Account(-1)
	for i := 0; i < 100; i++ {
		if !a.TryReserve(1 << 30) {
			t.Fatal("an unbounded budget refused a reservation")
		}
	}
	if a.Over() {
		t.Error("an unbounded account is Over")
	}
}

// TestBudgetWakesWaiterReleasedDuringItsCheck: a release that lands between a
// waiter's check of its bound and its queueing still wakes it. The waiter counts
// itself before it checks, so a releaser that finds no waiter counted released
// before the check (which then succeeds) and one that finds it grants it. Each of
// many rounds charges the account to its bound, releases it from another goroutine,
// and waits under the bound: a lost wake-up leaves a round waiting for good (its
// connection would read nothing more, its calls all answered).
func TestBudgetWakesWaiterReleasedDuringItsCheck(t *testing.T) {
	b := NewBudget(0)
	a := b.Account(1)
	for i := 0; i < 200000; i++ {
		a.Charge(1)
		go a.Uncharge(1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := a.WaitUnder(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: the release did not wake the waiter: %v", i, err)
		}
	}
}
