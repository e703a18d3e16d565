// Statistics: what a Listener's connections received and sent, by kind (the xprt
// counters of Linux's /proc/self/mountstats, server side), kept in atomic counters
// that the per-call path updates without allocating or locking; and a Client's
// counters and credit grant.

package rpcrdma

import (
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// ServerStats are a Listener's cumulative counters, summed over its connections.
type ServerStats struct {
	// Conns counts the connections accepted, closed, refused and reaped.
	Conns oncrpc.ListenerStats
	// CallsInline counts the calls received whole in a Send; CallsReadChunks those
	// that carried read chunks, whose data (ReadBytes in all) the server pulled by
	// RDMA Read.
	CallsInline, CallsReadChunks uint64
	ReadBytes                    uint64
	// RepliesInline, RepliesReplyChunk and RepliesReadChunk count the replies sent
	// by each path: in the Send, RDMA-Written into the client's reply chunk, or
	// returned as a read chunk the client pulls.
	RepliesInline, RepliesReplyChunk, RepliesReadChunk uint64
	// WriteChunks counts the write chunks filled with a payload; WriteBytes the
	// bytes RDMA-Written into write and reply chunks.
	WriteChunks, WriteBytes uint64
	// ErrVers and ErrChunk count the RDMA_ERROR messages sent, by error code.
	ErrVers, ErrChunk uint64
	// BufferBytes is the size of the registered buffers the listener holds for
	// calls reassembled from read chunks and for long replies; BufferBytesInUse the
	// part that calls in flight hold now (the rest is pooled for reuse). These are
	// the bytes of large messages in flight; inline ones sit in per-connection
	// receive and send buffers.
	BufferBytes, BufferBytesInUse uint64
	// Credits is a snapshot of the credit shares (ServerOptions.Credits, which
	// other listeners may share).
	Credits credits.Stats
	// ReverseCalls counts the reverse-direction calls sent (ServerConn.Backchannel,
	// RFC 8167); ReverseReplies the replies matched to them; ReverseUnmatched the
	// reverse replies that matched no call waiting (unknown XIDs, or calls whose
	// context ended first).
	ReverseCalls, ReverseReplies, ReverseUnmatched uint64
}

// serverCounters are the live counters behind ServerStats.
type serverCounters struct {
	callsInline, callsReadChunks, readBytes            atomic.Uint64
	repliesInline, repliesReplyChunk, repliesReadChunk atomic.Uint64
	writeChunks, writeBytes                            atomic.Uint64
	errVers, errChunk                                  atomic.Uint64
	reverseCalls, reverseReplies, reverseUnmatched     atomic.Uint64
}

// Stats returns the Listener's counters. Those a connection keeps itself
// (serverCounters.addTo) are its own while it is open and go to the Listener's when
// it closes. (A reply that completes as its connection is being closed may be counted
// after that, and then is not.)
func (l *Listener) Stats() ServerStats {
	c, g := &l.stats, l.guard.Stats()
	l.mu.Lock() // Close moves a connection's counts into l.stats under it
	defer l.mu.Unlock()
	st := ServerStats{
		Conns:       oncrpc.ListenerStats{Accepted: g.Tracked, Closed: g.Left, Refused: g.Refused, Reaped: g.Reaped},
		CallsInline: c.callsInline.Load(), CallsReadChunks: c.callsReadChunks.Load(), ReadBytes: c.readBytes.Load(),
		RepliesInline: c.repliesInline.Load(), RepliesReplyChunk: c.repliesReplyChunk.Load(), RepliesReadChunk: c.repliesReadChunk.Load(),
		WriteChunks: c.writeChunks.Load(), WriteBytes: c.writeBytes.Load(),
		ErrVers: c.errVers.Load(), ErrChunk: c.errChunk.Load(),
		Credits:      l.opts.Credits.Stats(),
		ReverseCalls: c.reverseCalls.Load(), ReverseReplies: c.reverseReplies.Load(), ReverseUnmatched: c.reverseUnmatched.Load(),
	}
	for sc := range l.conns {
		sc.stats.addTo(&st)
	}
	st.BufferBytes, st.BufferBytesInUse = l.bufs.bytes()
	return st
}

// The call, reply and chunk counters are kept per connection, so that connections
// on different CPUs do not update one cache line per call: addTo adds c's to st,
// and fold moves them into the Listener's (into), when the connection closes.
func (c *serverCounters) addTo(st *ServerStats) {
	st.CallsInline += c.callsInline.Load()
	st.CallsReadChunks += c.callsReadChunks.Load()
	st.ReadBytes += c.readBytes.Load()
	st.RepliesInline += c.repliesInline.Load()
	st.RepliesReplyChunk += c.repliesReplyChunk.Load()
	st.RepliesReadChunk += c.repliesReadChunk.Load()
	st.WriteChunks += c.writeChunks.Load()
	st.WriteBytes += c.writeBytes.Load()
	st.ErrVers += c.errVers.Load()
	st.ErrChunk += c.errChunk.Load()
}

func (c *serverCounters) fold(into *serverCounters) {
	into.callsInline.Add(c.callsInline.Load())
	into.callsReadChunks.Add(c.callsReadChunks.Load())
	into.readBytes.Add(c.readBytes.Load())
	into.repliesInline.Add(c.repliesInline.Load())
	into.repliesReplyChunk.Add(c.repliesReplyChunk.Load())
	into.repliesReadChunk.Add(c.repliesReadChunk.Load())
	into.writeChunks.Add(c.writeChunks.Load())
	into.writeBytes.Add(c.writeBytes.Load())
	into.errVers.Add(c.errVers.Load())
	into.errChunk.Add(c.errChunk.Load())
}

// bytes returns the size of every buffer the pool registered and of those not idle.
func (p *bufPool) bytes() (all, inUse uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.all {
		all += uint64(len(b.mr.Buf()))
	}
	return all, all - uint64(p.freeBytes)
}

// call counts a call accepted within its credits; readChunks says it carried some.
func (c *serverCounters) call(readChunks bool) {
	if readChunks {
		c.callsReadChunks.Add(1)
	} else {
		c.callsInline.Add(1)
	}
}

// errorSent counts an RDMA_ERROR sent with code.
func (c *serverCounters) errorSent(code ErrCode) {
	if code == ErrCodeVers {
		c.errVers.Add(1)
	} else {
		c.errChunk.Add(1)
	}
}

// replySent counts a reply sent by plan p: its path, the write chunks it filled
// and the bytes it RDMA-Wrote.
func (c *serverCounters) replySent(p *replyPlan, in *Header, reply *oncrpc.Message) {
	var wrote uint64
	for i := range in.WriteList {
		if p.placed&(1<<i) != 0 && len(reply.Payloads[i].Data) > 0 {
			c.writeChunks.Add(1)
			wrote += uint64(len(reply.Payloads[i].Data))
		}
	}
	switch p.path {
	case pathInline:
		c.repliesInline.Add(1)
	case pathReplyChunk:
		c.repliesReplyChunk.Add(1)
		wrote += uint64(p.stream)
	case pathReadChunk:
		c.repliesReadChunk.Add(1)
	}
	if wrote > 0 {
		c.writeBytes.Add(wrote)
	}
}

// ClientStats are a Client's counters and its current credit grant.
type ClientStats struct {
	// Credits is the credit window the server granted last (its rdma_credit, at most
	// ClientOptions.Credits) on the current connection: how many calls the Client
	// may have outstanding. 0 while it has no connection.
	Credits int
	// ReverseCalls counts the reverse-direction calls handed to the
	// ClientOptions.Backchannel handler; ReverseDropped those dropped (no handler, or
	// BackchannelOptions.MaxRequests in progress: the server exceeded our grant).
	ReverseCalls, ReverseDropped uint64
	// ReverseTooLarge counts the reverse replies that did not fit the inline
	// threshold and were replaced by SYSTEM_ERR.
	ReverseTooLarge uint64
}

// Stats returns the Client's counters.
func (c *Client) Stats() ClientStats {
	st := ClientStats{ReverseDropped: c.reverseDropped.Load(), ReverseTooLarge: c.reverseTooLarge.Load()}
	if cc := c.current(); cc != nil {
		st.Credits = cc.window.Granted()
	}
	if c.bcs != nil {
		// Counted by the callback service as it takes a call, before the call can be
		// answered.
		bs := c.bcs.Stats()
		st.ReverseCalls, st.ReverseDropped = bs.Calls, st.ReverseDropped+bs.Dropped
	}
	return st
}
