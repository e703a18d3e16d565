package nfs4state

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

func open(t testing.TB, m *Manager, id uint64, owner string, f FileKey, access, deny uint32) nfs4.Stateid4 {
	t.Helper()
	sid, st := m.Open(OpenArgs{ClientID: id, Owner: []byte(owner), File: f, Access: access, Deny: deny, Claim: nfs4.ClaimNull})
	want(t, "OPEN", st, nfs4.OK)
	return sid
}

func TestOpenShareReservations(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	b, _ := establish(t, m, "b")
	f := FileKey{Dev: 1, Ino: 2, Gen: 3}
	r, w, rw := nfs4.ShareAccessRead, nfs4.ShareAccessWrite, nfs4.ShareAccessBoth
	sa := open(t, m, a, "o", f, r, nfs4.ShareDenyWrite)
	if sa.Seqid != 1 {
		t.Fatalf("new open seqid %d, want 1", sa.Seqid)
	}
	for _, tc := range []struct {
		name         string
		owner        string
		access, deny uint32
		want         nfs4.Status
	}{
		{"write against deny write", "p", w, 0, nfs4.ErrShareDenied},
		{"read+write against deny write", "p", rw, 0, nfs4.ErrShareDenied},
		{"deny read against read access", "p", r, nfs4.ShareDenyRead, nfs4.ErrShareDenied},
		{"read, deny none", "p", r, 0, nfs4.OK},
		{"same client other owner, write", "q", w, 0, nfs4.ErrShareDenied},
	} {
		client := b
		if tc.owner == "q" {
			client = a
		}
		_, st := m.Open(OpenArgs{ClientID: client, Owner: []byte(tc.owner), File: f, Access: tc.access, Deny: tc.deny, Claim: nfs4.ClaimNull})
		want(t, tc.name, st, tc.want)
	}
	// Another file is not affected.
	open(t, m, b, "p", FileKey{Ino: 99}, rw, nfs4.ShareDenyBoth)

	// Upgrade by the same owner: same other, seqid 2, union of modes; the upgrade is judged
	// against the others (b reads, so a may not add deny read).
	_, st := m.Open(OpenArgs{ClientID: a, Owner: []byte("o"), File: f, Access: r, Deny: nfs4.ShareDenyRead, Claim: nfs4.ClaimNull})
	want(t, "upgrade to deny read while b reads", st, nfs4.ErrShareDenied)
	up := open(t, m, a, "o", f, w, 0)
	if up.Other != sa.Other || up.Seqid != 2 {
		t.Fatalf("upgrade gave %+v, want other of %+v with seqid 2", up, sa)
	}
	want(t, "write with the upgraded open", m.CheckIO(a, up, f, true), nfs4.OK)
	want(t, "write with the old seqid", m.CheckIO(a, sa, f, true), nfs4.ErrOldStateid)

	// Anonymous I/O meets the deny modes.
	want(t, "anonymous write vs deny write", m.CheckIO(b, AnonymousStateid, f, true), nfs4.ErrLocked)
	want(t, "anonymous read", m.CheckIO(b, AnonymousStateid, f, false), nfs4.OK)
	want(t, "bypass write vs deny write", m.CheckIO(b, BypassStateid, f, true), nfs4.ErrLocked)
	want(t, "bypass read", m.CheckIO(b, BypassStateid, FileKey{Ino: 99}, false), nfs4.OK)
	want(t, "anonymous read vs deny both", m.CheckIO(b, AnonymousStateid, FileKey{Ino: 99}, false), nfs4.ErrLocked)
}

