package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A program that embeds an ONC RPC server exports its counters to Prometheus: the
// per-procedure table its ServerOptions.Observe fills, the server's totals and its
// listeners', read by a Collector at each scrape of the endpoint Serve starts.
func Example() {
	var stats oncrpc.ProcStats
	srv := oncrpc.NewServer(&oncrpc.ServerOptions{Observe: stats.Observe})
	srv.Register(100003, 3, oncrpc.Procs{
		0: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error { return nil },
	})
	ln, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)

	c := metrics.New()
	c.AddProcStats(&stats)
	c.AddServer(srv)
	c.AddListener(ln)
	ms, err := metrics.Serve("127.0.0.1:0", c, nil)
	if err != nil {
		panic(err)
	}
	defer ms.Stop()

	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, ln.Addr().String(), nil)
	if err != nil {
		panic(err)
	}
	client := oncrpc.NewClient(tr, 100003, 3)
	for range 2 {
		client.Call(ctx, 0, nil, nil)
	}
	tr.Close()
	srv.Shutdown(ctx) // every call answered: the counts are final

	resp, err := http.Get("http://" + ms.Addr().String() + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "rpcrdma_rpc_calls_total{") || strings.HasPrefix(line, "rpcrdma_transport_connections_accepted_total{") {
			fmt.Println(line)
		}
	}
	// Output:
	// rpcrdma_rpc_calls_total{outcome="success",procedure="null",program="nfs",transport="tcp",version="3"} 2
	// rpcrdma_transport_connections_accepted_total{transport="tcp"} 1
}
