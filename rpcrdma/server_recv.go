// Server receive path: received messages to calls (header checks, credits, RDMA_DONE),
// read chunks pulled into place, and ReadCall (Linux svc_rdma_recvfrom.c).

package rpcrdma

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// onRecv handles a received message in the provider's completion context. While
// ServeCalls runs, a plain call (RDMA_MSG or RDMA_MSGP within its credits) goes
// straight to ServeCalls' deliver, once its read chunks if any are pulled; everything
// else is queued for the receive loop (ReadCall or ServeCalls), which may block.
func (sc *ServerConn) onRecv(idx, n int, wc *verbs.Completion) {
	if wc.Status != verbs.StatusSuccess {
		return
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(false, sc.ep.recvBuf(idx)[:n])
	}
	sc.ep.setRecvLen(idx, n) // remember the length until ReadCall takes it
	sc.pushMu.RLock()
	pushed := sc.push != nil && sc.receiveInline(idx, n, sc.push)
	sc.pushMu.RUnlock()
	if !pushed {
		sc.recvq <- idx
	}
}

// receiveInline delivers the call in receive buffer idx (n bytes) if it is a plain call
// within its credits (one with read chunks once they are pulled, see pullInline), and
// reports whether it did; anything else is left to receive. It runs in the completion
// context, so it never blocks: a credit overrun is answered and a connection that must
// end is closed from other goroutines. The call may run inline
// when its reply needs no RDMA Write and a send buffer and send-queue slot could be
// reserved for it.
func (sc *ServerConn) receiveInline(idx, n int, deliver func(*oncrpc.ServerCall, bool)) bool {
	buf := sc.ep.recvBuf(idx)[:n]
	c := sc.getCall()
	h := &c.h
	hl, err := h.Decode(buf)
	if err != nil || (h.Proc != ProcMsg && h.Proc != ProcMsgP) || sc.isReverseReply(buf) {
		sc.putCall(c)
		return false
	}
	body, grouped, cerr := checkCall(h, buf[hl:], sc.l.opts.MSGP, c.asm.grouped[:0])
	if grouped != nil {
		c.asm.grouped = grouped
	}
	if cerr != nil {
		sc.putCall(c)
		return false
	}
	c.recvIdx = idx
	switch sc.cred.Arrive(h.Credits) {
	case credits.Overrun:
		sc.l.opts.Logger.Debug("credit overrun", "remote", sc.remote, "xid", h.XID)
		sc.answerOverrun(c)
		return true
	case credits.Disconnect:
		sc.l.opts.Logger.Debug("credit overrun; disconnecting", "remote", sc.remote, "xid", h.XID)
		sc.putCall(c)
		go sc.Close()
		return true
	}
	if n := sc.cred.Grow(); n > 0 {
		sc.growRecvs(n)
	}
	c.msgp = h.Proc == ProcMsgP
	sc.stats.call(len(grouped) > 0)
	if len(grouped) > 0 {
		sc.pullInline(c, body, grouped)
		return true
	}
	c.call.Msg = oncrpc.Message{Inline: body, Padding: receivedPadding(h, hl)}
	inline := len(h.WriteList) == 0 && len(h.ReplyChunk) == 0 && sc.reserve(c)
	deliver(&c.call, inline)
	return true
}

// answerOverrun answers c, a call beyond its credits, with ERR_CHUNK without blocking,
// and releases it; only when no send buffer or send-queue slot is free is the Send
// left to a goroutine.
func (sc *ServerConn) answerOverrun(c *srvCall) {
	sc.stats.errorSent(ErrCodeChunk)
	xid := c.h.XID
	if !sc.reserve(c) {
		go func() {
			defer sc.putCall(c)
			idx, buf, err := sc.ep.getSendBuf(sc.ctx)
			if err != nil {
				return
			}
			sc.postError(sc.ctx, idx, AppendErrChunk(buf[:0], xid, Version1, sc.ep.takeGrant(idx)))
		}()
		return
	}
	idx := c.sendIdx
	c.sendIdx, c.sqHeld = -1, false
	b := AppendErrChunk(sc.ep.sendBuf(idx)[:0], xid, Version1, sc.ep.takeGrant(idx))
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	sc.ep.postSendBufHeld(idx, len(b), verbs.OpSend, 0, nil)
	sc.putCall(c)
}

