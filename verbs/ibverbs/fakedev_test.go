//go:build ibverbs && linux && cgo

package ibverbs

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// fakeRig is a connected queue pair on the fake device (fakedev.go): posts
// go through the provider's real path down to the device's post_send, and
// completions the test queues come back through ibv_poll_cq and Poll.
type fakeRig struct {
	dev *fakeDev
	d   *Device
	q   *queuePair
	cq  *compQueue // send and receive CQ
	mr  *memRegion // a local-write region for RDMA Read sinks
}

// newFakeRig creates, with CreateQP, a queue pair of MaxSendWR sqDepth on
// an InfiniBand fake device, connected with ORD 4.
func newFakeRig(t *testing.T, sqDepth int) *fakeRig {
	t.Helper()
	fd, err := newFakeDev()
	if err != nil {
		t.Fatal(err)
	}
	d := fd.device(false)
	pd := &protDomain{dev: d}
	c := fd.cq(d, 1024)
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: c, RecvCQ: c, MaxSendWR: sqDepth, MaxRecvWR: 4})
	if err != nil {
		fd.freeCQ(c)
		fd.free()
		t.Fatal(err)
	}
	q := qp.(*queuePair)
	fd.connect(q, 4)
	r := &fakeRig{dev: fd, d: d, q: q, cq: c, mr: fd.mr(pd, make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)}
	t.Cleanup(func() {
		q.Close()
		fd.freeCQ(c)
		fd.free()
	})
	return r
}

// read and send are signalled work requests.
func (r *fakeRig) read(id uint64) verbs.SendWR {
	return verbs.SendWR{ID: id, Op: verbs.OpRead, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: r.mr, Length: 64}}, RemoteSTag: 0x33, RemoteTO: 0x1000}
}

func (r *fakeRig) send(id uint64) verbs.SendWR {
	return verbs.SendWR{ID: id, Op: verbs.OpSend, Flags: verbs.Signaled}
}

// complete has the device complete the send request the provider posted as
// sequence number seq (its wr_id), successfully or flushed.
func (r *fakeRig) complete(t *testing.T, seq uint64, flushed bool) {
	t.Helper()
	if err := r.dev.complete(seq|sendBit, flushed); err != nil {
		t.Fatal(err)
	}
}

// poll returns every completion Poll has now.
func (r *fakeRig) poll(t *testing.T) []verbs.Completion {
	t.Helper()
	var out []verbs.Completion
	wc := make([]verbs.Completion, 16)
	for {
		n, err := r.cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		out = append(out, wc[:n]...)
	}
}

// countID counts the completions of request id in wcs.
func countID(wcs []verbs.Completion, id uint64) int {
	n := 0
	for _, wc := range wcs {
		if wc.ID == id {
			n++
		}
	}
	return n
}
