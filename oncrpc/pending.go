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
	armed bool // timer started by startTimer for this try: Wait does not restart it
}

// startTimer starts p's per-try timer when p.Call.Timeout is positive, before the
// call is sent, so that the try's timeout also bounds what the transport does before
// Wait (waiting for its turn to write, writing); Wait then lets it run on. It returns
// the timer's channel and the try's deadline, or nil and the zero time without a
// timeout.
func (p *PendingCall) startTimer() (<-chan time.Time, time.Time) {
	d := p.Call.Timeout
	if d <= 0 {
		return nil, time.Time{}
	}
	deadline := time.Now().Add(d)
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	p.armed = true
	return p.timer.C, deadline
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
		switch {
		case p.armed: // started before the call was sent (startTimer)
		case p.timer == nil:
			p.timer = time.NewTimer(d)
		default:
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
		p.armed = false
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
	if p.armed {
		p.timer.Stop()
		p.armed = false
	}
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

// xids appends the XIDs of the outstanding calls to buf.
func (t *PendingCalls) xids(buf []uint32) []uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for xid := range t.m {
		buf = append(buf, xid)
	}
	return buf
}

// copyForResend appends to buf the record of the outstanding call xid, built by v,
// unless the call is gone or was sent on generation gen already; it marks the call as
// sent on gen. Copying under the table's lock lets the transport write the record
// without holding the lock: a call abandoned meanwhile (its RoundTrip returned, its
// buffers reused by the caller) is not read.
func (t *PendingCalls) copyForResend(xid uint32, gen uint64, v *recordVecs, buf []byte) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.m[xid]
	if p == nil || p.Gen == gen {
		return buf, false
	}
	p.Gen = gen
	v.build(&p.Call.Msg)
	for _, b := range v.iov {
		buf = append(buf, b...)
	}
	clear(v.iov) // drop the references to the caller's buffers
	return buf, true
}

// Each calls f for every outstanding call while holding the table's lock, so that no
// call can complete, be abandoned, or be recycled meanwhile. f must not block (a call
// waiting to be abandoned waits for it) or call other methods of t.
func (t *PendingCalls) Each(f func(p *PendingCall)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.m {
		f(p)
	}
}
