package gonfsinterop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// serve exports a temporary directory over TCP on 127.0.0.1 and mounts it with
// go-nfs-client, MOUNT and NFS on the same connection (no portmapper involved).
func serve(t *testing.T) (*nfs.Target, string) {
	t.Helper()
	dir := t.TempDir()
	srv, err := nfsserver.New(nfsserver.Options{Root: dir, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs.Shutdown(ctx)
		srv.Close()
	})
	c, err := dialGoNFS(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	m := &nfs.Mount{Client: c} // no Addr: the target reuses this connection
	target, err := m.Mount(srv.ExportPath(), rpc.NewAuthUnix("gonfs", 0, 0).Auth())
	if err != nil {
		t.Fatalf("go-nfs-client MNT: %v", err)
	}
	t.Cleanup(func() { m.Unmount() })
	return target, dir
}

// dialGoNFS connects go-nfs-client's RPC client to addr. It binds a local
// port it picks at random from 49152-65535 and tries another only for
// privileged ports, so a port in use (other tests, other connections) fails
// the dial: try again, as it does for privileged ports.
func dialGoNFS(addr string) (*rpc.Client, error) {
	for try := 1; ; try++ {
		c, err := rpc.DialTCP("tcp", addr, false)
		if err == nil || try == 50 || !errors.Is(err, syscall.EADDRINUSE) {
			return c, err
		}
	}
}

func TestGoNFSClientFiles(t *testing.T) {
	target, dir := serve(t)
	if _, err := target.Mkdir("sub", 0o755); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1, 4097, 1<<20 + 13, 3<<20 - 1} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("sub/file%d", size)
		f, err := target.OpenFile(name, 0o644)
		if err != nil {
			t.Fatalf("OpenFile %s: %v", name, err)
		}
		if _, err := io.Copy(f, bytes.NewReader(data)); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("close %s: %v", name, err)
		}
		r, err := target.Open(name)
		if err != nil {
			t.Fatalf("Open %s: %v", name, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		if sha256.Sum256(got) != sha256.Sum256(data) {
			t.Fatalf("%s: read back %d bytes, checksum differs", name, len(got))
		}
		disk, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(disk, data) {
			t.Fatalf("%s differs on disk: %v", name, err)
		}
	}
	ents, err := target.ReadDirPlus("sub")
	if err != nil {
		t.Fatalf("ReadDirPlus: %v", err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != "." && e.Name() != ".." {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	want := []string{"file0", "file1", "file1048589", "file3145727", "file4097"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("ReadDirPlus: %v, want %v", names, want)
	}
	if err := target.Rename("sub/file1", "moved"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := target.Symlink("/etc/passwd", "sub/ln"); err != nil {
		t.Fatalf("Symlink: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "sub", "ln")); err != nil || l != "/etc/passwd" {
		t.Fatalf("symlink on disk: %q %v", l, err)
	}
	if err := target.RmDir("sub"); err == nil {
		t.Fatal("RmDir of a non-empty directory succeeded")
	}
	if err := target.RemoveAll("sub"); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Fatalf("sub still exists: %v", err)
	}
	if err := target.Remove("moved"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
}

func TestGoNFSClientLargeDirectory(t *testing.T) {
	target, dir := serve(t)
	const n = 2500
	if err := os.Mkdir(filepath.Join(dir, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, "big", fmt.Sprintf("entry-%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := target.ReadDirPlus("big")
	if err != nil {
		t.Fatalf("ReadDirPlus: %v", err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		if seen[e.Name()] {
			t.Fatalf("%s listed twice", e.Name())
		}
		seen[e.Name()] = true
	}
	for i := 0; i < n; i++ {
		if !seen[fmt.Sprintf("entry-%05d", i)] {
			t.Fatalf("entry-%05d missing (%d listed)", i, len(ents))
		}
	}
}