func TestOpenArgsRefused(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	f := FileKey{Ino: 1}
	for _, tc := range []struct {
		name string
		args OpenArgs
		want nfs4.Status
	}{
		{"access 0", OpenArgs{Access: 0}, nfs4.ErrInval},
		{"access 4", OpenArgs{Access: 4}, nfs4.ErrInval},
		{"deny 4", OpenArgs{Access: 1, Deny: 4}, nfs4.ErrInval},
		{"long owner", OpenArgs{Access: 1, Owner: make([]byte, nfs4.OpaqueLimit+1)}, nfs4.ErrInval},
		{"delegate cur", OpenArgs{Access: 1, Claim: nfs4.ClaimDelegateCur}, nfs4.ErrBadStateid},
		{"delegate prev", OpenArgs{Access: 1, Claim: nfs4.ClaimDelegPrevFH}, nfs4.ErrNotsupp},
		{"unknown claim", OpenArgs{Access: 1, Claim: 77}, nfs4.ErrInval},
		{"unknown client", OpenArgs{ClientID: 5, Access: 1}, nfs4.ErrStaleClientid},
	} {
		args := tc.args
		if args.ClientID == 0 {
			args.ClientID = a
		}
		args.File = f
		_, st := m.Open(args)
		want(t, tc.name, st, tc.want)
	}
	// Want bits are ignored.
	_, st := m.Open(OpenArgs{ClientID: a, File: f, Access: nfs4.ShareAccessRead | nfs4.ShareAccessWantNoDeleg})
	want(t, "with WANT_NO_DELEG", st, nfs4.OK)
}

func TestOpenDowngradeAndClose(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	b, _ := establish(t, m, "b")
	f := FileKey{Ino: 1}
	open(t, m, a, "o", f, nfs4.ShareAccessBoth, nfs4.ShareDenyWrite)
	sid := open(t, m, a, "o", f, nfs4.ShareAccessRead, 0) // an OPEN to downgrade to
	_, st := m.OpenDowngrade(a, sid, f, nfs4.ShareAccessBoth, nfs4.ShareDenyBoth)
	want(t, "downgrade adding deny read", st, nfs4.ErrInval)
	_, st = m.OpenDowngrade(a, sid, FileKey{Ino: 2}, nfs4.ShareAccessRead, 0)
	want(t, "downgrade on another file", st, nfs4.ErrBadStateid)
	_, st = m.OpenDowngrade(b, sid, f, nfs4.ShareAccessRead, 0)
	want(t, "downgrade by another client", st, nfs4.ErrBadStateid)
	d, st := m.OpenDowngrade(a, sid, f, nfs4.ShareAccessRead, 0)
	want(t, "downgrade", st, nfs4.OK)
	if d.Seqid != 3 || d.Other != sid.Other {
		t.Fatalf("downgrade gave %+v", d)
	}
	want(t, "write after downgrade", m.CheckIO(a, d, f, true), nfs4.ErrOpenmode)
	want(t, "read after downgrade, seqid 0", m.CheckIO(a, nfs4.Stateid4{Other: d.Other}, f, false), nfs4.OK)
	open(t, m, b, "p", f, nfs4.ShareAccessWrite, 0) // deny write is gone
	_, st = m.OpenDowngrade(a, d, f, nfs4.ShareAccessWrite, 0)
	want(t, "upgrade by downgrade", st, nfs4.ErrInval)

	_, st = m.Close(a, sid, f)
	want(t, "CLOSE with an old seqid", st, nfs4.ErrOldStateid)
	future := d
	future.Seqid = 9
	_, st = m.Close(a, future, f)
	want(t, "CLOSE with a future seqid", st, nfs4.ErrBadStateid)
	c, st := m.Close(a, d, f)
	want(t, "CLOSE", st, nfs4.OK)
	if c != InvalidStateid {
		t.Fatalf("CLOSE returned %+v, want the invalid stateid", c)
	}
	want(t, "read after CLOSE", m.CheckIO(a, d, f, false), nfs4.ErrBadStateid)
	_, st = m.Close(a, d, f)
	want(t, "CLOSE twice", st, nfs4.ErrBadStateid)
	m.mu.Lock()
	owners := len(m.clients[a].openOwners)
	m.mu.Unlock()
	if owners != 0 {
		t.Fatalf("open-owner kept after its last CLOSE")
	}
}

