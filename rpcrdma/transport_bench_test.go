package rpcrdma

import (
	"context"
	"encoding/binary"
	"flag"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Transport benchmarks, in one run: the same oncrpc program over RPC-over-RDMA (the
// software iWARP provider on 127.0.0.1), over oncrpc's TCP transport, and a raw TCP
// request/response loop as the floor.
//
//	go test -run XXX -bench 'Transport' -benchmem ./rpcrdma/

// Allocation-free benchmark procedures.
const (
	tpDiscard = 11 // args: payloads; results: uint32 total length (data not copied)
	tpSource  = 12 // args: uint32 n; results: one payload of n bytes from a static buffer
)

var benchSource = make([]byte, 1<<20)

func benchProcs() oncrpc.Procs {
	return oncrpc.Procs{
		tpDiscard: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			n, err := req.Args.ArrayLen(64, 4)
			if err != nil {
				return err
			}
			total := 0
			for i := 0; i < n; i++ {
				b, err := req.Args.Payload(-1)
				if err != nil {
					return err
				}
				total += len(b)
			}
			res.Uint32(uint32(total))
			return nil
		},
		tpSource: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			n, err := req.Args.Uint32()
			if err != nil {
				return err
			}
			res.Uint32(1)
			res.Payload(benchSource[:min(int(n), len(benchSource))])
			return nil
		},
	}
}

// benchSink decodes tpSource's result without copying.
type benchSink struct{ n int }

func (s *benchSink) DecodeXDR(d *xdr.Decoder) error {
	if _, err := d.Uint32(); err != nil {
		return err
	}
	b, err := d.Payload(-1)
	s.n = len(b)
	return err
}

// benchServer starts one server for a benchmark and returns a function that dials a
// client to it (called once per connection the benchmark wants).
type benchServer func(b *testing.B) (dial func() *oncrpc.Client)

// benchTakeBack is the soft.Config.TakeBack of the RDMA benchmarks' device. Under
// valgrind (PERFORMANCE.md, the cache simulation) calls are so slow that the default
// 2 ms take-back sweep finds every client QP unreceived between its calls and brings
// its reader back each time, which buries the count; 100ms or 1s keeps it out of the way.
var benchTakeBack = flag.Duration("bench.takeback", 0, "soft.Config.TakeBack of the RDMA transport benchmarks' device (0: soft.DefaultTakeBack)")

func benchRDMAServer(b *testing.B) func() *oncrpc.Client {
	noTrace := func(bool, []byte) {}
	dev := soft.New(soft.Config{TakeBack: *benchTakeBack})
	env := newTPEnvOn(b, dev, &ServerOptions{Trace: noTrace}, &ClientOptions{Trace: noTrace}, benchProcs())
	first := true
	return func() *oncrpc.Client {
		if first {
			first = false
			return env.rpc
		}
		tr, err := Dial(context.Background(), env.dev, env.ln.Addr().String(), &ClientOptions{Trace: noTrace})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close() })
		return oncrpc.NewClient(tr, tpProg, tpVers)
	}
}

// newBenchServer returns a server of the test program with the benchmark procedures,
// NULL declared non-blocking, as newTPEnv registers it.
func newBenchServer() *oncrpc.Server {
	srv := oncrpc.NewServer(nil)
	procs := tpHandler()
	for k, v := range benchProcs() {
		procs[k] = v
	}
	srv.Register(tpProg, tpVers, oncrpc.NonBlocking(procs, tpNull))
	return srv
}

func benchTCPServer(b *testing.B) func() *oncrpc.Client {
	ln, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := newBenchServer()
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return func() *oncrpc.Client {
		tr, err := oncrpc.DialTCP(context.Background(), ln.Addr().String(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close() })
		return oncrpc.NewClient(tr, tpProg, tpVers)
	}
}

// benchTransports are the transports every transport benchmark compares, in one run.
var benchTransports = []struct {
	name   string
	server benchServer
}{{"rdma-soft", benchRDMAServer}, {"oncrpc-tcp", benchTCPServer}}

// dial starts a server and returns one client connected to it.
func (s benchServer) dial(b *testing.B) *oncrpc.Client { return s(b)() }

