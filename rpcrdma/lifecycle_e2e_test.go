package rpcrdma

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestCloseReleasesEverything: after the client and server close, no transport goroutine
// is left and calls fail with oncrpc.ErrClosed.
func TestCloseReleasesEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		env := newTPEnv(t, nil, nil)
		ctx := tpCtx(t)
		for i := 0; i < 20; i++ {
			if err := tpMixedCall(ctx, env.rpc, i); err != nil {
				t.Fatal(err)
			}
		}
		env.tr.Close()
		if err := env.rpc.Call(ctx, tpNull, nil, nil); !errors.Is(err, oncrpc.ErrClosed) {
			t.Fatalf("call after Close: %v, want ErrClosed", err)
		}
		env.srv.Close()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			st := string(buf[:runtime.Stack(buf, true)])
			var ours []string
			for _, g := range strings.Split(st, "\n\n") {
				if strings.Contains(g, "rpcrdma/rpcrdma.") && !strings.Contains(g, "TestCloseReleasesEverything") {
					ours = append(ours, g)
				}
			}
			t.Fatalf("%d goroutines left (%d before):\n%s", n, before, strings.Join(ours, "\n\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServerWritesMultiSegmentChunks: a raw client offers a write chunk of three
// segments with a Linux-style 4-byte pad segment, and a two-segment reply chunk; the
// server fills the segments in order, reports per-segment lengths (0 for unused ones and
// for the pad) and never writes the XDR roundup.
func TestServerWritesMultiSegmentChunks(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	// No Send With Invalidate: the one MR serves both calls.
	p := dialRaw(t, env.ln.Addr().String(), ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil))
	mr, err := p.pd.RegMR(make([]byte, 1<<16), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	at := func(off, n int) chunks.Segment {
		return chunks.Segment{Handle: mr.RKey(), Length: uint32(n), Offset: mr.Addr() + uint64(off)}
	}
	// Echo one 250-byte payload and one 5-byte payload: chunk 0 has segments of 100,
	// 100, 100; chunk 1 carries 5 bytes plus a pad segment.
	args := tpMakePayloads(250, 5)
	wl := []chunks.WriteChunk{{at(0, 100), at(1000, 100), at(2000, 100)}, {at(3000, 5), at(3100, 4)}}
	h := Header{XID: 9, Vers: 1, Credits: 4, Proc: ProcMsg, WriteList: wl}
	b, _ := h.Append(nil)
	var enc xdrEncoder
	args.EncodeXDR(&enc)
	p.send(t, append(append(b, rpcCall(9, tpEcho)...), xdrFlatten(&enc)...))
	r, _ := p.recvHeader(t)
	if r.Proc != ProcMsg || len(r.WriteList) != 2 {
		t.Fatalf("reply %v write list %v", r.Proc, r.WriteList)
	}
	lens := func(c chunks.WriteChunk) []uint32 {
		var l []uint32
		for _, s := range c {
			l = append(l, s.Length)
		}
		return l
	}
	if got := lens(r.WriteList[0]); got[0] != 100 || got[1] != 100 || got[2] != 50 {
		t.Fatalf("chunk 0 lengths %v, want 100 100 50", got)
	}
	if got := lens(r.WriteList[1]); got[0] != 5 || got[1] != 0 {
		t.Fatalf("chunk 1 lengths %v, want 5 0 (pad segment unused)", got)
	}
	buf := mr.Buf()
	data := append(append(append([]byte(nil), buf[:100]...), buf[1000:1100]...), buf[2000:2050]...)
	if string(data) != string(args[0]) || string(buf[3000:3005]) != string(args[1]) {
		t.Fatal("payloads not placed in order across the segments")
	}
	if buf[2050] != 0 || buf[3100] != 0 {
		t.Fatal("server wrote beyond the payload")
	}

	// A long reply through a two-segment reply chunk.
	h = Header{XID: 10, Vers: 1, Credits: 4, Proc: ProcMsg, ReplyChunk: chunks.WriteChunk{at(10000, 3000), at(20000, 20000)}}
	b, _ = h.Append(nil)
	p.send(t, append(append(b, rpcCall(10, tpBig)...), 0, 0, 0x27, 0x10)) // 10000 bytes
	r, _ = p.recvHeader(t)
	if r.Proc != ProcNoMsg || len(r.ReplyChunk) != 2 || r.ReplyChunk[0].Length != 3000 {
		t.Fatalf("reply %v reply chunk %v", r.Proc, r.ReplyChunk)
	}
	n := int(r.ReplyChunk.Length())
	reply := append(append([]byte(nil), buf[10000:13000]...), buf[20000:20000+n-3000]...)
	if reply[3] != 10 || len(reply) < 10000 {
		t.Fatalf("reply chunk holds % x...", reply[:8])
	}
}

// TestCloseWithCallsInFlight: Close fails pending calls with oncrpc.ErrClosed at once.
func TestCloseWithCallsInFlight(t *testing.T) {
	b := newBlocker()
	env := newTPEnv(t, nil, nil, b.procs())
	defer close(b.release)
	ctx := tpCtx(t)
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { errs <- env.rpc.CallWithOptions(ctx, tpBlock, nil, nil, oncrpc.CallOptions{MaxReply: 100}) }()
	}
	<-b.arrived
	env.tr.Close()
	for i := 0; i < 3; i++ {
		if err := <-errs; !errors.Is(err, oncrpc.ErrClosed) {
			t.Fatalf("pending call after Close: %v, want ErrClosed", err)
		}
	}
}

// TestServerGoneCallFailsWithContext: when the server goes away for good, a call keeps
// trying to reconnect only until its context ends.
func TestServerGoneCallFailsWithContext(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	env.srv.Close()
	env.ln.Close()
	cctx, cancel := contextWithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- env.rpc.CallWithOptions(cctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("call to a closed server succeeded")
	}
}

// TestShutdownAnswersCallsInFlight: closing the Listener, as a graceful
// oncrpc.Server.Shutdown does first, stops accepting but leaves the accepted connection
// open, so the call its handler is executing is still answered; Shutdown then returns
// with the reply counted.
func TestShutdownAnswersCallsInFlight(t *testing.T) {
	b := newBlocker()
	env := newTPEnv(t, nil, nil, b.procs())
	ctx := tpCtx(t)
	errs := make(chan error, 1)
	go func() { errs <- env.rpc.CallWithOptions(ctx, tpBlock, nil, nil, oncrpc.CallOptions{MaxReply: 100}) }()
	<-b.arrived
	if err := env.ln.Close(); err != nil {
		t.Fatal(err)
	}
	if tr, err := Dial(ctx, env.dev, env.ln.Addr().String(), nil); err == nil {
		tr.Close()
		t.Fatal("Dial succeeded after the Listener was closed")
	}
	shut := make(chan error, 1)
	go func() { shut <- env.srv.Shutdown(ctx) }()
	close(b.release)
	if err := <-errs; err != nil {
		t.Fatalf("call in flight when the Listener closed: %v, want its reply", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st := env.ln.Stats(); st.RepliesInline != 1 || st.Conns.Closed != 1 {
		t.Fatalf("after Shutdown: %d replies counted, %d connections closed; want 1 and 1", st.RepliesInline, st.Conns.Closed)
	}
}
