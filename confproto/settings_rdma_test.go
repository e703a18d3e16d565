package confproto_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A test program served beside CONFIG_RDMA_PROG on the same connection.
const (
	testProg  = 0x20000100
	testVers  = 1
	procEcho  = 1 // args: one DDP-eligible opaque; results: the same
	procBlob  = 2 // args: uint32 n; results: an n-byte opaque (not DDP-eligible)
	bigInline = 8192
)

// payload encodes and decodes one DDP-eligible opaque.
type payload []byte

func (p payload) EncodeXDR(e *xdr.Encoder) { e.Payload(p) }
func (p *payload) DecodeXDR(d *xdr.Decoder) error {
	b, err := d.Payload(-1)
	*p = append((*p)[:0], b...)
	return err
}

type blobLen uint32

func (n blobLen) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(n)) }

type blob []byte

func (b *blob) DecodeXDR(d *xdr.Decoder) error {
	v, err := d.Opaque(-1)
	*b = append((*b)[:0], v...)
	return err
}

var testProcs = oncrpc.Procs{
	procEcho: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		var p payload
		if err := p.DecodeXDR(req.Args); err != nil {
			return fmt.Errorf("%w: %w", oncrpc.ErrGarbageArgs, err)
		}
		p.EncodeXDR(res)
		return nil
	},
	procBlob: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		n, err := req.Args.Uint32()
		if err != nil || n > 1<<20 {
			return oncrpc.ErrGarbageArgs
		}
		res.Opaque(bytes.Repeat([]byte{0x5a}, int(n)))
		return nil
	},
}

// settingsEnv is a CONF_RDMA service and the test program on one RPC-over-RDMA
// listener, and a client connected to it whose wire is logged.
type settingsEnv struct {
	ctx  context.Context
	tr   *rpcrdma.Client
	conf *oncrpc.Client
	test *oncrpc.Client
	wire *wireLog
}

// newSettingsEnv is newSizedEnv with both transports' buffers of bigInline bytes.
func newSettingsEnv(t *testing.T, limits confproto.Limits, so *rpcrdma.ServerOptions, co *rpcrdma.ClientOptions) *settingsEnv {
	t.Helper()
	so.InlineRecv, so.InlineSend = bigInline, bigInline
	co.InlineSend, co.InlineRecv = bigInline, bigInline
	return &newSizedEnv(t, limits, so, co).settingsEnv
}

// lastSent returns the header and bytes of the last message the client sent.
func (env *settingsEnv) lastSent(t *testing.T) (rpcrdma.Header, []byte) {
	t.Helper()
	msgs := env.wire.snapshot()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].sent {
			var h rpcrdma.Header
			if _, err := h.Decode(msgs[i].b); err != nil {
				t.Fatal(err)
			}
			return h, msgs[i].b
		}
	}
	t.Fatal("nothing sent")
	return rpcrdma.Header{}, nil
}

// echo calls procEcho with n bytes and checks the result.
func (env *settingsEnv) echo(t *testing.T, n int) ([]byte, error) {
	t.Helper()
	arg := make([]byte, n)
	for i := range arg {
		arg[i] = byte(i*13 + 1)
	}
	var res payload
	err := env.test.CallWithOptions(env.ctx, procEcho, payload(arg), &res, oncrpc.CallOptions{MaxReply: n + 200})
	if err == nil && !bytes.Equal(res, arg) {
		t.Fatalf("%d-byte echo came back wrong", n)
	}
	return arg, err
}

var want8k = confproto.ConfigRDMAReq{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, MaxRDMARead: 4}

// TestMSGPNegotiatedOverRDMA: a client that opted in (MSGPThresh) sends RDMA_MSG until
// CONF_RDMA tells it the server's receive buffer alignment (seed §6.2: "The client MAY
// use this value to compute the number of prepended pad bytes when XDR encoding opaque
// values in the RPC call message"), then RDMA_MSGP with the payload's data on that
// boundary (seed §3.9); the server decodes it and echoes it back.
func TestMSGPNegotiatedOverRDMA(t *testing.T) {
	limits := confproto.Limits{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, Align: 256, MaxRDMARead: 8}
	env := newSettingsEnv(t, limits, &rpcrdma.ServerOptions{MSGP: true}, &rpcrdma.ClientOptions{MSGPThresh: 512})
	if _, err := env.echo(t, 2000); err != nil {
		t.Fatal(err)
	}
	if h, _ := env.lastSent(t); h.Proc != rpcrdma.ProcMsg {
		t.Fatalf("before CONF_RDMA: %v", h.Proc)
	}
	s, err := confproto.NegotiateAndApply(env.ctx, env.conf, want8k, env.tr)
	if err != nil || s.Align != 256 {
		t.Fatalf("settings %+v, %v", s, err)
	}
	arg, err := env.echo(t, 2000)
	if err != nil {
		t.Fatal(err)
	}
	h, msg := env.lastSent(t)
	if h.Proc != rpcrdma.ProcMsgP || h.Align != 256 || h.Thresh < 512 {
		t.Fatalf("after CONF_RDMA: %v align %d thresh %d", h.Proc, h.Align, h.Thresh)
	}
	if at := bytes.Index(msg, arg); at%256 != 0 {
		t.Fatalf("payload data at message offset %d", at)
	}
}

