package nfs4state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

func TestNoStateDirMeansNoGrace(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	if m.InGrace() {
		t.Fatal("in grace without a state dir")
	}
	id, _ := establish(t, m, "c1")
	_, st := m.Open(OpenArgs{ClientID: id, Owner: []byte("o"), File: FileKey{Ino: 1}, Access: nfs4.ShareAccessRead, Claim: nfs4.ClaimPrevious})
	want(t, "reclaim without grace", st, nfs4.ErrNoGrace)
}

func TestReclaimComplete(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	id, _ := establishToReclaim(t, m, "c1")
	want(t, "one fs", m.ReclaimComplete(id, true), nfs4.OK)
	want(t, "first", m.ReclaimComplete(id, false), nfs4.OK)
	want(t, "second", m.ReclaimComplete(id, false), nfs4.ErrCompleteAlready)
	want(t, "unknown client", m.ReclaimComplete(42, false), nfs4.ErrStaleClientid)
}

// TestRestartGraceAndReclaim runs a server instance, "restarts" it (a new Manager on the
// same state dir) and checks who may reclaim what, and when the grace period ends.
func TestRestartGraceAndReclaim(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	m1 := newManager(t, clk, Options{StateDir: dir, LeaseTime: 10 * time.Second})
	if m1.InGrace() {
		t.Fatal("first instance in grace with an empty state dir")
	}
	a1, _ := establish(t, m1, "alpha")
	establish(t, m1, "beta")
	f := FileKey{Ino: 5}
	old, st := m1.Open(OpenArgs{ClientID: a1, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth, Claim: nfs4.ClaimNull})
	want(t, "OPEN", st, nfs4.OK)
	data, err := os.ReadFile(filepath.Join(dir, StateFileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "client 616c706861\n") || !strings.Contains(string(data), "client 62657461\n") {
		t.Fatalf("state file lacks the clients:\n%s", data)
	}

	// Restart, the clock going backwards: the epoch still grows.
	clk.advance(-time.Hour)
	m2 := newManager(t, clk, Options{StateDir: dir, LeaseTime: 100 * time.Second, GraceTime: 10 * time.Second})
	if m2.Epoch() <= m1.Epoch() {
		t.Fatalf("epoch %d after %d", m2.Epoch(), m1.Epoch())
	}
	if !m2.InGrace() {
		t.Fatal("restarted instance not in grace")
	}
	a2, _ := establishToReclaim(t, m2, "alpha")
	want(t, "old stateid", m2.CheckIO(a2, old, f, false), nfs4.ErrStaleStateid)
	_, st = m2.Sequence(SequenceArgs{SessionID: nfs4.SessionID{}, SequenceID: 1})
	want(t, "unknown session", st, nfs4.ErrBadsession)
	want(t, "anonymous I/O in grace", m2.CheckIO(a2, AnonymousStateid, f, false), nfs4.ErrGrace)
	_, st = m2.Open(OpenArgs{ClientID: a2, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessRead, Claim: nfs4.ClaimNull})
	want(t, "CLAIM_NULL in grace", st, nfs4.ErrGrace)
	_, _, st = m2.Lock(&LockArgs{ClientID: a2, File: f, Type: nfs4.WriteLT, Length: 1, NewLockOwner: true, OpenStateid: old, Owner: []byte("l")})
	want(t, "LOCK in grace", st, nfs4.ErrGrace)
	_, st = m2.LockT(a2, f, nfs4.WriteLT, 0, 1, []byte("l"))
	want(t, "LOCKT in grace", st, nfs4.ErrGrace)
	re, st := m2.Open(OpenArgs{ClientID: a2, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth, Claim: nfs4.ClaimPrevious})
	want(t, "CLAIM_PREVIOUS", st, nfs4.OK)
	lk, _, st := m2.Lock(&LockArgs{ClientID: a2, File: f, Type: nfs4.WriteLT, Length: 10, Reclaim: true, NewLockOwner: true, OpenStateid: re, Owner: []byte("l")})
	want(t, "reclaim LOCK", st, nfs4.OK)
	_ = lk

	g, _ := establishToReclaim(t, m2, "gamma") // unknown to the previous instance
	_, st = m2.Open(OpenArgs{ClientID: g, Owner: []byte("o"), File: FileKey{Ino: 6}, Access: nfs4.ShareAccessRead, Claim: nfs4.ClaimPrevious})
	want(t, "reclaim by a new client", st, nfs4.ErrReclaimBad)
	want(t, "RECLAIM_COMPLETE by a new client", m2.ReclaimComplete(g, false), nfs4.OK)
	if !m2.InGrace() {
		t.Fatal("a new client's RECLAIM_COMPLETE ended grace")
	}
	want(t, "RECLAIM_COMPLETE alpha", m2.ReclaimComplete(a2, false), nfs4.OK)
	_, st = m2.Open(OpenArgs{ClientID: a2, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessRead, Claim: nfs4.ClaimPrevious})
	want(t, "reclaim after RECLAIM_COMPLETE", st, nfs4.ErrNoGrace)
	if !m2.InGrace() {
		t.Fatal("grace ended while beta has not reclaimed")
	}
	// A third instance restarted now still knows beta, which has not come back yet.
	m3 := newManager(t, clk, Options{StateDir: dir, LeaseTime: 10 * time.Second})
	if !m3.InGrace() {
		t.Fatal("third instance not in grace")
	}
	b3, _ := establishToReclaim(t, m3, "beta")
	want(t, "beta done", m3.ReclaimComplete(b3, false), nfs4.OK)
	if !m3.InGrace() {
		t.Fatal("grace ended before alpha and gamma reclaimed")
	}

	// Back in m2: beta never returns; grace ends by time.
	clk.advance(9 * time.Second)
	m2.Sweep(clk.now())
	if !m2.InGrace() {
		t.Fatal("grace ended early")
	}
	clk.advance(2 * time.Second)
	m2.Sweep(clk.now())
	if m2.InGrace() {
		t.Fatal("grace did not end after GraceTime")
	}
	_, st = m2.Open(OpenArgs{ClientID: g, Owner: []byte("o"), File: FileKey{Ino: 6}, Access: nfs4.ShareAccessRead, Claim: nfs4.ClaimNull})
	want(t, "CLAIM_NULL after grace", st, nfs4.OK)
}

// TestOpenAndLockBeforeReclaimComplete: RFC 8881 §18.51.3, "If non-reclaim locking
// operations are done before the RECLAIM_COMPLETE, an NFS4ERR_GRACE error will be
// returned", whether the server is in its grace period or not (as knfsd answers
// OPEN): without a grace period at all, and after a grace period that ended while the
// client was reclaiming, a new OPEN or LOCK waits for the client's RECLAIM_COMPLETE.
func TestOpenAndLockBeforeReclaimComplete(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	id, _ := establishToReclaim(t, m, "c1")
	f := FileKey{Ino: 1}
	open := OpenArgs{ClientID: id, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth, Claim: nfs4.ClaimNull}
	_, st := m.Open(open)
	want(t, "OPEN before RECLAIM_COMPLETE, no grace period", st, nfs4.ErrGrace)
	want(t, "RECLAIM_COMPLETE for one file system", m.ReclaimComplete(id, true), nfs4.OK)
	_, st = m.Open(open)
	want(t, "OPEN after RECLAIM_COMPLETE for one file system only", st, nfs4.ErrGrace)
	want(t, "RECLAIM_COMPLETE", m.ReclaimComplete(id, false), nfs4.OK)
	_, st = m.Open(open)
	want(t, "OPEN after RECLAIM_COMPLETE", st, nfs4.OK)

	// A restart: the client reclaims its open, the grace period ends by time before
	// its RECLAIM_COMPLETE.
	dir := t.TempDir()
	clk := newClock()
	m1 := newManager(t, clk, Options{StateDir: dir})
	establish(t, m1, "c1")
	m2 := newManager(t, clk, Options{StateDir: dir, GraceTime: 10 * time.Second})
	id2, _ := establishToReclaim(t, m2, "c1")
	re, st := m2.Open(OpenArgs{ClientID: id2, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth, Claim: nfs4.ClaimPrevious})
	want(t, "reclaim", st, nfs4.OK)
	clk.advance(11 * time.Second)
	m2.Sweep(clk.now())
	if m2.InGrace() {
		t.Fatal("grace did not end after GraceTime")
	}
	lock := &LockArgs{ClientID: id2, File: f, Type: nfs4.WriteLT, Length: 1, NewLockOwner: true, OpenStateid: re, Owner: []byte("l")}
	_, _, st = m2.Lock(lock)
	want(t, "LOCK after grace, before RECLAIM_COMPLETE", st, nfs4.ErrGrace)
	_, st = m2.Open(OpenArgs{ClientID: id2, Owner: []byte("o"), File: FileKey{Ino: 2}, Access: nfs4.ShareAccessRead, Claim: nfs4.ClaimNull})
	want(t, "OPEN after grace, before RECLAIM_COMPLETE", st, nfs4.ErrGrace)
	want(t, "RECLAIM_COMPLETE", m2.ReclaimComplete(id2, false), nfs4.OK)
	_, _, st = m2.Lock(lock)
	want(t, "LOCK after RECLAIM_COMPLETE", st, nfs4.OK)
}

func TestGraceEndsWhenAllReclaimed(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	m1 := newManager(t, clk, Options{StateDir: dir})
	establish(t, m1, "alpha")
	m2 := newManager(t, clk, Options{StateDir: dir})
	a, _ := establishToReclaim(t, m2, "alpha")
	if !m2.InGrace() {
		t.Fatal("not in grace")
	}
	want(t, "RECLAIM_COMPLETE", m2.ReclaimComplete(a, false), nfs4.OK)
	if m2.InGrace() {
		t.Fatal("grace lasted after the only reclaimer finished")
	}
	// Destroying the client drops it from the list: a fourth instance has no reclaimers.
	m2.mu.Lock()
	for _, s := range m2.clients[a].sessions {
		m2.destroySessionLocked(s)
	}
	m2.mu.Unlock()
	want(t, "DESTROY_CLIENTID", m2.DestroyClientID(a), nfs4.OK)
	m3 := newManager(t, clk, Options{StateDir: dir})
	if m3.InGrace() {
		t.Fatal("grace with no client left")
	}
}

func TestCorruptStateFileFailsNew(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, StateFileName), []byte("nfs4state 1\nclient zz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{StateDir: dir})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("New with a corrupt state file: %v", err)
	}
}
