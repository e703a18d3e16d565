// Server side of the reverse direction (Linux svc_rdma_backchannel.c): a ServerConn's
// Backchannel sends CALLs to the connected client within the reverse credits it
// grants, and matches the REPLYs it receives to them by XID.

package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

var _ oncrpc.BackchannelConn = (*ServerConn)(nil)

// serverBackchannel is a ServerConn's reverse-direction RoundTripper.
type serverBackchannel struct {
	sc     *ServerConn
	window *credits.Window // reverse credits: one per reverse call in flight

	mu      sync.Mutex
	calls   map[uint32]*reverseCall // calls awaiting replies, orphans included
	closed  bool
	failErr error
}

// reverseCalls recycles reverseCall entries (with their channels) between calls.
var reverseCalls = sync.Pool{New: func() any { return &reverseCall{done: make(chan error, 1)} }}

// putReverseCall recycles rc, whose channel is empty and which no table holds.
func putReverseCall(rc *reverseCall) {
	rc.reply, rc.orphan = nil, false
	reverseCalls.Put(rc)
}

// reverseCall is one reverse call awaiting its reply.
type reverseCall struct {
	reply *oncrpc.ClientReply
	done  chan error // buffered: the receive path never blocks on it
	// orphan: the caller gave up; the reply, when it comes, only returns the
	// credit, which the client's receive holds until then.
	orphan bool
}

// Backchannel implements oncrpc.BackchannelConn: reverse calls go to the client as
// RDMA_MSG without chunks (RFC 8167), at most as many at once as the client grants in
// its reverse replies (one until the first reply, at most
// ServerOptions.BackchannelCredits), and must fit the connection's inline threshold
// (else the error wraps ErrReverseTooLarge). The first call posts
// ServerOptions.BackchannelCredits receives for the replies. A reverse call whose
// context ends keeps its credit until the client's reply comes (the client holds a
// receive for it meanwhile), so a client that never answers ends with reverse calls
// waiting for credits until their contexts end.
func (sc *ServerConn) Backchannel() (oncrpc.RoundTripper, error) {
	sc.bcMu.Lock()
	defer sc.bcMu.Unlock()
	if bc := sc.bc.Load(); bc != nil {
		return bc, nil
	}
	if sc.isClosed.Load() {
		return nil, fmt.Errorf("rpcrdma: back channel to %v: %w", sc.remote, oncrpc.ErrClosed)
	}
	k := sc.l.opts.BackchannelCredits
	// Receives for the replies: counted before they are posted, so that growRecvs,
	// which subtracts them from what it posts, never counts them as call receives.
	sc.bcRecvs.Store(int32(k))
	sc.mu.Lock()
	calls := sc.callRecvs
	sc.mu.Unlock()
	if _, err := sc.ep.growRecv(calls + sc.l.opts.ExtraRecvs + k); err != nil {
		return nil, fmt.Errorf("rpcrdma: back channel to %v: %w: %w", sc.remote, oncrpc.ErrNoBackchannel, err)
	}
	bc := &serverBackchannel{sc: sc, window: credits.NewWindow(k), calls: make(map[uint32]*reverseCall)}
	sc.bc.Store(bc)
	return bc, nil
}

// isReverseReply reports whether buf, a received message, is a reply to a reverse
// call (only when the connection has a back channel).
func (sc *ServerConn) isReverseReply(buf []byte) bool {
	if sc.bc.Load() == nil {
		return false
	}
	_, mt, ok := reverseMessage(buf)
	return ok && mt == oncrpc.Reply
}

