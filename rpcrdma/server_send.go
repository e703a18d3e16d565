// Server send path: WriteReply (write chunks, inline, reply chunk or read chunks held
// until RDMA_DONE), Send With Invalidate and RDMA_ERROR replies (Linux svc_rdma_sendto.c).

package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
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
	var b []byte
	if code == ErrCodeVers {
		b = AppendErrVers(buf[:0], xid, Version1, sc.cred.Grant())
	} else {
		b = AppendErrChunk(buf[:0], xid, Version1, sc.cred.Grant())
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	sc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil)
}

// errReplyTooLarge is returned by WriteReply when the reply fits neither inline nor the
// client's reply chunk; the client is sent ERR_CHUNK (RFC 8166 §4.5.3).
var errReplyTooLarge = errors.New("rpcrdma: reply too large for what the client offered")

// WriteReply sends reply for call: payloads into the client's write chunks (the i-th
// payload into the i-th write chunk) by RDMA Write, the rest inline or, when too long,
// through the reply chunk (RDMA_NOMSG), or as read chunks when ReplyReadChunks allows.
// A reply that fits nothing the client offered is answered with ERR_CHUNK and
// WriteReply returns an error. It returns when the transport no longer refers to reply.
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
	select {
	case <-sc.closed:
		sc.finishCall(c)
		return fmt.Errorf("rpcrdma: write reply: %w", oncrpc.ErrClosed)
	default:
	}
	err := sc.writeReply(c, reply)
	sc.finishCall(c)
	for i, g := range c.regs {
		sc.l.regs.release(g)
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
}

func (sc *ServerConn) writeReply(c *srvCall, reply *oncrpc.Message) error {
	ctx := context.Background()
	in := &c.h
	out := &c.out
	out.Reset()
	out.XID, out.Vers, out.Credits, out.Proc = in.XID, Version1, sc.cred.Grant(), ProcMsg
	w := sc.ep.newWaiter()

	// Payloads into write chunks.
	placed := uint64(0) // bitmap of payloads placed (first 64)
	c.fills = c.fills[:0]
	for i := range in.WriteList {
		n := len(c.fills)
		if n < cap(c.fills) {
			c.fills = c.fills[:n+1]
		} else {
			c.fills = append(c.fills, nil)
		}
		var data []byte
		if i < len(reply.Payloads) && i < 64 {
			data = reply.Payloads[i].Data
		}
		if data == nil || uint64(len(data)) > in.WriteList[i].Length() {
			if data != nil {
				sc.l.opts.Logger.Debug("payload larger than its write chunk; sending it inline", "xid", in.XID, "chunk", i, "len", len(data))
			}
			c.fills[n], _ = chunks.Fill(c.fills[n][:0], in.WriteList[i], 0)
			continue
		}
		if len(data) > 0 {
			g, err := sc.l.regs.register(data, 0)
			if err != nil {
				sc.ep.wait(ctx, w)
				return fmt.Errorf("rpcrdma: xid %#08x: register payload: %w", in.XID, err)
			}
			c.regs = append(c.regs, g)
			mr := g.mr
			if err := sc.ep.writeChunk(ctx, w, &c.wr, &c.sge, mr, 0, len(data), in.WriteList[i]); err != nil {
				sc.ep.wait(ctx, w)
				return fmt.Errorf("rpcrdma: xid %#08x: write chunk %d: %w", in.XID, i, err)
			}
		}
		c.fills[n], _ = chunks.Fill(c.fills[n][:0], in.WriteList[i], uint64(len(data)))
		placed |= 1 << i
	}
	out.WriteList = append(out.WriteList[:0], c.fills...)

	// The rest of the reply stream: inline with unplaced payloads put back.
	streamLen := len(reply.Inline)
	for i, p := range reply.Payloads {
		if i >= 64 || placed&(1<<i) == 0 {
			streamLen += xdr.RoundUp(len(p.Data))
		}
	}
	idx, buf, err := sc.takeSendBuf(ctx, c)
	if err != nil {
		sc.ep.wait(ctx, w)
		return err
	}
	sc.mu.Lock()
	limit := min(sc.inlineSend, len(buf))
	sc.mu.Unlock()
	// RDMA_MSGP only for a client that sent RDMA_MSGP, for replies of at least its
	// rdma_thresh, and only when the padded reply still fits inline.
	msgp, pad := c.msgp && streamLen >= int(in.Thresh), 0
	if msgp {
		pad = msgpPad(out.Size()+8, in.Align)
		if out.Size()+8+pad+streamLen > limit {
			msgp, pad = false, 0
		}
	}
	hdrSize := out.Size()
	if msgp {
		hdrSize += 8
	}
	op, inv := sc.invalidate(c)
	var b []byte
	switch {
	case hdrSize+pad+streamLen <= limit:
		if msgp {
			out.Proc, out.Align, out.Thresh = ProcMsgP, in.Align, in.Thresh
		}
		b, err = out.Append(buf[:0])
		if err == nil {
			b = append(b, zeroPad[:pad]...)
			b = appendStream(b, reply, placed)
		}
	case len(in.ReplyChunk) > 0 && uint64(streamLen) <= in.ReplyChunk.Length():
		big, gerr := sc.l.bufs.get(streamLen, 0)
		if gerr != nil {
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return gerr
		}
		defer sc.l.bufs.put(big)
		appendStream(big.mr.Buf()[:0], reply, placed)
		if err := sc.ep.writeChunk(ctx, w, &c.wr, &c.sge, big.mr, 0, streamLen, in.ReplyChunk); err != nil {
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return fmt.Errorf("rpcrdma: xid %#08x: reply chunk: %w", in.XID, err)
		}
		out.Proc = ProcNoMsg
		out.ReplyChunk, _ = chunks.Fill(out.ReplyChunk[:0], in.ReplyChunk, uint64(streamLen))
		b, err = out.Append(buf[:0])
	case sc.l.opts.ReplyReadChunks:
		big, gerr := sc.l.bufs.get(streamLen, 0)
		if gerr != nil {
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return gerr
		}
		appendStream(big.mr.Buf()[:0], reply, placed)
		if rerr := big.mr.Reregister(verbs.AccessRemoteRead); rerr != nil {
			sc.l.bufs.put(big)
			sc.ep.putSendBuf(idx)
			sc.ep.wait(ctx, w)
			return fmt.Errorf("rpcrdma: xid %#08x: register reply read chunk: %w", in.XID, rerr)
		}
		out.Proc = ProcNoMsg
		out.ReadList = append(out.ReadList[:0], chunks.ReadSegment{Position: 0, Segment: segmentOf(big.mr, streamLen)})
		sc.keepUntilDone(in.XID, big)
		b, err = out.Append(buf[:0])
		op = verbs.OpSend // the client must keep its own STags for nothing; no invalidation ambiguity
		inv = 0
	default:
		sc.ep.putSendBuf(idx)
		sc.ep.wait(ctx, w)
		return fmt.Errorf("rpcrdma: xid %#08x: %d-byte reply, inline limit %d, reply chunk %d: %w",
			in.XID, streamLen, limit, in.ReplyChunk.Length(), errReplyTooLarge)
	}
	if err != nil {
		sc.ep.putSendBuf(idx)
		sc.ep.wait(ctx, w)
		return fmt.Errorf("rpcrdma: xid %#08x: encode reply header: %w", in.XID, err)
	}
	if tr := sc.l.opts.Trace; tr != nil {
		tr(true, b)
	}
	// The reply no longer needs the call's memory once its RDMA Writes have been
	// transmitted (the header and inline part are in the send buffer already).
	if err := sc.ep.wait(ctx, w); err != nil {
		sc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: xid %#08x: write chunks: %w", in.XID, err)
	}
	sc.finishCall(c)
	// The reply is in the send buffer, which returns to its pool when the Send
	// completes: nothing here waits for that (a failed Send fails the connection).
	if c.sqHeld {
		c.sqHeld = false
		return sc.ep.postSendBufHeld(idx, len(b), op, inv, nil)
	}
	return sc.ep.postSendBuf(ctx, idx, len(b), op, inv, nil)
}

