//go:build linux

package nfsserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// exportsEnv serves an exports table through Exports over TCP on 127.0.0.1.
type exportsEnv struct {
	t    *testing.T
	x    *Exports
	addr string
}

// newExportsEnv serves table with %D replaced by a fresh directory, after the setup
// functions have run on that directory.
func newExportsEnv(t *testing.T, table string, setup ...func(dir string)) (*exportsEnv, string) {
	t.Helper()
	return newExportsEnvPrepared(t, table, nil, setup...)
}

// newExportsEnvPrepared is newExportsEnv calling prepare, if set, with the Exports
// before it serves a call.
func newExportsEnvPrepared(t *testing.T, table string, prepare func(*Exports), setup ...func(dir string)) (*exportsEnv, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(dir)
	}
	tab, err := exports.Parse("exports", []byte(strings.ReplaceAll(table, "%D", dir)))
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewExports(Options{StateDir: t.TempDir()}, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(x)
	}
	rs := oncrpc.NewServer(nil)
	x.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rs.Shutdown(ctx)
		cancel()
		l.Close()
		x.Close()
	})
	return &exportsEnv{t: t, x: x, addr: l.Addr().String()}, dir
}

// dialFrom connects from local address ip (port 0: any unprivileged port; else
// that port or the next free one below 1024) and returns a client acting as cred.
func (e *exportsEnv) dialFrom(ip string, privileged bool, cred *oncrpc.AuthSysParams) *client {
	t := e.t
	t.Helper()
	var conn net.Conn
	var err error
	for port := 1023; ; port-- {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		if privileged {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip), Port: port}
		}
		conn, err = d.Dial("tcp", e.addr)
		if err == nil || !privileged || port < 600 {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	tr := oncrpc.NewTCPTransport(conn, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	t.Cleanup(func() { tr.Close() })
	var opts []oncrpc.ClientOption // nil cred: AUTH_NONE
	if cred != nil {
		auth, err := oncrpc.NewAuthSys(cred)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, oncrpc.WithAuth(auth))
	}
	return &client{t: t, tr: tr,
		nfs: oncrpc.NewClient(tr, nfs3.Program, nfs3.Version, opts...),
		mnt: oncrpc.NewClient(tr, nfs3.MountProgram, nfs3.MountVersion, opts...)}
}

func (c *client) mountStatus(path string) (nfs3.FH, nfs3.MountStat) {
	c.t.Helper()
	var r nfs3.MntRes
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.mnt.Call(ctx, uint32(nfs3.MountProcMnt), &nfs3.MntArgs{Path: []byte(path)}, owned{&r}); err != nil {
		c.t.Fatalf("MNT: %v", err)
	}
	return r.FH, r.Status
}

func userCred(uid, gid uint32) *oncrpc.AuthSysParams {
	return &oncrpc.AuthSysParams{MachineName: []byte("test"), UID: uid, GID: gid}
}

// refusedCalls makes one call of most procedures with fh and checks each reply
// decodes with status want (so the short failure results are well formed).
func refusedCalls(t *testing.T, c *client, fh nfs3.FH, want nfs3.Status) {
	t.Helper()
	where := nfs3.DirOpArgs{Dir: fh, Name: []byte("x")}
	check := func(what string, got nfs3.Status) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	var ga nfs3.GetattrRes
	c.must(nfs3.ProcGetattr, &nfs3.GetattrArgs{Object: fh}, &ga)
	check("GETATTR", ga.Status)
	var lk nfs3.LookupRes
	c.must(nfs3.ProcLookup, &nfs3.LookupArgs{What: where}, &lk)
	check("LOOKUP", lk.Status)
	var rd nfs3.ReaddirplusRes
	c.must(nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: fh, DirCount: 4096, MaxCount: 8192}, &rd)
	check("READDIRPLUS", rd.Status)
	var cr nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: where, Mode: nfs3.Unchecked}, &cr)
	check("CREATE", cr.Status)
	var sa nfs3.WccRes
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: fh, Attr: nfs3.Sattr{SetMode: true, Mode: 0o777}}, &sa)
	check("SETATTR", sa.Status)
	var rn nfs3.RenameRes
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: where, To: nfs3.DirOpArgs{Dir: fh, Name: []byte("y")}}, &rn)
	check("RENAME", rn.Status)
	var ln nfs3.LinkRes
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: fh, Link: where}, &ln)
	check("LINK", ln.Status)
	var fs nfs3.FsinfoRes
	c.must(nfs3.ProcFsinfo, &nfs3.FsinfoArgs{Object: fh}, &fs)
	check("FSINFO", fs.Status)
}

