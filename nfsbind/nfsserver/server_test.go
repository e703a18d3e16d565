//go:build linux

package nfsserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

func TestMountProtocol(t *testing.T) {
	e := newEnv(t, Options{})
	if a, st := e.c.getattr(e.root); st != nfs3.StatusOK || a.Type != nfs3.TypeDir {
		t.Fatalf("GETATTR root: %v %v", st, a.Type)
	}
	ctx := context.Background()
	var r nfs3.MntRes
	for path, want := range map[string]nfs3.MountStat{
		"/nonexistent":                  nfs3.MountErrNoEnt,
		e.srv.ExportPath() + "/../etc":  nfs3.MountErrInval,
		e.srv.ExportPath() + "/missing": nfs3.MountErrNoEnt,
		e.srv.ExportPath() + "/":        nfs3.MountOK,
		e.srv.ExportPath() + "/./x":     nfs3.MountErrInval,
		e.srv.ExportPath() + "x":        nfs3.MountErrNoEnt,
	} {
		if err := e.c.mnt.Call(ctx, uint32(nfs3.MountProcMnt), &nfs3.MntArgs{Path: []byte(path)}, owned{&r}); err != nil {
			t.Fatal(err)
		}
		if r.Status != want {
			t.Errorf("MNT %q: %v, want %v", path, r.Status, want)
		}
	}
	// A subdirectory can be mounted; a file cannot.
	sub := e.c.mkdir(e.root, "sub")
	e.c.create(sub, "f")
	if fh := e.c.mount(e.srv.ExportPath() + "/sub"); !bytes.Equal(fh, sub) {
		t.Fatalf("MNT sub: handle differs from MKDIR's")
	}
	if err := e.c.mnt.Call(ctx, uint32(nfs3.MountProcMnt), &nfs3.MntArgs{Path: []byte(e.srv.ExportPath() + "/sub/f")}, owned{&r}); err != nil || r.Status != nfs3.MountErrNotDir {
		t.Fatalf("MNT file: %v %v", err, r.Status)
	}
	var dump nfs3.DumpRes
	if err := e.c.mnt.Call(ctx, uint32(nfs3.MountProcDump), nil, owned{&dump}); err != nil {
		t.Fatal(err)
	}
	// export and export/sub: export/ is export once cleaned, as mountd records it.
	if len(dump.Mounts) != 2 || string(dump.Mounts[0].Hostname) != "127.0.0.1" {
		t.Fatalf("DUMP: %+v", dump.Mounts)
	}
	if err := e.c.mnt.Call(ctx, uint32(nfs3.MountProcUmnt), &nfs3.UmntArgs{Path: []byte(e.srv.ExportPath())}, nil); err != nil {
		t.Fatal(err)
	}
	e.c.mnt.Call(ctx, uint32(nfs3.MountProcDump), nil, owned{&dump})
	if len(dump.Mounts) != 1 || string(dump.Mounts[0].Directory) != e.srv.ExportPath()+"/sub" {
		t.Fatalf("DUMP after UMNT: %+v", dump.Mounts)
	}
	e.c.mnt.Call(ctx, uint32(nfs3.MountProcUmntall), nil, nil)
	e.c.mnt.Call(ctx, uint32(nfs3.MountProcDump), nil, owned{&dump})
	if len(dump.Mounts) != 0 {
		t.Fatalf("DUMP after UMNTALL: %+v", dump.Mounts)
	}
	var exp nfs3.ExportRes
	if err := e.c.mnt.Call(ctx, uint32(nfs3.MountProcExport), nil, owned{&exp}); err != nil {
		t.Fatal(err)
	}
	if len(exp.Exports) != 1 || string(exp.Exports[0].Dir) != e.srv.ExportPath() {
		t.Fatalf("EXPORT: %+v", exp)
	}
	if err := e.c.mnt.Call(ctx, uint32(nfs3.MountProcNull), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.c.nfs.Call(ctx, uint32(nfs3.ProcNull), nil, nil); err != nil {
		t.Fatal(err)
	}
}

// Files of odd sizes up to 8 MiB, written in wtmax pieces (UNSTABLE, then COMMIT) and
// read back in rtmax pieces, match by checksum over the wire and on disk.
func TestFileSizes(t *testing.T) {
	e := newEnv(t, Options{})
	var fi nfs3.FsinfoRes
	e.c.must(nfs3.ProcFsinfo, &nfs3.FsinfoArgs{Object: e.root}, &fi)
	wantStatus(t, "FSINFO", fi.Status, nfs3.StatusOK)
	sizes := []int{0, 1, 3, 4, 5, 4095, 4097, 65537, 1<<20 - 1, 1<<20 + 3, 3<<20 + 7, 8<<20 - 5}
	if testing.Short() {
		sizes = sizes[:8]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range sizes {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("f%d", size)
		fh := e.c.create(e.root, name)
		for off := 0; off < size; off += int(fi.Wtmax) {
			end := min(off+int(fi.Wtmax), size)
			w := e.c.write(fh, uint64(off), data[off:end], nfs3.Unstable)
			wantStatus(t, "WRITE", w.Status, nfs3.StatusOK)
			if int(w.Count) != end-off || w.Verf != e.srv.WriteVerifier() {
				t.Fatalf("WRITE %s@%d: count %d verf %x", name, off, w.Count, w.Verf)
			}
		}
		var cr nfs3.CommitRes
		e.c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: fh}, &cr)
		wantStatus(t, "COMMIT", cr.Status, nfs3.StatusOK)
		h := sha256.New()
		var off uint64
		for {
			r := e.c.read(fh, off, fi.Rtmax)
			wantStatus(t, "READ", r.Status, nfs3.StatusOK)
			h.Write(r.Data)
			off += uint64(len(r.Data))
			if r.EOF {
				break
			}
			if len(r.Data) == 0 {
				t.Fatalf("READ %s@%d: no data and no EOF", name, off)
			}
		}
		if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) || off != uint64(size) {
			t.Fatalf("%s: read back %d bytes, checksum mismatch", name, off)
		}
		disk, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil || !bytes.Equal(disk, data) {
			t.Fatalf("%s on disk differs (%v)", name, err)
		}
		if a, _ := e.c.getattr(fh); a.Size != uint64(size) || a.Type != nfs3.TypeReg {
			t.Fatalf("%s: GETATTR size %d type %v", name, a.Size, a.Type)
		}
	}
}

// checkCookie fails unless cookie, the cookie of an entry listed after one with
// cookie prev (0 for the first), is greater than prev and not 0, 1 or 2, which NFSv3
// and NFSv4 reserve. Listings are in cookie order; equal cookies (a collision) are
// possible in theory, at a chance of 2^-64 for a pair of names under a random key.
func checkCookie(t *testing.T, what string, name []byte, prev, cookie uint64) {
	t.Helper()
	if cookie < 3 {
		t.Fatalf("%s: %q has reserved cookie %d", what, name, cookie)
	}
	if cookie <= prev {
		t.Fatalf("%s: %q has cookie %#x after %#x", what, name, cookie, prev)
	}
}

// readdirAll lists dir with READDIR and checks each reply against count and each
// cookie with checkCookie.
func (c *client) readdirAll(dir nfs3.FH, count uint32) map[string]uint64 {
	c.t.Helper()
	names := map[string]uint64{}
	var cookie uint64
	var verf [8]byte
	for calls := 0; ; calls++ {
		var r nfs3.ReaddirRes
		c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: dir, Cookie: cookie, CookieVerf: verf, Count: count}, &r)
		wantStatus(c.t, "READDIR", r.Status, nfs3.StatusOK)
		if n := encodedSize(&r) - 4; n > int(count) {
			c.t.Fatalf("READDIR reply of %d bytes for count %d", n, count)
		}
		for _, en := range r.Entries {
			if _, dup := names[string(en.Name)]; dup {
				c.t.Fatalf("READDIR returned %q twice", en.Name)
			}
			names[string(en.Name)] = en.FileID
			checkCookie(c.t, "READDIR", en.Name, cookie, en.Cookie)
			cookie = en.Cookie
		}
		verf = r.CookieVerf
		if r.EOF {
			return names
		}
		if len(r.Entries) == 0 || calls > 100000 {
			c.t.Fatal("READDIR makes no progress")
		}
	}
}

