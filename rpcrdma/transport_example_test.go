package rpcrdma_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

type square uint32

func (v square) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(v)) }
func (v *square) DecodeXDR(d *xdr.Decoder) error {
	x, err := d.Uint32()
	*v = square(x)
	return err
}

// An ONC RPC program served and called over RPC-over-RDMA with the software iWARP
// provider: Listen gives an oncrpc.Listener, Dial an oncrpc.RoundTripper.
func Example() {
	ctx := context.Background()
	dev := soft.New(soft.Config{})

	ln, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	srv.Register(0x20000001, 1, oncrpc.Procs{
		1: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			x, err := req.Args.Uint32()
			if err != nil {
				return err
			}
			res.Uint32(x * x)
			return nil
		},
	})
	go srv.Serve(ln)
	defer srv.Close()

	tr, err := rpcrdma.Dial(ctx, dev, ln.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	clnt := oncrpc.NewClient(tr, 0x20000001, 1)
	var res square
	if err := clnt.CallWithOptions(ctx, 1, square(12), &res, oncrpc.CallOptions{MaxReply: 64}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res, ln.Addr().Network(), tr.Limits().InlineSend)
	// Output: 144 rdma 5120
}

// Bulk data marked DDP-eligible with xdr.Encoder.Payload travels as a read chunk when
// it does not fit inline; results land in the caller's ReplySinks through write chunks.
func ExampleClient_RoundTrip() {
	ctx := context.Background()
	dev := soft.New(soft.Config{})
	ln, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	srv.Register(0x20000002, 1, oncrpc.Procs{
		1: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			data, err := req.Args.Payload(-1) // pulled by RDMA Read, already in place
			if err != nil {
				return err
			}
			res.Payload(data) // RDMA-Written into the caller's sink
			return nil
		},
	})
	go srv.Serve(ln)
	defer srv.Close()
	tr, err := rpcrdma.Dial(ctx, dev, ln.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()

	data := make([]byte, 100000)
	data[99999] = 42
	var enc xdr.Encoder
	(&oncrpc.CallHeader{XID: 1, Prog: 0x20000002, Vers: 1, Proc: 1}).EncodeXDR(&enc)
	enc.Payload(data)
	sink := make([]byte, len(data))
	call := &oncrpc.ClientCall{XID: 1, Msg: oncrpc.Message{Inline: enc.Bytes(), Payloads: enc.Payloads()},
		ReplySinks: [][]byte{sink}, MaxReply: 1024}
	var reply oncrpc.ClientReply
	if err := tr.RoundTrip(ctx, call, &reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(reply.Placed[0]), sink[99999])
	// Output: 100000 42
}

// RFC 8797 private data as exchanged in the connection setup.
func ExampleConnPrivate() {
	b := rpcrdma.ConnPrivate{SendInvOK: true, SendSize: 4096, RecvSize: 4096}.Append(nil)
	fmt.Printf("% x\n", b)
	p, _ := rpcrdma.PeerPrivate(nil) // no private data: the RFC 8166 defaults
	fmt.Println(p.SendSize, p.RecvSize)
	// Output:
	// f6 ab 0e 18 01 01 03 03
	// 1024 1024
}