// TestHostileExportsUnlistedClient: a client the table does not list cannot mount,
// and a handle it got elsewhere (guessed, sniffed, from a listed host) is STALE on
// every procedure, modifying or not.
func TestHostileExportsUnlistedClient(t *testing.T) {
	e, dir := newExportsEnv(t, "%D 127.0.0.1(rw,insecure)\n")
	os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644)
	good := e.dialFrom("127.0.0.1", false, rootCred())
	root := good.mount(dir)
	f, st := good.lookup(root, "f")
	wantStatus(t, "LOOKUP from the listed client", st, nfs3.StatusOK)

	bad := e.dialFrom("127.0.0.2", false, rootCred())
	if _, ms := bad.mountStatus(dir); ms != nfs3.MountErrAcces {
		t.Errorf("MNT from an unlisted client: %v, want MNT3ERR_ACCES", ms)
	}
	refusedCalls(t, bad, root, nfs3.StatusStale)
	var rr nfs3.ReadRes
	bad.must(nfs3.ProcRead, &nfs3.ReadArgs{File: f, Count: 4}, &rr)
	wantStatus(t, "READ from an unlisted client", rr.Status, nfs3.StatusStale)
	var wr nfs3.WriteRes
	bad.must(nfs3.ProcWrite, &nfs3.WriteArgs{File: f, Count: 1, Data: []byte("x"), Stable: nfs3.FileSync}, &wr)
	wantStatus(t, "WRITE from an unlisted client", wr.Status, nfs3.StatusStale)
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "data" {
		t.Errorf("the file changed: %q", b)
	}
	// NULL stays open to everyone, as a ping.
	if err := bad.nfs.Call(context.Background(), uint32(nfs3.ProcNull), nil, nil); err != nil {
		t.Errorf("NULL: %v", err)
	}
}

// TestHostileExportsRootSquash: root (uid 0, gid 0) from a root_squash client acts as
// nobody: no root-owned setuid file by CREATE or SETATTR, no chown to root, no device.
func TestHostileExportsRootSquash(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the server gives new files the caller's (squashed) uid only when it runs as root")
	}
	e, dir := newExportsEnv(t, "%D *(rw,insecure)\n")
	c := e.dialFrom("127.0.0.1", false, rootCred())
	root := c.mount(dir)

	var cr nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("suid")}, Mode: nfs3.Unchecked,
		Attr: nfs3.Sattr{SetMode: true, Mode: 0o4755, SetUID: true, UID: 0, SetGID: true, GID: 0}}, &cr)
	wantStatus(t, "CREATE", cr.Status, nfs3.StatusOK)
	var sa nfs3.WccRes
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: cr.Obj.FH, Attr: nfs3.Sattr{SetMode: true, Mode: 0o6755}}, &sa)
	noRootSetuid(t, filepath.Join(dir, "suid"))
	fi, _ := os.Lstat(filepath.Join(dir, "suid"))
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != exports.DefaultAnonID || st.Gid != exports.DefaultAnonID {
		t.Errorf("squashed root's file is owned by %d:%d, want 65534:65534", st.Uid, st.Gid)
	}
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: cr.Obj.FH, Attr: nfs3.Sattr{SetUID: true, UID: 0}}, &sa)
	wantStatus(t, "SETATTR uid 0 by squashed root", sa.Status, nfs3.StatusPerm)
	noRootSetuid(t, filepath.Join(dir, "suid"))

	// A root-owned file of the export: squashed root may not make it setuid.
	os.WriteFile(filepath.Join(dir, "rootfile"), []byte("#!/bin/sh\n"), 0o755)
	fh, _ := c.lookup(root, "rootfile")
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: fh, Attr: nfs3.Sattr{SetMode: true, Mode: 0o4755}}, &sa)
	wantStatus(t, "SETATTR setuid on root's file", sa.Status, nfs3.StatusPerm)
	noRootSetuid(t, filepath.Join(dir, "rootfile"))

	// Nor give it a new name (Linux's protected_hardlinks, which the server, linking
	// as root, applies for the caller), nor take group 0.
	os.Chmod(filepath.Join(dir, "rootfile"), 0o4755)
	var ln nfs3.LinkRes
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: fh, Link: nfs3.DirOpArgs{Dir: root, Name: []byte("alias")}}, &ln)
	wantStatus(t, "LINK of root's setuid file by squashed root", ln.Status, nfs3.StatusPerm)
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: cr.Obj.FH, Attr: nfs3.Sattr{SetGID: true, GID: 0}}, &sa)
	wantStatus(t, "SETATTR gid 0 by squashed root", sa.Status, nfs3.StatusPerm)

	for _, typ := range []nfs3.FileType{nfs3.TypeChr, nfs3.TypeBlk} {
		c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("dev")}, Type: typ,
			Attr: nfs3.Sattr{SetMode: true, Mode: 0o666}, Spec: nfs3.SpecData{Major: 1, Minor: 3}}, &cr)
		wantStatus(t, "MKNOD "+typ.String()+" by squashed root", cr.Status, nfs3.StatusPerm)
	}
	if _, err := os.Lstat(filepath.Join(dir, "dev")); err == nil {
		t.Errorf("a device was made")
	}
	c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("fifo")}, Type: nfs3.TypeFifo}, &cr)
	wantStatus(t, "MKNOD FIFO", cr.Status, nfs3.StatusOK)

	// setgid on a file of a group the (non-root) caller is not in is dropped.
	u := e.dialFrom("127.0.0.1", false, userCred(1000, 1000))
	uroot := u.mount(dir)
	var ucr nfs3.CreateRes
	u.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: uroot, Name: []byte("g")}, Mode: nfs3.Unchecked}, &ucr)
	os.Chown(filepath.Join(dir, "g"), 1000, 0)
	u.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: ucr.Obj.FH, Attr: nfs3.Sattr{SetMode: true, Mode: 0o2755}}, &sa)
	wantStatus(t, "SETATTR setgid", sa.Status, nfs3.StatusOK)
	if fi, _ := os.Lstat(filepath.Join(dir, "g")); fi.Mode()&os.ModeSetgid != 0 {
		t.Errorf("setgid kept on a file of group 0 for a caller outside it: %v", fi.Mode())
	}
}