// readdirplusAll lists dir with READDIRPLUS, checking as readdirAll does.
func (c *client) readdirplusAll(dir nfs3.FH, dircount, maxcount uint32) map[string]nfs3.DirEntryPlus {
	c.t.Helper()
	ents := map[string]nfs3.DirEntryPlus{}
	var cookie uint64
	var verf [8]byte
	for {
		var r nfs3.ReaddirplusRes
		c.must(nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: dir, Cookie: cookie, CookieVerf: verf, DirCount: dircount, MaxCount: maxcount}, &r)
		wantStatus(c.t, "READDIRPLUS", r.Status, nfs3.StatusOK)
		if n := encodedSize(&r) - 4; n > int(maxcount) {
			c.t.Fatalf("READDIRPLUS reply of %d bytes for maxcount %d", n, maxcount)
		}
		for _, en := range r.Entries {
			if _, dup := ents[string(en.Name)]; dup {
				c.t.Fatalf("READDIRPLUS returned %q twice", en.Name)
			}
			ents[string(en.Name)] = en
			checkCookie(c.t, "READDIRPLUS", en.Name, cookie, en.Cookie)
			cookie = en.Cookie
		}
		verf = r.CookieVerf
		if r.EOF {
			return ents
		}
		if len(r.Entries) == 0 {
			c.t.Fatal("READDIRPLUS makes no progress")
		}
	}
}

func TestReaddirThousands(t *testing.T) {
	e := newEnv(t, Options{})
	dir := e.c.mkdir(e.root, "big")
	const n = 3000
	// Create most entries locally (fast), a few over NFS.
	for i := 0; i < n-10; i++ {
		if err := os.WriteFile(filepath.Join(e.dir, "big", fmt.Sprintf("file-%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := n - 10; i < n; i++ {
		e.c.create(dir, fmt.Sprintf("file-%05d", i))
	}
	for _, count := range []uint32{512, 4096, 32768} {
		names := e.c.readdirAll(dir, count)
		if len(names) != n+2 {
			t.Fatalf("READDIR count %d: %d names, want %d", count, len(names), n+2)
		}
		for i := 0; i < n; i++ {
			if _, ok := names[fmt.Sprintf("file-%05d", i)]; !ok {
				t.Fatalf("READDIR count %d: file-%05d missing", count, i)
			}
		}
	}
	ents := e.c.readdirplusAll(dir, 1024, 8192)
	if len(ents) != n+2 {
		t.Fatalf("READDIRPLUS: %d entries", len(ents))
	}
	for name, en := range ents {
		if !en.Handle.Present || !en.Attr.Present || en.Attr.Attr.FileID != en.FileID {
			t.Fatalf("READDIRPLUS %s: %+v", name, en)
		}
	}
	// Handles from READDIRPLUS work, including "." and "..".
	if a, st := e.c.getattr(ents["file-01234"].Handle.FH); st != nfs3.StatusOK || a.Type != nfs3.TypeReg {
		t.Fatalf("GETATTR via READDIRPLUS handle: %v", st)
	}
	if !bytes.Equal(ents["."].Handle.FH, dir) || !bytes.Equal(ents[".."].Handle.FH, e.root) {
		t.Fatal("READDIRPLUS . or .. handle wrong")
	}
	// A count too small for one entry is NFS3ERR_TOOSMALL.
	var r nfs3.ReaddirRes
	e.c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: dir, Count: 100}, &r)
	wantStatus(t, "READDIR tiny count", r.Status, nfs3.StatusTooSmall)
	// Cookies survive changes: delete entries mid-listing and resume.
	var first nfs3.ReaddirRes
	e.c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: dir, Count: 2048}, &first)
	for i := 0; i < 100; i++ {
		os.Remove(filepath.Join(e.dir, "big", fmt.Sprintf("file-%05d", i)))
	}
	var next nfs3.ReaddirRes
	last := first.Entries[len(first.Entries)-1]
	e.c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: dir, Cookie: last.Cookie, CookieVerf: first.CookieVerf, Count: 2048}, &next)
	wantStatus(t, "READDIR after change", next.Status, nfs3.StatusOK)
	for _, en := range next.Entries {
		for _, old := range first.Entries {
			if string(old.Name) == string(en.Name) {
				t.Fatalf("READDIR repeated %q after the directory changed", en.Name)
			}
		}
	}
}

func encodedSize(m nfs3.Message) int {
	return len(encodeMsg(m))
}

func TestSymlinksAndHardLinks(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	for _, target := range []string{"/etc/passwd", "../../../../outside", "plain", "/"} {
		var r nfs3.CreateRes
		name := fmt.Sprintf("ln%d", len(target))
		c.must(nfs3.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte(name)}, Data: []byte(target)}, &r)
		wantStatus(t, "SYMLINK", r.Status, nfs3.StatusOK)
		if r.ObjAttr.Attr.Type != nfs3.TypeLnk {
			t.Fatalf("SYMLINK type %v", r.ObjAttr.Attr.Type)
		}
		var rl nfs3.ReadlinkRes
		c.must(nfs3.ProcReadlink, &nfs3.ReadlinkArgs{Object: r.Obj.FH}, &rl)
		if rl.Status != nfs3.StatusOK || string(rl.Data) != target {
			t.Fatalf("READLINK: %v %q", rl.Status, rl.Data)
		}
		// LOOKUP returns the link itself; the server never follows it.
		fh, st := c.lookup(e.root, name)
		wantStatus(t, "LOOKUP symlink", st, nfs3.StatusOK)
		if a, _ := c.getattr(fh); a.Type != nfs3.TypeLnk {
			t.Fatalf("LOOKUP %s followed the link: %v", name, a.Type)
		}
		rd := c.read(fh, 0, 100)
		wantStatus(t, "READ symlink", rd.Status, nfs3.StatusInval)
		_, st = c.lookup(fh, "etc")
		wantStatus(t, "LOOKUP through symlink", st, nfs3.StatusNotDir)
		var w nfs3.WriteRes
		c.must(nfs3.ProcWrite, &nfs3.WriteArgs{File: fh, Count: 1, Data: []byte("x"), Stable: nfs3.FileSync}, &w)
		wantStatus(t, "WRITE symlink", w.Status, nfs3.StatusInval)
	}
	if _, err := os.Lstat("/outside"); err == nil {
		t.Log("note: /outside exists on this machine")
	}
	// READLINK of a regular file is NFS3ERR_INVAL.
	f := c.create(e.root, "target")
	var rl nfs3.ReadlinkRes
	c.must(nfs3.ProcReadlink, &nfs3.ReadlinkArgs{Object: f}, &rl)
	wantStatus(t, "READLINK file", rl.Status, nfs3.StatusInval)

	// Hard links.
	c.write(f, 0, []byte("linked"), nfs3.FileSync)
	sub := c.mkdir(e.root, "sub")
	var lr nfs3.LinkRes
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: f, Link: nfs3.DirOpArgs{Dir: sub, Name: []byte("hard")}}, &lr)
	wantStatus(t, "LINK", lr.Status, nfs3.StatusOK)
	if lr.FileAttr.Attr.Nlink != 2 || !lr.LinkDirWcc.After.Present {
		t.Fatalf("LINK: nlink %d", lr.FileAttr.Attr.Nlink)
	}
	hard, st := c.lookup(sub, "hard")
	wantStatus(t, "LOOKUP hard", st, nfs3.StatusOK)
	if !bytes.Equal(hard, f) {
		t.Fatal("hard link has a different handle")
	}
	if r := c.read(hard, 0, 100); string(r.Data) != "linked" {
		t.Fatalf("READ via hard link: %q", r.Data)
	}
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: f, Link: nfs3.DirOpArgs{Dir: sub, Name: []byte("hard")}}, &lr)
	wantStatus(t, "LINK existing", lr.Status, nfs3.StatusExist)
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: sub, Link: nfs3.DirOpArgs{Dir: e.root, Name: []byte("dirlink")}}, &lr)
	wantStatus(t, "LINK directory", lr.Status, nfs3.StatusIsDir)
	// Removing one name leaves the other.
	var rr nfs3.RemoveRes
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("target")}}, &rr)
	wantStatus(t, "REMOVE", rr.Status, nfs3.StatusOK)
	if a, st := c.getattr(hard); st != nfs3.StatusOK || a.Nlink != 1 {
		t.Fatalf("GETATTR after removing one link: %v nlink %d", st, a.Nlink)
	}
}