// postError sends the error message b held in send buffer idx.
func (sc *ServerConn) postError(ctx context.Context, idx int, b []byte) {
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	sc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil)
}

// reserve takes a send buffer and a send-queue slot for c's reply if both are free now
// (growing the send pool, which registers memory but waits for nothing, if it may).
func (sc *ServerConn) reserve(c *srvCall) bool {
	i, ok := sc.ep.sendFree.tryGet()
	if !ok {
		if !sc.ep.growSend() {
			return false
		}
		if i, ok = sc.ep.sendFree.tryGet(); !ok {
			return false
		}
	}
	c.sendIdx = i
	if sc.ep.sq.tryTake(1) {
		c.sqHeld = true
		return true
	}
	sc.ep.putSendBuf(c.sendIdx)
	c.sendIdx = -1
	return false
}

// unreserve gives back what reserve took and the reply did not use.
func (sc *ServerConn) unreserve(c *srvCall) {
	if c.sendIdx >= 0 {
		sc.ep.putSendBuf(c.sendIdx)
		c.sendIdx = -1
	}
	if c.sqHeld {
		c.sqHeld = false
		sc.ep.sq.give(1)
	}
}

// ServeCalls implements oncrpc.PushServerConn: plain calls are delivered from the
// completion context (onRecv); the rest (calls with read chunks once pulled, and what
// ReadCall handles without returning) by this goroutine.
func (sc *ServerConn) ServeCalls(ctx context.Context, deliver func(call *oncrpc.ServerCall, inline bool)) error {
	sc.readMu.Lock()
	defer sc.readMu.Unlock()
	sc.pushMu.Lock()
	sc.push = deliver
	sc.pushMu.Unlock()
	defer func() {
		sc.pushMu.Lock() // waits for a delivery in progress
		sc.push = nil
		sc.pushMu.Unlock()
	}()
	for {
		call, err := sc.readCall(ctx)
		if err != nil {
			return err
		}
		deliver(call, false)
	}
}

// growRecvs posts receives for up to n calls, so that the grants can follow a client
// that uses its credits. A failure leaves the grants where they are.
func (sc *ServerConn) growRecvs(n int) {
	total, err := sc.ep.growRecv(n + sc.l.opts.ExtraRecvs + int(sc.bcRecvs.Load()))
	if err != nil {
		sc.l.opts.Logger.Debug("cannot post more receives", "remote", sc.remote, "posted", total, "err", err)
	}
	// Loaded again: Backchannel stores its count before posting its receives, so
	// they are never counted as call receives (at worst too few are, for a moment).
	bcRecvs := int(sc.bcRecvs.Load())
	sc.mu.Lock() // the receive loop and the completion context both grow
	if calls := total - sc.l.opts.ExtraRecvs - bcRecvs; calls > sc.callRecvs {
		sc.callRecvs = calls
		sc.cred.SetReceives(calls)
	}
	sc.mu.Unlock()
}

// repost returns receive buffer idx to the receive queue.
func (sc *ServerConn) repost(idx int) {
	sc.ep.setRecvLen(idx, sc.ep.recvSize)
	if err := sc.ep.postRecv(idx); err != nil {
		sc.ep.close()
	}
}

// ReadCall waits for the next call. Transport messages that are not calls (RDMA_DONE,
// RDMA_ERROR) and calls with bad headers (answered with RDMA_ERROR here) are handled
// without returning. The connection stays up after header errors.
func (sc *ServerConn) ReadCall(ctx context.Context) (*oncrpc.ServerCall, error) {
	sc.readMu.Lock()
	defer sc.readMu.Unlock()
	return sc.readCall(ctx)
}

// readCall is ReadCall; the caller holds readMu.
func (sc *ServerConn) readCall(ctx context.Context) (*oncrpc.ServerCall, error) {
	for {
		var idx int
		select {
		case c := <-sc.ready:
			return &c.call, nil
		case idx = <-sc.recvq:
		default:
			select {
			case c := <-sc.ready:
				return &c.call, nil
			case idx = <-sc.recvq:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-sc.closed:
				return nil, fmt.Errorf("rpcrdma: read call: %w", oncrpc.ErrClosed)
			case <-sc.ep.stopped:
				return nil, fmt.Errorf("rpcrdma: read call: %w", sc.ep.err())
			}
		}
		call, err := sc.receive(ctx, idx)
		if err != nil {
			sc.Close()
			return nil, err
		}
		if call != nil {
			return &call.call, nil
		}
	}
}

