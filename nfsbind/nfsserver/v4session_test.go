//go:build linux

package nfsserver

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestV4DestroyOwnSessionMustBeLast: DESTROY_SESSION of the session the COMPOUND's
// SEQUENCE names must be the COMPOUND's last operation (RFC 8881 §18.37.3); one
// followed by more operations is refused with NFS4ERR_NOT_ONLY_OP, as knfsd does, and
// leaves the session alone. Last, it destroys the session.
func TestV4DestroyOwnSessionMustBeLast(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	destroy := &nfs4.DestroySessionArgs{SessionID: c.sid}
	res := c.call(destroy, &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh})
	wantStatus4(t, "DESTROY_SESSION of its own session, then PUTROOTFH", res, nfs4.ErrNotOnlyOp)
	if len(res.Results) != 2 {
		t.Fatalf("%d results, want 2: the operation after the refused DESTROY_SESSION ran", len(res.Results))
	}
	c.must(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh})
	c.must(destroy)
	wantStatus4(t, "SEQUENCE after DESTROY_SESSION", c.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}), nfs4.ErrBadsession)

	// DESTROY_SESSION of another session of the client need not be last.
	c.createSession()
	other := c.sid
	c.createSession()
	res = c.call(&nfs4.DestroySessionArgs{SessionID: other}, &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh})
	wantStatus4(t, "DESTROY_SESSION of another session, then PUTROOTFH", res, nfs4.OK)
}

// TestV4ReclaimCompleteOneFS: RECLAIM_COMPLETE with rca_one_fs TRUE applies to the
// file system of the current file handle (RFC 8881 §18.51.3): without one it is
// NFS4ERR_NOFILEHANDLE, as knfsd answers; with one it succeeds and, changing nothing,
// leaves the client's global RECLAIM_COMPLETE to do.
func TestV4ReclaimCompleteOneFS(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.exchangeID()
	c.createSession()
	wantStatus4(t, "RECLAIM_COMPLETE(one_fs) without a file handle", c.call(&nfs4.ReclaimCompleteArgs{OneFS: true}), nfs4.ErrNofilehandle)
	c.must(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}, &nfs4.ReclaimCompleteArgs{OneFS: true})
	c.must(&nfs4.ReclaimCompleteArgs{})
	wantStatus4(t, "RECLAIM_COMPLETE twice", c.call(&nfs4.ReclaimCompleteArgs{}), nfs4.ErrCompleteAlready)
}

// createSessionFore creates a new session of the client with fore channel attributes
// fore and makes it the client's session; it returns the attributes granted.
func (c *v4client) createSessionFore(fore nfs4.ChannelAttrs4) nfs4.ChannelAttrs4 {
	c.t.Helper()
	res := c.rawMust(&nfs4.CreateSessionArgs{ClientID: c.cid, Sequence: c.csseq, ForeChanAttrs: fore,
		BackChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1},
		CBProgram:     0x40000000, SecParms: c.callbackSec()})
	wantStatus4(c.t, "CREATE_SESSION", res, nfs4.OK)
	r := res.Results[0].(*nfs4.CreateSessionRes)
	c.sid, c.seq, c.slot = r.SessionID, 0, 0
	c.csseq++
	return r.ForeChanAttrs
}

// TestV4ChannelSizesCountRPCHeaders: ca_maxrequestsize, ca_maxresponsesize and
// ca_maxresponsesize_cached bound the whole RPC message, its RPC header (credential
// and verifier included) with it, not the COMPOUND alone (RFC 8881 §18.36.3, "including
// the RPC headers"; knfsd counts them too). A COMPOUND whose arguments fit
// ca_maxrequestsize only without the call header is NFS4ERR_REQ_TOO_BIG; one whose
// results fit ca_maxresponsesize only without the reply header NFS4ERR_REP_TOO_BIG,
// and ca_maxresponsesize_cached with sa_cachethis NFS4ERR_REP_TOO_BIG_TO_CACHE. With
// room for the headers the same COMPOUND succeeds.
func TestV4ChannelSizesCountRPCHeaders(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	ops := append(putroot(), &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	repSize := compoundSize(c.must(ops...))
	var enc xdr.Encoder
	args := nfs4.CompoundArgs{Tag: []byte("test"), MinorVersion: nfs4.MinorVersion,
		Ops: append([]nfs4.OpArgs{&nfs4.SequenceArgs{}}, ops...)}
	args.EncodeXDR(&enc)
	reqSize := enc.Pos()
	// An RPC call header with an AUTH_SYS credential is at least 40 + 20 bytes, a reply
	// header at least 24: 8 bytes over the COMPOUND leave too little room for either.
	const short, room = 8, 512

	for _, tc := range []struct {
		name             string
		req, rep, cached int
		cacheThis        bool
		want             nfs4.Status
	}{
		{"request fits without its header", reqSize + short, repSize + room, repSize + room, false, nfs4.ErrReqTooBig},
		{"reply fits without its header", reqSize + room, repSize + short, repSize + short, false, nfs4.ErrRepTooBig},
		{"cached reply fits without its header", reqSize + room, repSize + room, repSize + short, true, nfs4.ErrRepTooBigToCache},
		{"room for the headers", reqSize + room, repSize + room, repSize + room, true, nfs4.OK},
	} {
		fore := c.createSessionFore(nfs4.ChannelAttrs4{MaxRequestSize: uint32(tc.req), MaxResponseSize: uint32(tc.rep),
			MaxResponseSizeCached: uint32(tc.cached), MaxOperations: 16, MaxRequests: 1})
		if fore.MaxRequestSize != uint32(tc.req) || fore.MaxResponseSize != uint32(tc.rep) || fore.MaxResponseSizeCached != uint32(tc.cached) {
			t.Fatalf("%s: granted %+v", tc.name, fore)
		}
		res := c.rawMust(append([]nfs4.OpArgs{c.sequenceArgs(tc.cacheThis)}, ops...)...)
		wantStatus4(t, tc.name, res, tc.want)
	}
}