// takeSendBuf returns the send buffer reserved for c, or waits for a free one.
func (sc *ServerConn) takeSendBuf(ctx context.Context, c *srvCall) (int, []byte, error) {
	if i := c.sendIdx; i >= 0 {
		c.sendIdx = -1
		return i, sc.ep.sendBufAt(i), nil
	}
	return sc.ep.getSendBuf(ctx)
}

// appendStream appends the reply stream with the payloads not in placed put back in
// their places (data and XDR pad).
func appendStream(b []byte, m *oncrpc.Message, placed uint64) []byte {
	off := 0 // offset in m.Inline
	pos := 0 // logical position
	for i, p := range m.Payloads {
		// Inline bytes up to this payload's data.
		n := p.Pos - pos
		b = append(b, m.Inline[off:off+n]...)
		off += n
		pos = p.Pos + xdr.RoundUp(len(p.Data))
		if i < 64 && placed&(1<<i) != 0 {
			continue
		}
		b = append(b, p.Data...)
		b = append(b, make([]byte, xdr.PadLen(len(p.Data)))...)
	}
	return append(b, m.Inline[off:]...)
}

// invalidate chooses Send With Invalidate: when the client allows it and the call's
// chunks name exactly one distinct STag (Linux svc_rdma_get_inv_rkey).
func (sc *ServerConn) invalidate(c *srvCall) (verbs.SendOp, uint32) {
	if !sc.peer.SendInvOK || sc.l.opts.NoSendInvalidate {
		return verbs.OpSend, 0
	}
	var stag uint32
	n := 0
	see := func(s uint32) {
		if n == 0 || s != stag {
			stag = s
			n++
		}
	}
	for _, rs := range c.h.ReadList {
		see(rs.Handle)
	}
	for _, wc := range c.h.WriteList {
		for _, s := range wc {
			see(s.Handle)
		}
	}
	for _, s := range c.h.ReplyChunk {
		see(s.Handle)
	}
	if n != 1 {
		return verbs.OpSend, 0
	}
	return verbs.OpSendInv, stag
}

// doneEntry is a reply kept registered as read chunks until RDMA_DONE or a timeout.
type doneEntry struct {
	big   *bigBuf
	timer *time.Timer
}

func (d *doneEntry) release(sc *ServerConn) {
	d.timer.Stop()
	d.big.mr.Invalidate()
	sc.l.bufs.put(d.big)
}

func (sc *ServerConn) keepUntilDone(xid uint32, big *bigBuf) {
	d := &doneEntry{big: big}
	sc.mu.Lock()
	if old, ok := sc.dones[xid]; ok {
		delete(sc.dones, xid)
		old.release(sc)
	}
	sc.dones[xid] = d
	d.timer = time.AfterFunc(sc.l.opts.DoneTimeout, func() {
		sc.mu.Lock()
		if sc.dones[xid] == d {
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
