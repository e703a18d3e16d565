// Client send path: a call marshalled and posted, with its caller memory registered for
// the chunks (Linux rpc_rdma.c rpcrdma_marshal_req).

package rpcrdma

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// register registers caller memory for one call (see regCache).
func (cc *clientConn) register(r *request, buf []byte, acc verbs.Access) (verbs.MR, error) {
	g, err := cc.c.regs.register(buf, acc)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: xid %#08x: %w", r.xid, err)
	}
	r.regs = append(r.regs, g)
	return g.mr, nil
}

// release revokes every registration made for the call: when it returns, the server
// can no longer read or write the caller's memory (Linux frwr_unmap_sync). A region the
// reply's Send With Invalidate named is revoked already (the provider invalidates it
// before it delivers the receive, RFC 5040 §5.3) and is not invalidated again (Linux
// frwr_reminv).
func (cc *clientConn) release(r *request) {
	for i, g := range r.regs {
		if r.inv && g.mr.RKey() == r.invSTag {
			cc.c.regs.released(g)
		} else {
			cc.c.regs.release(g)
		}
		r.regs[i] = nil
	}
	r.regs = r.regs[:0]
	r.replyMR = nil
}

// revoke revokes the registrations of a call left pending by its caller (an orphan)
// without handing them back: until its reply comes (or the connection ends, then
// releaseRevoked), the reply may name one of their STags in a Send With Invalidate,
// and that STag must still be the region's, invalid, rather than a stale key of a
// region re-keyed for another call, which costs the connection a Terminate.
func (cc *clientConn) revoke(r *request) {
	for _, g := range r.regs {
		cc.c.regs.revoke(g)
	}
	r.replyMR = nil
}

// releaseRevoked hands back the registrations revoke revoked.
func (cc *clientConn) releaseRevoked(r *request) {
	for i, g := range r.regs {
		cc.c.regs.released(g)
		r.regs[i] = nil
	}
	r.regs = r.regs[:0]
}

// segmentOf describes a whole registered region as one segment.
func segmentOf(mr verbs.MR, n int) chunks.Segment {
	return chunks.Segment{Handle: mr.RKey(), Length: uint32(n), Offset: mr.Addr()}
}

// send marshals the call and posts it: planCall decides how it travels (Linux
// rpcrdma_marshal_req), registerCall registers the memory the plan's chunks name, and
// the header and inline part go out in one Send. Registrations are revoked by the
// caller (release) on every path; a send buffer taken here is given back on every
// failure.
func (cc *clientConn) send(ctx context.Context, r *request, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	cc.mu.Lock()
	lim := callLimits{inlineSend: cc.inlineSend, maxInline: cc.maxInline, noReadChunks: cc.noReadChunks}
	lim.msgpAlign = cc.msgpAlign
	cc.mu.Unlock()
	o := &cc.c.opts
	lim.maxReply, lim.callMaxReply = call.MaxReply, call.MaxReply
	if lim.maxReply <= 0 {
		lim.maxReply = o.MaxReply
	}
	lim.msgpThresh = o.MSGPThresh
	h := &r.hdr
	h.Reset()
	h.XID, h.Vers, h.Credits = call.XID, Version1, uint32(cc.window.Max())
	p, err := planCall(h, &call.Msg, call.ReplySinks, &lim)
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, err)
	}
	if err := cc.registerCall(r, &p, call, reply); err != nil {
		return err
	}
	cc.growRecvs(cc.window.InUse())

	idx, buf, err := cc.ep.getSendBuf(ctx)
	if err != nil {
		return cc.sendErr(err)
	}
	n, err := marshalCall(buf, h, &p, &call.Msg)
	if err != nil {
		cc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, err)
	}
	return cc.postCall(ctx, r, call.XID, idx, buf[:n])
}

