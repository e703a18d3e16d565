// RDMA_MSGP padding, shared by client and server (see "RDMA_MSGP" in doc.go).

package rpcrdma

// MaxMSGPAlign is the largest rdma_align this package pads to; larger values are
// treated as no padding.
const MaxMSGPAlign = 4096

var zeroPad [MaxMSGPAlign]byte

// msgpPad returns the padding an RDMA_MSGP sender puts between a header of hl bytes and
// the RPC message so that the message starts on an align boundary.
//
// RDMA_MSGP (seed §3.9) asks the XDR decoder to skip padding before opaque data of at
// least rdma_thresh bytes. A transport cannot find opaque items in a stream it does not
// parse, so this package applies the padding where the transport can: once, between the
// transport header and the RPC message, aligning the whole message (and so its
// 4-byte-aligned items) to rdma_align in the receive buffer; a sender uses RDMA_MSGP only
// for messages of at least rdma_thresh bytes. Both sides of this package strip it, and
// only peers that opted in send it (Linux removed RDMA_MSGP on both sides).
func msgpPad(hl int, align uint32) int {
	if align <= 1 || align > MaxMSGPAlign {
		return 0
	}
	a := int(align)
	return (a - hl%a) % a
}
