package nfs4state

import (
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

func TestExchangeIDNewOwnerIsUnconfirmed(t *testing.T) { // case 1
	m := newManager(t, newClock(), Options{})
	r := exchange(t, m, "c1", 1)
	if r.SequenceID != 1 || r.Flags&nfs4.ExchgIDFlagConfirmedR != 0 || r.Flags&nfs4.ExchgIDFlagUseNonPNFS == 0 {
		t.Fatalf("new owner: %+v", r)
	}
	if uint32(r.ClientID>>32) != m.Epoch() {
		t.Fatalf("client ID %x does not carry epoch %x", r.ClientID, m.Epoch())
	}
	if s := m.Stats(); s.Clients != 1 || s.ConfirmedClients != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestExchangeIDConfirmedSameVerifierReturnsSameRecord(t *testing.T) { // case 2
	m := newManager(t, newClock(), Options{})
	id, _ := establish(t, m, "c1")
	r := exchange(t, m, "c1", 1)
	if r.ClientID != id || r.Flags&nfs4.ExchgIDFlagConfirmedR == 0 || r.SequenceID != 2 {
		t.Fatalf("case 2: %+v, want client %x confirmed, seq 2", r, id)
	}
}

func TestExchangeIDPrincipalCollision(t *testing.T) { // case 3
	m := newManager(t, newClock(), Options{})
	id, _ := establish(t, m, "c1")
	_, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c1"), Verifier: nfs4.Verifier{1}, Principal: "sys:5"})
	want(t, "other principal while state exists", st, nfs4.ErrClidInuse)
	// Without state the old record is replaced.
	r := exchange(t, m, "c2", 1)
	r2, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c2"), Verifier: nfs4.Verifier{1}, Principal: "sys:5"})
	want(t, "other principal, unconfirmed", st, nfs4.OK)
	if r2.ClientID == r.ClientID || r2.ClientID == id {
		t.Fatal("replacement kept the old client ID")
	}
}

func TestExchangeIDReplacesUnconfirmed(t *testing.T) { // case 4
	m := newManager(t, newClock(), Options{})
	a := exchange(t, m, "c1", 1)
	b := exchange(t, m, "c1", 2)
	if a.ClientID == b.ClientID {
		t.Fatal("unconfirmed record not replaced")
	}
	_, st := m.CreateSession(CreateSessionArgs{ClientID: a.ClientID, SequenceID: 1, Fore: testFore, Back: testBack, Principal: "sys:0"})
	want(t, "CREATE_SESSION with the replaced record", st, nfs4.ErrStaleClientid)
	if s := m.Stats(); s.Clients != 1 {
		t.Fatalf("%d client records, want 1", s.Clients)
	}
}

func TestExchangeIDClientRebootReplacesStateOnConfirm(t *testing.T) { // case 5
	m := newManager(t, newClock(), Options{})
	old, oldSess := establish(t, m, "c1")
	f := FileKey{Ino: 7}
	sid, st := m.Open(OpenArgs{ClientID: old, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth, Claim: nfs4.ClaimNull})
	want(t, "OPEN", st, nfs4.OK)

	r, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c1"), Verifier: nfs4.Verifier{9}, Principal: "sys:0"})
	want(t, "EXCHANGE_ID after reboot", st, nfs4.OK)
	if r.ClientID == old || r.Flags&nfs4.ExchgIDFlagConfirmedR != 0 {
		t.Fatalf("reboot: %+v", r)
	}
	// The old record lives until the new one is confirmed.
	want(t, "old state before confirm", m.CheckIO(old, sid, f, true), nfs4.OK)
	_, st = m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack, Principal: "sys:0"})
	want(t, "CREATE_SESSION confirming", st, nfs4.OK)
	_, st = m.Sequence(SequenceArgs{SessionID: oldSess, SequenceID: 1})
	want(t, "old session", st, nfs4.ErrBadsession)
	if st := m.CheckIO(r.ClientID, sid, f, true); st != nfs4.ErrBadStateid {
		t.Fatalf("old stateid with the new client: %v", st)
	}
	if s := m.Stats(); s.Clients != 1 || s.Stateids != 0 || s.Files != 0 {
		t.Fatalf("stats after reboot %+v", s)
	}
}

