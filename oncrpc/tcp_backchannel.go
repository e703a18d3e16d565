package oncrpc

// Reverse-direction calls over TCP: the record-marked stream of a connection carries
// CALLs both ways. The server sends CALLs with its own XIDs and the client answers them
// with REPLYs; each side tells the other's CALLs from REPLYs by msg_type (RFC 5531 §9),
// as Linux does for NFSv4.1 callbacks over the fore channel's connection.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

var _ BackchannelConn = (*tcpServerConn)(nil)

// isReply reports whether record holds an RPC message whose msg_type is REPLY.
func isReply(record []byte) bool {
	return len(record) >= 8 && MsgType(binary.BigEndian.Uint32(record[4:])) == Reply
}

// isCall reports whether record holds an RPC message whose msg_type is CALL.
func isCall(record []byte) bool {
	return len(record) >= 8 && MsgType(binary.BigEndian.Uint32(record[4:])) == Call
}

// TCPBackchannelStats are the reverse-direction counters of a TCP server connection
// (its Backchannel's Stats) or of a listener's connections (TCPListener.BackchannelStats).
type TCPBackchannelStats struct {
	Calls     uint64 // reverse calls sent
	Replies   uint64 // replies received and matched to a reverse call
	Unmatched uint64 // replies whose XID matched no outstanding reverse call (late ones included)
}

// bcCounters count reverse calls sent and replies matched.
type bcCounters struct {
	calls, replies, unmatched atomic.Uint64
}

func (c *bcCounters) stats() TCPBackchannelStats {
	return TCPBackchannelStats{Calls: c.calls.Load(), Replies: c.replies.Load(), Unmatched: c.unmatched.Load()}
}

// BackchannelStats returns the reverse-direction counters of the listener's
// connections, summed.
func (l *TCPListener) BackchannelStats() TCPBackchannelStats { return l.bc.stats() }

// tcpBackchannel is the reverse-direction RoundTripper of a TCP server connection.
type tcpBackchannel struct {
	sc      *tcpServerConn
	pending PendingCalls
	closed  atomic.Bool
	own     bcCounters
	sum     *bcCounters // the listener's, or nil
}

// count adds one to a counter of bc and of the listener's sum.
func (bc *tcpBackchannel) count(f func(*bcCounters) *atomic.Uint64) {
	f(&bc.own).Add(1)
	if bc.sum != nil {
		f(bc.sum).Add(1)
	}
}

// Backchannel implements BackchannelConn.
func (sc *tcpServerConn) Backchannel() (RoundTripper, error) {
	sc.bcMu.Lock()
	defer sc.bcMu.Unlock()
	if bc := sc.bc.Load(); bc != nil {
		return bc, nil
	}
	if sc.closed.Load() {
		return nil, fmt.Errorf("oncrpc: backchannel to %v: %w", sc.c.RemoteAddr(), ErrClosed)
	}
	bc := &tcpBackchannel{sc: sc, sum: sc.bcSum}
	sc.bc.Store(bc)
	return bc, nil
}

// BackchannelStats returns the counters of the connection's reverse direction (zero
// until Backchannel was called).
func (sc *tcpServerConn) BackchannelStats() TCPBackchannelStats {
	bc := sc.bc.Load()
	if bc == nil {
		return TCPBackchannelStats{}
	}
	return bc.Stats()
}

// Stats returns the counters.
func (bc *tcpBackchannel) Stats() TCPBackchannelStats {
	return bc.own.stats()
}

// RoundTrip sends call as a record on the connection and waits for the client's reply.
func (bc *tcpBackchannel) RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error {
	sc := bc.sc
	if bc.closed.Load() {
		return ErrClosed
	}
	p, err := bc.pending.Add(call, reply)
	if err != nil {
		return err
	}
	// Close sets closed before failing the table: either it sees p, or this sees closed.
	if sc.closed.Load() || bc.closed.Load() {
		return bc.pending.Fail(p, ErrClosed)
	}
	sc.wmu.Lock()
	deadline, ok := ctx.Deadline()
	if sc.sendTimeout > 0 && (!ok || time.Until(deadline) > sc.sendTimeout) {
		deadline, ok = time.Now().Add(sc.sendTimeout), true
	}
	if ok {
		sc.c.SetWriteDeadline(deadline)
	}
	sc.vecs.build(&call.Msg)
	sc.nb = sc.vecs.iov
	_, err = sc.nb.WriteTo(sc.c)
	if ok && err == nil {
		sc.c.SetWriteDeadline(time.Time{}) // WriteReply sets its own, if any
	}
	sc.wmu.Unlock()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			sc.log.Warn("peer took no reverse call within the send timeout; closing", "remote", sc.c.RemoteAddr().String())
		}
		sc.Close() // a partial record corrupts the stream
		return bc.pending.Fail(p, fmt.Errorf("oncrpc: sending reverse call xid %#x to %v: %w", call.XID, sc.c.RemoteAddr(), err))
	}
	bc.count(func(c *bcCounters) *atomic.Uint64 { return &c.calls })
	return bc.pending.Wait(ctx, p)
}