// noRootSetuid fails if path is a setuid or setgid file owned by root or group 0.
func noRootSetuid(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if (fi.Mode()&os.ModeSetuid != 0 && st.Uid == 0) || (fi.Mode()&os.ModeSetgid != 0 && st.Gid == 0) {
		t.Fatalf("%s is %v owned by %d:%d", path, fi.Mode(), st.Uid, st.Gid)
	}
}

// TestHostileExportsNoRootSquash: no_root_squash for one host keeps root's identity
// there only.
func TestHostileExportsNoRootSquash(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	e, dir := newExportsEnv(t, "%D 127.0.0.3(rw,no_root_squash,insecure) 127.0.0.4(rw,insecure,anonuid=77,anongid=78) *(rw,insecure,all_squash,anonuid=4321,anongid=4322)\n")
	for i, tc := range []struct {
		ip       string
		cred     *oncrpc.AuthSysParams
		uid, gid uint32
	}{
		{"127.0.0.3", rootCred(), 0, 0},
		{"127.0.0.1", rootCred(), 4321, 4322},
		{"127.0.0.1", userCred(1000, 1000), 4321, 4322},
		{"127.0.0.4", nil, 77, 78},                                                              // AUTH_NONE acts as the entry's anonymous identity
		{"127.0.0.4", userCred(0, 5), 77, 5},                                                    // root_squash maps uid 0, keeps gid 5
		{"127.0.0.4", userCred(1000, 0), 1000, 78},                                              // ... and gid 0 of anyone
		{"127.0.0.4", userCred(1<<32-1, 1<<32-1), 77, 78},                                       // (uid_t)-1 is nobody: anonymous, not left to root
		{"127.0.0.3", userCred(1<<32-1, 1<<32-1), exports.DefaultAnonID, exports.DefaultAnonID}, // ... under no_root_squash too
	} {
		c := e.dialFrom(tc.ip, false, tc.cred)
		name := fmt.Sprintf("%s-%d", tc.ip, i)
		fh := c.mount(dir)
		c.create(fh, name)
		fi, _ := os.Lstat(filepath.Join(dir, name))
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != tc.uid || st.Gid != tc.gid {
			t.Errorf("%s as %+v: file owned by %d:%d, want %d:%d", tc.ip, tc.cred, st.Uid, st.Gid, tc.uid, tc.gid)
		}
	}
}