// TestOpenDowngradeToUnionOfOpens: RFC 8881 §18.18.3, the share_access and share_deny
// of OPEN_DOWNGRADE are to be the union of those of some of the OPENs the open-owner
// has in effect on the file, else NFS4ERR_INVAL. A subset of what the open holds is not
// enough: READ with DENY_NONE after (READ, DENY_WRITE) and (WRITE, DENY_NONE) takes the
// access of one OPEN and the deny of the other; READ after an OPEN for both is no
// OPEN's. The OPENs a downgrade drops are gone for later downgrades; an upgrade and
// UndoOpen keep the set of OPENs in step.
func TestOpenDowngradeToUnionOfOpens(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	id, _ := establish(t, m, "c1")
	f := FileKey{Ino: 1}
	r, w, rw := nfs4.ShareAccessRead, nfs4.ShareAccessWrite, nfs4.ShareAccessBoth
	none, dw := nfs4.ShareDenyNone, nfs4.ShareDenyWrite
	open(t, m, id, "o", f, r, dw)
	sid := open(t, m, id, "o", f, w, none)
	for _, tc := range []struct {
		name         string
		access, deny uint32
	}{
		{"read, deny none: the access of one OPEN, the deny of the other", r, none},
		{"write, deny write", w, dw},
		{"both, deny none", rw, none},
	} {
		_, st := m.OpenDowngrade(id, sid, f, tc.access, tc.deny)
		want(t, "OPEN_DOWNGRADE to "+tc.name, st, nfs4.ErrInval)
	}
	same, st := m.OpenDowngrade(id, sid, f, rw, dw)
	want(t, "OPEN_DOWNGRADE to the union of both OPENs", st, nfs4.OK)
	down, st := m.OpenDowngrade(id, same, f, r, dw)
	want(t, "OPEN_DOWNGRADE to the first OPEN", st, nfs4.OK)
	_, st = m.OpenDowngrade(id, down, f, w, none)
	want(t, "OPEN_DOWNGRADE to the OPEN dropped", st, nfs4.ErrInval)
	m.Close(id, down, f)

	both := open(t, m, id, "o", f, rw, none)
	_, st = m.OpenDowngrade(id, both, f, r, none)
	want(t, "OPEN_DOWNGRADE of an OPEN for both to read", st, nfs4.ErrInval)
	_, u, st := m.OpenUndoable(OpenArgs{ClientID: id, Owner: []byte("o"), File: f, Access: r, Claim: nfs4.ClaimNull})
	want(t, "OPEN for read", st, nfs4.OK)
	if !m.UndoOpen(u) {
		t.Fatal("the OPEN for read was not taken back")
	}
	_, st = m.OpenDowngrade(id, both, f, r, none)
	want(t, "OPEN_DOWNGRADE to read after that OPEN was taken back", st, nfs4.ErrInval)
	open(t, m, id, "o", f, w, none)
	sid = open(t, m, id, "o", f, r, none)
	_, st = m.OpenDowngrade(id, sid, f, rw, none)
	want(t, "OPEN_DOWNGRADE to both, the union of read and write", st, nfs4.OK)
}

