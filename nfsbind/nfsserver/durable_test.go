//go:build linux

package nfsserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// syncRecorder wraps the real sync system calls and records what each was called on:
// "fsync <dev>:<ino>", "fdatasync <dev>:<ino>", "syncfs <dev>" or "sync".
type syncRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *syncRecorder) add(what string) {
	r.mu.Lock()
	r.calls = append(r.calls, what)
	r.mu.Unlock()
}

// take returns the calls recorded since the last take, sorted.
func (r *syncRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	slices.Sort(c)
	return c
}

func fdKey(fd int) fileKey {
	var st unix.Statx_t
	if statFD(fd, &st) != nil {
		return fileKey{}
	}
	return keyOf(&st)
}

func (r *syncRecorder) install(s *Server) {
	s.sys = syncCalls{
		fsync: func(fd int) error {
			r.add(fmt.Sprintf("fsync %v", fdKey(fd)))
			return unix.Fsync(fd)
		},
		fdatasync: func(fd int) error {
			r.add(fmt.Sprintf("fdatasync %v", fdKey(fd)))
			return unix.Fdatasync(fd)
		},
		syncfs: func(fd int) error {
			r.add(fmt.Sprintf("syncfs %d", fdKey(fd).dev))
			return unix.Syncfs(fd)
		},
		sync: func() {
			r.add("sync")
			unix.Sync()
		},
	}
}

// keyOfAttr is the server's fileKey of an object, from its attributes.
func keyOfAttr(a nfs3.Fattr) fileKey { return fileKey{dev: a.FSID, ino: a.FileID} }

// fsyncs is the sorted list of "fsync" records of the objects with attributes as.
func fsyncs(as ...nfs3.Fattr) []string {
	var w []string
	for _, a := range as {
		w = append(w, fmt.Sprintf("fsync %v", keyOfAttr(a)))
	}
	slices.Sort(w)
	return w
}

// TestSyncExportMakesMetadataStable drives each of the nine modifying procedures
// through the server and checks, through the recorded system calls, that on a sync
// export it fsyncs exactly the directories and objects it changed before replying and
// that on an async export it syncs nothing; WRITE with DATA_SYNC or FILE_SYNC and
// COMMIT sync the file on both.
func TestSyncExportMakesMetadataStable(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			testStableMetadata(t, async)
		})
	}
}

