package verbs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// fakeCQ yields its queued completions one Poll at a time after Wait is called, and
// then fails as configured.
type fakeCQ struct {
	queue   []verbs.Completion
	ready   bool
	waits   int
	pollErr error
}

func (c *fakeCQ) Poll(wc []verbs.Completion) (int, error) {
	if c.pollErr != nil {
		return 0, c.pollErr
	}
	if !c.ready || len(c.queue) == 0 {
		return 0, nil
	}
	wc[0] = c.queue[0]
	c.queue = c.queue[1:]
	return 1, nil
}

func (c *fakeCQ) Wait(ctx context.Context) error {
	c.waits++
	if len(c.queue) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	c.ready = true
	return nil
}

func (c *fakeCQ) Close() error { return nil }

func TestNextCompletion(t *testing.T) {
	cq := &fakeCQ{queue: []verbs.Completion{{ID: 7}, {ID: 8}}}
	ctx := context.Background()
	for _, want := range []uint64{7, 8} {
		wc, err := verbs.NextCompletion(ctx, cq)
		if err != nil || wc.ID != want {
			t.Fatalf("NextCompletion = %d, %v; want %d", wc.ID, err, want)
		}
	}
	if cq.waits != 1 {
		t.Fatalf("Wait called %d times, want 1 (second completion was already pollable)", cq.waits)
	}

	ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := verbs.NextCompletion(ctx, cq); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("empty CQ: err = %v, want DeadlineExceeded", err)
	}

	cq = &fakeCQ{pollErr: verbs.ErrClosed}
	if _, err := verbs.NextCompletion(context.Background(), cq); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("failed CQ: err = %v, want ErrClosed", err)
	}
}
