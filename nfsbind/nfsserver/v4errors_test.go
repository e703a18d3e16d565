//go:build linux

package nfsserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// readOp is a READ of 100 bytes at 0 with sid.
func readOp(sid nfs4.Stateid4) *nfs4.ReadArgs { return &nfs4.ReadArgs{Stateid: sid, Count: 100} }

// TestV4StateidErrors: a READ with a stateid the server never issued is
// NFS4ERR_BAD_STATEID, with an open stateid's seqid before an upgrade
// NFS4ERR_OLD_STATEID, one of a previous server instance NFS4ERR_STALE_STATEID; an
// OPEN whose access another owner's deny refuses is NFS4ERR_SHARE_DENIED.
func TestV4StateidErrors(t *testing.T) {
	e := newEnv(t, Options{})
	if err := os.WriteFile(filepath.Join(e.dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	fh, sid1 := c.openFile(dir, openArgs4("o1", "f", nfs4.ShareAccessRead, false))
	res := c.must(&nfs4.PutfhArgs{Object: fh}, readOp(sid1))
	if got := string(res.Results[2].(*nfs4.ReadRes).Data); got != "hello" {
		t.Fatalf("READ %q", got)
	}
	_, sid2 := c.openFile(dir, openArgs4("o1", "f", nfs4.ShareAccessBoth, false))
	if sid2.Other != sid1.Other || sid2.Seqid != sid1.Seqid+1 {
		t.Fatalf("upgrade: stateid %v after %v", sid2, sid1)
	}
	wantStatus4(t, "READ with the pre-upgrade seqid", c.call(&nfs4.PutfhArgs{Object: fh}, readOp(sid1)), nfs4.ErrOldStateid)
	bad := sid2
	bad.Other[11] ^= 0x55
	wantStatus4(t, "READ with a made-up stateid", c.call(&nfs4.PutfhArgs{Object: fh}, readOp(bad)), nfs4.ErrBadStateid)
	// Seqid 0 means "the current one" (RFC 8881 §8.2.2).
	cur := sid2
	cur.Seqid = 0
	c.must(&nfs4.PutfhArgs{Object: fh}, readOp(cur))
	// The special current stateid after OPEN in the same COMPOUND.
	c.must(&nfs4.PutfhArgs{Object: dir}, openArgs4("o9", "f", nfs4.ShareAccessRead, false), readOp(currentStateid))

	a := openArgs4("o2", "g", nfs4.ShareAccessRead, true)
	a.ShareDeny = nfs4.ShareDenyWrite
	gfh, gsid := c.openFile(dir, a)
	wantStatus4(t, "WRITE under a read-only open", c.call(&nfs4.PutfhArgs{Object: gfh},
		&nfs4.WriteArgs{Stateid: gsid, Data: []byte("x")}), nfs4.ErrOpenmode)
	wantStatus4(t, "OPEN for writing against a deny-write open",
		c.call(&nfs4.PutfhArgs{Object: dir}, openArgs4("o3", "g", nfs4.ShareAccessWrite, false)), nfs4.ErrShareDenied)
	a = openArgs4("o4", "f", nfs4.ShareAccessRead, false)
	a.ShareDeny = nfs4.ShareDenyWrite
	wantStatus4(t, "OPEN denying writes to a file open for writing", c.call(&nfs4.PutfhArgs{Object: dir}, a), nfs4.ErrShareDenied)

	// A restarted server (same StateDir) knows its stateids from before as stale.
	e.stop()
	e.start(Options{Root: e.dir, StateDir: e.state})
	c2 := e.v4(rootCred())
	c2.mount()
	wantStatus4(t, "READ with a stateid of the previous instance", c2.call(&nfs4.PutfhArgs{Object: fh}, readOp(sid2)), nfs4.ErrStaleStateid)
}

// leaseClock is a clock tests advance by hand.
type leaseClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *leaseClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *leaseClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// TestV4LeaseExpiry: a client that renews nothing for longer than the lease loses
// its state at the next sweep: its session is gone (NFS4ERR_BADSESSION) and its open
// stateid, used by a new client, is refused.
func TestV4LeaseExpiry(t *testing.T) {
	clock := &leaseClock{t: time.Unix(1_700_000_000, 0)}
	e := newEnv(t, Options{NFS4: NFS4Options{State: nfs4state.Options{LeaseTime: 10 * time.Second, Now: clock.now}}})
	if err := os.WriteFile(filepath.Join(e.dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	fh, sid := c.openFile(dir, openArgs4("o1", "f", nfs4.ShareAccessRead, false))
	if a := c.getattr(fh, nfs4.AttrLeaseTime); a.LeaseTime != 10 {
		t.Fatalf("lease_time %d", a.LeaseTime)
	}
	clock.advance(time.Minute)
	if n := e.srv.v4.state.Sweep(clock.now()); n != 1 {
		t.Fatalf("Sweep expired %d clients", n)
	}
	wantStatus4(t, "SEQUENCE after the lease expired", c.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}), nfs4.ErrBadsession)
	c2 := e.v4(rootCred())
	c2.mount()
	res := c2.call(&nfs4.PutfhArgs{Object: fh}, readOp(sid))
	if res.Status != nfs4.ErrExpired && res.Status != nfs4.ErrBadStateid {
		t.Fatalf("READ with an expired client's stateid: %v", res.Status)
	}
}

// TestV4SlotReplay: a retry of a slot's last request (same sequence ID) whose reply
// was cached (sa_cachethis) is answered from the cache without running again: a
// REMOVE retried answers NFS4_OK although the file is gone. Without sa_cachethis a
// retry is NFS4ERR_RETRY_UNCACHED_REP; a sequence ID that skips ahead
// NFS4ERR_SEQ_MISORDERED.
func TestV4SlotReplay(t *testing.T) {
	e := newEnv(t, Options{})
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(e.dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	seq := c.sequenceArgs(true)
	ops := []nfs4.OpArgs{seq, &nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("a")}}
	first := c.rawMust(ops...)
	wantStatus4(t, "REMOVE", first, nfs4.OK)
	again := c.rawMust(ops...)
	wantStatus4(t, "REMOVE retried", again, nfs4.OK)
	if a, b := first.Results[2].(*nfs4.CinfoRes).Cinfo, again.Results[2].(*nfs4.CinfoRes).Cinfo; a != b {
		t.Fatalf("retry's change_info %+v, original's %+v", b, a)
	}
	// Executed again, it would fail: the cache answered.
	wantStatus4(t, "REMOVE anew", c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("a")}), nfs4.ErrNoent)

	seq = c.sequenceArgs(false)
	ops = []nfs4.OpArgs{seq, &nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("b")}}
	wantStatus4(t, "REMOVE uncached", c.rawMust(ops...), nfs4.OK)
	wantStatus4(t, "REMOVE uncached, retried", c.rawMust(ops...), nfs4.ErrRetryUncachedRep)
	skip := c.sequenceArgs(false)
	skip.SequenceID += 5
	wantStatus4(t, "SEQUENCE skipping ahead", c.rawMust(skip), nfs4.ErrSeqMisordered)
	wantStatus4(t, "SEQUENCE of a slot beyond the table", c.rawMust(&nfs4.SequenceArgs{SessionID: c.sid, SlotID: 1 << 20, SequenceID: 1}), nfs4.ErrBadslot)
}

