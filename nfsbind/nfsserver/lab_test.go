//go:build linux

package nfsserver

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
)

// TestServeForLab serves a directory for a manual interop run when NFSSERVER_LAB_ADDR
// is set (e.g. 127.0.0.1:2049), with NFS and MOUNT on that one TCP port, until
// NFSSERVER_LAB_STOP names a file that exists or 10 minutes pass. The export is
// NFSSERVER_LAB_DIR (default: a temporary directory) at path /export. A Linux client
// mounts it with
//
//	mount -t nfs -o vers=3,proto=tcp,port=P,mountport=P,mountproto=tcp,nolock HOST:/export /mnt
//
// testdata/lab/nfs-tcp.sh is the guest script used with the qemu lab (interop/): copy
// it into the lab's guest/tests/, start this test with NFSSERVER_LAB_ADDR=127.0.0.1:32049,
// and run `boot.sh --host-port 2049:32049 nfs-tcp 10.0.2.100 2049 /export`. With Linux
// 6.1's NFSv3 client it passes: files of odd sizes up to 8 MiB - 1 written and compared
// after dropping caches, 2000 entries listed with ls and ls -l, absolute and relative
// symlinks, a hard link, renames across directories, rm -r, chmod, truncate, umount.
// With NFSSERVER_LAB_PORTMAP=127.0.0.1:30111 it also serves an rpcbind.Registry, and
// `boot.sh --host-port 111:30111 --host-port 2049:32049 nfs-tcp 10.0.2.100 rpcbind /export`
// mounts with plain `-o vers=3,proto=tcp,nolock` (ports from rpcbind; UMNT on umount)
// and passes the same workload. testdata/lab/nfs-tcp-tar.sh (same invocation, test
// nfs-tcp-tar) unpacks a tree of 316 entries with tar -xp as root (owners 0 and 1000,
// modes, an old mtime, symlinks, a hard link), finds it identical to the source with
// diff -r and find -printf, runs four parallel writers, and removes it with rm -rf.
func TestServeForLab(t *testing.T) {
	addr := os.Getenv("NFSSERVER_LAB_ADDR")
	if addr == "" {
		t.Skip("set NFSSERVER_LAB_ADDR to serve an export for a manual interop run")
	}
	dir := os.Getenv("NFSSERVER_LAB_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "nfsserver", Level: hclog.Debug})
	srv, err := New(Options{Root: dir, ExportPath: "/export", StateDir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rs := oncrpc.NewServer(&oncrpc.ServerOptions{Logger: log})
	srv.Register(rs)
	l, err := oncrpc.ListenTCP(addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	defer rs.Close()
	if pmAddr := os.Getenv("NFSSERVER_LAB_PORTMAP"); pmAddr != "" {
		// An rpcbind for clients that mount without port options: it advertises NFS
		// and MOUNT on NFSSERVER_LAB_ADVERTISE (the port the client sees, 2049 by
		// default), which may differ from the host port behind a forward.
		port := uint16(2049)
		if s := os.Getenv("NFSSERVER_LAB_ADVERTISE"); s != "" {
			p, err := strconv.ParseUint(s, 10, 16)
			if err != nil || p == 0 {
				t.Fatalf("NFSSERVER_LAB_ADVERTISE=%q: want a port number 1 to 65535", s)
			}
			port = uint16(p)
		}
		reg := rpcbind.NewRegistry()
		if err := reg.SetPort(nfs3.Program, nfs3.Version, rpcbind.IPProtoTCP, port); err != nil {
			t.Fatal(err)
		}
		if err := reg.SetPort(nfs3.MountProgram, nfs3.MountVersion, rpcbind.IPProtoTCP, port); err != nil {
			t.Fatal(err)
		}
		prs := oncrpc.NewServer(&oncrpc.ServerOptions{Logger: log.Named("portmap")})
		reg.Register(prs)
		pl, err := oncrpc.ListenTCP(pmAddr, nil)
		if err != nil {
			t.Fatal(err)
		}
		go prs.Serve(pl)
		defer prs.Close()
	}
	stop := os.Getenv("NFSSERVER_LAB_STOP")
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if stop != "" {
			if _, err := os.Stat(stop); err == nil {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs.Shutdown(ctx)
	st := rs.Stats()
	t.Logf("served %d calls, %d garbage, %d system errors", st.Calls, st.Garbage, st.SystemErrs)
}
