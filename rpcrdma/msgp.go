// RDMA_MSGP padding (seed §3.9), shared by client and server: which items a sender pads,
// the rdma_thresh it announces, the padded stream, and the padding rule a receiver hands
// to the RPC layer (see "RDMA_MSGP" in doc.go).

package rpcrdma

import (
	"errors"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// MaxMSGPAlign is the largest rdma_align this package pads to when sending; a larger
// value (or one of at most 4, XDR's own alignment) makes it send RDMA_MSG instead.
// Received RDMA_MSGP messages are decoded whatever their rdma_align.
const MaxMSGPAlign = 4096

var zeroPad [MaxMSGPAlign]byte

// msgpAlignOK reports whether this package sends RDMA_MSGP padded to align: more than
// XDR's 4-byte alignment (which every item already has) and at most MaxMSGPAlign.
func msgpAlignOK(align uint32) bool { return align > xdr.Unit && align <= MaxMSGPAlign }

// unplaced reports whether payload i of a message travels in its stream (not in a write
// chunk: placed has bit i set for those, i < 64).
func unplaced(i int, placed uint64) bool { return i >= 64 || placed&(1<<i) == 0 }

// msgpThresh returns the rdma_thresh a sender announces for m, whose payloads not in
// placed travel in the stream: at least want, above every opaque item of m other than
// those payloads, and equal to the length of none of them.
//
// Seed §3.9 has the receiver skip padding before every opaque of at least rdma_thresh
// bytes, but the sender pads only the payloads, the items whose positions it knows.
// Every other opaque of m lies whole (length word and data) in m.Inline, so it is
// shorter than len(m.Inline): announcing at least that makes the receiver look for
// padding exactly where it was put. Keeping rdma_thresh different from every padded
// payload's length makes the draft's two wordings ("at or above", "exceeds") agree.
func msgpThresh(want uint32, m *oncrpc.Message, placed uint64) uint32 {
	t := max(want, uint32(len(m.Inline)))
	for again := true; again; {
		again = false
		for i, p := range m.Payloads {
			if unplaced(i, placed) && uint32(len(p.Data)) == t {
				t++
				again = true
			}
		}
	}
	return t
}

// msgpPadded returns the padding rule for m sent as RDMA_MSGP with an hl-byte header,
// and the total padding in its stream; ok is false when no payload in the stream is
// padded (the message then goes as RDMA_MSG).
func msgpPadded(align, want uint32, m *oncrpc.Message, placed uint64, hl int) (pad xdr.Padding, total int, ok bool) {
	pad = xdr.Padding{Align: align, Thresh: msgpThresh(want, m, placed), Base: hl}
	off, pos := 0, 0 // stream offset, logical position
	for i, p := range m.Payloads {
		off += p.Pos - pos
		pos = p.End()
		if !unplaced(i, placed) {
			continue
		}
		if uint32(len(p.Data)) >= pad.Thresh {
			ok = true
		}
		n := pad.Before(uint32(len(p.Data)), off)
		total += n
		off += n + xdr.RoundUp(len(p.Data))
	}
	return pad, total, ok
}

// appendPadded appends m's stream, its payloads not in placed put back in their places,
// each with the RDMA_MSGP padding pad asks for between its length word and its data;
// the stream starts at offset pad.Base of the message (len(b) on entry).
func appendPadded(b []byte, m *oncrpc.Message, placed uint64, pad xdr.Padding) []byte {
	start := len(b)
	off, pos := 0, 0 // offset in m.Inline, logical position
	for i, p := range m.Payloads {
		n := p.Pos - pos
		b = append(b, m.Inline[off:off+n]...)
		off += n
		pos = p.End()
		if !unplaced(i, placed) {
			continue
		}
		b = append(b, zeroPad[:pad.Before(uint32(len(p.Data)), len(b)-start)]...)
		b = append(b, p.Data...)
		b = append(b, zeroPad[:xdr.PadLen(len(p.Data))]...)
	}
	return append(b, m.Inline[off:]...)
}

// receivedPadding returns the padding rule the RPC layer applies to the RPC message
// following h, an hl-byte header: none unless h is RDMA_MSGP.
func receivedPadding(h *Header, hl int) xdr.Padding {
	if h.Proc != ProcMsgP {
		return xdr.Padding{}
	}
	return xdr.Padding{Align: h.Align, Thresh: h.Thresh, Base: hl}
}

// errMSGPReadList refuses an RDMA_MSGP message with a read list: the padding is for
// data placed by the Send, and the draft does not say whether read chunk positions
// count it. This package never sends one.
var errMSGPReadList = errors.New("RDMA_MSGP with a read list")

// msgpOption is the rdma_align a new connection starts with: ClientOptions.MSGPAlign
// when the client opted in (MSGPThresh), else 0.
func msgpOption(o *ClientOptions) uint32 {
	if o.MSGPThresh == 0 {
		return 0
	}
	return o.MSGPAlign
}

// SetMSGPAlign implements confproto.Aligner: align is the server's receive buffer
// alignment from its CONF_RDMA reply (seed §6.2: "The client MAY use this value to
// compute the number of prepended pad bytes when XDR encoding opaque values in the RPC
// call message"). When the client opted in (ClientOptions.MSGPThresh), the current
// connection's calls are padded to it from now on; an align of at most 4 (XDR's own)
// turns padding off. A reconnection starts again from ClientOptions.MSGPAlign.
func (c *Client) SetMSGPAlign(align int) {
	cc := c.current()
	if cc == nil || c.opts.MSGPThresh == 0 {
		return
	}
	cc.mu.Lock()
	cc.msgpAlign = uint32(max(0, min(align, MaxMSGPAlign+1)))
	cc.mu.Unlock()
}

// AcceptsMSGP implements confproto.MSGPAcceptor: whether the connection accepts
// RDMA_MSGP calls (ServerOptions.MSGP), so that CONF_RDMA recommends no alignment to
// clients of a server that would refuse them.
func (sc *ServerConn) AcceptsMSGP() bool { return sc.l.opts.MSGP }