// receive completes the reverse call a REPLY record answers.
func (bc *tcpBackchannel) receive(record []byte) {
	p := bc.pending.Claim(binary.BigEndian.Uint32(record))
	if p == nil {
		bc.count(func(c *bcCounters) *atomic.Uint64 { return &c.unmatched })
		return
	}
	bc.count(func(c *bcCounters) *atomic.Uint64 { return &c.replies })
	p.Reply.Inline = append(p.Reply.Inline[:0], record...)
	p.Reply.Placed = p.Reply.Placed[:0]
	p.Reply.Padding = xdr.Padding{}
	p.Complete(nil)
}

// Close fails the outstanding reverse calls and those after; the connection stays.
func (bc *tcpBackchannel) Close() error {
	bc.closed.Store(true)
	bc.pending.FailAll(ErrClosed)
	return nil
}

// connClosed fails the outstanding reverse calls when the connection closes.
func (bc *tcpBackchannel) connClosed() {
	bc.pending.FailAll(fmt.Errorf("oncrpc: connection to %v: %w", bc.sc.c.RemoteAddr(), ErrClosed))
}

// Client side: serving the server's reverse calls.

// tcpReverseCall is a reverse call received by a TCPTransport.
type tcpReverseCall struct {
	ServerCall
	buf  []byte
	conn net.Conn // the connection it arrived on, which its reply must take
}

// reversePool recycles tcpReverseCalls.
var reversePool sync.Pool

// serveReverse hands a CALL record received on c to the transport's callback service,
// or drops it (counted) when there is none or it is at its bound.
func (t *TCPTransport) serveReverse(c net.Conn, record []byte) {
	if t.bcs == nil {
		t.reverseDropped.Add(1)
		return
	}
	rc, _ := reversePool.Get().(*tcpReverseCall)
	if rc == nil {
		rc = new(tcpReverseCall)
		rc.Cookie = rc
	}
	rc.buf = append(rc.buf[:0], record...)
	rc.Msg = Message{Inline: rc.buf}
	rc.conn = c
	if !t.bcs.Deliver(&rc.ServerCall) { // counted as dropped by the callback service
		t.releaseReverse(rc)
	}
}

// writeReverseReply is the TCPTransport's BackchannelReplyFunc.
func (t *TCPTransport) writeReverseReply(call *ServerCall, reply *Message) error {
	rc, ok := call.Cookie.(*tcpReverseCall)
	if !ok {
		return errors.New("oncrpc: reverse reply for a call of another transport")
	}
	defer t.releaseReverse(rc)
	if reply == nil {
		return nil
	}
	if t.lockWrite(t.ctx, nil) != nil {
		return fmt.Errorf("oncrpc: reverse reply to %v: %w", rc.conn.RemoteAddr(), ErrClosed)
	}
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != rc.conn {
		// The connection the call came on is gone; its reply cannot be sent on
		// another (the server's reverse calls belong to the connection).
		t.unlockWrite()
		return fmt.Errorf("oncrpc: reverse reply: connection to %v lost: %w", rc.conn.RemoteAddr(), ErrClosed)
	}
	if t.opts.SendTimeout > 0 {
		c.SetWriteDeadline(time.Now().Add(t.opts.SendTimeout))
	}
	err := t.write(c, reply)
	if err == nil {
		if t.opts.SendTimeout > 0 {
			c.SetWriteDeadline(time.Time{})
		}
		t.unlockWrite()
		return nil
	}
	t.sendErrs.Add(1)
	t.mu.Lock()
	after := t.loseLocked(c, err) // before another record is written after the partial one
	t.mu.Unlock()
	t.unlockWrite()
	after()
	return fmt.Errorf("oncrpc: reverse reply to %v: %w", c.RemoteAddr(), err)
}

func (t *TCPTransport) releaseReverse(rc *tcpReverseCall) {
	rc.Msg = Message{}
	rc.conn = nil
	if cap(rc.buf) > maxPooledBuffer {
		rc.buf = nil
	}
	reversePool.Put(rc)
}