func testStableMetadata(t *testing.T, async bool) {
	rec := &syncRecorder{}
	e := newEnvPrepared(t, Options{Async: async}, rec.install)
	c := e.c
	attr := func(fh nfs3.FH) nfs3.Fattr {
		t.Helper()
		a, st := c.getattr(fh)
		wantStatus(t, "GETATTR", st, nfs3.StatusOK)
		return a
	}
	root := attr(e.root)
	check := func(what string, want []string) {
		t.Helper()
		if async {
			want = nil
		}
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("%s: synced %q, want %q", what, got, want)
		}
	}
	checkData := func(what string, want []string) {
		t.Helper()
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("%s: synced %q, want %q", what, got, want)
		}
	}
	rec.take()

	f := c.create(e.root, "f")
	fa := attr(f)
	check("CREATE", fsyncs(fa, root))

	// A retried EXCLUSIVE create finds its file and syncs it again.
	var cr nfs3.CreateRes
	xargs := &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("x")}, Mode: nfs3.Exclusive, Verf: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}}
	c.must(nfs3.ProcCreate, xargs, &cr)
	wantStatus(t, "CREATE EXCLUSIVE", cr.Status, nfs3.StatusOK)
	x := attr(cr.Obj.FH)
	check("CREATE EXCLUSIVE", fsyncs(x, root))

	d := c.mkdir(e.root, "d")
	da := attr(d)
	check("MKDIR", fsyncs(da, root))

	c.must(nfs3.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: d, Name: []byte("l")}, Data: []byte("f")}, &cr)
	wantStatus(t, "SYMLINK", cr.Status, nfs3.StatusOK)
	l := cr.Obj.FH
	da = attr(d)
	check("SYMLINK", fsyncs(da)) // the new link is stable with its directory

	c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: d, Name: []byte("p")}, Type: nfs3.TypeFifo}, &cr)
	wantStatus(t, "MKNOD", cr.Status, nfs3.StatusOK)
	check("MKNOD", fsyncs(da))

	var lr nfs3.LinkRes
	c.must(nfs3.ProcLink, &nfs3.LinkArgs{File: f, Link: nfs3.DirOpArgs{Dir: d, Name: []byte("f2")}}, &lr)
	wantStatus(t, "LINK", lr.Status, nfs3.StatusOK)
	check("LINK", fsyncs(fa, da))

	var rr nfs3.RenameRes
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: d, Name: []byte("f2")}, To: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f3")}}, &rr)
	wantStatus(t, "RENAME", rr.Status, nfs3.StatusOK)
	check("RENAME across directories", fsyncs(da, root))
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f3")}, To: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f4")}}, &rr)
	wantStatus(t, "RENAME", rr.Status, nfs3.StatusOK)
	check("RENAME in one directory", fsyncs(root))

	var wr nfs3.WccRes
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f4")}}, &wr)
	wantStatus(t, "REMOVE", wr.Status, nfs3.StatusOK)
	check("REMOVE", fsyncs(root))

	c.mkdir(d, "sub")
	rec.take()
	c.must(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: d, Name: []byte("sub")}}, &wr)
	wantStatus(t, "RMDIR", wr.Status, nfs3.StatusOK)
	check("RMDIR", fsyncs(da))

	setattr := func(what string, fh nfs3.FH, sa nfs3.Sattr) {
		t.Helper()
		c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: fh, Attr: sa}, &wr)
		wantStatus(t, what, wr.Status, nfs3.StatusOK)
	}
	setattr("SETATTR size", f, nfs3.Sattr{SetSize: true, Size: 10})
	check("SETATTR size", fsyncs(fa))
	setattr("SETATTR mode", d, nfs3.Sattr{SetMode: true, Mode: 0o700})
	check("SETATTR directory", fsyncs(da))
	// A symbolic link cannot be opened for fsync: its file system is synced.
	setattr("SETATTR symlink", l, nfs3.Sattr{Mtime: nfs3.SetTime{How: nfs3.SetToServerTime}})
	check("SETATTR symlink", []string{fmt.Sprintf("syncfs %d", root.FSID)})

	// Failed procedures change nothing and sync nothing.
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("missing")}}, &wr)
	wantStatus(t, "REMOVE missing", wr.Status, nfs3.StatusNoEnt)
	checkData("REMOVE missing", nil)

	// Stable writes and COMMIT are durable on every export.
	c.write(f, 0, []byte("data"), nfs3.Unstable)
	checkData("WRITE UNSTABLE", nil)
	c.write(f, 0, []byte("data"), nfs3.DataSync)
	checkData("WRITE DATA_SYNC", []string{fmt.Sprintf("fdatasync %v", keyOfAttr(fa))})
	c.write(f, 0, []byte("data"), nfs3.FileSync)
	checkData("WRITE FILE_SYNC", fsyncs(fa))
	var cm nfs3.CommitRes
	c.must(nfs3.ProcCommit, &nfs3.CommitArgs{File: f}, &cm)
	wantStatus(t, "COMMIT", cm.Status, nfs3.StatusOK)
	checkData("COMMIT", fsyncs(fa))
}

// On a read-only export nothing changes and nothing is synced, even by a SETATTR
// that sets nothing.
func TestReadOnlyExportSyncsNothing(t *testing.T) {
	rec := &syncRecorder{}
	e := newEnvPrepared(t, Options{ReadOnly: true}, rec.install)
	var wr nfs3.WccRes
	e.c.must(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: e.root}, &wr)
	wantStatus(t, "SETATTR nothing", wr.Status, nfs3.StatusOK)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("read-only export synced %q", got)
	}
}

