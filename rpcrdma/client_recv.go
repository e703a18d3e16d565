// Client receive path: replies matched to calls by XID and unmarshalled, including
// replies in read chunks (Linux rpc_rdma.c rpcrdma_reply_handler).

package rpcrdma

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// onRecv handles a receive completion in the completion context (see
// verbs.CompletionHandler): it matches the reply to its call by XID and wakes the
// caller directly. Unknown XIDs are dropped.
func (cc *clientConn) onRecv(idx, n int, wc *verbs.Completion) {
	if wc.Status != verbs.StatusSuccess {
		return // flushed: the connection is going away
	}
	buf := cc.ep.recvBuf(idx)[:n]
	if tr := cc.c.opts.Trace; tr != nil {
		tr(false, buf)
	}
	if n < FixedSize {
		cc.repost(idx)
		return
	}
	if body, mt, ok := reverseMessage(buf); ok && mt == oncrpc.Call {
		cc.reverseCall(idx, body) // a reverse-direction call (RFC 8167)
		return
	}
	if binary.BigEndian.Uint32(buf[4:]) == Version1 {
		// The grant applies here, in the order the messages arrive, not when each
		// caller decodes its reply: the server counts on the requester following the
		// grant it received last (credits.Conn).
		cc.window.Update(binary.BigEndian.Uint32(buf[8:]))
	}
	xid := binary.BigEndian.Uint32(buf)
	cc.mu.Lock()
	r, ok := cc.pending.take(xid)
	orphan := false
	if ok {
		orphan = r.orphan
		r.handed = !orphan
	}
	cc.mu.Unlock()
	if !ok {
		cc.repost(idx)
		return
	}
	r.recvIdx, r.recvLen = idx, n
	r.inv, r.invSTag = wc.Flags&verbs.WithInvalidate != 0, wc.InvalidatedSTag
	if orphan {
		go cc.finishOrphan(r)
		return
	}
	r.deliver()
}

// finishOrphan completes a call whose caller gave up: it acknowledges reply read chunks
// with RDMA_DONE so the server can release them, then frees the credit.
func (cc *clientConn) finishOrphan(r *request) {
	buf := cc.ep.recvBuf(r.recvIdx)[:r.recvLen]
	if _, err := r.rhdr.Decode(buf); err == nil {
		if len(r.rhdr.ReadList) > 0 {
			cc.sendDone(context.Background(), r.xid)
		}
	}
	cc.repost(r.recvIdx)
	cc.releaseRevoked(r)
	cc.window.Release()
	cc.c.putRequest(r)
}

// repost gives a receive buffer back to the receive queue.
func (cc *clientConn) repost(idx int) {
	if err := cc.ep.postRecv(idx); err != nil {
		cc.fail(err)
	}
}

// sendDone sends RDMA_DONE for xid (seed §3.8).
func (cc *clientConn) sendDone(ctx context.Context, xid uint32) error {
	idx, buf, err := cc.ep.getSendBuf(ctx)
	if err != nil {
		return err
	}
	d := Header{XID: xid, Vers: Version1, Credits: uint32(cc.window.Max()), Proc: ProcDone}
	b, _ := d.Append(buf[:0])
	if tr := cc.c.opts.Trace; tr != nil {
		tr(true, b)
	}
	return cc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil)
}

// complete decodes the reply attached to r into reply (Linux rpcrdma_reply_handler).
func (cc *clientConn) complete(ctx context.Context, r *request, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	defer cc.repost(r.recvIdx)
	buf := cc.ep.recvBuf(r.recvIdx)[:r.recvLen]
	h := &r.rhdr
	hl, err := h.Decode(buf)
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w: %w", call.XID, ErrBadReply, err)
	}
	reply.Placed = reply.Placed[:0]
	reply.Padding = receivedPadding(h, hl)
	switch h.Proc {
	case ProcError:
		return &RemoteError{XID: h.XID, Code: h.ErrCode, VersLow: h.VersLow, VersHigh: h.VersHigh}
	case ProcMsg, ProcNoMsg, ProcMsgP:
	default:
		return fmt.Errorf("rpcrdma: xid %#08x: %w: unexpected %v", call.XID, ErrBadReply, h.Proc)
	}

	replyCap := 0
	if r.replyMR != nil {
		replyCap = min(len(r.replyMR.Buf()), cap(reply.Inline))
	}
	// Only the sinks offered as write chunks may come back as such (planCall offers
	// none when the results fit inline, and an empty sink ends the list).
	offered := call.ReplySinks[:min(len(r.hdr.WriteList), len(call.ReplySinks))]
	kind, body, grouped, replyLen, err := parseReply(h, buf[hl:], offered, replyCap, r.rcs[:0])
	if grouped != nil {
		r.rcs = grouped
	}
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w: %w", call.XID, ErrBadReply, err)
	}
	// Write chunks: lengths tell how much of each sink was filled.
	for i, wc := range h.WriteList {
		reply.Placed = append(reply.Placed, call.ReplySinks[i][:wc.Length()])
	}

	switch kind {
	case replyInReadChunks:
		// A long reply returned as read chunks: pull them, then RDMA_DONE. Not from a
		// server that announced maxrdmaread 0 (seed §6.2); RDMA_DONE still lets it go.
		cc.mu.Lock()
		noReads := cc.ord == 0
		cc.mu.Unlock()
		if noReads {
			err = fmt.Errorf("rpcrdma: xid %#08x: %w: %w", call.XID, ErrBadReply, errPeerNoReads)
		} else {
			err = cc.pullReply(ctx, r, h, body, grouped, call, reply)
		}
		if derr := cc.sendDone(ctx, call.XID); err == nil && derr != nil {
			err = fmt.Errorf("rpcrdma: xid %#08x: send RDMA_DONE: %w", call.XID, derr)
		}
		return err
	case replyInChunk:
		// Revoke the server's access before handing the bytes to the caller.
		cc.release(r)
		reply.Inline = reply.Inline[:replyLen]
		return nil
	default:
		cc.release(r)
		reply.Inline = append(reply.Inline[:0], body...)
		return nil
	}
}

