//go:build linux

package nfsserver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestMknodBlockDevice checks that MKNOD of NF3BLK makes a block device with the
// device number asked for (RFC 1813 §3.3.11), as knfsd does for root.
func TestMknodBlockDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making device nodes needs root")
	}
	e := newEnv(t, Options{})
	var r nfs3.CreateRes
	e.c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("blk")}, Type: nfs3.TypeBlk,
		Spec: nfs3.SpecData{Major: 7, Minor: 0}, Attr: nfs3.Sattr{SetMode: true, Mode: 0o600}}, &r)
	wantStatus(t, "MKNOD blk", r.Status, nfs3.StatusOK)
	if a := r.ObjAttr.Attr; a.Type != nfs3.TypeBlk || a.Rdev != (nfs3.SpecData{Major: 7, Minor: 0}) || a.Mode != 0o600 {
		t.Fatalf("MKNOD blk: type %v rdev %v mode %o", a.Type, a.Rdev, a.Mode)
	}
}

// TestReaddirplusWithoutSearchPermission checks that READDIRPLUS of a directory the
// caller may read but not search lists its names, without the attributes and handles
// it could only get by a lookup it may not make, as knfsd does (its lookup for the
// entry's handle, compose_entry_fh, fails the search permission check and the entry
// goes out with neither), and as readdir(3) lists such a directory locally: a Linux
// client lists directories with READDIRPLUS, and an error would fail ls.
func TestReaddirplusWithoutSearchPermission(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to serve other users")
	}
	e := newEnv(t, Options{})
	d := e.c.mkdir(e.root, "d")
	e.c.create(d, "f")
	var sa nfs3.WccRes
	e.c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: d, Attr: nfs3.Sattr{SetMode: true, Mode: 0o704}}, &sa)
	wantStatus(t, "SETATTR mode", sa.Status, nfs3.StatusOK)
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(e.dir, "d", "f"), &st); err != nil {
		t.Fatal(err)
	}

	user := e.dial(userCred(1000, 1000))
	if _, s := user.lookup(d, "f"); s != nfs3.StatusAcces {
		t.Fatalf("LOOKUP without search permission: %v, want NFS3ERR_ACCES", s)
	}
	var r nfs3.ReaddirplusRes
	user.must(nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: d, DirCount: 4096, MaxCount: 8192}, &r)
	wantStatus(t, "READDIRPLUS without search permission", r.Status, nfs3.StatusOK)
	if !r.EOF || !r.DirAttr.Present {
		t.Fatalf("READDIRPLUS: eof %v, directory attributes %v", r.EOF, r.DirAttr.Present)
	}
	var names []string
	for _, en := range r.Entries {
		names = append(names, string(en.Name))
		if string(en.Name) != "f" {
			continue
		}
		if en.Attr.Present || en.Handle.Present {
			t.Errorf("entry f has attributes (%v) or a handle (%v) the caller may not look up", en.Attr.Present, en.Handle.Present)
		}
		if en.FileID != st.Ino {
			t.Errorf("entry f: fileid %d, want %d", en.FileID, st.Ino)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{".", "..", "f"}) {
		t.Fatalf("READDIRPLUS names %q", names)
	}
	// Without read permission there is nothing to list.
	e.c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: d, Attr: nfs3.Sattr{SetMode: true, Mode: 0o701}}, &sa)
	wantStatus(t, "SETATTR mode", sa.Status, nfs3.StatusOK)
	user.must(nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: d, DirCount: 4096, MaxCount: 8192}, &r)
	wantStatus(t, "READDIRPLUS without read permission", r.Status, nfs3.StatusAcces)
}

