package rpcrdma

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// BenchmarkTransportConns4K measures how 4 KiB reads scale with connections: conns
// clients of one server, each with one call outstanding (qd1), each call returning a
// 4 KiB payload for a reply sink, as an NFS READ does (inline over both transports:
// the call's MaxReply fits DefaultReplyInline, so planCall offers no write chunk).
// calls/s is the aggregate rate; cpu-ns/call the process's CPU time (user + system,
// client and server together) per call, which contention from other processes on the
// machine disturbs less than the rate; switches/call its threads' context switches per
// call. Compare the transports row by row, in the same run:
//
//	go test -run '^$' -bench 'TransportConns4K' -benchtime 20000x -count 5 ./rpcrdma
func BenchmarkTransportConns4K(b *testing.B) {
	for _, tc := range benchTransports {
		for _, conns := range scaleConns {
			b.Run(fmt.Sprintf("%s/conns=%d", tc.name, conns), func(b *testing.B) {
				benchConns4K(b, tc.server(b), conns, nil)
			})
		}
	}
}

// scaleConns are the connection counts of the scaling benchmarks.
var scaleConns = []int{1, 2, 4, 8, 16, 32, 64}

// benchConns4K is a BenchmarkTransportConns4K row: conns clients from dial, each with
// one call outstanding. serverCPU, when not nil, returns the CPU time of a server in
// another process, reported as server-cpu-ns/call.
func benchConns4K(b *testing.B, dial func() *oncrpc.Client, conns int, serverCPU func() time.Duration) {
	ctx := context.Background()
	rpcs := make([]*oncrpc.Client, conns)
	for i := range rpcs {
		rpcs[i] = dial()
	}
	var left atomic.Int64
	var wg sync.WaitGroup
	run := func(n int64) {
		left.Store(n)
		for _, rpc := range rpcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sink := make([]byte, 4096)
				var res benchSink
				opts := oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: 4096 + 256}
				for left.Add(-1) >= 0 {
					if err := rpc.CallWithOptions(ctx, tpSource, tpUint32(4096), &res, opts); err != nil {
						b.Error(err)
						return
					}
					if res.n != 4096 {
						b.Errorf("got %d bytes, want 4096", res.n)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run(int64(2 * conns)) // every connection warmed up
	b.SetBytes(4096)
	b.ReportAllocs()
	var srv0 time.Duration
	if serverCPU != nil {
		srv0 = serverCPU()
	}
	cpu0, sw0 := benchio.ProcessCPU(), benchio.ProcessSwitches()
	b.ResetTimer()
	run(int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(float64((benchio.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/call")
	b.ReportMetric(float64(benchio.ProcessSwitches()-sw0)/float64(b.N), "switches/call")
	if serverCPU != nil {
		b.ReportMetric(float64((serverCPU()-srv0).Nanoseconds())/float64(b.N), "server-cpu-ns/call")
	}
}
