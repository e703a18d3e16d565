// Chunk decisions (Linux rpc_rdma.c's job): pure functions that plan how a call and a
// reply travel — inline, read chunks, RDMA_NOMSG with a position-zero read chunk,
// write chunks, reply chunk, RDMA_MSGP padding — from sizes and thresholds alone. They
// touch no verbs and register nothing; the send paths (client_send.go, server_send.go)
// execute a plan: register the memory the plan's chunks name, fill in the segments'
// handles and offsets, post. FuzzPlanCall and FuzzPlanReply hold the plans to their
// invariants.

package rpcrdma

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// callLimits are what planCall needs to know about the connection and the options.
type callLimits struct {
	inlineSend int // largest message the client sends inline
	maxInline  int // largest reply the server sends inline (its InlineSend, our receive size)
	// maxReply is the largest reply expected: the call's MaxReply, else ClientOptions.
	// MaxReply. callMaxReply is the call's own (0: none), whose sinks' data is not
	// counted in the reply chunk.
	maxReply, callMaxReply int
	msgpAlign, msgpThresh  uint32 // RDMA_MSGP: the server's rdma_align (0: off), our rdma_thresh
	noReadChunks           bool   // we announced maxrdmaread 0: the server must not RDMA Read
}

// callPlan is how a call travels. planCall has shaped the header: every segment it put
// there has its Length (and read segments their Position); Handle and Offset are zero
// until the memory is registered:
//
//   - WriteList[i] (one segment) is ReplySinks[i], for i < len(WriteList);
//   - ReplyChunk (one segment, when replyChunk > 0) is the first replyChunk bytes of
//     the reply buffer;
//   - ReadList is, when long, first the whole inline stream at position 0, then one
//     segment per non-empty payload, in order, at the payload's position.
type callPlan struct {
	replyChunk int  // bytes of the reply chunk offered; 0: none
	readChunks bool // non-empty payloads travel as read chunks (not flattened inline)
	long       bool // RDMA_NOMSG: the inline stream travels as a position-zero read chunk
	pad        int  // RDMA_MSGP padding bytes in the RPC message (see msgpPadded)
	inline     int  // RPC message bytes sent after the header, padding not counted
}

// planCall decides how msg travels with sinks as its reply sinks (Linux
// rpcrdma_marshal_req): no chunks for the reply when the call's MaxReply bounds it
// within the inline size (resultsInline); else write chunks for the leading non-empty
// sinks, and a reply chunk whenever the reply may not fit inline; the message inline
// when it fits, else its non-empty payloads as read chunks at their XDR positions, else
// RDMA_NOMSG with the inline stream as a position-zero read chunk (neither when we
// announced maxrdmaread 0: an error wrapping ErrNoReadChunks); RDMA_MSGP padding of
// the payloads (msgpPadded) when negotiated and the padded message still fits. h must
// have been Reset with XID, version and credits set.
func planCall(h *Header, msg *oncrpc.Message, sinks [][]byte, lim *callLimits) (callPlan, error) {
	var p callPlan
	h.Proc = ProcMsg

	if resultsInline(lim, sinks) {
		sinks = nil
	}
	// Write list: one chunk per reply sink. The server puts the i-th DDP-eligible result
	// in the i-th chunk, so an empty sink (which cannot be registered) ends the list:
	// later results travel inline.
	for _, sink := range sinks {
		if len(sink) == 0 {
			break
		}
		n := len(h.WriteList)
		if n < cap(h.WriteList) {
			h.WriteList = h.WriteList[:n+1]
		} else {
			h.WriteList = append(h.WriteList, nil)
		}
		h.WriteList[n] = append(h.WriteList[n][:0], chunks.Segment{Length: uint32(len(sink))})
	}

	// Reply chunk whenever the reply may not fit inline.
	maxReply := lim.maxReply
	budget := lim.maxInline - MinSize // reply header with empty lists
	for i, c := range h.WriteList {
		budget -= 4 + WriteChunkSize(len(c))
		// Data placed in a write chunk travels neither inline nor in the reply
		// chunk (Linux sizes the reply chunk the same way; knfsd, offered a reply
		// chunk beside a READ's write chunk, writes the data into both).
		if lim.callMaxReply > 0 {
			maxReply -= xdr.RoundUp(len(sinks[i]))
		}
	}
	maxReply = max(maxReply, 0)
	if maxReply > budget {
		p.replyChunk = maxReply
		h.ReplyChunk = append(h.ReplyChunk[:0], chunks.Segment{Length: uint32(maxReply)})
	}

	// Call: inline if it fits, else payloads as read chunks, else a long call.
	total := msg.Len()
	p.inline = total
	if h.Size()+total > lim.inlineSend && lim.noReadChunks {
		// Seed §6.2: "If zero, the peer MUST NOT issue requests which require RDMA
		// Read to satisfy"; we announced maxrdmaread 0, so no read chunks.
		return p, fmt.Errorf("%d-byte call exceeds the inline send size %d and maxrdmaread 0 was announced (no read chunks): %w",
			total, lim.inlineSend, ErrNoReadChunks)
	}
	if h.Size()+total > lim.inlineSend {
		p.readChunks = true
		for _, pl := range msg.Payloads {
			if len(pl.Data) == 0 {
				continue
			}
			h.ReadList = append(h.ReadList, chunks.ReadSegment{Position: uint32(pl.Pos), Segment: chunks.Segment{Length: uint32(len(pl.Data))}})
		}
		p.inline = len(msg.Inline)
		if h.Size()+p.inline > lim.inlineSend {
			// Long call: RDMA_NOMSG, the inline stream as a position-zero read chunk.
			h.ReadList = append(h.ReadList, chunks.ReadSegment{})
			copy(h.ReadList[1:], h.ReadList)
			h.ReadList[0] = chunks.ReadSegment{Position: 0, Segment: chunks.Segment{Length: uint32(len(msg.Inline))}}
			h.Proc = ProcNoMsg
			p.long, p.inline = true, 0
			if h.Size() > lim.inlineSend {
				return p, fmt.Errorf("transport header of %d bytes exceeds the inline send size %d", h.Size(), lim.inlineSend)
			}
		}
	}

	// RDMA_MSGP (negotiated): pad the payloads of a call sent whole inline, when one is
	// padded and the padded call still fits.
	if h.Proc == ProcMsg && !p.readChunks && msgpAlignOK(lim.msgpAlign) {
		h.Proc = ProcMsgP
		pad, n, ok := msgpPadded(lim.msgpAlign, lim.msgpThresh, msg, 0, h.Size())
		if ok && h.Size()+n+p.inline <= lim.inlineSend {
			h.Align, h.Thresh, p.pad = pad.Align, pad.Thresh, n
		} else {
			h.Proc = ProcMsg
		}
	}
	return p, nil
}

