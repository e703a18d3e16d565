package rpcrdma

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestEndpointKeepsEarlyReceives: completions are delivered inline, so a message that
// arrives after the connection is accepted but before the transport has called start
// must be kept and handed to onRecv by start, not lost.
func TestEndpointKeepsEarlyReceives(t *testing.T) {
	ctx := tpCtx(t)
	dev := soft.New(soft.Config{})
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close() // after the endpoint's teardown (deferred later)
	ln, err := dev.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		ep  *endpoint
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		cr, err := ln.Accept(ctx)
		if err != nil {
			ch <- accepted{nil, err}
			return
		}
		ep, err := newEndpoint(pd, dev, endpointConfig{recvSize: 1024, nrecv: 4, sendSize: 1024, nsend: 4, sqDepth: 8})
		if err != nil {
			ch <- accepted{nil, err}
			return
		}
		if _, err := cr.Accept(ctx, ep.qp, verbs.ConnParams{IRD: 1, ORD: 1}); err != nil {
			ep.teardown()
			ch <- accepted{nil, err}
			return
		}
		ch <- accepted{ep, nil}
	}()
	peer := dialRaw(t, ln.Addr().String(), nil)
	a := <-ch
	if a.err != nil {
		t.Fatal(a.err)
	}
	ep := a.ep
	defer ep.teardown()
	msg := []byte("sent before start")
	peer.send(t, msg)
	// Wait until the receive has completed (and been kept) with start not yet called.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ep.startMu.Lock()
		n := len(ep.early)
		ep.startMu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the receive did not complete")
		}
		runtime.Gosched()
	}
	got := make(chan []byte, 1)
	ep.start(&verbs.ConnInfo{}, ConnPrivate{}, func(idx, n int, wc *verbs.Completion) {
		if wc.Status == verbs.StatusSuccess { // not the flushes of teardown
			got <- bytes.Clone(ep.recvBuf(idx)[:n])
		}
	})
	select {
	case b := <-got:
		if !bytes.Equal(b, msg) {
			t.Fatalf("onRecv got %q, want %q", b, msg)
		}
	case <-ctx.Done():
		t.Fatal("start did not hand over the early receive")
	}
}