// TestV4UncachedRetryAnswersSequence: a retry of a slot's last request whose reply
// was not cached (sa_cachethis FALSE) has its SEQUENCE answered from the slot, NFS4_OK
// with the slot's values, as knfsd does: sa_cachethis asks for the results of the
// operations after SEQUENCE to be cached (RFC 8881 §2.10.6.1.3). A solo SEQUENCE
// retried (a Linux client's lease renewal is one) is therefore NFS4_OK; in a longer
// COMPOUND, the operation after SEQUENCE is NFS4ERR_RETRY_UNCACHED_REP, and nothing
// runs again.
func TestV4UncachedRetryAnswersSequence(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	solo := c.sequenceArgs(false)
	first := c.rawMust(solo)
	wantStatus4(t, "SEQUENCE", first, nfs4.OK)
	again := c.rawMust(solo)
	wantStatus4(t, "SEQUENCE retried", again, nfs4.OK)
	if len(again.Results) != 1 || *again.Results[0].(*nfs4.SequenceRes) != *first.Results[0].(*nfs4.SequenceRes) {
		t.Fatalf("SEQUENCE retried: %+v, want the original's %+v", again.Results, first.Results)
	}

	dir := c.lookupFH(e.exportComponents()...)
	ops := []nfs4.OpArgs{c.sequenceArgs(false), &nfs4.PutfhArgs{Object: dir},
		&nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("d")}}
	wantStatus4(t, "CREATE", c.rawMust(ops...), nfs4.OK)
	if err := os.Remove(filepath.Join(e.dir, "d")); err != nil {
		t.Fatal(err)
	}
	res := c.rawMust(ops...)
	wantStatus4(t, "CREATE retried", res, nfs4.ErrRetryUncachedRep)
	if len(res.Results) != 2 || res.Results[0].Result() != nfs4.OK || res.Results[1].Op() != nfs4.OpPutfh {
		t.Fatalf("CREATE retried: results %v, want SEQUENCE NFS4_OK, then PUTFH NFS4ERR_RETRY_UNCACHED_REP", opResults(res))
	}
	if _, err := os.Stat(filepath.Join(e.dir, "d")); !os.IsNotExist(err) {
		t.Fatalf("the retry ran CREATE again: %v", err)
	}
	// The slot moves on.
	wantStatus4(t, "next request", c.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}), nfs4.OK)
}