// TestUndoOpen: UndoOpen takes back an OPEN: a new open stateid is closed, releasing
// its share reservation; an upgrade returns to the access, deny and seqid of before.
// An open stateid that changed since the OPEN is left alone, and the zero OpenUndo
// takes back nothing.
func TestUndoOpen(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	b, _ := establish(t, m, "b")
	f := FileKey{Ino: 1}
	if m.UndoOpen(OpenUndo{}) {
		t.Fatal("the zero OpenUndo took something back")
	}

	sid, u, st := m.OpenUndoable(OpenArgs{ClientID: a, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth,
		Deny: nfs4.ShareDenyBoth, Claim: nfs4.ClaimNull})
	want(t, "OPEN", st, nfs4.OK)
	if !m.UndoOpen(u) {
		t.Fatal("a new OPEN was not taken back")
	}
	want(t, "READ with the stateid taken back", m.CheckIO(a, sid, f, false), nfs4.ErrBadStateid)
	if s := m.Stats(); s.Stateids != 0 || s.Files != 0 || s.StateOwners != 0 {
		t.Fatalf("state left after UndoOpen: %+v", s)
	}
	if m.UndoOpen(u) {
		t.Fatal("an OPEN was taken back twice")
	}
	open(t, m, b, "p", f, nfs4.ShareAccessRead, 0) // the deny is gone

	r := open(t, m, a, "o", f, nfs4.ShareAccessRead, 0)
	up, u, st := m.OpenUndoable(OpenArgs{ClientID: a, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessWrite,
		Deny: nfs4.ShareDenyWrite, Claim: nfs4.ClaimNull})
	want(t, "upgrade", st, nfs4.OK)
	if !m.UndoOpen(u) {
		t.Fatal("an upgrade was not taken back")
	}
	want(t, "READ with the stateid of before the upgrade", m.CheckIO(a, r, f, false), nfs4.OK)
	want(t, "WRITE with it", m.CheckIO(a, r, f, true), nfs4.ErrOpenmode)
	want(t, "READ with the upgrade's seqid", m.CheckIO(a, up, f, false), nfs4.ErrBadStateid)
	_, st = m.Open(OpenArgs{ClientID: b, Owner: []byte("q"), File: f, Access: nfs4.ShareAccessWrite, Claim: nfs4.ClaimNull})
	want(t, "write by another owner once the deny write is taken back", st, nfs4.OK)

	_, u, st = m.OpenUndoable(OpenArgs{ClientID: a, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth, Claim: nfs4.ClaimNull})
	want(t, "upgrade to both", st, nfs4.OK)
	again := open(t, m, a, "o", f, nfs4.ShareAccessRead, 0)
	if m.UndoOpen(u) {
		t.Fatal("an upgrade was taken back after another OPEN changed the stateid")
	}
	want(t, "WRITE after the later OPEN", m.CheckIO(a, again, f, true), nfs4.OK)
}

func TestCheckIOStateidErrors(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	f := FileKey{Ino: 1}
	sid := open(t, m, a, "o", f, nfs4.ShareAccessRead, 0)
	stale := sid
	stale.Other[0]++
	want(t, "stale", m.CheckIO(a, stale, f, false), nfs4.ErrStaleStateid)
	unknown := sid
	unknown.Other[11]++
	want(t, "unknown", m.CheckIO(a, unknown, f, false), nfs4.ErrBadStateid)
	want(t, "wrong file", m.CheckIO(a, sid, FileKey{Ino: 2}, false), nfs4.ErrBadStateid)
	want(t, "current-stateid pattern", m.CheckIO(a, CurrentStateid, f, false), nfs4.ErrBadStateid)
	want(t, "invalid stateid", m.CheckIO(a, InvalidStateid, f, false), nfs4.ErrBadStateid)
	odd := nfs4.Stateid4{Seqid: 5, Other: BypassStateid.Other}
	want(t, "all-ones other, seqid 5", m.CheckIO(a, odd, f, false), nfs4.ErrBadStateid)
	want(t, "write with a read open", m.CheckIO(a, sid, f, true), nfs4.ErrOpenmode)
	want(t, "read", m.CheckIO(a, sid, f, false), nfs4.OK)
}

func TestOpenBounds(t *testing.T) {
	m := newManager(t, newClock(), Options{MaxStateidsPerClient: 3, MaxStateOwnersPerClient: 2})
	a, _ := establish(t, m, "a")
	open(t, m, a, "o1", FileKey{Ino: 1}, 1, 0)
	open(t, m, a, "o2", FileKey{Ino: 1}, 1, 0)
	_, st := m.Open(OpenArgs{ClientID: a, Owner: []byte("o3"), File: FileKey{Ino: 1}, Access: 1})
	want(t, "third owner", st, nfs4.ErrDelay)
	open(t, m, a, "o1", FileKey{Ino: 2}, 1, 0)
	_, st = m.Open(OpenArgs{ClientID: a, Owner: []byte("o1"), File: FileKey{Ino: 3}, Access: 1})
	want(t, "fourth stateid", st, nfs4.ErrDelay)
	open(t, m, a, "o1", FileKey{Ino: 2}, 3, 0) // an upgrade needs no new stateid
}

