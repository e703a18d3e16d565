package soft_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// ExampleNew configures two devices for MPA CRC and the peer-to-peer model
// (the initiator sends a zero-length RDMA Write as its ready-to-receive
// frame), so the accepting side may send first.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	server := soft.New(soft.Config{Name: "server"})
	client := soft.New(soft.Config{Name: "client", CRC: true, P2P: soft.RTRWrite})

	ln, err := server.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	newQP := func(d verbs.Device) (verbs.PD, verbs.CQ, verbs.QP) {
		pd, _ := d.AllocPD()
		cq, _ := d.CreateCQ(8)
		qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4})
		if err != nil {
			log.Fatal(err)
		}
		return pd, cq, qp
	}
	spd, _, sqp := newQP(server)
	defer sqp.Close()
	cpd, ccq, cqp := newQP(client)
	defer cqp.Close()

	inbox := make([]byte, 32)
	imr, _ := cpd.RegMR(inbox, verbs.AccessLocalWrite)
	defer imr.Close()
	cqp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: imr, Length: len(inbox)}}})

	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		if _, err := req.Accept(ctx, sqp, verbs.ConnParams{}); err != nil {
			return
		}
		// The server speaks first: allowed because the client asked for
		// the peer-to-peer model.
		hello := []byte("server hello")
		mr, _ := spd.RegMR(hello, 0)
		sqp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: mr, Length: len(hello)}}})
	}()
	info, err := client.Dial(ctx, ln.Addr().String(), cqp, verbs.ConnParams{IRD: 4, ORD: 4})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("IRD", info.IRD, "ORD", info.ORD)
	wc, err := verbs.NextCompletion(ctx, ccq)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%v %q\n", wc.Status, inbox[:wc.ByteLen])
	// Output:
	// IRD 4 ORD 4
	// Success "server hello"
}
