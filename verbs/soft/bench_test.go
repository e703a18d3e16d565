package soft

import (
	"context"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// benchPoll waits for one completion without allocating.
func benchPoll(b *testing.B, cq verbs.CQ, wc []verbs.Completion) verbs.Completion {
	ctx := context.Background()
	for {
		n, err := cq.Poll(wc[:1])
		if err != nil {
			b.Fatal(err)
		}
		if n == 1 {
			if wc[0].Status != verbs.StatusSuccess {
				b.Fatalf("completion %v: %v", wc[0].Status, wc[0].Err)
			}
			return wc[0]
		}
		if err := cq.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendRecvPingPong measures a 64-byte Send/Recv round trip
// (client Send, server Recv, server Send, client Recv) over loopback.
func BenchmarkSendRecvPingPong(b *testing.B) {
	const size = 64
	var ssge, csge []verbs.SGE
	var srecv, crecv verbs.RecvWR
	cli, srv := connectPair(b, pairConfig{
		beforeAccept: func(e *endpoint) {
			mr := e.reg(b, make([]byte, size), verbs.AccessLocalWrite)
			ssge = []verbs.SGE{{MR: mr, Length: size}}
			srecv = verbs.RecvWR{ID: 1, SGL: ssge}
			e.qp.PostRecv(&srecv)
		},
		beforeDial: func(e *endpoint) {
			mr := e.reg(b, make([]byte, size), verbs.AccessLocalWrite)
			csge = []verbs.SGE{{MR: mr, Length: size}}
			crecv = verbs.RecvWR{ID: 1, SGL: csge}
		},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		wc := make([]verbs.Completion, 1)
		send := verbs.SendWR{ID: 2, Op: verbs.OpSend, SGL: ssge}
		for i := 0; i < b.N; i++ {
			benchPoll(b, srv.cq, wc)
			srv.qp.PostRecv(&srecv)
			if err := srv.qp.PostSend(&send); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	wc := make([]verbs.Completion, 1)
	send := verbs.SendWR{ID: 2, Op: verbs.OpSend, SGL: csge}
	b.ReportAllocs()
	b.SetBytes(2 * size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cli.qp.PostRecv(&crecv)
		if err := cli.qp.PostSend(&send); err != nil {
			b.Fatal(err)
		}
		benchPoll(b, cli.cq, wc)
	}
	b.StopTimer()
	<-done
}

// BenchmarkWrite64K streams 64 KiB RDMA Writes, 8 in flight, one signalled
// completion per batch.
func BenchmarkWrite64K(b *testing.B) { benchWrite(b, 64<<10, 0, false) }

// BenchmarkWrite64KCRC is BenchmarkWrite64K with MPA CRC32c.
func BenchmarkWrite64KCRC(b *testing.B) { benchWrite(b, 64<<10, 0, true) }

// BenchmarkWrite64KSmallFPDU is BenchmarkWrite64K with 1460-byte FPDUs
// (an Ethernet MSS) instead of the loopback MSS.
func BenchmarkWrite64KSmallFPDU(b *testing.B) { benchWrite(b, 64<<10, DefaultMaxFPDU, false) }

func benchWrite(b *testing.B, size, maxFPDU int, crc bool) {
	const depth = 8
	cli, srv := connectPair(b, pairConfig{client: Config{MaxFPDU: maxFPDU, CRC: crc}, depth: 2 * depth})
	dst := srv.reg(b, make([]byte, size), verbs.AccessRemoteWrite|verbs.AccessLocalWrite)
	src := cli.reg(b, make([]byte, size), 0)
	wr := verbs.SendWR{Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: src, Length: size}}, RemoteSTag: dst.RKey(), RemoteTO: dst.Addr()}
	wc := make([]verbs.Completion, 1)
	b.ReportAllocs()
	b.SetBytes(int64(size))
	b.ResetTimer()
	inflight := 0
	for i := 0; i < b.N; i++ {
		wr.ID = uint64(i)
		wr.Flags = 0
		if i%depth == depth-1 || i == b.N-1 {
			wr.Flags = verbs.Signaled
		}
		if err := cli.qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		inflight++
		if wr.Flags != 0 {
			benchPoll(b, cli.cq, wc)
			inflight = 0
		}
	}
}

// BenchmarkRead64K measures 64 KiB RDMA Reads, 8 in flight.
func BenchmarkRead64K(b *testing.B) {
	const size, depth = 64 << 10, 8
	cli, srv := connectPair(b, pairConfig{depth: 2 * depth})
	src := srv.reg(b, make([]byte, size), verbs.AccessRemoteRead)
	dst := cli.reg(b, make([]byte, size), verbs.AccessLocalWrite)
	wr := verbs.SendWR{Op: verbs.OpRead, SGL: []verbs.SGE{{MR: dst, Length: size}}, RemoteSTag: src.RKey(), RemoteTO: src.Addr()}
	wc := make([]verbs.Completion, 1)
	b.ReportAllocs()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wr.ID = uint64(i)
		wr.Flags = 0
		if i%depth == depth-1 || i == b.N-1 {
			wr.Flags = verbs.Signaled
		}
		if err := cli.qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		if wr.Flags != 0 {
			benchPoll(b, cli.cq, wc)
		}
	}
}

// BenchmarkRead1M measures 1 MiB RDMA Reads, 4 in flight: the Read Response
// arrives as FPDUs of up to one MSS, each placed straight into the sink.
func BenchmarkRead1M(b *testing.B) {
	const size, depth = 1 << 20, 4
	cli, srv := connectPair(b, pairConfig{depth: 2 * depth})
	src := srv.reg(b, make([]byte, size), verbs.AccessRemoteRead)
	dst := cli.reg(b, make([]byte, size), verbs.AccessLocalWrite)
	wr := verbs.SendWR{Op: verbs.OpRead, SGL: []verbs.SGE{{MR: dst, Length: size}}, RemoteSTag: src.RKey(), RemoteTO: src.Addr()}
	wc := make([]verbs.Completion, 1)
	reads := &cli.qp.(*queuePair).r.reads
	b.ReportAllocs()
	b.SetBytes(size)
	b.ResetTimer()
	r0, st0 := reads.Load(), cli.dev.Stats()
	for i := 0; i < b.N; i++ {
		wr.ID = uint64(i)
		wr.Flags = 0
		if i%depth == depth-1 || i == b.N-1 {
			wr.Flags = verbs.Signaled
		}
		if err := cli.qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		if wr.Flags != 0 {
			benchPoll(b, cli.cq, wc)
		}
	}
	b.ReportMetric(float64(reads.Load()-r0)/float64(b.N), "reads/op")
	st := cli.dev.Stats()
	b.ReportMetric(float64(st.ReadAheadPlaced-st0.ReadAheadPlaced)/float64(b.N), "ahead-placed-B/op")
	b.ReportMetric(float64(st.ReadAheadSpliced-st0.ReadAheadSpliced)/float64(b.N), "ahead-spliced-B/op")
}