// pull RDMA-Reads a call's chunks (in its own goroutine, so that other calls on the
// connection are not held up) and queues the call for ReadCall. A failure ends the
// connection, as in Linux svcrdma.
func (sc *ServerConn) pull(c *srvCall, body []byte, total int) {
	if c.big == nil {
		if err := sc.takeBig(c, total); err != nil {
			sc.l.opts.Logger.Debug("no reassembly buffer; closing", "remote", sc.remote, "xid", c.h.XID, "err", err)
			sc.cred.Done()
			sc.putCall(c)
			sc.Close()
			return
		}
	}
	if err := c.asm.run(sc.ctx, sc.ep, c.big.mr, body, sc.ord, sc.reads); err != nil {
		sc.l.opts.Logger.Debug("read chunks failed; closing", "remote", sc.remote, "xid", c.h.XID, "err", err)
		sc.cred.Done()
		sc.putCall(c)
		sc.Close()
		return
	}
	if err := c.h.CheckXID(c.big.mr.Buf()[:total]); err != nil {
		sc.rejectPulled(c, err)
		return
	}
	// The inline part has been copied: the receive buffer can go back now.
	sc.repost(c.recvIdx)
	c.recvIdx = -1
	c.call.Msg = oncrpc.Message{Inline: c.big.mr.Buf()[:total]}
	sc.ready <- c
}

// rejectPulled answers c, a call whose RPC message turned out malformed once its read
// chunks were pulled (an XID other than rdma_xid), with ERR_CHUNK, and releases it.
func (sc *ServerConn) rejectPulled(c *srvCall, err error) {
	sc.l.opts.Logger.Debug("bad call", "remote", sc.remote, "xid", c.h.XID, "err", err)
	sc.sendError(sc.ctx, ErrCodeChunk, c.h.XID)
	sc.cred.Done()
	sc.putCall(c)
}

// getCall returns an idle srvCall.
func (sc *ServerConn) getCall() *srvCall {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if n := len(sc.free); n > 0 {
		c := sc.free[n-1]
		sc.free = sc.free[:n-1]
		c.finished = false
		return c
	}
	c := &srvCall{recvIdx: -1, sendIdx: -1}
	c.call.Cookie = c
	return c
}

func (sc *ServerConn) putCall(c *srvCall) {
	sc.releaseBuffers(c)
	sc.unreserve(c)
	c.call.Msg = oncrpc.Message{}
	sc.mu.Lock()
	sc.free = append(sc.free, c)
	sc.mu.Unlock()
}