// TestCreateSetsClientTimes checks that CREATE, MKDIR, SYMLINK and MKNOD give the new
// object the atime and mtime their sattr3 asks for: RFC 1813 §3.3.8 and on make
// obj_attributes (all of sattr3) the initial attributes, and knfsd applies them
// (nfsd_create_setattr).
func TestCreateSetsClientTimes(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	attr := nfs3.Sattr{SetMode: true, Mode: 0o640,
		Atime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.Time{Seconds: 1_000_000, Nseconds: 5}},
		Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.Time{Seconds: 2_000_000, Nseconds: 7}}}
	where := func(name string) nfs3.DirOpArgs { return nfs3.DirOpArgs{Dir: e.root, Name: []byte(name)} }
	for _, tc := range []struct {
		name string
		proc nfs3.Proc
		args xdr.EncoderTo
	}{
		{"file", nfs3.ProcCreate, &nfs3.CreateArgs{Where: where("file"), Mode: nfs3.Guarded, Attr: attr}},
		{"dir", nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: where("dir"), Attr: attr}},
		{"link", nfs3.ProcSymlink, &nfs3.SymlinkArgs{Where: where("link"), Attr: attr, Data: []byte("file")}},
		{"fifo", nfs3.ProcMknod, &nfs3.MknodArgs{Where: where("fifo"), Type: nfs3.TypeFifo, Attr: attr}},
	} {
		var r nfs3.CreateRes
		c.must(tc.proc, tc.args, &r)
		wantStatus(t, tc.proc.String()+" "+tc.name, r.Status, nfs3.StatusOK)
		got := r.ObjAttr.Attr
		if got.Atime != attr.Atime.Time || got.Mtime != attr.Mtime.Time {
			t.Errorf("%v %s: atime %v mtime %v, want %v %v", tc.proc, tc.name, got.Atime, got.Mtime, attr.Atime.Time, attr.Mtime.Time)
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(e.dir, tc.name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Mtim.Sec != 2_000_000 || st.Atim.Sec != 1_000_000 {
			t.Errorf("%v %s: on disk atime %d mtime %d", tc.proc, tc.name, st.Atim.Sec, st.Mtim.Sec)
		}
	}
}

// TestClientsGrantWriteOnReadOnlyServerStable checks that a Server made with
// Options.ReadOnly, whose client list (SetClients) lets a caller write, makes that
// caller's changes stable before replying as on any sync export (see durable.go):
// the client list, not Options.ReadOnly, decides who may write.
func TestClientsGrantWriteOnReadOnlyServerStable(t *testing.T) {
	rec := &syncRecorder{}
	e := newEnvPrepared(t, Options{ReadOnly: true}, rec.install)
	tab, err := exports.Parse("exports", []byte(e.dir+" 127.0.0.1(rw,insecure,no_root_squash,sync)\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.srv.SetClients(&tab.Exports[0], nil)
	root, st := e.c.getattr(e.root)
	wantStatus(t, "GETATTR", st, nfs3.StatusOK)
	rec.take()
	var r nfs3.CreateRes
	e.c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f")}, Mode: nfs3.Guarded}, &r)
	wantStatus(t, "CREATE by a client listed rw", r.Status, nfs3.StatusOK)
	if got, want := rec.take(), fsyncs(root, r.ObjAttr.Attr); !slices.Equal(got, want) {
		t.Fatalf("CREATE synced %q, want %q", got, want)
	}
}

// TestAccessDirectoryWriteNeedsSearch checks that ACCESS grants MODIFY, EXTEND and
// DELETE on a directory only to a caller with write and search permission on it, as
// knfsd's map for directories asks (nfs3_diraccess: MAY_EXEC|MAY_WRITE): the
// procedures that change a directory's entries need both here too (openChangeDir),
// and ACCESS is to say what they will allow (RFC 1813 §3.3.4).
func TestAccessDirectoryWriteNeedsSearch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to serve other users")
	}
	e := newEnv(t, Options{})
	d := e.c.mkdir(e.root, "d")
	var sa nfs3.WccRes
	e.c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: d, Attr: nfs3.Sattr{SetMode: true, Mode: 0o702}}, &sa)
	wantStatus(t, "SETATTR mode", sa.Status, nfs3.StatusOK)
	user := e.dial(userCred(1000, 1000))
	var cr nfs3.CreateRes
	user.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: d, Name: []byte("x")}, Mode: nfs3.Guarded}, &cr)
	wantStatus(t, "CREATE in a -w- directory", cr.Status, nfs3.StatusAcces)
	var ar nfs3.AccessRes
	all := uint32(nfs3.AccessRead | nfs3.AccessLookup | nfs3.AccessModify | nfs3.AccessExtend | nfs3.AccessDelete | nfs3.AccessExecute)
	user.must(nfs3.ProcAccess, &nfs3.AccessArgs{Object: d, Access: all}, &ar)
	wantStatus(t, "ACCESS", ar.Status, nfs3.StatusOK)
	if ar.Access != 0 {
		t.Fatalf("ACCESS of a -w- directory: %#x, want 0", ar.Access)
	}
	// With search permission as well, all three.
	e.c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: d, Attr: nfs3.Sattr{SetMode: true, Mode: 0o703}}, &sa)
	wantStatus(t, "SETATTR mode", sa.Status, nfs3.StatusOK)
	user.must(nfs3.ProcAccess, &nfs3.AccessArgs{Object: d, Access: all}, &ar)
	if want := uint32(nfs3.AccessLookup | nfs3.AccessModify | nfs3.AccessExtend | nfs3.AccessDelete); ar.Status != nfs3.StatusOK || ar.Access != want {
		t.Fatalf("ACCESS of a -wx directory: %v %#x, want %#x", ar.Status, ar.Access, want)
	}
}

