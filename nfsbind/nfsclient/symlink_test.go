//go:build linux

package nfsclient

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// A symbolic link's text (nfspath3) is unbounded in RFC 1813 and up to 4095 bytes
// on Linux: SYMLINK makes one that long and READLINK reads it back, over RPC-over-RDMA
// (where READLINK's reply bound sizes the reply chunk) as over TCP; a longer one is
// the server's NFS3ERR_NAMETOOLONG, not a decoding failure.
func TestLongSymlinkText(t *testing.T) {
	srv, err := nfsserver.New(nfsserver.Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	t.Cleanup(func() { rs.Close() })
	_, rdma := serveOverRDMA(t, rs, nil, nil)
	addr, export := startServer(t)
	tcp, _ := dial(t, addr, export)
	ctx := context.Background()
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("t")})
	c, err := New(ctx, rdma, srv.RootHandle(), oncrpc.WithAuth(auth))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Client{"rdma": c, "tcp": tcp} {
		for _, n := range []int{1025, 2048, 4095} {
			target := strings.Repeat("t", n)
			fh, err := c.Symlink(ctx, c.Root(), name+"-"+strings.Repeat("l", n%7+1)+string(rune('a'+n%26)), target)
			if err != nil {
				t.Fatalf("%s: SYMLINK of %d bytes: %v", name, n, err)
			}
			if got, err := c.Readlink(ctx, fh); err != nil || got != target {
				t.Fatalf("%s: READLINK of %d bytes: %d bytes, %v", name, n, len(got), err)
			}
		}
		if _, err := c.Symlink(ctx, c.Root(), name+"-too-long", strings.Repeat("t", nfs3.MaxNFSPathLen)); !errors.Is(err, nfs3.StatusNameTooLong) {
			t.Errorf("%s: SYMLINK of %d bytes: %v, want NFS3ERR_NAMETOOLONG", name, nfs3.MaxNFSPathLen, err)
		}
	}
}