// resultsInline reports whether a call's whole reply, results included, is bounded
// within the reply inline size (Linux rpcrdma_results_inline): its MaxReply fits
// beside a reply header with empty chunk lists. Such a call offers no write chunks:
// the server sends the results inline, and the client copies them out of its receive
// buffer into the sinks (as over TCP), which for a few KiB costs less than registering
// the sinks, the RDMA Write, and the invalidation. Without a MaxReply nothing bounds
// the reply, and the sinks become write chunks; so too when the MaxReply is smaller
// than the sinks together, as it then evidently does not count the results.
func resultsInline(lim *callLimits, sinks [][]byte) bool {
	if lim.callMaxReply <= 0 || lim.callMaxReply > lim.maxInline-MinSize {
		return false
	}
	n := 0
	for _, s := range sinks {
		n += len(s)
	}
	return n <= lim.callMaxReply
}

// replyPath is where a reply's stream (its inline part with the payloads not placed in
// write chunks put back) travels.
type replyPath uint8

const (
	pathInline     replyPath = iota // in the Send, after the header (RDMA_MSGP: padded)
	pathReplyChunk                  // RDMA-Written into the client's reply chunk (RDMA_NOMSG)
	pathReadChunk                   // a position-zero read chunk the client pulls (RDMA_NOMSG)
)

// replyLimits are what planReply needs to know about the connection and the options.
type replyLimits struct {
	inline     int  // largest reply sent inline: the client's receive size, our send buffer
	msgp       bool // the call was RDMA_MSGP (and the server accepts it)
	readChunks bool // ServerOptions.ReplyReadChunks
	// noReadChunks: we announced maxrdmaread 0 (CONF_RDMA), so the client must not be
	// made to RDMA Read: no reply read chunks (seed §6.2).
	noReadChunks bool
}

// replyPlan is how a reply travels. planReply has shaped the reply header out: its
// write list holds, for each of the call's write chunks, the segments filled by the
// payload placed there (none when the payload was not placed), its reply chunk the
// segments the stream fills, its read list (pathReadChunk) one position-zero segment
// of the stream's length whose Handle and Offset are zero until registered.
type replyPlan struct {
	path   replyPath
	placed uint64 // payload i (i < 64) goes into write chunk i
	stream int    // bytes of the reply stream, padding not counted
	pad    int    // RDMA_MSGP padding bytes in the stream (see msgpPadded)
}

// errReplyTooLarge is returned by WriteReply when the reply fits neither inline nor the
// client's reply chunk, or a payload exceeds its write chunk; the client is sent
// ERR_CHUNK (RFC 8166 §4.5.3).
var errReplyTooLarge = errors.New("rpcrdma: reply too large for what the client offered")

