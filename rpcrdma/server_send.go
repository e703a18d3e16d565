// Server send path: WriteReply (write chunks, inline, reply chunk or read chunks held
// until RDMA_DONE), Send With Invalidate and RDMA_ERROR replies (Linux svc_rdma_sendto.c).

package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// sendError answers xid with RDMA_ERROR (plain Send, never remote invalidation).
func (sc *ServerConn) sendError(ctx context.Context, code ErrCode, xid uint32) {
	idx, buf, err := sc.ep.getSendBuf(ctx)
	if err != nil {
		return
	}
	sc.stats.errorSent(code)
	var b []byte
	if code == ErrCodeVers {
		b = AppendErrVers(buf[:0], xid, Version1, sc.ep.takeGrant(idx))
	} else {
		b = AppendErrChunk(buf[:0], xid, Version1, sc.ep.takeGrant(idx))
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	sc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil)
}

// WriteReply sends reply for call: payloads into the client's write chunks (the i-th
// payload into the i-th write chunk) by RDMA Write, the rest inline or, when too long,
// through the reply chunk (RDMA_NOMSG), or as read chunks when ReplyReadChunks allows.
// A reply that fits nothing the client offered, or a payload longer than its write
// chunk, is answered with ERR_CHUNK and WriteReply returns an error. It returns when the transport no longer refers to reply.
func (sc *ServerConn) WriteReply(call *oncrpc.ServerCall, reply *oncrpc.Message) error {
	c, ok := call.Cookie.(*srvCall)
	if !ok || c == nil {
		return errors.New("rpcrdma: WriteReply: call does not come from this transport")
	}
	defer sc.putCall(c)
	// A call delivered in the completion context holds a reservation: its
	// WriteReply may be running there, where nothing may block.
	reserved := c.sendIdx >= 0
	if reply == nil {
		sc.finishCall(c)
		return nil
	}
	if sc.isClosed.Load() {
		sc.finishCall(c)
		return fmt.Errorf("rpcrdma: write reply: %w", oncrpc.ErrClosed)
	}
	err := sc.writeReply(c, reply)
	sc.finishCall(c)
	for i, g := range c.regs {
		sc.regs.release(g)
		c.regs[i] = nil
	}
	c.regs = c.regs[:0]
	if errors.Is(err, errReplyTooLarge) {
		if reserved {
			go sc.sendError(context.Background(), ErrCodeChunk, c.h.XID)
		} else {
			sc.sendError(context.Background(), ErrCodeChunk, c.h.XID)
		}
	}
	return err
}

// finishCall releases what the call holds on the connection (its receive buffer or
// reassembly buffer, and its credit) once nothing refers to the call's memory any more.
// It runs before the reply's Send is posted: the client may send its next call as soon
// as the reply arrives, and that call must find a posted receive and a free credit.
func (sc *ServerConn) finishCall(c *srvCall) {
	if c.finished {
		return
	}
	c.finished = true
	sc.releaseBuffers(c)
	sc.cred.Done()
}

// releaseBuffers gives back the call's receive buffer (reposted) and its reassembly
// buffer, if it still holds them.
func (sc *ServerConn) releaseBuffers(c *srvCall) {
	if c.recvIdx >= 0 {
		sc.repost(c.recvIdx)
		c.recvIdx = -1
	}
	if c.big != nil {
		sc.l.bufs.put(c.big)
		c.big = nil
	}
	if c.charge > 0 {
		sc.acct.Release(c.charge)
		c.charge = 0
	}
}

// writeReply plans the reply (planReply) and executes the plan: it registers the
// payloads placed in write chunks, builds the RDMA Writes (payloads, or the stream into
// the reply chunk), encodes the header (and inline stream) into a send buffer, and
// posts the Writes and the Send. Whatever fails, one cleanup path gives back the send
// buffer and the stream buffer and waits until nothing posted can touch memory any
// more; the caller releases the registrations.
func (sc *ServerConn) writeReply(c *srvCall, reply *oncrpc.Message) error {
	in, out := &c.h, &c.out
	out.Reset()
	out.XID, out.Vers = in.XID, Version1 // out.Credits: with the send buffer (execReply)
	sc.mu.Lock()
	lim := replyLimits{inline: min(sc.inlineSend, sc.ep.sendSize), msgp: c.msgp, readChunks: sc.l.opts.ReplyReadChunks, noReadChunks: sc.noReadTarget.Load()}
	sc.mu.Unlock()
	p, err := planReply(out, in, reply, &lim)
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w", in.XID, err)
	}
	x := replyExec{idx: -1, w: sc.ep.newWaiter()}
	err = sc.execReply(c, reply, &p, &x)
	if x.idx >= 0 {
		sc.ep.putSendBuf(x.idx)
	}
	if werr := sc.ep.wait(context.Background(), x.w); err == nil && werr != nil {
		err = fmt.Errorf("rpcrdma: xid %#08x: %s: %w", in.XID, x.stage, werr)
	}
	if x.big != nil {
		sc.l.bufs.put(x.big)
		sc.acct.Uncharge(x.charge)
	}
	if err == nil {
		sc.stats.replySent(&p, in, reply)
	}
	return err
}

