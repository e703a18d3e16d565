package nfs4state

import (
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

func TestRangeOf(t *testing.T) {
	for _, tc := range []struct {
		off, len, start, end uint64
		st                   nfs4.Status
	}{
		{0, 1, 0, 0, nfs4.OK},
		{10, 5, 10, 14, nfs4.OK},
		{10, toEOF, 10, toEOF, nfs4.OK},
		{0, 0, 0, 0, nfs4.ErrInval},
		{toEOF, 1, 0, 0, nfs4.ErrInval},
		{toEOF - 1, 1, toEOF - 1, toEOF - 1, nfs4.OK},
		{toEOF, 2, 0, 0, nfs4.ErrInval},
		{1, toEOF - 1, 1, toEOF - 1, nfs4.OK},
		{2, toEOF - 1, 0, 0, nfs4.ErrInval},
	} {
		s, e, st := rangeOf(tc.off, tc.len)
		if st != tc.st || st == nfs4.OK && (s != tc.start || e != tc.end) {
			t.Errorf("rangeOf(%d, %d) = %d, %d, %v; want %d, %d, %v", tc.off, tc.len, s, e, st, tc.start, tc.end, tc.st)
		}
	}
}

func TestSetAndClearRange(t *testing.T) {
	w := func(s, e uint64) lockRange { return lockRange{s, e, true} }
	r := func(s, e uint64) lockRange { return lockRange{s, e, false} }
	for _, tc := range []struct {
		name string
		have []lockRange
		set  lockRange
		want []lockRange
	}{
		{"into empty", nil, w(5, 9), []lockRange{w(5, 9)}},
		{"merge touching same type", []lockRange{w(0, 4), w(10, 14)}, w(5, 9), []lockRange{w(0, 14)}},
		{"no merge other type", []lockRange{r(0, 4)}, w(5, 9), []lockRange{r(0, 4), w(5, 9)}},
		{"downgrade middle splits", []lockRange{w(0, 99)}, r(10, 19), []lockRange{w(0, 9), r(10, 19), w(20, 99)}},
		{"cover several", []lockRange{r(0, 4), w(6, 7), r(9, 12)}, r(3, 10), []lockRange{r(0, 12)}},
		{"to EOF", []lockRange{w(0, 9)}, w(10, toEOF), []lockRange{w(0, toEOF)}},
		{"after EOF lock", []lockRange{w(0, toEOF)}, w(5, 5), []lockRange{w(0, toEOF)}},
	} {
		got := setRange(tc.have, tc.set)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	got := clearRange([]lockRange{w(0, toEOF)}, 10, 19)
	if want := []lockRange{w(0, 9), w(20, toEOF)}; !reflect.DeepEqual(got, want) {
		t.Errorf("clear middle: %v, want %v", got, want)
	}
	got = clearRange([]lockRange{w(0, 9), r(20, 29)}, 5, 25)
	if want := []lockRange{w(0, 4), r(26, 29)}; !reflect.DeepEqual(got, want) {
		t.Errorf("clear across: %v, want %v", got, want)
	}
}

// lockFixture: clients a and b each have an open of f for read and write.
func lockFixture(t *testing.T, opts Options) (m *Manager, a, b uint64, oa, ob nfs4.Stateid4, f FileKey) {
	m = newManager(t, newClock(), opts)
	a, _ = establish(t, m, "a")
	b, _ = establish(t, m, "b")
	f = FileKey{Ino: 42}
	oa = open(t, m, a, "oa", f, nfs4.ShareAccessBoth, 0)
	ob = open(t, m, b, "ob", f, nfs4.ShareAccessBoth, 0)
	return
}

func newLock(m *Manager, client uint64, open nfs4.Stateid4, f FileKey, owner string, typ nfs4.LockType, off, n uint64) (nfs4.Stateid4, *LockDenied, nfs4.Status) {
	return m.Lock(&LockArgs{ClientID: client, File: f, Type: typ, Offset: off, Length: n, NewLockOwner: true, OpenStateid: open, Owner: []byte(owner)})
}

func TestLockConflictsAndDenied(t *testing.T) {
	m, a, b, oa, ob, f := lockFixture(t, Options{})
	la, _, st := newLock(m, a, oa, f, "la", nfs4.WriteLT, 100, 50)
	want(t, "write lock", st, nfs4.OK)
	if la.Seqid != 1 || la.Other == oa.Other {
		t.Fatalf("lock stateid %+v", la)
	}
	_, d, st := newLock(m, b, ob, f, "lb", nfs4.ReadLT, 149, 10)
	want(t, "read over a write lock", st, nfs4.ErrDenied)
	if d == nil || d.Offset != 100 || d.Length != 50 || d.Type != nfs4.WriteLT || d.ClientID != a || string(d.Owner) != "la" {
		t.Fatalf("denied %+v", d)
	}
	m.mu.Lock()
	n := len(m.clients[b].lockOwners)
	m.mu.Unlock()
	if n != 0 {
		t.Fatal("a denied LOCK left a lock-owner")
	}
	lb, _, st := newLock(m, b, ob, f, "lb", nfs4.ReadLT, 150, toEOF)
	want(t, "read lock next to it", st, nfs4.OK)
	_, d, st = m.Lock(&LockArgs{ClientID: a, File: f, Type: nfs4.WritewLT, Offset: 0, Length: toEOF, LockStateid: la})
	want(t, "blocking write to EOF", st, nfs4.ErrDenied)
	if d.Length != toEOF || d.Offset != 150 || d.Type != nfs4.ReadLT {
		t.Fatalf("denied %+v", d)
	}
	// Read locks share.
	la2, _, st := m.Lock(&LockArgs{ClientID: a, File: f, Type: nfs4.ReadLT, Offset: 200, Length: 10, LockStateid: la})
	want(t, "read lock over read lock", st, nfs4.OK)
	if la2.Seqid != 2 {
		t.Fatalf("seqid %d after second lock, want 2", la2.Seqid)
	}
	// LOCKT.
	d, st = m.LockT(b, f, nfs4.WriteLT, 120, 1, []byte("lb"))
	want(t, "LOCKT over a's write lock", st, nfs4.ErrDenied)
	if d.Offset != 100 {
		t.Fatalf("LOCKT denied %+v", d)
	}
	_, st = m.LockT(a, f, nfs4.WriteLT, 120, 1, []byte("la"))
	want(t, "LOCKT by the holder", st, nfs4.OK)
	_, st = m.LockT(a, f, nfs4.ReadLT, 300, 1, []byte("nobody"))
	want(t, "LOCKT read over read locks", st, nfs4.OK)
	_, st = m.LockT(a, f, nfs4.ReadLT, 300, 0, []byte("nobody"))
	want(t, "LOCKT length 0", st, nfs4.ErrInval)
	// LOCKU splits, and the conflict goes.
	u, st := m.LockU(a, la2, f, nfs4.WriteLT, 110, 10)
	want(t, "LOCKU", st, nfs4.OK)
	if u.Seqid != 3 {
		t.Fatalf("seqid %d after LOCKU", u.Seqid)
	}
	_, _, st = m.Lock(&LockArgs{ClientID: b, File: f, Type: nfs4.WriteLT, Offset: 110, Length: 10, LockStateid: lb})
	want(t, "write lock in the unlocked hole", st, nfs4.OK)
	_, st = m.LockU(a, la2, f, nfs4.WriteLT, 0, 1)
	want(t, "LOCKU with an old seqid", st, nfs4.ErrOldStateid)
	_, st = m.LockU(a, lb, f, nfs4.WriteLT, 0, 1)
	want(t, "LOCKU with b's stateid", st, nfs4.ErrBadStateid)
	_, st = m.LockU(a, oa, f, nfs4.WriteLT, 0, 1)
	want(t, "LOCKU with an open stateid", st, nfs4.ErrBadStateid)
}

func TestLockOpenModeAndStateids(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	f := FileKey{Ino: 1}
	ro := open(t, m, a, "o", f, nfs4.ShareAccessRead, 0)
	_, _, st := newLock(m, a, ro, f, "l", nfs4.WriteLT, 0, 1)
	want(t, "write lock with a read open", st, nfs4.ErrOpenmode)
	wo := open(t, m, a, "w", FileKey{Ino: 2}, nfs4.ShareAccessWrite, 0)
	_, _, st = newLock(m, a, wo, FileKey{Ino: 2}, "l", nfs4.ReadLT, 0, 1)
	want(t, "read lock with a write-only open", st, nfs4.ErrOpenmode)
	_, _, st = newLock(m, a, ro, FileKey{Ino: 2}, "l", nfs4.ReadLT, 0, 1)
	want(t, "open stateid of another file", st, nfs4.ErrBadStateid)
	_, _, st = newLock(m, a, ro, f, "l", 9, 0, 1)
	want(t, "bad lock type", st, nfs4.ErrInval)
	_, _, st = newLock(m, a, ro, f, "l", nfs4.ReadLT, 5, 0)
	want(t, "length 0", st, nfs4.ErrInval)
	_, _, st = newLock(m, a, ro, f, "l", nfs4.ReadLT, 10, toEOF-5)
	want(t, "range past 2^64", st, nfs4.ErrInval)

	l1, _, st := newLock(m, a, ro, f, "l", nfs4.ReadLT, 0, 10)
	want(t, "read lock", st, nfs4.OK)
	// The same lock-owner through open_to_lock_owner again: the same lock stateid.
	l2, _, st := newLock(m, a, ro, f, "l", nfs4.ReadLT, 20, 10)
	want(t, "second new-owner lock", st, nfs4.OK)
	if l2.Other != l1.Other || l2.Seqid != 2 {
		t.Fatalf("lock stateids %+v then %+v", l1, l2)
	}
	want(t, "READ with the lock stateid", m.CheckIO(a, l2, f, false), nfs4.OK)
	want(t, "WRITE with the lock stateid (read open)", m.CheckIO(a, l2, f, true), nfs4.ErrOpenmode)
	_, _, st = m.Lock(&LockArgs{ClientID: a, File: f, Type: nfs4.ReadLT, Length: 1, LockStateid: ro})
	want(t, "existing lock-owner with an open stateid", st, nfs4.ErrBadStateid)

	// TEST_STATEID and FREE_STATEID.
	out := make([]nfs4.Status, 5)
	stale := l2
	stale.Other[0]++
	want(t, "TEST_STATEID", m.TestStateid(a, []nfs4.Stateid4{l2, l1, AnonymousStateid, stale, ro}, out), nfs4.OK)
	if exp := []nfs4.Status{nfs4.OK, nfs4.ErrOldStateid, nfs4.ErrBadStateid, nfs4.ErrBadStateid, nfs4.OK}; !reflect.DeepEqual(out, exp) {
		t.Fatalf("TEST_STATEID %v, want %v", out, exp)
	}
	want(t, "FREE_STATEID with locks", m.FreeStateid(a, l2), nfs4.ErrLocksHeld)
	want(t, "FREE_STATEID of an open", m.FreeStateid(a, ro), nfs4.ErrLocksHeld)
	u, st := m.LockU(a, l2, f, nfs4.ReadLT, 0, toEOF)
	want(t, "unlock all", st, nfs4.OK)
	want(t, "FREE_STATEID (old seqid is fine)", m.FreeStateid(a, l1), nfs4.OK)
	want(t, "lock stateid after FREE_STATEID", m.CheckIO(a, u, f, false), nfs4.ErrBadStateid)
	want(t, "FREE_STATEID again", m.FreeStateid(a, u), nfs4.ErrBadStateid)
}

func TestCloseReleasesLocks(t *testing.T) {
	m, a, b, oa, ob, f := lockFixture(t, Options{})
	la, _, st := newLock(m, a, oa, f, "la", nfs4.WriteLT, 0, toEOF)
	want(t, "lock", st, nfs4.OK)
	_, st = m.Close(a, oa, f)
	want(t, "CLOSE", st, nfs4.OK)
	want(t, "lock stateid after CLOSE", m.CheckIO(a, la, f, false), nfs4.ErrBadStateid)
	_, _, st = newLock(m, b, ob, f, "lb", nfs4.WriteLT, 0, toEOF)
	want(t, "b locks after a closed", st, nfs4.OK)
	s := m.Stats()
	if s.Locks != 1 || s.StateOwners != 2 || s.Stateids != 2 {
		t.Fatalf("stats after CLOSE %+v", s)
	}
}

func TestLockBounds(t *testing.T) {
	m, a, _, oa, _, f := lockFixture(t, Options{MaxLocksPerOwner: 3})
	la, _, st := newLock(m, a, oa, f, "la", nfs4.WriteLT, 0, 1)
	want(t, "lock 1", st, nfs4.OK)
	for i := uint64(1); i < 3; i++ {
		la, _, st = m.Lock(&LockArgs{ClientID: a, File: f, Type: nfs4.WriteLT, Offset: 2 * i * 10, Length: 1, LockStateid: la})
		want(t, "lock", st, nfs4.OK)
	}
	_, _, st = m.Lock(&LockArgs{ClientID: a, File: f, Type: nfs4.WriteLT, Offset: 1000, Length: 1, LockStateid: la})
	want(t, "fourth range", st, nfs4.ErrDelay)
	la, _, st = m.Lock(&LockArgs{ClientID: a, File: f, Type: nfs4.WriteLT, Offset: 0, Length: 100, LockStateid: la})
	want(t, "lock merging all three", st, nfs4.OK)
	for _, off := range []uint64{200, 400} {
		la, _, st = m.Lock(&LockArgs{ClientID: a, File: f, Type: nfs4.WriteLT, Offset: off, Length: 100, LockStateid: la})
		want(t, "lock after merge", st, nfs4.OK)
	}
	_, st = m.LockU(a, la, f, nfs4.WriteLT, 450, 1)
	want(t, "LOCKU split beyond the bound", st, nfs4.ErrLockRange)
	if s := m.Stats(); s.Locks != 3 {
		t.Fatalf("%d locks", s.Locks)
	}
}
