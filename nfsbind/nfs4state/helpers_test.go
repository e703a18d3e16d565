package nfs4state

import (
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// clock is a settable fake clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func newManager(t testing.TB, clk *clock, opts Options) *Manager {
	t.Helper()
	opts.Now = clk.now
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := checkInvariants(m); err != nil {
			t.Errorf("tables inconsistent at the end of the test: %v", err)
		}
	})
	return m
}

var (
	testFore = nfs4.ChannelAttrs4{MaxRequestSize: 1 << 20, MaxResponseSize: 1 << 20, MaxResponseSizeCached: 4096,
		MaxOperations: 16, MaxRequests: 16}
	testBack = nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}
)

func want(t testing.TB, what string, got, exp nfs4.Status) {
	t.Helper()
	if got != exp {
		t.Fatalf("%s: got %v, want %v", what, got, exp)
	}
}

// exchange runs EXCHANGE_ID for owner with verifier v and principal "sys:0".
func exchange(t testing.TB, m *Manager, owner string, v byte) ExchangeIDResult {
	t.Helper()
	r, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte(owner), Verifier: nfs4.Verifier{v}, Principal: "sys:0"})
	want(t, "EXCHANGE_ID", st, nfs4.OK)
	return r
}

// establish creates a confirmed client for owner and a session on connection 1, and
// sends RECLAIM_COMPLETE, as a client with nothing to reclaim does before it opens
// (RFC 8881 §18.51.3).
func establish(t testing.TB, m *Manager, owner string) (uint64, nfs4.SessionID) {
	t.Helper()
	id, sess := establishToReclaim(t, m, owner)
	want(t, "RECLAIM_COMPLETE", m.ReclaimComplete(id, false), nfs4.OK)
	return id, sess
}

// establishToReclaim is establish without RECLAIM_COMPLETE: a client that may still
// reclaim its state.
func establishToReclaim(t testing.TB, m *Manager, owner string) (uint64, nfs4.SessionID) {
	t.Helper()
	r := exchange(t, m, owner, 1)
	cs, st := m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID,
		Flags: nfs4.CreateSessionFlagConnBackChan, Fore: testFore, Back: testBack, Principal: "sys:0", Conn: 1})
	want(t, "CREATE_SESSION", st, nfs4.OK)
	return r.ClientID, cs.SessionID
}

// seq runs a SEQUENCE on slot 0 and finishes it with reply.
func seq(t testing.TB, m *Manager, sid nfs4.SessionID, seqid uint32) {
	t.Helper()
	res, st := m.Sequence(SequenceArgs{SessionID: sid, SequenceID: seqid, Conn: 1})
	want(t, "SEQUENCE", st, nfs4.OK)
	res.Slot.Done(nil)
}