// receive processes one received message. It returns the call to hand up, nil when the
// message was consumed here, or an error that ends the connection.
func (sc *ServerConn) receive(ctx context.Context, idx int) (*srvCall, error) {
	n := sc.ep.recvLen(idx)
	buf := sc.ep.recvBuf(idx)[:n]
	c := sc.getCall()
	c.recvIdx = idx
	h := &c.h
	hl, err := h.Decode(buf)
	if err != nil {
		var ve *VersionError
		var ce *ChunkError
		switch {
		case errors.As(err, &ve):
			sc.sendError(ctx, ErrCodeVers, ve.XID)
		case errors.As(err, &ce) && ce.HaveXID:
			sc.sendError(ctx, ErrCodeChunk, ce.XID)
		}
		sc.l.opts.Logger.Debug("bad transport header", "remote", sc.remote, "err", err)
		sc.putCall(c)
		return nil, nil
	}
	switch h.Proc {
	case ProcDone:
		sc.done(h.XID)
		sc.putCall(c)
		return nil, nil
	case ProcError:
		sc.putCall(c)
		return nil, nil
	}
	if bc := sc.bc.Load(); bc != nil {
		if body, mt, ok := reverseMessage(buf); ok && mt == oncrpc.Reply {
			bc.receive(h.Credits, body) // a reply to a reverse call (RFC 8167)
			sc.putCall(c)
			return nil, nil
		}
	}
	c.msgp = h.Proc == ProcMsgP
	body, grouped, cerr := checkCall(h, buf[hl:], sc.l.opts.MSGP, c.asm.grouped[:0])
	if grouped != nil {
		c.asm.grouped = grouped
	}
	if cerr != nil {
		sc.l.opts.Logger.Debug("bad call", "remote", sc.remote, "xid", h.XID, "err", cerr)
		sc.sendError(ctx, ErrCodeChunk, h.XID)
		sc.putCall(c)
		return nil, nil
	}

	switch sc.cred.Arrive(h.Credits) {
	case credits.Overrun:
		sc.l.opts.Logger.Debug("credit overrun", "remote", sc.remote, "xid", h.XID)
		sc.sendError(ctx, ErrCodeChunk, h.XID)
		sc.putCall(c)
		return nil, nil
	case credits.Disconnect:
		sc.putCall(c)
		return nil, fmt.Errorf("rpcrdma: %v: %w", sc.remote, credits.ErrOverrun)
	}
	if n := sc.cred.Grow(); n > 0 {
		sc.growRecvs(n)
	}
	sc.stats.call(len(grouped) > 0)

	if len(grouped) == 0 {
		c.call.Msg = oncrpc.Message{Inline: body, Padding: receivedPadding(h, hl)}
		return c, nil
	}

	body, total, err := sc.preparePull(c, body, grouped)
	switch {
	case errors.Is(err, errRefusePull):
		sc.cred.Done()
		sc.sendError(ctx, ErrCodeChunk, h.XID)
		sc.putCall(c)
		return nil, nil
	case err != nil:
		sc.cred.Done()
		sc.putCall(c)
		return nil, err
	}
	if ok, err := sc.pullNow(c, body, total, false); ok || err != nil {
		return nil, err
	}
	sc.startPull(pullJob{c: c, body: body, total: total})
	return nil, nil
}

// errRefusePull marks read chunks that cannot be pulled: the call is answered with
// ERR_CHUNK and the connection stays up.
var errRefusePull = errors.New("rpcrdma: read chunks cannot be pulled")

// preparePull plans the placement of c's read chunks (grouped; body the inline part)
// and takes a registered reassembly buffer for the message (c.big). It returns the
// inline source for the plan (nil when a position-zero chunk carries the message) and
// the message length. Chunks that cannot be pulled give errRefusePull; a buffer that
// cannot be registered gives an error that ends the connection. It never blocks.
func (sc *ServerConn) preparePull(c *srvCall, body []byte, grouped []chunks.ReadChunk) ([]byte, int, error) {
	if sc.ord == 0 || sc.noPull.Load() {
		// The client offered no inbound RDMA Read (IRD 0, e.g. MPA revision 1) or
		// announced maxrdmaread 0 (seed §6.2): its chunks cannot be pulled. (Linux
		// svcrdma refuses IRD 0 connections outright.)
		sc.l.opts.Logger.Debug("read chunks on a connection without RDMA Read", "remote", sc.remote, "xid", c.h.XID)
		return nil, 0, errRefusePull
	}
	// Pull the read chunks straight into their place in a registered buffer.
	var pzrc []chunks.Segment
	rcs := grouped
	if grouped[0].Position == 0 {
		pzrc, rcs = grouped[0].Segments, grouped[1:]
		body = nil
	}
	total, err := c.asm.planAssembly(len(body), pzrc, rcs, sc.l.opts.MaxCall)
	if err != nil {
		sc.l.opts.Logger.Debug("read chunks do not fit", "remote", sc.remote, "xid", c.h.XID, "err", err)
		return nil, 0, errRefusePull
	}
	sc.stats.readBytes.Add(uint64(total - len(body)))
	// The buffer is accounted against the memory budget before it is taken: when the
	// budget is spent the call waits for a puller (takeBig), holding only its receive
	// buffer, which is not reposted until then (back-pressure on the peer's credits).
	if !sc.acct.TryReserve(int64(bufSize(total))) {
		return body, total, nil
	}
	c.charge = int64(bufSize(total))
	if err := sc.getBig(c, total); err != nil {
		return nil, 0, err
	}
	return body, total, nil
}