func TestRenames(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	a := c.mkdir(e.root, "a")
	b := c.mkdir(e.root, "b")
	f := c.create(a, "f")
	c.write(f, 0, []byte("hello"), nfs3.FileSync)
	var r nfs3.RenameRes
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: a, Name: []byte("f")}, To: nfs3.DirOpArgs{Dir: b, Name: []byte("g")}}, &r)
	wantStatus(t, "RENAME", r.Status, nfs3.StatusOK)
	if !r.FromDirWcc.Before.Present || !r.ToDirWcc.After.Present {
		t.Fatal("RENAME without wcc data")
	}
	if _, st := c.lookup(a, "f"); st != nfs3.StatusNoEnt {
		t.Fatalf("old name: %v", st)
	}
	g, st := c.lookup(b, "g")
	if st != nfs3.StatusOK || !bytes.Equal(g, f) {
		t.Fatalf("new name: %v", st)
	}
	if rd := c.read(f, 0, 10); string(rd.Data) != "hello" {
		t.Fatalf("old handle after rename: %v %q", rd.Status, rd.Data)
	}
	// Rename a directory with contents; handles below it keep working.
	sub := c.mkdir(a, "sub")
	deep := c.create(sub, "deep")
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: e.root, Name: []byte("a")}, To: nfs3.DirOpArgs{Dir: b, Name: []byte("a2")}}, &r)
	wantStatus(t, "RENAME dir", r.Status, nfs3.StatusOK)
	if _, st := c.getattr(deep); st != nfs3.StatusOK {
		t.Fatalf("handle below renamed dir: %v", st)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "b", "a2", "sub", "deep")); err != nil {
		t.Fatal(err)
	}
	// Renaming over an existing file replaces it; a directory into itself fails.
	h := c.create(b, "h")
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: b, Name: []byte("g")}, To: nfs3.DirOpArgs{Dir: b, Name: []byte("h")}}, &r)
	wantStatus(t, "RENAME over", r.Status, nfs3.StatusOK)
	if _, st := c.getattr(h); st != nfs3.StatusStale {
		t.Fatalf("handle of replaced file: %v", st)
	}
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: b, Name: []byte("a2")}, To: nfs3.DirOpArgs{Dir: sub, Name: []byte("loop")}}, &r)
	wantStatus(t, "RENAME into itself", r.Status, nfs3.StatusInval)
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: b, Name: []byte("..")}, To: nfs3.DirOpArgs{Dir: b, Name: []byte("x")}}, &r)
	wantStatus(t, "RENAME ..", r.Status, nfs3.StatusInval)
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: b, Name: []byte("nope")}, To: nfs3.DirOpArgs{Dir: b, Name: []byte("x")}}, &r)
	wantStatus(t, "RENAME missing", r.Status, nfs3.StatusNoEnt)
}

// TestRenameDirectoryToNewParentNeedsWrite: moving a directory to another parent
// rewrites its ".." entry, so Linux requires write permission on the directory itself
// (vfs_rename: inode_permission(source, MAY_WRITE) when the parents differ), even from
// its owner; the server, renaming as root, let a user move any directory it could
// unlink. Renaming it within its parent, or moving a file, needs no such permission.
func TestRenameDirectoryToNewParentNeedsWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make directories owned by others")
	}
	e := newEnv(t, Options{})
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(e.dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(e.dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(name string, dir bool, mode os.FileMode, uid int) {
		p := filepath.Join(e.dir, "a", name)
		var err error
		if dir {
			err = os.Mkdir(p, mode)
		} else {
			err = os.WriteFile(p, nil, mode)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err == nil {
			err = os.Chown(p, uid, uid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("rootdir", true, 0o755, 0)   // root's, not writable by uid 1001
	mk("owndir", true, 0o555, 1001) // uid 1001's, not writable even by it
	mk("ownwdir", true, 0o755, 1001)
	mk("rootfile", false, 0o644, 0)
	u := e.dial(userCred(1001, 1001))
	a, _ := u.lookup(e.root, "a")
	b, _ := u.lookup(e.root, "b")
	for _, tc := range []struct {
		name    string
		to      nfs3.FH
		newName string
		want    nfs3.Status
		what    string
	}{
		{"rootdir", b, "rootdir", nfs3.StatusAcces, "root's 0755 directory to another parent"},
		{"owndir", b, "owndir", nfs3.StatusAcces, "its own 0555 directory to another parent"},
		{"rootdir", a, "rootdir2", nfs3.StatusOK, "root's 0755 directory within its parent"},
		{"ownwdir", b, "ownwdir", nfs3.StatusOK, "its own 0755 directory to another parent"},
		{"rootfile", b, "rootfile", nfs3.StatusOK, "root's 0644 file to another parent"},
	} {
		var r nfs3.RenameRes
		u.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: a, Name: []byte(tc.name)}, To: nfs3.DirOpArgs{Dir: tc.to, Name: []byte(tc.newName)}}, &r)
		if r.Status != tc.want {
			t.Errorf("RENAME of %s by uid 1001: %v, want %v", tc.what, r.Status, tc.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.dir, "a", "owndir")); err != nil {
		t.Errorf("after a refused RENAME: %v", err)
	}
}

func TestCreateModes(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	verf := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	args := &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("x")}, Mode: nfs3.Exclusive, Verf: verf}
	var r1, r2, r3 nfs3.CreateRes
	c.must(nfs3.ProcCreate, args, &r1)
	wantStatus(t, "EXCLUSIVE", r1.Status, nfs3.StatusOK)
	c.must(nfs3.ProcCreate, args, &r2) // a retransmission
	wantStatus(t, "EXCLUSIVE retried", r2.Status, nfs3.StatusOK)
	if !bytes.Equal(r1.Obj.FH, r2.Obj.FH) {
		t.Fatal("retried EXCLUSIVE create returned another file")
	}
	args.Verf[0] = 9
	c.must(nfs3.ProcCreate, args, &r3)
	wantStatus(t, "EXCLUSIVE other verifier", r3.Status, nfs3.StatusExist)
	// Once written, the file is no longer the one the create made, verifier or not
	// (the write keeps the times here), as knfsd judges it by its size too.
	args.Verf[0] = 1
	fx := filepath.Join(e.dir, "x")
	if err := os.WriteFile(fx, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fx, time.Unix(0x05060708, 0), time.Unix(0x01020304, 0)); err != nil {
		t.Fatal(err)
	}
	c.must(nfs3.ProcCreate, args, &r3)
	wantStatus(t, "EXCLUSIVE retried after the file was written", r3.Status, nfs3.StatusExist)

	g := &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("g")}, Mode: nfs3.Guarded, Attr: nfs3.Sattr{SetMode: true, Mode: 0o600}}
	c.must(nfs3.ProcCreate, g, &r1)
	wantStatus(t, "GUARDED", r1.Status, nfs3.StatusOK)
	if r1.ObjAttr.Attr.Mode != 0o600 {
		t.Fatalf("GUARDED mode %o", r1.ObjAttr.Attr.Mode)
	}
	c.must(nfs3.ProcCreate, g, &r2)
	wantStatus(t, "GUARDED again", r2.Status, nfs3.StatusExist)

	// UNCHECKED over an existing file with size 0 truncates it.
	c.write(r1.Obj.FH, 0, []byte("data"), nfs3.FileSync)
	u := &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("g")}, Mode: nfs3.Unchecked, Attr: nfs3.Sattr{SetSize: true}}
	c.must(nfs3.ProcCreate, u, &r3)
	wantStatus(t, "UNCHECKED existing", r3.Status, nfs3.StatusOK)
	if r3.ObjAttr.Attr.Size != 0 || !bytes.Equal(r3.Obj.FH, r1.Obj.FH) {
		t.Fatalf("UNCHECKED existing: size %d", r3.ObjAttr.Attr.Size)
	}

	// MKNOD: a FIFO works; a regular file is NFS3ERR_BADTYPE.
	var mr nfs3.CreateRes
	c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("fifo")}, Type: nfs3.TypeFifo, Attr: nfs3.Sattr{SetMode: true, Mode: 0o600}}, &mr)
	wantStatus(t, "MKNOD fifo", mr.Status, nfs3.StatusOK)
	if mr.ObjAttr.Attr.Type != nfs3.TypeFifo {
		t.Fatalf("MKNOD type %v", mr.ObjAttr.Attr.Type)
	}
	fifo := mr.Obj.FH
	if os.Geteuid() == 0 {
		c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("null")}, Type: nfs3.TypeChr, Spec: nfs3.SpecData{Major: 1, Minor: 3}}, &mr)
		wantStatus(t, "MKNOD chr", mr.Status, nfs3.StatusOK)
		if a := mr.ObjAttr.Attr; a.Type != nfs3.TypeChr || a.Rdev != (nfs3.SpecData{Major: 1, Minor: 3}) {
			t.Fatalf("MKNOD chr: type %v rdev %v", a.Type, a.Rdev)
		}
		// The server never opens device nodes for clients.
		if r := c.read(mr.Obj.FH, 0, 10); r.Status != nfs3.StatusInval {
			t.Fatalf("READ of a device node: %v", r.Status)
		}
	}
	c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("reg")}, Type: nfs3.TypeReg}, &mr)
	wantStatus(t, "MKNOD reg", mr.Status, nfs3.StatusBadType)
	// CREATE UNCHECKED over the FIFO must not block and must not succeed.
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("fifo")}, Mode: nfs3.Unchecked}, &r3)
	wantStatus(t, "CREATE over fifo", r3.Status, nfs3.StatusExist)
	rd := c.read(fifo, 0, 10)
	wantStatus(t, "READ fifo", rd.Status, nfs3.StatusInval)
}

