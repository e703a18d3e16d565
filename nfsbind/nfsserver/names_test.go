//go:build linux

package nfsserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// v3NameStatuses calls every NFSv3 procedure that takes a file name (RFC 1813 §3.2:
// LOOKUP, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME's two names and LINK)
// with name as that name, in the export root, which holds the regular file "f", and
// returns what each answered.
func v3NameStatuses(t *testing.T, e *env, name string) map[string]nfs3.Status {
	t.Helper()
	c, root, n := e.c, e.root, []byte(name)
	f, st := c.lookup(root, "f")
	wantStatus(t, "LOOKUP f", st, nfs3.StatusOK)
	where := nfs3.DirOpArgs{Dir: root, Name: n}
	got := map[string]nfs3.Status{}
	var lr nfs3.LookupRes
	c.must(nfs3.ProcLookup, &nfs3.LookupArgs{What: where}, &lr)
	got["LOOKUP"] = lr.Status
	var cr nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: where, Mode: nfs3.Unchecked}, &cr)
	got["CREATE"] = cr.Status
	c.must(nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: where}, &cr)
	got["MKDIR"] = cr.Status
	c.must(nfs3.ProcSymlink, &nfs3.SymlinkArgs{Where: where, Data: []byte("f")}, &cr)
	got["SYMLINK"] = cr.Status
	c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: where, Type: nfs3.TypeFifo}, &cr)
	got["MKNOD"] = cr.Status
	var wr nfs3.WccRes
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: where}, &wr)
	got["REMOVE"] = wr.Status
	c.must(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: where}, &wr)
	got["RMDIR"] = wr.Status
	var rr nfs3.RenameRes
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: where, To: nfs3.DirOpArgs{Dir: root, Name: []byte("g")}}, &rr)
	got["RENAME from"] = rr.Status
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}, To: where}, &rr)
	got["RENAME to"] = rr.Status
	var kr nfs3.LinkRes
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: f, Link: where}, &kr)
	got["LINK"] = kr.Status
	return got
}

// wantV3NameStatus checks that every procedure v3NameStatuses calls answered name
// with want, and that the export root still holds only "f".
func wantV3NameStatus(t *testing.T, e *env, what, name string, want nfs3.Status) {
	t.Helper()
	for proc, st := range v3NameStatuses(t, e, name) {
		if st != want {
			t.Errorf("%s %s: %v, want %v", proc, what, st, want)
		}
	}
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("after the calls with %s the export holds %v, want only f", what, ents)
	}
}

func newNamesEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, Options{})
	if err := os.WriteFile(filepath.Join(e.dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestV3NamesUnhandled: a name holding "/" or NUL, which no Linux file system can
// hold, is NFS3ERR_ACCES in every procedure that takes one (RFC 1813 §3.2: a name with
// characters the server cannot handle), and so is the empty name (§3.2, first comment).
func TestV3NamesUnhandled(t *testing.T) {
	e := newNamesEnv(t)
	for _, name := range []string{"", "a/b", "/", "x\x00y", "\x00"} {
		wantV3NameStatus(t, e, fmt.Sprintf("of %q", name), name, nfs3.StatusAcces)
	}
}

// TestV3NamesTooLong: a name longer than the server's name_max (PATHCONF, 255 with
// no_trunc) is NFS3ERR_NAMETOOLONG in every procedure that takes one (RFC 1813 §3.2,
// fourth comment), not GARBAGE_ARGS: filename3 is an XDR string without bound.
func TestV3NamesTooLong(t *testing.T) {
	e := newNamesEnv(t)
	for _, n := range []int{nfs3.MaxNameLen + 1, nfs3.MaxComponent} {
		wantV3NameStatus(t, e, fmt.Sprintf("of %d bytes", n), strings.Repeat("n", n), nfs3.StatusNameTooLong)
	}
}

// TestMountComponentTooLong: a MNT path with a component longer than NAME_MAX (255
// bytes) is MNT3ERR_NAMETOOLONG (RFC 1813 Appendix I), as a walk of the path would
// find (ENAMETOOLONG), not MNT3ERR_INVAL, which stays the answer to an empty, "."
// or ".." component.
func TestMountComponentTooLong(t *testing.T) {
	e := newNamesEnv(t)
	long := strings.Repeat("n", nfs3.MaxNameLen+1)
	for p, want := range map[string]nfs3.MountStat{
		e.srv.ExportPath() + "/" + long:          nfs3.MountErrNameTooLong,
		e.srv.ExportPath() + "/" + long + "/sub": nfs3.MountErrNameTooLong,
		e.srv.ExportPath() + "/" + long[1:]:      nfs3.MountErrNoEnt,
		e.srv.ExportPath() + "/../" + long:       nfs3.MountErrInval,
	} {
		if _, ms := e.c.mountStatus(p); ms != want {
			t.Errorf("MNT %.40q…: %v, want %v", p, ms, want)
		}
	}
}

// TestV3SymlinkTextTooLong: a SYMLINK whose text is longer than PATH_MAX (nfspath3
// has no bound in RFC 1813) is NFS3ERR_NAMETOOLONG, as knfsd answers
// (nfsd3_proc_symlink), not GARBAGE_ARGS, and makes nothing.
func TestV3SymlinkTextTooLong(t *testing.T) {
	e := newNamesEnv(t)
	for _, n := range []int{nfs3.MaxNFSPathLen, nfs3.MaxNFSPathLen + 1, nfs3.MaxSymlinkData} {
		var r nfs3.CreateRes
		e.c.must(nfs3.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("l")},
			Data: []byte(strings.Repeat("t", n))}, &r)
		wantStatus(t, fmt.Sprintf("SYMLINK to %d bytes", n), r.Status, nfs3.StatusNameTooLong)
		if _, err := os.Lstat(filepath.Join(e.dir, "l")); !os.IsNotExist(err) {
			t.Fatalf("SYMLINK to %d bytes made something: %v", n, err)
		}
	}
}

// TestV4SymlinkTextTooLong: a CREATE of a symbolic link whose linkdata is longer than
// PATH_MAX is NFS4ERR_NAMETOOLONG, as under knfsd (symlink(2)'s ENAMETOOLONG), not
// NFS4ERR_BADXDR, and makes nothing.
func TestV4SymlinkTextTooLong(t *testing.T) {
	e := newNamesEnv(t)
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	for _, n := range []int{nfs4.MaxPathLen, nfs4.MaxPathLen + 1, nfs4.MaxLinkData} {
		res := c.call(&nfs4.PutfhArgs{Object: dir},
			&nfs4.CreateArgs{ObjType: nfs4.NF4Lnk, ObjName: []byte("l"), LinkData: []byte(strings.Repeat("t", n))})
		wantStatus4(t, fmt.Sprintf("CREATE of a link to %d bytes", n), res, nfs4.ErrNametoolong)
		if _, err := os.Lstat(filepath.Join(e.dir, "l")); !os.IsNotExist(err) {
			t.Fatalf("CREATE of a link to %d bytes made something: %v", n, err)
		}
	}
}
