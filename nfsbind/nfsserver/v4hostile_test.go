//go:build linux

package nfsserver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestHostileV4Bounded: a client that claims huge operation counts, sends garbage,
// asks for huge replies or opens sessions, clients and state without end gets
// specific errors, and the server's tables stay within their bounds.
func TestHostileV4Bounded(t *testing.T) {
	limits := nfs4state.Options{MaxClients: 8, MaxSessionsPerClient: 2, MaxStateOwnersPerClient: 16, MaxOperations: 16}
	e := newEnv(t, Options{NFS4: NFS4Options{State: limits}})
	c := e.v4(rootCred())
	root := &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}

	// Huge operation counts: one result, whatever the count.
	many := make([]nfs4.OpArgs, 60000)
	for i := range many {
		many[i] = root
	}
	res := c.rawMust(many...)
	if res.Status != nfs4.ErrOpNotInSession || len(res.Results) != 1 {
		t.Fatalf("60000 operations outside a session: %v with %d results", res.Status, len(res.Results))
	}
	c.mount()
	res = c.call(many...)
	if res.Status != nfs4.ErrTooManyOps || len(res.Results) != 1 {
		t.Fatalf("60000 operations in a session: %v with %d results", res.Status, len(res.Results))
	}
	c.seq-- // a SEQUENCE that fails leaves the slot alone
	if _, err := c.raw(1, &rawOp{num: uint32(nfs4.OpSequence), args: make([]byte, 3)}); !isAccept(err, oncrpc.GarbageArgs) && err != nil {
		t.Fatalf("truncated SEQUENCE: %v", err)
	}

	// Garbage after a valid SEQUENCE: each is answered, none panics.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		junk := make([]byte, rng.IntN(200))
		for j := range junk {
			junk[j] = byte(rng.UintN(256))
		}
		// An operation number near the ones defined, then junk arguments.
		op := &rawOp{num: uint32(rng.IntN(62)), args: junk[:len(junk)&^3]}
		res, err := c.raw(1, c.sequenceArgs(false), op)
		if err != nil && !isAccept(err, oncrpc.GarbageArgs) {
			t.Fatalf("garbage %d: %v", i, err)
		}
		if err == nil && res.Status == nfs4.OK && len(res.Results) != 2 {
			t.Fatalf("garbage %d: OK with %d results", i, len(res.Results))
		}
		if err != nil {
			c.seq-- // the slot was not used
		}
	}

	// A reply larger than the session allows: NFS4ERR_REP_TOO_BIG on the operation
	// that crossed the limit, and the reply stays within it.
	small := newV4Client(t, c.rpc.Transport(), rootCred())
	small.exchangeID()
	res = small.rawMust(&nfs4.CreateSessionArgs{ClientID: small.cid, Sequence: small.csseq,
		ForeChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 65536, MaxResponseSize: 1024, MaxResponseSizeCached: 512, MaxOperations: 16, MaxRequests: 1},
		BackChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}})
	wantStatus4(t, "CREATE_SESSION with a 1 KiB reply limit", res, nfs4.OK)
	small.sid = res.Results[0].(*nfs4.CreateSessionRes).SessionID
	ops := []nfs4.OpArgs{root}
	readable := nfs4.SupportedAttrs().AndNot(nfs4.WriteOnlyAttrs())
	for range 12 {
		ops = append(ops, &nfs4.GetattrArgs{AttrRequest: readable})
	}
	res = small.call(ops...)
	if res.Status != nfs4.ErrRepTooBig || len(res.Results) < 3 {
		t.Fatalf("GETATTRs past 1 KiB: %v with %d results", res.Status, len(res.Results))
	}
	if got := compoundSize(res); got > 1024 {
		t.Fatalf("reply of %d bytes past the 1 KiB limit", got)
	}
	res = small.call(root, &nfs4.LookupArgs{ObjName: make([]byte, 255)}, &nfs4.LookupArgs{ObjName: make([]byte, 255)},
		&nfs4.LookupArgs{ObjName: make([]byte, 255)}, &nfs4.LookupArgs{ObjName: make([]byte, 255)})
	if res.Status != nfs4.OK && res.Status != nfs4.ErrNoent && res.Status != nfs4.ErrBadname {
		t.Fatalf("a request within the 64 KiB limit: %v", res.Status)
	}
	// A LOOKUP carrying a 70000-byte name: past the session's 64 KiB request limit,
	// refused at SEQUENCE before the name is looked at.
	res, err := small.raw(1, append([]nfs4.OpArgs{small.sequenceArgs(false), &rawOp{num: uint32(nfs4.OpPutrootfh)}},
		&rawOp{num: uint32(nfs4.OpLookup), args: append(xdr.AppendUint32(nil, 70000), make([]byte, 70000)...)})...)
	if err != nil || res.Status != nfs4.ErrReqTooBig || len(res.Results) != 1 {
		t.Fatalf("a request past the session's request limit: %v %+v", err, res)
	}
	small.seq-- // a SEQUENCE that fails leaves the slot alone
	seq := small.sequenceArgs(true)
	wantStatus4(t, "a cached reply past 512 bytes", small.rawMust(append([]nfs4.OpArgs{seq}, ops[:4]...)...), nfs4.ErrRepTooBigToCache)

	// Sessions, clients and open-owners without end: refused at the bounds. mount
	// made one session; one more fits.
	sessionRefused := 0
	for range 5 {
		r := c.rawMust(&nfs4.CreateSessionArgs{ClientID: c.cid, Sequence: c.csseq, ForeChanAttrs: defaultFore,
			BackChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}})
		if r.Status == nfs4.ErrDelay {
			sessionRefused++
			continue
		}
		wantStatus4(t, "CREATE_SESSION", r, nfs4.OK)
		c.csseq++
	}
	if sessionRefused != 4 {
		t.Fatalf("%d of 5 more sessions refused, want 4 (bound %d)", sessionRefused, limits.MaxSessionsPerClient)
	}
	delayed := 0
	for i := range 20 {
		x := newV4Client(t, c.rpc.Transport(), rootCred())
		x.owner = fmt.Appendf(nil, "flood-%d", i)
		r := x.rawMust(&nfs4.ExchangeIDArgs{ClientOwner: nfs4.ClientOwner4{OwnerID: x.owner}})
		if r.Status == nfs4.ErrDelay {
			delayed++
			continue
		}
		wantStatus4(t, "EXCHANGE_ID", r, nfs4.OK)
	}
	// Unconfirmed records make room for new ones (or the table is full: DELAY); the
	// confirmed clients stay.
	st := e.srv.v4.state.Stats()
	if st.Clients > limits.MaxClients || st.ConfirmedClients != 2 || st.Sessions > limits.MaxClients*limits.MaxSessionsPerClient {
		t.Fatalf("after flooding (%d refused): %+v", delayed, st)
	}
	dir := c.lookupFH(e.exportComponents()...)
	refused := false
	for i := range 40 {
		r := c.call(&nfs4.PutfhArgs{Object: dir}, openArgs4(fmt.Sprintf("owner-%d", i), "f", nfs4.ShareAccessRead, true))
		if r.Status == nfs4.ErrDelay || r.Status == nfs4.ErrResource {
			refused = true
			break
		}
		wantStatus4(t, "OPEN", r, nfs4.OK)
	}
	if !refused {
		t.Fatalf("40 open-owners accepted past the bound of %d", limits.MaxStateOwnersPerClient)
	}
}

// compoundSize is the size of res encoded as the server sent it.
func compoundSize(res *nfs4.CompoundRes) int {
	var e xdr.Encoder
	res.EncodeXDR(&e)
	return e.Pos()
}

// TestHostileV4ManyReads: a COMPOUND of many small READs holds at most two MaxIO of
// READ buffers; the READ past that is NFS4ERR_REP_TOO_BIG.
func TestHostileV4ManyReads(t *testing.T) {
	e := newEnv(t, Options{MaxIO: 128 << 10})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	fh, sid := c.openFile(dir, openArgs4("o", "f", nfs4.ShareAccessBoth, true))
	c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.WriteArgs{Stateid: sid, Data: []byte("data")})
	ops := []nfs4.OpArgs{&nfs4.PutfhArgs{Object: fh}}
	for range 10 {
		ops = append(ops, &nfs4.ReadArgs{Stateid: sid, Count: 1})
	}
	res := c.call(ops...)
	// 64 KiB buffers: four fit in 256 KiB, the fifth READ (result 6) is refused.
	if res.Status != nfs4.ErrRepTooBig || len(res.Results) != 7 {
		t.Fatalf("ten READs: %v with %d results", res.Status, len(res.Results))
	}
}
