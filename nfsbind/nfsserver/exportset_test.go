//go:build linux

package nfsserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestExportsRouting serves a parent and a nested export with fsid=: each MNT reaches
// its own export, handles and attributes carry each export's id, EXPORT lists both
// with their clients, and a handle of one export is served by that export.
func TestExportsRouting(t *testing.T) {
	e, dir := newExportsEnv(t, "%D *(rw,insecure,no_root_squash)\n%D/inner 127.0.0.1(ro,insecure,no_root_squash,fsid=77) 10.0.0.0/8\n", func(dir string) {
		if err := os.Mkdir(filepath.Join(dir, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "inner", "f"), []byte("inner"), 0o644)
	})
	c := e.dialFrom("127.0.0.1", false, rootCred())
	outer := c.mount(dir)
	inner := c.mount(dir + "/inner")
	viaOuter, st := c.lookup(outer, "inner")
	wantStatus(t, "LOOKUP inner from the parent export", st, nfs3.StatusOK)
	idOf := func(fh nfs3.FH) uint32 { return binary.BigEndian.Uint32(fh[4:]) }
	if idOf(inner) != 77 || idOf(outer) == 77 || idOf(viaOuter) != idOf(outer) {
		t.Errorf("export ids: inner %d, outer %d, inner via outer %d", idOf(inner), idOf(outer), idOf(viaOuter))
	}
	a, st := c.getattr(inner)
	wantStatus(t, "GETATTR inner", st, nfs3.StatusOK)
	b, _ := c.getattr(viaOuter)
	if a.FSID != 77 || b.FSID == 77 || a.FileID != b.FileID {
		t.Errorf("fsid via inner %d, via outer %d (fileids %d %d)", a.FSID, b.FSID, a.FileID, b.FileID)
	}
	// The same directory is rw through the parent and ro through the nested export.
	f, _ := c.lookup(inner, "f")
	wantStatus(t, "WRITE through the ro nested export", c.write(f, 0, []byte("x"), nfs3.FileSync).Status, nfs3.StatusROFS)
	f2, _ := c.lookup(viaOuter, "f")
	wantStatus(t, "WRITE through the rw parent", c.write(f2, 0, []byte("x"), nfs3.FileSync).Status, nfs3.StatusOK)

	// RENAME and LINK across exports are NFS3ERR_XDEV, as from knfsd.
	var rn nfs3.RenameRes
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: viaOuter, Name: []byte("f")}, To: nfs3.DirOpArgs{Dir: inner, Name: []byte("g")}}, &rn)
	wantStatus(t, "RENAME across exports", rn.Status, nfs3.StatusXDev)
	var ln nfs3.LinkRes
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: f2, Link: nfs3.DirOpArgs{Dir: inner, Name: []byte("h")}}, &ln)
	wantStatus(t, "LINK across exports", ln.Status, nfs3.StatusXDev)

	var ex nfs3.ExportRes
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.mnt.Call(ctx, uint32(nfs3.MountProcExport), nil, owned{&ex}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range ex.Exports {
		var g []string
		for _, x := range n.Groups {
			g = append(g, string(x))
		}
		got = append(got, string(n.Dir)+" "+strings.Join(g, ","))
	}
	if want := dir + " *;" + dir + "/inner 127.0.0.1,10.0.0.0/8"; strings.Join(got, ";") != want {
		t.Errorf("EXPORT %q, want %q", strings.Join(got, ";"), want)
	}
	if _, ms := c.mountStatus("/nonexistent"); ms != nfs3.MountErrNoEnt {
		t.Errorf("MNT of no export: %v", ms)
	}
}

