//go:build ibverbs && linux && cgo

package ibverbs

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

func qpConfig(cq verbs.CQ, depth int) verbs.QPConfig {
	return verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: depth, MaxRecvWR: depth}
}

type bend struct {
	pd verbs.PD
	cq verbs.CQ
	qp verbs.QP
}

func newBend(tb testing.TB, d *Device, depth int, opts ...verbs.CQOption) *bend {
	pd, err := d.AllocPD()
	if err != nil {
		tb.Fatal(err)
	}
	cq, err := d.CreateCQ(2*depth, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	qp, err := pd.CreateQP(qpConfig(cq, depth))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { qp.Close(); cq.Close(); pd.Close() })
	return &bend{pd: pd, cq: cq, qp: qp}
}

// pair connects two endpoints through the device under test.
func pair(tb testing.TB, depth int) (cli, srv *bend, d *Device) {
	return pairOpts(tb, depth, nil, nil)
}

// pairOpts is pair with options for the client's and the server's CQ (a
// handler, for one).
func pairOpts(tb testing.TB, depth int, cliOpts, srvOpts []verbs.CQOption) (cli, srv *bend, d *Device) {
	cfg, addr := testConfig(tb)
	d = openTest(tb, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ln, err := d.Listen(ctx, addr+":0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	cli, srv = newBend(tb, d, depth, cliOpts...), newBend(tb, d, depth, srvOpts...)
	errc := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			_, err = req.Accept(ctx, srv.qp, verbs.ConnParams{})
		}
		errc <- err
	}()
	if _, err := d.Dial(ctx, ln.Addr().String(), cli.qp, verbs.ConnParams{}); err != nil {
		tb.Fatal(err)
	}
	if err := <-errc; err != nil {
		tb.Fatal(err)
	}
	return cli, srv, d
}

// drain waits for n completions, failing on any error.
func drain(tb testing.TB, cq verbs.CQ, wc []verbs.Completion, n int) {
	ctx := context.Background()
	for n > 0 {
		k, err := cq.Poll(wc)
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range wc[:k] {
			if c.Status != verbs.StatusSuccess {
				tb.Fatalf("completion %d: %v %v", c.ID, c.Status, c.Err)
			}
		}
		n -= k
		if n > 0 && k == 0 {
			if err := cq.Wait(ctx); err != nil {
				tb.Fatal(err)
			}
		}
	}
}
