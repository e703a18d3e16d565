// Package xdr encodes and decodes External Data Representation (RFC 4506) without
// reflection and without allocating on the hot path.
//
// An Encoder appends to a caller's []byte; a Decoder reads from a []byte and slices into
// it rather than copying. Every length a peer claims is checked against what remains in
// the buffer (and against the caller's limit) before anything is sliced or allocated, and
// every error is a *DecodeError that names the XDR type being decoded and its offset.
//
// # Payloads and XDR position
//
// RPC-over-RDMA (RFC 8166 §3.4, seed draft §3.4–3.7) moves large opaque items out of the
// inline XDR stream: the item's length word stays in the stream, its data bytes and XDR pad
// travel as an RDMA chunk. Encoder.Payload records such an item as a Payload at its XDR
// position instead of copying it, and Decoder.Payload returns an item that a transport
// placed out of line (Decoder.SetPlaced) or, when none was placed, the inline opaque. Both
// keep Pos, the position in the whole logical XDR stream, which is what chunk positions
// refer to.
//
// # RDMA_MSGP padding
//
// An RPC-over-RDMA RDMA_MSGP message (seed draft §3.9) carries padding between the
// length word and the data of every opaque of at least rdma_thresh bytes, so that the
// data starts on an rdma_align boundary of the receive buffer. Decoder.SetPadding gives
// a Decoder that rule (Padding) and it skips the padding; the transport, which alone
// knows the rule, tells the RPC layer, which alone knows the schema.
//
// Supported types: int, unsigned int, hyper, unsigned hyper, float, double, bool, enum,
// fixed and variable-length opaque, string, fixed and variable-length arrays (through
// ArrayLen and a loop in the caller), optional-data and discriminated unions (through
// Optional and the discriminant's Uint32/Enum). Quadruple-precision floats are not
// supported: no protocol this module speaks uses them.
//
// This package has no dependencies. github.com/davecgh/go-xdr is used only in tests, as
// an independent encoder to cross-check flat structures.
package xdr
