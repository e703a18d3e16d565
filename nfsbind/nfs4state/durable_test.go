package nfs4state

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// TestStateFileDirectorySynced: the state file is replaced by a rename, which is
// stable only once its directory is fsynced; until then a crash can bring back the
// previous file, without the clients confirmed since, which then cannot reclaim
// their state (RFC 8881 §8.4.2.1). Every write of the state file (New's, with the new
// epoch, and a confirmed client's) syncs the directory, and a failed sync fails the
// write: New returns it.
func TestStateFileDirectorySynced(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var synced []string
	fail := false
	defer func(f func(string) error) { syncDir = f }(syncDir)
	dirSync := syncDir
	syncDir = func(d string) error {
		mu.Lock()
		defer mu.Unlock()
		synced = append(synced, d)
		if fail {
			return errors.New("injected EIO")
		}
		return dirSync(d)
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		s := synced
		synced = nil
		return s
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	if _, err := New(Options{StateDir: dir}); err == nil || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("New whose state directory cannot be synced: %v, want the error", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	take()
	m := newManager(t, newClock(), Options{StateDir: dir})
	if got := take(); !slices.Equal(got, []string{dir}) {
		t.Fatalf("New synced directories %q, want %q", got, dir)
	}
	establish(t, m, "c1")
	if got := take(); !slices.Equal(got, []string{dir}) {
		t.Fatalf("confirming a client synced directories %q, want %q", got, dir)
	}
	// A state directory New makes is stable too: its entry, in its parent.
	made := filepath.Join(dir, "a", "b")
	newManager(t, newClock(), Options{StateDir: made})
	if got, want := take(), []string{dir, filepath.Join(dir, "a"), made}; !slices.Equal(got, want) {
		t.Fatalf("New with a new state directory synced %q, want %q", got, want)
	}
}

// TestExpiredClientStateHeldUntilStateFileRewritten: RFC 8881 §8.4.3's edge
// condition. A client whose lease expired may not reclaim after a restart once
// another client may have been granted a conflicting lock: its locks are released
// only after the state file that lets it reclaim no longer lists it. While Sweep
// rewrites the file (here: at the directory's sync, after the rename), another
// client's conflicting LOCK is still NFS4ERR_DENIED; once Sweep returns it is
// granted.
func TestExpiredClientStateHeldUntilStateFileRewritten(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	m := newManager(t, clk, Options{StateDir: dir, LeaseTime: 10 * time.Second})
	a, _ := establish(t, m, "a")
	b, sb := establish(t, m, "b")
	f := FileKey{Ino: 42}
	oa := open(t, m, a, "oa", f, nfs4.ShareAccessBoth, 0)
	ob := open(t, m, b, "ob", f, nfs4.ShareAccessBoth, 0)
	_, _, st := newLock(m, a, oa, f, "la", nfs4.WriteLT, 0, 100)
	want(t, "LOCK by a", st, nfs4.OK)

	clk.advance(11 * time.Second)
	seq(t, m, sb, 1) // b renews; a's lease expires
	var duringRewrite nfs4.Status
	calls := 0
	defer func(f func(string) error) { syncDir = f }(syncDir)
	dirSync := syncDir
	syncDir = func(d string) error {
		calls++
		_, _, duringRewrite = newLock(m, b, ob, f, "lb", nfs4.WriteLT, 50, 10)
		return dirSync(d)
	}
	if n := m.Sweep(clk.now()); n != 1 {
		t.Fatalf("Sweep removed %d clients, want a", n)
	}
	if calls != 1 {
		t.Fatalf("Sweep synced the state directory %d times, want once", calls)
	}
	want(t, "b's conflicting LOCK while the state file still lists a", duringRewrite, nfs4.ErrDenied)
	rec, err := m.store.load()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(rec.owners, "a") || !slices.Contains(rec.owners, "b") {
		t.Fatalf("state file lists %q, want b only", rec.owners)
	}
	syncDir = dirSync
	_, _, st = newLock(m, b, ob, f, "lb", nfs4.WriteLT, 50, 10)
	want(t, "b's conflicting LOCK after Sweep", st, nfs4.OK)
}
