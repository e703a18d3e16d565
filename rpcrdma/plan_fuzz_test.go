package rpcrdma

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fuzzInput hands out small numbers from fuzz bytes (0 once they run out).
type fuzzInput []byte

func (b *fuzzInput) next() int {
	if len(*b) == 0 {
		return 0
	}
	v := int((*b)[0])
	*b = (*b)[1:]
	return v
}

// u16 returns a number in [0, 65535].
func (b *fuzzInput) u16() int { return b.next()<<8 | b.next() }

// message builds an RPC message with up to 4 DDP-eligible payloads at XDR-aligned
// positions, in order, from the input.
func (b *fuzzInput) message() *oncrpc.Message {
	var m oncrpc.Message
	n := b.next() % 5
	pos := 0
	for i := 0; i < n; i++ {
		gap := 4 * (b.next() % 64) // inline bytes before the payload (its length word included)
		m.Inline = append(m.Inline, make([]byte, gap)...)
		pos += gap
		data := make([]byte, b.u16()%9000)
		m.Payloads = append(m.Payloads, xdr.Payload{Pos: pos, Data: data})
		pos += xdr.RoundUp(len(data))
	}
	m.Inline = append(m.Inline, make([]byte, 4*(b.next()%512))...)
	return &m
}

// FuzzPlanCall holds planCall to its invariants for any message, sinks and thresholds:
// what goes inline never exceeds the inline send size; read chunks are XDR-aligned, in
// order, valid by package chunks' rules, and together with the inline part carry
// exactly the message; write chunks mirror the leading non-empty sinks unless the
// call's MaxReply bounds its whole reply within the inline size; the reply chunk
// is offered when the reply may not fit inline; the planned header encodes and decodes
// back.
func FuzzPlanCall(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		b := fuzzInput(in)
		lim := callLimits{
			inlineSend: 1024 + 4*(b.u16()%2048),
			maxInline:  1024 + 4*(b.u16()%2048),
		}
		lim.callMaxReply = b.u16() * (b.next()%2 + 1)
		lim.maxReply = lim.callMaxReply
		if lim.maxReply == 0 {
			lim.maxReply = DefaultMaxReply
		}
		if b.next()%2 == 1 {
			lim.msgpAlign, lim.msgpThresh = uint32(1<<(b.next()%13)), uint32(b.u16())
		}
		var sinks [][]byte
		for i := b.next() % 4; i > 0; i-- {
			sinks = append(sinks, make([]byte, b.u16()%5000))
		}
		msg := b.message()
		lim.noReadChunks = b.next()%2 == 1 // we announced maxrdmaread 0

		var h Header
		h.XID, h.Vers, h.Credits = 1, Version1, 128
		p, err := planCall(&h, msg, sinks, &lim)
		if lim.noReadChunks && (err == nil) != (h.Size()+msg.Len() <= lim.inlineSend) {
			t.Fatalf("maxrdmaread 0: %d-byte header, %d-byte call, inline send %d: %v", h.Size(), msg.Len(), lim.inlineSend, err)
		}
		if err != nil {
			if lim.noReadChunks && errors.Is(err, ErrNoReadChunks) && len(h.ReadList) == 0 {
				return
			}
			if h.Proc != ProcNoMsg || h.Size() <= lim.inlineSend {
				t.Fatalf("planCall failed with a %d-byte %v header, inline send %d: %v", h.Size(), h.Proc, lim.inlineSend, err)
			}
			return
		}
		total := msg.Len()
		switch h.Proc {
		case ProcMsg, ProcMsgP:
			if h.Size()+p.pad+p.inline > lim.inlineSend {
				t.Fatalf("%v: %d-byte header + %d pad + %d inline exceeds %d", h.Proc, h.Size(), p.pad, p.inline, lim.inlineSend)
			}
			if p.long {
				t.Fatal("long call sent as RDMA_MSG")
			}
		case ProcNoMsg:
			if !p.long || h.Size() > lim.inlineSend || p.inline != 0 {
				t.Fatalf("RDMA_NOMSG: long %v, %d-byte header, %d inline", p.long, h.Size(), p.inline)
			}
		default:
			t.Fatalf("call planned as %v", h.Proc)
		}
		if h.Proc == ProcMsgP {
			if h.Align != lim.msgpAlign || h.Thresh < lim.msgpThresh || p.readChunks {
				t.Fatalf("RDMA_MSGP with align %d thresh %d (asked %d, %d), read chunks %v", h.Align, h.Thresh, lim.msgpAlign, lim.msgpThresh, p.readChunks)
			}
			checkPadded(t, h.Size(), msg, 0, h.Align, h.Thresh, p.pad)
		} else if p.pad != 0 {
			t.Fatalf("%d bytes of padding in a %v call", p.pad, h.Proc)
		}

		// Read chunks: aligned, in order, valid, and with the inline part they carry
		// exactly the message.
		if _, err := chunks.Group(nil, h.ReadList); err != nil {
			t.Fatalf("read list %v: %v", h.ReadList, err)
		}
		carried := p.inline
		rl := h.ReadList
		if p.long {
			if rl[0].Position != 0 || int(rl[0].Length) != len(msg.Inline) {
				t.Fatalf("long call's first read segment %+v, inline stream %d bytes", rl[0], len(msg.Inline))
			}
			carried += len(msg.Inline)
			rl = rl[1:]
		}
		last := uint32(0)
		for i, rs := range rl {
			if rs.Position%4 != 0 || rs.Position < last || (i > 0 && rs.Position == last) {
				t.Fatalf("read segment %d at %d after %d", i, rs.Position, last)
			}
			last = rs.Position
			carried += xdr.RoundUp(int(rs.Length))
		}
		if !p.readChunks && len(h.ReadList) != 0 {
			t.Fatal("read list for an inline call")
		}
		if carried != total {
			t.Fatalf("plan carries %d bytes of a %d-byte message (inline %d, read list %v)", carried, total, p.inline, h.ReadList)
		}
		if !p.readChunks && p.inline != total {
			t.Fatalf("inline call sends %d of %d bytes", p.inline, total)
		}

		// Write chunks mirror the leading non-empty sinks, unless the call's MaxReply
		// bounds the whole reply, at least the sinks' size, within what the server
		// sends inline: then there are none, and no reply chunk either.
		var sinkBytes int
		for _, s := range sinks {
			sinkBytes += len(s)
		}
		inlineResults := lim.callMaxReply > 0 && sinkBytes <= lim.callMaxReply &&
			MinSize+lim.callMaxReply <= lim.maxInline
		want := 0
		for !inlineResults && want < len(sinks) && len(sinks[want]) > 0 {
			want++
		}
		if inlineResults && len(h.ReplyChunk) != 0 {
			t.Fatalf("reply chunk %v for a reply of at most %d, inline %d", h.ReplyChunk, lim.callMaxReply, lim.maxInline)
		}
		if len(h.WriteList) != want {
			t.Fatalf("%d write chunks for sinks %d..., want %d", len(h.WriteList), len(sinks), want)
		}
		for i, c := range h.WriteList {
			if len(c) != 1 || int(c[0].Length) != len(sinks[i]) {
				t.Fatalf("write chunk %d %v for a %d-byte sink", i, c, len(sinks[i]))
			}
		}
		// A reply chunk exactly when the reply may exceed what the server sends inline.
		if (p.replyChunk > 0) != (len(h.ReplyChunk) == 1) || (p.replyChunk > 0 && int(h.ReplyChunk[0].Length) != p.replyChunk) {
			t.Fatalf("reply chunk %v, plan %d", h.ReplyChunk, p.replyChunk)
		}
		if p.replyChunk > lim.maxReply {
			t.Fatalf("reply chunk of %d for a reply of at most %d", p.replyChunk, lim.maxReply)
		}
		if p.replyChunk == 0 && lim.maxReply > lim.maxInline {
			var placed int
			if lim.callMaxReply > 0 {
				for i := range h.WriteList {
					placed += xdr.RoundUp(len(sinks[i]))
				}
			}
			if lim.maxReply-placed > lim.maxInline {
				t.Fatalf("no reply chunk for a reply of %d (%d in write chunks), inline %d", lim.maxReply, placed, lim.maxInline)
			}
		}
		checkEncodes(t, &h)
	})
}

