// Package iwarp encodes and decodes the iWARP wire formats that travel on the
// TCP stream between two iWARP peers: MPA Request/Reply/Reject frames
// (RFC 5044, RFC 6581), MPA FPDU framing with pad and CRC32c (RFC 5044,
// without markers), and the DDP (RFC 5041) and RDMAP (RFC 5040) headers,
// including the RDMA Read Request body and the Terminate message.
//
// It is the framer of the pure-Go iWARP provider (verbs/soft) and does
// nothing else: no sockets, no connection state machine, no queue pairs or
// memory regions. Like golang.org/x/net/http2's Framer it turns bytes into
// typed values and back, validating what the RFCs let a receiver validate.
//
// # Interoperability with Linux siw
//
// The formats follow the RFCs, with the facts that matter for Linux
// soft-iWARP (siw) built in (see /work/shared/notes/linux-rpcrdma-siw.md):
//   - the MPA CRC field is always present; it is 0 when CRC is off, and the
//     CRC32c is stored little-endian, as siw sends it;
//   - MPA private data is limited to 256 bytes including the 4-byte RFC 6581
//     block (siw's limit; RFC 5044 allows 512); markers are refused;
//   - siw sends Terminate control words with the Layer/EType nibbles swapped
//     and the M/D/R bits moved; Terminate.Decode recognises that layout and
//     reports it, Terminate.Append always writes RFC order.
//
// # Errors
//
// Every decoder reports a violation as a *ProtocolError whose Code is the
// Terminate Layer/EType/Error Code the RFCs assign (TermCode constants), and
// whose Terminate method builds the Terminate message to send, header copy
// included. ErrIncomplete (with a byte count) means "give me more bytes".
//
// # Sending without copying
//
// AppendFPDUHeader writes the MPA length and DDP/RDMAP header for a payload
// of a given length; the payload is then sent as is (for example with
// net.Buffers) followed by AppendTrailer's pad and CRC. UpdateCRC folds the
// header and payload into the CRC state piece by piece, on sending as well as
// on receiving (while the payload is read straight into registered memory);
// CheckTrailer verifies it.
//
// The package has no dependencies outside the standard library and does not
// allocate per frame.
package iwarp
