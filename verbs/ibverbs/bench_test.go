//go:build ibverbs && linux && cgo

package ibverbs

import (
	"testing"

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
	cbuf, sbuf := make([]byte, 64), make([]byte, 64)
	cmr, err := cli.pd.RegMR(cbuf, verbs.AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer cmr.Close()
	smr, err := srv.pd.RegMR(sbuf, verbs.AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer smr.Close()
	crecv := verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: cmr, Length: 64}}}
	srecv := verbs.RecvWR{ID: 2, SGL: []verbs.SGE{{MR: smr, Length: 64}}}
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