// TestCreateUncheckedRacingFIFO: CREATE UNCHECKED of an existing name with a size
// judges and truncates the object it found through one descriptor. It used to check
// by name that the object was a regular file and then open the name again for writing
// without O_NONBLOCK, so a FIFO put in its place between the two (here by a local
// RENAME_EXCHANGE loop; a client can do it with RENAME) made the open block forever:
// the call never answered and held its goroutine and descriptors.
func TestCreateUncheckedRacingFIFO(t *testing.T) {
	e := newEnv(t, Options{})
	x, y := filepath.Join(e.dir, "x"), filepath.Join(e.dir, "y")
	if err := os.WriteFile(x, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(y, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, y, unix.RENAME_EXCHANGE)
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		// Unblock an open stuck on the FIFO, if any, so that the server can stop.
		for _, p := range []string{x, y} {
			if fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
				unix.Close(fd)
			}
		}
	}()
	args := &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("x")}, Mode: nfs3.Unchecked,
		Attr: nfs3.Sattr{SetSize: true, Size: 0}}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		var r nfs3.CreateRes
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := e.c.nfs.Call(ctx, uint32(nfs3.ProcCreate), args, owned{&r})
		cancel()
		if err != nil {
			t.Fatalf("CREATE UNCHECKED size 0 #%d got no answer: %v", i, err)
		}
		if r.Status != nfs3.StatusOK && r.Status != nfs3.StatusExist {
			t.Fatalf("CREATE UNCHECKED size 0 #%d: %v, want NFS3_OK (a file) or NFS3ERR_EXIST (the FIFO)", i, r.Status)
		}
	}
}

func TestUnstableCommitAndRestart(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	f := c.create(e.root, "u")
	sub := c.mkdir(e.root, "d1")
	sub2 := c.mkdir(sub, "d2")
	deep := c.create(sub2, "deep")
	w := c.write(f, 0, []byte("unstable data"), nfs3.Unstable)
	if w.Committed != nfs3.Unstable || w.Verf != e.srv.WriteVerifier() {
		t.Fatalf("UNSTABLE write: committed %v verf %x", w.Committed, w.Verf)
	}
	w2 := c.write(f, 13, []byte("!"), nfs3.DataSync)
	if w2.Committed != nfs3.DataSync || w2.Verf != w.Verf {
		t.Fatalf("DATA_SYNC write: committed %v", w2.Committed)
	}
	var cr nfs3.CommitRes
	c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: f, Offset: 0, Count: 0}, &cr)
	if cr.Status != nfs3.StatusOK || cr.Verf != w.Verf || !cr.Wcc.After.Present {
		t.Fatalf("COMMIT: %v %x", cr.Status, cr.Verf)
	}
	c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: sub}, &cr)
	wantStatus(t, "COMMIT dir", cr.Status, nfs3.StatusIsDir)

	// Restart: handles survive (index rebuilt by search), the verifier changes.
	old := w.Verf
	e.stop()
	e.start(Options{Root: e.dir, StateDir: e.state})
	c2 := e.dial(rootCred())
	if e.srv.WriteVerifier() == old {
		t.Fatal("write verifier did not change across restart")
	}
	if r := c2.read(f, 0, 100); r.Status != nfs3.StatusOK || string(r.Data) != "unstable data!" {
		t.Fatalf("READ after restart: %v %q", r.Status, r.Data)
	}
	if a, st := c2.getattr(deep); st != nfs3.StatusOK || a.Type != nfs3.TypeReg {
		t.Fatalf("deep handle after restart: %v", st)
	}
	c2.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: f}, &cr)
	if cr.Verf == old {
		t.Fatal("COMMIT verifier unchanged after restart")
	}
	// To a server with another key the old handles are stale.
	e.stop()
	e.start(Options{Root: e.dir, StateDir: t.TempDir()})
	c3 := e.dial(rootCred())
	if _, st := c3.getattr(f); st != nfs3.StatusStale {
		t.Fatalf("handle under another key: %v", st)
	}
}

// TestWriteVerifierChangesAfterIOError: the write verifier changes when writing or
// syncing data fails, as RFC 1813 (§3.3.7, §3.3.21) and RFC 8881 require whenever
// uncommitted data may have been lost, and as knfsd does
// (commit_reset_write_verifier). Linux reports a writeback error to fsync once per
// open file; the dirty pages are then clean and the data gone. A client that sent
// UNSTABLE WRITEs, got NFS3ERR_IO from COMMIT and retried it got NFS3_OK with the
// verifier of its WRITEs, and so dropped data that was lost. A failed FILE_SYNC or
// DATA_SYNC WRITE changes it too, and NFSv4.1's COMMIT and WRITE share the verifier.
func TestWriteVerifierChangesAfterIOError(t *testing.T) {
	var failFsync, failFdatasync atomic.Bool // fail the next call, once
	e := newEnvPrepared(t, Options{}, func(s *Server) {
		s.sys.fsync = func(fd int) error {
			if failFsync.CompareAndSwap(true, false) {
				return unix.EIO // the kernel's errseq: reported once, then 0
			}
			return unix.Fsync(fd)
		}
		s.sys.fdatasync = func(fd int) error {
			if failFdatasync.CompareAndSwap(true, false) {
				return unix.EIO
			}
			return unix.Fdatasync(fd)
		}
	})
	fh := e.c.create(e.root, "f")
	commit := func(what string, want nfs3.Status) nfs3.CommitRes {
		t.Helper()
		var r nfs3.CommitRes
		e.c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: fh}, &r)
		wantStatus(t, what, r.Status, want)
		return r
	}

	w := e.c.write(fh, 0, []byte("precious"), nfs3.Unstable)
	wantStatus(t, "UNSTABLE WRITE", w.Status, nfs3.StatusOK)
	failFsync.Store(true)
	commit("COMMIT meeting a writeback error", nfs3.StatusIO)
	if cr := commit("COMMIT again", nfs3.StatusOK); cr.Verf == w.Verf {
		t.Fatalf("COMMIT after a writeback error answers NFS3_OK with the WRITE's verifier %x: the client drops data that was lost", cr.Verf)
	}

	for _, tc := range []struct {
		stable nfs3.StableHow
		fail   *atomic.Bool
	}{{nfs3.FileSync, &failFsync}, {nfs3.DataSync, &failFdatasync}} {
		before := e.c.write(fh, 0, []byte("precious"), nfs3.Unstable).Verf
		tc.fail.Store(true)
		w := e.c.write(fh, 0, []byte("precious"), tc.stable)
		wantStatus(t, fmt.Sprintf("%v WRITE meeting a writeback error", tc.stable), w.Status, nfs3.StatusIO)
		if after := commit("COMMIT", nfs3.StatusOK).Verf; after == before {
			t.Fatalf("verifier %x unchanged by a failed %v WRITE", after, tc.stable)
		}
	}

	c4 := e.v4(rootCred())
	c4.mount()
	wr := c4.must(&nfs4.PutfhArgs{Object: nfs4.FH(fh)}, &nfs4.WriteArgs{Stable: nfs4.Unstable4, Data: []byte("precious")})
	verf4 := wr.Results[2].(*nfs4.WriteRes).WriteVerf
	failFsync.Store(true)
	wantStatus4(t, "NFSv4.1 COMMIT meeting a writeback error", c4.call(&nfs4.PutfhArgs{Object: nfs4.FH(fh)}, &nfs4.CommitArgs{}), nfs4.ErrIO)
	cr := c4.must(&nfs4.PutfhArgs{Object: nfs4.FH(fh)}, &nfs4.CommitArgs{})
	if v := cr.Results[2].(*nfs4.CommitRes).WriteVerf; v == verf4 {
		t.Fatalf("NFSv4.1 COMMIT after a writeback error answers NFS4_OK with the WRITE's verifier %x", v)
	}
}

