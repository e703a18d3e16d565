package oncrpc_test

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A ProcStats counts a server's calls per procedure and transport, by outcome, with
// a latency histogram: give its Observe to ServerOptions.Observe. Calls to
// procedures the server does not serve are counted together under OtherProc.
func ExampleProcStats() {
	var stats oncrpc.ProcStats
	srv := oncrpc.NewServer(&oncrpc.ServerOptions{Observe: stats.Observe})
	srv.Register(0x20000099, 1, oncrpc.Procs{
		0: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error { return nil },
	})
	ctx := context.Background()
	tr := serveAndDial(ctx, srv)
	defer tr.Close()
	c := oncrpc.NewClient(tr, 0x20000099, 1)
	for range 3 {
		c.Call(ctx, 0, nil, nil)
	}
	c.Call(ctx, 7, nil, nil) // no such procedure
	srv.Shutdown(ctx)        // every call answered: the counts are final

	stats.Each(func(k oncrpc.ProcKey, pc *oncrpc.ProcCounters) {
		name := fmt.Sprintf("proc %d over %s", k.Proc, k.Netid)
		if k == oncrpc.OtherProc {
			name = "other"
		}
		for o, n := range pc.Outcomes {
			if n > 0 {
				fmt.Printf("%s: %d %v\n", name, n, oncrpc.Outcome(o))
			}
		}
	})
	// Unordered output:
	// proc 0 over tcp: 3 success
	// other: 1 proc_unavail
}
