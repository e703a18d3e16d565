package confproto_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// afterFirst is a RoundTripper that runs then once, after its first round trip has
// its reply.
type afterFirst struct {
	oncrpc.RoundTripper
	once sync.Once
	then func()
}

func (a *afterFirst) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	err := a.RoundTripper.RoundTrip(ctx, call, reply)
	a.once.Do(a.then)
	return err
}

// TestNegotiateAndApplyAcrossReconnect: the connection a CONF_RDMA negotiation ran on
// is lost between the reply and NegotiateAndApply's applying it, and the transport
// reconnects to the server restarted at the same address with other settings (here:
// it no longer accepts RDMA_MSGP). What the lost connection's server answered must not
// be applied to the new connection, whose server never saw the negotiation:
// NegotiateAndApply negotiates again on the new one and applies that outcome, so the
// client sends the new server RDMA_MSG, not RDMA_MSGP calls it would refuse.
func TestNegotiateAndApplyAcrossReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	limits := confproto.Limits{MaxCallSendSize: bigInline, MaxReplySendSize: bigInline, Align: 256, MaxRDMARead: 8}
	serve := func(addr string, msgp bool) (*oncrpc.Server, string) {
		return serveConfAt(t, ctx, dev, addr, &limits, &rpcrdma.ServerOptions{InlineRecv: bigInline, InlineSend: bigInline, MSGP: msgp})
	}
	srv1, addr := serve("127.0.0.1:0", true)
	env := &settingsEnv{ctx: ctx, wire: &wireLog{}}
	var err error
	env.tr, err = rpcrdma.Dial(ctx, dev, addr, &rpcrdma.ClientOptions{InlineSend: bigInline, InlineRecv: bigInline, MSGPThresh: 512, Trace: env.wire.trace})
	if err != nil {
		t.Fatal(err)
	}
	defer env.tr.Close()
	env.test = oncrpc.NewClient(env.tr, testProg, testVers)
	var srv2 *oncrpc.Server
	defer func() {
		if srv2 != nil {
			srv2.Close()
		}
	}()
	restart := &afterFirst{RoundTripper: env.tr, then: func() {
		// The negotiated connection goes; the server comes back without RDMA_MSGP,
		// and the transport reconnects to it.
		srv1.Close()
		srv2, _ = serve(addr, false)
		if _, err := env.echo(t, 10); err != nil {
			t.Errorf("echo after the restart: %v", err)
		}
	}}
	s, err := confproto.NegotiateAndApply(ctx, confproto.NewClient(restart), want8k, env.tr)
	if err != nil {
		t.Fatalf("NegotiateAndApply across a reconnection: %v", err)
	}
	if s.Align != confproto.DefaultAlign {
		t.Errorf("NegotiateAndApply returned %+v: the lost connection's alignment, want the new server's %d", s, confproto.DefaultAlign)
	}
	if _, err := env.echo(t, 2000); err != nil {
		t.Errorf("2000-byte echo to the restarted server: %v", err)
	}
	if h, _ := env.lastSent(t); h.Proc != rpcrdma.ProcMsg {
		t.Errorf("sent %v (align %d) to a server that refuses RDMA_MSGP", h.Proc, h.Align)
	}
}
