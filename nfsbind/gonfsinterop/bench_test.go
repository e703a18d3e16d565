package gonfsinterop

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gonfs "github.com/willscott/go-nfs"
	gonfshelpers "github.com/willscott/go-nfs/helpers"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

const benchFileSize = 64 << 20

// startOurs serves dir with nfsserver over TCP on 127.0.0.1.
func startOurs(b *testing.B, dir string) (addr, export string) {
	srv, err := nfsserver.New(nfsserver.Options{Root: dir, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	go rs.Serve(l)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs.Shutdown(ctx)
		srv.Close()
	})
	return l.Addr().String(), srv.ExportPath()
}

// startGoNFS serves dir with github.com/willscott/go-nfs (osfs, null auth, handle
// cache), the peer baseline.
func startGoNFS(b *testing.B, dir string) (addr, export string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	h := gonfshelpers.NewCachingHandler(gonfshelpers.NewNullAuthHandler(osfs.New(dir)), 1024)
	go gonfs.Serve(l, h)
	b.Cleanup(func() { l.Close() })
	return l.Addr().String(), "/"
}

// BenchmarkPeers measures READ and WRITE at 4 KiB and 1 MiB with 1 and 32 calls in
// flight, through nfsclient over TCP on 127.0.0.1, against nfsserver and against
// willscott/go-nfs.
func BenchmarkPeers(b *testing.B) {
	servers := []struct {
		name  string
		start func(*testing.B, string) (string, string)
	}{{"nfsserver", startOurs}, {"go-nfs", startGoNFS}}
	for _, srv := range servers {
		for _, op := range []string{"READ", "WRITE"} {
			for _, size := range []int{4 << 10, 1 << 20} {
				for _, qd := range []int{1, 32} {
					b.Run(fmt.Sprintf("%s/%s/%dKiB/qd%d", srv.name, op, size>>10, qd), func(b *testing.B) {
						benchPeer(b, srv.start, op, size, qd)
					})
				}
			}
		}
	}
}

func benchPeer(b *testing.B, start func(*testing.B, string) (string, string), op string, size, qd int) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bench"), make([]byte, benchFileSize), 0o644); err != nil {
		b.Fatal(err)
	}
	addr, export := start(b, dir)
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("bench")})
	c, err := nfsclient.Mount(ctx, tr, tr, export, oncrpc.WithAuth(auth))
	if err != nil {
		b.Fatal(err)
	}
	fh, _, err := c.Lookup(ctx, c.Root(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	if size > c.MaxRead() || size > c.MaxWrite() {
		b.Skipf("server's rtmax %d / wtmax %d below %d", c.MaxRead(), c.MaxWrite(), size)
	}
	slots := benchFileSize / size
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	var firstErr error
	for w := 0; w < qd; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size)
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= b.N {
					return
				}
				off := uint64((i % slots) * size)
				var err error
				if op == "READ" {
					_, _, err = c.Read(ctx, fh, off, buf)
				} else {
					_, err = c.Write(ctx, fh, off, buf, nfs3.Unstable)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}
