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
// can no longer read or write the caller's memory (Linux frwr_unmap_sync).
func (cc *clientConn) release(r *request) {
	for i, g := range r.regs {
		cc.c.regs.release(g)
		r.regs[i] = nil
	}
	r.regs = r.regs[:0]
	r.replyMR = nil
}

// segmentOf describes a whole registered region as one segment.
func segmentOf(mr verbs.MR, n int) chunks.Segment {
	return chunks.Segment{Handle: mr.RKey(), Length: uint32(n), Offset: mr.Addr()}
}

// send marshals the call (Linux rpcrdma_marshal_req) and posts it.
func (cc *clientConn) send(ctx context.Context, r *request, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	cc.mu.Lock()
	inlineSend, maxInline := cc.inlineSend, cc.maxInline
	cc.mu.Unlock()
	h := &r.hdr
	h.Reset()
	h.XID, h.Vers, h.Credits, h.Proc = call.XID, Version1, uint32(cc.c.window.Max()), ProcMsg

	// Write list: one chunk per reply sink. The server puts the i-th DDP-eligible result
	// in the i-th chunk, so an empty sink (which cannot be registered) ends the list:
	// later results travel inline.
	for _, sink := range call.ReplySinks {
		if len(sink) == 0 {
			break
		}
		mr, err := cc.register(r, sink, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			return err
		}
		n := len(h.WriteList)
		if n < cap(h.WriteList) {
			h.WriteList = h.WriteList[:n+1]
		} else {
			h.WriteList = append(h.WriteList, nil)
		}
		h.WriteList[n] = append(h.WriteList[n][:0], segmentOf(mr, len(sink)))
	}

	// Reply chunk whenever the reply may not fit inline.
	maxReply := call.MaxReply
	if maxReply <= 0 {
		maxReply = cc.c.opts.MaxReply
	}
	budget := maxInline - (FixedSize + 4 + 4 + 4) // reply header with empty lists
	for i, c := range h.WriteList {
		budget -= 4 + WriteChunkSize(len(c))
		// Data placed in a write chunk travels neither inline nor in the reply
		// chunk (Linux sizes the reply chunk the same way; knfsd, offered a reply
		// chunk beside a READ's write chunk, writes the data into both).
		if call.MaxReply > 0 {
			maxReply -= xdr.RoundUp(len(call.ReplySinks[i]))
		}
	}
	maxReply = max(maxReply, 0)
	if maxReply > budget {
		if cap(reply.Inline) < maxReply {
			reply.Inline = make([]byte, 0, maxReply)
		}
		buf := reply.Inline[:maxReply]
		mr, err := cc.register(r, buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			return err
		}
		r.replyMR = mr
		h.ReplyChunk = append(h.ReplyChunk[:0], segmentOf(mr, maxReply))
	}

	// Call: inline if it fits, else payloads as read chunks, else a long call.
	total := call.Msg.Len()
	var body []byte // inline body to send, nil when flattening payloads
	flatten := false
	if h.Size()+total <= inlineSend {
		flatten = true
	} else {
		for _, p := range call.Msg.Payloads {
			if len(p.Data) == 0 {
				continue
			}
			mr, err := cc.register(r, p.Data, verbs.AccessRemoteRead)
			if err != nil {
				return err
			}
			h.ReadList = append(h.ReadList, chunks.ReadSegment{Position: uint32(p.Pos), Segment: segmentOf(mr, len(p.Data))})
		}
		body = call.Msg.Inline
		if h.Size()+len(body) > inlineSend {
			// Long call: RDMA_NOMSG, the inline stream as a position-zero read chunk.
			mr, err := cc.register(r, call.Msg.Inline, verbs.AccessRemoteRead)
			if err != nil {
				return err
			}
			h.ReadList = append(h.ReadList, chunks.ReadSegment{})
			copy(h.ReadList[1:], h.ReadList)
			h.ReadList[0] = chunks.ReadSegment{Position: 0, Segment: segmentOf(mr, len(call.Msg.Inline))}
			h.Proc = ProcNoMsg
			body = nil
			if h.Size() > inlineSend {
				return fmt.Errorf("rpcrdma: xid %#08x: transport header of %d bytes exceeds the inline send size %d", call.XID, h.Size(), inlineSend)
			}
		}
	}

	// RDMA_MSGP (opt-in): pad so the RPC message starts on an rdma_align boundary.
	pad := 0
	if o := &cc.c.opts; h.Proc == ProcMsg && o.MSGPAlign > 0 {
		msgLen := len(body)
		if flatten {
			msgLen = total
		}
		if msgLen >= int(o.MSGPThresh) {
			h.Proc, h.Align, h.Thresh = ProcMsgP, o.MSGPAlign, o.MSGPThresh
			pad = msgpPad(h.Size(), h.Align)
			if h.Size()+pad+msgLen > inlineSend {
				h.Proc, h.Align, h.Thresh, pad = ProcMsg, 0, 0, 0
			}
		}
	}

	idx, buf, err := cc.ep.getSendBuf(ctx)
	if err != nil {
		return cc.sendErr(err)
	}
	b, err := h.Append(buf[:0])
	if err != nil {
		cc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: xid %#08x: %w", call.XID, err)
	}
	b = append(b, zeroPad[:pad]...)
	if flatten {
		b = xdr.Flatten(b, call.Msg.Inline, call.Msg.Payloads)
	} else {
		b = append(b, body...)
	}
	if len(b) > len(buf) {
		cc.ep.putSendBuf(idx)
		return fmt.Errorf("rpcrdma: xid %#08x: message of %d bytes overflows the send buffer", call.XID, len(b))
	}
	if tr := cc.c.opts.Trace; tr != nil {
		tr(true, b)
	}
	cc.mu.Lock()
	select {
	case <-cc.dead:
		cc.mu.Unlock()
		cc.ep.putSendBuf(idx)
		return errConnLost
	default:
	}
	cc.pending[call.XID] = r
	cc.mu.Unlock()
	if err := cc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil); err != nil {
		cc.mu.Lock()
		delete(cc.pending, call.XID)
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
