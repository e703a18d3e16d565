package rpcrdma

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// twoProcEnv names the environment variable that makes TestTwoProcessServer serve.
const twoProcEnv = "RPCRDMA_TWO_PROCESS_SERVER"

// TestTwoProcessServer is not a test: it is the server half of BenchmarkTwoProcess,
// run by it in a child process (this test binary again). It serves the benchmark
// program over RDMA on a loopback port, prints the address, and serves until its
// standard input closes.
func TestTwoProcessServer(t *testing.T) {
	if os.Getenv(twoProcEnv) == "" {
		t.Skip("the server half of BenchmarkTwoProcess, run by it")
	}
	dev := soft.New(soft.Config{})
	ln, err := Listen(context.Background(), dev, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := newBenchServer()
	go srv.Serve(ln)
	tln, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(tln)
	os.Stdout.WriteString("addr " + ln.Addr().String() + " " + tln.Addr().String() + "\n")
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

// BenchmarkTwoProcess measures calls at one call in flight with the server in another
// process, so that client and server do not share a Go scheduler (in the other
// benchmarks a goroutine one side readies can run on a thread the other side keeps
// busy, which is not how they meet outside a benchmark): NULL, answered where it
// arrives, and a 4 KiB reply (by write chunk over RDMA) from a worker goroutine, over
// RDMA (verbs/soft) and over oncrpc's TCP transport to the same server process, each
// without and with a per-try timeout.
//
//	go test -run '^$' -bench TwoProcess -benchtime 20000x -count 5 ./rpcrdma
func BenchmarkTwoProcess(b *testing.B) {
	_, out := startChild(b, "TestTwoProcessServer", twoProcEnv+"=1")
	var line string
	if out.Scan() {
		line = out.Text()
	}
	addrs := strings.Fields(strings.TrimPrefix(line, "addr "))
	if len(addrs) != 2 {
		b.Fatalf("server process: %q, %v", line, out.Err())
	}
	tr, err := Dial(context.Background(), soft.New(soft.Config{}), addrs[0], nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	ttr, err := oncrpc.DialTCP(context.Background(), addrs[1], nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ttr.Close() })
	for _, c := range []struct {
		name string
		rt   oncrpc.RoundTripper
	}{{"rdma-soft", tr}, {"oncrpc-tcp", ttr}} {
		b.Run(c.name, func(b *testing.B) { benchTwoProcess(b, oncrpc.NewClient(c.rt, tpProg, tpVers)) })
		// With a per-try timeout, as nfsclient's callers (the nfsrdma
		// commands' timeo) make every call.
		b.Run(c.name+"-timeo", func(b *testing.B) {
			benchTwoProcess(b, oncrpc.NewClient(c.rt, tpProg, tpVers, oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: time.Minute})))
		})
	}
}

// benchTwoProcess is BenchmarkTwoProcess on one transport.
func benchTwoProcess(b *testing.B, rpc *oncrpc.Client) {
	ctx := context.Background()
	b.Run("null", func(b *testing.B) {
		opts := oncrpc.CallOptions{MaxReply: 256}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read4k", func(b *testing.B) {
		sink := make([]byte, 4096)
		opts := oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: 1024}
		var res benchSink
		b.SetBytes(4096)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := rpc.CallWithOptions(ctx, tpSource, tpUint32(4096), &res, opts); err != nil {
				b.Fatal(err)
			}
			if res.n != 4096 {
				b.Fatalf("got %d bytes, want 4096", res.n)
			}
		}
	})
}
