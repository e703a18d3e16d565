package nfs4state

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

func TestCreateSessionSequenceReplayAndMisorder(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	r := exchange(t, m, "c1", 1)
	args := CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack, Principal: "sys:0", CBProgram: 0x40000000}
	bad := args
	bad.SequenceID = r.SequenceID + 1
	_, st := m.CreateSession(bad)
	want(t, "unconfirmed, sequence too high", st, nfs4.ErrSeqMisordered)
	other := args
	other.Principal = "sys:7"
	_, st = m.CreateSession(other)
	want(t, "unconfirmed, other principal", st, nfs4.ErrClidInuse)

	first, st := m.CreateSession(args)
	want(t, "first", st, nfs4.OK)
	if first.SequenceID != r.SequenceID {
		t.Fatalf("csr_sequence %d, want %d", first.SequenceID, r.SequenceID)
	}
	again, st := m.CreateSession(args)
	want(t, "replay", st, nfs4.OK)
	if again != first {
		t.Fatalf("replay gave %+v, want the cached %+v", again, first)
	}
	if s := m.Stats(); s.Sessions != 1 {
		t.Fatalf("replay created a session: %d", s.Sessions)
	}
	args.SequenceID += 5
	_, st = m.CreateSession(args)
	want(t, "confirmed, misordered", st, nfs4.ErrSeqMisordered)
	args.SequenceID = r.SequenceID + 1
	second, st := m.CreateSession(args)
	want(t, "next", st, nfs4.OK)
	if second.SessionID == first.SessionID {
		t.Fatal("second session has the first one's ID")
	}
	// A later EXCHANGE_ID gives the next sequence ID.
	if r2 := exchange(t, m, "c1", 1); r2.SequenceID != args.SequenceID+1 {
		t.Fatalf("eir_sequenceid %d, want %d", r2.SequenceID, args.SequenceID+1)
	}
	_, st = m.CreateSession(CreateSessionArgs{ClientID: 99, SequenceID: 1, Fore: testFore, Back: testBack})
	want(t, "unknown client", st, nfs4.ErrStaleClientid)
}

func TestCreateSessionNegotiatesChannels(t *testing.T) {
	m := newManager(t, newClock(), Options{MaxSlots: 8, MaxCachedReply: 1024, MaxOperations: 32,
		MaxRequestSize: 64 << 10, MaxResponseSize: 128 << 10})
	r := exchange(t, m, "c1", 1)
	fore := nfs4.ChannelAttrs4{HeaderPadSize: 512, MaxRequestSize: 1 << 30, MaxResponseSize: 1 << 30,
		MaxResponseSizeCached: 1 << 30, MaxOperations: 1 << 30, MaxRequests: 1 << 30, HasRdmaIrd: true, RdmaIrd: 16}
	res, st := m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID,
		Flags: nfs4.CreateSessionFlagPersist | nfs4.CreateSessionFlagConnBackChan | nfs4.CreateSessionFlagConnRDMA,
		Fore:  fore, Back: testBack, Principal: "sys:0"})
	want(t, "CREATE_SESSION", st, nfs4.OK)
	wantFore := nfs4.ChannelAttrs4{MaxRequestSize: 64 << 10, MaxResponseSize: 128 << 10, MaxResponseSizeCached: 1024,
		MaxOperations: 32, MaxRequests: 8}
	if res.Fore != wantFore {
		t.Fatalf("fore %+v, want %+v", res.Fore, wantFore)
	}
	if res.Back.MaxResponseSizeCached != 0 || res.Back.MaxRequests != testBack.MaxRequests {
		t.Fatalf("back %+v", res.Back)
	}
	if res.Flags != nfs4.CreateSessionFlagConnBackChan {
		t.Fatalf("flags %#x, want CONN_BACK_CHAN only", res.Flags)
	}
	if s := m.Stats(); s.ReplyCacheBytes != 8*1024 {
		t.Fatalf("reserved %d reply cache bytes, want 8 KiB", s.ReplyCacheBytes)
	}
}