// registerCall registers the memory planCall's chunks name, in the plan's order (reply
// sinks, reply buffer, payloads, then a long call's inline stream), and fills in their
// segments' handles and offsets.
func (cc *clientConn) registerCall(r *request, p *callPlan, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	h := &r.hdr
	const sinkAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite
	for i, c := range h.WriteList {
		mr, err := cc.register(r, call.ReplySinks[i], sinkAccess)
		if err != nil {
			return err
		}
		c[0] = segmentOf(mr, int(c[0].Length))
	}
	if p.replyChunk > 0 {
		if cap(reply.Inline) < p.replyChunk {
			reply.Inline = make([]byte, 0, p.replyChunk)
		}
		mr, err := cc.register(r, reply.Inline[:p.replyChunk], sinkAccess)
		if err != nil {
			return err
		}
		r.replyMR = mr
		h.ReplyChunk[0] = segmentOf(mr, p.replyChunk)
	}
	rl := h.ReadList
	if p.long {
		rl = rl[1:]
	}
	j := 0
	for _, pl := range call.Msg.Payloads {
		if !p.readChunks || len(pl.Data) == 0 {
			continue
		}
		mr, err := cc.register(r, pl.Data, verbs.AccessRemoteRead)
		if err != nil {
			return err
		}
		rl[j].Segment = segmentOf(mr, len(pl.Data))
		j++
	}
	if p.long {
		mr, err := cc.register(r, call.Msg.Inline, verbs.AccessRemoteRead)
		if err != nil {
			return err
		}
		h.ReadList[0].Segment = segmentOf(mr, len(call.Msg.Inline))
	}
	return nil
}

// marshalCall writes the transport header h and the inline part of msg (RDMA_MSGP: with
// its payloads padded) into buf and returns the length.
func marshalCall(buf []byte, h *Header, p *callPlan, msg *oncrpc.Message) (int, error) {
	b, err := h.Append(buf[:0])
	if err != nil {
		return 0, err
	}
	switch {
	case p.long:
	case p.readChunks:
		b = append(b, msg.Inline...)
	case h.Proc == ProcMsgP:
		b = appendPadded(b, msg, 0, xdr.Padding{Align: h.Align, Thresh: h.Thresh, Base: len(b)})
	default:
		b = xdr.Flatten(b, msg.Inline, msg.Payloads)
	}
	if len(b) > len(buf) {
		return 0, fmt.Errorf("message of %d bytes overflows the send buffer", len(b))
	}
	return len(b), nil
}

// postCall makes r pending under its XID and posts send buffer idx holding msg; on
// failure the buffer is given back and r is not pending.
func (cc *clientConn) postCall(ctx context.Context, r *request, xid uint32, idx int, msg []byte) error {
	if tr := cc.c.opts.Trace; tr != nil {
		tr(true, msg)
	}
	cc.mu.Lock()
	if cc.isDead.Load() {
		cc.mu.Unlock()
		cc.ep.putSendBuf(idx)
		return errConnLost
	}
	if i, dup := cc.pending.find(xid); dup {
		orphan := cc.pending.slots[i].r.orphan
		cc.mu.Unlock()
		cc.ep.putSendBuf(idx)
		if !orphan {
			return fmt.Errorf("rpcrdma: xid %#08x: %w", xid, errXIDInFlight)
		}
		// A resend of a call its caller gave up on, whose reply (and credit) is
		// still due here: the two replies could not be told apart, so the orphan's
		// credit would never come back. Resend it on a new connection, as after a
		// timeout.
		cc.fail(errConnLost)
		return errConnLost
	}
	cc.pending.put(xid, r)
	r.sole = cc.pending.n == 1
	cc.mu.Unlock()
	if err := cc.ep.postSendBuf(ctx, idx, len(msg), verbs.OpSend, 0, nil); err != nil {
		cc.mu.Lock()
		cc.pending.take(xid)
		cc.mu.Unlock()
		return cc.sendErr(err)
	}
	return nil
}

// sendErr maps a send failure on a dead connection to errConnLost.
func (cc *clientConn) sendErr(err error) error {
	select {
	case <-cc.dead:
		return errConnLost
	case <-cc.ep.qp.Done():
		return errConnLost
	default:
	}
	return err
}
