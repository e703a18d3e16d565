package confproto

import (
	"context"
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

// NegotiateAndApply runs Negotiate, applies ClientSettings to conn (nil: nothing is
// applied) and returns the settings. When conn is InlineBuffered, want's sizes are
// first reduced to its buffers: the server must not be told that replies larger than
// the receive buffers can come inline.
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
	reply, err := Negotiate(ctx, c, want)
	if err != nil {
		return Settings{}, err
	}
	s := ClientSettings(want, reply)
	if conn != nil {
		s.Apply(conn)
	}
	return s, nil
}