// TestCredAllSquashBeatsNoRootSquash: all_squash squashes every caller, root too,
// whatever root_squash or no_root_squash says, as knfsd does (nfsd_setuser maps
// everyone when NFSEXP_ALLSQUASH is set); no_root_squash alone keeps root's
// identity. It needs no root: it asks credOf directly.
func TestCredAllSquashBeatsNoRootSquash(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		opts     string
		uid, gid uint32
	}{
		{"rw,all_squash,no_root_squash,anonuid=77,anongid=78", 77, 78},
		{"rw,no_root_squash,all_squash,anonuid=77,anongid=78", 77, 78},
		{"rw,no_root_squash,all_squash,no_all_squash,anonuid=77,anongid=78", 0, 0},
		{"rw,anonuid=77,anongid=78", 77, 78},
	} {
		tab, err := exports.Parse("x", []byte(dir+" *("+tc.opts+")\n"))
		if err != nil {
			t.Fatal(err)
		}
		x, err := NewExports(Options{HandleKey: fuzzKey}, tab, nil)
		if err != nil {
			t.Fatal(err)
		}
		req := &oncrpc.Request{RemoteAddr: &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 700}, Netid: "tcp", AuthSys: rootCred()}
		if c := x.Servers()[0].credOf(context.Background(), req); c.uid != tc.uid || c.gid != tc.gid {
			t.Errorf("*(%s): root acts as %d:%d, want %d:%d", tc.opts, c.uid, c.gid, tc.uid, tc.gid)
		}
		x.Close()
	}
}

// TestHostileExportsReadOnly: ro for one client, rw for another, on one export.
func TestHostileExportsReadOnly(t *testing.T) {
	e, dir := newExportsEnv(t, "%D 127.0.0.2(rw,insecure,no_root_squash) *(insecure,no_root_squash)\n")
	os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o666)
	ro := e.dialFrom("127.0.0.1", false, rootCred())
	root := ro.mount(dir)
	f, _ := ro.lookup(root, "f")
	wr := ro.write(f, 0, []byte("XX"), nfs3.FileSync)
	wantStatus(t, "WRITE on ro", wr.Status, nfs3.StatusROFS)
	var cr nfs3.CreateRes
	ro.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("n")}, Mode: nfs3.Unchecked}, &cr)
	wantStatus(t, "CREATE on ro", cr.Status, nfs3.StatusROFS)
	var sa nfs3.WccRes
	ro.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: f, Attr: nfs3.Sattr{SetMode: true, Mode: 0o777}}, &sa)
	wantStatus(t, "SETATTR on ro", sa.Status, nfs3.StatusROFS)
	var rm nfs3.WccRes
	ro.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}}, &rm)
	wantStatus(t, "REMOVE on ro", rm.Status, nfs3.StatusROFS)
	var ac nfs3.AccessRes
	ro.must(nfs3.ProcAccess, &nfs3.AccessArgs{Object: f, Access: nfs3.AccessRead | nfs3.AccessModify}, &ac)
	if ac.Access != nfs3.AccessRead {
		t.Errorf("ACCESS on ro granted %#x, want read only", ac.Access)
	}

	rw := e.dialFrom("127.0.0.2", false, rootCred())
	wr = rw.write(f, 0, []byte("XX"), nfs3.FileSync)
	wantStatus(t, "WRITE from the rw client", wr.Status, nfs3.StatusOK)
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "XXta" {
		t.Errorf("file %q", b)
	}
}

// TestHostileExportsSecurePort: "secure" (the default) refuses TCP callers from
// unprivileged source ports: MOUNT with MNT3ERR_ACCES, NFS with NFS3ERR_PERM.
func TestHostileExportsSecurePort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind a port below 1024")
	}
	e, dir := newExportsEnv(t, "%D *(rw)\n")
	priv := e.dialFrom("127.0.0.1", true, rootCred())
	root := priv.mount(dir)
	unpriv := e.dialFrom("127.0.0.1", false, rootCred())
	if _, ms := unpriv.mountStatus(dir); ms != nfs3.MountErrAcces {
		t.Errorf("MNT from port >= 1024: %v, want MNT3ERR_ACCES", ms)
	}
	refusedCalls(t, unpriv, root, nfs3.StatusPerm)
	if _, st := priv.getattr(root); st != nfs3.StatusOK {
		t.Errorf("GETATTR from a reserved port: %v", st)
	}
}
