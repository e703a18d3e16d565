package verbs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// waitOne blocks until cq yields one completion.
func waitOne(ctx context.Context, cq verbs.CQ) verbs.Completion {
	wc, err := verbs.NextCompletion(ctx, cq)
	if err != nil {
		log.Fatal(err)
	}
	return wc
}

// Example shows the whole life of a connection: a server posts a receive and
// accepts, a client dials with private data, registers memory, and sends;
// then the client RDMA-Writes into memory the server exposed and reads it
// back.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var dev verbs.Device = soft.New(soft.Config{})

	// Server side.
	ln, err := dev.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	spd, _ := dev.AllocPD()
	scq, _ := dev.CreateCQ(16)
	sqp, _ := spd.CreateQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq, MaxSendWR: 8, MaxRecvWR: 8})
	defer sqp.Close()
	inbox := make([]byte, 64)
	inboxMR, _ := spd.RegMR(inbox, verbs.AccessLocalWrite)
	defer inboxMR.Close()
	exposed := make([]byte, 32)
	exposedMR, _ := spd.RegMR(exposed, verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	defer exposedMR.Close()
	// Receives may be posted before the connection exists.
	if err := sqp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: inboxMR, Length: len(inbox)}}}); err != nil {
		log.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		fmt.Printf("server: request with private data %q\n", req.PrivateData())
		_, err = req.Accept(ctx, sqp, verbs.ConnParams{PrivateData: []byte("welcome")})
		accepted <- err
	}()

	// Client side.
	cpd, _ := dev.AllocPD()
	ccq, _ := dev.CreateCQ(16)
	cqp, _ := cpd.CreateQP(verbs.QPConfig{SendCQ: ccq, RecvCQ: ccq, MaxSendWR: 8, MaxRecvWR: 8})
	defer cqp.Close()
	info, err := dev.Dial(ctx, ln.Addr().String(), cqp, verbs.ConnParams{PrivateData: []byte("hello")})
	if err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}
	fmt.Printf("client: connected, reply private data %q\n", info.PrivateData)

	out := []byte("a Send message")
	outMR, _ := cpd.RegMR(out, 0)
	defer outMR.Close()
	cqp.PostSend(&verbs.SendWR{ID: 10, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: outMR, Length: len(out)}}})
	wc := waitOne(ctx, ccq)
	fmt.Printf("client: %v completion %v\n", wc.Opcode, wc.Status)
	wc = waitOne(ctx, scq)
	fmt.Printf("server: %v %q\n", wc.Opcode, inbox[:wc.ByteLen])

	// RDMA Write into the exposed region (STag and TO would normally travel
	// in a Send), then RDMA Read it back.
	back := make([]byte, len(out))
	backMR, _ := cpd.RegMR(back, verbs.AccessLocalWrite)
	defer backMR.Close()
	cqp.PostSend(&verbs.SendWR{ID: 11, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: outMR, Length: len(out)}},
		RemoteSTag: exposedMR.RKey(), RemoteTO: exposedMR.Addr()})
	cqp.PostSend(&verbs.SendWR{ID: 12, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: backMR, Length: len(back)}},
		RemoteSTag: exposedMR.RKey(), RemoteTO: exposedMR.Addr()})
	wc = waitOne(ctx, ccq) // the Write was unsignalled: only the Read completes
	fmt.Printf("client: %v of %d bytes: %q\n", wc.Opcode, wc.ByteLen, back)
	// Output:
	// server: request with private data "hello"
	// client: connected, reply private data "welcome"
	// client: Send completion Success
	// server: Recv "a Send message"
	// client: Read of 14 bytes: "a Send message"
}

// ExampleMR shows STag key rotation: invalidation and re-registration give
// the same region a new STag, and the old one never matches again.
func ExampleMR() {
	dev := soft.New(soft.Config{})
	pd, _ := dev.AllocPD()
	mr, err := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	old := mr.RKey()
	mr.Invalidate()
	fmt.Println("valid after Invalidate:", mr.Valid())
	mr.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteRead)
	fmt.Println("valid after Reregister:", mr.Valid())
	fmt.Println("same index:", old>>8 == mr.RKey()>>8, "new key:", old != mr.RKey())
	fmt.Println("access:", mr.Access())
	// Output:
	// valid after Invalidate: false
	// valid after Reregister: true
	// same index: true new key: true
	// access: LocalWrite|RemoteRead
}

// ExampleRejectedError shows a server refusing a connection with private
// data, and the client inspecting it.
func ExampleRejectedError() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	ln, err := dev.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if req, err := ln.Accept(ctx); err == nil {
			req.Reject([]byte("busy"))
		}
	}()
	pd, _ := dev.AllocPD()
	cq, _ := dev.CreateCQ(4)
	qp, _ := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1, MaxRecvWR: 1})
	defer qp.Close()
	_, err = dev.Dial(ctx, ln.Addr().String(), qp, verbs.ConnParams{})
	var rej *verbs.RejectedError
	if errors.As(err, &rej) {
		fmt.Printf("rejected: %q; QP back in %v\n", rej.PrivateData, qp.State())
	}
	// Output:
	// rejected: "busy"; QP back in Init
}