// getBig takes a registered reassembly buffer of total bytes for c, whose charge is
// reserved already (given back if no buffer can be registered).
func (sc *ServerConn) getBig(c *srvCall, total int) error {
	big, err := sc.l.bufs.get(total, verbs.AccessLocalWrite)
	if err != nil {
		sc.acct.Release(c.charge)
		c.charge = 0
		return err
	}
	c.big = big
	return nil
}

// takeBig waits until the memory budget allows c's reassembly buffer (total bytes)
// and takes it; a puller calls it for a call preparePull could not give one. An
// error (the connection closed, or no buffer) leaves c without one.
func (sc *ServerConn) takeBig(c *srvCall, total int) error {
	n := int64(bufSize(total))
	if err := sc.acct.Reserve(sc.ctx, n); err != nil {
		return fmt.Errorf("rpcrdma: %v: xid %#08x: waiting for memory budget: %w", sc.remote, c.h.XID, err)
	}
	c.charge = n
	return sc.getBig(c, total)
}

// pullInline starts pulling c's read chunks from the completion context (receiveInline
// calls it once c is within its credits), so that a call with read chunks reaches the
// handler with no goroutine in between: its Reads are posted here when their Read
// credits and send-queue slots are free now, else a puller takes it. It never blocks;
// what would (answering ERR_CHUNK, closing) is left to a goroutine.
func (sc *ServerConn) pullInline(c *srvCall, body []byte, grouped []chunks.ReadChunk) {
	body, total, err := sc.preparePull(c, body, grouped)
	switch {
	case errors.Is(err, errRefusePull):
		go func() {
			sc.cred.Done()
			sc.sendError(sc.ctx, ErrCodeChunk, c.h.XID)
			sc.putCall(c)
		}()
		return
	case err != nil:
		go sc.pullFailed(c, err)
		return
	}
	ok, err := sc.pullNow(c, body, total, true)
	if err != nil {
		go func() {
			sc.l.opts.Logger.Debug("read chunks failed; closing", "remote", sc.remote, "err", err)
			sc.Close()
		}()
		return
	}
	if !ok {
		sc.startPull(pullJob{c: c, body: body, total: total})
	}
}

// pullNow posts the RDMA Reads of c's read chunks as one chain from the receive loop
// or (nowait) the completion context, when the connection's Read credits for all of
// them (and, with nowait, their send-queue slots) are free now and the chain fits the
// send queue, and reports whether it did; the completion handler (pulled) then hands
// the call up, with no goroutine in between. Otherwise the call goes to a puller
// (startPull), which can wait for credits Read by Read. An error (c released) ends
// the connection.
func (sc *ServerConn) pullNow(c *srvCall, body []byte, total int, nowait bool) (bool, error) {
	k := c.asm.remotes()
	if c.big == nil || k > sc.ord || k > sc.ep.maxChain() || (nowait && k == 0) {
		return false, nil
	}
	for c.asm.held = 0; c.asm.held < k; c.asm.held++ {
		if !sc.reads.TryAcquire() {
			sc.releaseReads(c)
			return false, nil
		}
	}
	slots := 0
	if nowait {
		if slots = sc.trySQ(k); slots < k {
			sc.releaseReads(c)
			return false, nil
		}
	}
	if c.asm.done == nil {
		c.asm.done = func(err error) { sc.pulled(c, err) }
	}
	c.asm.total = total
	if err := c.asm.start(sc.ctx, sc.ep, c.big.mr, body, slots, c.asm.done); err != nil {
		sc.releaseReads(c)
		sc.cred.Done()
		sc.putCall(c)
		return true, fmt.Errorf("rpcrdma: %v: xid %#08x: pull read chunks: %w", sc.remote, c.h.XID, err)
	}
	return true, nil
}

// trySQ takes k send-queue slots if they are free now and returns k, else 0.
func (sc *ServerConn) trySQ(k int) int {
	if !sc.ep.sq.tryTake(k) {
		return 0
	}
	return k
}

// releaseReads gives back the Read credits c holds.
func (sc *ServerConn) releaseReads(c *srvCall) {
	for ; c.asm.held > 0; c.asm.held-- {
		sc.reads.Release()
	}
}

