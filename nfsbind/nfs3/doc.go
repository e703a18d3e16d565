// Package nfs3 encodes and decodes the NFS version 3 protocol (RFC 1813) and the MOUNT
// version 3 protocol (RFC 1813 Appendix I): every procedure's arguments and results, in
// both directions. A server decodes arguments and encodes results; a client encodes
// arguments and decodes results. Nothing here opens files or sends messages.
//
// The codec is written by hand on package xdr. Decoded byte fields (file handles, names,
// paths, READ and WRITE data, directory entry names) alias the decoder's buffer and are
// valid only as long as that buffer is; decoding into a reused value does not allocate,
// except that lists (directory entries, MOUNT lists, auth flavors) grow their slices
// when they must. Every length
// a peer claims is checked before anything is sliced: file handles are at most
// FHSize (64) bytes, the names of diropargs3 at most MaxComponent (1024), other names at
// most MaxNameLen (255), MOUNT paths at most MaxPathLen (1024), symbolic link text at most
// MaxNFSPathLen (4096) in READLINK and MaxSymlinkData (16384) in SYMLINK, and
// READ/WRITE data at most MaxData bytes. Failures are returned as errors that name the
// procedure and field and wrap the *xdr.DecodeError underneath.
//
// # Direct data placement
//
// WRITE3args.data and READ3resok.data are the NFSv3 items RFC 8267 makes DDP-eligible.
// WriteArgs.EncodeXDR and ReadRes.EncodeXDR write them with xdr.Encoder.Payload, so the
// data is recorded at its XDR position rather than copied; WriteArgs.DecodeXDR and
// ReadRes.DecodeXDR read them with xdr.Decoder.Payload, so data a transport placed out of
// line (an RDMA write chunk) is returned in place. Over a byte-stream transport the same
// code sees the data inline. Package nfsbind states the rest of the binding.
//
// Dependencies: package xdr only. github.com/davecgh/go-xdr is used in tests, as an
// independent encoder to cross-check flat structures.
package nfs3
