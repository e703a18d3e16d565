package nfsclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// TestLabKnfsd runs the client workload against a real NFS server, normally Linux
// knfsd in the qemu lab, when NFSCLIENT_LAB_NFS and NFSCLIENT_LAB_MOUNT name its NFS
// and MOUNT TCP addresses (NFSCLIENT_LAB_PATH: the export, default /export).
// testdata/lab/knfsd-tcp.sh is the guest side: copy it into the lab's guest/tests/ and
// run
//
//	boot.sh --hostfwd 22049:2049 --hostfwd 22048:20048 \
//	  --ready-cmd 'NFSCLIENT_LAB_NFS=127.0.0.1:22049 NFSCLIENT_LAB_MOUNT=127.0.0.1:22048 ./nfsclient.test -test.run TestLabKnfsd -test.v' \
//	  knfsd-tcp
//
// Against Linux 6.1 knfsd (rtmax/wtmax 128 KiB) it passes: odd sizes up to 8 MiB - 1,
// EXCLUSIVE create retried, 2000 entries by READDIRPLUS, symlink, hard link, rename,
// removals, FSSTAT.
func TestLabKnfsd(t *testing.T) {
	nfsAddr, mountAddr := os.Getenv("NFSCLIENT_LAB_NFS"), os.Getenv("NFSCLIENT_LAB_MOUNT")
	if nfsAddr == "" || mountAddr == "" {
		t.Skip("set NFSCLIENT_LAB_NFS and NFSCLIENT_LAB_MOUNT to run against a real server")
	}
	export := os.Getenv("NFSCLIENT_LAB_PATH")
	if export == "" {
		export = "/export"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ntr, err := oncrpc.DialTCP(ctx, nfsAddr, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer ntr.Close()
	mtr, err := oncrpc.DialTCP(ctx, mountAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mtr.Close()
	auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("go-lab"), UID: 0, GID: 0})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Mount(ctx, Transports{NFS: ntr, Mount: mtr}, export, oncrpc.WithAuth(auth))
	if err != nil {
		t.Fatal(err)
	}
	defer Unmount(ctx, mtr, export, oncrpc.WithAuth(auth))
	t.Logf("mounted %s: rtmax %d wtmax %d", export, c.MaxRead(), c.MaxWrite())
	if fh, _, err := c.Lookup(ctx, c.Root(), "hello.txt"); err == nil {
		data, err := c.ReadAll(ctx, fh)
		t.Logf("hello.txt: %q %v", data, err)
	}
	top := fmt.Sprintf("go-%d", time.Now().UnixNano())
	dir, _, err := c.Mkdir(ctx, c.Root(), top, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, size := range []int{0, 1, 3, 4097, 1<<20 - 1, 1<<20 + 1, 8<<20 - 1} {
		name := fmt.Sprintf("f%d", size)
		fh, _, err := c.Create(ctx, dir, name, 0o644, size%2 == 1)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if err := c.WriteAll(ctx, fh, data); err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadAll(ctx, fh)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: read back %d bytes: %v", name, len(got), err)
		}
	}
	// EXCLUSIVE create retried with the same verifier succeeds; GUARDED does not.
	args := nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: []byte("excl")}, Mode: nfs3.Exclusive, Verf: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}}
	for i := 0; i < 2; i++ {
		if _, _, err := c.createLike(ctx, nfs3.ProcCreate, dir, "excl", &args); err != nil {
			t.Fatalf("EXCLUSIVE create try %d: %v", i, err)
		}
	}
	if _, _, err := c.Create(ctx, dir, "excl", 0o644, false); !errors.Is(err, nfs3.StatusExist) {
		t.Fatalf("GUARDED create of existing: %v", err)
	}
	many, _, err := c.Mkdir(ctx, dir, "many", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := 0; i < n; i++ {
		if _, _, err := c.Create(ctx, many, fmt.Sprintf("entry-%04d", i), 0o644, false); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := c.ReaddirPlus(ctx, many)
	if err != nil || len(ents) != n {
		t.Fatalf("ReaddirPlus: %d entries, %v", len(ents), err)
	}
	if _, err := c.Symlink(ctx, dir, "ln", "/etc/passwd"); err != nil {
		t.Fatal(err)
	}
	lfh, _, err := c.Lookup(ctx, dir, "ln")
	if err != nil {
		t.Fatal(err)
	}
	if target, err := c.Readlink(ctx, lfh); err != nil || target != "/etc/passwd" {
		t.Fatalf("Readlink: %q %v", target, err)
	}
	f1, _, _ := c.Lookup(ctx, dir, "f1")
	if err := c.Link(ctx, f1, many, "hard"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, many, "hard", dir, "renamed"); err != nil {
		t.Fatal(err)
	}
	if a, err := c.Getattr(ctx, f1); err != nil || a.Nlink != 2 {
		t.Fatalf("nlink after link+rename: %d %v", a.Nlink, err)
	}
	for _, e := range ents {
		if err := c.Remove(ctx, many, e.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Rmdir(ctx, dir, "many"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rmdir(ctx, c.Root(), top); !errors.Is(err, nfs3.StatusNotEmpty) {
		t.Fatalf("Rmdir non-empty: %v", err)
	}
	fs, err := c.Fsstat(ctx)
	t.Logf("FSSTAT: %d bytes total, %d free, %v", fs.Tbytes, fs.Fbytes, err)
}
