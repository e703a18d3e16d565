// Package nfs4 encodes and decodes the NFS version 4.1 protocol (RFC 8881): the
// COMPOUND procedure's header and each operation's arguments and results, in both
// directions, and the callback program's CB_COMPOUND. A server decodes arguments and
// encodes results; a client encodes arguments and decodes results. Nothing here opens
// files, keeps state or sends messages.
//
// The codec is written by hand on package xdr. Decoded byte fields (file handles,
// names, owners, READ and WRITE data) alias the decoder's buffer and are valid only as
// long as that buffer is; decoding into a value reused from an earlier decode does not
// allocate (lists reuse their storage). Every length a peer claims is checked before anything is
// sliced: file handles are at most FHSize (128) bytes, owners at most OpaqueLimit
// (1024), names at most MaxComponent, and READ/WRITE data at most MaxData bytes.
// Failures are returned as errors that name the operation and field and wrap the
// *xdr.DecodeError underneath; StatusOf maps them to the status a server answers with
// (NFS4ERR_BADXDR unless the error carries a more specific one).
//
// # COMPOUND
//
// A server reads a request with CompoundArgsReader: Reset decodes the tag, the minor
// version and the operation count, so NFS4ERR_MINOR_VERS_MISMATCH and
// NFS4ERR_TOO_MANY_OPS can be answered before any operation is decoded; then Next
// returns one operation number at a time (undefined numbers as OpIllegal) and the
// server decodes that operation's arguments with its own reused value. It writes the
// reply with CompoundResWriter, which patches the status and the result count when the
// COMPOUND ends. A client mirrors both with CompoundArgsWriter and CompoundResReader;
// CompoundArgs and CompoundRes hold a whole request or reply as one value, and
// NewArgs/NewRes give a fresh value for any operation number. Operations RFC 8881
// defines but this package does not decode (pNFS, directory delegations, SSV, the
// NFSv4.0-only SETCLIENTID, OPEN_CONFIRM, RENEW) are refused with NFS4ERR_NOTSUPP;
// RELEASE_LOCKOWNER is decoded so it can be answered in order.
//
// # Hot path
//
// Decoding SEQUENCE, PUTFH, READ and WRITE arguments into reused values and encoding
// their results into a reused xdr.Encoder does not allocate (TestHotPathAllocs).
//
// # Direct data placement
//
// WRITE4args.data and READ4resok.data are written with xdr.Encoder.Payload and read
// with xdr.Decoder.Payload, exactly like NFSv3's, so over RPC-over-RDMA they move by
// read chunk and write chunk, one per WRITE or READ in COMPOUND order; package nfsbind
// states the binding (RuleForV4, ChunksForV4). Everything else, READLINK and READDIR
// replies included, stays in the XDR stream, in a reply chunk when large.
//
// # Attributes
//
// Fattr holds the attributes this package supports (SupportedAttrs): the REQUIRED ones
// and those a POSIX server needs. EncodeFattr writes the attributes of a mask in bit
// order; DecodeFattr refuses an attribute outside SupportedAttrs with NFS4ERR_ATTRNOTSUPP,
// and a server limits SETATTR to SettableAttrs. VERIFY and NVERIFY keep the attribute
// values encoded (Fattr4) for a byte-wise comparison.
//
// # Callbacks
//
// CBCompoundArgs and CBCompoundRes encode the callback program's CB_COMPOUND with
// CB_SEQUENCE and CB_RECALL, sent by the server on the session's back channel to the
// program number the client chose in CREATE_SESSION.
//
// Dependencies: package xdr only. github.com/davecgh/go-xdr is used in tests, as an
// independent encoder to cross-check structures.
package nfs4
