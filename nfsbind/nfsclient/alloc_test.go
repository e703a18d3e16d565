package nfsclient

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// cannedFile is a minimal NFSv3 service for allocation tests: FSINFO, and READ and
// WRITE of one in-memory file, answered without allocating, so that what
// testing.AllocsPerRun counts is the client's (nfsclient, oncrpc.Client and the client
// transport) plus the server transport's.
type cannedFile struct{ data []byte }

func (f *cannedFile) ServeRPC(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	switch nfs3.Proc(req.Header.Proc) {
	case nfs3.ProcFsinfo:
		r := nfs3.FsinfoRes{Rtmax: nfs3.MaxData, Wtmax: nfs3.MaxData, Dtpref: 4096}
		r.EncodeXDR(res)
	case nfs3.ProcRead:
		var a nfs3.ReadArgs
		if err := a.DecodeXDR(req.Args); err != nil {
			return oncrpc.ErrGarbageArgs
		}
		end := min(a.Offset+uint64(a.Count), uint64(len(f.data)))
		r := nfs3.ReadRes{Data: f.data[min(a.Offset, end):end], EOF: end == uint64(len(f.data))}
		r.Count = uint32(len(r.Data))
		r.EncodeXDR(res)
	case nfs3.ProcWrite:
		var a nfs3.WriteArgs
		if err := a.DecodeXDR(req.Args); err != nil || a.Offset+uint64(len(a.Data)) > uint64(len(f.data)) {
			return oncrpc.ErrGarbageArgs
		}
		r := nfs3.WriteRes{Count: uint32(copy(f.data[a.Offset:], a.Data)), Committed: nfs3.FileSync}
		r.EncodeXDR(res)
	default:
		return oncrpc.ErrProcUnavail
	}
	return nil
}

// allocsPerIO returns the allocations of one READ and one WRITE of size bytes through
// c, in steady state.
func allocsPerIO(t *testing.T, c *Client, size int) (read, write float64) {
	t.Helper()
	ctx := context.Background()
	buf := make([]byte, size)
	var err error
	read = testing.AllocsPerRun(200, func() {
		if _, _, e := c.Read(ctx, nil, 0, buf); e != nil {
			err = e
		}
	})
	write = testing.AllocsPerRun(200, func() {
		if _, e := c.Write(ctx, nil, 0, buf, nfs3.Unstable); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return read, write
}

// READ and WRITE through the client allocate nothing per call, at 4 KiB and at
// 1 MiB, over TCP and over RPC-over-RDMA (verbs/soft). The count is process-wide, so
// it covers the server transports too. The same holds for a client that retransmits
// after a per-try timeout and reports to an oncrpc.Monitor, as nfsrdma's does.
func TestReadWriteDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	timeo := []oncrpc.ClientOption{
		oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: time.Minute, MaxTries: 1 << 30}),
		oncrpc.WithMonitor(oncrpc.NewMonitor(func(bool) {})),
	}
	for _, tc := range []struct {
		proto string
		opts  []oncrpc.ClientOption
	}{{"tcp", nil}, {"rdma", nil}, {"tcp", timeo}, {"rdma", timeo}} {
		proto := tc.proto
		name := proto
		if tc.opts != nil {
			name += "-timeo"
		}
		t.Run(name, func(t *testing.T) {
			rs := oncrpc.NewServer(nil)
			rs.Register(nfs3.Program, nfs3.Version, &cannedFile{data: make([]byte, 1<<20)})
			t.Cleanup(func() { rs.Close() })
			ctx := context.Background()
			var tr oncrpc.RoundTripper
			if proto == "tcp" {
				l, err := oncrpc.ListenTCP("127.0.0.1:0", &oncrpc.TCPOptions{MaxRecord: 8 << 20})
				if err != nil {
					t.Fatal(err)
				}
				go rs.Serve(l)
				tt, err := oncrpc.DialTCP(ctx, l.Addr().String(), &oncrpc.TCPOptions{MaxRecord: 8 << 20})
				if err != nil {
					t.Fatal(err)
				}
				tr = tt
			} else {
				_, tr = serveOverRDMA(t, rs, nil, nil)
			}
			t.Cleanup(func() { tr.Close() })
			c, err := New(ctx, tr, nfs3.FH{1, 2, 3, 4}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, size := range []int{4 << 10, 1 << 20} {
				if r, w := allocsPerIO(t, c, size); r != 0 || w != 0 {
					t.Errorf("%d-byte READ: %v allocations per call, WRITE: %v; want 0", size, r, w)
				}
			}
		})
	}
}

// serveOverRDMA serves rs over RDMA on a soft device of its own and dials it from
// another, with the options given (nil: the defaults); everything ends with t.
func serveOverRDMA(t *testing.T, rs *oncrpc.Server, sopts *rpcrdma.ServerOptions, copts *rpcrdma.ClientOptions) (*rpcrdma.Listener, *rpcrdma.Client) {
	t.Helper()
	ctx := context.Background()
	sdev, cdev := soft.New(soft.Config{}), soft.New(soft.Config{})
	t.Cleanup(func() { sdev.Close(); cdev.Close() })
	l, err := rpcrdma.Listen(ctx, sdev, "127.0.0.1:0", sopts)
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	rt, err := rpcrdma.Dial(ctx, cdev, l.Addr().String(), copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return l, rt
}
