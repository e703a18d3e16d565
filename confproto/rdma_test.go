package confproto_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// wireLog records the transport messages a client sends and receives, in order.
type wireLog struct {
	mu   sync.Mutex
	msgs []wireMsg
}

type wireMsg struct {
	sent bool
	b    []byte
}

func (w *wireLog) trace(sent bool, msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, wireMsg{sent, bytes.Clone(msg)})
}

func (w *wireLog) snapshot() []wireMsg {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireMsg(nil), w.msgs...)
}

// rawArgs encodes arbitrary (word-aligned) argument bytes.
type rawArgs []byte

func (r rawArgs) EncodeXDR(e *xdr.Encoder) { e.FixedOpaque(r) }

// TestNegotiateOverRDMA runs the CONF_RDMA service on an oncrpc.Server over the
// RPC-over-RDMA transport (software iWARP provider) and negotiates as seed §6.1 asks:
// the client starts with 1 KiB inline thresholds, and its CONF_RDMA call is the only
// message it sends before the reply. The outcome is applied to both ends of the
// connection (rpcrdma.Client and, through oncrpc.Request.Conn, rpcrdma.ServerConn). Bad
// arguments get GARBAGE_ARGS and the connection stays.
func TestNegotiateOverRDMA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	defer dev.Close()

	limits := confproto.Limits{MaxCallSendSize: 8192, MaxReplySendSize: 8192, Align: 4096, MaxRDMARead: 8}
	var (
		mu         sync.Mutex
		netid      string
		serverSt   confproto.Settings
		serverConn *rpcrdma.ServerConn
	)
	svc, err := confproto.NewService(&confproto.ServiceOptions{
		Limits: &limits,
		Configured: func(req *oncrpc.Request, _ confproto.ConfigRDMAReq, s confproto.Settings) {
			mu.Lock()
			defer mu.Unlock()
			netid, serverSt = req.Netid, s
			serverConn, _ = req.Conn.(*rpcrdma.ServerConn)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", &rpcrdma.ServerOptions{InlineRecv: 8192, InlineSend: 8192})
	if err != nil {
		t.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	svc.Register(srv)
	go srv.Serve(ln)
	defer srv.Close()

	var wire wireLog
	// Buffers sized for what the client wants; thresholds at 1 KiB until configured
	// (seed §6.1).
	tr, err := rpcrdma.Dial(ctx, dev, ln.Addr().String(), &rpcrdma.ClientOptions{
		InlineSend: 16384,
		InlineRecv: 4096,
		Trace:      wire.trace,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.SetInlineThresholds(confproto.BaseInlineSize, confproto.BaseInlineSize)
	if l := tr.Limits(); l.InlineSend != confproto.BaseInlineSize {
		t.Fatalf("client limits before negotiation: %+v", l)
	}
	// The largest AUTH_SYS credential: a 255-byte machine name and 16 groups.
	cred, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: bytes.Repeat([]byte("m"), 255), GIDs: make([]uint32, 16)})
	if err != nil {
		t.Fatal(err)
	}
	c := confproto.NewClient(tr, oncrpc.WithAuth(cred))
	want := confproto.ConfigRDMAReq{MaxCallSendSize: 16384, MaxReplySendSize: 4096, MaxRDMARead: 4}
	s, err := confproto.NegotiateAndApply(ctx, c, want, tr)
	if err != nil {
		t.Fatal(err)
	}
	// The server recommends 4096-byte alignment, but this connection does not accept
	// RDMA_MSGP (rpcrdma.ServerOptions.MSGP), so it answers XDR's own alignment.
	if s != (confproto.Settings{InlineSend: 8192, InlineRecv: 4096, MaxRDMARead: 8, Align: confproto.DefaultAlign}) {
		t.Errorf("client settings %+v", s)
	}
	// Applied to the client's connection.
	if l := tr.Limits(); l.InlineSend != 8192 || l.InlineRecv != 4096 {
		t.Errorf("client limits after negotiation: %+v", l)
	}
	// And, through the tracker, to the server's.
	mu.Lock()
	if netid != "rdma" || serverSt != (confproto.Settings{InlineSend: 4096, InlineRecv: 8192, MaxRDMARead: 4}) {
		t.Errorf("server side: netid %q settings %+v", netid, serverSt)
	}
	if serverConn == nil {
		t.Error("the tracker did not find the server connection")
	} else if l := serverConn.Limits(); l.InlineSend != 4096 {
		t.Errorf("server connection limits after negotiation: %+v", l)
	}
	mu.Unlock()
	// A 6000-byte call now goes inline (it would not have under 1 KiB).
	before := len(wire.snapshot())
	if err := c.Call(ctx, confproto.ProcNull, rawArgs(make([]byte, 6000)), nil); err != nil {
		t.Fatal(err)
	}
	if msgs := wire.snapshot(); len(msgs) <= before || len(msgs[before].b) < 6000 {
		t.Errorf("NULL with 6000 bytes of arguments was not sent inline after configuration")
	}

	msgs := wire.snapshot()
	if len(msgs) < 2 || !msgs[0].sent || msgs[1].sent {
		t.Fatalf("wire: want the call, then the reply; got %d messages", len(msgs))
	}
	if n := len(msgs[0].b); n > confproto.BaseInlineSize {
		t.Errorf("CONF_RDMA call is %d bytes on the wire, more than the %d of seed §6.1", n, confproto.BaseInlineSize)
	}
	t.Logf("CONF_RDMA call with a %d-byte AUTH_SYS credential: %d bytes on the wire; reply %d bytes", len(cred.Body), len(msgs[0].b), len(msgs[1].b))

	// Garbage gets GARBAGE_ARGS over RDMA too, and the connection carries on.
	err = c.Call(ctx, confproto.ProcConfRDMA, rawArgs{0, 0, 0x10, 0}, nil)
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.GarbageArgs {
		t.Errorf("truncated CONF_RDMA over RDMA: %v, want GARBAGE_ARGS", err)
	}
	if _, err := confproto.Negotiate(ctx, c, want); err != nil {
		t.Errorf("negotiation after garbage: %v", err)
	}
	if st := svc.Stats(); st.ConfRDMA != 2 || st.Garbage != 1 || st.Null != 1 {
		t.Errorf("service stats %+v", st)
	}
}

// BenchmarkNegotiateRDMA is one CONF_RDMA round trip over the RPC-over-RDMA transport
// on the software iWARP provider (compare BenchmarkNegotiateTCP).
func BenchmarkNegotiateRDMA(b *testing.B) {
	ctx := context.Background()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	svc, err := confproto.NewService(nil)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	svc.Register(srv)
	go srv.Serve(ln)
	defer srv.Close()
	tr, err := rpcrdma.Dial(ctx, dev, ln.Addr().String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	c := confproto.NewClient(tr)
	want := confproto.ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 8}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := confproto.Negotiate(ctx, c, want); err != nil {
			b.Fatal(err)
		}
	}
}