// TestSymlinkEmptyTarget checks that SYMLINK with an empty symlink_data is
// NFS3ERR_INVAL, as knfsd answers it (nfsd3_proc_symlink), and makes nothing.
func TestSymlinkEmptyTarget(t *testing.T) {
	e := newEnv(t, Options{})
	var r nfs3.CreateRes
	e.c.must(nfs3.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("l")}, Data: []byte{}}, &r)
	wantStatus(t, "SYMLINK to nothing", r.Status, nfs3.StatusInval)
	if !r.DirWcc.After.Present {
		t.Error("SYMLINK to nothing: no directory attributes")
	}
	if _, err := os.Lstat(filepath.Join(e.dir, "l")); !os.IsNotExist(err) {
		t.Fatalf("SYMLINK to nothing made something: %v", err)
	}
}

// TestDoCreateNeverCreatesWithoutDirWrite checks that doCreate, which NFSv4's
// OPEN4_CREATE calls after checking directory write permission only for a name that
// did not exist (an existing name needs none to be opened), creates nothing for a
// caller that may not write the directory when the name is gone by then: it answers
// NFS3ERR_ACCES, and an existing name is still opened.
func TestDoCreateNeverCreatesWithoutDirWrite(t *testing.T) {
	e := newEnv(t, Options{})
	if err := os.WriteFile(filepath.Join(e.dir, "there"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := cred{uid: 54321, gid: 54321} // not the directory's owner, which is 0755
	var dir object
	if st := e.srv.openDir(e.root, &dir, &c, permX); st != nfs3.StatusOK {
		t.Fatalf("opening the root directory: %v", st)
	}
	defer dir.close()
	for _, tc := range []struct {
		name string
		want nfs3.Status
	}{{"gone", nfs3.StatusAcces}, {"there", nfs3.StatusOK}} {
		var r nfs3.CreateRes
		var fh [HandleSize]byte
		a := nfs3.CreateArgs{Where: nfs3.DirOpArgs{Name: []byte(tc.name)}, Mode: nfs3.Unchecked}
		if _, st := e.srv.doCreate(&dir, &a, &c, &r, fh[:]); st != tc.want {
			t.Errorf("doCreate of %q by a caller without write permission: %v, want %v", tc.name, st, tc.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.dir, "gone")); !os.IsNotExist(err) {
		t.Fatalf("doCreate by a caller without write permission created the file (Lstat: %v)", err)
	}
}

// TestCommitNeedsWrite checks that COMMIT, NFSv3's and NFSv4's, syncs a file only for
// a caller that may write it, as knfsd's nfsd_commit asks (NFSD_MAY_WRITE): another
// user gets NFS3ERR_ACCES (NFS4ERR_ACCESS), a read-only export NFS3ERR_ROFS
// (NFS4ERR_ROFS), and neither makes the server fsync; the file's owner commits.
func TestCommitNeedsWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		cred   *oncrpc.AuthSysParams
		want3  nfs3.Status
		want4  nfs4.Status
		synced bool
	}{
		{"owner", Options{}, userCred(0, 0), nfs3.StatusOK, nfs4.OK, true},
		{"another user", Options{}, userCred(2000, 2000), nfs3.StatusAcces, nfs4.ErrAccess, false},
		{"read-only export", Options{ReadOnly: true}, userCred(0, 0), nfs3.StatusROFS, nfs4.ErrRofs, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &syncRecorder{}
			e := newEnvPrepared(t, tc.opts, rec.install)
			if err := os.WriteFile(filepath.Join(e.dir, "f"), []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			u := e.dial(tc.cred)
			fh, st := u.lookup(e.root, "f")
			wantStatus(t, "LOOKUP", st, nfs3.StatusOK)
			rec.take()
			var r nfs3.CommitRes
			u.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: fh}, &r)
			wantStatus(t, "NFSv3 COMMIT", r.Status, tc.want3)
			if got := len(rec.take()) > 0; got != tc.synced {
				t.Errorf("NFSv3 COMMIT synced: %v, want %v", got, tc.synced)
			}

			c := e.v4(tc.cred)
			c.mount()
			f := c.lookupFH(append(e.exportComponents(), "f")...)
			rec.take()
			res := c.call(&nfs4.PutfhArgs{Object: f}, &nfs4.CommitArgs{})
			wantStatus4(t, "NFSv4 COMMIT", res, tc.want4)
			if got := len(rec.take()) > 0; got != tc.synced {
				t.Errorf("NFSv4 COMMIT synced: %v, want %v", got, tc.synced)
			}
		})
	}
}

