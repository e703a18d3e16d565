//go:build linux

package nfsserver

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// BenchmarkCreate measures CREATE (GUARDED, a new name in the export root each time)
// through nfsclient and this server, over TCP on 127.0.0.1 and over RPC-over-RDMA on
// verbs/soft, with 1 and 16 calls in flight, on a sync export (the new file and the
// directory are fsynced before each reply) and an async one. The figure to compare is
// creates/s; the export is in the benchmark's temporary directory, so the file system
// under TMPDIR decides what an fsync costs.
func BenchmarkCreate(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, tr := range []string{"tcp", "rdma"} {
			for _, qd := range []int{1, 16} {
				b.Run(fmt.Sprintf("sync=%v/%s/qd%d", sync, tr, qd), func(b *testing.B) {
					benchCreate(b, !sync, tr, qd)
				})
			}
		}
	}
}

func benchCreate(b *testing.B, async bool, transport string, qd int) {
	srv, err := New(Options{Root: b.TempDir(), HandleKey: fuzzKey, Async: async})
	if err != nil {
		b.Fatal(err)
	}
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	tl, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	go rs.Serve(tl)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs.Shutdown(ctx)
		srv.Close()
	})
	ctx := context.Background()
	mnt, err := oncrpc.DialTCP(ctx, tl.Addr().String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mnt.Close() })
	nfs := oncrpc.RoundTripper(mnt)
	if transport == "rdma" {
		sdev, cdev := soft.New(soft.Config{}), soft.New(soft.Config{})
		b.Cleanup(func() { cdev.Close(); sdev.Close() })
		rl, err := rpcrdma.Listen(ctx, sdev, "127.0.0.1:0", nil)
		if err != nil {
			b.Fatal(err)
		}
		go rs.Serve(rl)
		rt, err := rpcrdma.Dial(ctx, cdev, rl.Addr().String(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rt.Close() })
		nfs = rt
	}
	auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: nfs, Mount: mnt}, srv.ExportPath(), oncrpc.WithAuth(auth))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n, elapsed, err := benchio.Loop(ctx, benchio.Buffers(qd, 0), int64(b.N), 0, func(ctx context.Context, i int, _ []byte) error {
		_, _, err := c.Create(ctx, c.Root(), "f"+strconv.Itoa(i), 0o644, false)
		return err
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "creates/s")
}
