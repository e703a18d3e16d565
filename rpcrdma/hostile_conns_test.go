package rpcrdma

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// idlePeers are connections that finish RDMA connection setup (MPA, RFC 8797 private
// data) and never send anything: the cheapest hostile client. They share one device and
// protection domain and hold no memory registrations.
type idlePeers struct {
	dev *soft.Device
	pd  verbs.PD
	qps []verbs.QP
	cqs []verbs.CQ
}

// dialIdle opens n idle connections to addr.
func dialIdle(t *testing.T, addr string, n int) *idlePeers {
	t.Helper()
	p := &idlePeers{dev: soft.New(soft.Config{})}
	var err error
	if p.pd, err = p.dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	ctx := tpCtx(t)
	for i := 0; i < n; i++ {
		cq, err := p.dev.CreateCQ(4)
		if err != nil {
			t.Fatal(err)
		}
		p.cqs = append(p.cqs, cq)
		qp, err := p.pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1, MaxRecvWR: 1})
		if err != nil {
			t.Fatal(err)
		}
		p.qps = append(p.qps, qp)
		if _, err := p.dev.Dial(ctx, addr, qp, verbs.ConnParams{PrivateData: linuxClientPrivate, IRD: 1, ORD: 1}); err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
	}
	return p
}

// close closes every connection (it may be called twice).
func (p *idlePeers) close() {
	for _, qp := range p.qps {
		qp.Close()
	}
	for _, cq := range p.cqs {
		cq.Close()
	}
	p.qps, p.cqs = nil, nil
	if p.pd != nil {
		p.pd.Close()
		p.pd = nil
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	// The runtime opens its poller's descriptors with the first network use, for
	// good: make sure that has happened before a baseline is taken.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// waitFDs waits until no more descriptors are open than before.
func waitFDs(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := openFDs(t)
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open, %d before the test", n, before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serverConns returns the number of connections the listener has open.
func serverConns(l *Listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// holdProcs is a program whose tpBlock calls wait until the gate they find is closed.
type holdProcs struct {
	gate    atomic.Pointer[chan struct{}]
	arrived chan struct{}
}

func newHold() *holdProcs {
	h := &holdProcs{arrived: make(chan struct{}, 256)}
	g := make(chan struct{})
	h.gate.Store(&g)
	return h
}

func (h *holdProcs) procs() oncrpc.Procs {
	return oncrpc.Procs{tpBlock: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		g := *h.gate.Load()
		h.arrived <- struct{}{}
		<-g
		return nil
	}}
}

// keepGrantBusy keeps cl's whole grant busy with tpBlock calls, round after round, so
// the server grows the connection's receives and grants them: each round issues as
// many calls as cl is granted, waits until all are in the server's hands, then releases
// them and checks that each succeeded.
func (h *holdProcs) keepGrantBusy(t *testing.T, ctx context.Context, cl *Client, rpc *oncrpc.Client, rounds int) {
	t.Helper()
	for round := 0; round < rounds; round++ {
		g := cl.current().window.Granted()
		release := make(chan struct{})
		h.gate.Store(&release)
		errs := make(chan error, g)
		for i := 0; i < g; i++ {
			go func() { errs <- rpc.Call(ctx, tpBlock, nil, nil) }()
		}
		for i := 0; i < g; i++ {
			<-h.arrived
		}
		close(release)
		for i := 0; i < g; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestHostileCreditsIdleConnsDoNotDilute: 300 connections finish RDMA connection setup
// and go idle; a client that connects afterwards asking for 32 credits and keeping its
// grant busy is granted at least 16 (with the default policy: all 32), never more than
// the server has receives posted for. Before, the FairShare of 256 among 301
// connections was 0, so 1. Everything is closed and the descriptors are back where they
// were.
func TestHostileCreditsIdleConnsDoNotDilute(t *testing.T) {
	before := openFDs(t)
	func() {
		hold := newHold()
		env := newTPEnv(t, nil, nil, hold.procs())
		addr := env.ln.Addr().String()
		idle := dialIdle(t, addr, 300)
		waitFor(t, "the server to accept 301 connections", func() bool { return serverConns(env.ln) == 301 })
		ctx := tpCtx(t)
		trace := &tpTrace{}
		cl, err := Dial(ctx, env.dev, addr, &ClientOptions{Credits: 32, Trace: trace.fn})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		rpc := oncrpc.NewClient(cl, tpProg, tpVers)
		if err := rpc.Call(ctx, tpNull, nil, nil); err != nil {
			t.Fatal(err)
		}
		hold.keepGrantBusy(t, ctx, cl, rpc, 8)
		if g := cl.current().window.Granted(); g < 16 {
			t.Fatalf("client asking 32 granted %d with 300 idle connections open, want at least 16", g)
		}
		sc := env.ln.opts.Credits
		if sc.Conns() != 302 || sc.Active() > 2 {
			t.Fatalf("credit server: %d open, %d active; want 302, at most 2", sc.Conns(), sc.Active())
		}
		for _, h := range trace.headers(t, false) {
			if h.Proc == ProcMsg && (h.Credits == 0 || h.Credits > 32) {
				t.Fatalf("reply granted %d; want 1 to 32", h.Credits)
			}
		}
		idle.close()
		waitFor(t, "the idle connections to go", func() bool { return serverConns(env.ln) == 2 })
		cl.Close()
		env.tr.Close()
		env.srv.Close()
	}()
	waitFDs(t, before)
}

// TestHostileIdleConnClosedBusyConnKept: with a short idle timeout, a connection that
// finishes connection setup and never calls is closed by the server (its peer sees the
// connection end), while a connection whose call the server is still serving is never
// closed, however many sweeps pass; that call then completes. (Nothing here depends on
// timing: if the busy client's connection is closed before its call arrives, the client
// reconnects and the call arrives on the new one.)
func TestHostileIdleConnClosedBusyConnKept(t *testing.T) {
	before := openFDs(t)
	func() {
		hold := newHold()
		env := newTPEnv(t, &ServerOptions{IdleTimeout: 20 * time.Millisecond}, nil, hold.procs())
		ctx := tpCtx(t)
		done := make(chan error, 1)
		go func() { done <- env.rpc.Call(ctx, tpBlock, nil, nil) }()
		<-hold.arrived // the busy connection's call is in the server's hands
		g := env.ln.guard
		reaped := g.Stats().Reaped

		quiet := dialRaw(t, env.ln.Addr().String(), linuxClientPrivate)
		// The server ends the quiet connection: the peer's posted receives complete
		// with an error.
		for {
			wc := quiet.next(t)
			if wc.Opcode == verbs.OpcodeRecv && wc.Status != verbs.StatusSuccess {
				break
			}
		}
		waitFor(t, "the sweeper to count the idle close", func() bool { return g.Stats().Reaped == reaped+1 })
		// Many more sweeps (each one a chance to close it) and the busy connection is
		// still there.
		sweeps := g.Stats().Sweeps
		waitFor(t, "20 more sweeps", func() bool { return g.Stats().Sweeps >= sweeps+20 })
		if n, r := serverConns(env.ln), g.Stats().Reaped; n != 1 || r != reaped+1 {
			t.Fatalf("after the sweeps: %d server connections, %d reaped; want the busy one, %d", n, r, reaped+1)
		}
		select {
		case err := <-done:
			t.Fatalf("busy call ended before release: %v", err)
		default:
		}
		close(*hold.gate.Load())
		if err := <-done; err != nil {
			t.Fatalf("busy call: %v", err)
		}
		quiet.qp.Close()
		env.tr.Close()
		env.srv.Close()
	}()
	waitFDs(t, before)
}

// TestHostileConnLimitRejects: past MaxConns the listener rejects connection requests
// (the dialer gets a *verbs.RejectedError: an MPA Reject) and counts them, while the
// connections it has keep being served; once one closes, a new one is accepted.
func TestHostileConnLimitRejects(t *testing.T) {
	before := openFDs(t)
	func() {
		env := newTPEnv(t, &ServerOptions{MaxConns: 3}, nil)
		addr := env.ln.Addr().String()
		idle := dialIdle(t, addr, 2) // with env's client: 3
		waitFor(t, "3 server connections", func() bool { return serverConns(env.ln) == 3 })
		ctx := tpCtx(t)
		for i := 0; i < 5; i++ {
			_, err := Dial(ctx, env.dev, addr, nil)
			var rej *verbs.RejectedError
			if !errors.As(err, &rej) {
				t.Fatalf("connection %d past the limit: %v, want a *verbs.RejectedError", 4+i, err)
			}
		}
		if n := env.ln.Stats().Conns.Refused; n != 5 {
			t.Fatalf("Refused = %d, want 5", n)
		}
		for i := 0; i < 3; i++ {
			if err := env.rpc.Call(ctx, tpNull, nil, nil); err != nil {
				t.Fatalf("existing connection: %v", err)
			}
		}
		idle.close()
		waitFor(t, "the idle connections to go", func() bool { return serverConns(env.ln) == 1 })
		cl, err := Dial(ctx, env.dev, addr, nil)
		if err != nil {
			t.Fatalf("connection after others closed: %v", err)
		}
		if err := oncrpc.NewClient(cl, tpProg, tpVers).Call(ctx, tpNull, nil, nil); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		env.tr.Close()
		env.srv.Close()
	}()
	waitFDs(t, before)
}

// TestHostileCreditsReclaimedFromQuietConns: 32 connections each make one call and go
// quiet. Once the credit server's sweeper has aged them out of the active set (a short
// ActiveWindow here), a client that connects and keeps its grant busy is granted at
// least 16 of the 32 it asks for, though the quiet ones still hold the grants their
// replies carried (nothing can take those back until they call again).
func TestHostileCreditsReclaimedFromQuietConns(t *testing.T) {
	hold := newHold()
	cs := credits.NewServer(credits.Config{Total: 256, PerConn: 64, ActiveWindow: 10 * time.Millisecond})
	env := newTPEnv(t, &ServerOptions{Credits: cs}, nil, hold.procs())
	addr := env.ln.Addr().String()
	ctx := tpCtx(t)
	for i := 0; i < 32; i++ { // with the old FairShare of all open connections: 256/34 = 7
		p := dialRaw(t, addr, linuxClientPrivate)
		p.send(t, msgCall(t, uint32(0x100+i), 64))
		if h, _ := p.recvHeader(t); h.Proc != ProcMsg || h.Credits == 0 {
			t.Fatalf("quiet connection %d: reply %+v", i, h)
		}
	}
	waitFor(t, "the quiet connections to leave the active set", func() bool { return cs.Active() == 0 })
	cl, err := Dial(ctx, env.dev, addr, &ClientOptions{Credits: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rpc := oncrpc.NewClient(cl, tpProg, tpVers)
	if err := rpc.Call(ctx, tpNull, nil, nil); err != nil {
		t.Fatal(err)
	}
	hold.keepGrantBusy(t, ctx, cl, rpc, 8)
	if g := cl.current().window.Granted(); g < 16 {
		t.Fatalf("client asking 32 granted %d after 32 connections went quiet, want at least 16", g)
	}
}