// TestCheckOpen: CheckOpen answers what Open would, without recording anything, so
// that a server can refuse an OPEN4_CREATE before it creates the file: bad arguments,
// a client that has not sent RECLAIM_COMPLETE, the grace period, another owner's share
// reservation, full tables; the zero FileKey stands for a file that does not exist yet.
func TestCheckOpen(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	b, _ := establish(t, m, "b")
	f := FileKey{Ino: 1}
	open(t, m, a, "o", f, nfs4.ShareAccessRead, nfs4.ShareDenyWrite)
	before := m.Stats()
	for _, tc := range []struct {
		name string
		args OpenArgs
		want nfs4.Status
	}{
		{"new file", OpenArgs{ClientID: b, Owner: []byte("p"), Access: nfs4.ShareAccessBoth}, nfs4.OK},
		{"read beside deny write", OpenArgs{ClientID: b, Owner: []byte("p"), File: f, Access: nfs4.ShareAccessRead}, nfs4.OK},
		{"write against deny write", OpenArgs{ClientID: b, Owner: []byte("p"), File: f, Access: nfs4.ShareAccessWrite}, nfs4.ErrShareDenied},
		{"access 0", OpenArgs{ClientID: b, Owner: []byte("p")}, nfs4.ErrInval},
		{"delegation claim", OpenArgs{ClientID: b, Access: 1, Claim: nfs4.ClaimDelegPrevFH}, nfs4.ErrNotsupp},
		{"unknown client", OpenArgs{ClientID: 5, Access: 1}, nfs4.ErrStaleClientid},
		{"reclaim without grace", OpenArgs{ClientID: b, Access: 1, Claim: nfs4.ClaimPrevious}, nfs4.ErrNoGrace},
		{"an upgrade", OpenArgs{ClientID: a, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth}, nfs4.OK},
	} {
		want(t, tc.name, m.CheckOpen(tc.args), tc.want)
	}
	if s := m.Stats(); s != before {
		t.Fatalf("CheckOpen changed the state: %+v, then %+v", before, s)
	}
	c, _ := establishToReclaim(t, m, "c")
	want(t, "before RECLAIM_COMPLETE", m.CheckOpen(OpenArgs{ClientID: c, Owner: []byte("o"), Access: nfs4.ShareAccessRead}), nfs4.ErrGrace)

	m2 := newManager(t, newClock(), Options{MaxStateidsPerClient: 3, MaxStateOwnersPerClient: 2})
	d, _ := establish(t, m2, "d")
	open(t, m2, d, "o1", FileKey{Ino: 1}, nfs4.ShareAccessRead, 0)
	open(t, m2, d, "o2", FileKey{Ino: 1}, nfs4.ShareAccessRead, 0)
	want(t, "a third owner", m2.CheckOpen(OpenArgs{ClientID: d, Owner: []byte("o3"), Access: nfs4.ShareAccessRead}), nfs4.ErrDelay)
	want(t, "a new file for an owner there is", m2.CheckOpen(OpenArgs{ClientID: d, Owner: []byte("o1"), Access: nfs4.ShareAccessRead}), nfs4.OK)
	open(t, m2, d, "o1", FileKey{Ino: 2}, nfs4.ShareAccessRead, 0)
	want(t, "a fourth stateid", m2.CheckOpen(OpenArgs{ClientID: d, Owner: []byte("o1"), Access: nfs4.ShareAccessRead}), nfs4.ErrDelay)
	want(t, "an upgrade needs no new stateid", m2.CheckOpen(OpenArgs{ClientID: d, Owner: []byte("o1"), File: FileKey{Ino: 2},
		Access: nfs4.ShareAccessBoth}), nfs4.OK)
}
