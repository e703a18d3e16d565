//go:build linux

package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// peer is a client host: NFS and MOUNT transports bound to one loopback address.
type peer struct {
	ip       string
	nfs, mnt oncrpc.RoundTripper
}

// dialPeer connects to s from local address ip (127.0.0.0/8 is all loopback),
// NFS over netid ("rdma" or "tcp"), MOUNT over TCP.
func dialPeer(t *testing.T, s *server, ip, netid string) *peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	local := &net.TCPAddr{IP: net.ParseIP(ip)}
	tcp := func() oncrpc.RoundTripper {
		d := net.Dialer{LocalAddr: local}
		c, err := d.DialContext(ctx, "tcp", s.info.TCP.String())
		if err != nil {
			t.Fatal(err)
		}
		tr := oncrpc.NewTCPTransport(c, nil)
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	p := &peer{ip: ip, mnt: tcp()}
	if netid == "tcp" {
		p.nfs = tcp()
		return p
	}
	dev := soft.New(soft.Config{Dialer: &net.Dialer{LocalAddr: local}})
	c, err := rpcrdma.Dial(ctx, dev, s.info.RDMA.String(), nil)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); dev.Close() })
	p.nfs = c
	return p
}

// as returns an NFS client of p acting as uid:gid.
func (p *peer) as(t *testing.T, uid, gid uint32) *oncrpc.Client {
	auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte(p.ip), UID: uid, GID: gid})
	if err != nil {
		t.Fatal(err)
	}
	return oncrpc.NewClient(p.nfs, nfs3.Program, nfs3.Version, oncrpc.WithAuth(auth))
}

// mount mounts path from p as the test's client identity.
func (p *peer) mount(path string) (*nfsclient.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	uid, gid := clientID()
	auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte(p.ip), UID: uid, GID: gid})
	if err != nil {
		return nil, err
	}
	return nfsclient.Mount(ctx, nfsclient.Transports{NFS: p.nfs, Mount: p.mnt}, path, oncrpc.WithAuth(auth))
}

func getattr(t *testing.T, c *oncrpc.Client, fh nfs3.FH) nfs3.Status {
	t.Helper()
	var r nfs3.GetattrRes
	if err := c.Call(context.Background(), uint32(nfs3.ProcGetattr), &nfs3.GetattrArgs{Object: fh}, &r); err != nil {
		t.Fatalf("GETATTR: %v", err)
	}
	return r.Status
}

func writeFile(t *testing.T, c *oncrpc.Client, fh nfs3.FH, data string) nfs3.Status {
	t.Helper()
	var r nfs3.WriteRes
	if err := c.Call(context.Background(), uint32(nfs3.ProcWrite), &nfs3.WriteArgs{File: fh, Count: uint32(len(data)), Data: []byte(data), Stable: nfs3.FileSync}, &r); err != nil {
		t.Fatalf("WRITE: %v", err)
	}
	return r.Status
}

// exportDir returns a directory owned by the test clients' identity.
func exportDir(t *testing.T) string {
	d := t.TempDir()
	uid, gid := clientID()
	if err := os.Chown(d, int(uid), int(gid)); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	return d
}