func BenchmarkTransportNull(b *testing.B) {
	for _, tc := range benchTransports {
		b.Run(tc.name, func(b *testing.B) { benchNullCalls(b, tc.server.dial(b), context.Background()) })
	}
	b.Run("raw-tcp", func(b *testing.B) { benchRawTCP(b, 40, 24) })
}

// benchNullCalls makes one NULL call, then b.N timed ones, with ctx.
func benchNullCalls(b *testing.B, rpc *oncrpc.Client, ctx context.Context) {
	opts := oncrpc.CallOptions{MaxReply: 256}
	if err := rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransportWrite1M sends a 1 MiB payload per call (a read chunk over RDMA,
// inline in the record over TCP) and gets a small reply.
func BenchmarkTransportWrite1M(b *testing.B) {
	args := tpMakePayloads(1 << 20)
	for _, tc := range benchTransports {
		b.Run(tc.name, func(b *testing.B) {
			rpc := tc.server.dial(b)
			ctx := context.Background()
			var res tpUint32
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := rpc.Call(ctx, tpDiscard, &args, &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("raw-tcp", func(b *testing.B) {
		b.SetBytes(1 << 20)
		benchRawTCP(b, 1<<20, 32)
	})
}

// BenchmarkTransportRead1M gets a 1 MiB payload per call into a reply sink (a write
// chunk over RDMA, inline over TCP).
func BenchmarkTransportRead1M(b *testing.B) {
	sink := make([]byte, 1<<20)
	for _, tc := range benchTransports {
		b.Run(tc.name, func(b *testing.B) {
			rpc := tc.server.dial(b)
			ctx := context.Background()
			var res benchSink
			opts := oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: 1024}
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := rpc.CallWithOptions(ctx, tpSource, tpUint32(1<<20), &res, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchRawTCP is a request/response loop over a bare TCP connection: req bytes out,
// resp bytes back, record-marked like RPC.
func benchRawTCP(b *testing.B, req, resp int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		in := make([]byte, 4+req)
		out := make([]byte, 4+resp)
		binary.BigEndian.PutUint32(out, 1<<31|uint32(resp))
		for {
			if _, err := io.ReadFull(c, in); err != nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	out := make([]byte, 4+req)
	binary.BigEndian.PutUint32(out, 1<<31|uint32(req))
	in := make([]byte, 4+resp)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(out); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransportNullParallel runs NULL calls from many goroutines over one
// connection: RPC-over-RDMA pipelines up to the server's credit grant.
func BenchmarkTransportNullParallel(b *testing.B) {
	for _, tc := range benchTransports {
		b.Run(tc.name, func(b *testing.B) {
			rpc := tc.server.dial(b)
			ctx := context.Background()
			opts := oncrpc.CallOptions{MaxReply: 256}
			if err := rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(16)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkTransportNullBounded is BenchmarkTransportNull with the ways a caller
// bounds its wait: a per-try Timeout (as nfsclient's retransmission timer), a
// context with a deadline, and a context that can only be cancelled. A bounded wait
// must not cost more than an unbounded one.
func BenchmarkTransportNullBounded(b *testing.B) {
	for _, tc := range benchTransports {
		for _, bd := range waitBounds {
			b.Run(tc.name+"/"+bd.name, func(b *testing.B) {
				rpc, ctx, cancel := boundClient(tc.server.dial(b), bd.try, bd.ctx)
				defer cancel()
				benchNullCalls(b, rpc, ctx)
			})
		}
	}
}

// waitBounds are the ways a caller bounds its wait for a reply, none among them,
// each far enough away that it never ends a call that gets its reply.
var waitBounds = []struct {
	name string
	try  time.Duration // the Client's per-try Timeout (0: none)
	ctx  func() (context.Context, context.CancelFunc)
}{
	{"none", 0, func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
	{"timeo", time.Minute, func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
	{"ctx-deadline", 0, func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Hour)
	}},
	{"ctx-cancel", 0, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
}

// boundClient returns rpc with the per-try Timeout try (a new Client over the same
// transport when try > 0) and a context made by ctx.
func boundClient(rpc *oncrpc.Client, try time.Duration, ctx func() (context.Context, context.CancelFunc)) (*oncrpc.Client, context.Context, context.CancelFunc) {
	if try > 0 {
		rpc = oncrpc.NewClient(rpc.Transport(), tpProg, tpVers, oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: try}))
	}
	c, cancel := ctx()
	return rpc, c, cancel
}
