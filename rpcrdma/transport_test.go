package rpcrdma

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Test program: procedures exercising every chunk type.
const (
	tpProg      = 0x20000099
	tpVers      = 1
	tpNull      = 0
	tpEcho      = 1 // args: payloads...; results: the same payloads (DDP-eligible)
	tpBig       = 2 // args: uint32 n; results: opaque<n> (not DDP-eligible)
	tpSum       = 3 // args: payloads...; results: uint32 count, uint32 total bytes
	tpBigInline = 4 // args: opaque (inline); results: uint32 length
	tpMixed     = 5 // args: opaque (inline), then payloads; results: uint32 count, uint32 total
)

// tpMixedArgs is an inline opaque followed by payloads.
type tpMixedArgs struct {
	blob     []byte
	payloads tpPayloads
}

func (a tpMixedArgs) EncodeXDR(e *xdr.Encoder) {
	e.Opaque(a.blob)
	a.payloads.EncodeXDR(e)
}

// tpPayloads encodes as: uint32 count, then count DDP-eligible opaques.
type tpPayloads [][]byte

func (p tpPayloads) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(len(p)))
	for _, b := range p {
		e.Payload(b)
	}
}

func (p *tpPayloads) DecodeXDR(d *xdr.Decoder) error {
	n, err := d.ArrayLen(64, 4)
	if err != nil {
		return err
	}
	*p = (*p)[:0]
	for i := 0; i < n; i++ {
		b, err := d.Payload(-1)
		if err != nil {
			return err
		}
		*p = append(*p, append([]byte(nil), b...))
	}
	return nil
}

type tpUint32 uint32

func (v tpUint32) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(v)) }
func (v *tpUint32) DecodeXDR(d *xdr.Decoder) error {
	x, err := d.Uint32()
	*v = tpUint32(x)
	return err
}

type tpOpaque []byte

func (v tpOpaque) EncodeXDR(e *xdr.Encoder) { e.Opaque(v) }
func (v *tpOpaque) DecodeXDR(d *xdr.Decoder) error {
	b, err := d.Opaque(-1)
	*v = append((*v)[:0], b...)
	return err
}

type tpPair [2]uint32

func (v *tpPair) DecodeXDR(d *xdr.Decoder) error {
	var err error
	if v[0], err = d.Uint32(); err != nil {
		return err
	}
	v[1], err = d.Uint32()
	return err
}

func tpHandler() oncrpc.Procs {
	return oncrpc.Procs{
		tpNull: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error { return nil },
		tpEcho: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var p tpPayloads
			if err := p.DecodeXDR(req.Args); err != nil {
				return err
			}
			p.EncodeXDR(res)
			return nil
		},
		tpBig: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			n, err := req.Args.Uint32()
			if err != nil {
				return err
			}
			b := make([]byte, n)
			tpFill(b, byte(n))
			res.Opaque(b)
			return nil
		},
		tpSum: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			return tpSumPayloads(req, res)
		},
		tpMixed: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			b, err := req.Args.Opaque(-1)
			if err != nil {
				return err
			}
			want := make([]byte, len(b))
			tpFill(want, 7)
			if !bytes.Equal(b, want) {
				return errors.New("inline blob corrupted")
			}
			return tpSumPayloads(req, res)
		},
		tpBigInline: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			b, err := req.Args.Opaque(-1)
			if err != nil {
				return err
			}
			want := make([]byte, len(b))
			tpFill(want, 7)
			if !bytes.Equal(b, want) {
				return errors.New("long call corrupted")
			}
			res.Uint32(uint32(len(b)))
			return nil
		},
	}
}

// tpSumPayloads decodes tpPayloads from req, checks each against tpFill's pattern
// (payload i filled with i+1) and answers their count and total length.
func tpSumPayloads(req *oncrpc.Request, res *xdr.Encoder) error {
	var p tpPayloads
	if err := p.DecodeXDR(req.Args); err != nil {
		return err
	}
	total := 0
	for i, b := range p {
		want := make([]byte, len(b))
		tpFill(want, byte(i+1))
		if !bytes.Equal(b, want) {
			return fmt.Errorf("payload %d corrupted", i)
		}
		total += len(b)
	}
	res.Uint32(uint32(len(p)))
	res.Uint32(uint32(total))
	return nil
}

