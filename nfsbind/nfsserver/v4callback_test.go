//go:build linux

package nfsserver

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// cbService is a client's callback program as a test runs it, checking calls as
// Linux's callback service does: CB_NULL with any credential, CB_COMPOUND only with
// AUTH_SYS (else AUTH_ERROR/AUTH_BADCRED), here also only with the credential of
// cred when that is set; CB_SEQUENCE on slot 0 one above the slot's last sequence ID
// (else NFS4ERR_SEQ_MISORDERED), NFS4ERR_DELAY to the first delays of them (as Linux
// answers while it drains its session). It records the calls and answers programs
// prog and prog+1, or refuses every call while refuse is set.
type cbService struct {
	prog   uint32
	cred   *oncrpc.AuthSysParams // the AUTH_SYS credential CB_COMPOUND must carry; nil: any
	refuse atomic.Bool
	delays atomic.Int32
	calls  chan string

	mu  sync.Mutex
	seq map[nfs4.SessionID]uint32 // the last sequence ID of each session's slot 0
}

func newCBService(cred *oncrpc.AuthSysParams) *cbService {
	return &cbService{prog: 0x40000000, cred: cred, calls: make(chan string, 256), seq: map[nfs4.SessionID]uint32{}}
}

func (s *cbService) ServeRPC(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	if (req.Header.Prog != s.prog && req.Header.Prog != s.prog+1) || req.Header.Vers != nfs4.CBVersion || s.refuse.Load() {
		s.calls <- "refused"
		return &oncrpc.AcceptError{Stat: oncrpc.ProgUnavail}
	}
	switch req.Header.Proc {
	case nfs4.CBProcNull:
		s.calls <- "CB_NULL"
		return nil
	case nfs4.CBProcCompound:
		if req.AuthSys == nil {
			s.calls <- "CB_COMPOUND without AUTH_SYS"
			return oncrpc.AuthErr(oncrpc.AuthBadCred)
		}
		if c := s.cred; c != nil && (req.AuthSys.Stamp != c.Stamp || !bytes.Equal(req.AuthSys.MachineName, c.MachineName) ||
			req.AuthSys.UID != c.UID || req.AuthSys.GID != c.GID || !slices.Equal(req.AuthSys.GIDs, c.GIDs)) {
			s.calls <- "CB_COMPOUND with another credential"
			return oncrpc.AuthErr(oncrpc.AuthBadCred)
		}
		var a nfs4.CBCompoundArgs
		if err := a.DecodeXDR(req.Args); err != nil {
			return err
		}
		if len(a.Ops) != 1 || a.Ops[0].CBOp() != nfs4.CBOpSequence {
			s.calls <- "unexpected CB_COMPOUND"
			return oncrpc.ErrGarbageArgs
		}
		seq := a.Ops[0].(*nfs4.CBSequenceArgs)
		st := nfs4.OK
		s.mu.Lock()
		if s.delays.Add(-1) >= 0 {
			st = nfs4.ErrDelay
		} else if seq.SlotID != 0 || seq.SequenceID != s.seq[seq.SessionID]+1 {
			st = nfs4.ErrSeqMisordered
		} else {
			s.seq[seq.SessionID] = seq.SequenceID
		}
		s.mu.Unlock()
		if st == nfs4.ErrDelay {
			s.calls <- "CB_SEQUENCE delayed"
		} else if st != nfs4.OK {
			s.calls <- "CB_SEQUENCE misordered"
		} else {
			s.calls <- "CB_SEQUENCE"
		}
		r := nfs4.CBCompoundRes{Status: st, Results: []nfs4.CBOpRes{&nfs4.CBSequenceRes{Status: st,
			SessionID: seq.SessionID, SequenceID: seq.SequenceID, SlotID: seq.SlotID}}}
		r.EncodeXDR(res)
		return nil
	}
	return oncrpc.ErrProcUnavail
}

