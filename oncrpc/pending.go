package oncrpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrDuplicateXID means a call was started with the XID of a call still outstanding on
// the same transport.
var ErrDuplicateXID = errors.New("oncrpc: XID already outstanding")

// PendingCalls is a client transport's table of outstanding calls, keyed by XID. A
// RoundTrip adds its call, sends it and waits; the transport's reader claims the entry
// of each reply, stores the reply and completes it. Cancellation, per-try timeouts and
// transport failure are handled here, so that a TCP and an RDMA transport share one
// tested implementation. Entries are pooled: steady-state use does not allocate.
//
// The zero value is ready to use.
type PendingCalls struct {
	mu        sync.Mutex
	m         map[uint32]*PendingCall
	unmatched atomic.Uint64
	pool      sync.Pool
}

// PendingCall is one outstanding call. Call and Reply are the RoundTrip's arguments;
// Gen is free for the transport (e.g. the connection generation the call was last
// sent on).
type PendingCall struct {
	XID   uint32
	Call  *ClientCall
	Reply *ClientReply
	Gen   uint64

	done  chan error
	timer *time.Timer
}

// Complete hands err (nil: Reply has been filled in) to the waiter. Only the
// goroutine that claimed p calls it, once.
func (p *PendingCall) Complete(err error) { p.done <- err }

// Add registers call, whose reply will be stored in reply.
func (t *PendingCalls) Add(call *ClientCall, reply *ClientReply) (*PendingCall, error) {
	p, _ := t.pool.Get().(*PendingCall)
	if p == nil {
		p = &PendingCall{done: make(chan error, 1)}
	}
	p.XID, p.Call, p.Reply, p.Gen = call.XID, call, reply, 0
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[uint32]*PendingCall)
	}
	if _, dup := t.m[call.XID]; dup {
		t.mu.Unlock()
		p.Call, p.Reply = nil, nil
		t.pool.Put(p)
		return nil, ErrDuplicateXID
	}
	t.m[call.XID] = p
	t.mu.Unlock()
	return p, nil
}

// Claim removes and returns the entry of xid, or returns nil (and counts an unmatched
// reply) if no call with that XID is outstanding. The caller then fills p.Reply and
// calls p.Complete.
func (t *PendingCalls) Claim(xid uint32) *PendingCall {
	t.mu.Lock()
	p := t.m[xid]
	if p != nil {
		delete(t.m, xid)
	}
	t.mu.Unlock()
	if p == nil {
		t.unmatched.Add(1)
	}
	return p
}

// Unmatched returns the number of replies whose XID matched no outstanding call.
func (t *PendingCalls) Unmatched() uint64 { return t.unmatched.Load() }

// Len returns the number of outstanding calls.
func (t *PendingCalls) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Wait waits for p to be completed, for ctx to be done, or for p.Call.Timeout to
// expire (then the error wraps ErrTimeout), and recycles p. If the reply is being
// stored as ctx ends, Wait lets it finish and reports the reply.
func (t *PendingCalls) Wait(ctx context.Context, p *PendingCall) error {
	var timeout <-chan time.Time
	if d := p.Call.Timeout; d > 0 {
		if p.timer == nil {
			p.timer = time.NewTimer(d)
		} else {
			p.timer.Reset(d)
		}
		timeout = p.timer.C
	}
	var err error
	select {
	case err = <-p.done:
	case <-ctx.Done():
		err = t.abandon(p, ctx.Err())
	case <-timeout:
		err = t.abandon(p, ErrTimeout)
	}
	if timeout != nil {
		p.timer.Stop()
	}
	t.release(p)
	return err
}

// Fail removes p, if it is still outstanding, and recycles it; it returns err, or the
// outcome of a reply that was already being stored.
func (t *PendingCalls) Fail(p *PendingCall, err error) error {
	err = t.abandon(p, err)
	t.release(p)
	return err
}

func (t *PendingCalls) abandon(p *PendingCall, err error) error {
	t.mu.Lock()
	if t.m[p.XID] == p {
		delete(t.m, p.XID)
		t.mu.Unlock()
		return err
	}
	t.mu.Unlock()
	// Someone claimed p and is about to complete it.
	return <-p.done
}

func (t *PendingCalls) release(p *PendingCall) {
	p.Call, p.Reply = nil, nil
	t.pool.Put(p)
}

// FailAll completes every outstanding call with err and empties the table.
func (t *PendingCalls) FailAll(err error) {
	t.mu.Lock()
	for xid, p := range t.m {
		delete(t.m, xid)
		p.Complete(err)
	}
	t.mu.Unlock()
}

// Each calls f for every outstanding call while holding the table's lock, so that no
// call can complete, be abandoned, or be recycled meanwhile (a transport retransmits
// after reconnecting this way). f must not block for long or call other methods of t.
func (t *PendingCalls) Each(f func(p *PendingCall)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.m {
		f(p)
	}
}
