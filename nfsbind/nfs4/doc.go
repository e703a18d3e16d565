// Package nfs4 encodes and decodes the NFS version 4.1 protocol (RFC 8881): the
// COMPOUND procedure's header and each operation's arguments and results, in both
// directions, and the callback program's CB_COMPOUND. A server decodes arguments and
// encodes results; a client encodes arguments and decodes results. Nothing here opens
// files, keeps state or sends messages.
//
// The codec is written by hand on package xdr. Decoded byte fields (file handles,
// names, owners, READ and WRITE data) alias the decoder's buffer and are valid only as
// long as that buffer is. Every length a peer claims is checked before anything is
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
// CompoundArgs and CompoundRes hold a whole request or reply as one value.
package nfs4
