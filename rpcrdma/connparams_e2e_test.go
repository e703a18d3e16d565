package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

func onlyConn(t *testing.T, l *Listener) *ServerConn {
	t.Helper()
	var sc *ServerConn
	waitFor(t, "the server connection", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for c := range l.conns {
			sc = c
		}
		return len(l.conns) == 1
	})
	return sc
}

// TestPrivateDataBothWays: each side announces its sizes in RFC 8797 private data and
// sends no more than the peer announced it can receive.
func TestPrivateDataBothWays(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{InlineSend: 8192, InlineRecv: 8192}, &ClientOptions{InlineSend: 4096, InlineRecv: 2048})
	if l := env.tr.Limits(); l != (Limits{InlineSend: 4096, InlineRecv: 2048, Credits: DefaultClientCredits}) {
		t.Fatalf("client limits %+v", l)
	}
	if l := onlyConn(t, env.ln).Limits(); l.InlineSend != 2048 || l.InlineRecv != 8192 {
		t.Fatalf("server connection limits %+v, want replies of at most the client's 2048", l)
	}
	// A raw client sees the server's private data.
	p := dialRaw(t, env.ln.Addr().String(), nil)
	var priv ConnPrivate
	if err := priv.Decode(p.info.PrivateData); err != nil {
		t.Fatal(err)
	}
	if priv != (ConnPrivate{SendSize: 8192, RecvSize: 8192}) {
		t.Fatalf("server announced %+v", priv)
	}
	// That client sent no private data: the server replies inline only up to 1024 bytes.
	h := Header{XID: 3, Vers: 1, Credits: 4, Proc: ProcMsg}
	b, _ := h.Append(nil)
	p.send(t, append(append(b, rpcCall(3, tpBig)...), 0, 0, 0x07, 0xd0)) // 2000 bytes
	if r, _ := p.recvHeader(t); r.Proc != ProcError || r.ErrCode != ErrCodeChunk {
		t.Fatalf("2000-byte reply to a client without private data: %v, want ERR_CHUNK", r.Proc)
	}
}

// TestNoPrivateDataMeans1024: a server that sends no private data is assumed to take
// 1024-byte messages.
func TestNoPrivateDataMeans1024(t *testing.T) {
	addr, accept := listenRaw(t, nil)
	cl, err := Dial(tpCtx(t), soft.New(soft.Config{}), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	srv := accept()
	var priv ConnPrivate
	if err := priv.Decode(srv.info.PrivateData); err != nil {
		t.Fatal(err)
	}
	if priv != (ConnPrivate{SendInvOK: true, SendSize: DefaultInline, RecvSize: DefaultReplyInline}) {
		t.Fatalf("client announced %+v", priv)
	}
	if l := cl.Limits(); l.InlineSend != 1024 || l.InlineRecv != 1024 {
		t.Fatalf("limits %+v, want 1024/1024", l)
	}
}

// TestSetLimits: limits applied after negotiation (as CONF_RDMA does) change the chunk
// choice at once.
func TestSetLimits(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	blob := make([]byte, 2000)
	tpFill(blob, 7)
	var res tpUint32
	if err := env.rpc.Call(ctx, tpBigInline, tpOpaque(blob), &res); err != nil {
		t.Fatal(err)
	}
	if h := env.strace.last(t, false); h.Proc != ProcMsg {
		t.Fatalf("2000-byte call with a 4096 limit sent as %v", h.Proc)
	}
	if err := env.tr.SetLimits(Limits{InlineSend: 1024, Credits: 4}); err != nil {
		t.Fatal(err)
	}
	if err := env.rpc.Call(ctx, tpBigInline, tpOpaque(blob), &res); err != nil {
		t.Fatal(err)
	}
	if h := env.strace.last(t, false); h.Proc != ProcNoMsg || h.Credits != 4 {
		t.Fatalf("after SetLimits: %v asking %d credits, want RDMA_NOMSG asking 4", h.Proc, h.Credits)
	}
	if err := env.tr.SetLimits(Limits{InlineSend: 100000}); err == nil {
		t.Fatal("SetLimits above the registered buffers accepted")
	}
	sc := onlyConn(t, env.ln)
	if err := sc.SetLimits(Limits{InlineSend: 1024}); err != nil {
		t.Fatal(err)
	}
	var big tpOpaque
	if err := env.rpc.CallWithOptions(ctx, tpBig, tpUint32(2000), &big, oncrpc.CallOptions{MaxReply: 8192}); err != nil {
		t.Fatal(err)
	}
	if h := env.ctrace.last(t, false); h.Proc != ProcNoMsg {
		t.Fatalf("2000-byte reply with a 1024 server limit came as %v, want the reply chunk", h.Proc)
	}
}

// Both transports take CONF_RDMA results (confproto.Settings.Apply).
var (
	_ confproto.Configurable = (*Client)(nil)
	_ confproto.Configurable = (*ServerConn)(nil)
	// And tell CONF_RDMA how large their registered buffers are.
	_ confproto.InlineBuffered = (*Client)(nil)
	_ confproto.InlineBuffered = (*ServerConn)(nil)
)

func TestConfigurable(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	sc := onlyConn(t, env.ln)
	confproto.Settings{InlineSend: 2048, InlineRecv: 100000, MaxRDMARead: 3}.Apply(env.tr)
	if l := env.tr.Limits(); l.InlineSend != 2048 || l.InlineRecv != DefaultReplyInline {
		t.Fatalf("client limits after Apply: %+v", l)
	}
	confproto.Settings{InlineSend: 500, InlineRecv: 2048, MaxRDMARead: 2}.Apply(sc)
	if l := sc.Limits(); l.InlineSend != 1024 {
		t.Fatalf("server limits after Apply: %+v (500 clamps to 1024)", l)
	}
	if g := sc.reads.Granted(); g != 2 {
		t.Fatalf("server Read budget %d after SetMaxRDMARead(2)", g)
	}
	// Still works, with the new limits.
	var res tpPair
	if err := env.rpc.Call(tpCtx(t), tpSum, tpMakePayloads(3000, 3000, 3000), &res); err != nil {
		t.Fatal(err)
	}
	if h := env.strace.last(t, false); len(h.ReadList) != 3 {
		t.Fatalf("call with 9000 bytes of payload under a 2048 limit: read list %v", h.ReadList)
	}
}
