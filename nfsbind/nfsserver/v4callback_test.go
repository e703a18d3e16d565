//go:build linux

package nfsserver

import (
	"context"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// cbService is a client's callback program as a test runs it: it records the calls
// and answers CB_NULL and CB_COMPOUND{CB_SEQUENCE} for programs prog and prog+1, or
// refuses every call.
type cbService struct {
	prog   uint32
	refuse bool
	calls  chan string
}

func (s *cbService) ServeRPC(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	if (req.Header.Prog != s.prog && req.Header.Prog != s.prog+1) || req.Header.Vers != nfs4.CBVersion || s.refuse {
		s.calls <- "refused"
		return &oncrpc.AcceptError{Stat: oncrpc.ProgUnavail}
	}
	switch req.Header.Proc {
	case nfs4.CBProcNull:
		s.calls <- "CB_NULL"
		return nil
	case nfs4.CBProcCompound:
		var a nfs4.CBCompoundArgs
		if err := a.DecodeXDR(req.Args); err != nil {
			return err
		}
		if len(a.Ops) != 1 || a.Ops[0].CBOp() != nfs4.CBOpSequence {
			s.calls <- "unexpected CB_COMPOUND"
			return oncrpc.ErrGarbageArgs
		}
		seq := a.Ops[0].(*nfs4.CBSequenceArgs)
		s.calls <- "CB_SEQUENCE"
		r := nfs4.CBCompoundRes{Status: nfs4.OK, Results: []nfs4.CBOpRes{&nfs4.CBSequenceRes{Status: nfs4.OK,
			SessionID: seq.SessionID, SequenceID: seq.SequenceID, SlotID: seq.SlotID}}}
		r.EncodeXDR(res)
		return nil
	}
	return oncrpc.ErrProcUnavail
}

// TestV4CallbackProbe: a session created with CONN_BACK_CHAN over a connection that
// carries reverse calls (TCP, and RPC-over-RDMA per RFC 8167) gets probed with CB_NULL
// and CB_COMPOUND{CB_SEQUENCE}; SEQUENCE then reports the callback path up, or, when
// the client's callback service refuses, SEQ4_STATUS_CB_PATH_DOWN.
func TestV4CallbackProbe(t *testing.T) {
	for _, rdma := range []bool{false, true} {
		for _, refuse := range []bool{false, true} {
			testCallbackProbe(t, rdma, refuse)
		}
	}
}

// testCallbackProbe is one case of TestV4CallbackProbe.
func testCallbackProbe(t *testing.T, rdma, refuse bool) {
	e := newEnv(t, Options{})
	svc := &cbService{prog: 0x40000000, refuse: refuse, calls: make(chan string, 16)}
	bc := &oncrpc.BackchannelOptions{Handler: svc}
	var tr oncrpc.RoundTripper
	if rdma {
		tr, _ = e.rdmaWith(4096, bc)
	} else {
		tcp, err := oncrpc.DialTCP(context.Background(), e.addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20, Backchannel: bc})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tcp.Close() })
		tr = tcp
	}
	c := newV4Client(t, tr, rootCred())
	c.csFlags = nfs4.CreateSessionFlagConnBackChan
	c.exchangeID()
	c.createSession()
	e.srv.v4.cb.wait()
	var got []string
	for len(svc.calls) > 0 {
		got = append(got, <-svc.calls)
	}
	want := "CB_NULL CB_SEQUENCE"
	if refuse {
		want = "refused"
	}
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("rdma %v refuse %v: callback service saw %q, want %q", rdma, refuse, s, want)
	}
	flags := c.must(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}).Results[0].(*nfs4.SequenceRes).StatusFlags
	if down := flags&nfs4.Seq4StatusCBPathDown != 0; down != refuse {
		t.Fatalf("rdma %v refuse %v: SEQUENCE status flags %#x", rdma, refuse, flags)
	}
	if refuse {
		return
	}
	// BACKCHANNEL_CTL moves the callbacks to another program: probed again, up with a
	// program the client hosts, down with one it does not.
	for _, cb := range []struct {
		prog uint32
		want string
		down bool
	}{{svc.prog + 1, "CB_NULL CB_SEQUENCE", false}, {svc.prog + 2, "refused", true}} {
		c.must(&nfs4.BackchannelCtlArgs{CBProgram: cb.prog})
		e.srv.v4.cb.wait()
		got = got[:0]
		for len(svc.calls) > 0 {
			got = append(got, <-svc.calls)
		}
		if s := strings.Join(got, " "); s != cb.want {
			t.Fatalf("rdma %v: BACKCHANNEL_CTL to %#x: the callback service saw %q, want %q", rdma, cb.prog, s, cb.want)
		}
		flags := c.must(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}).Results[0].(*nfs4.SequenceRes).StatusFlags
		if down := flags&nfs4.Seq4StatusCBPathDown != 0; down != cb.down {
			t.Fatalf("rdma %v: BACKCHANNEL_CTL to %#x: status flags %#x", rdma, cb.prog, flags)
		}
	}
}

// TestHostileV4SilentCallbacks: a client that asks for a back channel and never
// answers callbacks (its transport drops them) leaves one probe waiting, which
// Close cancels: the server shuts down.
func TestHostileV4SilentCallbacks(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred()) // TCP without a callback service: reverse calls are dropped
	c.csFlags = nfs4.CreateSessionFlagConnBackChan
	c.exchangeID()
	c.createSession()
	c.createSession() // a second session: a second probe
	e.srv.v4.cb.mu.Lock()
	running := e.srv.v4.cb.running
	e.srv.v4.cb.mu.Unlock()
	if running == 0 {
		t.Fatal("no probe waiting for the silent client")
	}
	e.stop() // returns once the probes are cancelled
	if e.srv.v4.cb.wait(); e.srv.v4.cb.running != 0 {
		t.Fatal("probes still running after Close")
	}
}