// seen returns the calls recorded since the last time, space-separated.
func (s *cbService) seen() string {
	var got []string
	for len(s.calls) > 0 {
		got = append(got, <-s.calls)
	}
	return strings.Join(got, " ")
}

// cbCred is the callback credential the test clients offer, as a Linux client does:
// AUTH_SYS with the machine name, uid and gid 0 (and, here, a stamp and gids to
// check that every field gets through).
var cbCred = oncrpc.AuthSysParams{Stamp: 0x5eed, MachineName: []byte("lab"), UID: 0, GID: 0, GIDs: []uint32{0, 4}}

// cbSys is cbCred as a callback_sec_parms4.
var cbSys = nfs4.CallbackSecParms4{Flavor: nfs4.AuthSys, Sys: nfs4.AuthSysParms{Stamp: cbCred.Stamp,
	MachineName: cbCred.MachineName, UID: cbCred.UID, GID: cbCred.GID, GIDs: cbCred.GIDs}}

// cbGSS is an RPCSEC_GSS callback_sec_parms4, which this server cannot use.
var cbGSS = nfs4.CallbackSecParms4{Flavor: nfs4.RPCSecGSS, GSS: nfs4.GSSCBHandles{Service: 1,
	HandleFromServer: []byte("h1"), HandleFromClient: []byte("h2")}}

// cbTransport returns a transport to e's server over RDMA or TCP whose client side
// hosts svc for reverse-direction calls.
func cbTransport(t *testing.T, e *env, rdma bool, svc *cbService) oncrpc.RoundTripper {
	bc := &oncrpc.BackchannelOptions{Handler: svc}
	if rdma {
		tr, _ := e.rdmaWith(4096, bc)
		return tr
	}
	tcp, err := oncrpc.DialTCP(context.Background(), e.addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20, Backchannel: bc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	return tcp
}

// pathDown reports whether a SEQUENCE of c reports SEQ4_STATUS_CB_PATH_DOWN.
func pathDown(c *v4client) bool {
	c.t.Helper()
	flags := c.must(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}).Results[0].(*nfs4.SequenceRes).StatusFlags
	return flags&nfs4.Seq4StatusCBPathDown != 0
}

