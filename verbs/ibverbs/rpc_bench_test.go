//go:build ibverbs && linux && cgo

package ibverbs

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// BenchmarkRPCNull measures an ONC RPC NULL call over RPC-over-RDMA (package
// rpcrdma) through the device, one call in flight, client and server in this
// process. With CQ polling (poll) the caller, alone on its connection,
// receives its reply itself (verbs.DirectProcessor); without (nopoll) it is
// woken by the CQ's event goroutine.
func BenchmarkRPCNull(b *testing.B) {
	for _, tc := range []struct {
		name   string
		cqPoll time.Duration
	}{{"poll", 0}, {"nopoll", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg, addr := testConfig(b)
			cfg.CQPoll = tc.cqPoll
			d := openTest(b, cfg)
			ctx := context.Background()
			ln, err := rpcrdma.Listen(ctx, d, addr+":0", nil)
			if err != nil {
				b.Fatal(err)
			}
			srv := oncrpc.NewServer(nil)
			srv.Register(0x20000001, 1, oncrpc.Procs{
				0: func(context.Context, *oncrpc.Request, *xdr.Encoder) error { return nil },
			})
			go srv.Serve(ln)
			defer srv.Close()
			tr, err := rpcrdma.Dial(ctx, d, ln.Addr().String(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			clnt := oncrpc.NewClient(tr, 0x20000001, 1)
			opts := oncrpc.CallOptions{MaxReply: 64}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := clnt.CallWithOptions(ctx, 0, nil, nil, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