// opResults lists a COMPOUND's results as operation and status.
func opResults(res *nfs4.CompoundRes) []string {
	var s []string
	for _, r := range res.Results {
		s = append(s, r.Op().String()+" "+r.Result().String())
	}
	return s
}

// TestV4SequenceErrorLeavesSlotAlone: a COMPOUND with more operations than the
// session's ca_maxoperations fails in SEQUENCE with NFS4ERR_TOO_MANY_OPS, and a
// SEQUENCE that fails changes nothing of its slot (RFC 8881 §18.46.3): the client's
// next request with the same sequence ID is a new request, not a retry of the one
// refused.
func TestV4SequenceErrorLeavesSlotAlone(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	ops := []nfs4.OpArgs{c.sequenceArgs(true)}
	for range int(defaultFore.MaxOperations) {
		ops = append(ops, &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh})
	}
	wantStatus4(t, "COMPOUND of too many operations", c.rawMust(ops...), nfs4.ErrTooManyOps)
	c.seq-- // the slot's sequence ID did not advance
	res := c.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	if res.Status != nfs4.OK || len(res.Results) != 3 {
		t.Fatalf("next request with the same sequence ID: %v with %d results, want NFS4_OK with 3: the refused SEQUENCE took the slot",
			res.Status, len(res.Results))
	}
}