func TestCreateSessionRefusals(t *testing.T) {
	m := newManager(t, newClock(), Options{MaxSessionsPerClient: 1})
	r := exchange(t, m, "c1", 1)
	base := CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack, Principal: "sys:0"}
	for _, tc := range []struct {
		name string
		edit func(*CreateSessionArgs)
		want nfs4.Status
	}{
		{"unknown flag", func(a *CreateSessionArgs) { a.Flags = 0x100 }, nfs4.ErrInval},
		{"fore request too small", func(a *CreateSessionArgs) { a.Fore.MaxRequestSize = 10 }, nfs4.ErrToosmall},
		{"fore response too small", func(a *CreateSessionArgs) { a.Fore.MaxResponseSize = 10 }, nfs4.ErrToosmall},
		{"no operations", func(a *CreateSessionArgs) { a.Fore.MaxOperations = 0 }, nfs4.ErrToosmall},
		{"back channel one op", func(a *CreateSessionArgs) { a.Back.MaxOperations = 1 }, nfs4.ErrToosmall},
		{"back request too small", func(a *CreateSessionArgs) { a.Back.MaxRequestSize = 100 }, nfs4.ErrToosmall},
	} {
		a := base
		tc.edit(&a)
		_, st := m.CreateSession(a)
		want(t, tc.name, st, tc.want)
	}
	// The refusals did not consume the sequence ID.
	_, st := m.CreateSession(base)
	want(t, "valid after refusals", st, nfs4.OK)
	base.SequenceID++
	_, st = m.CreateSession(base)
	want(t, "second session with MaxSessionsPerClient 1", st, nfs4.ErrDelay)
}

func TestCreateSessionReplyCacheBudget(t *testing.T) {
	m := newManager(t, newClock(), Options{MaxCachedReply: 1000, MaxReplyCacheBytes: 20000})
	ca, _ := establish(t, m, "a") // 16 slots × 1000
	r := exchange(t, m, "b", 1)
	res, st := m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack, Principal: "sys:0"})
	want(t, "second session", st, nfs4.OK)
	if res.Fore.MaxRequests != 4 {
		t.Fatalf("second session got %d slots, want the 4 that fit", res.Fore.MaxRequests)
	}
	r = exchange(t, m, "c", 1)
	_, st = m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack, Principal: "sys:0"})
	want(t, "no room for a slot", st, nfs4.ErrDelay)
	_ = ca
}

func TestSequenceSlotRules(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	_, sess := establish(t, m, "c1")
	a := SequenceArgs{SessionID: sess, SlotID: 3, HighestSlotID: 3, SequenceID: 1, CacheThis: true, Conn: 1}

	_, st := m.Sequence(SequenceArgs{SessionID: nfs4.SessionID{1}, SequenceID: 1})
	want(t, "unknown session", st, nfs4.ErrBadsession)
	_, st = m.Sequence(SequenceArgs{SessionID: sess, SlotID: 16, HighestSlotID: 16, SequenceID: 1})
	want(t, "slot beyond the table", st, nfs4.ErrBadslot)
	_, st = m.Sequence(SequenceArgs{SessionID: sess, SlotID: 3, SequenceID: 1, HighestSlotID: 3, Conn: 1})
	_ = st
	// That took slot 3 with seqid 1 uncached and still in progress:
	_, st = m.Sequence(SequenceArgs{SessionID: sess, SlotID: 3, SequenceID: 1, HighestSlotID: 3})
	want(t, "retry while in progress", st, nfs4.ErrDelay)
	_, st = m.Sequence(SequenceArgs{SessionID: sess, SlotID: 3, SequenceID: 2, HighestSlotID: 3})
	want(t, "next while in progress", st, nfs4.ErrSeqMisordered)

	// Start over on slot 4.
	a.SlotID, a.HighestSlotID = 4, 4
	_, st = m.Sequence(SequenceArgs{SessionID: sess, SlotID: 4, SequenceID: 0})
	want(t, "seqid 0 on a fresh slot", st, nfs4.ErrSeqMisordered)
	_, st = m.Sequence(SequenceArgs{SessionID: sess, SlotID: 4, SequenceID: 2})
	want(t, "seqid 2 on a fresh slot", st, nfs4.ErrSeqMisordered)
	res, st := m.Sequence(a)
	want(t, "new request", st, nfs4.OK)
	if res.Replay != nil || !res.Slot.Valid() || res.HighestSlotID != 15 || res.TargetHighestSlotID != 15 || res.ClientID == 0 {
		t.Fatalf("new request result %+v", res)
	}
	reply := []byte("the whole COMPOUND reply")
	want(t, "Done", res.Slot.Done(reply), nfs4.OK)
	want(t, "Done twice", res.Slot.Done([]byte("other")), nfs4.OK)
	reply[0] = 'X' // the cache holds a copy

	rep, st := m.Sequence(a)
	want(t, "retry", st, nfs4.OK)
	if !bytes.Equal(rep.Replay, []byte("the whole COMPOUND reply")) || rep.Slot.Valid() {
		t.Fatalf("retry: replay %q, slot valid %v", rep.Replay, rep.Slot.Valid())
	}
	b := a
	b.CacheThis = false
	_, st = m.Sequence(b)
	want(t, "retry with other sa_cachethis", st, nfs4.ErrSeqFalseRetry)
	c := a
	c.Ops = a.Ops + 1
	_, st = m.Sequence(c)
	want(t, "retry with another number of operations", st, nfs4.ErrSeqFalseRetry)
	b.SequenceID = 7
	_, st = m.Sequence(b)
	want(t, "misordered", st, nfs4.ErrSeqMisordered)

	// An uncached request's retry.
	b.SequenceID = 2
	res, st = m.Sequence(b)
	want(t, "uncached request", st, nfs4.OK)
	res.Slot.Done([]byte("reply"))
	wantUncached(t, m, b, "retry of uncached")

	// A reply too big for the cache.
	a.SequenceID = 3
	res, st = m.Sequence(a)
	want(t, "request", st, nfs4.OK)
	if res.Slot.MaxCachedReply() != 4096 {
		t.Fatalf("MaxCachedReply %d", res.Slot.MaxCachedReply())
	}
	want(t, "Done with a big reply", res.Slot.Done(make([]byte, 4097)), nfs4.ErrRepTooBigToCache)
	wantUncached(t, m, a, "retry of a reply too big to cache")
}