// TestV4CallbackProbe: a session created with CONN_BACK_CHAN over a connection that
// carries reverse calls (TCP, and RPC-over-RDMA per RFC 8167) gets probed with CB_NULL
// and CB_COMPOUND{CB_SEQUENCE} carrying the first credential of csa_sec_parms the
// server can send; a callback service that, like Linux's, takes CB_COMPOUND only with
// AUTH_SYS and here only with the client's credential answers, and SEQUENCE reports
// the callback path up. Offered only AUTH_NONE, the Linux-like service refuses the
// CB_COMPOUND; offered only RPCSEC_GSS, the server cannot call back and does not try;
// a service that refuses everything fails the probe: in those cases SEQUENCE reports
// SEQ4_STATUS_CB_PATH_DOWN.
func TestV4CallbackProbe(t *testing.T) {
	for _, rdma := range []bool{false, true} {
		for _, tc := range []struct {
			name   string
			sec    []nfs4.CallbackSecParms4
			refuse bool
			delays int32
			want   string
			down   bool
		}{
			{"AUTH_SYS after RPCSEC_GSS", []nfs4.CallbackSecParms4{cbGSS, cbSys, {Flavor: nfs4.AuthNone}}, false, 0, "CB_NULL CB_SEQUENCE", false},
			{"AUTH_SYS", []nfs4.CallbackSecParms4{cbSys}, false, 0, "CB_NULL CB_SEQUENCE", false},
			{"AUTH_NONE", []nfs4.CallbackSecParms4{{Flavor: nfs4.AuthNone}, cbSys}, false, 0, "CB_NULL CB_COMPOUND without AUTH_SYS", true},
			{"RPCSEC_GSS only", []nfs4.CallbackSecParms4{cbGSS}, false, 0, "", true},
			{"none offered", []nfs4.CallbackSecParms4{}, false, 0, "", true},
			{"refused", []nfs4.CallbackSecParms4{cbSys}, true, 0, "refused", true},
			{"NFS4ERR_DELAY twice", []nfs4.CallbackSecParms4{cbSys}, false, 2,
				"CB_NULL CB_SEQUENCE delayed CB_SEQUENCE delayed CB_SEQUENCE", false},
			{"NFS4ERR_DELAY always", []nfs4.CallbackSecParms4{cbSys}, false, 100,
				"CB_NULL" + strings.Repeat(" CB_SEQUENCE delayed", maxDelayRetries+1), true},
		} {
			e := newEnv(t, Options{})
			svc := newCBService(&cbCred)
			svc.refuse.Store(tc.refuse)
			svc.delays.Store(tc.delays)
			e.srv.v4.cb.mu.Lock()
			e.srv.v4.cb.retry = time.Millisecond
			e.srv.v4.cb.mu.Unlock()
			c := newV4Client(t, cbTransport(t, e, rdma, svc), rootCred())
			c.csFlags = nfs4.CreateSessionFlagConnBackChan
			c.secParms = tc.sec
			c.exchangeID()
			c.createSession()
			e.srv.v4.cb.wait()
			if got := svc.seen(); got != tc.want {
				t.Fatalf("rdma %v, %s: callback service saw %q, want %q", rdma, tc.name, got, tc.want)
			}
			if down := pathDown(c); down != tc.down {
				t.Fatalf("rdma %v, %s: CB_PATH_DOWN %v, want %v", rdma, tc.name, down, tc.down)
			}
			if tc.name == "AUTH_NONE" {
				// BACKCHANNEL_CTL with AUTH_SYS: probed again at once (no back-off for
				// new parameters) and up; the refused CB_COMPOUND did not use up
				// sequence ID 1.
				c.must(&nfs4.BackchannelCtlArgs{CBProgram: svc.prog, SecParms: []nfs4.CallbackSecParms4{cbSys}})
				e.srv.v4.cb.wait()
				if got := svc.seen(); got != "CB_NULL CB_SEQUENCE" || pathDown(c) {
					t.Fatalf("rdma %v: BACKCHANNEL_CTL to AUTH_SYS: callback service saw %q, CB_PATH_DOWN %v", rdma, got, !tc.down)
				}
			}
			if tc.name != "AUTH_SYS" {
				continue
			}
			// BACKCHANNEL_CTL moves the callbacks to another program: probed again, up
			// with a program the client hosts, down with one it does not, up again
			// back at the first one (at once, though the last probe failed), down
			// with security parameters the server cannot use.
			for _, cb := range []struct {
				prog uint32
				sec  []nfs4.CallbackSecParms4
				want string
				down bool
			}{
				{svc.prog + 1, []nfs4.CallbackSecParms4{cbSys}, "CB_NULL CB_SEQUENCE", false},
				{svc.prog + 2, []nfs4.CallbackSecParms4{cbSys}, "refused", true},
				{svc.prog, []nfs4.CallbackSecParms4{cbSys}, "CB_NULL CB_SEQUENCE", false},
				{svc.prog, []nfs4.CallbackSecParms4{cbGSS}, "", true},
			} {
				c.must(&nfs4.BackchannelCtlArgs{CBProgram: cb.prog, SecParms: cb.sec})
				e.srv.v4.cb.wait()
				if got := svc.seen(); got != cb.want {
					t.Fatalf("rdma %v: BACKCHANNEL_CTL to %#x: the callback service saw %q, want %q", rdma, cb.prog, got, cb.want)
				}
				if down := pathDown(c); down != cb.down {
					t.Fatalf("rdma %v: BACKCHANNEL_CTL to %#x: CB_PATH_DOWN %v", rdma, cb.prog, down)
				}
			}
		}
	}
}

