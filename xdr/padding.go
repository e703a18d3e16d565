// RDMA_MSGP padding of opaque data (draft-ietf-nfsv4-rpcrdma-08 §3.9), as a decoding
// mode of Decoder.

package xdr

// Padding is the RDMA_MSGP padding rule of one received message (draft-ietf-nfsv4-
// rpcrdma-08 §3.9): "Where the decoded length exceeds the rdma_thresh, the XDR decode
// MUST skip over the appropriate padding as indicated by rdma_align and the current XDR
// stream position." The padding sits between a variable-length opaque's (or string's)
// length word and its data, and makes the data start on an Align boundary.
//
// The boundary is counted from the start of the receive buffer, that is from the first
// byte of the RPC-over-RDMA transport header, which RDMA places at the start of the
// buffer: the draft's figure aligns data in the receiver's chained buffers, which hold
// the whole message, and the transport header and the RPC message form one XDR stream
// (struct rdma_msg, then "rpc body follows"). Base is therefore the offset of the
// decoder's first byte in that buffer: the transport header's length.
//
// The draft says both "rdma_thresh, which is the opaque data size at or above which
// padding is applied" and "where the decoded length exceeds the rdma_thresh"; a Decoder
// follows the first, the definition: data of Thresh bytes or more is padded.
// Fixed-length opaques have no decoded length and are never padded.
type Padding struct {
	Align  uint32 // rdma_align; 0 or 1: no padding
	Thresh uint32 // rdma_thresh
	Base   int    // offset of the stream's first byte in the receive buffer
}

// Before returns the number of pad bytes before the data of an opaque whose length is n
// and whose data would otherwise start at offset off of the stream (Base not included).
func (p Padding) Before(n uint32, off int) int {
	if p.Align <= 1 || n < p.Thresh {
		return 0
	}
	a := uint64(p.Align)
	return int((a - uint64(p.Base+off)%a) % a)
}

// SetPadding makes d skip RDMA_MSGP padding as p describes, until the next Reset; the
// zero Padding turns it off. Opaque, String, StringBytes and an inline Payload skip the
// padding before their data; a Payload placed out of line has none.
func (d *Decoder) SetPadding(p Padding) { d.pad = p }
