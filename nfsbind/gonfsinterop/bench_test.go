package gonfsinterop

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gonfs "github.com/willscott/go-nfs"
	gonfshelpers "github.com/willscott/go-nfs/helpers"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

const benchFileSize = 64 << 20

// peer is a running NFS server: MOUNT and NFS over TCP at tcp, NFS over RDMA at rdma
// (empty when the server has no RDMA listener).
type peer struct {
	tcp, rdma, export string
}

// startOurs serves dir with nfsserver over TCP, and over RDMA (verbs/soft) on 127.0.0.1.
func startOurs(b *testing.B, dir string) peer {
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
	dev := soft.New(soft.Config{})
	rl, err := rpcrdma.Listen(context.Background(), dev, "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	go rs.Serve(rl)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs.Shutdown(ctx)
		srv.Close()
		dev.Close()
	})
	return peer{tcp: l.Addr().String(), rdma: rl.Addr().String(), export: srv.ExportPath()}
}

// startGoNFS serves dir with github.com/willscott/go-nfs (osfs, null auth, handle
// cache), the peer baseline.
func startGoNFS(b *testing.B, dir string) peer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	h := gonfshelpers.NewCachingHandler(gonfshelpers.NewNullAuthHandler(osfs.New(dir)), 1024)
	go gonfs.Serve(l, h)
	b.Cleanup(func() { l.Close() })
	return peer{tcp: l.Addr().String(), export: "/"}
}

// BenchmarkPeers measures READ and WRITE at 4 KiB and 1 MiB with 1 and 32 calls in
// flight, through nfsclient on 127.0.0.1, against nfsserver over RDMA (verbs/soft) and
// over TCP, and against willscott/go-nfs over TCP as the peer baseline, in one run.
func BenchmarkPeers(b *testing.B) {
	servers := []struct {
		name  string
		rdma  bool
		start func(*testing.B, string) peer
	}{{"nfsserver-rdma", true, startOurs}, {"nfsserver-tcp", false, startOurs}, {"go-nfs-tcp", false, startGoNFS}}
	for _, srv := range servers {
		for _, op := range []string{"READ", "WRITE"} {
			for _, size := range []int{4 << 10, 1 << 20} {
				for _, qd := range []int{1, 32} {
					b.Run(fmt.Sprintf("%s/%s/%dKiB/qd%d", srv.name, op, size>>10, qd), func(b *testing.B) {
						benchPeer(b, srv.start, srv.rdma, op, size, qd)
					})
				}
			}
		}
	}
}

func benchPeer(b *testing.B, start func(*testing.B, string) peer, overRDMA bool, op string, size, qd int) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bench"), make([]byte, benchFileSize), 0o644); err != nil {
		b.Fatal(err)
	}
	p := start(b, dir)
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, p.tcp, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	var nfsTr oncrpc.RoundTripper = tr
	if overRDMA {
		dev := soft.New(soft.Config{})
		rt, err := rpcrdma.Dial(ctx, dev, p.rdma, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rt.Close(); dev.Close() })
		nfsTr = rt
	}
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("bench")})
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: nfsTr, Mount: tr}, p.export, oncrpc.WithAuth(auth))
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
	benchio.Run(b, qd, size, func(ctx context.Context, i int, buf []byte) error {
		off := uint64((i % slots) * size)
		if op == "READ" {
			_, _, err := c.Read(ctx, fh, off, buf)
			return err
		}
		_, err := c.Write(ctx, fh, off, buf, nfs3.Unstable)
		return err
	})
}
