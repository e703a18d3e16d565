package confproto_test

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// printConn stands for an RPC-over-RDMA connection: it implements
// confproto.Configurable.
type printConn struct{}

func (printConn) SetInlineThresholds(send, recv int) {
	fmt.Printf("inline send %d, recv %d\n", send, recv)
}

func (printConn) SetMaxRDMARead(n int) { fmt.Printf("max RDMA Reads %d\n", n) }

// A server offers CONF_RDMA with its limits; a client negotiates and applies the
// outcome to its connection. Here the transport is TCP on loopback; over RDMA the
// code is the same with the rpcrdma transport's Listener and RoundTripper.
func ExampleNegotiateAndApply() {
	svc, err := confproto.NewService(&confproto.ServiceOptions{
		Limits: &confproto.Limits{MaxCallSendSize: 8192, MaxReplySendSize: 8192, Align: 4096, MaxRDMARead: 16},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := oncrpc.NewServer(nil)
	svc.Register(srv)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	go srv.Serve(l)
	defer srv.Close()

	ctx := context.Background()
	t, err := oncrpc.DialTCP(ctx, l.Addr().String(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	want := confproto.ConfigRDMAReq{MaxCallSendSize: 65536, MaxReplySendSize: 4096, MaxRDMARead: 8}
	s, err := confproto.NegotiateAndApply(ctx, confproto.NewClient(t), want, printConn{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", s)
	// Output:
	// inline send 8192, recv 4096
	// max RDMA Reads 16
	// {InlineSend:8192 InlineRecv:4096 MaxRDMARead:16 Align:4096 NoReadTarget:false}
}

// DecodeCall is what the service applies to a CONF_RDMA call's arguments; its errors
// name the field.
func ExampleDecodeCall() {
	_, err := confproto.DecodeCall([]byte{0, 0, 0x02, 0, 0, 0, 0x10, 0, 0, 0, 0, 8})
	fmt.Println(err)
	// Output:
	// confproto: config_rdma_req.maxcall_sendsize = 512: below the 1024-byte size every peer supports (seed §6.1)
}