// checkPadded checks an RDMA_MSGP plan for m (payloads in placed excluded) behind an
// hl-byte header: rdma_thresh above every other opaque of m (each lies whole in
// m.Inline) and equal to no padded payload's length, at least one payload padded, and
// appendPadded putting exactly pad bytes of padding so that the data of every payload
// of at least rdma_thresh bytes starts on an rdma_align boundary of the message (seed
// §3.9), each payload's data intact.
func checkPadded(t *testing.T, hl int, m *oncrpc.Message, placed uint64, align, thresh uint32, pad int) {
	t.Helper()
	if !msgpAlignOK(align) || thresh < uint32(len(m.Inline)) {
		t.Fatalf("RDMA_MSGP align %d, thresh %d for a %d-byte inline stream", align, thresh, len(m.Inline))
	}
	for i, p := range m.Payloads {
		d := p.Data
		if len(d) > 0 {
			d[0], d[len(d)-1] = byte(i+1), byte(i+1)
		}
	}
	out := appendPadded(make([]byte, hl), m, placed, xdr.Padding{Align: align, Thresh: thresh, Base: hl})
	off, pos, stream, padded := hl, 0, len(m.Inline), false
	for i, p := range m.Payloads {
		off += p.Pos - pos
		pos = p.End()
		if !unplaced(i, placed) {
			continue
		}
		stream += xdr.RoundUp(len(p.Data))
		if n := uint32(len(p.Data)); n == thresh {
			t.Fatalf("payload %d of exactly rdma_thresh %d bytes", i, n)
		} else if n > thresh {
			off = (off + int(align) - 1) / int(align) * int(align)
			padded = true
		}
		if !bytes.Equal(out[off:off+len(p.Data)], p.Data) {
			t.Fatalf("payload %d not at message offset %d", i, off)
		}
		off += xdr.RoundUp(len(p.Data))
	}
	if !padded || len(out) != hl+stream+pad {
		t.Fatalf("padded %v: %d bytes written, want %d header + %d stream + %d pad", padded, len(out), hl, stream, pad)
	}
}

