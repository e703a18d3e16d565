//go:build ibverbs && linux && cgo

package ibverbs

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

const benchBatch = 16

// BenchmarkWrite64Batched posts 16 RDMA Writes of 64 bytes with one cgo
// call (PostSendBatch, the last one signalled) and waits for the
// completion: the per-request cost of the batched data path.
func BenchmarkWrite64Batched(b *testing.B) {
	cli, srv, _ := pair(b, 2*benchBatch)
	src, err := cli.pd.RegMR(make([]byte, 64), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := srv.pd.RegMR(make([]byte, 64), verbs.AccessRemoteWrite|verbs.AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Close()
	wrs := make([]verbs.SendWR, benchBatch)
	sgl := []verbs.SGE{{MR: src, Length: 64}}
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Op: verbs.OpWrite, SGL: sgl, RemoteSTag: dst.RKey(), RemoteTO: dst.Addr()}
	}
	wrs[benchBatch-1].Flags = verbs.Signaled
	bp := cli.qp.(BatchPoster)
	wc := make([]verbs.Completion, 4)
	b.ReportAllocs()
	b.SetBytes(64 * benchBatch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := bp.PostSendBatch(wrs); err != nil {
			b.Fatal(err)
		}
		drain(b, cli.cq, wc, 1)
	}
}

// BenchmarkWrite64Single is the same with one PostSend (one cgo call) per
// request.
func BenchmarkWrite64Single(b *testing.B) {
	cli, srv, _ := pair(b, 2*benchBatch)
	src, err := cli.pd.RegMR(make([]byte, 64), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := srv.pd.RegMR(make([]byte, 64), verbs.AccessRemoteWrite|verbs.AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Close()
	wr := verbs.SendWR{Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: src, Length: 64}}, RemoteSTag: dst.RKey(), RemoteTO: dst.Addr()}
	wc := make([]verbs.Completion, 4)
	b.ReportAllocs()
	b.SetBytes(64 * benchBatch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < benchBatch; j++ {
			wr.ID = uint64(j)
			wr.Flags = 0
			if j == benchBatch-1 {
				wr.Flags = verbs.Signaled
			}
			if err := cli.qp.PostSend(&wr); err != nil {
				b.Fatal(err)
			}
		}
		drain(b, cli.cq, wc, 1)
	}
}

// BenchmarkSendRecv measures a 64-byte Send/Recv round trip (ping-pong)
// through the device, receives reposted in steady state.
func BenchmarkSendRecv(b *testing.B) {
	cli, srv, _ := pair(b, 8)
	cmr, smr, crecv, srecv := pingMRs(b, cli, srv)
	csend := verbs.SendWR{ID: 3, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: cmr, Length: 64}}}
	ssend := verbs.SendWR{ID: 4, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Length: 64}}}
	wc := make([]verbs.Completion, 4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := srv.qp.PostRecv(&srecv); err != nil {
			b.Fatal(err)
		}
		if err := cli.qp.PostRecv(&crecv); err != nil {
			b.Fatal(err)
		}
		// Signal every send so the queues retire each round.
		csend.Flags, ssend.Flags = verbs.Signaled, verbs.Signaled
		if err := cli.qp.PostSend(&csend); err != nil {
			b.Fatal(err)
		}
		drain(b, srv.cq, wc, 1) // server receive
		if err := srv.qp.PostSend(&ssend); err != nil {
			b.Fatal(err)
		}
		drain(b, srv.cq, wc, 1) // server send
		drain(b, cli.cq, wc, 2) // client send + receive
	}
}

// BenchmarkSendRecvHandler measures a 64-byte Send/Recv round trip between CQs
// with handlers, the server echoing from its handler, as rpcrdma uses them:
// the client waits for the handler's signal (wait), or receives its reply
// itself with verbs.DirectProcessor and waits only when that returns without
// it (direct).
func BenchmarkSendRecvHandler(b *testing.B) {
	for _, direct := range []bool{false, true} {
		name := "wait"
		if direct {
			name = "direct"
		}
		b.Run(name, func(b *testing.B) { benchSendRecvHandler(b, direct) })
	}
}

func benchSendRecvHandler(b *testing.B, direct bool) {
	var cli, srv *bend
	var crecv, srecv verbs.RecvWR
	var reply verbs.SendWR
	var got atomic.Uint64
	signal := make(chan struct{}, 1)
	var failed atomic.Value // the first failure a handler met, for the hang guard's message
	fail := func(format string, args ...any) { failed.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	post := func(err error) {
		if err != nil {
			fail("post from the handler: %v", err)
		}
	}
	cliH := func(wc *verbs.Completion) {
		switch {
		case wc.Status != verbs.StatusSuccess:
			fail("client completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
		case wc.Opcode == verbs.OpcodeRecv:
			post(cli.qp.PostRecv(&crecv))
			got.Add(1)
			select {
			case signal <- struct{}{}:
			default:
			}
		}
	}
	srvH := func(wc *verbs.Completion) {
		switch {
		case wc.Status != verbs.StatusSuccess:
			fail("server completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
		case wc.Opcode == verbs.OpcodeRecv:
			post(srv.qp.PostRecv(&srecv))
			post(srv.qp.PostSend(&reply))
		}
	}
	cli, srv, _ = pairOpts(b, 8, []verbs.CQOption{verbs.WithHandler(cliH)}, []verbs.CQOption{verbs.WithHandler(srvH)})
	var cmr, smr verbs.MR
	cmr, smr, crecv, srecv = pingMRs(b, cli, srv)
	reply = verbs.SendWR{ID: 4, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Length: 64}}, Flags: verbs.Signaled}
	ping := verbs.SendWR{ID: 3, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: cmr, Length: 64}}, Flags: verbs.Signaled}
	for i := 0; i < 4; i++ {
		if err := srv.qp.PostRecv(&srecv); err != nil {
			b.Fatal(err)
		}
		if err := cli.qp.PostRecv(&crecv); err != nil {
			b.Fatal(err)
		}
	}
	d := cli.qp.(verbs.DirectProcessor)
	inDirect := 0
	guard := time.NewTimer(time.Hour) // a hang guard for each wait, not a timing
	guard.Stop()
	var want uint64
	replied := func() bool { return got.Load() >= want }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		want = uint64(i + 1)
		if err := cli.qp.PostSend(&ping); err != nil {
			b.Fatal(err)
		}
		if direct && d.ProcessDirect(replied, time.Time{}) {
			inDirect++
		} else {
			if direct {
				d.Resume()
			}
			for got.Load() < want {
				guard.Reset(10 * time.Second)
				select {
				case <-signal:
				case <-guard.C:
					b.Fatalf("no reply %d: %v", i, failed.Load())
				}
				guard.Stop()
			}
		}
		select {
		case <-signal: // the handler's signal for a reply already counted
		default:
		}
	}
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	b.ReportMetric(float64(inDirect)/float64(b.N), "direct/op")
}

// pingMRs registers a 64-byte buffer at each end (closed when b ends) and
// returns them with a receive of 64 bytes into each (IDs 1 and 2).
func pingMRs(b *testing.B, cli, srv *bend) (cmr, smr verbs.MR, crecv, srecv verbs.RecvWR) {
	b.Helper()
	for _, e := range []struct {
		end *bend
		mr  *verbs.MR
	}{{cli, &cmr}, {srv, &smr}} {
		mr, err := e.end.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { mr.Close() })
		*e.mr = mr
	}
	crecv = verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: cmr, Length: 64}}}
	srecv = verbs.RecvWR{ID: 2, SGL: []verbs.SGE{{MR: smr, Length: 64}}}
	return cmr, smr, crecv, srecv
}
