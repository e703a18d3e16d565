package oncrpc

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// An InlineHandler is a Handler that says which of its procedures never block: they do
// no I/O, wait for nothing and hold locks only briefly (NULL, or answers from memory).
// On a connection that delivers its calls itself (PushServerConn, e.g. RPC-over-RDMA),
// a Server runs calls to such procedures right where they arrive, in the transport's
// receive context, instead of handing them to a worker goroutine, which saves two
// goroutine wake-ups per call. Everything else, and every call read with ReadCall,
// runs on workers.
type InlineHandler interface {
	Handler
	// Inline reports whether calls to procedure proc of version vers never block.
	Inline(vers, proc uint32) bool
}

// NonBlocking returns h with procs (of every version h serves) declared non-blocking:
// an InlineHandler whose ServeRPC is h's.
func NonBlocking(h Handler, procs ...uint32) InlineHandler {
	return nonBlocking{h: h, procs: slices.Clone(procs)}
}

type nonBlocking struct {
	h     Handler
	procs []uint32
}

func (n nonBlocking) ServeRPC(ctx context.Context, req *Request, res *xdr.Encoder) error {
	return n.h.ServeRPC(ctx, req, res)
}

func (n nonBlocking) Inline(vers, proc uint32) bool { return slices.Contains(n.procs, proc) }

// callHeaderPrefix is the fixed part of a call header up to the procedure number:
// xid, msg_type, rpcvers, prog, vers, proc.
const callHeaderPrefix = 24

// inline reports whether call is to a procedure its handler declares non-blocking. It
// peeks at the header without decoding it; anything unusual is left to the worker path.
func (s *Server) inline(call *ServerCall) bool {
	b := call.Msg.Inline
	if len(b) < callHeaderPrefix || binary.BigEndian.Uint32(b[4:]) != uint32(Call) {
		return false
	}
	prog, vers, proc := binary.BigEndian.Uint32(b[12:]), binary.BigEndian.Uint32(b[16:]), binary.BigEndian.Uint32(b[20:])
	h, _, _, _ := s.lookup(prog, vers)
	ih, ok := h.(InlineHandler)
	return ok && ih.Inline(vers, proc)
}
