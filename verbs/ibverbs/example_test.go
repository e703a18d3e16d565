//go:build ibverbs && linux && cgo

package ibverbs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/ibverbs"
)

// ExampleOpen opens the RDMA device behind an IP address and tells the
// common setup problems apart.
func ExampleOpen() {
	dev, err := ibverbs.Open(ibverbs.Config{Addr: "10.0.2.15"})
	var down *ibverbs.PortDownError
	switch {
	case errors.Is(err, ibverbs.ErrNoDevice):
		log.Fatalf("no RDMA device: %v", err) // the message says how to create one
	case errors.As(err, &down):
		log.Fatalf("port %d of %s is %s", down.Port, down.Device, down.State)
	case err != nil:
		log.Fatal(err)
	}
	defer dev.Close()
	fmt.Println(dev.Name(), "iWARP:", dev.IWARP(), "max QP WRs:", dev.Attr().MaxQPWR)
}

// ExampleBatchPoster posts a batch of RDMA Writes with one cgo call; only
// the last one asks for a completion.
func ExampleBatchPoster() {
	dev, err := ibverbs.Open(ibverbs.Config{Name: "rxe0"})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pd, _ := dev.AllocPD()
	defer pd.Close()
	cq, _ := dev.CreateCQ(64)
	defer cq.Close()
	qp, _ := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 32, MaxRecvWR: 32})
	defer qp.Close()
	if _, err := dev.Dial(ctx, "10.0.2.15:7471", qp, verbs.ConnParams{}); err != nil {
		log.Fatal(err)
	}
	src := make([]byte, 16*4096)
	mr, err := pd.RegMR(src, 0)
	if err != nil {
		var ml *ibverbs.MemlockError
		if errors.As(err, &ml) {
			log.Fatalf("raise RLIMIT_MEMLOCK (now %d bytes): %v", ml.Limit, err)
		}
		log.Fatal(err)
	}
	defer mr.Close()
	const peerSTag, peerTO = 0x1234, 0x7f0000000000 // from the peer, e.g. in a Send
	wrs := make([]verbs.SendWR, 16)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: mr, Offset: i * 4096, Length: 4096}},
			RemoteSTag: peerSTag, RemoteTO: peerTO + uint64(i*4096)}
	}
	wrs[15].Flags = verbs.Signaled
	if _, err := qp.(ibverbs.BatchPoster).PostSendBatch(wrs); err != nil {
		log.Fatal(err)
	}
	if err := cq.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	var wc [1]verbs.Completion
	n, _ := cq.Poll(wc[:])
	fmt.Println(n, wc[0].Status)
}