// TestExportsMountFallsBackToParent: knfsd's mountd (auth_authenticate, nfs-utils
// utils/mountd/auth.c) tries the longest exported path first and, when that export
// is not exported to the caller, tries the parent exports. So a client admitted to
// /srv but not listed for /srv/inner can MNT /srv/inner, through /srv's export and
// with /srv's options (the handle carries /srv's export id), as it can LOOKUP
// "inner" from /srv's root; a client of neither is refused.
func TestExportsMountFallsBackToParent(t *testing.T) {
	e, dir := newExportsEnv(t, "%D 127.0.0.1(rw,insecure)\n%D/inner 10.0.0.0/8(rw,insecure)\n", func(dir string) {
		if err := os.Mkdir(filepath.Join(dir, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
	})
	c := e.dialFrom("127.0.0.1", false, rootCred())
	root := c.mount(dir)
	viaRoot, st := c.lookup(root, "inner")
	wantStatus(t, "LOOKUP inner from the parent export", st, nfs3.StatusOK)
	fh, ms := c.mountStatus(dir + "/inner")
	if ms != nfs3.MountOK {
		t.Fatalf("MNT %s/inner by a client of the parent export: %v, want MNT3_OK (knfsd's mountd falls back to the parent export)", dir, ms)
	}
	if !bytes.Equal(fh, viaRoot) {
		t.Errorf("MNT %s/inner gave %x, want the parent export's handle %x", dir, fh, viaRoot)
	}
	if _, ms := e.dialFrom("127.0.0.2", false, rootCred()).mountStatus(dir + "/inner"); ms != nfs3.MountErrAcces {
		t.Errorf("MNT %s/inner by a client of neither export: %v, want MNT3ERR_ACCES", dir, ms)
	}
}

// TestExportsMountPathRepeatedSlashes: knfsd's mountd collapses repeated slashes and
// drops trailing ones in the MNT path (auth_fixpath) before matching it against the
// exports, so "dir//sub" mounts dir/sub and "dir//inner/" reaches the nested export
// dir/inner; "." and ".." components are still refused.
func TestExportsMountPathRepeatedSlashes(t *testing.T) {
	e, dir := newExportsEnv(t, "%D *(rw,insecure)\n%D/inner *(ro,insecure,fsid=77)\n", func(dir string) {
		for _, d := range []string{"sub", "inner"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	})
	c := e.dialFrom("127.0.0.1", false, rootCred())
	sub, st := c.lookup(c.mount(dir), "sub")
	wantStatus(t, "LOOKUP sub", st, nfs3.StatusOK)
	for _, p := range []string{dir + "//sub", dir + "/sub//", "/" + dir + "///sub/"} {
		if fh, ms := c.mountStatus(p); ms != nfs3.MountOK || !bytes.Equal(fh, sub) {
			t.Errorf("MNT %s: %v %x, want MNT3_OK and sub's handle %x", p, ms, fh, sub)
		}
	}
	if fh, ms := c.mountStatus(dir + "//inner/"); ms != nfs3.MountOK || len(fh) < 8 || binary.BigEndian.Uint32(fh[4:]) != 77 {
		t.Errorf("MNT %s//inner/: %v %x, want MNT3_OK and a handle of the nested export (id 77)", dir, ms, fh)
	}
	for _, p := range []string{dir + "//../sub", dir + "/.//sub"} {
		if _, ms := c.mountStatus(p); ms != nfs3.MountErrInval {
			t.Errorf("MNT %s: %v, want MNT3ERR_INVAL", p, ms)
		}
	}
}

// TestExportsMountFollowsLinksWithinExport: knfsd's mountd resolves the symbolic
// links of the MNT path (realpath, in get_rootfh) before matching it against the
// exports, so a link inside the export to a directory inside it mounts that
// directory, with the directory's own handle. A link that leads out of the export
// (absolute, or ".." above its root) and a loop of links are MNT3ERR_ACCES, a
// dangling link MNT3ERR_NOENT, a link to a file MNT3ERR_NOTDIR.
func TestExportsMountFollowsLinksWithinExport(t *testing.T) {
	e, dir := newExportsEnv(t, "%D *(rw,insecure)\n", func(dir string) {
		for _, d := range []string{"real", "a", "real/deep"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for link, target := range map[string]string{
			"link":     "real",
			"a/up":     "../real",
			"a/chain":  "up/./deep",
			"out":      "..",
			"a/outer":  "../../x",
			"abs":      filepath.Join(dir, "real"),
			"loop":     "loop",
			"dangling": "missing",
			"tofile":   "file",
		} {
			if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
	})
	c := e.dialFrom("127.0.0.1", false, rootCred())
	root := c.mount(dir)
	real, st := c.lookup(root, "real")
	wantStatus(t, "LOOKUP real", st, nfs3.StatusOK)
	deep, st := c.lookup(real, "deep")
	wantStatus(t, "LOOKUP real/deep", st, nfs3.StatusOK)
	for p, want := range map[string]nfs3.FH{"/link": real, "/a/up": real, "/a/chain": deep, "/link/deep": deep} {
		fh, ms := c.mountStatus(dir + p)
		if ms != nfs3.MountOK || !bytes.Equal(fh, want) {
			t.Errorf("MNT %s%s: %v %x, want MNT3_OK and %x", dir, p, ms, fh, want)
		}
	}
	for p, want := range map[string]nfs3.MountStat{
		"/out":      nfs3.MountErrAcces,
		"/a/outer":  nfs3.MountErrAcces,
		"/abs":      nfs3.MountErrAcces,
		"/loop":     nfs3.MountErrAcces,
		"/dangling": nfs3.MountErrNoEnt,
		"/tofile":   nfs3.MountErrNotDir,
	} {
		if _, ms := c.mountStatus(dir + p); ms != want {
			t.Errorf("MNT %s%s: %v, want %v", dir, p, ms, want)
		}
	}
}

// TestExportsMountFollowsLinksWithinExportWalk: the same where openat2 is missing.
func TestExportsMountFollowsLinksWithinExportWalk(t *testing.T) {
	noOpenat2.Store(true)
	defer noOpenat2.Store(false)
	TestExportsMountFollowsLinksWithinExport(t)
}

// TestExportsLoad: a table that cannot be loaded (missing directory, two exports with
// one fsid, no exports) leaves the table in force; a removed export's handles go
// stale; re-adding it revives them.
func TestExportsLoad(t *testing.T) {
	e, dir := newExportsEnv(t, "%D *(rw,insecure)\n")
	c := e.dialFrom("127.0.0.1", false, rootCred())
	root := c.mount(dir)
	other := t.TempDir()
	for _, bad := range []string{
		dir + " *\n/nonexistent/dir *\n",
		dir + " *(fsid=5)\n" + other + " *(fsid=5)\n",
		"",
	} {
		tab, err := exports.Parse("exports", []byte(bad))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.x.Load(tab); err == nil {
			t.Errorf("Load accepted %q", bad)
		}
		if _, st := c.getattr(root); st != nfs3.StatusOK {
			t.Errorf("after the refused table %q: GETATTR %v", bad, st)
		}
	}
	tab, _ := exports.Parse("exports", []byte(other+" *(rw,insecure)\n"))
	if err := e.x.Load(tab); err != nil {
		t.Fatal(err)
	}
	if _, st := c.getattr(root); st != nfs3.StatusStale {
		t.Errorf("handle of a removed export: %v, want NFS3ERR_STALE", st)
	}
	if _, ms := c.mountStatus(dir); ms != nfs3.MountErrNoEnt {
		t.Errorf("MNT of a removed export: %v", ms)
	}
	tab, _ = exports.Parse("exports", []byte(dir+" *(rw,insecure)\n"+other+" *(rw,insecure)\n"))
	if err := e.x.Load(tab); err != nil {
		t.Fatal(err)
	}
	if _, st := c.getattr(root); st != nfs3.StatusOK {
		t.Errorf("handle of a re-added export: %v", st)
	}
	if n := len(e.x.Servers()); n != 2 {
		t.Errorf("%d servers, want 2", n)
	}
}

// TestHostileExportsHostNames: host-name and wildcard clients match by verified
// reverse lookup through the Resolver; a PTR record the forward lookup does not
// confirm matches nothing.
func TestHostileExportsHostNames(t *testing.T) {
	dir := t.TempDir()
	tab, err := exports.Parse("exports", []byte(dir+" good.example.com(rw,insecure) *.lab.example.com(ro,insecure)\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeResolver{
		ptr:   map[string][]string{"127.0.0.1": {"good.example.com."}, "127.0.0.2": {"good.example.com"}, "127.0.0.3": {"x.lab.example.com"}},
		hosts: map[string][]string{"good.example.com.": {"127.0.0.1"}, "good.example.com": {"127.0.0.1"}, "x.lab.example.com": {"127.0.0.3"}},
	}
	x, err := NewExports(Options{}, tab, r)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := x.Servers()[0]
	for _, tc := range []struct {
		ip   string
		want string // "" refused, else ro or rw
	}{{"127.0.0.1", "rw"}, {"127.0.0.2", ""}, {"127.0.0.3", "ro"}, {"127.0.0.4", ""}} {
		req := reqFrom(tc.ip, 700)
		g := s.grant(context.Background(), req)
		got := ""
		if g != nil {
			got = map[bool]string{true: "ro", false: "rw"}[g.ReadOnly]
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.ip, got, tc.want)
		}
	}
}

// fakeResolver answers from maps: no DNS in tests.
type fakeResolver struct{ ptr, hosts map[string][]string }

func (r *fakeResolver) LookupAddr(_ context.Context, addr string) ([]string, error) {
	if n, ok := r.ptr[addr]; ok {
		return n, nil
	}
	return nil, errors.New("no PTR record")
}

func (r *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if a, ok := r.hosts[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// reqFrom is a request from ip:port over TCP.
func reqFrom(ip string, port int) *oncrpc.Request {
	return &oncrpc.Request{RemoteAddr: &net.TCPAddr{IP: net.ParseIP(ip), Port: port}, Netid: "tcp"}
}

// TestClientListDoesNotAllocate: with an address-only client list, the per-call check
// (grant, secure port, squashing) adds no allocation to READ, WRITE and GETATTR.
func TestClientListDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	fakeClock(t)
	tab, err := exports.Parse("exports", []byte("/x 10.0.0.0/8(rw) 2001:db8::/32 127.0.0.1(rw,no_root_squash) *(ro)\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		proc nfs3.Proc
		args interface{ withFH(nfs3.FH) xdr.EncoderTo }
	}{
		{"READ 4KiB", nfs3.ProcRead, readBench{4096}},
		{"WRITE 4KiB", nfs3.ProcWrite, writeBench{4096}},
		{"GETATTR", nfs3.ProcGetattr, getattrBench{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMemRig(t, Options{}, c.proc, c.args)
			r.srv.SetClients(&tab.Exports[0], nil)
			r.cache(t)
			if st, _ := r.roundTrip(t); st != nfs3.StatusOK {
				t.Fatalf("reply %v", st)
			}
			if n := testing.AllocsPerRun(200, func() {
				if st, _ := r.roundTrip(t); st != nfs3.StatusOK {
					t.Fatalf("reply %v", st)
				}
			}); n != 0 {
				t.Fatalf("%v allocations per call, want 0", n)
			}
		})
	}
}

// BenchmarkClientList measures what the per-call client check costs a GETATTR of an
// open file (the cheapest procedure that takes it) and a READ of 4 KiB: no list, an
// address list whose match is its last entry (20 networks before it), and a list
// matched by a cached host name. Compare the rows of one run.
func BenchmarkClientList(b *testing.B) {
	var nets strings.Builder
	for i := range 20 {
		fmt.Fprintf(&nets, " 10.%d.0.0/16(rw)", i)
	}
	r := &fakeResolver{ptr: map[string][]string{"127.0.0.1": {"h.example.com"}}, hosts: map[string][]string{"h.example.com": {"127.0.0.1"}}}
	for _, op := range []struct {
		name string
		proc nfs3.Proc
		args interface{ withFH(nfs3.FH) xdr.EncoderTo }
	}{{"GETATTR", nfs3.ProcGetattr, getattrBench{}}, {"READ4KiB", nfs3.ProcRead, readBench{4096}}} {
		for _, c := range []struct{ name, table string }{
			{"none", ""},
			{"addresses", "/x" + nets.String() + " 127.0.0.0/8(rw,no_root_squash)\n"},
			{"hostname", "/x" + nets.String() + " h.example.com(rw,no_root_squash)\n"},
		} {
			b.Run("op="+op.name+"/list="+c.name, func(b *testing.B) {
				rig := newMemRig(b, Options{}, op.proc, op.args)
				if c.table != "" {
					tab, err := exports.Parse("bench", []byte(c.table))
					if err != nil {
						b.Fatal(err)
					}
					rig.srv.SetClients(&tab.Exports[0], exports.NewNames(r, 0))
				}
				rig.cache(b)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if st, _ := rig.roundTrip(b); st != nfs3.StatusOK {
						b.Fatalf("reply %v", st)
					}
				}
			})
		}
	}
}

// FuzzExportsRefused sends any procedure with any arguments, through Exports'
// handler, from a caller the table does not list: every answer is NFS3ERR_STALE with
// an empty failure body (NULL alone is answered normally), whatever export id or
// garbage the arguments carry, and nothing in the export changes.
func FuzzExportsRefused(f *testing.F) {
	dir := f.TempDir()
	tab, err := exports.Parse("fuzz", []byte(dir+" 10.0.0.0/8(rw,no_root_squash,insecure)\n"))
	if err != nil {
		f.Fatal(err)
	}
	x, err := NewExports(Options{HandleKey: fuzzKey}, tab, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { x.Close() })
	h := x.NFSHandler()
	root := x.Servers()[0].RootHandle()
	var e xdr.Encoder
	(&nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("x")}, Mode: nfs3.Unchecked}).EncodeXDR(&e)
	f.Add(uint8(nfs3.ProcCreate), append([]byte(nil), e.Bytes()...))
	e.Reset(nil)
	(&nfs3.GetattrArgs{Object: root}).EncodeXDR(&e)
	f.Add(uint8(nfs3.ProcGetattr), append([]byte(nil), e.Bytes()...))
	f.Add(uint8(nfs3.ProcRemove), []byte{0, 0, 0, 48})
	f.Add(uint8(99), []byte{})
	f.Fuzz(func(t *testing.T, proc uint8, args []byte) {
		req := reqFrom("192.0.2.1", 700)
		req.Header.Proc = uint32(proc)
		req.Args = xdr.NewDecoder(args)
		var res xdr.Encoder
		err := h.ServeRPC(context.Background(), req, &res)
		p := nfs3.Proc(proc)
		if p == nfs3.ProcNull || int(p) >= len(failWords) {
			return // NULL answers; unknown procedures are PROC_UNAVAIL (err)
		}
		if err != nil {
			t.Fatalf("proc %v: error %v, want a refusal", p, err)
		}
		b := res.Bytes()
		if len(b) != 4+4*failWords[p] || binary.BigEndian.Uint32(b) != uint32(nfs3.StatusStale) {
			t.Fatalf("proc %v: reply %x, want NFS3ERR_STALE and %d zero words", p, b, failWords[p])
		}
		for _, c := range b[4:] {
			if c != 0 {
				t.Fatalf("proc %v: reply %x", p, b)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("proc %v changed the export: %v", p, ents)
		}
	})
}

// TestExportsLinkLocalCallerInNetwork: a caller over IPv6 link-local carries its zone
// in its TCP address (Go sets net.TCPAddr.Zone from the socket's scope id); a network
// entry still admits it by its address bits, as knfsd's mountd does: fe80::/10,
// fe80::1/128 and ::/0 admit fe80::1%eth0.
func TestExportsLinkLocalCallerInNetwork(t *testing.T) {
	dir := t.TempDir()
	for _, spec := range []string{"fe80::/10", "fe80::1/128", "::/0"} {
		tab, err := exports.Parse("x", []byte(dir+" "+spec+"(rw,insecure)\n"))
		if err != nil {
			t.Fatal(err)
		}
		x, err := NewExports(Options{HandleKey: fuzzKey}, tab, nil)
		if err != nil {
			t.Fatal(err)
		}
		req := &oncrpc.Request{RemoteAddr: &net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 700, Zone: "eth0"}, Netid: "tcp6"}
		if g := x.Servers()[0].grant(context.Background(), req); g == nil {
			t.Errorf("%s: caller fe80::1%%eth0 refused", spec)
		}
		x.Close()
	}
}

// TestExportsKeepSingleServerHandles: an export without fsid= issues the handles a
// plain Server of the same directory and key issues, so a server moving from -export
// to -exports does not make clients' handles stale.
func TestExportsKeepSingleServerHandles(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Root: dir, HandleKey: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tab, _ := exports.Parse("x", []byte(dir+"/ *(rw)\n"))
	x, err := NewExports(Options{HandleKey: fuzzKey}, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if a, b := s.RootHandle(), x.Servers()[0].RootHandle(); string(a) != string(b) {
		t.Errorf("root handle %x through Exports, %x from a plain Server", b, a)
	}
}

// TestExportsShareWriteVerifier: a file reached through two exports (a nested export
// and its parent) has one page cache, and Linux reports a writeback error to one
// fsync only. A client that wrote UNSTABLE through the parent export, while another
// COMMIT through the nested export met the error, must find the verifier changed at
// its own COMMIT, which the kernel answers 0: the exports of an Exports share one
// verifier, as knfsd's exports share one. Loading a table that opens another
// export's Server does not change it.
func TestExportsShareWriteVerifier(t *testing.T) {
	var failFsync atomic.Bool // fail the next fsync, once
	e, dir := newExportsEnvPrepared(t, "%D *(rw,insecure,no_root_squash)\n%D/inner *(rw,insecure,no_root_squash,fsid=77)\n", func(x *Exports) {
		for _, s := range x.Servers() {
			s.sys.fsync = func(fd int) error {
				if failFsync.CompareAndSwap(true, false) {
					return unix.EIO // the kernel's errseq: reported once, then 0
				}
				return unix.Fsync(fd)
			}
		}
	}, func(dir string) {
		if err := os.Mkdir(filepath.Join(dir, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "inner", "f"), nil, 0o666); err != nil {
			t.Fatal(err)
		}
	})
	c := e.dialFrom("127.0.0.1", false, rootCred())
	outer, inner := c.mount(dir), c.mount(dir+"/inner")
	viaOuter, st := c.lookup(outer, "inner")
	wantStatus(t, "LOOKUP inner", st, nfs3.StatusOK)
	fOuter, st := c.lookup(viaOuter, "f")
	wantStatus(t, "LOOKUP f through the parent export", st, nfs3.StatusOK)
	fInner, st := c.lookup(inner, "f")
	wantStatus(t, "LOOKUP f through the nested export", st, nfs3.StatusOK)
	commit := func(what string, fh nfs3.FH, want nfs3.Status) nfs3.CommitRes {
		t.Helper()
		var r nfs3.CommitRes
		c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: fh}, &r)
		wantStatus(t, what, r.Status, want)
		return r
	}

	w := c.write(fOuter, 0, []byte("precious"), nfs3.Unstable)
	wantStatus(t, "UNSTABLE WRITE through the parent export", w.Status, nfs3.StatusOK)
	failFsync.Store(true)
	commit("COMMIT through the nested export meeting a writeback error", fInner, nfs3.StatusIO)
	if cr := commit("COMMIT through the parent export", fOuter, nfs3.StatusOK); cr.Verf == w.Verf {
		t.Fatalf("COMMIT through the parent export answers NFS3_OK with the WRITE's verifier %x after the error met through the nested export: the client drops data that was lost", cr.Verf)
	}

	before := commit("COMMIT", fOuter, nfs3.StatusOK).Verf
	other := t.TempDir()
	tab, err := exports.Parse("exports", []byte(strings.ReplaceAll("%D *(rw,insecure,no_root_squash)\n%D/inner *(rw,insecure,no_root_squash,fsid=77)\n", "%D", dir)+other+" *(rw,insecure)\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.x.Load(tab); err != nil {
		t.Fatal(err)
	}
	if after := commit("COMMIT after a Load opened another export", fOuter, nfs3.StatusOK).Verf; after != before {
		t.Errorf("a Load that opened another export changed the verifier %x to %x", before, after)
	}
}
