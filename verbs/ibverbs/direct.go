//go:build ibverbs && linux && cgo

package ibverbs

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

var _ verbs.DirectProcessor = (*queuePair)(nil)

// ProcessDirect implements verbs.DirectProcessor. The caller polls the QP's
// receive CQ itself (ibv_poll_cq, no system call) and hands what it finds to
// the CQ's handler on its own goroutine, as Linux's ib_process_cq_direct
// polls in the caller's context, until done reports true, for at most
// Config.CQPoll and never past deadline. A reply that comes within a round
// trip then reaches its caller without a wake-up of the CQ's event
// goroutine. While another goroutine (the event goroutine, another caller)
// is delivering the CQ's completions, the caller's polls leave them to it
// and it only watches done. A CQ without a handler, or with polling off,
// leaves everything to the event goroutine: ProcessDirect reports done at
// once.
func (q *queuePair) ProcessDirect(done func() bool, deadline time.Time) bool {
	c := q.rcq
	if c.handler == nil || c.pollFor <= 0 {
		return done()
	}
	limit := c.pollFor
	if !deadline.IsZero() {
		limit = min(limit, time.Until(deadline))
	}
	start := time.Now()
	for i := 1; ; i++ {
		if _, open := c.deliver(); !open {
			return done()
		}
		if done() {
			return true
		}
		if i%pollClockEvery == 0 && time.Since(start) >= limit {
			return done()
		}
	}
}

// Resume implements verbs.DirectProcessor. The CQ's event goroutine keeps
// receiving while a caller processes directly, so there is nothing to hand
// back.
func (q *queuePair) Resume() {}
