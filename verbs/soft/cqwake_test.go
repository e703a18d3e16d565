package soft

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestCQCloseWakesEveryWaiter: Close (and an overrun, for a CQ with a handler)
// wakes every goroutine blocked in Wait, not only the one that takes the single
// pending wake-up. Each waiter that returns for the CQ's closure or failure passes
// the wake-up on, as one that finds completions does; before, the second waiter
// slept until its context ended.
func TestCQCloseWakesEveryWaiter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []verbs.CQOption
		overrun bool
	}{
		{"polled/close", nil, false},
		{"handler/close", []verbs.CQOption{verbs.WithHandler(func(*verbs.Completion) {})}, false},
		{"handler/overrun", []verbs.CQOption{verbs.WithHandler(func(*verbs.Completion) {})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Config{Name: "cqwake"})
			cq, err := d.CreateCQ(1, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			c := cq.(*compQueue)
			const waiters = 3
			woken := make(chan error, waiters)
			for range waiters {
				go func() { woken <- cq.Wait(context.Background()) }()
			}
			time.Sleep(20 * time.Millisecond) // let them block (more than one must)
			if tc.overrun {
				// Staged for the handler (never delivered here), then one too many.
				c.push(&verbs.Completion{ID: 1})
				c.push(&verbs.Completion{ID: 2})
			} else {
				cq.Close()
			}
			for i := range waiters {
				select {
				case err := <-woken:
					want := error(verbs.ErrClosed)
					if tc.overrun {
						var oe *verbs.CQOverrunError
						if !errors.As(err, &oe) {
							t.Fatalf("waiter %d: %v, want the overrun", i, err)
						}
					} else if !errors.Is(err, want) {
						t.Fatalf("waiter %d: %v, want %v", i, err, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%d of %d waiters still blocked in Wait", waiters-i, waiters)
				}
			}
			if tc.overrun {
				cq.Close()
			}
		})
	}
}