// wantUncached checks that a, a retry of its slot's last request, is answered as one
// whose reply was not cached: NFS4_OK with the slot's sequence result, Uncached, no
// replay and no slot held.
func wantUncached(t *testing.T, m *Manager, a SequenceArgs, what string) {
	t.Helper()
	res, st := m.Sequence(a)
	want(t, what, st, nfs4.OK)
	if !res.Uncached || res.Replay != nil || res.Slot.Valid() || res.SequenceID != a.SequenceID || res.SlotID != a.SlotID {
		t.Fatalf("%s: Uncached %v, replay %q, slot held %v, sequence %d of slot %d",
			what, res.Uncached, res.Replay, res.Slot.Valid(), res.SequenceID, res.SlotID)
	}
}

// TestSequenceLimitsLeaveSlotAndLease: a request with more operations than the
// session's ca_maxoperations is NFS4ERR_TOO_MANY_OPS and one larger than its
// ca_maxrequestsize NFS4ERR_REQ_TOO_BIG, and like every SEQUENCE error they leave the
// slot (sequence ID, cached reply) and the lease as they were (RFC 8881 §18.46.3): the
// same sequence ID is then a new request, and the lease runs from the last request
// that succeeded.
func TestSequenceLimitsLeaveSlotAndLease(t *testing.T) {
	clk := newClock()
	m := newManager(t, clk, Options{LeaseTime: 10 * time.Second})
	_, sess := establish(t, m, "c1")
	a := SequenceArgs{SessionID: sess, SequenceID: 1, CacheThis: true, Conn: 1}
	res, st := m.Sequence(a)
	want(t, "first request", st, nfs4.OK)
	res.Slot.Done([]byte("first reply"))

	clk.advance(8 * time.Second)
	a.SequenceID = 2
	tooMany, tooBig := a, a
	tooMany.Ops = int(testFore.MaxOperations) + 1
	tooBig.RequestSize = int(testFore.MaxRequestSize) + 1
	_, st = m.Sequence(tooMany)
	want(t, "too many operations", st, nfs4.ErrTooManyOps)
	_, st = m.Sequence(tooBig)
	want(t, "request too big", st, nfs4.ErrReqTooBig)
	rep, st := m.Sequence(SequenceArgs{SessionID: sess, SequenceID: 1, CacheThis: true, Conn: 1})
	want(t, "retry of the first request", st, nfs4.OK)
	if string(rep.Replay) != "first reply" {
		t.Fatalf("retry of the first request answered %q", rep.Replay)
	}
	clk.advance(3 * time.Second)
	if n := m.Sweep(clk.now()); n != 1 {
		t.Fatalf("sweep 11 s after the last request that succeeded removed %d clients, want 1: the failed SEQUENCEs renewed the lease", n)
	}

	m2 := newManager(t, newClock(), Options{})
	_, sess2 := establish(t, m2, "c2")
	tooMany.SessionID = sess2
	tooMany.SequenceID = 1
	_, st = m2.Sequence(tooMany)
	want(t, "too many operations on a fresh slot", st, nfs4.ErrTooManyOps)
	ok := tooMany
	ok.Ops = int(testFore.MaxOperations)
	res, st = m2.Sequence(ok)
	want(t, "the same sequence ID, within the limits", st, nfs4.OK)
	if !res.Slot.Valid() {
		t.Fatal("the same sequence ID within the limits did not get the slot")
	}
	res.Slot.Done(nil)
}