// TestV4AbandonedCompoundRetryUncached: a COMPOUND with sa_cachethis whose second
// READ waits for the connection's memory budget, which the first READ of the same
// COMPOUND holds, is abandoned when its connection closes. Its slot is released
// without a reply to cache, so the client's retry on a new connection (what a client
// does after a disconnect) gets NFS4ERR_RETRY_UNCACHED_REP (RFC 8881 §2.10.6.1), not
// an empty COMPOUND4res that does not decode.
func TestV4AbandonedCompoundRetryUncached(t *testing.T) {
	dir := t.TempDir()
	srv, err := New(Options{Root: dir, StateDir: t.TempDir(), MaxIO: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rs := oncrpc.NewServer(&oncrpc.ServerOptions{ConnBudget: 100 << 10})
	srv.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rs.Shutdown(ctx)
		cancel()
		l.Close()
		srv.Close()
	})
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	dial := func() oncrpc.RoundTripper {
		tr, err := oncrpc.DialTCP(context.Background(), l.Addr().String(), &oncrpc.TCPOptions{MaxRecord: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	tr1 := dial()
	c := newV4Client(t, tr1, rootCred())
	c.mount()
	d := c.lookupFH(strings.Split(strings.Trim(srv.ExportPath(), "/"), "/")...)
	fh, sid := c.openFile(d, openArgs4("o", "f", nfs4.ShareAccessRead, false))

	// Two READs each taking a 64 KiB buffer of the 100 KiB budget: the second waits
	// for the first's, which this very COMPOUND holds, until the connection closes.
	ops := []nfs4.OpArgs{c.sequenceArgs(true), &nfs4.PutfhArgs{Object: fh},
		&nfs4.ReadArgs{Stateid: sid, Offset: 0, Count: 10},
		&nfs4.ReadArgs{Stateid: sid, Offset: 64 << 10, Count: 10}}
	done := make(chan error, 1)
	go func() {
		_, err := c.raw(nfs4.MinorVersion, ops...)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the COMPOUND did not wait for the budget: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	tr1.Close()
	<-done

	c2 := newV4Client(t, dial(), rootCred())
	c2.sid, c2.slot = c.sid, c.slot
	for i := 0; ; i++ {
		res, err := c2.raw(nfs4.MinorVersion, ops...)
		if err != nil {
			t.Fatalf("retry of the abandoned request on a new connection: %v", err)
		}
		if res.Status == nfs4.ErrDelay && i < 50 { // the server has not dropped it yet
			time.Sleep(20 * time.Millisecond)
			continue
		}
		wantStatus4(t, "retry of the abandoned request", res, nfs4.ErrRetryUncachedRep)
		return
	}
}

// v4From returns an NFSv4.1 client of e connecting from ip (privileged: from a port
// below 1024).
func (e *exportsEnv) v4From(ip string, privileged bool, cred *oncrpc.AuthSysParams) *v4client {
	c3 := e.dialFrom(ip, privileged, cred)
	return newV4Client(e.t, c3.tr, cred)
}

// TestV4ExportsAccess: NFSv4.1 obeys each export's client list and options as NFSv3
// does. The pseudo file system shows a client the exports it is admitted to only; a
// handle of another is NFS4ERR_STALE; a client no export admits cannot even start at
// the root (NFS4ERR_ACCESS); a "secure" export refuses an unprivileged port
// (NFS4ERR_PERM); "ro" makes every change NFS4ERR_ROFS; root_squash makes root the
// anonymous user, for new files' owner and for permission checks.
func TestV4ExportsAccess(t *testing.T) {
	table := "%D/pub 127.0.0.1(rw,no_root_squash,insecure)\n" +
		"%D/ro 127.0.0.1(ro,no_root_squash,insecure)\n" +
		"%D/other 10.9.9.9(rw)\n" +
		"%D/sq 127.0.0.1(rw,root_squash,insecure)\n" +
		"%D/sec 127.0.0.1(rw,no_root_squash)\n"
	e, dir := newExportsEnv(t, table, func(dir string) {
		for _, d := range []string{"pub", "ro", "other", "sq", "sec"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, d), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, d, "rootfile"), []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	comps := strings.Split(strings.Trim(dir, "/"), "/")
	c := e.v4From("127.0.0.1", false, rootCred())
	c.mount()
	parent := c.lookupFH(comps...)
	names := c.readdirAll(parent, 8192)
	slices.Sort(names)
	if !slices.Equal(names, []string{"pub", "ro", "sec", "sq"}) {
		t.Fatalf("pseudo directory lists %q", names)
	}
	wantStatus4(t, "LOOKUP of an export not for this client", c.call(append(putroot(comps...), &nfs4.LookupArgs{ObjName: []byte("other")})...), nfs4.ErrNoent)
	var otherRoot nfs4.FH
	for _, s := range e.x.Servers() {
		if strings.HasSuffix(s.ExportPath(), "/other") {
			otherRoot = nfs4.FH(s.RootHandle())
		}
	}
	wantStatus4(t, "PUTFH of an export not for this client", c.call(&nfs4.PutfhArgs{Object: otherRoot}), nfs4.ErrStale)
	wantStatus4(t, "LOOKUP into a secure export from an unprivileged port", c.call(append(putroot(comps...), &nfs4.LookupArgs{ObjName: []byte("sec")})...), nfs4.ErrPerm)

	// Read-only.
	ro := c.lookupFH(append(comps, "ro")...)
	wantStatus4(t, "OPEN create on ro", c.call(&nfs4.PutfhArgs{Object: ro}, openArgs4("o", "new", nfs4.ShareAccessBoth, true)), nfs4.ErrRofs)
	wantStatus4(t, "OPEN for writing on ro", c.call(&nfs4.PutfhArgs{Object: ro}, openArgs4("o", "rootfile", nfs4.ShareAccessWrite, false)), nfs4.ErrRofs)
	wantStatus4(t, "REMOVE on ro", c.call(&nfs4.PutfhArgs{Object: ro}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("rootfile")}), nfs4.ErrRofs)
	wantStatus4(t, "CREATE on ro", c.call(&nfs4.PutfhArgs{Object: ro}, &nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("d")}), nfs4.ErrRofs)
	rofile, _ := c.openFile(ro, openArgs4("o", "rootfile", nfs4.ShareAccessRead, false))
	wantStatus4(t, "SETATTR on ro", c.call(&nfs4.PutfhArgs{Object: rofile}, &nfs4.SetattrArgs{Mask: nfs4.NewBitmap(nfs4.AttrMode), Attr: nfs4.Fattr{Mode: 0o600}}), nfs4.ErrRofs)

	// root_squash: root acts as 65534.
	sq := c.lookupFH(append(comps, "sq")...)
	nf, _ := c.openFile(sq, openArgs4("o", "new", nfs4.ShareAccessBoth, true))
	if a := c.getattr(nf, nfs4.AttrOwner, nfs4.AttrOwnerGroup); string(a.Owner) != "65534" || string(a.OwnerGroup) != "65534" {
		t.Fatalf("file root made under root_squash: owner %q group %q", a.Owner, a.OwnerGroup)
	}
	wantStatus4(t, "OPEN for writing a root-owned 0644 file under root_squash",
		c.call(&nfs4.PutfhArgs{Object: sq}, openArgs4("o", "rootfile", nfs4.ShareAccessWrite, false)), nfs4.ErrAccess)

	// A client no export admits.
	c2 := e.v4From("127.0.0.2", false, rootCred())
	c2.mount()
	wantStatus4(t, "PUTROOTFH by a client no export admits", c2.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}), nfs4.ErrAccess)
	pub := c.lookupFH(append(comps, "pub")...)
	wantStatus4(t, "PUTFH by a client no export admits", c2.call(&nfs4.PutfhArgs{Object: pub}), nfs4.ErrStale)
}

// TestV4PutfhOfHiddenPseudoDirectory: a pseudo directory's handle is a hash of its
// path, which anyone can compute. PUTFH of the handle of one that leads only to
// exports the client is not admitted to is NFS4ERR_STALE, as for a directory that
// does not exist (LOOKUP of its name is NFS4ERR_NOENT), rather than a way into the
// part of the pseudo file system the client is not shown; the handle of a pseudo
// directory on the way to an admitted export still works.
func TestV4PutfhOfHiddenPseudoDirectory(t *testing.T) {
	table := "%D/pub 127.0.0.1(rw,insecure)\n%D/hidden/x 10.9.9.9(rw)\n"
	e, dir := newExportsEnv(t, table, func(dir string) {
		for _, d := range []string{"pub", "hidden", "hidden/x"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
				t.Fatal(err)
			}
		}
	})
	c := e.v4From("127.0.0.1", false, rootCred())
	c.mount()
	comps := strings.Split(strings.Trim(dir, "/"), "/")
	wantStatus4(t, "LOOKUP of the hidden directory", c.call(append(putroot(comps...), &nfs4.LookupArgs{ObjName: []byte("hidden")})...), nfs4.ErrNoent)
	hidden := (&pseudoNode{id: pathID(filepath.Join(dir, "hidden"))}).handle(nil)
	wantStatus4(t, "PUTFH of the hidden directory's handle", c.call(&nfs4.PutfhArgs{Object: hidden},
		&nfs4.GetattrArgs{AttrRequest: nfs4.NewBitmap(nfs4.AttrType)}), nfs4.ErrStale)
	nosuch := (&pseudoNode{id: pathID(filepath.Join(dir, "nosuch"))}).handle(nil)
	wantStatus4(t, "PUTFH of a pseudo handle of no directory", c.call(&nfs4.PutfhArgs{Object: nosuch}), nfs4.ErrStale)
	parent := c.lookupFH(comps...)
	c.must(&nfs4.PutfhArgs{Object: parent}, &nfs4.LookupArgs{ObjName: []byte("pub")})
}

