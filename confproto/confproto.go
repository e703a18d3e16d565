// Package confproto holds the types and XDR encoding of the RPC-over-RDMA Connection
// Configuration Protocol, CONFIG_RDMA_PROG (program 100400, version 1), from
// draft-ietf-nfsv4-rpcrdma-08 §6. A client calls CONF_RDMA with a ConfigRDMAReq stating
// its inline send and receive sizes and its RDMA Read depth; the server answers with a
// ConfigRDMAReply. Use of the protocol is optional, and RFC 8166 dropped it in favour of
// RDMA-CM private data (RFC 8797); it is kept for peers that still speak it.
//
// The package has the types with their allocation-free XDR codec; the server side,
// Service, an oncrpc.Handler announcing configured Limits on any oncrpc.Server and
// transport; and the client side, Negotiate and NegotiateAndApply, which hand the
// outcome to a Configurable (implemented by an RPC-over-RDMA connection). Over a
// connection that reports its registered buffers (InlineBuffered), neither side
// announces or asks for inline messages larger than they hold. The structs
// are flat (three unsigned ints each), so the codec is written with
// encoding/binary. Tests cross-check it against github.com/davecgh/go-xdr (a test-only
// dependency) as an independent XDR implementation.
package confproto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Program numbers (seed §6.2: program CONFIG_RDMA_PROG { version VERS1 { ... } = 1 } = 100400).
const (
	Program      uint32 = 100400 // CONFIG_RDMA_PROG
	Version      uint32 = 1      // VERS1
	ProcNull     uint32 = 0      // NULL, implicit in every ONC RPC program
	ProcConfRDMA uint32 = 1      // CONF_RDMA: config_rdma_reply CONF_RDMA(config_rdma_req)
)

// BaseInlineSize is the message size every peer must handle before configuration (seed
// §6.1: one RPC message of at least 1 KB at a time); RFC 8166 §3.3.2 keeps 1024 as the
// default inline threshold.
const BaseInlineSize = 1024

// Encoded sizes in bytes.
const (
	ReqSize   = 12 // config_rdma_req: three uint32
	ReplySize = 12 // config_rdma_reply: three uint32
)

// ErrTruncated is wrapped by decoding errors when the input ends inside a field.
var ErrTruncated = errors.New("truncated")

// ConfigRDMAReq is config_rdma_req, the CONF_RDMA argument.
//
//	struct config_rdma_req {
//	     uint32  maxcall_sendsize;   /* max size of inline RPC call */
//	     uint32  maxreply_sendsize;  /* max size of inline RPC reply */
//	     uint32  maxrdmaread;        /* max active RDMA Reads at client */
//	};
type ConfigRDMAReq struct {
	MaxCallSendSize  uint32 // largest inline call the client may send
	MaxReplySendSize uint32 // largest inline reply the client accepts
	MaxRDMARead      uint32 // RDMA Reads the client allows active (its IRD)
}

// ConfigRDMAReply is config_rdma_reply, the CONF_RDMA result.
//
//	struct config_rdma_reply {
//	     uint32  maxcall_sendsize;   /* max call size accepted by server */
//	     uint32  align;              /* server's receive buffer alignment */
//	     uint32  maxrdmaread;        /* max active RDMA Reads at server */
//	};
type ConfigRDMAReply struct {
	MaxCallSendSize uint32 // largest inline call the server accepts
	Align           uint32 // alignment the server recommends for opaque data
	MaxRDMARead     uint32 // RDMA Reads the server allows active (its IRD)
}

// AppendXDR appends the XDR encoding of r (12 bytes) to b.
func (r *ConfigRDMAReq) AppendXDR(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.MaxCallSendSize)
	b = binary.BigEndian.AppendUint32(b, r.MaxReplySendSize)
	return binary.BigEndian.AppendUint32(b, r.MaxRDMARead)
}

// DecodeXDR decodes a config_rdma_req from the start of b and returns the number of bytes
// used (ReqSize). Bytes after it are left to the caller. A short input gives an error
// naming the field, wrapping ErrTruncated; r is unchanged then.
func (r *ConfigRDMAReq) DecodeXDR(b []byte) (int, error) {
	if err := need(b, "config_rdma_req", reqFields); err != nil {
		return 0, err
	}
	r.MaxCallSendSize = binary.BigEndian.Uint32(b)
	r.MaxReplySendSize = binary.BigEndian.Uint32(b[4:])
	r.MaxRDMARead = binary.BigEndian.Uint32(b[8:])
	return ReqSize, nil
}

// AppendXDR appends the XDR encoding of r (12 bytes) to b.
func (r *ConfigRDMAReply) AppendXDR(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.MaxCallSendSize)
	b = binary.BigEndian.AppendUint32(b, r.Align)
	return binary.BigEndian.AppendUint32(b, r.MaxRDMARead)
}

// DecodeXDR decodes a config_rdma_reply from the start of b and returns the number of
// bytes used (ReplySize). Bytes after it are left to the caller. A short input gives an
// error naming the field, wrapping ErrTruncated; r is unchanged then.
func (r *ConfigRDMAReply) DecodeXDR(b []byte) (int, error) {
	if err := need(b, "config_rdma_reply", replyFields); err != nil {
		return 0, err
	}
	r.MaxCallSendSize = binary.BigEndian.Uint32(b)
	r.Align = binary.BigEndian.Uint32(b[4:])
	r.MaxRDMARead = binary.BigEndian.Uint32(b[8:])
	return ReplySize, nil
}

var (
	reqFields   = [3]string{"maxcall_sendsize", "maxreply_sendsize", "maxrdmaread"}
	replyFields = [3]string{"maxcall_sendsize", "align", "maxrdmaread"}
)

// need reports which field of a three-word struct a short b ends in.
func need(b []byte, typ string, fields [3]string) error {
	if len(b) >= 12 {
		return nil
	}
	i := len(b) / 4
	return fmt.Errorf("confproto: %s.%s: %w: need %d bytes, have %d", typ, fields[i], ErrTruncated, 4*(i+1), len(b))
}