func TestExchangeIDUpdate(t *testing.T) { // cases 6 to 9
	m := newManager(t, newClock(), Options{})
	upd := nfs4.ExchgIDFlagUpdConfirmedRecA
	_, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c1"), Verifier: nfs4.Verifier{1}, Flags: upd, Principal: "sys:0"})
	want(t, "update without record (7)", st, nfs4.ErrNoent)
	id, _ := establish(t, m, "c1")
	r, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c1"), Verifier: nfs4.Verifier{1}, Flags: upd, Principal: "sys:0"})
	want(t, "update (6)", st, nfs4.OK)
	if r.ClientID != id || r.Flags&nfs4.ExchgIDFlagConfirmedR == 0 {
		t.Fatalf("update: %+v", r)
	}
	_, st = m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c1"), Verifier: nfs4.Verifier{2}, Flags: upd, Principal: "sys:0"})
	want(t, "update, wrong verifier (8)", st, nfs4.ErrNotSame)
	_, st = m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c1"), Verifier: nfs4.Verifier{1}, Flags: upd, Principal: "sys:1"})
	want(t, "update, wrong principal (9)", st, nfs4.ErrPerm)
}

func TestExchangeIDRefusesBadArgs(t *testing.T) {
	m := newManager(t, newClock(), Options{MaxClients: 2})
	_, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c"), Flags: nfs4.ExchgIDFlagConfirmedR})
	want(t, "CONFIRMED_R from the client", st, nfs4.ErrInval)
	_, st = m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("c"), Flags: 0x1000})
	want(t, "undefined flag", st, nfs4.ErrInval)
	r, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("linux"), Flags: nfs4.ExchgIDFlagSuppMovedRefer |
		nfs4.ExchgIDFlagSuppMovedMigr | nfs4.ExchgIDFlagBindPrincStateid | nfs4.ExchgIDFlagSuppFenceOps})
	want(t, "the flags a Linux client may send", st, nfs4.OK)
	want(t, "DESTROY_CLIENTID", m.DestroyClientID(r.ClientID), nfs4.OK)
	_, st = m.ExchangeID(ExchangeIDArgs{OwnerID: make([]byte, nfs4.OpaqueLimit+1)})
	want(t, "long owner", st, nfs4.ErrInval)
	a := exchange(t, m, "a", 1)
	exchange(t, m, "b", 1)
	exchange(t, m, "c", 1) // evicts a, the oldest unconfirmed record
	_, st = m.CreateSession(CreateSessionArgs{ClientID: a.ClientID, SequenceID: a.SequenceID, Fore: testFore, Back: testBack, Principal: "sys:0"})
	want(t, "CREATE_SESSION of the evicted record", st, nfs4.ErrStaleClientid)
	establish(t, m, "d") // evicts b, then confirms d
	establish(t, m, "e") // evicts c
	_, st = m.ExchangeID(ExchangeIDArgs{OwnerID: []byte("f")})
	want(t, "third client with MaxClients 2, both confirmed", st, nfs4.ErrDelay)
}