func tpFill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7) + byte(i>>8)
	}
}

// tpTrace records transport messages (copies).
type tpTrace struct {
	mu   sync.Mutex
	sent [][]byte
	recv [][]byte
}

func (tr *tpTrace) fn(sent bool, msg []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	c := append([]byte(nil), msg...)
	if sent {
		tr.sent = append(tr.sent, c)
	} else {
		tr.recv = append(tr.recv, c)
	}
}

// headers decodes the recorded messages (sent or received) and returns their headers.
func (tr *tpTrace) headers(t *testing.T, sent bool) []Header {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	src := tr.recv
	if sent {
		src = tr.sent
	}
	var hs []Header
	for _, m := range src {
		var h Header
		if _, err := h.Decode(m); err != nil {
			t.Fatalf("recorded message does not decode: %v", err)
		}
		hs = append(hs, h)
	}
	return hs
}

// last returns the last header with proc in (sent or received) messages.
func (tr *tpTrace) last(t *testing.T, sent bool) Header {
	t.Helper()
	hs := tr.headers(t, sent)
	if len(hs) == 0 {
		t.Fatal("no messages recorded")
	}
	return hs[len(hs)-1]
}

type tpEnv struct {
	dev    *soft.Device
	ln     *Listener
	srv    *oncrpc.Server
	tr     *Client
	rpc    *oncrpc.Client
	ctrace *tpTrace // as the client saw the wire
	strace *tpTrace // as the server saw the wire
}

func tpCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newTPEnv starts an oncrpc.Server over an RPC-over-RDMA listener and connects a client.
func newTPEnv(t testing.TB, so *ServerOptions, co *ClientOptions, extra ...oncrpc.Procs) *tpEnv {
	t.Helper()
	return newTPEnvOn(t, soft.New(soft.Config{}), so, co, extra...)
}

// newTPEnvOn is newTPEnv on the device dev.
func newTPEnvOn(t testing.TB, dev *soft.Device, so *ServerOptions, co *ClientOptions, extra ...oncrpc.Procs) *tpEnv {
	t.Helper()
	env := &tpEnv{dev: dev, ctrace: &tpTrace{}, strace: &tpTrace{}}
	if so == nil {
		so = &ServerOptions{}
	}
	if co == nil {
		co = &ClientOptions{}
	}
	if so.Trace == nil {
		so.Trace = env.strace.fn
	}
	if co.Trace == nil {
		co.Trace = env.ctrace.fn
	}
	ctx := tpCtx(t)
	ln, err := Listen(ctx, env.dev, "127.0.0.1:0", so)
	if err != nil {
		t.Fatal(err)
	}
	env.ln = ln
	env.srv = oncrpc.NewServer(nil)
	procs := tpHandler()
	for _, e := range extra {
		for k, v := range e {
			procs[k] = v
		}
	}
	// NULL does not block: the server runs it where the call arrives.
	env.srv.Register(tpProg, tpVers, oncrpc.NonBlocking(procs, tpNull))
	go env.srv.Serve(ln)
	env.tr, err = Dial(ctx, env.dev, ln.Addr().String(), co)
	if err != nil {
		t.Fatal(err)
	}
	env.rpc = oncrpc.NewClient(env.tr, tpProg, tpVers)
	t.Cleanup(func() {
		env.tr.Close()
		env.srv.Close()
	})
	return env
}

func TestNullInline(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	for i := 0; i < 3; i++ {
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 128}); err != nil {
			t.Fatal(err)
		}
	}
	call := env.strace.last(t, false)
	if call.Proc != ProcMsg || call.HasChunks() || call.Vers != 1 || call.Credits != DefaultClientCredits {
		t.Fatalf("server received %+v, want inline RDMA_MSG without chunks asking for %d credits", call, DefaultClientCredits)
	}
	rep := env.ctrace.last(t, false)
	if rep.Proc != ProcMsg || rep.HasChunks() || rep.XID != call.XID || rep.Credits == 0 {
		t.Fatalf("client received %+v", rep)
	}
}