// replyExec is what executing a reply plan holds, for writeReply's cleanup.
type replyExec struct {
	idx    int     // send buffer taken and not posted, or -1
	big    *bigBuf // stream buffer to give back (not one kept until RDMA_DONE)
	charge int64   // bytes of the memory budget big holds
	w      *waiter // every work request posted
	stage  string  // what the work requests on w were, for errors
}

// execReply executes plan p for call c (see writeReply).
func (sc *ServerConn) execReply(c *srvCall, reply *oncrpc.Message, p *replyPlan, x *replyExec) error {
	ctx := context.Background()
	in, out := &c.h, &c.out
	// RDMA Writes: the placed payloads, then the stream into the reply chunk.
	c.wrs = c.wrs[:0]
	aliased := false // a placed payload lies in the call's own memory
	for i := range in.WriteList {
		if p.placed&(1<<i) == 0 || len(reply.Payloads[i].Data) == 0 {
			continue
		}
		data := reply.Payloads[i].Data
		g, err := sc.regs.register(data, 0)
		if err != nil {
			return fmt.Errorf("rpcrdma: xid %#08x: register payload: %w", in.XID, err)
		}
		c.regs = append(c.regs, g)
		if c.wrs, err = appendWrites(c.wrs, g.mr, 0, len(data), in.WriteList[i]); err != nil {
			return fmt.Errorf("rpcrdma: xid %#08x: write chunk %d: %w", in.XID, i, err)
		}
		aliased = aliased || sc.inCallMemory(c, data)
	}
	op, inv := sc.invalidate(c)
	switch p.path {
	case pathReplyChunk, pathReadChunk:
		big, err := sc.l.bufs.get(p.stream, 0)
		if err != nil {
			return err
		}
		// The handler's reply is built already: account the copy, do not wait.
		x.big, x.charge = big, int64(len(big.mr.Buf()))
		sc.acct.Charge(x.charge)
		appendStream(big.mr.Buf()[:0], reply, p.placed)
		if p.path == pathReplyChunk {
			if c.wrs, err = appendWrites(c.wrs, big.mr, 0, p.stream, in.ReplyChunk); err != nil {
				return fmt.Errorf("rpcrdma: xid %#08x: reply chunk: %w", in.XID, err)
			}
			break
		}
		// The client may read the whole region, not only the segment: what the
		// pooled buffer held before (another call's data, perhaps another
		// connection's) must not be there to read.
		clear(big.mr.Buf()[p.stream:])
		if err := big.mr.Reregister(verbs.AccessRemoteRead); err != nil {
			return fmt.Errorf("rpcrdma: xid %#08x: register reply read chunk: %w", in.XID, err)
		}
		out.ReadList[0].Segment = segmentOf(big.mr, p.stream)
		sc.keepUntilDone(in.XID, big, x.charge)
		x.big, x.charge = nil, 0
		op, inv = verbs.OpSend, 0 // the client must keep its own STags for nothing; no invalidation ambiguity
	}

	idx, buf, err := sc.takeSendBuf(ctx, c)
	if err != nil {
		return err
	}
	x.idx = idx
	out.Credits = sc.ep.takeGrant(idx)
	b, err := out.Append(buf[:0])
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: encode reply header: %w", in.XID, err)
	}
	switch {
	case p.path == pathInline && out.Proc == ProcMsgP:
		b = appendPadded(b, reply, p.placed, xdr.Padding{Align: out.Align, Thresh: out.Thresh, Base: len(b)})
	case p.path == pathInline:
		b = appendStream(b, reply, p.placed)
	}
	if len(b) > len(buf) {
		// planReply keeps every reply within the send buffer; one that is not was
		// encoded elsewhere (append reallocated), and its Send would carry the wrong
		// bytes.
		return fmt.Errorf("rpcrdma: xid %#08x: reply of %d bytes overflows the %d-byte send buffer", in.XID, len(b), len(buf))
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}

	// The call's memory (receive or reassembly buffer) and credit are released before
	// the Send is posted: the client may send its next call as soon as the reply
	// arrives, and that call must find a posted receive and a free credit. When a
	// payload being written lies in that memory, the Writes go first and are waited for.
	if len(c.wrs)+1 > sc.ep.maxChain() || aliased {
		x.stage = "write chunks"
		for wrs := c.wrs; len(wrs) > 0; {
			n := min(len(wrs), sc.ep.maxChain())
			if err := sc.ep.postChain(ctx, wrs[:n], -1, 0, 0, 0, 0, x.w); err != nil {
				return fmt.Errorf("rpcrdma: xid %#08x: write chunks: %w", in.XID, err)
			}
			wrs = wrs[n:]
		}
		if err := sc.ep.wait(ctx, x.w); err != nil {
			x.w = sc.ep.newWaiter()
			return fmt.Errorf("rpcrdma: xid %#08x: write chunks: %w", in.XID, err)
		}
		x.w = sc.ep.newWaiter()
		c.wrs = c.wrs[:0]
	}
	sc.finishCall(c)
	x.stage = "send reply"
	x.idx = -1 // posted (or given back) below, whatever happens
	// A lone Send: the reply is in the send buffer, which returns to its pool when
	// the Send completes. Nothing waits for that (a failed Send fails the
	// connection), so a reply sent from the completion context (a call delivered
	// inline, which holds a send-queue slot) never waits for anything.
	w, held := x.w, 0
	if len(c.wrs) == 0 {
		w = nil
	}
	if c.sqHeld {
		c.sqHeld, held = false, 1
	}
	if err := sc.ep.postChain(ctx, c.wrs, idx, len(b), op, inv, held, w); err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: send reply: %w", in.XID, err)
	}
	return nil
}

