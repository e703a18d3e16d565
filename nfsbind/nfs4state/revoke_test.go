package nfs4state

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

func TestRevokeClient(t *testing.T) {
	m, a, b, oa, ob, f := lockFixture(t, Options{})
	la, _, st := newLock(m, a, oa, f, "la", nfs4.WriteLT, 0, toEOF)
	want(t, "LOCK", st, nfs4.OK)
	_, st = m.Open(OpenArgs{ClientID: b, Owner: []byte("ob2"), File: f, Access: nfs4.ShareAccessRead, Deny: nfs4.ShareDenyWrite})
	want(t, "deny write while a writes", st, nfs4.ErrShareDenied)
	n, st := m.RevokeClient(a)
	want(t, "RevokeClient", st, nfs4.OK)
	if n != 2 {
		t.Fatalf("revoked %d stateids, want the open and the lock", n)
	}
	// What a held is released...
	_, _, st = newLock(m, b, ob, f, "lb", nfs4.WriteLT, 0, 10)
	want(t, "b locks what a had locked", st, nfs4.OK)
	// ...and a's stateids say so until freed.
	want(t, "READ with the revoked open", m.CheckIO(a, oa, f, false), nfs4.ErrAdminRevoked)
	_, st = m.LockU(a, la, f, nfs4.WriteLT, 0, toEOF)
	want(t, "LOCKU with the revoked lock", st, nfs4.ErrAdminRevoked)
	_, st = m.Close(a, oa, f)
	want(t, "CLOSE of the revoked open", st, nfs4.ErrAdminRevoked)
	out := make([]nfs4.Status, 2)
	m.TestStateid(a, []nfs4.Stateid4{oa, la}, out)
	if out[0] != nfs4.ErrAdminRevoked || out[1] != nfs4.ErrAdminRevoked {
		t.Fatalf("TEST_STATEID %v", out)
	}
	sessA := sessionOf(t, m, a)
	res, _ := m.Sequence(SequenceArgs{SessionID: sessA, SequenceID: 1, Conn: 1})
	res.Slot.Done(nil)
	if res.StatusFlags&nfs4.Seq4StatusAdminStateRevoked == 0 {
		t.Fatalf("flags %#x lack SEQ4_STATUS_ADMIN_STATE_REVOKED", res.StatusFlags)
	}
	want(t, "DESTROY_CLIENTID with revoked state", m.DestroyClientID(a), nfs4.ErrClientidBusy)
	want(t, "FREE_STATEID of the revoked lock", m.FreeStateid(a, la), nfs4.OK)
	want(t, "FREE_STATEID of the revoked open", m.FreeStateid(a, oa), nfs4.OK)
	want(t, "FREE_STATEID again", m.FreeStateid(a, oa), nfs4.ErrBadStateid)
	res, _ = m.Sequence(SequenceArgs{SessionID: sessA, SequenceID: 2, Conn: 1})
	res.Slot.Done(nil)
	if res.StatusFlags&nfs4.Seq4StatusAdminStateRevoked != 0 {
		t.Fatal("SEQ4_STATUS_ADMIN_STATE_REVOKED after every revoked stateid was freed")
	}
	// The client opens again with the same owner: a new stateid.
	again := open(t, m, a, "oa", f, nfs4.ShareAccessRead, 0)
	if again.Other == oa.Other {
		t.Fatal("new open reused the revoked stateid")
	}
	_, st = m.RevokeClient(12345)
	want(t, "RevokeClient of an unknown client", st, nfs4.ErrStaleClientid)
}

func TestRevokeFile(t *testing.T) {
	m, a, b, oa, ob, f := lockFixture(t, Options{})
	other := open(t, m, a, "oa", FileKey{Ino: 77}, nfs4.ShareAccessRead, 0)
	_, _, st := newLock(m, b, ob, f, "lb", nfs4.ReadLT, 0, 1)
	want(t, "LOCK", st, nfs4.OK)
	if n := m.RevokeFile(f); n != 3 {
		t.Fatalf("revoked %d stateids, want 3 (two opens, one lock)", n)
	}
	want(t, "a's open of f", m.CheckIO(a, oa, f, false), nfs4.ErrAdminRevoked)
	want(t, "a's open of another file", m.CheckIO(a, other, FileKey{Ino: 77}, false), nfs4.OK)
	if n := m.RevokeFile(f); n != 0 {
		t.Fatalf("second RevokeFile revoked %d", n)
	}
	// Revoked state goes with the lease.
	m.mu.Lock()
	for _, c := range m.clients {
		c.renewed = c.renewed.Add(-m.opts.LeaseTime)
	}
	m.mu.Unlock()
	if n := m.Sweep(m.now()); n != 2 {
		t.Fatalf("Sweep removed %d clients", n)
	}
	if s := m.Stats(); s.Stateids != 0 {
		t.Fatalf("%d stateids left", s.Stateids)
	}
}

// sessionOf returns one of a client's sessions.
func sessionOf(t *testing.T, m *Manager, id uint64) nfs4.SessionID {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for sid := range m.clients[id].sessions {
		return sid
	}
	t.Fatal("client has no session")
	return nfs4.SessionID{}
}