// TestWriteVerifierChangesAfterMetadataSyncError: a procedure that fsyncs a regular
// file to make a metadata change stable (SETATTR, CREATE of an existing file, LINK, and
// NFSv4.1's SETATTR and LINK) writes back its dirty pages too, and may be the one call
// Linux reports a writeback error of data written UNSTABLE to. The procedure fails
// (NFS3ERR_IO), and the verifier changes, so that the client's next COMMIT, which the
// kernel then answers 0 from a descriptor opened after the error, does not tell it its
// UNSTABLE data is safe. A failed fsync of a directory (REMOVE) loses no file's data:
// the verifier stays.
func TestWriteVerifierChangesAfterMetadataSyncError(t *testing.T) {
	var failFsync atomic.Bool // fail the next fsync, once
	e := newEnvPrepared(t, Options{}, func(s *Server) {
		s.sys.fsync = func(fd int) error {
			if failFsync.CompareAndSwap(true, false) {
				return unix.EIO // the kernel's errseq: reported once, then 0
			}
			return unix.Fsync(fd)
		}
	})
	c := e.c
	f := c.create(e.root, "f")
	d := c.mkdir(e.root, "d")
	c4 := e.v4(rootCred())
	c4.mount()
	commitVerf := func(what string) [nfs3.WriteVerfSize]byte {
		t.Helper()
		var r nfs3.CommitRes
		c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: f}, &r)
		wantStatus(t, what, r.Status, nfs3.StatusOK)
		return r.Verf
	}
	// failing runs do with the next fsync failing, checks it was called and answered
	// want, and returns the verifier of a COMMIT after it and of an UNSTABLE WRITE
	// before it.
	failing := func(what string, do func() bool) (before, after [nfs3.WriteVerfSize]byte) {
		t.Helper()
		before = c.write(f, 0, []byte("precious"), nfs3.Unstable).Verf
		failFsync.Store(true)
		if !do() {
			t.Errorf("%s meeting a writeback error: not NFS3ERR_IO (NFS4ERR_IO)", what)
		}
		if failFsync.Swap(false) {
			t.Fatalf("%s: no fsync", what)
		}
		return before, commitVerf("COMMIT after " + what)
	}
	for _, tc := range []struct {
		what string
		do   func() bool
	}{
		{"SETATTR size", func() bool {
			var r nfs3.WccRes
			c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: f, Attr: nfs3.Sattr{SetSize: true, Size: 8}}, &r)
			return r.Status == nfs3.StatusIO
		}},
		{"SETATTR mode", func() bool {
			var r nfs3.WccRes
			c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: f, Attr: nfs3.Sattr{SetMode: true, Mode: 0o644}}, &r)
			return r.Status == nfs3.StatusIO
		}},
		{"CREATE UNCHECKED of the file", func() bool {
			var r nfs3.CreateRes
			c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f")}, Mode: nfs3.Unchecked,
				Attr: nfs3.Sattr{SetSize: true, Size: 8}}, &r)
			return r.Status == nfs3.StatusIO
		}},
		{"LINK", func() bool {
			var r nfs3.LinkRes
			c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: f, Link: nfs3.DirOpArgs{Dir: d, Name: []byte("l3")}}, &r)
			return r.Status == nfs3.StatusIO
		}},
		{"NFSv4.1 SETATTR mode", func() bool {
			res := c4.call(&nfs4.PutfhArgs{Object: nfs4.FH(f)}, &nfs4.SetattrArgs{Mask: nfs4.NewBitmap(nfs4.AttrMode), Attr: nfs4.Fattr{Mode: 0o644}})
			return res.Status == nfs4.ErrIO
		}},
		{"NFSv4.1 LINK", func() bool {
			res := c4.call(&nfs4.PutfhArgs{Object: nfs4.FH(f)}, &nfs4.NoArgs{OpNum: nfs4.OpSavefh}, &nfs4.PutfhArgs{Object: nfs4.FH(d)},
				&nfs4.NameArgs{OpNum: nfs4.OpLink, Name: []byte("l4")})
			return res.Status == nfs4.ErrIO
		}},
	} {
		if before, after := failing(tc.what, tc.do); after == before {
			t.Errorf("%s met a writeback error, yet COMMIT answers NFS3_OK with the WRITE's verifier %x: the client drops data that was lost", tc.what, after)
		}
	}
	if before, after := failing("REMOVE", func() bool {
		var r nfs3.WccRes
		c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: d, Name: []byte("l3")}}, &r)
		return r.Status == nfs3.StatusIO
	}); after != before {
		t.Errorf("a failed fsync of a directory changed the verifier %x to %x", before, after)
	}
}

// Paths longer than PATH_MAX are reached by walking.
func TestDeepTree(t *testing.T) {
	e := newEnv(t, Options{})
	dir := e.root
	name := strings.Repeat("d", 200)
	for i := 0; i < 25; i++ { // 25 * 201 bytes > 4096
		dir = e.c.mkdir(dir, name)
	}
	f := e.c.create(dir, "leaf")
	e.c.write(f, 0, []byte("deep"), nfs3.FileSync)
	if r := e.c.read(f, 0, 10); r.Status != nfs3.StatusOK || string(r.Data) != "deep" {
		t.Fatalf("READ at depth 25: %v %q", r.Status, r.Data)
	}
}

func TestSeveralClients(t *testing.T) {
	e := newEnv(t, Options{})
	const clients = 6
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		c := e.dial(&oncrpc.AuthSysParams{MachineName: []byte("c"), UID: 0})
		wg.Add(1)
		go func(i int, c *client) {
			defer wg.Done()
			name := fmt.Sprintf("client%d", i)
			data := bytes.Repeat([]byte{byte(i)}, 300_001+i)
			var cr nfs3.CreateRes
			if err := c.call(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte(name)}, Mode: nfs3.Guarded}, &cr); err != nil || cr.Status != nfs3.StatusOK {
				errs <- fmt.Errorf("%s CREATE: %v %v", name, err, cr.Status)
				return
			}
			for off := 0; off < len(data); off += 65536 {
				end := min(off+65536, len(data))
				var wr nfs3.WriteRes
				if err := c.call(nfs3.ProcWrite, &nfs3.WriteArgs{File: cr.Obj.FH, Offset: uint64(off), Count: uint32(end - off), Stable: nfs3.Unstable, Data: data[off:end]}, &wr); err != nil || wr.Status != nfs3.StatusOK {
					errs <- fmt.Errorf("%s WRITE: %v %v", name, err, wr.Status)
					return
				}
			}
			var got []byte
			for off := uint64(0); ; {
				var rr nfs3.ReadRes
				if err := c.call(nfs3.ProcRead, &nfs3.ReadArgs{File: cr.Obj.FH, Offset: off, Count: 100000}, &rr); err != nil || rr.Status != nfs3.StatusOK {
					errs <- fmt.Errorf("%s READ: %v %v", name, err, rr.Status)
					return
				}
				got = append(got, rr.Data...)
				off += uint64(len(rr.Data))
				if rr.EOF {
					break
				}
			}
			if !bytes.Equal(got, data) {
				errs <- fmt.Errorf("%s: read back %d bytes, differ", name, len(got))
			}
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPathEscapeRefused(t *testing.T) { testPathEscape(t) }

// The component-by-component walk used where openat2 is missing keeps the same
// guarantees.
func TestPathEscapeRefusedWalk(t *testing.T) {
	noOpenat2.Store(true)
	defer noOpenat2.Store(false)
	testPathEscape(t)
	TestSymlinksAndHardLinks(t)
	TestRenames(t)
}

