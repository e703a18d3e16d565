//go:build linux

package nfsserver

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// handleCall is one procedure with the handle under test in one of its handle
// arguments; file and dir are a valid regular file and directory for the others.
type handleCall struct {
	name string
	proc nfs3.Proc
	args func(fh, file, dir nfs3.FH) xdr.EncoderTo
	res  func() nfs3.Message
}

func dirOp(fh nfs3.FH, name string) nfs3.DirOpArgs {
	return nfs3.DirOpArgs{Dir: fh, Name: []byte(name)}
}

// handleCalls is every NFSv3 procedure that takes a file handle, once per handle
// argument.
var handleCalls = []handleCall{
	{"GETATTR", nfs3.ProcGetattr, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.GetattrArgs{Object: fh} },
		func() nfs3.Message { return &nfs3.GetattrRes{} }},
	{"SETATTR", nfs3.ProcSetattr, func(fh, _, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.SetattrArgs{Object: fh, Attr: nfs3.Sattr{SetMode: true, Mode: 0o644}}
	}, func() nfs3.Message { return &nfs3.WccRes{} }},
	{"LOOKUP", nfs3.ProcLookup, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.LookupArgs{What: dirOp(fh, "x")} },
		func() nfs3.Message { return &nfs3.LookupRes{} }},
	{"ACCESS", nfs3.ProcAccess, func(fh, _, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.AccessArgs{Object: fh, Access: nfs3.AccessRead}
	}, func() nfs3.Message { return &nfs3.AccessRes{} }},
	{"READLINK", nfs3.ProcReadlink, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.ReadlinkArgs{Object: fh} },
		func() nfs3.Message { return &nfs3.ReadlinkRes{} }},
	{"READ", nfs3.ProcRead, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.ReadArgs{File: fh, Count: 10} },
		func() nfs3.Message { return &nfs3.ReadRes{} }},
	{"WRITE", nfs3.ProcWrite, func(fh, _, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.WriteArgs{File: fh, Count: 1, Stable: nfs3.FileSync, Data: []byte("x")}
	}, func() nfs3.Message { return &nfs3.WriteRes{} }},
	{"CREATE", nfs3.ProcCreate, func(fh, _, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.CreateArgs{Where: dirOp(fh, "new"), Mode: nfs3.Unchecked}
	}, func() nfs3.Message { return &nfs3.CreateRes{} }},
	{"MKDIR", nfs3.ProcMkdir, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.MkdirArgs{Where: dirOp(fh, "new")} },
		func() nfs3.Message { return &nfs3.CreateRes{} }},
	{"SYMLINK", nfs3.ProcSymlink, func(fh, _, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.SymlinkArgs{Where: dirOp(fh, "new"), Data: []byte("t")}
	}, func() nfs3.Message { return &nfs3.CreateRes{} }},
	{"MKNOD", nfs3.ProcMknod, func(fh, _, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.MknodArgs{Where: dirOp(fh, "new"), Type: nfs3.TypeFifo}
	}, func() nfs3.Message { return &nfs3.CreateRes{} }},
	{"REMOVE", nfs3.ProcRemove, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.RemoveArgs{What: dirOp(fh, "f")} },
		func() nfs3.Message { return &nfs3.WccRes{} }},
	{"RMDIR", nfs3.ProcRmdir, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.RmdirArgs{What: dirOp(fh, "d")} },
		func() nfs3.Message { return &nfs3.WccRes{} }},
	{"RENAME from", nfs3.ProcRename, func(fh, _, dir nfs3.FH) xdr.EncoderTo {
		return &nfs3.RenameArgs{From: dirOp(fh, "f"), To: dirOp(dir, "g")}
	}, func() nfs3.Message { return &nfs3.RenameRes{} }},
	{"RENAME to", nfs3.ProcRename, func(fh, _, dir nfs3.FH) xdr.EncoderTo {
		return &nfs3.RenameArgs{From: dirOp(dir, "f"), To: dirOp(fh, "g")}
	}, func() nfs3.Message { return &nfs3.RenameRes{} }},
	{"LINK file", nfs3.ProcLink, func(fh, _, dir nfs3.FH) xdr.EncoderTo {
		return &nfs3.LinkArgs{File: fh, Link: dirOp(dir, "l")}
	}, func() nfs3.Message { return &nfs3.LinkRes{} }},
	{"LINK dir", nfs3.ProcLink, func(fh, file, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.LinkArgs{File: file, Link: dirOp(fh, "l")}
	}, func() nfs3.Message { return &nfs3.LinkRes{} }},
	{"READDIR", nfs3.ProcReaddir, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.ReaddirArgs{Dir: fh, Count: 4096} },
		func() nfs3.Message { return &nfs3.ReaddirRes{} }},
	{"READDIRPLUS", nfs3.ProcReaddirplus, func(fh, _, _ nfs3.FH) xdr.EncoderTo {
		return &nfs3.ReaddirplusArgs{Dir: fh, DirCount: 4096, MaxCount: 8192}
	}, func() nfs3.Message { return &nfs3.ReaddirplusRes{} }},
	{"FSSTAT", nfs3.ProcFsstat, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.FsstatArgs{Object: fh} },
		func() nfs3.Message { return &nfs3.FsstatRes{} }},
	{"FSINFO", nfs3.ProcFsinfo, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.FsinfoArgs{Object: fh} },
		func() nfs3.Message { return &nfs3.FsinfoRes{} }},
	{"PATHCONF", nfs3.ProcPathconf, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.PathconfArgs{Object: fh} },
		func() nfs3.Message { return &nfs3.PathconfRes{} }},
	{"COMMIT", nfs3.ProcCommit, func(fh, _, _ nfs3.FH) xdr.EncoderTo { return &nfs3.CommitArgs{File: fh} },
		func() nfs3.Message { return &nfs3.CommitRes{} }},
}

