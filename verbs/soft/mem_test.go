package soft

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// Idle-connection memory: what one connected, idle queue pair costs in Go
// heap and goroutine stacks. With the queue sizes rpcrdma's server uses with
// its default 64 credits (receive queue 72, send queue 4*72+64, two send
// SGEs) the figure is the provider's share of an idle NFS-over-RDMA
// connection; with 16-entry queues it is mostly the connection itself.
//
//	go test -run '^$' -bench IdleConn -benchtime 64x ./verbs/soft

// idleConnMemory opens n connected pairs of queue pairs over 127.0.0.1, lets
// them go idle, and returns the heap and stack bytes per queue pair (each
// pair is two: one per side), measured after a GC. The connections are
// closed by the returned function.
func idleConnMemory(tb testing.TB, n, sendWR, recvWR int) (heap, stack float64, cleanup func()) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sdev, cdev := New(Config{SiwKick: -1}), New(Config{SiwKick: -1})
	ln, err := sdev.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	spd, err := sdev.AllocPD()
	if err != nil {
		tb.Fatal(err)
	}
	cpd, err := cdev.AllocPD()
	if err != nil {
		tb.Fatal(err)
	}
	var closers []func()
	cleanup = func() {
		for _, c := range closers {
			c()
		}
	}
	newQP := func(d *Device, pd verbs.PD) verbs.QP {
		cq, err := d.CreateCQ(recvWR + sendWR + 16)
		if err != nil {
			tb.Fatal(err)
		}
		qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxSendSGE: 2, MaxRecvSGE: 1})
		if err != nil {
			tb.Fatal(err)
		}
		closers = append(closers, func() { qp.Close(); cq.Close() })
		return qp
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		sqp, cqp := newQP(sdev, spd), newQP(cdev, cpd)
		errc := make(chan error, 1)
		go func() {
			cr, err := ln.Accept(ctx)
			if err == nil {
				_, err = cr.Accept(ctx, sqp, verbs.ConnParams{})
			}
			errc <- err
		}()
		if _, err := cdev.Dial(ctx, ln.Addr().String(), cqp, verbs.ConnParams{}); err != nil {
			cleanup()
			tb.Fatal(err)
		}
		if err := <-errc; err != nil {
			cleanup()
			tb.Fatal(err)
		}
	}
	// Let every connection goroutine reach its idle wait (the RTR frame has
	// been exchanged and both writers are parked).
	for i := 0; i < 3; i++ {
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
	}
	runtime.ReadMemStats(&after)
	qps := float64(2 * n)
	heap = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / qps
	stack = (float64(after.StackInuse) - float64(before.StackInuse)) / qps
	return heap, stack, cleanup
}

// BenchmarkIdleConn reports the memory of an idle connection per queue pair
// (b.N connections, two queue pairs each): heap-B/qp and stack-B/qp.
func BenchmarkIdleConn(b *testing.B) {
	for _, tc := range []struct {
		name           string
		sendWR, recvWR int
	}{{"rpcrdma-server", 4*72 + 64, 72}, {"queues=16", 16, 16}} {
		b.Run(tc.name, func(b *testing.B) {
			heap, stack, cleanup := idleConnMemory(b, b.N, tc.sendWR, tc.recvWR)
			defer cleanup()
			b.ReportMetric(heap, "heap-B/qp")
			b.ReportMetric(stack, "stack-B/qp")
			b.ReportMetric(heap+stack, "B/qp")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// buffersHeld reports whether qp holds a read-ahead or a batch buffer.
func buffersHeld(qp verbs.QP) (rx, tx bool) {
	q := qp.(*queuePair)
	return q.r.held.Load(), q.w.held.Load()
}

// TestIdleConnHoldsNoBuffers checks that once traffic stops, neither side
// of a connection keeps its read-ahead or transmit batch buffer: they go
// back to the pools, so idle connections cost no buffer memory.
func TestIdleConnHoldsNoBuffers(t *testing.T) {
	const size = 4096
	cfg := Config{SiwKick: -1}
	var srvRecv verbs.RecvWR
	cli, srv := connectPair(t, pairConfig{
		client: cfg, server: cfg,
		beforeAccept: func(e *endpoint) {
			mr := e.reg(t, make([]byte, size), verbs.AccessLocalWrite)
			srvRecv = verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: mr, Length: size}}}
			if err := e.qp.PostRecv(&srvRecv); err != nil {
				t.Fatal(err)
			}
		},
	})
	src := cli.reg(t, make([]byte, 2*size), verbs.AccessLocalWrite)
	remote := srv.reg(t, make([]byte, size), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	// A Write and a Send (the server reads ahead), then a Read (the server
	// answers with a Read Response, the client reads ahead).
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: src, Length: size}},
		RemoteSTag: remote.RKey(), RemoteTO: remote.Addr()}); err != nil {
		t.Fatal(err)
	}
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: src, Length: 100}}}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 3, verbs.OpcodeSend, verbs.StatusSuccess)
	srv.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 4, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: src, Offset: size, Length: size}},
		RemoteSTag: remote.RKey(), RemoteTO: remote.Addr()}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 4, verbs.OpcodeRead, verbs.StatusSuccess)
	// The connection goroutines give their buffers back as they go idle,
	// a moment after the last completion.
	for _, e := range []*endpoint{cli, srv} {
		waitWriterIdle(t, e.qp)
		for i := 0; ; i++ {
			rx, tx := buffersHeld(e.qp)
			if !rx && !tx {
				break
			}
			if i == 10000 {
				t.Fatalf("an idle queue pair still holds its read-ahead (%v) or batch (%v) buffer", rx, tx)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
