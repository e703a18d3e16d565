package rpcrdma

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/benchproc"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// idleServerEnv names the transport a re-executed test binary serves (see
// TestIdleServerProcess).
const idleServerEnv = "RPCRDMA_IDLE_SERVER"

// idleHeapProfileEnv, when set in the benchmark's environment, names a file the server
// process writes its heap profile to at every measurement (the last one wins: with
// -benchtime 1x, the server holding idleConns idle connections of the last transport).
const idleHeapProfileEnv = "RPCRDMA_IDLE_HEAPPROFILE"

// idleConns is how many idle connections one round of BenchmarkServerIdleConnMemory
// opens.
const idleConns = 64

// BenchmarkServerIdleConnMemory measures what an idle connection costs the server: a
// server runs in a child process (so that the client's memory is not counted); each
// round opens idleConns connections to it, makes one NULL call on each, then reads the
// server's runtime.MemStats (after GC) and RSS and reports the growth per connection
// against the same server before the round:
//
//	heap-B/conn   HeapInuse growth (Go heap, including the provider's and the
//	              registered buffers)
//	stack-B/conn  StackInuse growth (goroutines per connection)
//	rss-B/conn    VmRSS growth (pages actually touched)
//
// Run it as
//
//	go test -run '^$' -bench ServerIdleConnMemory -benchtime 100x ./rpcrdma
//
// (with a few rounds the figures swing by several KB with the collector's timing;
// a hundred steady them).
func BenchmarkServerIdleConnMemory(b *testing.B) {
	for _, tr := range []string{"rdma-soft", "oncrpc-tcp"} {
		tr := tr
		b.Run(tr, func(b *testing.B) {
			srv := startIdleServer(b, tr)
			var heap, stack, rss float64
			for i := 0; i < b.N; i++ {
				before := srv.measure(b)
				closeAll := srv.openIdle(b, idleConns)
				after := srv.measure(b)
				closeAll()
				heap += float64(after.heap-before.heap) / idleConns
				stack += float64(after.stack-before.stack) / idleConns
				rss += float64(after.rss-before.rss) / idleConns
			}
			b.ReportMetric(heap/float64(b.N), "heap-B/conn")
			b.ReportMetric(stack/float64(b.N), "stack-B/conn")
			b.ReportMetric(rss/float64(b.N), "rss-B/conn")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// idleServer is the child process serving tpProg.
type idleServer struct {
	transport string
	addr      string
	child     *benchproc.Child
}

type memSample struct{ heap, stack, rss int64 }

func startIdleServer(b *testing.B, transport string) *idleServer {
	s := &idleServer{transport: transport, child: benchproc.Start(b, "TestIdleServerProcess", idleServerEnv+"="+transport)}
	if f := s.child.Line("addr"); len(f) == 1 {
		s.addr = f[0]
	} else {
		b.Fatalf("idle server: addr line %q", f)
	}
	return s
}

func (s *idleServer) measure(b *testing.B) memSample {
	f := s.child.Ask("measure", "mem")
	if len(f) != 3 {
		b.Fatalf("idle server: mem line %q", f)
	}
	var m memSample
	for i, p := range []*int64{&m.heap, &m.stack, &m.rss} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		*p = v
	}
	return m
}

// openIdle opens n connections to the server, makes one NULL call on each and returns
// a function that closes them.
func (s *idleServer) openIdle(b *testing.B, n int) func() {
	ctx := context.Background()
	var closers []io.Closer
	var dev *soft.Device
	if s.transport == "rdma-soft" {
		dev = soft.New(soft.Config{})
	}
	for i := 0; i < n; i++ {
		var tr oncrpc.RoundTripper
		var c io.Closer
		if dev != nil {
			t, err := Dial(ctx, dev, s.addr, nil)
			if err != nil {
				b.Fatal(err)
			}
			tr, c = t, t
		} else {
			t, err := oncrpc.DialTCP(ctx, s.addr, nil)
			if err != nil {
				b.Fatal(err)
			}
			tr, c = t, t
		}
		closers = append(closers, c)
		if err := oncrpc.NewClient(tr, tpProg, tpVers).CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 256}); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		for _, c := range closers {
			c.Close()
		}
	}
}

// TestIdleServerProcess is BenchmarkServerIdleConnMemory's server when the test binary
// is re-executed with RPCRDMA_IDLE_SERVER set (it is skipped otherwise): it serves
// tpProg, prints "addr <address>", and answers each "measure" line on stdin with
// "mem <HeapInuse> <StackInuse> <VmRSS bytes>" until stdin closes.
func TestIdleServerProcess(t *testing.T) {
	transport := os.Getenv(idleServerEnv)
	if transport == "" {
		t.Skip("the server process of BenchmarkServerIdleConnMemory")
	}
	if os.Getenv(idleHeapProfileEnv) != "" {
		runtime.MemProfileRate = 1 // every allocation, for attribution
	}
	srv := oncrpc.NewServer(nil)
	srv.Register(tpProg, tpVers, tpHandler())
	var ln oncrpc.Listener
	var err error
	switch transport {
	case "rdma-soft":
		ln, err = Listen(context.Background(), soft.New(soft.Config{}), "127.0.0.1:0", nil)
	case "oncrpc-tcp":
		ln, err = oncrpc.ListenTCP("127.0.0.1:0", nil)
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Printf("addr %s\n", ln.Addr())
	benchproc.Serve(os.Stdin, os.Stdout, func(req string, w io.Writer) {
		if req != "measure" {
			return
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if p := os.Getenv(idleHeapProfileEnv); p != "" {
			if f, err := os.Create(p); err == nil {
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
		fmt.Fprintf(w, "mem %d %d %d\n", ms.HeapInuse, ms.StackInuse, vmRSS())
	})
}

// vmRSS returns the process's resident set size in bytes (0 where /proc is missing).
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
