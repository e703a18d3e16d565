package oncrpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A server that calls back into its client during a call: the handler finds the
// connection's reverse direction through req.Conn, and the client serves the callback
// program with the handler given in TCPOptions.Backchannel (rpcrdma.ClientOptions takes
// the same over RDMA).
func ExampleBackchannelConn() {
	const cbProg, cbVers, cbProc = 0x40000000, 1, 1

	srv := oncrpc.NewServer(nil)
	srv.Register(echoProg, echoVers, oncrpc.Procs{
		echoProc: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var m message
			if err := m.DecodeXDR(req.Args); err != nil {
				return err
			}
			bc, ok := req.Conn.(oncrpc.BackchannelConn)
			if !ok {
				return errors.New("no reverse direction on this transport")
			}
			rt, err := bc.Backchannel()
			if err != nil {
				return err
			}
			var answer message
			if err := oncrpc.NewClient(rt, cbProg, cbVers).Call(ctx, cbProc, &m, &answer); err != nil {
				return fmt.Errorf("callback: %v", err)
			}
			answer.EncodeXDR(res)
			return nil
		},
	})
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	// The client's callback program.
	callbacks := oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		if req.Header.Prog != cbProg || req.Header.Vers != cbVers || req.Header.Proc != cbProc {
			return &oncrpc.AcceptError{Stat: oncrpc.ProgUnavail}
		}
		var m message
		if err := m.DecodeXDR(req.Args); err != nil {
			return err
		}
		m.text = "called back with " + m.text
		m.EncodeXDR(res)
		return nil
	})
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, l.Addr().String(), &oncrpc.TCPOptions{
		Backchannel: &oncrpc.BackchannelOptions{Handler: callbacks, MaxRequests: 4},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	var res message
	if err := oncrpc.NewClient(tr, echoProg, echoVers).Call(ctx, echoProc, &message{"hello"}, &res); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.text)
	fmt.Println("reverse calls served:", tr.Stats().ReverseCalls)
	// Output:
	// called back with hello
	// reverse calls served: 1
}