// TestMSGPNotNegotiatedWhenRefused: a server connection that does not accept RDMA_MSGP
// (ServerOptions.MSGP unset, as Linux) answers CONF_RDMA with XDR's own alignment
// whatever its Limits say, so an opted-in client keeps sending RDMA_MSG and its calls
// succeed instead of drawing ERR_CHUNK.
func TestMSGPNotNegotiatedWhenRefused(t *testing.T) {
	limits := confproto.Limits{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, Align: 256, MaxRDMARead: 8}
	env := newSettingsEnv(t, limits, &rpcrdma.ServerOptions{}, &rpcrdma.ClientOptions{MSGPThresh: 512})
	s, err := confproto.NegotiateAndApply(env.ctx, env.conf, want8k, env.tr)
	if err != nil || s.Align != confproto.DefaultAlign {
		t.Fatalf("settings %+v, %v", s, err)
	}
	if _, err := env.echo(t, 2000); err != nil {
		t.Fatal(err)
	}
	if h, _ := env.lastSent(t); h.Proc != rpcrdma.ProcMsg {
		t.Fatalf("sent %v to a server that refuses RDMA_MSGP", h.Proc)
	}
}

// Seed §6.2: "If zero, the peer MUST NOT issue requests which require RDMA Read to
// satisfy, as no transfer will be possible."

// TestMaxRDMAReadZeroClient: a client that announced maxrdmaread 0 sends no read chunks:
// a call too large for inline fails locally with an error naming the limit and never
// reaches the wire; calls that fit still work. A client that announced 0 but sends read
// chunks anyway (it did not apply the outcome) gets ERR_CHUNK, and the connection stays.
func TestMaxRDMAReadZeroClient(t *testing.T) {
	limits := confproto.Limits{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, Align: 4, MaxRDMARead: 8}
	want := want8k
	want.MaxRDMARead = 0

	env := newSettingsEnv(t, limits, &rpcrdma.ServerOptions{}, &rpcrdma.ClientOptions{})
	s, err := confproto.NegotiateAndApply(env.ctx, env.conf, want, env.tr)
	if err != nil || !s.NoReadTarget {
		t.Fatalf("settings %+v, %v", s, err)
	}
	sent := len(env.wire.snapshot())
	_, err = env.echo(t, 3*bigInline)
	if !errors.Is(err, rpcrdma.ErrNoReadChunks) || !strings.Contains(err.Error(), "maxrdmaread 0") {
		t.Fatalf("long call after announcing maxrdmaread 0: %v", err)
	}
	if n := len(env.wire.snapshot()); n != sent {
		t.Fatalf("%d messages reached the wire for a call that cannot be sent", n-sent)
	}
	if _, err := env.echo(t, 2000); err != nil {
		t.Fatal(err)
	}

	// The server side enforces it too.
	env = newSettingsEnv(t, limits, &rpcrdma.ServerOptions{}, &rpcrdma.ClientOptions{})
	if _, err := confproto.Negotiate(env.ctx, env.conf, want); err != nil {
		t.Fatal(err)
	}
	_, err = env.echo(t, 3*bigInline)
	var re *rpcrdma.RemoteError
	if !errors.As(err, &re) || re.Code != rpcrdma.ErrCodeChunk {
		t.Fatalf("read chunks from a client that announced maxrdmaread 0: %v, want ERR_CHUNK", err)
	}
	if h, _ := env.lastSent(t); len(h.ReadList) == 0 {
		t.Fatal("the call did not carry read chunks")
	}
	if _, err := env.echo(t, 2000); err != nil {
		t.Fatalf("connection after ERR_CHUNK: %v", err)
	}
}

// TestMaxRDMAReadZeroServer: a server that announced maxrdmaread 0 never answers with
// reply read chunks (which the client would have to RDMA Read): a reply that fits
// neither inline nor what the client offered gets ERR_CHUNK. With maxrdmaread 8 the
// same call is answered through a reply read chunk.
func TestMaxRDMAReadZeroServer(t *testing.T) {
	for _, reads := range []uint32{8, 0} {
		limits := confproto.Limits{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, Align: 4, MaxRDMARead: reads}
		env := newSettingsEnv(t, limits, &rpcrdma.ServerOptions{ReplyReadChunks: true}, &rpcrdma.ClientOptions{})
		if _, err := confproto.NegotiateAndApply(env.ctx, env.conf, want8k, env.tr); err != nil {
			t.Fatal(err)
		}
		var res blob
		// MaxReply 100: the client offers no reply chunk for this call.
		err := env.test.CallWithOptions(env.ctx, procBlob, blobLen(3*bigInline), &res, oncrpc.CallOptions{MaxReply: 100})
		var re *rpcrdma.RemoteError
		switch {
		case reads > 0 && (err != nil || len(res) != 3*bigInline):
			t.Fatalf("maxrdmaread %d: %d bytes, %v", reads, len(res), err)
		case reads == 0 && (!errors.As(err, &re) || re.Code != rpcrdma.ErrCodeChunk):
			t.Fatalf("maxrdmaread 0: %v, want ERR_CHUNK", err)
		}
	}
}
