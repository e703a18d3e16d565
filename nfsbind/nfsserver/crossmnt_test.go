//go:build linux

package nfsserver

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// mountTmpfs mounts a tmpfs named src on dir for the rest of the test (which runs in
// a mount namespace of its own, see inPrivateMountNS), skipping the test when it
// cannot.
func mountTmpfs(t *testing.T, src, dir string) {
	t.Helper()
	if err := unix.Mount(src, dir, "tmpfs", 0, "mode=0777"); err != nil {
		t.Skipf("cannot mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// inoOf returns the inode number of path.
func inoOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// devOf returns the device of path.
func devOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// mountsBelow builds, in top, a file "a" on top's own file system, a tmpfs on "sub"
// holding the file "f" and the directory "d", and on "bind" a bind mount of a
// directory of top's own file system from outside top, holding "o". It returns the
// inode numbers of the directories "sub" and "bind" the mounts cover.
func mountsBelow(t *testing.T, top string) (subIno, bindIno uint64) {
	t.Helper()
	outside := t.TempDir() // the same file system as top, but not below it
	for _, f := range []struct{ path, data string }{
		{filepath.Join(top, "a"), "on the export's own file system"},
		{filepath.Join(outside, "o"), "outside the export"},
	} {
		if err := os.WriteFile(f.path, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sub, bind := filepath.Join(top, "sub"), filepath.Join(top, "bind")
	for _, d := range []string{sub, bind} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	subIno, bindIno = inoOf(t, sub), inoOf(t, bind)
	mountTmpfs(t, "nfsserver-crossmnt", sub)
	if err := os.WriteFile(filepath.Join(sub, "f"), []byte("on the file system mounted below"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(sub, "d"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(outside, bind, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount %s on %s: %v", outside, bind, err)
	}
	t.Cleanup(func() { unix.Unmount(bind, unix.MNT_DETACH) })
	return subIno, bindIno
}

// readdirplus returns the entries of dir by name, from one READDIRPLUS.
func (c *client) readdirplus(dir nfs3.FH) map[string]nfs3.DirEntryPlus {
	c.t.Helper()
	var r nfs3.ReaddirplusRes
	c.must(nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: dir, DirCount: 65536, MaxCount: 65536}, &r)
	wantStatus(c.t, "READDIRPLUS", r.Status, nfs3.StatusOK)
	if !r.EOF {
		c.t.Fatal("READDIRPLUS did not reach the end of the directory")
	}
	m := map[string]nfs3.DirEntryPlus{}
	for _, en := range r.Entries {
		m[string(en.Name)] = en
	}
	return m
}

// readdir4 returns the entries of dir by name, from one READDIR asking for mask.
func (c *v4client) readdir4(dir nfs4.FH, mask nfs4.Bitmap4) (nfs4.Status, map[string]nfs4.Entry4) {
	c.t.Helper()
	res := c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.ReaddirArgs{DirCount: 65536, MaxCount: 65536, AttrRequest: mask})
	if res.Status != nfs4.OK {
		return res.Status, nil
	}
	m := map[string]nfs4.Entry4{}
	for _, en := range res.Results[2].(*nfs4.ReaddirRes).Entries {
		m[string(en.Name)] = en
	}
	return nfs4.OK, m
}

// TestNoCrossmntHidesMountsBelow: without crossmnt, nothing mounted below the export
// root is served, neither a file system of its own (a tmpfs) nor a bind mount of a
// directory of the export's own file system, in NFSv3, MOUNT and NFSv4.1. knfsd shows
// the directory a mount covers instead (nfsd_cross_mnt does not cross), which a server
// in user space cannot reach, so: LOOKUP of a mount point is NFS3ERR_ACCES
// (NFS4ERR_ACCESS); READDIRPLUS lists it with the covered directory's fileid and
// neither attributes nor handle, as knfsd lists every mount point (compose_entry_fh);
// NFSv4 READDIR gives it rdattr_error NFS4ERR_ACCESS alone; MNT of a directory on it
// is MNT3ERR_ACCES, as mountd refuses one "below nearest filesystem"; and CREATE of
// its name does not open it. The server used to cross every mount point, so that an
// export of / served /proc, /sys and every other mount.
func TestNoCrossmntHidesMountsBelow(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	top := t.TempDir()
	subIno, bindIno := mountsBelow(t, top)
	e := newEnv(t, Options{Root: top})
	c := e.c

	a, st := c.lookup(e.root, "a")
	wantStatus(t, "LOOKUP a", st, nfs3.StatusOK)
	for _, name := range []string{"sub", "bind"} {
		_, st := c.lookup(e.root, name)
		wantStatus(t, "LOOKUP of the mount point "+name, st, nfs3.StatusAcces)
	}

	ents := c.readdirplus(e.root)
	if en := ents["a"]; !en.Attr.Present || !en.Handle.Present || !bytes.Equal(en.Handle.FH, a) {
		t.Errorf("READDIRPLUS entry a: %+v, want its attributes and handle", en)
	}
	for name, ino := range map[string]uint64{"sub": subIno, "bind": bindIno} {
		en, ok := ents[name]
		switch {
		case !ok:
			t.Errorf("READDIRPLUS does not list the mount point %s", name)
		case en.Attr.Present || en.Handle.Present:
			t.Errorf("READDIRPLUS entry %s: attributes %v, handle %v, want neither", name, en.Attr.Present, en.Handle.Present)
		case en.FileID != ino:
			t.Errorf("READDIRPLUS entry %s: fileid %d, want %d, the covered directory's", name, en.FileID, ino)
		}
	}
	var rd nfs3.ReaddirRes
	c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: e.root, Count: 65536}, &rd)
	wantStatus(t, "READDIR", rd.Status, nfs3.StatusOK)
	for _, en := range rd.Entries {
		if string(en.Name) == "sub" && en.FileID != subIno {
			t.Errorf("READDIR entry sub: fileid %d, want %d, the covered directory's", en.FileID, subIno)
		}
	}

	for _, p := range []string{"sub", "sub/d", "bind"} {
		if _, ms := c.mountStatus(e.srv.ExportPath() + "/" + p); ms != nfs3.MountErrAcces {
			t.Errorf("MNT of %s, below the export's file system: %v, want MNT3ERR_ACCES", p, ms)
		}
	}
	if err := os.Mkdir(filepath.Join(top, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ms := c.mountStatus(e.srv.ExportPath() + "/plain"); ms != nfs3.MountOK {
		t.Errorf("MNT of a directory of the export's file system: %v", ms)
	}

	var cr nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("sub")}, Mode: nfs3.Unchecked,
		Attr: nfs3.Sattr{SetSize: true}}, &cr)
	wantStatus(t, "CREATE UNCHECKED of the mount point sub", cr.Status, nfs3.StatusAcces)

	c4 := e.v4(rootCred())
	c4.mount()
	path := e.exportComponents()
	wantStatus4(t, "NFSv4 LOOKUP of the mount point sub", c4.call(putroot(append(path, "sub")...)...), nfs4.ErrAccess)
	wantStatus4(t, "NFSv4 LOOKUP of the mount point bind", c4.call(putroot(append(path, "bind")...)...), nfs4.ErrAccess)
	root4 := c4.lookupFH(path...)
	st4, ents4 := c4.readdir4(root4, nfs4.NewBitmap(nfs4.AttrRdattrError, nfs4.AttrType, nfs4.AttrFileid, nfs4.AttrFilehandle))
	if st4 != nfs4.OK {
		t.Fatalf("NFSv4 READDIR asking for rdattr_error: %v", st4)
	}
	if en := ents4["a"]; en.Attrs.Fileid != inoOf(t, filepath.Join(top, "a")) {
		t.Errorf("NFSv4 READDIR entry a: fileid %d", en.Attrs.Fileid)
	}
	for _, name := range []string{"sub", "bind"} {
		en, ok := ents4[name]
		if !ok || !bitmapEqual(en.Mask, rdattrErrorOnly) || en.Attrs.RdattrError != nfs4.ErrAccess {
			t.Errorf("NFSv4 READDIR entry %s (listed %v): mask %v rdattr_error %v, want rdattr_error NFS4ERR_ACCESS alone",
				name, ok, en.Mask, en.Attrs.RdattrError)
		}
	}
	if st4, _ := c4.readdir4(root4, nfs4.NewBitmap(nfs4.AttrType)); st4 != nfs4.ErrAccess {
		t.Errorf("NFSv4 READDIR asking for attributes but not rdattr_error: %v, want NFS4ERR_ACCESS", st4)
	}
}

// TestCrossmntHandleStaleAfterReload: with crossmnt, a client crosses into a file
// system mounted below the export (LOOKUP, READDIRPLUS, MNT, NFSv4 LOOKUP), whose
// objects report its own fsid; once the table is reloaded without crossmnt, the
// handles it was given there are NFS3ERR_STALE (NFS4ERR_STALE) for every procedure,
// that of a file the open-file cache holds open included, as knfsd answers a handle
// of a file system the client has no export of.
func TestCrossmntHandleStaleAfterReload(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	const line = "%D 127.0.0.1(rw,insecure,no_root_squash%s)\n"
	var sub string
	e, dir := newExportsEnv(t, strings.ReplaceAll(line, "%s", ",crossmnt"), func(dir string) {
		sub = filepath.Join(dir, "sub")
		if err := os.Mkdir(sub, 0o777); err != nil {
			t.Fatal(err)
		}
		mountTmpfs(t, "nfsserver-crossmnt", sub)
		if err := os.WriteFile(filepath.Join(sub, "f"), []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "g"), []byte("never read"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	c := e.dialFrom("127.0.0.1", false, rootCred())
	root := c.mount(dir)
	subFH, st := c.lookup(root, "sub")
	wantStatus(t, "LOOKUP sub with crossmnt", st, nfs3.StatusOK)
	f, st := c.lookup(subFH, "f")
	wantStatus(t, "LOOKUP sub/f with crossmnt", st, nfs3.StatusOK)
	g, st := c.lookup(subFH, "g")
	wantStatus(t, "LOOKUP sub/g with crossmnt", st, nfs3.StatusOK)
	if r := c.read(f, 0, 100); r.Status != nfs3.StatusOK || string(r.Data) != "secret" {
		t.Fatalf("READ sub/f with crossmnt: %v %q", r.Status, r.Data)
	}
	rootAttr, _ := c.getattr(root)
	fAttr, st := c.getattr(f)
	wantStatus(t, "GETATTR sub/f with crossmnt", st, nfs3.StatusOK)
	if fAttr.FSID != devOf(t, sub) || fAttr.FSID == rootAttr.FSID {
		t.Errorf("fsid of sub/f %d (export root %d), want its own device's %d", fAttr.FSID, rootAttr.FSID, devOf(t, sub))
	}
	if en := c.readdirplus(root)["sub"]; !en.Attr.Present || !en.Handle.Present {
		t.Errorf("READDIRPLUS entry sub with crossmnt: %+v, want attributes and handle", en)
	}
	if _, ms := c.mountStatus(dir + "/sub"); ms != nfs3.MountOK {
		t.Errorf("MNT of sub with crossmnt: %v", ms)
	}
	c4 := e.v4From("127.0.0.1", false, rootCred())
	c4.mount()
	path := strings.Split(strings.Trim(dir, "/"), "/")
	f4 := c4.lookupFH(append(path, "sub", "f")...)
	if a := c4.getattr(f4, nfs4.AttrFSID); a.FSID.Major != devOf(t, sub) {
		t.Errorf("NFSv4 fsid of sub/f %+v, want major %d", a.FSID, devOf(t, sub))
	}
	if e.x.Servers()[0].files.len() == 0 {
		t.Fatal("READ left nothing in the open-file cache")
	}

	e.reload(dir, strings.ReplaceAll(line, "%s", ""))
	if r := c.read(f, 0, 100); r.Status != nfs3.StatusStale || len(r.Data) != 0 {
		t.Errorf("READ of the cached sub/f without crossmnt: %v %q, want NFS3ERR_STALE", r.Status, r.Data)
	}
	wantStatus(t, "WRITE sub/f without crossmnt", c.write(f, 0, []byte("x"), nfs3.FileSync).Status, nfs3.StatusStale)
	var cm nfs3.CommitRes
	c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: f}, &cm)
	wantStatus(t, "COMMIT sub/f without crossmnt", cm.Status, nfs3.StatusStale)
	for name, fh := range map[string]nfs3.FH{"sub": subFH, "sub/f": f, "sub/g": g} {
		_, st := c.getattr(fh)
		wantStatus(t, "GETATTR "+name+" without crossmnt", st, nfs3.StatusStale)
	}
	_, st = c.lookup(subFH, "f")
	wantStatus(t, "LOOKUP in sub without crossmnt", st, nfs3.StatusStale)
	_, st = c.lookup(root, "sub")
	wantStatus(t, "LOOKUP sub without crossmnt", st, nfs3.StatusAcces)
	if _, ms := c.mountStatus(dir + "/sub"); ms != nfs3.MountErrAcces {
		t.Errorf("MNT of sub without crossmnt: %v, want MNT3ERR_ACCES", ms)
	}
	wantStatus4(t, "NFSv4 GETATTR of sub/f without crossmnt",
		c4.call(&nfs4.PutfhArgs{Object: f4}, &nfs4.GetattrArgs{AttrRequest: nfs4.NewBitmap(nfs4.AttrSize)}), nfs4.ErrStale)
	wantStatus4(t, "NFSv4 READ of sub/f without crossmnt",
		c4.call(&nfs4.PutfhArgs{Object: f4}, &nfs4.ReadArgs{Count: 100}), nfs4.ErrStale)
	if b, err := os.ReadFile(filepath.Join(sub, "f")); err != nil || string(b) != "secret" {
		t.Errorf("sub/f now holds %q (%v)", b, err)
	}
}

// newNestedExportEnv serves table with %D a fresh directory holding "sub", a tmpfs
// mounted for the test with the file "f" ("nested") in it: the root of the nested
// export the table may give.
func newNestedExportEnv(t *testing.T, table string) (*exportsEnv, string) {
	t.Helper()
	return newExportsEnv(t, table, func(dir string) {
		sub := filepath.Join(dir, "sub")
		if err := os.Mkdir(sub, 0o777); err != nil {
			t.Fatal(err)
		}
		mountTmpfs(t, "nfsserver-nested", sub)
		if err := os.WriteFile(filepath.Join(sub, "f"), []byte("nested"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
}

// reload makes table, with %D standing for dir, the exports table in force.
func (e *exportsEnv) reload(dir, table string) {
	e.t.Helper()
	tab, err := exports.Parse("exports", []byte(strings.ReplaceAll(table, "%D", dir)))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.x.Load(tab); err != nil {
		e.t.Fatal(err)
	}
}

// exportIDOf returns the export id a file handle carries.
func exportIDOf(fh []byte) uint32 { return binary.BigEndian.Uint32(fh[4:]) }

// TestCrossmntNestedExportOnItsOwnMount: an export that is a mount of its own below
// another export keeps working without crossmnt. MNT of its path reaches it; an
// NFSv4 client, which walks from the pseudo root through the parent export, crosses
// into it at its mount point, with its own handles and fsid, as knfsd lets NFSv4
// clients cross into an exported mount (nfsd_cross_mnt), and READDIR of the parent
// shows it so; an NFSv3 LOOKUP from the parent does not cross (no nohide).
func TestCrossmntNestedExportOnItsOwnMount(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	e, dir := newNestedExportEnv(t, "%D 127.0.0.1(rw,insecure)\n%D/sub 127.0.0.1(rw,insecure,fsid=9)\n")
	c := e.dialFrom("127.0.0.1", false, rootCred())
	if fh := c.mount(dir + "/sub"); exportIDOf(fh) != 9 {
		t.Errorf("MNT of the nested export: export id %d, want 9", exportIDOf(fh))
	}
	_, st := c.lookup(c.mount(dir), "sub")
	wantStatus(t, "NFSv3 LOOKUP of the nested export's mount point from the parent", st, nfs3.StatusAcces)

	c4 := e.v4From("127.0.0.1", false, rootCred())
	c4.mount()
	path := strings.Split(strings.Trim(dir, "/"), "/")
	subFH := c4.lookupFH(append(path, "sub")...)
	if exportIDOf(subFH) != 9 {
		t.Errorf("NFSv4 LOOKUP of the nested export: export id %d, want 9", exportIDOf(subFH))
	}
	if a := c4.getattr(subFH, nfs4.AttrFSID); a.FSID.Major != 9 {
		t.Errorf("NFSv4 fsid of the nested export's root %+v, want major 9", a.FSID)
	}
	f := c4.lookupFH(append(path, "sub", "f")...)
	if a := c4.getattr(f, nfs4.AttrSize); a.Size != uint64(len("nested")) {
		t.Errorf("NFSv4 size of sub/f %d", a.Size)
	}
	st4, ents := c4.readdir4(c4.lookupFH(path...), nfs4.NewBitmap(nfs4.AttrRdattrError, nfs4.AttrFSID, nfs4.AttrFilehandle, nfs4.AttrMountedOnFileid))
	if st4 != nfs4.OK {
		t.Fatalf("NFSv4 READDIR of the parent export: %v", st4)
	}
	if en := ents["sub"]; en.Attrs.FSID.Major != 9 || !bytes.Equal(en.Attrs.Filehandle, subFH) {
		t.Errorf("NFSv4 READDIR entry sub: fsid %+v handle %x, want the nested export's root (fsid 9, handle %x)",
			en.Attrs.FSID, en.Attrs.Filehandle, subFH)
	}
}

// TestCrossmntNFSv3IntoNestedExport: with crossmnt, an NFSv3 LOOKUP that crosses into
// an export nested in the parent answers with the nested export's handle, so that its
// options (here ro) and fsid apply to everything below, as knfsd's nfsd_cross_mnt
// does; a caller with no entry in the nested export crosses with the parent's handles
// and options, as with knfsd. The server used to keep every caller in the parent's
// handles: a read-only nested export was writable through its read-write parent.
func TestCrossmntNFSv3IntoNestedExport(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	e, dir := newNestedExportEnv(t, "%D 127.0.0.1(rw,insecure,crossmnt) 127.0.0.2(rw,insecure,crossmnt)\n%D/sub 127.0.0.1(ro,insecure,fsid=9)\n")
	create := func(c *client, dir nfs3.FH, name string) nfs3.Status {
		var r nfs3.CreateRes
		c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}, Mode: nfs3.Unchecked,
			Attr: nfs3.Sattr{SetMode: true, Mode: 0o644}}, &r)
		return r.Status
	}

	c := e.dialFrom("127.0.0.1", false, rootCred())
	sub, st := c.lookup(c.mount(dir), "sub")
	wantStatus(t, "LOOKUP of the nested export's mount point, crossmnt", st, nfs3.StatusOK)
	if id := exportIDOf(sub); id != 9 {
		t.Errorf("LOOKUP crossing into the nested export: export id %d, want 9 (its own)", id)
	}
	if a, st := c.getattr(sub); st != nfs3.StatusOK || a.FSID != 9 {
		t.Errorf("GETATTR of the nested export's root: %v, fsid %d, want 9", st, a.FSID)
	}
	if en := c.readdirplus(c.mount(dir))["sub"]; en.Handle.Present && exportIDOf(en.Handle.FH) != 9 {
		t.Errorf("READDIRPLUS of the parent gives the nested export's root a handle of export %d", exportIDOf(en.Handle.FH))
	}
	wantStatus(t, "CREATE in the read-only nested export reached from its read-write parent", create(c, sub, "x"), nfs3.StatusROFS)
	if _, err := os.Stat(filepath.Join(dir, "sub", "x")); err == nil {
		t.Error("the file was created")
	}

	o := e.dialFrom("127.0.0.2", false, rootCred())
	parent := o.mount(dir)
	sub2, st := o.lookup(parent, "sub")
	wantStatus(t, "LOOKUP of the mount point by a caller the nested export does not list", st, nfs3.StatusOK)
	if exportIDOf(sub2) != exportIDOf(parent) {
		t.Errorf("a caller without an entry in the nested export: export id %d, want the parent's %d", exportIDOf(sub2), exportIDOf(parent))
	}
	wantStatus(t, "CREATE below the mount point with the parent's options", create(o, sub2, "y"), nfs3.StatusOK)
	// That parent handle, in the hands of the client the nested export lists read-only,
	// does not carry the parent's options for it there.
	if st := create(c, sub2, "z"); st == nfs3.StatusOK {
		t.Errorf("CREATE through a parent handle below the nested export, by a client it lists read-only: %v", st)
	}
}

// TestNohideNestedExport: nohide in a nested export's client entry lets that client
// cross into it from the parent with NFSv3, without crossmnt on the parent, as knfsd's
// NFSEXP_NOHIDE does: LOOKUP of the mount point answers with the nested export's
// handle, whose options (ro) apply. A client whose entry in the nested export lacks
// nohide, and whose parent entry lacks crossmnt, still gets NFS3ERR_ACCES.
func TestNohideNestedExport(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	e, dir := newNestedExportEnv(t, "%D 127.0.0.1(rw,insecure) 127.0.0.2(rw,insecure)\n%D/sub 127.0.0.1(ro,insecure,nohide,fsid=9) 127.0.0.2(ro,insecure)\n")

	c := e.dialFrom("127.0.0.1", false, rootCred())
	sub, st := c.lookup(c.mount(dir), "sub")
	wantStatus(t, "LOOKUP of a nohide nested export's mount point", st, nfs3.StatusOK)
	if id := exportIDOf(sub); id != 9 {
		t.Fatalf("LOOKUP crossing into the nohide export: export id %d, want 9", id)
	}
	f, st := c.lookup(sub, "f")
	wantStatus(t, "LOOKUP below it", st, nfs3.StatusOK)
	if r := c.read(f, 0, 100); r.Status != nfs3.StatusOK || string(r.Data) != "nested" {
		t.Errorf("READ of sub/f: %v %q", r.Status, r.Data)
	}
	if r := c.write(f, 0, []byte("x"), nfs3.FileSync); r.Status != nfs3.StatusROFS {
		t.Errorf("WRITE in the read-only nested export: %v, want NFS3ERR_ROFS", r.Status)
	}

	o := e.dialFrom("127.0.0.2", false, rootCred())
	_, st = o.lookup(o.mount(dir), "sub")
	wantStatus(t, "LOOKUP of the mount point by a client without nohide or crossmnt", st, nfs3.StatusAcces)
}

// TestNestedExportMountThroughLink: knfsd's mountd resolves the symbolic links of
// the MNT path (realpath) before it matches the path against the exports, so MNT of a
// link in the parent export that leads into a read-only export nested on its own mount
// gives the nested export's handle (its options), as LOOKUP through the mount point
// does. The server matched the unresolved path, gave the parent's handle, and so the
// parent's read-write options below the read-only nested export.
func TestNestedExportMountThroughLink(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	e, dir := newNestedExportEnv(t, "%D 127.0.0.1(rw,insecure,no_root_squash,crossmnt)\n%D/sub 127.0.0.1(ro,insecure,fsid=9)\n")
	if err := os.Symlink("sub", filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	c := e.dialFrom("127.0.0.1", false, rootCred())
	sub, st := c.lookup(c.mount(dir), "sub")
	wantStatus(t, "LOOKUP sub", st, nfs3.StatusOK)
	if exportIDOf(sub) != 9 {
		t.Fatalf("LOOKUP sub: export id %d, want 9", exportIDOf(sub))
	}
	fh, ms := c.mountStatus(dir + "/lnk")
	if ms != nfs3.MountOK {
		t.Fatalf("MNT %s/lnk: %v", dir, ms)
	}
	if exportIDOf(fh) != 9 {
		t.Errorf("MNT of a link to the nested export: export id %d, want 9 (the nested export's)", exportIDOf(fh))
	}
	f, st := c.lookup(fh, "f")
	wantStatus(t, "LOOKUP f below the link", st, nfs3.StatusOK)
	if st == nfs3.StatusOK {
		wantStatus(t, "WRITE below the read-only nested export, mounted through a link", c.write(f, 0, []byte("X"), nfs3.FileSync).Status, nfs3.StatusROFS)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "f")); string(b) != "nested" {
		t.Errorf("sub/f now holds %q", b)
	}
}

// TestNestedExportOldParentHandles: handles the parent export gave, with crossmnt,
// below a mount point before the table was reloaded to export that mount read-only to
// the same client must not keep the parent's read-write options there: LOOKUP of the
// mount point now answers with the nested export's handle, so the old handles below
// it are refused (NFS3ERR_STALE) or carry the nested export's options.
func TestNestedExportOldParentHandles(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	const parent = "%D 127.0.0.1(rw,insecure,no_root_squash,crossmnt)\n"
	e, dir := newNestedExportEnv(t, parent)
	c := e.dialFrom("127.0.0.1", false, rootCred())
	root := c.mount(dir)
	sub, st := c.lookup(root, "sub")
	wantStatus(t, "LOOKUP sub with crossmnt", st, nfs3.StatusOK)
	f, st := c.lookup(sub, "f")
	wantStatus(t, "LOOKUP sub/f with crossmnt", st, nfs3.StatusOK)

	e.reload(dir, parent+"%D/sub 127.0.0.1(ro,insecure,fsid=9)\n")
	if sub2, _ := c.lookup(root, "sub"); exportIDOf(sub2) != 9 {
		t.Fatalf("LOOKUP sub after the reload: export id %d, want 9", exportIDOf(sub2))
	}
	if r := c.write(f, 0, []byte("X"), nfs3.FileSync); r.Status == nfs3.StatusOK {
		t.Errorf("WRITE of sub/f through the parent's old handle, below the now read-only nested export: %v, want NFS3ERR_ROFS or NFS3ERR_STALE", r.Status)
	}
	if _, st := c.lookup(sub, "f"); st == nfs3.StatusOK {
		t.Errorf("LOOKUP in sub through the parent's old handle gives a new parent handle below the read-only nested export")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "f")); string(b) != "nested" {
		t.Errorf("sub/f now holds %q", b)
	}
}

// TestNestedExportOldParentHandlesV4: the same over NFSv4.1: a handle the parent gave,
// with crossmnt, below a mount point that a reload then exports read-only to the same
// client is NFS4ERR_STALE to it; the path from the pseudo root reaches the nested
// export's own handle.
func TestNestedExportOldParentHandlesV4(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	const parent = "%D 127.0.0.1(rw,insecure,no_root_squash,crossmnt)\n"
	e, dir := newNestedExportEnv(t, parent)
	c := e.v4From("127.0.0.1", false, rootCred())
	c.mount()
	path := strings.Split(strings.Trim(dir, "/"), "/")
	f := c.lookupFH(append(path, "sub", "f")...)
	if exportIDOf(f) == 9 {
		t.Fatal("precondition: sub/f has the nested export's id before it is exported")
	}
	e.reload(dir, parent+"%D/sub 127.0.0.1(ro,insecure,fsid=9)\n")
	wantStatus4(t, "GETATTR of sub/f through the parent's old handle", c.call(&nfs4.PutfhArgs{Object: f},
		&nfs4.GetattrArgs{AttrRequest: nfs4.NewBitmap(nfs4.AttrSize)}), nfs4.ErrStale)
	if f2 := c.lookupFH(append(path, "sub", "f")...); exportIDOf(f2) != 9 {
		t.Errorf("sub/f from the pseudo root after the reload: export id %d, want 9", exportIDOf(f2))
	}
}

// TestNestedExportInsideCrossedMount: an export nested in a file system mounted below
// the parent but not at its root (here /disk/sub, /disk the mount) leaves the rest of
// that file system to the parent's handles for a crossmnt client: only exports that
// are mounts of their own take their file system's objects from the parent.
func TestNestedExportInsideCrossedMount(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	e, dir := newExportsEnv(t, "%D 127.0.0.1(rw,insecure,no_root_squash,crossmnt)\n%D/disk/sub 127.0.0.1(ro,insecure,fsid=9)\n", func(dir string) {
		disk := filepath.Join(dir, "disk")
		if err := os.Mkdir(disk, 0o777); err != nil {
			t.Fatal(err)
		}
		mountTmpfs(t, "nfsserver-disk", disk)
		if err := os.Mkdir(filepath.Join(disk, "sub"), 0o777); err != nil {
			t.Fatal(err)
		}
	})
	c := e.dialFrom("127.0.0.1", false, rootCred())
	disk, st := c.lookup(c.mount(dir), "disk")
	wantStatus(t, "LOOKUP of the crossed mount point", st, nfs3.StatusOK)
	c.create(disk, "other") // with the parent's (rw) options
	if _, err := os.Stat(filepath.Join(dir, "disk", "other")); err != nil {
		t.Errorf("CREATE in the crossed file system: %v", err)
	}
}

// TestNestedExportLookuppDeeper: LOOKUPP from the root of a nested export (a mount of
// its own) whose path lies deeper inside its parent export than one level leads to
// the parent export's directory the LOOKUP came through, the handle LOOKUP gave for
// it, in which the parent's other entries are found, as knfsd's LOOKUPP follows the
// mount up: not to a pseudo directory holding only the way to the nested export.
func TestNestedExportLookuppDeeper(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	e, dir := newExportsEnv(t, "%D 127.0.0.1(rw,insecure,no_root_squash)\n%D/x/sub 127.0.0.1(ro,insecure,fsid=9)\n", func(dir string) {
		x := filepath.Join(dir, "x")
		if err := os.MkdirAll(filepath.Join(x, "sub"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(x, "other"), []byte("parent"), 0o644); err != nil {
			t.Fatal(err)
		}
		mountTmpfs(t, "nfsserver-nested", filepath.Join(x, "sub"))
	})
	c := e.v4From("127.0.0.1", false, rootCred())
	c.mount()
	path := strings.Split(strings.Trim(dir, "/"), "/")
	x := c.lookupFH(append(path, "x")...)
	sub := c.lookupFH(append(path, "x", "sub")...)
	if exportIDOf(sub) != 9 {
		t.Fatalf("precondition: x/sub has export id %d, want the nested export's 9", exportIDOf(sub))
	}
	getfhOp := &nfs4.NoArgs{OpNum: nfs4.OpGetfh}
	res := c.must(&nfs4.PutfhArgs{Object: sub}, &nfs4.NoArgs{OpNum: nfs4.OpLookupp}, getfhOp)
	if up := getfh(t, res); !bytes.Equal(up, x) {
		t.Errorf("LOOKUPP from the nested export's root: handle %x, want x's %x", up, x)
	}
	wantStatus4(t, "LOOKUPP from the nested export's root, then LOOKUP of a parent's entry", c.call(&nfs4.PutfhArgs{Object: sub},
		&nfs4.NoArgs{OpNum: nfs4.OpLookupp}, &nfs4.LookupArgs{ObjName: []byte("other")}), nfs4.OK)
}
