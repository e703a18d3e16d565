package rpcrdma

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/benchproc"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// twoProcEnv names the environment variable that makes TestTwoProcessServer serve.
const twoProcEnv = "RPCRDMA_TWO_PROCESS_SERVER"

// TestTwoProcessServer is not a test: it is the server half of BenchmarkTwoProcess
// and BenchmarkTwoProcessConns4K, run by startTwoProcessServer in a child process
// (this test binary again). It serves the benchmark program over RDMA and over TCP on
// loopback ports, prints "addr RDMA TCP", and serves until its standard input closes,
// answering "cpu" (benchproc.Serve).
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
	benchproc.Serve(os.Stdin, os.Stdout, nil)
	srv.Close()
	dev.Close()
}

// twoProcessServer is a TestTwoProcessServer process: its listeners' addresses, and
// the process itself (Child.CPU).
type twoProcessServer struct {
	rdma, tcp string
	*benchproc.Child
}

// startTwoProcessServer starts a TestTwoProcessServer process that ends with b.
func startTwoProcessServer(b testing.TB) *twoProcessServer {
	c := benchproc.Start(b, "TestTwoProcessServer", twoProcEnv+"=1")
	addrs := c.Line("addr")
	if len(addrs) != 2 {
		b.Fatalf("server process: addr line %q", addrs)
	}
	return &twoProcessServer{rdma: addrs[0], tcp: addrs[1], Child: c}
}

// dial connects a client of the benchmark program to s over RDMA (a soft device of
// its own, dev) or, when dev is nil, over TCP; the connection ends with b.
func (s *twoProcessServer) dial(b testing.TB, dev *soft.Device) *oncrpc.Client {
	var rt oncrpc.RoundTripper
	if dev != nil {
		tr, err := Dial(context.Background(), dev, s.rdma, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close() })
		rt = tr
	} else {
		tr, err := oncrpc.DialTCP(context.Background(), s.tcp, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close() })
		rt = tr
	}
	return oncrpc.NewClient(rt, tpProg, tpVers)
}

// The two-process benchmarks' server process answers over both transports and tells
// its CPU time, which grows as it serves.
func TestTwoProcessServerServes(t *testing.T) {
	if os.Getenv(twoProcEnv) != "" {
		t.Skip("in the server process")
	}
	srv := startTwoProcessServer(t)
	dev := soft.New(soft.Config{})
	t.Cleanup(func() { dev.Close() })
	cpu0 := srv.CPU()
	for _, rpc := range []*oncrpc.Client{srv.dial(t, dev), srv.dial(t, nil)} {
		for range 200 {
			if err := rpc.Call(context.Background(), tpNull, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cpu1 := srv.CPU(); cpu1 <= cpu0 {
		t.Fatalf("server process CPU time %v, then %v after 400 calls", cpu0, cpu1)
	}
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
	srv := startTwoProcessServer(b)
	dev := soft.New(soft.Config{})
	b.Cleanup(func() { dev.Close() })
	rdma, tcp := srv.dial(b, dev), srv.dial(b, nil)
	for _, c := range []struct {
		name string
		rpc  *oncrpc.Client
	}{{"rdma-soft", rdma}, {"oncrpc-tcp", tcp}} {
		b.Run(c.name, func(b *testing.B) { benchTwoProcess(b, c.rpc) })
		// With a per-try timeout, as nfsclient's callers (the nfsrdma
		// commands' timeo) make every call.
		b.Run(c.name+"-timeo", func(b *testing.B) {
			benchTwoProcess(b, oncrpc.NewClient(c.rpc.Transport(), tpProg, tpVers, oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: time.Minute})))
		})
	}
}

// BenchmarkTwoProcessConns4K is BenchmarkTransportConns4K with the server in another
// process (TestTwoProcessServer, a new one for every row), as BenchmarkTwoProcess
// runs it: cpu-ns/call and switches/call then count the clients' process only, and
// server-cpu-ns/call the server's.
//
//	go test -run '^$' -bench 'TwoProcessConns4K' -benchtime 20000x -count 5 ./rpcrdma
func BenchmarkTwoProcessConns4K(b *testing.B) {
	for _, rdma := range []bool{true, false} {
		name := "oncrpc-tcp"
		if rdma {
			name = "rdma-soft"
		}
		for _, conns := range scaleConns {
			b.Run(fmt.Sprintf("%s/conns=%d", name, conns), func(b *testing.B) {
				srv := startTwoProcessServer(b)
				var dev *soft.Device
				if rdma {
					dev = soft.New(soft.Config{})
					b.Cleanup(func() { dev.Close() })
				}
				benchConns4K(b, func() *oncrpc.Client { return srv.dial(b, dev) }, conns, srv.CPU)
			})
		}
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
