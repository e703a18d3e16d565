package verbs

import (
	"context"
	"fmt"
)

// NextCompletion returns the next completion from cq, blocking in cq.Wait until one is
// available, cq fails or is closed, or ctx ends. It is the Poll-then-Wait loop every
// consumer of a single completion needs; consumers that drain many at once call Poll
// with a larger slice themselves.
func NextCompletion(ctx context.Context, cq CQ) (Completion, error) {
	var wc [1]Completion
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return Completion{}, fmt.Errorf("verbs: polling CQ: %w", err)
		}
		if n == 1 {
			return wc[0], nil
		}
		if err := cq.Wait(ctx); err != nil {
			return Completion{}, fmt.Errorf("verbs: waiting for a completion: %w", err)
		}
	}
}
