package oncrpc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// RetryPolicy is a Client's retransmission policy.
//
// Each try waits at most Timeout for a reply (0: no per-try limit, only the call's
// context). When a try times out and fewer than MaxTries tries have been made, the
// Client sends the call again with the same XID, so that a server's duplicate request
// cache recognizes the retransmission and a late reply to an earlier try completes the
// call. MaxTries < 1 means 1. The context bounds all tries together.
//
// Over a connection-oriented transport the transport itself retransmits outstanding
// calls after reconnecting, so the usual policy there is no per-try timeout.
type RetryPolicy struct {
	Timeout  time.Duration
	MaxTries int
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithAuth makes the Client send cred as every call's credential (default AUTH_NONE).
// The verifier is AUTH_NONE. See NewAuthSys.
func WithAuth(cred OpaqueAuth) ClientOption {
	return func(c *Client) { c.cred = cred }
}

// WithRetry sets the retransmission policy (default: one try, no per-try timeout).
func WithRetry(p RetryPolicy) ClientOption {
	return func(c *Client) { c.retry = p }
}

// CallOptions carry what a transport needs beyond the arguments.
type CallOptions struct {
	// ReplySinks are buffers where the transport may place DDP-eligible results (an
	// NFS READ's data), in result order. Decoders see them through
	// xdr.Decoder.Payload.
	ReplySinks [][]byte
	// MaxReply is an upper bound on the reply's size (0: unknown).
	MaxReply int
}

// A Client calls one program version over a RoundTripper. It is safe for concurrent
// use. XIDs come from one process-wide sequence that starts at a random value, so they
// are distinct across all Clients, including Clients that share a transport, and
// unlikely to repeat those of an earlier run of the program (which a server's
// duplicate request cache would take for retransmissions).
type Client struct {
	t       RoundTripper
	prog    uint32
	vers    uint32
	cred    OpaqueAuth
	retry   RetryPolicy
	monitor *Monitor  // nil: none
	pool    sync.Pool // *clientCallState
}

// xidSeq is the process-wide XID sequence.
var xidSeq atomic.Uint32

func init() { xidSeq.Store(rand.Uint32()) }

// NewClient returns a Client for program prog, version vers over t. The Client does
// not own t: closing t is the caller's job, and several Clients may share it.
func NewClient(t RoundTripper, prog, vers uint32, opts ...ClientOption) *Client {
	c := &Client{t: t, prog: prog, vers: vers, cred: OpaqueAuth{Flavor: AuthNone}}
	for _, o := range opts {
		o(c)
	}
	if c.retry.MaxTries < 1 {
		c.retry.MaxTries = 1
	}
	c.pool.New = func() any { return new(clientCallState) }
	return c
}

// Transport returns the Client's RoundTripper.
func (c *Client) Transport() RoundTripper { return c.t }

// NextXID returns a fresh XID from the sequence Clients use, for callers that build
// ClientCalls themselves.
func NextXID() uint32 { return xidSeq.Add(1) }

// clientCallState is the pooled per-call state.
type clientCallState struct {
	enc   xdr.Encoder
	call  ClientCall
	reply ClientReply
	dec   xdr.Decoder
	hdr   ReplyHeader
}

// maxPooledBuffer bounds the message buffers pooled call states keep: room for a
// record of DefaultMaxRecord (so 1 MiB NFS READs and WRITEs over TCP reuse their
// buffers) plus generous headers. Larger buffers are dropped after use.
const maxPooledBuffer = DefaultMaxRecord + 64<<10

// Call calls procedure proc with args (nil: no arguments) and decodes the results into
// res (nil: results ignored). A reply other than SUCCESS is an *AcceptError or
// *RejectError; a result decoding error wraps the *xdr.DecodeError; transport errors
// and ctx's error are wrapped with the XID.
//
// The reply buffer is reused by later calls: res.DecodeXDR must copy any bytes it keeps
// (xdr.Decoder's Opaque, String and Payload results alias the reply), except items
// placed in the caller's own ReplySinks.
func (c *Client) Call(ctx context.Context, proc uint32, args xdr.EncoderTo, res xdr.DecoderFrom) error {
	return c.CallWithOptions(ctx, proc, args, res, CallOptions{})
}

// CallWithOptions is Call with reply sinks and a reply size bound for the transport.
func (c *Client) CallWithOptions(ctx context.Context, proc uint32, args xdr.EncoderTo, res xdr.DecoderFrom, o CallOptions) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("oncrpc: call prog %d vers %d proc %d not sent: %w", c.prog, c.vers, proc, err)
	}
	st := c.pool.Get().(*clientCallState)
	defer c.release(st)

	hdr := CallHeader{XID: xidSeq.Add(1), Prog: c.prog, Vers: c.vers, Proc: proc, Cred: c.cred, Verf: noneVerf}
	st.enc.Reset(st.enc.Bytes()[:0])
	hdr.EncodeXDR(&st.enc)
	if args != nil {
		args.EncodeXDR(&st.enc)
	}
	st.call = ClientCall{
		XID:        hdr.XID,
		Msg:        Message{Inline: st.enc.Bytes(), Payloads: st.enc.Payloads()},
		ReplySinks: o.ReplySinks,
		MaxReply:   o.MaxReply,
		Timeout:    c.retry.Timeout,
	}
	var err error
	for try := 1; ; try++ {
		err = c.t.RoundTrip(ctx, &st.call, &st.reply)
		if c.monitor != nil {
			if err == nil {
				c.monitor.replied()
			} else if errors.Is(err, ErrTimeout) {
				c.monitor.timedOut()
			}
		}
		if err == nil || !errors.Is(err, ErrTimeout) || try >= c.retry.MaxTries || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("oncrpc: call xid %#x prog %d vers %d proc %d: %w", hdr.XID, c.prog, c.vers, proc, err)
	}
	st.dec.Reset(st.reply.Inline)
	st.dec.SetPadding(st.reply.Padding)
	if err := st.hdr.DecodeXDR(&st.dec); err != nil {
		return err
	}
	if st.hdr.XID != hdr.XID {
		return fmt.Errorf("oncrpc: reply xid %#x for call xid %#x", st.hdr.XID, hdr.XID)
	}
	if err := st.hdr.Err(); err != nil {
		return err
	}
	if res == nil {
		return nil
	}
	st.dec.SetPlaced(st.reply.Placed)
	if err := res.DecodeXDR(&st.dec); err != nil {
		return fmt.Errorf("oncrpc: decoding results of prog %d vers %d proc %d: %w", c.prog, c.vers, proc, err)
	}
	return nil
}

func (c *Client) release(st *clientCallState) {
	clear(st.enc.Payloads()) // do not keep the caller's argument data alive
	buf := st.enc.Bytes()
	if cap(buf) > maxPooledBuffer {
		buf = nil
	}
	st.enc.Reset(buf[:0])
	st.call = ClientCall{}
	if cap(st.reply.Inline) > maxPooledBuffer {
		st.reply.Inline = nil
	}
	clear(st.reply.Placed)
	st.reply.Placed = st.reply.Placed[:0]
	st.reply.Padding = xdr.Padding{}
	st.dec.Reset(nil)
	st.hdr = ReplyHeader{}
	c.pool.Put(st)
}
