package nfs4state

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
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
}