// TestSlotAbandonCachesNothing: a request that ends without a reply (Slot.Abandon,
// or Slot.Done with no reply) releases its slot at its sequence ID but caches nothing,
// even with sa_cachethis: its retry is Uncached (NFS4ERR_RETRY_UNCACHED_REP after its
// SEQUENCE, RFC 8881 §2.10.6.1), not an empty reply, and the next sequence ID is a new
// request.
func TestSlotAbandonCachesNothing(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	_, sess := establish(t, m, "c1")
	for i, release := range []func(*Slot){(*Slot).Abandon, func(sl *Slot) { sl.Done(nil) }} {
		a := SequenceArgs{SessionID: sess, SequenceID: uint32(i + 1), CacheThis: true, Conn: 1}
		res, st := m.Sequence(a)
		want(t, "request", st, nfs4.OK)
		release(&res.Slot)
		if res.Slot.Valid() {
			t.Fatal("the slot is still held after its release")
		}
		res.Slot.Done([]byte("too late")) // a no-op once released
		wantUncached(t, m, a, fmt.Sprintf("retry %d of a request without a reply", i))
	}
	seq(t, m, sess, 3)
}

func TestSequenceIDWraps(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	_, sess := establish(t, m, "c1")
	m.mu.Lock()
	m.sessions[sess].slots[0].seq = ^uint32(0) - 1
	m.sessions[sess].slots[0].initialized = true
	m.mu.Unlock()
	seq(t, m, sess, ^uint32(0))
	seq(t, m, sess, 0)
	seq(t, m, sess, 1)
}

func TestDestroySessionWithRequestInProgress(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	id, sess := establish(t, m, "c1")
	res, st := m.Sequence(SequenceArgs{SessionID: sess, SequenceID: 1, CacheThis: true})
	want(t, "SEQUENCE", st, nfs4.OK)
	want(t, "DESTROY_SESSION", m.DestroySession(sess), nfs4.OK)
	want(t, "Done after destroy", res.Slot.Done([]byte("x")), nfs4.OK)
	want(t, "DESTROY_CLIENTID", m.DestroyClientID(id), nfs4.OK)
}

func TestBindConnToSessionAndCallbackPath(t *testing.T) {
	m := newManager(t, newClock(), Options{MaxConnsPerSession: 2})
	r := exchange(t, m, "c1", 1)
	cs, st := m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack, Principal: "sys:0", Conn: 1})
	want(t, "CREATE_SESSION without back channel", st, nfs4.OK)
	res, st := m.Sequence(SequenceArgs{SessionID: cs.SessionID, SequenceID: 1, Conn: 1})
	want(t, "SEQUENCE", st, nfs4.OK)
	res.Slot.Done(nil)
	if res.StatusFlags&nfs4.Seq4StatusCBPathDown == 0 {
		t.Fatal("no back channel, but no SEQ4_STATUS_CB_PATH_DOWN")
	}
	_, st = m.BindConnToSession(cs.SessionID, 2, 9)
	want(t, "undefined direction", st, nfs4.ErrInval)
	_, st = m.BindConnToSession(nfs4.SessionID{}, 2, nfs4.CDFC4Back)
	want(t, "unknown session", st, nfs4.ErrBadsession)
	dir, st := m.BindConnToSession(cs.SessionID, 2, nfs4.CDFC4BackOrBoth)
	want(t, "BIND_CONN_TO_SESSION", st, nfs4.OK)
	if dir != nfs4.CDFS4Both {
		t.Fatalf("dir %v, want both", dir)
	}
	res, _ = m.Sequence(SequenceArgs{SessionID: cs.SessionID, SequenceID: 2, Conn: 2})
	res.Slot.Done(nil)
	if res.StatusFlags != 0 {
		t.Fatalf("flags %#x with a back channel bound", res.StatusFlags)
	}
	bc, st := m.Backchannel(cs.SessionID)
	want(t, "Backchannel", st, nfs4.OK)
	if len(bc.Conns) != 1 || bc.Conns[0] != 2 || bc.ClientID != r.ClientID {
		t.Fatalf("back channel %+v", bc)
	}
	m.SetCallbackPath(r.ClientID, false)
	res, _ = m.Sequence(SequenceArgs{SessionID: cs.SessionID, SequenceID: 3, Conn: 2})
	res.Slot.Done(nil)
	if res.StatusFlags&nfs4.Seq4StatusCBPathDown == 0 {
		t.Fatal("failed probe, but no SEQ4_STATUS_CB_PATH_DOWN")
	}
	// A connection bound to the back channel does not clear the flag: the next probe
	// (which the server may defer) decides.
	_, st = m.BindConnToSession(cs.SessionID, 2, nfs4.CDFC4BackOrBoth)
	want(t, "BIND_CONN_TO_SESSION after a failed probe", st, nfs4.OK)
	res, _ = m.Sequence(SequenceArgs{SessionID: cs.SessionID, SequenceID: 4, Conn: 2})
	res.Slot.Done(nil)
	if res.StatusFlags&nfs4.Seq4StatusCBPathDown == 0 {
		t.Fatal("BIND_CONN_TO_SESSION cleared SEQ4_STATUS_CB_PATH_DOWN without a probe")
	}
	m.SetCallbackPath(r.ClientID, true)
	res, _ = m.Sequence(SequenceArgs{SessionID: cs.SessionID, SequenceID: 5, Conn: 3}) // binds conn 3, evicting conn 1
	res.Slot.Done(nil)
	if res.StatusFlags != 0 {
		t.Fatalf("flags %#x after a good probe", res.StatusFlags)
	}
	m.ConnClosed(2)
	bc, _ = m.Backchannel(cs.SessionID)
	if len(bc.Conns) != 0 {
		t.Fatalf("closed connection still bound: %+v", bc)
	}
	m.mu.Lock()
	n := len(m.sessions[cs.SessionID].conns)
	m.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d connections bound, want 1 (conn 3)", n)
	}
	want(t, "BackchannelCtl", m.BackchannelCtl(cs.SessionID, 7, nil), nfs4.OK)
	bc, _ = m.Backchannel(cs.SessionID)
	if bc.CBProgram != 7 {
		t.Fatalf("cb program %d", bc.CBProgram)
	}
	want(t, "BackchannelCtl of an unknown session", m.BackchannelCtl(nfs4.SessionID{1}, 7, nil), nfs4.ErrBadsession)
}