func writeExports(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostileExportsDaemon runs nfsrdmad -exports with a table listing 127.0.0.1 (rw)
// and 127.0.0.3 (ro): over RDMA and over TCP, 127.0.0.2 cannot mount and gets
// NFS3ERR_STALE for a valid handle; 127.0.0.3 cannot write; 127.0.0.1 can. Then a
// reload narrows the table and the next call of 127.0.0.1 on its open connection is
// refused; a reload of a broken file keeps the table.
func TestHostileExportsDaemon(t *testing.T) {
	for _, netid := range []string{"rdma", "tcp"} {
		t.Run(netid, func(t *testing.T) {
			dir := exportDir(t)
			file := filepath.Join(t.TempDir(), "exports")
			writeExports(t, file, "# test table\n"+dir+" 127.0.0.1(rw,insecure) \\\n  127.0.0.3(ro,insecure)\n")
			s := (&server{stdout: &clitest.Buffer{}, log: &clitest.Buffer{}}).start(t, []string{"-exports", file})
			if s.info.ExportPath != dir {
				t.Fatalf("export path %q, want %q", s.info.ExportPath, dir)
			}

			good := dialPeer(t, s, "127.0.0.1", netid)
			gc, err := good.mount(dir)
			if err != nil {
				t.Fatalf("listed client: %v", err)
			}
			ctx := context.Background()
			f, _, err := gc.Create(ctx, gc.Root(), "f", 0o644, false)
			if err != nil {
				t.Fatalf("CREATE by the rw client: %v", err)
			}
			uid, gid := clientID()
			goodNFS := good.as(t, uid, gid)
			if st := writeFile(t, goodNFS, f, "good"); st != nfs3.StatusOK {
				t.Fatalf("WRITE by the rw client: %v", st)
			}

			bad := dialPeer(t, s, "127.0.0.2", netid)
			if _, err := bad.mount(dir); !errors.Is(err, nfs3.MountErrAcces) {
				t.Errorf("MNT from 127.0.0.2: %v, want MNT3ERR_ACCES", err)
			}
			badNFS := bad.as(t, uid, gid)
			if st := getattr(t, badNFS, f); st != nfs3.StatusStale {
				t.Errorf("GETATTR from 127.0.0.2 with a valid handle: %v, want NFS3ERR_STALE", st)
			}
			if st := writeFile(t, badNFS, f, "evil"); st != nfs3.StatusStale {
				t.Errorf("WRITE from 127.0.0.2 with a valid handle: %v, want NFS3ERR_STALE", st)
			}

			ro := dialPeer(t, s, "127.0.0.3", netid)
			if _, err := ro.mount(dir); err != nil {
				t.Fatalf("ro client: %v", err)
			}
			roNFS := ro.as(t, uid, gid)
			if st := writeFile(t, roNFS, f, "nope"); st != nfs3.StatusROFS {
				t.Errorf("WRITE from the ro client: %v, want NFS3ERR_ROFS", st)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "good" {
				t.Errorf("file holds %q", b)
			}

			// Reload narrows: 127.0.0.1 is gone, 127.0.0.3 becomes rw.
			writeExports(t, file, dir+" 127.0.0.3(rw,insecure)\n")
			if err := s.info.Reload(); err != nil {
				t.Fatalf("reload: %v", err)
			}
			if st := getattr(t, goodNFS, f); st != nfs3.StatusStale {
				t.Errorf("GETATTR from 127.0.0.1 after the reload removed it: %v, want NFS3ERR_STALE", st)
			}
			if st := writeFile(t, roNFS, f, "now"); st != nfs3.StatusOK {
				t.Errorf("WRITE from 127.0.0.3 after the reload made it rw: %v", st)
			}

			// A broken file is refused; the table in force stays.
			writeExports(t, file, dir+" 127.0.0.1(rw,bogus)\n")
			err = s.info.Reload()
			if err == nil || !strings.Contains(err.Error(), file+":1:") || !strings.Contains(err.Error(), `unknown option "bogus"`) {
				t.Errorf("reload of a broken file: %v", err)
			}
			if st := getattr(t, goodNFS, f); st != nfs3.StatusStale {
				t.Errorf("GETATTR from 127.0.0.1 after a failed reload: %v, want NFS3ERR_STALE", st)
			}
			if st := getattr(t, roNFS, f); st != nfs3.StatusOK {
				t.Errorf("GETATTR from 127.0.0.3 after a failed reload: %v", st)
			}
			if !strings.Contains(s.log.String(), "previous table stays in force") {
				t.Errorf("the failed reload was not logged:\n%s", s.log.String())
			}
		})
	}
}

// TestHostileExportsSIGHUPNarrows sends SIGHUP to this process, where run has asked for it:
// the exports file is read again and the narrowed table refuses the next call.
func TestHostileExportsSIGHUPNarrows(t *testing.T) {
	dir := exportDir(t)
	file := filepath.Join(t.TempDir(), "exports")
	writeExports(t, file, dir+" 127.0.0.1(rw,insecure)\n")
	s := (&server{stdout: &clitest.Buffer{}, log: &clitest.Buffer{}}).start(t, []string{"-exports", file})
	p := dialPeer(t, s, "127.0.0.1", "tcp")
	c, err := p.mount(dir)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid := clientID()
	nfs := p.as(t, uid, gid)
	if st := getattr(t, nfs, c.Root()); st != nfs3.StatusOK {
		t.Fatalf("GETATTR before the reload: %v", st)
	}
	writeExports(t, file, dir+" 127.0.0.9(rw,insecure)\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.log.String(), "exports file reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload 30 s after SIGHUP:\n%s", s.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := getattr(t, nfs, c.Root()); st != nfs3.StatusStale {
		t.Errorf("GETATTR after SIGHUP narrowed the table: %v, want NFS3ERR_STALE", st)
	}
}

// TestExportsFlagErrors: a syntax error stops the start with the file, line and
// column; -exports excludes -export, -ro and -export-path.
func TestExportsFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	writeExports(t, bad, "# ok\n"+dir+" *(rw)\n"+dir+"/x *(rw,frobnicate)\n")
	missing := filepath.Join(dir, "exports-missing-dir")
	writeExports(t, missing, dir+"/nope *(rw)\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-exports", bad}, bad + `:3:`},
		{[]string{"-exports", bad}, `unknown option "frobnicate"`},
		{[]string{"-exports", missing}, "line 1: export " + dir + "/nope cannot be served"},
		{[]string{"-exports", bad, "-export", dir}, "-exports"},
		{[]string{"-exports", missing, "-ro"}, "set per export in the file"},
		{[]string{"-exports", filepath.Join(dir, "none")}, "no such file"},
	} {
		var stderr clitest.Buffer
		err := run(context.Background(), append(tc.args, "-rdma", "127.0.0.1:0", "-tcp", "127.0.0.1:0", "-state", ""), &clitest.Buffer{}, &stderr, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestHostileExportsSecurePort: with "secure" (the default), NFS over TCP from a port
// of 1024 or more is NFS3ERR_PERM and MOUNT from one is MNT3ERR_ACCES, while NFS over
// RDMA is served whatever the port, as knfsd treats every RDMA request as coming from
// a privileged port.
func TestHostileExportsSecurePort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind a port below 1024")
	}
	dir := exportDir(t)
	file := filepath.Join(t.TempDir(), "exports")
	writeExports(t, file, dir+" 127.0.0.1(rw)\n")
	s := (&server{stdout: &clitest.Buffer{}, log: &clitest.Buffer{}}).start(t, []string{"-exports", file})

	var conn net.Conn
	var err error
	for port := 1023; port > 600; port-- {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
		if conn, err = d.Dial("tcp", s.info.TCP.String()); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	priv := oncrpc.NewTCPTransport(conn, nil)
	defer priv.Close()
	p := &peer{ip: "127.0.0.1", nfs: priv, mnt: priv}
	c, err := p.mount(dir)
	if err != nil {
		t.Fatalf("mount from a reserved port: %v", err)
	}
	uid, gid := clientID()
	if st := getattr(t, p.as(t, uid, gid), c.Root()); st != nfs3.StatusOK {
		t.Fatalf("GETATTR from a reserved port: %v", st)
	}

	tcp := dialPeer(t, s, "127.0.0.1", "tcp")
	if _, err := tcp.mount(dir); !errors.Is(err, nfs3.MountErrAcces) {
		t.Errorf("MNT from an unprivileged port: %v, want MNT3ERR_ACCES", err)
	}
	if st := getattr(t, tcp.as(t, uid, gid), c.Root()); st != nfs3.StatusPerm {
		t.Errorf("GETATTR over TCP from an unprivileged port: %v, want NFS3ERR_PERM", st)
	}
	rdma := dialPeer(t, s, "127.0.0.1", "rdma")
	if st := getattr(t, rdma.as(t, uid, gid), c.Root()); st != nfs3.StatusOK {
		t.Errorf("GETATTR over RDMA: %v, want NFS3_OK (RDMA is not port-checked)", st)
	}
}