// TestV4ExportsReload: Load changes what NFSv4.1 sees from the next COMPOUND on: a
// removed export leaves the pseudo file system and its handles go stale; an added one
// appears.
func TestV4ExportsReload(t *testing.T) {
	e, dir := newExportsEnv(t, "%D/a 127.0.0.1(rw,insecure)\n%D/b 127.0.0.1(rw,insecure)\n", func(dir string) {
		for _, d := range []string{"a", "b", "c"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
				t.Fatal(err)
			}
		}
	})
	comps := strings.Split(strings.Trim(dir, "/"), "/")
	c := e.v4From("127.0.0.1", false, rootCred())
	c.mount()
	parent := c.lookupFH(comps...)
	b := c.lookupFH(append(comps, "b")...)
	if names := c.readdirAll(parent, 8192); !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("before: %q", names)
	}
	tab, err := exports.Parse("exports", []byte(strings.ReplaceAll("%D/a 127.0.0.1(rw,insecure)\n%D/c 127.0.0.1(rw,insecure)\n", "%D", dir)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.x.Load(tab); err != nil {
		t.Fatal(err)
	}
	if names := c.readdirAll(parent, 8192); !slices.Equal(names, []string{"a", "c"}) {
		t.Fatalf("after: %q", names)
	}
	wantStatus4(t, "PUTFH of a removed export's root", c.call(&nfs4.PutfhArgs{Object: b}), nfs4.ErrStale)
	c.lookupFH(append(comps, "c")...)
}

// TestV4GraceAfterRestart: a server restarted with its state directory knows its
// previous clients: during the grace period a new OPEN is NFS4ERR_GRACE while a
// reclaim (CLAIM_PREVIOUS) succeeds, and once every previous client sent
// RECLAIM_COMPLETE the grace period ends.
func TestV4GraceAfterRestart(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	fh, _ := c.openFile(dir, openArgs4("o", "f", nfs4.ShareAccessBoth, true))

	e.stop()
	e.start(Options{Root: e.dir, StateDir: e.state, NFS4: NFS4Options{State: nfs4state.Options{GraceTime: time.Hour}}})
	c2 := e.v4(rootCred())
	c2.owner = c.owner // the same client, after the server's restart
	c2.exchangeID()
	c2.createSession()
	wantStatus4(t, "OPEN during grace", c2.call(&nfs4.PutfhArgs{Object: dir}, openArgs4("o", "g", nfs4.ShareAccessBoth, true)), nfs4.ErrGrace)
	reclaim := &nfs4.OpenArgs{ShareAccess: nfs4.ShareAccessBoth, Owner: nfs4.StateOwner4{Owner: []byte("o")},
		Claim: nfs4.OpenClaim4{Claim: nfs4.ClaimPrevious, DelegateType: nfs4.DelegateNone}}
	res := c2.must(&nfs4.PutfhArgs{Object: fh}, reclaim)
	sid := res.Results[2].(*nfs4.OpenRes).Stateid
	c2.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.WriteArgs{Stateid: sid, Data: []byte("reclaimed")})
	c2.must(&nfs4.ReclaimCompleteArgs{})
	wantStatus4(t, "RECLAIM_COMPLETE again", c2.call(&nfs4.ReclaimCompleteArgs{}), nfs4.ErrCompleteAlready)
	wantStatus4(t, "a reclaim after RECLAIM_COMPLETE", c2.call(&nfs4.PutfhArgs{Object: fh}, reclaim), nfs4.ErrNoGrace)
	c2.openFile(dir, openArgs4("o", "g", nfs4.ShareAccessBoth, true))
}