// TestCallbackSecParms: the session keeps its own copy of csa_sec_parms (the decoded
// arguments alias the request buffer, which the server reuses), BACKCHANNEL_CTL's
// bca_sec_parms replace it, and RPCSEC_GSS entries keep only flavor and service.
func TestCallbackSecParms(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	r := exchange(t, m, "c1", 1)
	name := []byte("lab")
	gids := []uint32{0, 10}
	sec := []nfs4.CallbackSecParms4{
		{Flavor: nfs4.RPCSecGSS, GSS: nfs4.GSSCBHandles{Service: 2, HandleFromServer: []byte("srv"), HandleFromClient: []byte("cli")}},
		{Flavor: nfs4.AuthSys, Sys: nfs4.AuthSysParms{Stamp: 42, MachineName: name, UID: 0, GID: 0, GIDs: gids}},
		{Flavor: nfs4.AuthNone},
	}
	cs, st := m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack,
		Principal: "sys:0", Conn: 1, Flags: nfs4.CreateSessionFlagConnBackChan, SecParms: sec})
	want(t, "CREATE_SESSION", st, nfs4.OK)
	copy(name, "xxx") // the request buffer is reused
	gids[1] = 99
	bc, _ := m.Backchannel(cs.SessionID)
	wantSec := []nfs4.CallbackSecParms4{
		{Flavor: nfs4.RPCSecGSS, GSS: nfs4.GSSCBHandles{Service: 2}},
		{Flavor: nfs4.AuthSys, Sys: nfs4.AuthSysParms{Stamp: 42, MachineName: []byte("lab"), GIDs: []uint32{0, 10}}},
		{Flavor: nfs4.AuthNone},
	}
	if !reflect.DeepEqual(bc.SecParms, wantSec) {
		t.Fatalf("kept sec parms %+v, want %+v", bc.SecParms, wantSec)
	}
	long := make([]nfs4.CallbackSecParms4, nfs4.MaxSecFlavors+3)
	want(t, "BackchannelCtl", m.BackchannelCtl(cs.SessionID, 9, long), nfs4.OK)
	bc, _ = m.Backchannel(cs.SessionID)
	if bc.CBProgram != 9 || len(bc.SecParms) != nfs4.MaxSecFlavors || bc.SecParms[0].Flavor != nfs4.AuthNone {
		t.Fatalf("after BACKCHANNEL_CTL: program %d, %d sec parms", bc.CBProgram, len(bc.SecParms))
	}
	want(t, "BackchannelCtl", m.BackchannelCtl(cs.SessionID, 9, nil), nfs4.OK)
	if bc, _ = m.Backchannel(cs.SessionID); bc.SecParms != nil {
		t.Fatalf("empty bca_sec_parms kept %+v", bc.SecParms)
	}
}