// replyKind says where a reply's RPC message is.
type replyKind int

const (
	replyInline       replyKind = iota // after the header (RDMA_MSG, RDMA_MSGP)
	replyInChunk                       // written into the reply chunk (RDMA_NOMSG)
	replyInReadChunks                  // to be pulled from read chunks, then RDMA_DONE
)

// parseReply checks a decoded RDMA_MSG, RDMA_NOMSG or RDMA_MSGP reply header h against
// what the call offered (sinks: the write chunks, in order; replyCap: the reply chunk's
// size, 0 when none was offered) and says where the RPC message is: body is what follows
// the header (RDMA_MSGP: padded, see receivedPadding), grouped the reply's read chunks
// (grouped into rcs), replyLen the bytes written to the reply chunk. Linux
// (rpcrdma_reply_handler) applies the same rules, less read chunks and RDMA_MSGP.
func parseReply(h *Header, body []byte, sinks [][]byte, replyCap int, rcs []chunks.ReadChunk) (kind replyKind, _ []byte, grouped []chunks.ReadChunk, replyLen uint64, err error) {
	switch h.Proc {
	case ProcMsg, ProcNoMsg, ProcMsgP:
	default:
		return 0, nil, nil, 0, fmt.Errorf("unexpected %v", h.Proc)
	}
	if len(h.WriteList) > len(sinks) {
		return 0, nil, nil, 0, fmt.Errorf("%d write chunks returned, %d offered", len(h.WriteList), len(sinks))
	}
	for i, wc := range h.WriteList {
		if n := wc.Length(); n > uint64(len(sinks[i])) {
			return 0, nil, nil, 0, fmt.Errorf("write chunk %d reports %d bytes, %d offered", i, n, len(sinks[i]))
		}
	}
	if h.Proc == ProcMsgP && len(h.ReadList) > 0 {
		return 0, nil, nil, 0, errMSGPReadList
	}
	if len(h.ReadList) > 0 {
		if grouped, err = chunks.Group(rcs, h.ReadList); err != nil {
			return 0, nil, grouped, 0, err
		}
		return replyInReadChunks, body, grouped, 0, nil
	}
	if h.Proc == ProcNoMsg {
		if len(h.ReplyChunk) == 0 || replyCap == 0 {
			return 0, nil, nil, 0, errors.New("RDMA_NOMSG reply without a reply chunk")
		}
		n := h.ReplyChunk.Length()
		if n > uint64(replyCap) {
			return 0, nil, nil, 0, fmt.Errorf("reply chunk reports %d bytes, %d offered", n, replyCap)
		}
		return replyInChunk, nil, nil, n, nil
	}
	if h.ReplyChunk.Length() != 0 {
		return 0, nil, nil, 0, fmt.Errorf("%v reply with a non-empty reply chunk", h.Proc)
	}
	return replyInline, body, nil, 0, nil
}

// pullReply reads a reply returned in read chunks into reply.Inline.
func (cc *clientConn) pullReply(ctx context.Context, r *request, h *Header, body []byte, grouped []chunks.ReadChunk, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	var pzrc []chunks.Segment
	rcs := grouped
	if grouped[0].Position == 0 {
		pzrc = grouped[0].Segments
		rcs = grouped[1:]
		body = nil
	}
	limit := max(cc.c.opts.MaxReply, call.MaxReply)
	total, err := r.asm.planAssembly(len(body), pzrc, rcs, limit)
	if err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: %w: %w", call.XID, ErrBadReply, err)
	}
	mr := r.replyMR
	if mr == nil || len(mr.Buf()) < total {
		if cap(reply.Inline) < total {
			reply.Inline = make([]byte, 0, total)
		}
		if mr, err = cc.register(r, reply.Inline[:total], verbs.AccessLocalWrite); err != nil {
			return err
		}
	}
	cc.mu.Lock()
	ord := cc.ord
	cc.mu.Unlock()
	if err := r.asm.run(ctx, cc.ep, mr, body, ord, nil); err != nil {
		return fmt.Errorf("rpcrdma: xid %#08x: read reply chunks: %w", call.XID, err)
	}
	cc.release(r)
	reply.Inline = reply.Inline[:total]
	return nil
}