// wantEveryProc calls every procedure that takes a handle with fh (and the valid file
// and dir elsewhere) and checks that each answers want.
func wantEveryProc(t *testing.T, c *client, what string, fh, file, dir nfs3.FH, want nfs3.Status) {
	t.Helper()
	for _, hc := range handleCalls {
		res := hc.res()
		c.must(hc.proc, hc.args(fh, file, dir), res)
		got := nfs3.Status(reflect.ValueOf(res).Elem().FieldByName("Status").Uint())
		if got != want {
			t.Errorf("%s: %s answered %v, want %v", what, hc.name, got, want)
		}
	}
}

// A server restarted without its StateDir has a new handle key: every handle a client
// still holds is well formed but no longer verifies, and every procedure answers
// NFS3ERR_STALE (the file is gone as far as the client can know), not
// NFS3ERR_BADHANDLE (a protocol error).
func TestHostileHandleStaleAfterNewKey(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	file := c.create(e.root, "f")
	dir := c.mkdir(e.root, "d")
	old := map[string]nfs3.FH{"root": e.root, "file": file, "dir": dir}

	e.stop()
	e.start(Options{Root: e.dir}) // no StateDir: a new random key
	c2 := e.dial(rootCred())
	root2 := c2.mount(e.srv.ExportPath())
	if bytes.Equal(root2, e.root) {
		t.Fatal("the root handle survived a new key")
	}
	file2, st := c2.lookup(root2, "f")
	wantStatus(t, "LOOKUP f", st, nfs3.StatusOK)
	dir2, st := c2.lookup(root2, "d")
	wantStatus(t, "LOOKUP d", st, nfs3.StatusOK)
	for name, fh := range old {
		wantEveryProc(t, c2, "old "+name+" handle", fh, file2, dir2, nfs3.StatusStale)
	}
	// The new handles work, and nothing was changed through the old ones.
	if _, st := c2.getattr(file2); st != nfs3.StatusOK {
		t.Fatalf("new file handle: %v", st)
	}
	for _, n := range []string{"new", "g", "l"} {
		if _, err := os.Lstat(filepath.Join(e.dir, n)); err == nil {
			t.Errorf("%s was made through a stale handle", n)
		}
	}
}

// Only a handle that cannot be one of ours is NFS3ERR_BADHANDLE, on every procedure.
func TestHostileHandleMalformed(t *testing.T) {
	e := newEnv(t, Options{})
	file := e.c.create(e.root, "f")
	dir := e.c.mkdir(e.root, "d")
	badVersion := bytes.Clone(e.root)
	badVersion[0] = handleVersion + 1
	reserved := bytes.Clone(e.root)
	reserved[3] = 1
	for name, fh := range map[string]nfs3.FH{
		"truncated":        e.root[:HandleSize-1],
		"empty":            {},
		"long":             append(bytes.Clone(e.root), 0),
		"64 bytes":         make(nfs3.FH, nfs3.FHSize),
		"bad version":      badVersion,
		"reserved nonzero": reserved,
	} {
		wantEveryProc(t, e.c, name+" handle", fh, file, dir, nfs3.StatusBadHandle)
	}
}

// The handle of a removed file or directory is NFS3ERR_STALE on every procedure,
// whether it was removed through NFS or behind the server's back.
func TestHostileHandleRemovedFile(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.c
	file := c.create(e.root, "f")
	dir := c.mkdir(e.root, "d")
	gone := c.create(e.root, "gone")
	c.write(gone, 0, []byte("data"), nfs3.FileSync) // held in the open-file cache
	var wr nfs3.WccRes
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: dirOp(e.root, "gone")}, &wr)
	wantStatus(t, "REMOVE", wr.Status, nfs3.StatusOK)
	goneDir := c.mkdir(e.root, "gonedir")
	c.must(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: dirOp(e.root, "gonedir")}, &wr)
	wantStatus(t, "RMDIR", wr.Status, nfs3.StatusOK)
	local := c.create(e.root, "local")
	if err := os.Remove(filepath.Join(e.dir, "local")); err != nil {
		t.Fatal(err)
	}
	for name, fh := range map[string]nfs3.FH{"removed file": gone, "removed directory": goneDir, "locally removed file": local} {
		wantEveryProc(t, c, name, fh, file, dir, nfs3.StatusStale)
	}
}