// TestV4CallbackBackoff: a client whose callback service fails the probes and that
// answers CB_PATH_DOWN with BIND_CONN_TO_SESSION in a loop, as Linux does, sees one
// probe per back-off (1 s, doubling up to 30 s, on the server's clock), not one per
// BIND_CONN_TO_SESSION; CB_PATH_DOWN stays set meanwhile. Once the service answers, the
// next probe after the back-off brings the path up and ends the back-off.
func TestV4CallbackBackoff(t *testing.T) {
	for _, rdma := range []bool{false, true} {
		clock := &leaseClock{t: time.Unix(1_700_000_000, 0)}
		e := newEnv(t, Options{NFS4: NFS4Options{State: nfs4state.Options{LeaseTime: time.Hour, Now: clock.now}}})
		svc := newCBService(&cbCred)
		svc.refuse.Store(true)
		c := newV4Client(t, cbTransport(t, e, rdma, svc), rootCred())
		c.csFlags = nfs4.CreateSessionFlagConnBackChan
		c.secParms = []nfs4.CallbackSecParms4{cbSys}
		c.exchangeID()
		c.createSession()
		e.srv.v4.cb.wait()
		probes := 1 // CREATE_SESSION's
		started := func() int {
			e.srv.v4.cb.wait()
			e.srv.v4.cb.mu.Lock()
			defer e.srv.v4.cb.mu.Unlock()
			return e.srv.v4.cb.started
		}
		// loop is the client's reaction to CB_PATH_DOWN: SEQUENCE, BIND_CONN_TO_SESSION,
		// n times.
		loop := func(n int) {
			t.Helper()
			for range n {
				if !pathDown(c) {
					t.Fatalf("rdma %v: CB_PATH_DOWN not set after %d probes", rdma, probes)
				}
				wantStatus4(t, "BIND_CONN_TO_SESSION", c.rawMust(&nfs4.BindConnToSessionArgs{SessionID: c.sid, Dir: nfs4.CDFC4BackOrBoth}), nfs4.OK)
				e.srv.v4.cb.wait()
			}
		}
		loop(50)
		if n := started(); n != probes {
			t.Fatalf("rdma %v: %d probes for 50 BIND_CONN_TO_SESSION within the back-off, want %d", rdma, n, probes)
		}
		for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
			clock.advance(wait - time.Millisecond)
			loop(3)
			if n := started(); n != probes {
				t.Fatalf("rdma %v: probe %d came before its back-off of %v", rdma, n, wait)
			}
			clock.advance(time.Millisecond)
			loop(3)
			probes++
			if n := started(); n != probes {
				t.Fatalf("rdma %v: %d probes after a back-off of %v, want %d", rdma, n, wait, probes)
			}
		}
		if got, want := svc.seen(), strings.TrimSpace(strings.Repeat("refused ", probes)); got != want {
			t.Fatalf("rdma %v: callback service saw %q, want %q", rdma, got, want)
		}
		svc.refuse.Store(false)
		clock.advance(30 * time.Second)
		loop(1)
		if pathDown(c) {
			t.Fatalf("rdma %v: CB_PATH_DOWN after a good probe", rdma)
		}
		if got := svc.seen(); got != "CB_NULL CB_SEQUENCE" {
			t.Fatalf("rdma %v: callback service saw %q after the back-off", rdma, got)
		}
		// Up: no back-off, a BIND_CONN_TO_SESSION is probed at once.
		wantStatus4(t, "BIND_CONN_TO_SESSION", c.rawMust(&nfs4.BindConnToSessionArgs{SessionID: c.sid, Dir: nfs4.CDFC4BackOrBoth}), nfs4.OK)
		e.srv.v4.cb.wait()
		if got := svc.seen(); got != "CB_NULL CB_SEQUENCE" || pathDown(c) {
			t.Fatalf("rdma %v: after the path came up, BIND_CONN_TO_SESSION: callback service saw %q", rdma, got)
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