// TestRemoveMountPoint: REMOVE, RMDIR and RENAME of a directory a file system is
// mounted on fail with EBUSY on the server; that is NFS3ERR_ACCES, as knfsd answers
// for NFSv3 ("name is mounted-on", nfsd_unlink), and NFS4ERR_ACCESS for NFSv4's
// REMOVE of a directory, not NFS3ERR_IO, which says the server's storage failed.
func TestRemoveMountPoint(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	top := t.TempDir()
	sub := filepath.Join(top, "sub")
	if err := os.Mkdir(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, "nfsserver-busy", sub)
	e := newEnv(t, Options{Root: top})
	var rr nfs3.RemoveRes
	e.c.must(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("sub")}}, &rr)
	wantStatus(t, "RMDIR of a mount point", rr.Status, nfs3.StatusAcces)
	e.c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("sub")}}, &rr)
	if rr.Status != nfs3.StatusAcces && rr.Status != nfs3.StatusIsDir {
		t.Errorf("REMOVE of a mount point: %v, want NFS3ERR_ACCES or NFS3ERR_ISDIR", rr.Status)
	}
	var rn nfs3.RenameRes
	e.c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: e.root, Name: []byte("sub")}, To: nfs3.DirOpArgs{Dir: e.root, Name: []byte("moved")}}, &rn)
	wantStatus(t, "RENAME of a mount point", rn.Status, nfs3.StatusAcces)

	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	res := c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("sub")})
	wantStatus4(t, "NFSv4 REMOVE of a mount point", res, nfs4.ErrAccess)
}
