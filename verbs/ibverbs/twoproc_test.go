//go:build ibverbs && linux && cgo

package ibverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestTwoProcessBench measures this provider between two processes: run
// it with IBVERBS_BENCH_LISTEN=ip:port in one (the server: it exposes a
// 1 MiB region in its accept private data and echoes Sends) and with
// IBVERBS_BENCH_DIAL=ip:port in the other (the client: RDMA Write and Read
// bandwidth at 64 KiB and 1 MiB, eight requests in flight posted as one
// batch, and 64-byte Send/Recv round trips). The interop case
// ibverbs-bench-rxe runs both in the lab guest over rxe0. Each measurement
// is bounded by IBVERBS_BENCH_TIME (default 2s). The numbers are logged,
// not asserted; the test fails only if a transfer fails or data differs.
func TestTwoProcessBench(t *testing.T) {
	listen, dial := os.Getenv("IBVERBS_BENCH_LISTEN"), os.Getenv("IBVERBS_BENCH_DIAL")
	switch {
	case listen != "":
		benchServer(t, listen)
	case dial != "":
		benchClient(t, dial)
	default:
		t.Skip("two-process benchmark: set IBVERBS_BENCH_LISTEN (server) or IBVERBS_BENCH_DIAL (client)")
	}
}

const (
	benchRegion = 1 << 20
	benchWindow = 8
	benchMsg    = 64
)

func benchBudget() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("IBVERBS_BENCH_TIME")); err == nil && d > 0 {
		return d
	}
	return 2 * time.Second
}

func benchServer(t *testing.T, addr string) {
	cfg, _ := testConfig(t)
	dev := openTest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := newPeer(t, dev)
	region := p.reg(make([]byte, benchRegion), verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	inbox := make([]byte, 16*benchMsg)
	imr := p.reg(inbox, verbs.AccessLocalWrite)
	for i := 0; i < 16; i++ {
		if err := p.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: imr, Offset: i * benchMsg, Length: benchMsg}}}); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := dev.Listen(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Logf("benchmark server on %v (%s)", ln.Addr(), dev.Name())
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Accept(ctx, p.qp, verbs.ConnParams{PrivateData: encodeRegion(region), IRD: benchWindow, ORD: 1}); err != nil {
		t.Fatal(err)
	}
	var wc [4]verbs.Completion
	for {
		n, err := p.cq.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range wc[:n] {
			if c.Status != verbs.StatusSuccess {
				t.Fatalf("server completion {ID %d %v %v}: %v", c.ID, c.Opcode, c.Status, c.Err)
			}
			if c.Opcode != verbs.OpcodeRecv {
				continue
			}
			slot := int(c.ID)
			if inbox[slot*benchMsg] == 'Q' {
				t.Logf("client done")
				return
			}
			// Echo from the same slot, then give the slot back.
			if err := p.qp.PostSend(&verbs.SendWR{ID: 100 + c.ID, Op: verbs.OpSend, Flags: verbs.Signaled,
				SGL: []verbs.SGE{{MR: imr, Offset: slot * benchMsg, Length: c.ByteLen}}}); err != nil {
				t.Fatal(err)
			}
			if err := p.qp.PostRecv(&verbs.RecvWR{ID: c.ID, SGL: []verbs.SGE{{MR: imr, Offset: slot * benchMsg, Length: benchMsg}}}); err != nil {
				t.Fatal(err)
			}
		}
		if n == 0 {
			if err := p.cq.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func benchClient(t *testing.T, addr string) {
	cfg, _ := testConfig(t)
	dev := openTest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := newPeer(t, dev)
	local := p.reg(make([]byte, benchRegion), verbs.AccessLocalWrite)
	msg := p.reg(make([]byte, 2*benchMsg), verbs.AccessLocalWrite)
	var info *verbs.ConnInfo
	for deadline := time.Now().Add(60 * time.Second); ; {
		var err error
		info, err = dev.Dial(ctx, addr, p.qp, verbs.ConnParams{ORD: benchWindow, IRD: 1})
		if err == nil {
			break
		}
		// Until the server listens, RoCE answers with a reject (invalid
		// service ID) and iWARP with a refused connection.
		if time.Now().After(deadline) || errors.Is(err, verbs.ErrBadState) {
			t.Fatalf("Dial %s: %v", addr, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stag, to, n, err := decodeRegion(info.PrivateData)
	if err != nil || n != benchRegion {
		t.Fatalf("server region in private data: %v (length %d)", err, n)
	}
	t.Logf("connected to %v over %s: ORD %d", info.RemoteAddr, dev.Name(), info.ORD)
	budget := benchBudget()
	bp := p.qp.(BatchPoster)
	var wc [benchWindow]verbs.Completion
	wait := func(want int) {
		for want > 0 {
			k, err := p.cq.Poll(wc[:])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range wc[:k] {
				if c.Status != verbs.StatusSuccess {
					t.Fatalf("client completion {ID %d %v %v}: %v", c.ID, c.Opcode, c.Status, c.Err)
				}
			}
			want -= k
			if want > 0 && k == 0 {
				if err := p.cq.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, op := range []verbs.SendOp{verbs.OpWrite, verbs.OpRead} {
		for _, size := range []int{64 << 10, 1 << 20} {
			wrs := make([]verbs.SendWR, benchWindow)
			per := size / benchWindow
			for i := range wrs {
				wrs[i] = verbs.SendWR{ID: uint64(i), Op: op, SGL: []verbs.SGE{{MR: local, Offset: i * per, Length: per}},
					RemoteSTag: stag, RemoteTO: to + uint64(i*per)}
				if op == verbs.OpRead {
					wrs[i].Flags = verbs.Signaled // every Read completes (ORD window)
				}
			}
			wrs[benchWindow-1].Flags = verbs.Signaled
			want := 1
			if op == verbs.OpRead {
				want = benchWindow
			}
			start, ops := time.Now(), 0
			for time.Since(start) < budget {
				if _, err := bp.PostSendBatch(wrs); err != nil {
					t.Fatal(err)
				}
				wait(want)
				ops++
			}
			el := time.Since(start)
			t.Logf("RESULT %-5v %7d B: %8.1f MB/s (%d transfers in %v, %d requests per batch)",
				op, size, float64(ops*size)/el.Seconds()/1e6, ops, el.Round(time.Millisecond), benchWindow)
		}
	}
	// Send/Recv round trips.
	start, rts := time.Now(), 0
	for time.Since(start) < budget {
		if err := p.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: msg, Offset: benchMsg, Length: benchMsg}}}); err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint64(msg.Buf(), uint64(rts))
		if err := p.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: msg, Length: benchMsg}}}); err != nil {
			t.Fatal(err)
		}
		wait(2)
		if got := binary.BigEndian.Uint64(msg.Buf()[benchMsg:]); got != uint64(rts) {
			t.Fatalf("echo %d, want %d", got, rts)
		}
		rts++
	}
	el := time.Since(start)
	t.Logf("RESULT Send/Recv %d B round trip: %.1f µs (%d round trips in %v)", benchMsg, float64(el.Microseconds())/float64(rts), rts, el.Round(time.Millisecond))
	msg.Buf()[0] = 'Q'
	if err := p.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: msg, Length: 1}}}); err != nil {
		t.Fatal(err)
	}
	wait(1)
}
