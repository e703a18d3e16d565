package soft

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// endpoint is one side of a test connection.
type endpoint struct {
	dev  *Device
	pd   verbs.PD
	cq   verbs.CQ
	qp   verbs.QP
	info *verbs.ConnInfo
}

func newEndpoint(t testing.TB, dev *Device, depth int, opts ...verbs.CQOption) *endpoint {
	t.Helper()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(4*depth, opts...)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: depth, MaxRecvWR: depth, MaxSendSGE: 4, MaxRecvSGE: 4})
	if err != nil {
		t.Fatal(err)
	}
	return &endpoint{dev: dev, pd: pd, cq: cq, qp: qp}
}

func (e *endpoint) close(t testing.TB) {
	e.qp.Close()
	e.cq.Close()
}

func (e *endpoint) reg(t testing.TB, buf []byte, acc verbs.Access) verbs.MR {
	t.Helper()
	mr, err := e.pd.RegMR(buf, acc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })
	return mr
}

// wait returns the next completion, failing the test after 10 s.
func (e *endpoint) wait(t testing.TB) verbs.Completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wc, err := verbs.NextCompletion(ctx, e.cq)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

func (e *endpoint) expect(t testing.TB, id uint64, op verbs.Opcode, st verbs.Status) verbs.Completion {
	t.Helper()
	wc := e.wait(t)
	if wc.ID != id || wc.Opcode != op || wc.Status != st {
		t.Fatalf("completion = {ID %d %v %v err %v}, want {ID %d %v %v}", wc.ID, wc.Opcode, wc.Status, wc.Err, id, op, st)
	}
	return wc
}

// pairConfig describes a connected pair for tests.
type pairConfig struct {
	client, server Config
	depth          int
	clientPD       []byte
	serverPD       []byte
	// beforeAccept runs on the server endpoint before Accept (post receives).
	beforeAccept func(*endpoint)
	beforeDial   func(*endpoint)
	// clientCQ: options of the client's CQ (verbs.WithHandler).
	clientCQ []verbs.CQOption
}

// connectPair connects two endpoints over 127.0.0.1.
func connectPair(t testing.TB, pc pairConfig) (cli, srv *endpoint) {
	t.Helper()
	if pc.depth == 0 {
		pc.depth = 16
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sdev, cdev := New(pc.server), New(pc.client)
	ln, err := sdev.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv, cli = newEndpoint(t, sdev, pc.depth), newEndpoint(t, cdev, pc.depth, pc.clientCQ...)
	if pc.beforeAccept != nil {
		pc.beforeAccept(srv)
	}
	if pc.beforeDial != nil {
		pc.beforeDial(cli)
	}
	type res struct {
		info *verbs.ConnInfo
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		cr, err := ln.Accept(ctx)
		if err != nil {
			ch <- res{nil, err}
			return
		}
		if string(cr.PrivateData()) != string(pc.clientPD) {
			t.Errorf("server saw private data %q, want %q", cr.PrivateData(), pc.clientPD)
		}
		info, err := cr.Accept(ctx, srv.qp, verbs.ConnParams{PrivateData: pc.serverPD})
		ch <- res{info, err}
	}()
	info, err := cdev.Dial(ctx, ln.Addr().String(), cli.qp, verbs.ConnParams{PrivateData: pc.clientPD})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatalf("Accept: %v", r.err)
	}
	cli.info, srv.info = info, r.info
	if string(info.PrivateData) != string(pc.serverPD) {
		t.Errorf("client saw private data %q, want %q", info.PrivateData, pc.serverPD)
	}
	t.Cleanup(func() { cli.close(t); srv.close(t) })
	return cli, srv
}

// checkGoroutines fails the test if goroutines started during it are still
// running after a settle period. Call it first in a test: it registers a
// cleanup, which runs after all cleanups registered later.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				buf = buf[:runtime.Stack(buf, true)]
				var ours []string
				for _, g := range strings.Split(string(buf), "\n\n") {
					if strings.Contains(g, "verbs/soft.") {
						ours = append(ours, g)
					}
				}
				t.Errorf("%d goroutines before, %d after; provider goroutines:\n%s", before, n, strings.Join(ours, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func fillPattern(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) + seed
	}
}

// state reports whether the sweep is scheduled and how many QPs it looks at.
func (s *qpSweep) state() (armed bool, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.armed, len(s.qps)
}
