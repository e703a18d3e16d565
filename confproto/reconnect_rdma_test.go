package confproto_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestApplyAfterReconnect: the outcome of a CONF_RDMA negotiation is applied to
// whatever connection the rpcrdma.Client has when Apply runs. When the connection
// the negotiation ran on is lost before that (here: the server restarts with smaller
// receive buffers at the same address), the settings land on a new connection whose
// server never negotiated, and the client sends inline calls larger than that
// server's receive buffers (which its RFC 8797 private data announced).
func TestApplyAfterReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	serve := func(addr string, recv int) (*oncrpc.Server, string) {
		limits := confproto.Limits{MaxCallSendSize: uint32(recv), MaxReplySendSize: bigInline, Align: 4, MaxRDMARead: 8}
		svc, err := confproto.NewService(&confproto.ServiceOptions{Limits: &limits})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := rpcrdma.Listen(ctx, dev, addr, &rpcrdma.ServerOptions{InlineRecv: recv, InlineSend: bigInline})
		if err != nil {
			t.Fatal(err)
		}
		srv := oncrpc.NewServer(nil)
		svc.Register(srv)
		srv.Register(testProg, testVers, testProcs)
		go srv.Serve(ln)
		return srv, ln.Addr().String()
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