// planReply decides how reply answers the call whose header is in (Linux
// svc_rdma_sendto's choices): the i-th payload into the i-th write chunk, where the
// client decodes that result from, and errReplyTooLarge when it does not fit there
// (RFC 8166 §4.5.3, a write chunk too small for the reply; Linux refuses such a
// payload with -E2BIG, svc_rdma_result_payload, and never sends it inline); the rest
// inline when it fits, as RDMA_MSGP with its unplaced payloads padded (msgpPadded) for
// a client that sent RDMA_MSGP; else into the reply chunk; else, when allowed and we
// did not announce maxrdmaread 0, as a read chunk; else errReplyTooLarge, which is
// also the answer when the reply's header alone (the call's write list and reply
// chunk echoed) exceeds the inline limit. out must have been Reset with XID, version
// and credits set.
func planReply(out, in *Header, reply *oncrpc.Message, lim *replyLimits) (replyPlan, error) {
	var p replyPlan
	out.Proc = ProcMsg

	// Payloads into write chunks.
	for i := range in.WriteList {
		n := len(out.WriteList)
		if n < cap(out.WriteList) {
			out.WriteList = out.WriteList[:n+1]
		} else {
			out.WriteList = append(out.WriteList, nil)
		}
		var data []byte
		if i < len(reply.Payloads) && i < 64 {
			data = reply.Payloads[i].Data
		}
		if data == nil {
			out.WriteList[n], _ = chunks.Fill(out.WriteList[n][:0], in.WriteList[i], 0)
			continue
		}
		if c := in.WriteList[i].Length(); uint64(len(data)) > c {
			return p, fmt.Errorf("%d-byte payload %d, its write chunk %d bytes: %w", len(data), i, c, errReplyTooLarge)
		}
		out.WriteList[n], _ = chunks.Fill(out.WriteList[n][:0], in.WriteList[i], uint64(len(data)))
		p.placed |= 1 << i
	}

	// The rest of the reply stream: inline with unplaced payloads put back.
	p.stream = len(reply.Inline)
	for i, pl := range reply.Payloads {
		if i >= 64 || p.placed&(1<<i) == 0 {
			p.stream += xdr.RoundUp(len(pl.Data))
		}
	}
	// RDMA_MSGP only for a client that sent RDMA_MSGP, padded to its rdma_align from
	// its rdma_thresh on, when a payload in the stream is padded and the padded reply
	// still fits inline.
	var pad xdr.Padding
	msgp := false
	if lim.msgp && msgpAlignOK(in.Align) {
		out.Proc = ProcMsgP
		var n int
		pad, n, msgp = msgpPadded(in.Align, in.Thresh, reply, p.placed, out.Size())
		if msgp = msgp && out.Size()+n+p.stream <= lim.inline; msgp {
			p.pad = n
		}
		out.Proc = ProcMsg
	}
	switch {
	case msgp:
		p.path = pathInline
		out.Proc, out.Align, out.Thresh = ProcMsgP, pad.Align, pad.Thresh
	case out.Size()+p.stream <= lim.inline:
		p.path = pathInline
	case len(in.ReplyChunk) > 0 && uint64(p.stream) <= in.ReplyChunk.Length():
		p.path = pathReplyChunk
		out.Proc = ProcNoMsg
		out.ReplyChunk, _ = chunks.Fill(out.ReplyChunk[:0], in.ReplyChunk, uint64(p.stream))
	case lim.readChunks && !lim.noReadChunks:
		p.path = pathReadChunk
		out.Proc = ProcNoMsg
		out.ReadList = append(out.ReadList[:0], chunks.ReadSegment{Position: 0, Segment: chunks.Segment{Length: uint32(p.stream)}})
	case lim.readChunks:
		return p, fmt.Errorf("%d-byte reply, inline limit %d, reply chunk %d, no reply read chunks after announcing maxrdmaread 0: %w",
			p.stream, lim.inline, in.ReplyChunk.Length(), errReplyTooLarge)
	default:
		return p, fmt.Errorf("%d-byte reply, inline limit %d, reply chunk %d: %w",
			p.stream, lim.inline, in.ReplyChunk.Length(), errReplyTooLarge)
	}
	// The header travels in the Send whatever the path: with the call's write list
	// and reply chunk echoed it may alone exceed the client's receive size (RFC 8166
	// §3.3.2), and then nothing the client offered can carry the reply (§4.5.3).
	if n := out.Size(); n > lim.inline {
		return p, fmt.Errorf("%d-byte reply header, inline limit %d: %w", n, lim.inline, errReplyTooLarge)
	}
	return p, nil
}

// invalidateSTag returns the STag a reply may invalidate remotely (Send With
// Invalidate): the one STag the call's chunks name, when they name exactly one distinct
// STag (Linux svc_rdma_get_inv_rkey).
func invalidateSTag(h *Header) (uint32, bool) {
	var stag uint32
	n := 0
	see := func(s uint32) {
		if n == 0 || s != stag {
			stag = s
			n++
		}
	}
	for _, rs := range h.ReadList {
		see(rs.Handle)
	}
	for _, wc := range h.WriteList {
		for _, s := range wc {
			see(s.Handle)
		}
	}
	for _, s := range h.ReplyChunk {
		see(s.Handle)
	}
	return stag, n == 1
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
		b = append(b, zeroPad[:xdr.PadLen(len(p.Data))]...)
	}
	return append(b, m.Inline[off:]...)
}