func testPathEscape(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "export")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{Root: root})
	c := e.c
	// ".." at the root is the root.
	up, st := c.lookup(e.root, "..")
	if st != nfs3.StatusOK || !bytes.Equal(up, e.root) {
		t.Fatalf("LOOKUP .. at root: %v", st)
	}
	if _, st := c.lookup(up, "secret"); st != nfs3.StatusNoEnt {
		t.Fatalf("LOOKUP secret beside the export: %v", st)
	}
	for _, name := range []string{"../secret", "a/b", "/etc", "x\x00y"} {
		if _, st := c.lookup(e.root, name); st != nfs3.StatusAcces {
			t.Errorf("LOOKUP %q: %v, want NFS3ERR_ACCES", name, st)
		}
		var r nfs3.CreateRes
		c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte(name)}, Mode: nfs3.Unchecked}, &r)
		if r.Status != nfs3.StatusAcces {
			t.Errorf("CREATE %q: %v", name, r.Status)
		}
	}
	// A symlink to the parent directory is returned, never followed.
	if err := os.Symlink(parent, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	esc, st := c.lookup(e.root, "escape")
	wantStatus(t, "LOOKUP escape", st, nfs3.StatusOK)
	if _, st := c.lookup(esc, "secret"); st != nfs3.StatusNotDir {
		t.Fatalf("LOOKUP through symlink: %v", st)
	}
	var rd nfs3.ReaddirRes
	c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: esc, Count: 4096}, &rd)
	wantStatus(t, "READDIR symlink", rd.Status, nfs3.StatusNotDir)
	var cr nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: esc, Name: []byte("planted")}, Mode: nfs3.Unchecked}, &cr)
	wantStatus(t, "CREATE in symlink", cr.Status, nfs3.StatusNotDir)
	if _, err := os.Stat(filepath.Join(parent, "planted")); err == nil {
		t.Fatal("a file was created outside the export")
	}
	// A directory swapped for a symlink behind the server's back is not followed.
	sub := c.mkdir(e.root, "sub")
	os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub.moved"))
	os.Symlink(parent, filepath.Join(root, "sub"))
	if _, st := c.lookup(sub, "secret"); st == nfs3.StatusOK {
		t.Fatal("LOOKUP followed a swapped-in symlink")
	}
	// A forged handle fails the MAC: to the client it is stale (it cannot be told
	// from one issued under an old key), and it reaches nothing.
	forged := bytes.Clone(e.root)
	forged[20] ^= 1
	if _, st := c.getattr(forged); st != nfs3.StatusStale {
		t.Fatalf("forged handle: %v", st)
	}
	for _, fh := range []nfs3.FH{{}, {1, 2, 3}, make(nfs3.FH, 64), append(bytes.Clone(e.root), 0)} {
		if _, st := c.getattr(fh); st != nfs3.StatusBadHandle {
			t.Fatalf("bad handle %x: %v", fh, st)
		}
	}
	// A well-formed handle for a file that no longer exists is stale.
	gone := c.create(e.root, "gone")
	os.Remove(filepath.Join(root, "gone"))
	if _, st := c.getattr(gone); st != nfs3.StatusStale {
		t.Fatalf("removed file: %v", st)
	}
	// Retrying the stale handle does not walk the export again.
	searches := e.srv.searches.Load()
	for i := 0; i < 5; i++ {
		if _, st := c.getattr(gone); st != nfs3.StatusStale {
			t.Fatalf("removed file, retry %d: %v", i, st)
		}
	}
	if n := e.srv.searches.Load() - searches; n != 0 {
		t.Fatalf("%d searches for a handle known to be stale", n)
	}
	// A handle minted under the same key for another export id is stale.
	other := newHandleCodec(mustKey(t, e.state), 12345)
	var attr nfs3.Fattr
	attr, _ = c.getattr(e.root)
	if _, st := c.getattr(other.encode(nil, handleID{key: fileKey{dev: attr.FSID, ino: attr.FileID}})); st != nfs3.StatusStale {
		t.Fatalf("other export's handle: %v", st)
	}
}

func mustKey(t *testing.T, dir string) []byte {
	k, _, err := loadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestPermissions(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create files owned by others")
	}
	e := newEnv(t, Options{})
	root := e.c
	pub := root.mkdir(e.root, "pub")
	ro := root.create(pub, "ro")
	root.write(ro, 0, []byte("readable"), nfs3.FileSync)
	user := e.dial(&oncrpc.AuthSysParams{MachineName: []byte("u"), UID: 1000, GID: 1000})
	if r := user.read(ro, 0, 100); r.Status != nfs3.StatusOK || string(r.Data) != "readable" {
		t.Fatalf("user READ of 0644 file: %v", r.Status)
	}
	var w nfs3.WriteRes
	user.must(nfs3.ProcWrite, &nfs3.WriteArgs{File: ro, Count: 1, Data: []byte("x"), Stable: nfs3.FileSync}, &w)
	wantStatus(t, "user WRITE of root's 0644 file", w.Status, nfs3.StatusAcces)
	var cr nfs3.CreateRes
	user.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: pub, Name: []byte("mine")}, Mode: nfs3.Guarded}, &cr)
	wantStatus(t, "user CREATE in root's 0755 dir", cr.Status, nfs3.StatusAcces)
	var ar nfs3.AccessRes
	user.must(nfs3.ProcAccess, &nfs3.AccessArgs{Object: ro, Access: 0x3f}, &ar)
	if ar.Status != nfs3.StatusOK || ar.Access != nfs3.AccessRead {
		t.Fatalf("ACCESS: %v %#x", ar.Status, ar.Access)
	}
	var sr nfs3.SetattrRes
	user.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: ro, Attr: nfs3.Sattr{SetMode: true, Mode: 0o777}}, &sr)
	wantStatus(t, "user SETATTR mode of root's file", sr.Status, nfs3.StatusPerm)

	// In a world-writable directory the user creates files it owns.
	var sa nfs3.SetattrRes
	root.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: pub, Attr: nfs3.Sattr{SetMode: true, Mode: 0o1777}}, &sa)
	wantStatus(t, "SETATTR mode", sa.Status, nfs3.StatusOK)
	user.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: pub, Name: []byte("mine")}, Mode: nfs3.Guarded}, &cr)
	wantStatus(t, "user CREATE in 1777 dir", cr.Status, nfs3.StatusOK)
	if cr.ObjAttr.Attr.UID != 1000 || cr.ObjAttr.Attr.GID != 1000 {
		t.Fatalf("created file owned by %d:%d", cr.ObjAttr.Attr.UID, cr.ObjAttr.Attr.GID)
	}
	// The sticky bit keeps the user from removing root's file.
	var rr nfs3.RemoveRes
	user.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: pub, Name: []byte("ro")}}, &rr)
	wantStatus(t, "user REMOVE in sticky dir", rr.Status, nfs3.StatusAcces)
	user.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: pub, Name: []byte("mine")}}, &rr)
	wantStatus(t, "user REMOVE own file", rr.Status, nfs3.StatusOK)
	// In a setgid directory new entries take its group, and new directories keep the bit.
	root.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: pub, Attr: nfs3.Sattr{SetMode: true, Mode: 0o2777, SetGID: true, GID: 4242}}, &sa)
	wantStatus(t, "SETATTR setgid", sa.Status, nfs3.StatusOK)
	var md nfs3.CreateRes
	user.must(nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: pub, Name: []byte("sgid")}, Attr: nfs3.Sattr{SetMode: true, Mode: 0o755}}, &md)
	wantStatus(t, "MKDIR in setgid dir", md.Status, nfs3.StatusOK)
	if a := md.ObjAttr.Attr; a.GID != 4242 || a.Mode != 0o2755 || a.UID != 1000 {
		t.Fatalf("MKDIR in setgid dir: %d:%d mode %o", a.UID, a.GID, a.Mode)
	}
	// With RootSquash, root is nobody too.
	sq := newEnv(t, Options{RootSquash: true})
	var sqr nfs3.CreateRes
	sq.c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: sq.root, Name: []byte("x")}, Mode: nfs3.Guarded}, &sqr)
	wantStatus(t, "squashed root CREATE in 0700 dir", sqr.Status, nfs3.StatusAcces)
	// AUTH_NONE acts as nobody.
	anon := e.dial(nil)
	anon.must(nfs3.ProcWrite, &nfs3.WriteArgs{File: ro, Count: 1, Data: []byte("x"), Stable: nfs3.FileSync}, &w)
	wantStatus(t, "anonymous WRITE", w.Status, nfs3.StatusAcces)
}