// pulled runs, in the completion context, when every RDMA Read pullNow posted for c has
// completed (or at once from the receive loop, when there was nothing to read): it
// gives back the receive buffer and the Read credits and delivers the call, to
// ServeCalls' deliver directly when it runs, else through ready for ReadCall. A failed
// Read ends the connection, as in pull.
func (sc *ServerConn) pulled(c *srvCall, err error) {
	sc.releaseReads(c)
	if err != nil {
		go sc.pullFailed(c, err)
		return
	}
	if err := c.h.CheckXID(c.big.mr.Buf()[:c.asm.total]); err != nil {
		go sc.rejectPulled(c, err)
		return
	}
	// The inline part was copied before the Reads were posted.
	sc.repost(c.recvIdx)
	c.recvIdx = -1
	c.call.Msg = oncrpc.Message{Inline: c.big.mr.Buf()[:c.asm.total]}
	sc.pushMu.RLock()
	if deliver := sc.push; deliver != nil {
		deliver(&c.call, false)
		sc.pushMu.RUnlock()
		return
	}
	sc.pushMu.RUnlock()
	sc.ready <- c
}

// pullFailed ends the connection after c's read chunks could not be pulled.
func (sc *ServerConn) pullFailed(c *srvCall, err error) {
	sc.l.opts.Logger.Debug("read chunks failed; closing", "remote", sc.remote, "xid", c.h.XID, "err", err)
	sc.cred.Done()
	sc.putCall(c)
	sc.Close()
}

// pullJob is a call whose read chunks are to be pulled.
type pullJob struct {
	c     *srvCall
	body  []byte
	total int
}

// maxPullers bounds the goroutines pulling read chunks for one connection.
const maxPullers = 4

// startPull hands a job to an idle puller, starting one if all are busy and fewer than
// maxPullers run; otherwise the job waits in the queue.
func (sc *ServerConn) startPull(j pullJob) {
	select {
	case sc.pullq <- j:
	default:
		// Queue full cannot happen (it holds every receive); fall through safely.
		go sc.pull(j.c, j.body, j.total)
		return
	}
	sc.mu.Lock()
	start := sc.pullers < maxPullers && sc.idlePullers == 0
	if start {
		sc.pullers++
	}
	sc.mu.Unlock()
	if start {
		go sc.puller()
	}
}

// puller pulls queued jobs until the connection closes.
func (sc *ServerConn) puller() {
	for {
		sc.mu.Lock()
		sc.idlePullers++
		sc.mu.Unlock()
		var j pullJob
		select {
		case j = <-sc.pullq:
		case <-sc.closed:
			return
		}
		sc.mu.Lock()
		sc.idlePullers--
		sc.mu.Unlock()
		sc.pull(j.c, j.body, j.total)
	}
}

// checkCall checks what the header decoder cannot for a call (h.Proc RDMA_MSG,
// RDMA_NOMSG or RDMA_MSGP; body follows the hl-byte header): RDMA_MSGP only when
// allowed, and without read chunks; the read list grouped into read chunks (into rcs)
// in position order without overlap; an RDMA_NOMSG call carrying its message in a
// position-zero read chunk; an RPC message that starts inline starting with rdma_xid
// (RFC 8166 §4.5.2; one that starts in a read chunk is checked when pulled, checkPulled). It returns the inline body (RDMA_MSGP: padded, see
// receivedPadding) and the read chunks. Any error is answered with ERR_CHUNK.
func checkCall(h *Header, body []byte, allowMSGP bool, rcs []chunks.ReadChunk) ([]byte, []chunks.ReadChunk, error) {
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
	case ProcMsgP:
		if !allowMSGP {
			return nil, nil, errors.New("RDMA_MSGP not accepted")
		}
		if len(h.ReadList) > 0 {
			return nil, nil, errMSGPReadList
		}
	default:
		return nil, nil, fmt.Errorf("%v is not a call", h.Proc)
	}
	grouped, err := chunks.Group(rcs, h.ReadList)
	if err != nil {
		return nil, grouped, err
	}
	inlineStart := len(grouped) == 0 || grouped[0].Position != 0
	if h.Proc == ProcNoMsg && inlineStart {
		return nil, grouped, errors.New("RDMA_NOMSG call without a position-zero read chunk")
	}
	if h.Proc != ProcNoMsg && inlineStart {
		if err := h.CheckXID(body); err != nil {
			return nil, grouped, err
		}
	}
	return body, grouped, nil
}
