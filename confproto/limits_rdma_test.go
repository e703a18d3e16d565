package confproto_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// sizedEnv is a settingsEnv whose transports' buffer sizes are the caller's, with the
// server connections the CONF_RDMA calls arrived on.
type sizedEnv struct {
	settingsEnv
	sc chan *rpcrdma.ServerConn
}

func newSizedEnv(t *testing.T, limits confproto.Limits, so *rpcrdma.ServerOptions, co *rpcrdma.ClientOptions) *sizedEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	dev := soft.New(soft.Config{})
	t.Cleanup(func() { dev.Close() })
	env := &sizedEnv{settingsEnv: settingsEnv{ctx: ctx, wire: &wireLog{}}, sc: make(chan *rpcrdma.ServerConn, 8)}
	svc, err := confproto.NewService(&confproto.ServiceOptions{
		Limits: &limits,
		Configured: func(req *oncrpc.Request, _ confproto.ConfigRDMAReq, _ confproto.Settings) {
			if sc, ok := req.Conn.(*rpcrdma.ServerConn); ok {
				select {
				case env.sc <- sc:
				default: // a test that does not look at it
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", so)
	if err != nil {
		t.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	svc.Register(srv)
	srv.Register(testProg, testVers, testProcs)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	co.Trace = env.wire.trace
	if env.tr, err = rpcrdma.Dial(ctx, dev, ln.Addr().String(), co); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.tr.Close() })
	env.conf = confproto.NewClient(env.tr)
	env.test = oncrpc.NewClient(env.tr, testProg, testVers)
	return env
}

// TestServiceAnnouncesNoMoreThanReceiveBuffers: a Service's Limits.MaxCallSendSize
// (default 4096) is announced to a client on an RPC-over-RDMA connection whose
// receive buffers (ServerOptions.InlineRecv) are smaller. The client then sends
// inline calls the server cannot receive. The announced maxcall_sendsize must not
// exceed the connection's receive buffer size (ServerConn.Limits().InlineRecv), and a
// call the client then sends inline must work.
func TestServiceAnnouncesNoMoreThanReceiveBuffers(t *testing.T) {
	env := newSizedEnv(t, confproto.DefaultLimits(),
		&rpcrdma.ServerOptions{InlineRecv: 1024, InlineSend: bigInline},
		&rpcrdma.ClientOptions{InlineSend: bigInline, InlineRecv: bigInline})
	want := confproto.ConfigRDMAReq{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, MaxRDMARead: 8}
	reply, err := confproto.Negotiate(env.ctx, env.conf, want)
	if err != nil {
		t.Fatal(err)
	}
	confproto.ClientSettings(want, reply).Apply(env.tr)
	sc := <-env.sc
	if recv := sc.Limits().InlineRecv; int(reply.MaxCallSendSize) > recv {
		t.Errorf("CONF_RDMA announced maxcall_sendsize %d on a connection whose receive buffers hold %d bytes", reply.MaxCallSendSize, recv)
	}
	// A 3000-byte call: inline under the announced 4096, too long for 1024.
	env.echoOnce(t, 3000)
}

// TestNegotiateAndApplyWantBeyondBuffers: NegotiateAndApply announces want to the
// server, but applies it to the client transport clamped to its registered buffers
// (ClientOptions.InlineRecv). When want.MaxReplySendSize exceeds them, the server
// then sends inline replies larger than the client's receive buffers. Both ends must
// agree after the negotiation, and a reply the server then sends inline must arrive.
func TestNegotiateAndApplyWantBeyondBuffers(t *testing.T) {
	limits := confproto.Limits{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, Align: 4, MaxRDMARead: 8}
	env := newSizedEnv(t, limits,
		&rpcrdma.ServerOptions{InlineRecv: bigInline, InlineSend: bigInline},
		&rpcrdma.ClientOptions{InlineSend: bigInline, InlineRecv: 1024})
	want := confproto.ConfigRDMAReq{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, MaxRDMARead: 8}
	if _, err := confproto.NegotiateAndApply(env.ctx, env.conf, want, env.tr); err != nil {
		t.Fatal(err)
	}
	sc := <-env.sc
	if srv, cli := sc.Limits().InlineSend, env.tr.Limits().InlineRecv; srv > cli {
		t.Errorf("after NegotiateAndApply the server sends replies inline up to %d bytes, the client receives up to %d", srv, cli)
	}
	// A 3000-byte reply: inline under the server's 8192, too long for 1024.
	env.echoOnce(t, 3000)
}

// echoOnce calls procEcho with n bytes and checks that it took one call and one reply
// on the connection the negotiation configured: no connection loss, no retransmission
// on a new connection.
func (env *sizedEnv) echoOnce(t *testing.T, n int) {
	t.Helper()
	before, lim := len(env.wire.snapshot()), env.tr.Limits()
	ctx, cancel := context.WithTimeout(env.ctx, 5*time.Second)
	defer cancel()
	var res payload
	err := env.test.CallWithOptions(ctx, procEcho, payload(make([]byte, n)), &res, oncrpc.CallOptions{MaxReply: n + 200})
	msgs := env.wire.snapshot()[before:]
	if err != nil || len(msgs) != 2 {
		for _, m := range msgs {
			t.Logf("sent %v: %d bytes", m.sent, len(m.b))
		}
		t.Errorf("%d-byte echo after negotiation: %v; %d messages on the wire, want the call and its reply (the connection broke and the call was retransmitted on a new one)", n, err, len(msgs))
	}
	if l := env.tr.Limits(); l != lim {
		t.Errorf("client limits went from %+v to %+v: the negotiated connection was lost", lim, l)
	}
}

// TestApplyAfterReconnect: the outcome of a CONF_RDMA negotiation is applied to
// whatever connection the rpcrdma.Client has when Apply runs. When the connection
// the negotiation ran on is lost before that (here: the server restarts with smaller
// receive buffers at the same address), the settings land on a new connection whose
// server never negotiated, and the client sends inline calls larger than that
// server's receive buffers (which its RFC 8797 private data announced).
// serveConfAt serves CONF_RDMA with limits and the test program over RPC-over-RDMA
// at addr ("127.0.0.1:0" for any port) with so, and returns the server and its
// address: a test stops it and serves again at the same address to restart it.
func serveConfAt(t *testing.T, ctx context.Context, dev verbs.Device, addr string, limits *confproto.Limits, so *rpcrdma.ServerOptions) (*oncrpc.Server, string) {
	t.Helper()
	svc, err := confproto.NewService(&confproto.ServiceOptions{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := rpcrdma.Listen(ctx, dev, addr, so)
	if err != nil {
		t.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	svc.Register(srv)
	srv.Register(testProg, testVers, testProcs)
	go srv.Serve(ln)
	return srv, ln.Addr().String()
}

func TestApplyAfterReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	serve := func(addr string, recv int) (*oncrpc.Server, string) {
		limits := confproto.Limits{MaxCallSendSize: uint32(recv), MaxReplySendSize: bigInline, Align: 4, MaxRDMARead: 8}
		return serveConfAt(t, ctx, dev, addr, &limits, &rpcrdma.ServerOptions{InlineRecv: recv, InlineSend: bigInline})
	}
	srv1, addr := serve("127.0.0.1:0", bigInline)
	var wire wireLog
	tr, err := rpcrdma.Dial(ctx, dev, addr, &rpcrdma.ClientOptions{InlineSend: bigInline, InlineRecv: bigInline, Trace: wire.trace})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	want := confproto.ConfigRDMAReq{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, MaxRDMARead: 8}
	reply, err := confproto.Negotiate(ctx, confproto.NewClient(tr), want)
	if err != nil {
		t.Fatal(err)
	}
	// The negotiated connection goes; the server comes back with 1 KiB receive
	// buffers, and the transport reconnects to it.
	srv1.Close()
	srv2, _ := serve(addr, 1024)
	defer srv2.Close()
	test := oncrpc.NewClient(tr, testProg, testVers)
	var res payload
	if err := test.Call(ctx, procEcho, payload(make([]byte, 10)), &res); err != nil {
		t.Fatal(err)
	}
	before := tr.Limits()
	confproto.ClientSettings(want, reply).Apply(tr)
	if l := tr.Limits(); l.InlineSend > before.InlineSend {
		t.Errorf("settings negotiated on a lost connection raised the new connection's InlineSend from %d to %d, beyond the 1024 bytes its server announced", before.InlineSend, l.InlineSend)
	}
	// A 3000-byte call now goes inline to a server whose receive buffers hold 1024.
	sent := len(wire.snapshot())
	ectx, ecancel := context.WithTimeout(ctx, 5*time.Second)
	defer ecancel()
	err = test.Call(ectx, procEcho, payload(make([]byte, 3000)), &res)
	if n := len(wire.snapshot()) - sent; err != nil || n != 2 {
		t.Errorf("3000-byte echo: %v; %d messages on the wire, want the call and its reply (the connection broke and the call was retransmitted)", err, n)
	}
}

// TestNegotiateAndApplyServerSendBuffers: CONF_RDMA's reply says nothing of how large
// the server's inline replies may be, but its RFC 8797 private data does (its send
// buffers, ServerOptions.InlineSend). A client that applies its own
// maxreply_sendsize beyond them expects replies inline that the server cannot send
// so, offers no reply chunk, and gets ERR_CHUNK. After NegotiateAndApply the client
// must not expect inline replies larger than the server sends, and a reply longer
// than the server's send buffers must arrive (through the reply chunk).
func TestNegotiateAndApplyServerSendBuffers(t *testing.T) {
	limits := confproto.Limits{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, Align: 4, MaxRDMARead: 8}
	env := newSizedEnv(t, limits,
		&rpcrdma.ServerOptions{InlineRecv: bigInline, InlineSend: 1024},
		&rpcrdma.ClientOptions{InlineSend: bigInline, InlineRecv: bigInline})
	want := confproto.ConfigRDMAReq{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, MaxRDMARead: 8}
	if _, err := confproto.NegotiateAndApply(env.ctx, env.conf, want, env.tr); err != nil {
		t.Fatal(err)
	}
	sc := <-env.sc
	if srv, cli := sc.Limits().InlineSend, env.tr.Limits().InlineRecv; cli > srv {
		t.Errorf("after NegotiateAndApply the client expects replies inline up to %d bytes, the server sends up to %d", cli, srv)
	}
	// A 3000-byte reply: too long for the server's 1024-byte send buffers.
	env.echoOnce(t, 3000)
}