// TestWriteClearsSetuid: a WRITE, a SETATTR of the size or a CREATE UNCHECKED with a
// size by a caller other than root clears the file's setuid bit, and its setgid bit
// when the file is group-executable or the caller is outside its group, as write(2)
// and truncate(2) by that user do locally (Linux clears them for a caller without
// CAP_FSETID; knfsd drops CAP_FSETID for every caller but root). The server writes as
// root, so the kernel kept them, and a user allowed to write a root-owned setuid
// program could replace its code and keep it setuid root. Root's WRITE keeps them,
// and so does a member of the group writing a file that is setgid but not
// group-executable. The file's capabilities (security.capability) go on every write
// and truncate: the kernel removes them for root too.
func TestWriteClearsSetuid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files owned by others")
	}
	e := newEnv(t, Options{})
	if err := os.Chmod(e.dir, 0o777); err != nil { // CREATE needs to write the directory
		t.Fatal(err)
	}
	// A VFS_CAP_REVISION_2 security.capability granting cap_net_raw.
	fcap := []byte{1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	writeOne := func(c *client, fh nfs3.FH) nfs3.Status {
		return c.write(fh, 0, []byte("#"), nfs3.FileSync).Status
	}
	setSize0 := func(c *client, fh nfs3.FH) nfs3.Status {
		var r nfs3.WccRes
		c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: fh, Attr: nfs3.Sattr{SetSize: true, Size: 0}}, &r)
		return r.Status
	}
	createSize0 := func(c *client, _ nfs3.FH) nfs3.Status {
		var r nfs3.CreateRes
		c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("prog")}, Mode: nfs3.Unchecked,
			Attr: nfs3.Sattr{SetSize: true, Size: 0}}, &r)
		return r.Status
	}
	for _, tc := range []struct {
		name string
		mode uint32 // of the file, owned by 0:1000
		cred *oncrpc.AuthSysParams
		want uint32 // mode afterwards
		op   func(c *client, fh nfs3.FH) nfs3.Status
	}{
		{"WRITE", 0o6775, userCred(1001, 1000), 0o775, writeOne},
		{"SETATTR size", 0o6775, userCred(1001, 1000), 0o775, setSize0},
		{"CREATE UNCHECKED size", 0o6775, userCred(1001, 1000), 0o775, createSize0},
		{"WRITE of a setuid-only file", 0o4777, userCred(1002, 1002), 0o777, writeOne},
		{"WRITE by root", 0o6775, rootCred(), 0o6775, writeOne},
		{"WRITE by a group member, not group-executable", 0o2664, userCred(1001, 1000), 0o2664, writeOne},
		{"WRITE by another user, not group-executable", 0o2666, userCred(1002, 1002), 0o666, writeOne},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(e.dir, "prog")
			os.Remove(p)
			if err := os.WriteFile(p, []byte("#!/bin/sh\necho hi\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, 0, 1000); err != nil {
				t.Fatal(err)
			}
			if err := unix.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			hasCap := unix.Setxattr(p, "security.capability", fcap, 0) == nil
			c := e.dial(tc.cred)
			fh, st := c.lookup(e.root, "prog")
			wantStatus(t, "LOOKUP", st, nfs3.StatusOK)
			wantStatus(t, tc.name, tc.op(c, fh), nfs3.StatusOK)
			var after unix.Stat_t
			if err := unix.Lstat(p, &after); err != nil {
				t.Fatal(err)
			}
			if got := after.Mode & 0o7777; got != tc.want {
				t.Errorf("by %d:%d of a %o file: mode %o, want %o", tc.cred.UID, tc.cred.GID, tc.mode, got, tc.want)
			}
			if _, err := unix.Getxattr(p, "security.capability", nil); hasCap && err != unix.ENODATA {
				t.Errorf("%s: security.capability still there (%v)", tc.name, err)
			}
		})
	}
}

// TestSetattrOwnerByNonOwner: only root and the owner may set a file's uid or gid, as
// chown(2) allows (chown_ok, chgrp_ok), even to the value it already has: the server
// chowns as root, which clears the setuid bit, so another user could strip the setuid
// bit of anyone's program. The owner may set its own uid and its file's group or one
// it is in, and no other.
func TestSetattrOwnerByNonOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files owned by others")
	}
	e := newEnv(t, Options{})
	p := filepath.Join(e.dir, "prog")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setattr := func(c *client, fh nfs3.FH, attr nfs3.Sattr) nfs3.Status {
		var r nfs3.WccRes
		c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: fh, Attr: attr}, &r)
		return r.Status
	}
	other := e.dial(userCred(1001, 1001))
	fh, _ := other.lookup(e.root, "prog")
	for _, tc := range []struct {
		what string
		attr nfs3.Sattr
	}{
		{"uid 0", nfs3.Sattr{SetUID: true, UID: 0}},
		{"gid 0", nfs3.Sattr{SetGID: true, GID: 0}},
	} {
		if err := unix.Chmod(p, 0o4755); err != nil { // root's setuid program
			t.Fatal(err)
		}
		st := setattr(other, fh, tc.attr)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st != nfs3.StatusPerm || fi.Mode()&os.ModeSetuid == 0 {
			t.Errorf("SETATTR %s of root's setuid file by uid 1001: %v, mode now %v (want NFS3ERR_PERM, setuid kept)", tc.what, st, fi.Mode())
		}
	}

	if err := os.Chown(p, 1001, 1001); err != nil {
		t.Fatal(err)
	}
	owner := e.dial(&oncrpc.AuthSysParams{MachineName: []byte("u"), UID: 1001, GID: 1001, GIDs: []uint32{1002}})
	for _, tc := range []struct {
		what string
		attr nfs3.Sattr
		want nfs3.Status
	}{
		{"its own uid", nfs3.Sattr{SetUID: true, UID: 1001}, nfs3.StatusOK},
		{"the file's gid", nfs3.Sattr{SetGID: true, GID: 1001}, nfs3.StatusOK},
		{"a gid it has", nfs3.Sattr{SetGID: true, GID: 1002}, nfs3.StatusOK},
		{"another uid", nfs3.Sattr{SetUID: true, UID: 1002}, nfs3.StatusPerm},
		{"a gid it has not", nfs3.Sattr{SetGID: true, GID: 1003}, nfs3.StatusPerm},
	} {
		if st := setattr(owner, fh, tc.attr); st != tc.want {
			t.Errorf("SETATTR of %s by the owner: %v, want %v", tc.what, st, tc.want)
		}
	}
}