// TestV4OpenCreateDuringGraceCreatesNothing: during the grace period a new OPEN is
// NFS4ERR_GRACE (RFC 8881 §8.4.2.1), and an OPEN4_CREATE refused so has no effect:
// it creates no file, and truncates none with the size of its createattrs.
func TestV4OpenCreateDuringGraceCreatesNothing(t *testing.T) {
	e := newEnv(t, Options{})
	if err := os.WriteFile(filepath.Join(e.dir, "old"), []byte("precious data"), 0o666); err != nil {
		t.Fatal(err)
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	c.openFile(dir, openArgs4("o", "f", nfs4.ShareAccessBoth, true))
	e.stop()
	e.start(Options{Root: e.dir, StateDir: e.state, NFS4: NFS4Options{State: nfs4state.Options{GraceTime: time.Hour}}})
	c2 := e.v4(rootCred())
	c2.mount()
	wantStatus4(t, "OPEN4_CREATE of a new name during grace",
		c2.call(&nfs4.PutfhArgs{Object: dir}, openArgs4("o2", "new", nfs4.ShareAccessBoth, true)), nfs4.ErrGrace)
	if _, err := os.Lstat(filepath.Join(e.dir, "new")); err == nil {
		t.Errorf("an OPEN refused with NFS4ERR_GRACE created the file")
	}
	trunc := openArgs4("o2", "old", nfs4.ShareAccessBoth, true)
	trunc.How.Mask = nfs4.NewBitmap(nfs4.AttrSize)
	trunc.How.Attrs = nfs4.Fattr{Size: 0}
	wantStatus4(t, "truncating OPEN4_CREATE during grace", c2.call(&nfs4.PutfhArgs{Object: dir}, trunc), nfs4.ErrGrace)
	if got, _ := os.ReadFile(filepath.Join(e.dir, "old")); string(got) != "precious data" {
		t.Errorf("an OPEN refused with NFS4ERR_GRACE truncated the file: %q", got)
	}
}

// TestV4NoGraceAfterCleanUnmount: a client that destroyed its client ID (a Linux
// umount) is not waited for after a restart: a new client opens at once.
func TestV4NoGraceAfterCleanUnmount(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	wantStatus4(t, "DESTROY_SESSION", c.rawMust(&nfs4.DestroySessionArgs{SessionID: c.sid}), nfs4.OK)
	wantStatus4(t, "DESTROY_CLIENTID", c.rawMust(&nfs4.DestroyClientIDArgs{ClientID: c.cid}), nfs4.OK)
	e.stop()
	e.start(Options{Root: e.dir, StateDir: e.state, NFS4: NFS4Options{State: nfs4state.Options{GraceTime: time.Hour}}})
	c2 := e.v4(rootCred())
	c2.mount()
	dir := c2.lookupFH(e.exportComponents()...)
	c2.openFile(dir, openArgs4("o", "f", nfs4.ShareAccessBoth, true))
}

// TestV4IONonRegularFile: READ, WRITE and COMMIT of something other than a regular
// file are NFS4ERR_ISDIR for a directory, NFS4ERR_SYMLINK for a symbolic link and
// NFS4ERR_WRONG_TYPE for anything else, here a FIFO (RFC 8881 §18.22.3, §18.32.3,
// §18.3.3), as OPEN of a name for one is; never NFS4ERR_INVAL, which would blame the
// arguments.
func TestV4IONonRegularFile(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	d, l, p := v4SpecialObjects(t, c, e)
	anon := nfs4.Stateid4{}
	for _, tc := range []struct {
		what string
		fh   nfs4.FH
		name string // its name in d, for OPEN
		want nfs4.Status
	}{
		{"directory", d, "", nfs4.ErrIsdir},
		{"symbolic link", l, "l", nfs4.ErrSymlink},
		{"FIFO", p, "p", nfs4.ErrWrongType},
	} {
		for _, op := range []nfs4.OpArgs{
			&nfs4.ReadArgs{Stateid: anon, Count: 10},
			&nfs4.WriteArgs{Stateid: anon, Stable: nfs4.FileSync4, Data: []byte("x")},
			&nfs4.CommitArgs{},
		} {
			if res := c.call(&nfs4.PutfhArgs{Object: tc.fh}, op); res.Status != tc.want {
				t.Errorf("%v of a %s: %v, want %v", op.Op(), tc.what, res.Status, tc.want)
			}
		}
		if tc.name != "" {
			res := c.call(&nfs4.PutfhArgs{Object: d}, openArgs4("o", tc.name, nfs4.ShareAccessRead, false))
			if res.Status != tc.want {
				t.Errorf("OPEN of a %s: %v, want %v", tc.what, res.Status, tc.want)
			}
		}
	}
}

// TestV4ReaddirMaxcountTooSmall: maxcount bounds the whole READDIR4resok, XDR
// included (RFC 8881 §18.23.3), and an empty one takes 16 bytes (cookieverf, the end
// of the entry list, eof). A maxcount below that cannot be honoured, in an export or
// in the pseudo file system: the answer is NFS4ERR_TOOSMALL (pynfs RDDR7, RDDR8),
// not a reply larger than maxcount. 16 bytes list an empty directory (or the end of
// one, past its last cookie), but not one with entries.
func TestV4ReaddirMaxcountTooSmall(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	empty := getfh(t, c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("empty")},
		&nfs4.NoArgs{OpNum: nfs4.OpGetfh}))
	root := &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}
	var last uint64 // the pseudo root's last cookie
	for _, en := range c.must(root, &nfs4.ReaddirArgs{MaxCount: 8192}).Results[2].(*nfs4.ReaddirRes).Entries {
		last = max(last, en.Cookie)
	}
	for _, tc := range []struct {
		what     string
		fh       nfs4.OpArgs
		cookie   uint64
		maxcount uint32
		want     nfs4.Status
	}{
		{"an empty directory", &nfs4.PutfhArgs{Object: empty}, 0, 0, nfs4.ErrToosmall},
		{"an empty directory", &nfs4.PutfhArgs{Object: empty}, 0, 15, nfs4.ErrToosmall},
		{"an empty directory", &nfs4.PutfhArgs{Object: empty}, 0, 16, nfs4.OK},
		{"the export root", &nfs4.PutfhArgs{Object: dir}, 0, 16, nfs4.ErrToosmall},
		{"the pseudo root", root, 0, 15, nfs4.ErrToosmall},
		{"the pseudo root", root, 0, 16, nfs4.ErrToosmall},
		{"the pseudo root past its last entry", root, last, 15, nfs4.ErrToosmall},
		{"the pseudo root past its last entry", root, last, 16, nfs4.OK},
	} {
		res := c.call(tc.fh, &nfs4.ReaddirArgs{Cookie: tc.cookie, MaxCount: tc.maxcount})
		if res.Status != tc.want {
			t.Errorf("READDIR of %s with maxcount %d: %v, want %v", tc.what, tc.maxcount, res.Status, tc.want)
			continue
		}
		if r := res.Results[len(res.Results)-1].(*nfs4.ReaddirRes); res.Status == nfs4.OK && (len(r.Entries) != 0 || !r.EOF) {
			t.Errorf("READDIR of %s with maxcount %d: %d entries, eof %v", tc.what, tc.maxcount, len(r.Entries), r.EOF)
		}
	}
}

// TestV4PseudoReaddirPaging: a pseudo directory listed a few entries per READDIR
// gives every export once, following the cookies.
func TestV4PseudoReaddirPaging(t *testing.T) {
	var table strings.Builder
	var want []string
	for i := range 30 {
		name := fmt.Sprintf("export-%02d", i)
		want = append(want, name)
		fmt.Fprintf(&table, "%%D/%s 127.0.0.1(rw,insecure,fsid=%d)\n", name, i+1)
	}
	e, dir := newExportsEnv(t, table.String(), func(dir string) {
		for _, n := range want {
			if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	})
	c := e.v4From("127.0.0.1", false, rootCred())
	c.mount()
	parent := c.lookupFH(strings.Split(strings.Trim(dir, "/"), "/")...)
	names := c.readdirAll(parent, 700)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("paged pseudo READDIR: %q", names)
	}
}