func TestDestroyClientID(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	want(t, "unknown", m.DestroyClientID(12345), nfs4.ErrStaleClientid)
	id, sess := establish(t, m, "c1")
	want(t, "with a session", m.DestroyClientID(id), nfs4.ErrClientidBusy)
	want(t, "DESTROY_SESSION", m.DestroySession(sess), nfs4.OK)
	want(t, "DESTROY_SESSION again", m.DestroySession(sess), nfs4.ErrBadsession)
	want(t, "without sessions", m.DestroyClientID(id), nfs4.OK)
	want(t, "again", m.DestroyClientID(id), nfs4.ErrStaleClientid)
	r := exchange(t, m, "c2", 1)
	want(t, "unconfirmed", m.DestroyClientID(r.ClientID), nfs4.OK)
	if s := m.Stats(); s.Clients != 0 || s.Sessions != 0 || s.ReplyCacheBytes != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLeaseRenewedBySequenceAndExpiredBySweep(t *testing.T) {
	clk := newClock()
	m := newManager(t, clk, Options{LeaseTime: 10 * time.Second})
	id, sess := establish(t, m, "c1")
	f := FileKey{Ino: 1}
	sid, st := m.Open(OpenArgs{ClientID: id, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessRead, Claim: nfs4.ClaimNull})
	want(t, "OPEN", st, nfs4.OK)
	for i := uint32(1); i <= 5; i++ {
		clk.advance(8 * time.Second)
		seq(t, m, sess, i)
		if n := m.Sweep(clk.now()); n != 0 {
			t.Fatalf("sweep %d removed %d clients of a renewed lease", i, n)
		}
	}
	// A request in progress keeps the lease.
	res, st := m.Sequence(SequenceArgs{SessionID: sess, SequenceID: 6})
	want(t, "SEQUENCE", st, nfs4.OK)
	clk.advance(time.Minute)
	if n := m.Sweep(clk.now()); n != 0 {
		t.Fatal("client with a request in progress expired")
	}
	res.Slot.Done(nil)
	clk.advance(11 * time.Second)
	if n := m.Sweep(clk.now()); n != 1 {
		t.Fatalf("sweep removed %d clients, want 1", n)
	}
	_, st = m.Sequence(SequenceArgs{SessionID: sess, SequenceID: 7})
	want(t, "SEQUENCE after expiry", st, nfs4.ErrBadsession)
	want(t, "READ with the expired client's stateid", m.CheckIO(id, sid, f, false), nfs4.ErrExpired)
	// The client comes back: a new record; its old stateid is expired for it too.
	id2, _ := establish(t, m, "c1")
	want(t, "old stateid, new client", m.CheckIO(id2, sid, f, false), nfs4.ErrExpired)
	if s := m.Stats(); s.Stateids != 0 || s.Files != 0 {
		t.Fatalf("state left after expiry: %+v", s)
	}
}

func TestUnconfirmedClientsExpire(t *testing.T) {
	clk := newClock()
	m := newManager(t, clk, Options{LeaseTime: 10 * time.Second})
	exchange(t, m, "c1", 1)
	clk.advance(10 * time.Second)
	if n := m.Sweep(clk.now()); n != 1 {
		t.Fatalf("sweep removed %d, want the unconfirmed record", n)
	}
}

// Identifiers of another instance are stale even without a state dir.
func TestOtherInstanceIdentifiersAreStale(t *testing.T) {
	clk := newClock()
	m1 := newManager(t, clk, Options{})
	id, sess := establish(t, m1, "c1")
	f := FileKey{Ino: 1}
	sid := open(t, m1, id, "o", f, nfs4.ShareAccessRead, 0)
	m2 := newManager(t, clk, Options{})
	if m1.Epoch() == m2.Epoch() {
		t.Fatal("two instances share an epoch")
	}
	_, st := m2.CreateSession(CreateSessionArgs{ClientID: id, SequenceID: 2, Fore: testFore, Back: testBack})
	want(t, "CREATE_SESSION with the old client ID", st, nfs4.ErrStaleClientid)
	_, st = m2.Sequence(SequenceArgs{SessionID: sess, SequenceID: 1})
	want(t, "SEQUENCE on the old session", st, nfs4.ErrBadsession)
	want(t, "RECLAIM_COMPLETE with the old client ID", m2.ReclaimComplete(id, false), nfs4.ErrStaleClientid)
	id2, _ := establish(t, m2, "c1")
	want(t, "READ with the old stateid", m2.CheckIO(id2, sid, f, false), nfs4.ErrStaleStateid)
}