// A failing fsync is the procedure's answer: the client is not told the change is
// stable when it is not.
func TestSyncFailureIsReported(t *testing.T) {
	var fail bool
	var mu sync.Mutex
	e := newEnvPrepared(t, Options{}, func(s *Server) {
		s.sys.fsync = func(fd int) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return unix.EIO
			}
			return unix.Fsync(fd)
		}
	})
	mu.Lock()
	fail = true
	mu.Unlock()
	var cr nfs3.CreateRes
	e.c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f")}, Mode: nfs3.Unchecked}, &cr)
	wantStatus(t, "CREATE with failing fsync", cr.Status, nfs3.StatusIO)
	var wr nfs3.WccRes
	e.c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: []byte("f")}}, &wr)
	wantStatus(t, "REMOVE with failing fsync", wr.Status, nfs3.StatusIO)
	if !wr.Wcc.After.Present {
		t.Fatal("REMOVE with failing fsync: no directory attributes")
	}
}

// stableFS syncs the file system through a directory on it, and falls back to sync(2)
// when that directory cannot be opened or is on another file system (a mount point
// inside the export).
func TestStableFSFallsBackToSync(t *testing.T) {
	rec := &syncRecorder{}
	e := newEnvPrepared(t, Options{}, rec.install)
	root, _ := e.c.getattr(e.root)
	rec.take()
	if err := e.srv.stableFS("", root.FSID); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.take(), []string{fmt.Sprintf("syncfs %d", root.FSID)}; !slices.Equal(got, want) {
		t.Errorf("export's own file system: %q, want %q", got, want)
	}
	if err := e.srv.stableFS("", root.FSID+1); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); !slices.Equal(got, []string{"sync"}) {
		t.Errorf("another file system: %q, want sync", got)
	}
	if err := e.srv.stableFS("missing", root.FSID); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); !slices.Equal(got, []string{"sync"}) {
		t.Errorf("directory gone: %q, want sync", got)
	}
}

// straceChild, set in the environment, makes TestSyncCallsReachKernel the traced
// child: it serves an export (sync or async, as the value says) and creates
// straceCreates files through it.
const straceChild = "NFSSERVER_STRACE_CHILD"

const straceCreates = 5

// The fsyncs reach the kernel: the test binary re-runs itself under
// strace -f -e trace=fsync,fdatasync,syncfs,sync, creating straceCreates files on a
// sync export and then on an async one, with the real system calls (osSync); each
// CREATE on the sync export is two fsyncs (the file and the directory) and on the
// async one none. Skipped where strace is missing or may not trace.
func TestSyncCallsReachKernel(t *testing.T) {
	if mode := os.Getenv(straceChild); mode != "" {
		e := newEnv(t, Options{HandleKey: fuzzKey, Async: mode == "async"}) // no StateDir: writing a key fsyncs
		for i := range straceCreates {
			e.c.create(e.root, fmt.Sprintf("f%d", i))
		}
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	for _, mode := range []string{"sync", "async"} {
		out := filepath.Join(t.TempDir(), "trace")
		cmd := exec.Command(strace, "-f", "-qq", "-o", out, "-e", "signal=none", "-e", "trace=fsync,fdatasync,syncfs,sync",
			os.Args[0], "-test.run", "^TestSyncCallsReachKernel$", "-test.count", "1")
		cmd.Env = append(os.Environ(), straceChild+"="+mode)
		if b, err := cmd.CombinedOutput(); err != nil {
			if strings.Contains(string(b), "ptrace") || strings.Contains(string(b), "Operation not permitted") {
				t.Skipf("strace cannot trace here: %s", b)
			}
			t.Fatalf("traced child (%s): %v\n%s", mode, err, b)
		}
		trace, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, line := range strings.Split(string(trace), "\n") {
			if strings.Contains(line, "sync(") {
				calls++
			}
		}
		want := 2 * straceCreates
		if mode == "async" {
			want = 0
		}
		if calls != want {
			t.Errorf("%s export: %d sync system calls for %d creates, want %d:\n%s", mode, calls, straceCreates, want, trace)
		}
	}
}