// RoundTrip sends call to the client and waits for its reply. ReplySinks and MaxReply
// are ignored.
func (bc *serverBackchannel) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	sc := bc.sc
	sc.mu.Lock()
	limit := sc.inlineSend
	sc.mu.Unlock()
	if n := MinSize + call.Msg.Len(); n > limit {
		return fmt.Errorf("rpcrdma: reverse call xid %#08x to %v: %d bytes, inline threshold %d: %w", call.XID, sc.remote, n, limit, ErrReverseTooLarge)
	}
	if err := bc.window.Acquire(ctx); err != nil {
		if errors.Is(err, credits.ErrClosed) {
			return bc.closedErr()
		}
		return err
	}
	rc := reverseCalls.Get().(*reverseCall)
	rc.reply = reply
	bc.mu.Lock()
	if bc.closed {
		bc.mu.Unlock()
		bc.window.Release()
		putReverseCall(rc)
		return bc.closedErr()
	}
	if _, dup := bc.calls[call.XID]; dup {
		bc.mu.Unlock()
		bc.window.Release()
		putReverseCall(rc)
		return oncrpc.ErrDuplicateXID
	}
	bc.calls[call.XID] = rc
	bc.mu.Unlock()

	if err := bc.send(ctx, call); err != nil {
		bc.mu.Lock()
		if bc.calls[call.XID] == rc {
			delete(bc.calls, call.XID)
		}
		bc.mu.Unlock()
		bc.window.Release()
		putReverseCall(rc)
		return err
	}
	sc.l.stats.reverseCalls.Add(1)

	var timeout <-chan time.Time
	if call.Timeout > 0 {
		t := time.NewTimer(call.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var err error
	select {
	case err = <-rc.done:
		bc.window.Release()
		putReverseCall(rc)
		return err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = fmt.Errorf("rpcrdma: reverse call xid %#08x: %w", call.XID, oncrpc.ErrTimeout)
	}
	bc.mu.Lock()
	if bc.calls[call.XID] == rc {
		// The credit stays held until the reply or the connection's end; rc, left
		// to them, is not recycled.
		rc.orphan = true
		bc.mu.Unlock()
		return err
	}
	bc.mu.Unlock()
	// The reply is being stored (or the connection failed the call): take its outcome.
	err = <-rc.done
	bc.window.Release()
	putReverseCall(rc)
	return err
}

// send posts the reverse call.
func (bc *serverBackchannel) send(ctx context.Context, call *oncrpc.ClientCall) error {
	sc := bc.sc
	idx, buf, err := sc.ep.getSendBuf(ctx)
	if err != nil {
		return fmt.Errorf("rpcrdma: reverse call xid %#08x to %v: %w", call.XID, sc.remote, err)
	}
	b := appendReverseHeader(buf[:0], call.XID, uint32(bc.window.Max()))
	b = xdr.Flatten(b, call.Msg.Inline, call.Msg.Payloads)
	if len(b) > len(buf) { // the inline threshold is at most the send buffer size
		sc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: reverse call xid %#08x: %d bytes: %w", call.XID, len(b), ErrReverseTooLarge)
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	if err := sc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil); err != nil {
		return fmt.Errorf("rpcrdma: reverse call xid %#08x to %v: %w", call.XID, sc.remote, err)
	}
	return nil
}

// receive handles a reverse reply (body: the RPC message; grant: its rdma_credit)
// without blocking: the grant updates the reverse window, and the reply goes to its
// call or, for an orphan, just frees the credit. The caller reposts the receive.
func (bc *serverBackchannel) receive(grant uint32, body []byte) {
	bc.window.Update(grant) // 0 counts as 1, above the window's max as the max (as Linux)
	xid := uint32(body[0])<<24 | uint32(body[1])<<16 | uint32(body[2])<<8 | uint32(body[3])
	bc.mu.Lock()
	rc := bc.calls[xid]
	if rc != nil {
		delete(bc.calls, xid)
	}
	bc.mu.Unlock()
	stats := &bc.sc.l.stats
	switch {
	case rc == nil:
		stats.reverseUnmatched.Add(1)
	case rc.orphan:
		stats.reverseUnmatched.Add(1)
		bc.window.Release()
	default:
		stats.reverseReplies.Add(1)
		rc.reply.Inline = append(rc.reply.Inline[:0], body...)
		rc.reply.Placed = rc.reply.Placed[:0]
		rc.reply.Padding = xdr.Padding{}
		rc.done <- nil
	}
}

// Close fails the reverse calls outstanding and those after; the connection stays.
func (bc *serverBackchannel) Close() error {
	bc.fail(oncrpc.ErrClosed)
	return nil
}

// fail ends every reverse call with err; later calls fail too.
func (bc *serverBackchannel) fail(err error) {
	bc.mu.Lock()
	if !bc.closed {
		bc.closed, bc.failErr = true, err
	}
	for xid, rc := range bc.calls {
		delete(bc.calls, xid)
		if !rc.orphan {
			rc.done <- bc.failErr
		}
	}
	bc.mu.Unlock()
	bc.window.Close()
}

func (bc *serverBackchannel) closedErr() error {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.failErr != nil {
		return bc.failErr
	}
	return oncrpc.ErrClosed
}

// reverseBusy reports whether a reverse call awaits its reply (for the idle sweeper;
// orphans do not count: a client that never answers may still be reaped).
func (sc *ServerConn) reverseBusy() bool {
	bc := sc.bc.Load()
	if bc == nil {
		return false
	}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	for _, rc := range bc.calls {
		if !rc.orphan {
			return true
		}
	}
	return false
}

// pendingReverse returns the reverse calls awaiting replies, orphans included.
func (bc *serverBackchannel) pendingReverse() int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return len(bc.calls)
}

// bcState is the ServerConn's reverse-direction state.
type bcState struct {
	bcMu    sync.Mutex // serializes Backchannel's creation with Close
	bc      atomic.Pointer[serverBackchannel]
	bcRecvs atomic.Int32 // receives posted for reverse replies
}

// closeBackchannel fails the reverse calls when the connection closes.
func (sc *ServerConn) closeBackchannel() {
	sc.bcMu.Lock() // Backchannel creates none after this
	bc := sc.bc.Load()
	sc.bcMu.Unlock()
	if bc != nil {
		bc.fail(fmt.Errorf("rpcrdma: connection to %v: %w", sc.remote, oncrpc.ErrClosed))
	}
}
