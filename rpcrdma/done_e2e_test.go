package rpcrdma

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// serverDones returns the number of replies the listener's connections keep registered
// waiting for RDMA_DONE.
func serverDones(l *Listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for sc := range l.conns {
		sc.mu.Lock()
		n += len(sc.dones)
		sc.mu.Unlock()
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLongReplyByReadChunks: with ReplyReadChunks, a reply too long for inline and for a
// missing reply chunk is returned as a position-zero read chunk; the client pulls it by
// RDMA Read and acknowledges with RDMA_DONE, which releases it at the server.
func TestLongReplyByReadChunks(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{ReplyReadChunks: true}, &ClientOptions{InlineRecv: 4096}) // 4 KiB receives
	ctx := tpCtx(t)
	for _, n := range []int{50000, 4093} {
		var res tpOpaque
		if err := env.rpc.CallWithOptions(ctx, tpBig, tpUint32(n), &res, oncrpc.CallOptions{MaxReply: 512}); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, n)
		tpFill(want, byte(n))
		if !bytes.Equal(res, want) {
			t.Fatalf("n=%d: reply corrupted", n)
		}
		call := env.strace.headers(t, false)
		rep := env.ctrace.last(t, false)
		if rep.Proc != ProcNoMsg || len(rep.ReadList) != 1 || rep.ReadList[0].Position != 0 || len(call[len(call)-1].ReplyChunk) != 0 {
			t.Fatalf("n=%d: reply %v read list %v", n, rep.Proc, rep.ReadList)
		}
		sent := env.ctrace.last(t, true)
		if sent.Proc != ProcDone || sent.XID != rep.XID {
			t.Fatalf("n=%d: last message sent %v xid %#x, want RDMA_DONE for %#x", n, sent.Proc, sent.XID, rep.XID)
		}
		waitFor(t, "RDMA_DONE to release the reply", func() bool { return serverDones(env.ln) == 0 })
	}
}

// TestDoneTimeout: a client that never sends RDMA_DONE cannot pin the reply: after
// DoneTimeout the server reclaims it, and a later RDMA Read of it fails.
func TestDoneTimeout(t *testing.T) {
	// Long enough for the read right after the reply even on a loaded machine; the
	// test then waits for the reclaim rather than for a time.
	env := newTPEnv(t, &ServerOptions{ReplyReadChunks: true, DoneTimeout: time.Second}, nil)
	p := dialRaw(t, env.ln.Addr().String(), linuxClientPrivate)
	read := func(seg ReadSegmentLike) verbs.Completion {
		err := p.qp.PostSend(&verbs.SendWR{ID: 7, Op: verbs.OpRead, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: p.sendMR, Length: int(seg.Length)}}, RemoteSTag: seg.Handle, RemoteTO: seg.Offset})
		if err != nil {
			t.Fatal(err)
		}
		return p.waitSend(t, 7)
	}
	h := Header{XID: 0x77, Vers: 1, Credits: 4, Proc: ProcMsg}
	b, _ := h.Append(nil)
	var e = rpcCall(0x77, tpBig)
	e = append(e, 0, 0, 0x9c, 0x40) // n = 40000
	p.send(t, append(b, e...))
	rep, _ := p.recvHeader(t)
	if rep.Proc != ProcNoMsg || len(rep.ReadList) != 1 {
		t.Fatalf("reply %v read list %v", rep.Proc, rep.ReadList)
	}
	seg := rep.ReadList[0].Segment
	if wc := read(seg); wc.Status != verbs.StatusSuccess {
		t.Fatalf("read before the timeout: %v %v", wc.Status, wc.Err)
	}
	if got := p.sendMR.Buf()[:seg.Length]; len(got) < 28 || got[3] != 0x77 {
		t.Fatalf("read chunk does not hold the reply: % x", got[:16])
	}
	waitFor(t, "the DONE timeout", func() bool { return serverDones(env.ln) == 0 })
	clear(p.sendMR.Buf())
	wc := read(seg)
	var te *verbs.TerminateError
	if wc.Status == verbs.StatusSuccess {
		t.Fatal("read after the timeout succeeded")
	} else if !errors.As(wc.Err, &te) && !errors.Is(wc.Err, verbs.ErrFlushed) {
		t.Fatalf("read after the timeout: %v %v", wc.Status, wc.Err)
	}
	if p.sendMR.Buf()[3] != 0 {
		t.Fatal("reclaimed reply was read")
	}
}

// ReadSegmentLike is the segment of a read list entry.
type ReadSegmentLike = chunksSegment

// A reply sent as a read chunk lies in a pooled buffer registered for remote read as
// a whole, beyond the segment it advertises. What the buffer held before, here another
// connection's call data, is not there for a client that reads past the segment.
func TestReplyReadChunkHoldsNoStaleData(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{ReplyReadChunks: true}, nil)
	ctx := tpCtx(t)
	// Another connection's call: 40,000 bytes by read chunk, reassembled in a pooled
	// 64 KiB buffer, given back when the call ends.
	secret := tpMakePayloads(40000)
	var sum tpPair
	if err := env.rpc.Call(ctx, tpSum, secret, &sum); err != nil || sum[1] != 40000 {
		t.Fatalf("sum %v, %v", sum, err)
	}
	p := dialRaw(t, env.ln.Addr().String(), linuxClientPrivate)
	h := Header{XID: 0x55, Vers: 1, Credits: 4, Proc: ProcMsg}
	b, _ := h.Append(nil)
	e := append(rpcCall(0x55, tpBig), 0, 0, 0x1f, 0x40) // a reply of n = 8000 bytes
	p.send(t, append(b, e...))
	rep, _ := p.recvHeader(t)
	if rep.Proc != ProcNoMsg || len(rep.ReadList) != 1 {
		t.Fatalf("reply %v read list %v", rep.Proc, rep.ReadList)
	}
	seg := rep.ReadList[0].Segment
	const n = 48 << 10
	err := p.qp.PostSend(&verbs.SendWR{ID: 9, Op: verbs.OpRead, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: p.sendMR, Length: n}}, RemoteSTag: seg.Handle, RemoteTO: seg.Offset + uint64(seg.Length)})
	if err != nil {
		t.Fatal(err)
	}
	if wc := p.waitSend(t, 9); wc.Status == verbs.StatusSuccess {
		got := p.sendMR.Buf()[:n]
		if bytes.Contains(got, secret[0][20000:20064]) {
			t.Fatal("a read past the reply's segment returned another connection's call data")
		}
		if i := slices.IndexFunc(got, func(b byte) bool { return b != 0 }); i >= 0 {
			t.Fatalf("a read past the reply's segment returned stale byte %#x at %d", got[i], i)
		}
	}
}