func TestErrorsAndAttributes(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	d := c.mkdir(e.root, "d")
	f := c.create(d, "f")
	var rr nfs3.RemoveRes
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("nope")}}, &rr)
	wantStatus(t, "REMOVE missing", rr.Status, nfs3.StatusNoEnt)
	if !rr.Wcc.Before.Present || !rr.Wcc.After.Present {
		t.Fatal("REMOVE failure without wcc data")
	}
	c.must(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("d")}}, &rr)
	wantStatus(t, "RMDIR non-empty", rr.Status, nfs3.StatusNotEmpty)
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("d")}}, &rr)
	wantStatus(t, "REMOVE dir", rr.Status, nfs3.StatusIsDir)
	c.must(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: d, Name: []byte("f")}}, &rr)
	wantStatus(t, "RMDIR file", rr.Status, nfs3.StatusNotDir)
	c.must(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: d, Name: []byte(".")}}, &rr)
	wantStatus(t, "RMDIR .", rr.Status, nfs3.StatusInval)
	if r := c.read(d, 0, 10); r.Status != nfs3.StatusIsDir {
		t.Fatalf("READ dir: %v", r.Status)
	}
	if _, st := c.lookup(f, "x"); st != nfs3.StatusNotDir {
		t.Fatalf("LOOKUP in file: %v", st)
	}
	var mr nfs3.CreateRes
	c.must(nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("d")}}, &mr)
	wantStatus(t, "MKDIR existing", mr.Status, nfs3.StatusExist)
	c.must(nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("..")}}, &mr)
	wantStatus(t, "MKDIR ..", mr.Status, nfs3.StatusExist)

	// SETATTR: size, mode, times, guard.
	c.write(f, 0, []byte("0123456789"), nfs3.FileSync)
	a0, _ := c.getattr(f)
	var sr nfs3.SetattrRes
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: f, Attr: nfs3.Sattr{SetSize: true, Size: 4, SetMode: true, Mode: 0o640,
		Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.Time{Seconds: 1000000000, Nseconds: 5}}}, Guard: true, GuardCtime: a0.Ctime}, &sr)
	wantStatus(t, "SETATTR", sr.Status, nfs3.StatusOK)
	if a := sr.Wcc.After.Attr; a.Size != 4 || a.Mode != 0o640 || a.Mtime != (nfs3.Time{Seconds: 1000000000, Nseconds: 5}) {
		t.Fatalf("SETATTR result: size %d mode %o mtime %v", a.Size, a.Mode, a.Mtime)
	}
	if sr.Wcc.Before.Attr.Size != 10 {
		t.Fatalf("SETATTR pre-op size %d", sr.Wcc.Before.Attr.Size)
	}
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: f, Attr: nfs3.Sattr{SetSize: true}, Guard: true, GuardCtime: a0.Ctime}, &sr)
	wantStatus(t, "SETATTR stale guard", sr.Status, nfs3.StatusNotSync)
	c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: d, Attr: nfs3.Sattr{SetSize: true}}, &sr)
	wantStatus(t, "SETATTR size of dir", sr.Status, nfs3.StatusIsDir)

	var fs nfs3.FsstatRes
	c.must(nfs3.ProcFsstat, &nfs3.FsstatArgs{Object: e.root}, &fs)
	if fs.Status != nfs3.StatusOK || fs.Tbytes == 0 || fs.Tbytes < fs.Fbytes {
		t.Fatalf("FSSTAT: %+v", fs)
	}
	var pc nfs3.PathconfRes
	c.must(nfs3.ProcPathconf, &nfs3.PathconfArgs{Object: f}, &pc)
	if pc.Status != nfs3.StatusOK || pc.NameMax != 255 || !pc.NoTrunc {
		t.Fatalf("PATHCONF: %+v", pc)
	}
	// READ past EOF: no data, eof set.
	if r := c.read(f, 100, 10); r.Status != nfs3.StatusOK || len(r.Data) != 0 || !r.EOF {
		t.Fatalf("READ past EOF: %+v", r)
	}
	// Arguments that do not decode get GARBAGE_ARGS; unknown procedures PROC_UNAVAIL.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.nfs.Call(ctx, uint32(nfs3.ProcGetattr), rawArgs{0, 0, 0, 200}, nil); !isAccept(err, oncrpc.GarbageArgs) {
		t.Fatalf("bad GETATTR args: %v", err)
	}
	if err := c.nfs.Call(ctx, uint32(nfs3.ProcWrite), &nfs3.WriteArgs{File: f, Count: 5, Data: []byte("abc")}, nil); !isAccept(err, oncrpc.GarbageArgs) {
		t.Fatalf("WRITE count mismatch: %v", err)
	}
	if err := c.nfs.Call(ctx, 22, nil, nil); !isAccept(err, oncrpc.ProcUnavail) {
		t.Fatalf("procedure 22: %v", err)
	}
}

func TestReadOnlyExport(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	e := newEnv(t, Options{Root: dir, ReadOnly: true})
	f, _ := e.c.lookup(e.root, "f")
	var w nfs3.WriteRes
	e.c.must(nfs3.ProcWrite, &nfs3.WriteArgs{File: f, Count: 1, Data: []byte("y"), Stable: nfs3.FileSync}, &w)
	wantStatus(t, "WRITE read-only", w.Status, nfs3.StatusROFS)
	var cr nfs3.CreateRes
	e.c.must(nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("d")}}, &cr)
	wantStatus(t, "MKDIR read-only", cr.Status, nfs3.StatusROFS)
	if r := e.c.read(f, 0, 10); string(r.Data) != "x" {
		t.Fatalf("READ read-only: %v", r.Status)
	}
}

// TestFSIDOption checks what Options.FSID promises: the handles carry it as their
// export id, and the attributes of every reply (GETATTR, READ's post_op_attr,
// WRITE's wcc_data) report it as fsid instead of the device.
func TestFSIDOption(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	e := newEnv(t, Options{Root: dir, FSID: 7, HasFSID: true, ExportID: 99})
	if got := binary.BigEndian.Uint32(e.root[4:]); got != 7 {
		t.Fatalf("export id in the root handle: %d, want 7", got)
	}
	a, st := e.c.getattr(e.root)
	wantStatus(t, "GETATTR", st, nfs3.StatusOK)
	if a.FSID != 7 {
		t.Fatalf("GETATTR fsid %d, want 7", a.FSID)
	}
	f, st := e.c.lookup(e.root, "f")
	wantStatus(t, "LOOKUP", st, nfs3.StatusOK)
	if r := e.c.read(f, 0, 10); !r.Attr.Present || r.Attr.Attr.FSID != 7 {
		t.Fatalf("READ post_op_attr %+v, want fsid 7", r.Attr)
	}
	if w := e.c.write(f, 0, []byte("y"), nfs3.FileSync); !w.Wcc.After.Present || w.Wcc.After.Attr.FSID != 7 {
		t.Fatalf("WRITE wcc_data %+v, want fsid 7", w.Wcc)
	}
}

// TestFSIDOptionOnlyOnExportFileSystem: with fsid= (Options.HasFSID), only the objects
// on the export root's file system report it; those of a file system mounted below
// the export root, which the server crosses into with crossmnt, keep their device's
// fsid, in NFSv3 and NFSv4.1 attributes. Every object used to report the export's fsid, so files of
// two file systems could share (fsid, fileid), the identity NFS clients (and st_dev
// and st_ino users such as tar, du or find on them) go by. The test mounts two tmpfs,
// one below the other, in a mount namespace of its own.
func TestFSIDOptionOnlyOnExportFileSystem(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	top := t.TempDir()
	mount := func(src, dir string) {
		if err := unix.Mount(src, dir, "tmpfs", 0, "mode=0755"); err != nil {
			t.Skipf("cannot mount tmpfs on %s: %v", dir, err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	}
	// Each "a" is the first file made on a fresh tmpfs: both have inode number 2.
	mount("nfsserver-test-1", top)
	if err := os.WriteFile(filepath.Join(top, "a"), []byte("on the export root's"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(top, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	mount("nfsserver-test-2", sub)
	if err := os.WriteFile(filepath.Join(sub, "a"), []byte("on the one mounted below"), 0o644); err != nil {
		t.Fatal(err)
	}
	var subDev unix.Stat_t
	if err := unix.Stat(sub, &subDev); err != nil {
		t.Fatal(err)
	}

	e := newEnv(t, Options{Root: top, HasFSID: true, FSID: 7, CrossMount: true})
	a1, st := e.c.lookup(e.root, "a")
	wantStatus(t, "LOOKUP a", st, nfs3.StatusOK)
	subFH, st := e.c.lookup(e.root, "sub")
	wantStatus(t, "LOOKUP sub", st, nfs3.StatusOK)
	a2, st := e.c.lookup(subFH, "a")
	wantStatus(t, "LOOKUP sub/a", st, nfs3.StatusOK)
	at1, _ := e.c.getattr(a1)
	at2, _ := e.c.getattr(a2)
	t.Logf("a: fsid %d fileid %d; sub/a: fsid %d fileid %d", at1.FSID, at1.FileID, at2.FSID, at2.FileID)
	if at1.FSID != 7 {
		t.Errorf("a file on the export root's file system reports fsid %d, want 7", at1.FSID)
	}
	if at2.FSID != subDev.Dev {
		t.Errorf("a file on the file system mounted below the export reports fsid %d, want its device %d", at2.FSID, subDev.Dev)
	}

	c4 := e.v4(rootCred())
	c4.mount()
	for _, tc := range []struct {
		fh   nfs3.FH
		want uint64
	}{{a1, 7}, {a2, subDev.Dev}} {
		if a := c4.getattr(nfs4.FH(tc.fh), nfs4.AttrFSID); a.FSID != (nfs4.FSID4{Major: tc.want}) {
			t.Errorf("NFSv4.1 fsid %+v, want major %d", a.FSID, tc.want)
		}
	}
}