// checkEncodes checks that h encodes and decodes back to the same shape.
func checkEncodes(t *testing.T, h *Header) {
	t.Helper()
	buf, err := h.Append(nil)
	if err != nil {
		t.Fatalf("planned header does not encode: %v", err)
	}
	if len(buf) != h.Size() {
		t.Fatalf("header encodes to %d bytes, Size says %d", len(buf), h.Size())
	}
	var d Header
	n, err := d.Decode(buf)
	if err != nil || n != len(buf) || d.Proc != h.Proc || len(d.ReadList) != len(h.ReadList) || len(d.WriteList) != len(h.WriteList) || len(d.ReplyChunk) != len(h.ReplyChunk) {
		t.Fatalf("planned header decodes to %+v (%d bytes, %v)", d, n, err)
	}
}

// FuzzPlanReply holds planReply to its invariants for any call header and reply: a
// payload goes into its write chunk (ERR_CHUNK, errReplyTooLarge, when it does not
// fit), and the reply's write list says exactly how much each chunk received; what
// goes inline never exceeds the inline limit; the stream and the placed payloads
// together are exactly the reply; the reply chunk or read chunk carries the whole
// stream; the header always fits the inline limit; otherwise ERR_CHUNK only when
// nothing the client offered fits; the planned header encodes and decodes back.
func FuzzPlanReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		b := fuzzInput(in)
		lim := replyLimits{inline: 1024 + 4*(b.u16()%2048), readChunks: b.next()%2 == 1}
		var call Header
		call.XID, call.Vers, call.Credits, call.Proc = 7, Version1, 32, ProcMsg
		if b.next()%2 == 1 {
			lim.msgp = true
			call.Proc, call.Align, call.Thresh = ProcMsgP, uint32(1<<(b.next()%13)), uint32(b.u16())
		}
		stag := uint32(0x100)
		segs := func(n int) []chunks.Segment {
			var s []chunks.Segment
			for ; n > 0; n-- {
				stag++
				s = append(s, chunks.Segment{Handle: stag, Length: uint32(b.u16() % 6000), Offset: uint64(stag) << 24})
			}
			return s
		}
		for i := b.next() % 4; i > 0; i-- {
			call.WriteList = append(call.WriteList, segs(1+b.next()%3))
		}
		call.ReplyChunk = segs(b.next() % 3)
		reply := b.message()
		if b.next()%4 == 0 && len(reply.Payloads) > 0 {
			// An empty payload with nil data (never placed in a write chunk).
			shift := xdr.RoundUp(len(reply.Payloads[0].Data))
			reply.Payloads[0].Data = nil
			for i := 1; i < len(reply.Payloads); i++ {
				reply.Payloads[i].Pos -= shift
			}
		}

		lim.noReadChunks = b.next()%2 == 1 // we announced maxrdmaread 0

		var out Header
		out.XID, out.Vers, out.Credits = call.XID, Version1, 16
		p, err := planReply(&out, &call, reply, &lim)
		if lim.noReadChunks && p.path == pathReadChunk {
			t.Fatal("reply read chunk after announcing maxrdmaread 0")
		}

		// A payload longer than its write chunk is ERR_CHUNK, never moved into the
		// stream.
		for i := range call.WriteList {
			if i < len(reply.Payloads) && i < 64 && reply.Payloads[i].Data != nil && uint64(len(reply.Payloads[i].Data)) > call.WriteList[i].Length() {
				if !errors.Is(err, errReplyTooLarge) {
					t.Fatalf("payload %d (%d bytes) into a %d-byte chunk: %v, want errReplyTooLarge", i, len(reply.Payloads[i].Data), call.WriteList[i].Length(), err)
				}
				return
			}
		}

		// Write chunks: placed exactly when there is a payload, filled with exactly it.
		if len(out.WriteList) != len(call.WriteList) {
			t.Fatalf("reply write list has %d chunks, call %d", len(out.WriteList), len(call.WriteList))
		}
		placedLen := 0
		for i, c := range out.WriteList {
			var data []byte
			if i < len(reply.Payloads) {
				data = reply.Payloads[i].Data
			}
			fits := data != nil && uint64(len(data)) <= call.WriteList[i].Length()
			if placed := p.placed&(1<<i) != 0; placed != fits {
				t.Fatalf("payload %d (%d bytes, nil %v) into a %d-byte chunk: placed %v", i, len(data), data == nil, call.WriteList[i].Length(), placed)
			}
			want := uint64(0)
			if fits {
				want = uint64(len(data))
				placedLen += xdr.RoundUp(len(data))
			}
			if c.Length() != want || len(c) > len(call.WriteList[i]) {
				t.Fatalf("reply write chunk %d %v, want %d bytes of %v", i, c, want, call.WriteList[i])
			}
			for j, s := range c {
				o := call.WriteList[i][j]
				if s.Handle != o.Handle || s.Offset != o.Offset || s.Length > o.Length {
					t.Fatalf("reply write chunk %d segment %d %+v outside the offered %+v", i, j, s, o)
				}
			}
		}
		// Totals: the stream and the placed payloads are the reply.
		if p.stream+placedLen != reply.Len() {
			t.Fatalf("stream %d + placed %d != reply %d", p.stream, placedLen, reply.Len())
		}
		if n := len(appendStream(nil, reply, p.placed)); n != p.stream {
			t.Fatalf("appendStream wrote %d bytes, plan says %d", n, p.stream)
		}
		fitsInline := func() bool { return out.Size()+p.stream <= lim.inline }
		if err != nil {
			headerTooLong := out.Size() > lim.inline // the header alone exceeds the inline limit
			if !errors.Is(err, errReplyTooLarge) || (!headerTooLong && ((lim.readChunks && !lim.noReadChunks) || fitsInline() ||
				(len(call.ReplyChunk) > 0 && uint64(p.stream) <= call.ReplyChunk.Length()))) {
				t.Fatalf("planReply: %v (stream %d, inline %d, reply chunk %d, read chunks %v)", err, p.stream, lim.inline, call.ReplyChunk.Length(), lim.readChunks)
			}
			return
		}
		switch p.path {
		case pathInline:
			if out.Size()+p.pad+p.stream > lim.inline {
				t.Fatalf("inline: %d-byte header + %d pad + %d stream exceeds %d", out.Size(), p.pad, p.stream, lim.inline)
			}
			if out.Proc == ProcMsgP {
				if !lim.msgp || out.Align != call.Align || out.Thresh < call.Thresh {
					t.Fatalf("RDMA_MSGP reply: align %d, thresh %d to a call with %d, %d", out.Align, out.Thresh, call.Align, call.Thresh)
				}
				checkPadded(t, out.Size(), reply, p.placed, out.Align, out.Thresh, p.pad)
			} else if out.Proc != ProcMsg || p.pad != 0 {
				t.Fatalf("inline reply %v with %d pad", out.Proc, p.pad)
			}
		case pathReplyChunk:
			if out.Proc != ProcNoMsg || out.ReplyChunk.Length() != uint64(p.stream) || fitsInline() {
				t.Fatalf("reply chunk: %v, chunk %v for a %d-byte stream", out.Proc, out.ReplyChunk, p.stream)
			}
		case pathReadChunk:
			if !lim.readChunks || out.Proc != ProcNoMsg || len(out.ReadList) != 1 || out.ReadList[0].Position != 0 ||
				int(out.ReadList[0].Length) != p.stream || fitsInline() {
				t.Fatalf("read chunk reply: %v, read list %v for a %d-byte stream", out.Proc, out.ReadList, p.stream)
			}
		}
		if out.Size() > lim.inline {
			t.Fatalf("%d-byte reply header exceeds the inline limit %d", out.Size(), lim.inline)
		}
		if p.path != pathReadChunk {
			checkEncodes(t, &out)
		}
	})
}
