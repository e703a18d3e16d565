package rpcrdma

import (
	"bytes"
	"runtime"
	"strings"
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
	ep, peer := newEndpointPair(t)
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

// newEndpointPair returns an endpoint (8 send-queue slots) accepted from a raw peer,
// not started; both are torn down at the end of the test.
func newEndpointPair(t *testing.T) (*endpoint, *rawPeer) {
	t.Helper()
	ctx := tpCtx(t)
	dev := soft.New(soft.Config{})
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pd.Close() }) // after the endpoint's teardown (registered later)
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
	t.Cleanup(a.ep.teardown)
	return a.ep, peer
}

// TestChainSignalsOnlyItsEnd: of a chain of RDMA Writes and a Send, only the Send is
// signalled; its one completion retires the whole chain (every send-queue slot back,
// the waiter done, one completion counted). When a request in a chain fails (here an
// RDMA Read the peer refuses), the failed one's completion puts its error on the
// waiter, and the flushed last one's completion retires the rest.
func TestChainSignalsOnlyItsEnd(t *testing.T) {
	const seg = 512
	ep, peer := newEndpointPair(t)
	ep.start(&verbs.ConnInfo{}, ConnPrivate{}, func(int, int, *verbs.Completion) {})
	peer.send(t, []byte("call")) // the responder speaks only after the initiator has
	sink, err := peer.pd.RegMR(make([]byte, 3*seg), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	src := make([]byte, 3*seg)
	for i := range src {
		src[i] = byte(i * 7)
	}
	srcMR, err := ep.pd.RegMR(src, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srcMR.Close()
	writes := func(stags ...uint32) []rdmaWR {
		wrs := make([]rdmaWR, len(stags))
		for i, stag := range stags {
			wrs[i] = rdmaWR{
				wr:  verbs.SendWR{Op: verbs.OpWrite, RemoteSTag: stag, RemoteTO: sink.Addr() + uint64(i*seg)},
				sge: [1]verbs.SGE{{MR: srcMR, Offset: i * seg, Length: seg}},
			}
		}
		return wrs
	}
	post := func(wrs []rdmaWR, msg string) error {
		defer func() {
			for i := range wrs {
				if wrs[i].wr.Flags&verbs.Signaled != 0 {
					t.Errorf("Write %d of the chain is signalled; only its Send should be", i)
				}
			}
		}()
		ctx := tpCtx(t)
		idx, buf, err := ep.getSendBuf(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := copy(buf, msg)
		w := ep.newWaiter()
		if err := ep.postChain(ctx, wrs, idx, n, verbs.OpSend, 0, 0, w); err != nil {
			t.Fatal(err)
		}
		return ep.wait(ctx, w)
	}

	if err := post(writes(sink.RKey(), sink.RKey(), sink.RKey()), "written"); err != nil {
		t.Fatal(err)
	}
	if got, _ := peer.recv(t); string(got) != "written" {
		t.Fatalf("peer received %q, want %q", got, "written")
	}
	if !bytes.Equal(sink.Buf(), src) {
		t.Fatal("the Writes did not all land before the Send")
	}
	// The completion wakes the waiter before dispatch uncounts it (posted), so
	// the count may lag the wait by a moment.
	waitFor(t, "the chain's completion to be uncounted", func() bool { return ep.posted.Load() == 0 })
	if free, posted, out := ep.sq.free.Load(), ep.posted.Load(), ep.sqOut.Load(); free != 8 || posted != 0 || out != 0 {
		t.Fatalf("after the chain: %d free send-queue slots (want 8), %d completions expected (want 0), %d requests out (want 0)", free, posted, out)
	}

	// RDMA Reads, the middle one of memory the peer never registered: its Read Request
	// gets a Terminate, so it fails, and the signalled last Read is flushed.
	dst, err := ep.pd.RegMR(make([]byte, 3*seg), verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	wrs := make([]rdmaWR, 3)
	for i, stag := range []uint32{sink.RKey(), sink.RKey() ^ 0xff, sink.RKey()} {
		wrs[i] = rdmaWR{
			wr:  verbs.SendWR{Op: verbs.OpRead, RemoteSTag: stag, RemoteTO: sink.Addr() + uint64(i*seg)},
			sge: [1]verbs.SGE{{MR: dst, Offset: i * seg, Length: seg}},
		}
	}
	ctx := tpCtx(t)
	w := ep.newWaiter()
	if err := ep.postChain(ctx, wrs, -1, 0, 0, 0, 0, w); err != nil {
		t.Fatal(err)
	}
	for i := range wrs {
		if signaled := wrs[i].wr.Flags&verbs.Signaled != 0; signaled != (i == len(wrs)-1) {
			t.Errorf("Read %d of 3: signalled %v", i, signaled)
		}
	}
	if err := ep.wait(ctx, w); err == nil || !strings.Contains(err.Error(), "Read completion") {
		t.Fatalf("Reads with a bad STag: %v, want the Read's failure", err)
	}
	select {
	case <-ep.stopped:
	case <-ctx.Done():
		t.Fatal("the endpoint did not stop after the failed chain's completions")
	}
	if free, out := ep.sq.free.Load(), ep.sqOut.Load(); free != 8 || out != 0 {
		t.Fatalf("after the failed chain: %d free send-queue slots (want 8), %d requests out (want 0)", free, out)
	}
}

// TestBuffersEndAtTheirSize: the send and receive buffers are slices of one registered
// slab each, and their capacity ends where they do, so that a message encoded past a
// buffer's end reallocates (and is caught) instead of writing into the next buffer.
func TestBuffersEndAtTheirSize(t *testing.T) {
	ep, _ := newEndpointPair(t)
	// Slabs of several buffers each (a slab doubles the send buffers: 1, 1, 2).
	for i := 0; i < 3; i++ {
		ep.growSend()
	}
	if _, err := ep.growRecv(len(ep.recv)); err != nil {
		t.Fatal(err)
	}
	ep.bufMu.Lock()
	defer ep.bufMu.Unlock()
	if ep.nSend < 4 || ep.nRecv < 2 {
		t.Fatalf("%d send and %d receive buffers, want slabs of several", ep.nSend, ep.nRecv)
	}
	for i := 0; i < ep.nSend; i++ {
		if b := ep.send[i].buf; cap(b) != len(b) {
			t.Errorf("send buffer %d: length %d, capacity %d", i, len(b), cap(b))
		}
	}
	for i := 0; i < ep.nRecv; i++ {
		if b := ep.recv[i].buf; cap(b) != len(b) {
			t.Errorf("receive buffer %d: length %d, capacity %d", i, len(b), cap(b))
		}
	}
}