// takeSendBuf returns the send buffer reserved for c, or waits for a free one.
func (sc *ServerConn) takeSendBuf(ctx context.Context, c *srvCall) (int, []byte, error) {
	if i := c.sendIdx; i >= 0 {
		c.sendIdx = -1
		return i, sc.ep.sendBuf(i), nil
	}
	return sc.ep.getSendBuf(ctx)
}

// inCallMemory reports whether b lies (partly) in memory call c holds: its receive
// buffer or its reassembly buffer.
func (sc *ServerConn) inCallMemory(c *srvCall, b []byte) bool {
	if c.recvIdx >= 0 && overlaps(b, sc.ep.recvBuf(c.recvIdx)) {
		return true
	}
	return c.big != nil && overlaps(b, c.big.mr.Buf())
}

// overlaps reports whether a and b share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// invalidate chooses Send With Invalidate: when the client allows it and the call's
// chunks name exactly one distinct STag (invalidateSTag).
func (sc *ServerConn) invalidate(c *srvCall) (verbs.SendOp, uint32) {
	if !sc.peer.SendInvOK || sc.l.opts.NoSendInvalidate {
		return verbs.OpSend, 0
	}
	if stag, ok := invalidateSTag(&c.h); ok {
		return verbs.OpSendInv, stag
	}
	return verbs.OpSend, 0
}

// doneEntry is a reply kept registered as read chunks until RDMA_DONE or a timeout.
type doneEntry struct {
	big    *bigBuf
	charge int64 // bytes of the memory budget big holds
	timer  *time.Timer
}

func (d *doneEntry) release(sc *ServerConn) {
	d.timer.Stop()
	d.big.mr.Invalidate()
	sc.l.bufs.put(d.big)
	sc.acct.Uncharge(d.charge)
}

func (sc *ServerConn) keepUntilDone(xid uint32, big *bigBuf, charge int64) {
	d := &doneEntry{big: big, charge: charge}
	sc.mu.Lock()
	if old, ok := sc.dones[xid]; ok {
		delete(sc.dones, xid)
		old.release(sc)
	}
	sc.dones[xid] = d
	d.timer = time.AfterFunc(sc.l.opts.DoneTimeout, func() {
		sc.mu.Lock()
		if sc.dones[xid] == d {
			// Revoked before the entry goes: once it is gone, nothing can read it.
			d.big.mr.Invalidate()
			delete(sc.dones, xid)
			sc.mu.Unlock()
			sc.l.opts.Logger.Debug("RDMA_DONE timeout; reply read chunks reclaimed", "xid", xid)
			d.release(sc)
			return
		}
		sc.mu.Unlock()
	})
	sc.mu.Unlock()
}

// done handles RDMA_DONE: the client has pulled the reply's read chunks.
func (sc *ServerConn) done(xid uint32) {
	sc.mu.Lock()
	d, ok := sc.dones[xid]
	if ok {
		delete(sc.dones, xid)
	}
	sc.mu.Unlock()
	if ok {
		d.release(sc)
	}
}
