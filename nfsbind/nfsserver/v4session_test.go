//go:build linux

package nfsserver

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
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
