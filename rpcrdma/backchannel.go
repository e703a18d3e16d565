// Reverse-direction RPC (RFC 8167; Linux backchannel.c and svc_rdma_backchannel.c):
// what both sides share. A reverse-direction message is an RDMA_MSG with three empty
// chunk lists carrying a whole RPC message inline (reverse-direction transactions use
// no chunks, in either direction, as with Linux's client and server, which neither
// send nor accept them); the receiver tells it from
// forward-direction traffic by the RPC message's msg_type: a client receives forward
// REPLYs and reverse CALLs, a server forward CALLs and reverse REPLYs.
//
// Credits (§4) are counted apart from the forward direction's: rdma_credit in a
// reverse CALL is the server's request and in a reverse REPLY the client's grant of
// reverse-direction credits, the number of reverse calls the client can take at once
// (receives it keeps posted for them). A server starts with one reverse credit, as for
// any new connection, and follows the grant of each reverse reply.

package rpcrdma

import (
	"encoding/binary"
	"errors"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// Reverse-direction defaults.
const (
	// DefaultBackchannelCredits is the default ServerOptions.BackchannelCredits: the
	// reverse calls a server connection keeps in flight at most (and requests in
	// rdma_credit), as Linux svcrdma (RPCRDMA_MAX_BC_REQUESTS = 2).
	DefaultBackchannelCredits = 2
	// LinuxBackchannelGrant is the reverse-direction grant Linux's client puts in its
	// reverse replies (RPCRDMA_BACKWARD_WRS / 2 = 16, NFS4_DEF_CB_SLOT_TABLE_SIZE); it
	// keeps twice that many receives posted for reverse calls beyond its forward
	// credits. Our client grants oncrpc.BackchannelOptions.MaxRequests and keeps that
	// many receives posted.
	LinuxBackchannelGrant = 16
	// MaxBackchannelRequests caps a client's oncrpc.BackchannelOptions.MaxRequests:
	// each reverse call in progress holds a registered receive buffer.
	MaxBackchannelRequests = 64
)

// ErrReverseTooLarge is wrapped by the error of a reverse call whose message does not
// fit the connection's inline threshold: reverse-direction messages travel without
// chunks (see the top of this file), so such a call cannot be sent. A client whose handler's reply does not fit
// answers SYSTEM_ERR instead, which the server's caller gets as an *oncrpc.AcceptError.
var ErrReverseTooLarge = errors.New("rpcrdma: reverse-direction message exceeds the inline threshold")

// reverseMessage reports whether buf, a received transport message, is a
// reverse-direction candidate: RDMA_MSG, version 1, three empty chunk lists, followed by
// an RPC message of at least xid and msg_type whose xid equals rdma_xid (as Linux's
// rpcrdma_is_bcall requires). It returns that RPC message and its msg_type. It decodes
// in place and never allocates.
func reverseMessage(buf []byte) (body []byte, mt oncrpc.MsgType, ok bool) {
	if len(buf) < MinSize+8 {
		return nil, 0, false
	}
	be := binary.BigEndian
	if be.Uint32(buf[4:]) != Version1 || Proc(be.Uint32(buf[12:])) != ProcMsg {
		return nil, 0, false
	}
	if be.Uint32(buf[16:]) != 0 || be.Uint32(buf[20:]) != 0 || be.Uint32(buf[24:]) != 0 {
		return nil, 0, false // chunks: not a reverse-direction message
	}
	body = buf[MinSize:]
	if be.Uint32(body) != be.Uint32(buf) {
		return nil, 0, false
	}
	return body, oncrpc.MsgType(be.Uint32(body[4:])), true
}

// appendReverseHeader appends the transport header of a reverse-direction message:
// RDMA_MSG with credit and no chunks.
func appendReverseHeader(b []byte, xid, credit uint32) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, xid)
	b = be.AppendUint32(b, Version1)
	b = be.AppendUint32(b, credit)
	b = be.AppendUint32(b, uint32(ProcMsg))
	return append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
}
