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
// and answers CB_NULL and CB_COMPOUND{CB_SEQUENCE}, or refuses every call.
type cbService struct {
	prog   uint32
	refuse bool
	calls  chan string
}

func (s *cbService) ServeRPC(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	if req.Header.Prog != s.prog || req.Header.Vers != nfs4.CBVersion || s.refuse {
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
// carries reverse calls (TCP) gets probed with CB_NULL and CB_COMPOUND{CB_SEQUENCE};
// SEQUENCE then reports the callback path up, or, when the client's callback service
// refuses, SEQ4_STATUS_CB_PATH_DOWN.
func TestV4CallbackProbe(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		e := newEnv(t, Options{})
		svc := &cbService{prog: 0x40000000, refuse: refuse, calls: make(chan string, 16)}
		tr, err := oncrpc.DialTCP(context.Background(), e.addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20,
			Backchannel: &oncrpc.BackchannelOptions{Handler: svc}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
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
			t.Fatalf("refuse %v: callback service saw %q, want %q", refuse, s, want)
		}
		flags := c.must(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}).Results[0].(*nfs4.SequenceRes).StatusFlags
		if down := flags&nfs4.Seq4StatusCBPathDown != 0; down != refuse {
			t.Fatalf("refuse %v: SEQUENCE status flags %#x", refuse, flags)
		}
	}
}
