package confproto

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// NewClient returns an oncrpc.Client for CONFIG_RDMA_PROG version 1 over t, for
// Negotiate.
func NewClient(t oncrpc.RoundTripper, opts ...oncrpc.ClientOption) *oncrpc.Client {
	return oncrpc.NewClient(t, Program, Version, opts...)
}

// reqArgs encodes a config_rdma_req into an RPC call.
type reqArgs ConfigRDMAReq

func (r *reqArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(r.MaxCallSendSize)
	e.Uint32(r.MaxReplySendSize)
	e.Uint32(r.MaxRDMARead)
}

// replyResult decodes a config_rdma_reply from an RPC reply: exactly 12 bytes.
type replyResult ConfigRDMAReply

func (r *replyResult) DecodeXDR(d *xdr.Decoder) error {
	rest := d.Rest()
	n, err := (*ConfigRDMAReply)(r).DecodeXDR(rest)
	if err != nil {
		return err
	}
	if len(rest) > n {
		return fmt.Errorf("confproto: config_rdma_reply: %d bytes after maxrdmaread: %w", len(rest)-n, ErrTrailing)
	}
	return d.Skip(n)
}

// Negotiate runs the Connection Configuration Protocol (seed §6) as a client: it calls
// CONF_RDMA with want over c (a client of Program, Version: see NewClient) and
// returns the server's validated reply. ClientSettings(want, reply) is then what to
// apply; NegotiateAndApply does both.
//
// Seed §6.1: before the reply the client may assume only one credit and 1 KB messages.
// Negotiate makes exactly one call, and that call fits: a call header with the
// largest credential and verifier (24 + 2 × 408 bytes) plus the 12-byte
// config_rdma_req is 852 bytes, 880 with a minimal RPC-over-RDMA header. The caller
// must not issue other calls on the connection until Negotiate returns; an
// RPC-over-RDMA client transport starts with one credit, which enforces it.
//
// want must be valid (ConfigRDMAReq.Validate). An invalid reply (maxcall_sendsize
// below 1024, an align that is not a power of two) is a *ValueError.
func Negotiate(ctx context.Context, c *oncrpc.Client, want ConfigRDMAReq) (ConfigRDMAReply, error) {
	if err := want.Validate(); err != nil {
		return ConfigRDMAReply{}, fmt.Errorf("confproto: negotiate: %w", err)
	}
	args := reqArgs(want)
	var res replyResult
	if err := c.Call(ctx, ProcConfRDMA, &args, &res); err != nil {
		return ConfigRDMAReply{}, fmt.Errorf("confproto: CONF_RDMA: %w", err)
	}
	reply := ConfigRDMAReply(res)
	if err := reply.Validate(); err != nil {
		return ConfigRDMAReply{}, fmt.Errorf("confproto: CONF_RDMA reply: %w", err)
	}
	return reply, nil
}

// A ConnScoped Configurable is a client transport that replaces its connection when
// it is lost (rpcrdma.Client reconnects). What a negotiation agreed holds for the
// connection it ran on alone: the next connection's server never saw it, and may be
// another instance with other limits (a server restarted at the same address).
type ConnScoped interface {
	// ConnID names the current connection (0: none); each new connection gets a
	// new ID.
	ConnID() uint64
	// ApplyToConn calls apply, which changes the Configurable's settings, only
	// while connection id is current and alive, keeps it current until apply
	// returns, and reports whether it called it.
	ApplyToConn(id uint64, apply func()) bool
}

// ErrConnReplaced is wrapped by NegotiateAndApply's error when, on each of its
// tries, the connection it negotiated on was lost before the outcome could be
// applied: nothing negotiated on a lost connection was applied.
var ErrConnReplaced = errors.New("confproto: the connection was replaced before the negotiation's outcome was applied")

// maxApplyTries bounds the negotiations NegotiateAndApply runs when its connection is
// replaced each time before the outcome is applied.
const maxApplyTries = 3

// NegotiateAndApply runs Negotiate, applies ClientSettings to conn (nil: nothing is
// applied) and returns the settings. When conn is InlineBuffered, want's sizes are
// first reduced to its buffers: the server must not be told that replies larger than
// the receive buffers can come inline.
//
// When conn is ConnScoped, the settings are applied only to the connection the
// negotiation ran on: when it was lost meanwhile and the transport reconnected, the
// outcome is dropped and the new connection negotiated (up to maxApplyTries, 3,
// times; then the error wraps ErrConnReplaced). A later reconnection starts again
// from the transport's own values; call NegotiateAndApply again to configure it.
func NegotiateAndApply(ctx context.Context, c *oncrpc.Client, want ConfigRDMAReq, conn Configurable) (Settings, error) {
	if b, ok := conn.(InlineBuffered); ok {
		send, recv := b.InlineBuffers()
		if send >= BaseInlineSize && uint32(send) < want.MaxCallSendSize {
			want.MaxCallSendSize = uint32(send)
		}
		if recv >= BaseInlineSize && uint32(recv) < want.MaxReplySendSize {
			want.MaxReplySendSize = uint32(recv)
		}
	}
	scoped, _ := conn.(ConnScoped)
	for try := 1; ; try++ {
		var id uint64
		if scoped != nil {
			id = scoped.ConnID()
		}
		reply, err := Negotiate(ctx, c, want)
		if err != nil {
			return Settings{}, err
		}
		s := ClientSettings(want, reply)
		switch {
		case conn == nil:
			return s, nil
		case scoped == nil:
			s.Apply(conn)
			return s, nil
		case scoped.ApplyToConn(id, func() { s.Apply(conn) }):
			return s, nil
		case try == maxApplyTries:
			return Settings{}, fmt.Errorf("confproto: CONF_RDMA: %d negotiations: %w", try, ErrConnReplaced)
		}
	}
}
