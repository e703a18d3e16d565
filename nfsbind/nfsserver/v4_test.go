//go:build linux

package nfsserver

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// v4 returns an NFSv4.1 client of e's server on a new TCP connection.
func (e *env) v4(cred *oncrpc.AuthSysParams) *v4client {
	e.t.Helper()
	tr, err := oncrpc.DialTCP(context.Background(), e.addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { tr.Close() })
	return newV4Client(e.t, tr, cred)
}

// exportComponents splits the export path of e into the components a client LOOKUPs
// from the pseudo root.
func (e *env) exportComponents() []string {
	return strings.Split(strings.Trim(e.srv.ExportPath(), "/"), "/")
}

// rawOp is an operation encoded as given: a number and argument bytes.
type rawOp struct {
	num  uint32
	args []byte
}

func (o *rawOp) Op() nfs4.OpNum                 { return nfs4.OpNum(o.num) }
func (o *rawOp) EncodeXDR(e *xdr.Encoder)       { e.FixedOpaque(o.args) }
func (o *rawOp) DecodeXDR(d *xdr.Decoder) error { return nil }

// TestV4PseudoRootLeadsToExport: after EXCHANGE_ID, CREATE_SESSION and
// RECLAIM_COMPLETE, PUTROOTFH gives a pseudo directory (its own fsid), LOOKUP of the
// export path's components leads to the export root, whose handle is the very handle
// NFSv3's MNT returns, and whose mounted_on_fileid is the pseudo directory above it;
// LOOKUPP goes back into the pseudo file system.
func TestV4PseudoRootLeadsToExport(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	root := c.lookupFH()
	ra := c.getattr(root, nfs4.AttrType, nfs4.AttrFSID, nfs4.AttrFileid, nfs4.AttrMode)
	if ra.Type != nfs4.NF4Dir || ra.FSID != (nfs4.FSID4{Minor: pseudoFSIDMinor}) || ra.Mode != 0o555 {
		t.Fatalf("pseudo root: type %v fsid %+v mode %o", ra.Type, ra.FSID, ra.Mode)
	}
	comps := e.exportComponents()
	fh := c.lookupFH(comps...)
	if !bytes.Equal(fh, e.root) {
		t.Fatalf("export root by LOOKUP %x, by MNT %x", fh, e.root)
	}
	ea := c.getattr(fh, nfs4.AttrType, nfs4.AttrFSID, nfs4.AttrMountedOnFileid, nfs4.AttrFileid)
	if ea.FSID == ra.FSID {
		t.Fatalf("export fsid %+v is the pseudo file system's", ea.FSID)
	}
	parent := c.lookupFH(comps[:len(comps)-1]...)
	pa := c.getattr(parent, nfs4.AttrFileid)
	if ea.MountedOnFileid != pathID(e.srv.ExportPath()) || ea.MountedOnFileid == ea.Fileid || pa.Fileid == ea.MountedOnFileid {
		t.Fatalf("export root fileid %d mounted_on_fileid %d, pseudo parent fileid %d", ea.Fileid, ea.MountedOnFileid, pa.Fileid)
	}
	res := c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.NoArgs{OpNum: nfs4.OpLookupp}, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	if got := getfh(t, res); !bytes.Equal(got, parent) {
		t.Fatalf("LOOKUPP of the export root %x, want the pseudo directory %x", got, parent)
	}
	wantStatus4(t, "LOOKUP of a name outside the exports", c.call(append(putroot(), &nfs4.LookupArgs{ObjName: []byte("nosuchdir")})...), nfs4.ErrNoent)
	wantStatus4(t, "LOOKUPP of the pseudo root", c.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}, &nfs4.NoArgs{OpNum: nfs4.OpLookupp}), nfs4.ErrNoent)
	res = c.must(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}, &nfs4.SecinfoNoNameArgs{Style: nfs4.SecinfoStyleCurrentFH})
	if fl := res.Results[2].(*nfs4.SecinfoRes).Flavors; len(fl) != 2 || fl[0].Flavor != nfs4.AuthSys || fl[1].Flavor != nfs4.AuthNone {
		t.Fatalf("SECINFO_NO_NAME flavors %+v", fl)
	}
}

// TestV4CompoundRules: the session rules of RFC 8881 §2.10 and the minor versions.
func TestV4CompoundRules(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	getfhOp := &nfs4.NoArgs{OpNum: nfs4.OpGetfh}
	rootOp := &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}

	wantStatus4(t, "PUTROOTFH without SEQUENCE", c.rawMust(rootOp, getfhOp), nfs4.ErrOpNotInSession)
	for _, minor := range []uint32{0, 2} {
		res, err := c.raw(minor, rootOp)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != nfs4.ErrMinorVersMismatch || len(res.Results) != 0 {
			t.Fatalf("minor version %d: %v with %d results", minor, res.Status, len(res.Results))
		}
	}
	ex := &nfs4.ExchangeIDArgs{ClientOwner: nfs4.ClientOwner4{OwnerID: []byte("x")}}
	wantStatus4(t, "EXCHANGE_ID not alone", c.rawMust(ex, rootOp), nfs4.ErrNotOnlyOp)
	wantStatus4(t, "SEQUENCE of an unknown session", c.rawMust(&nfs4.SequenceArgs{SessionID: nfs4.SessionID{9}}, rootOp), nfs4.ErrBadsession)
	wantStatus4(t, "an undefined operation first", c.rawMust(&rawOp{num: 9999}), nfs4.ErrOpIllegal)

	c.mount()
	wantStatus4(t, "SEQUENCE second", c.call(&nfs4.SequenceArgs{SessionID: c.sid}), nfs4.ErrSequencePos)
	wantStatus4(t, "an undefined operation", c.call(&rawOp{num: 9999}), nfs4.ErrOpIllegal)
	// NFSv4.0-only operations: RENEW (clientid), SETCLIENTID_CONFIRM (clientid,
	// verifier), OPEN_CONFIRM (stateid, seqid).
	wantStatus4(t, "RENEW", c.call(&rawOp{num: 30, args: make([]byte, 8)}), nfs4.ErrNotsupp)
	wantStatus4(t, "SETCLIENTID_CONFIRM", c.call(&rawOp{num: 36, args: make([]byte, 16)}), nfs4.ErrNotsupp)
	wantStatus4(t, "OPEN_CONFIRM", c.call(&rawOp{num: 20, args: make([]byte, 20)}), nfs4.ErrNotsupp)
	wantStatus4(t, "GETFH without a file handle", c.call(getfhOp), nfs4.ErrNofilehandle)
	// NFS4ERR_NOFILEHANDLE: in NFSv4.1 it supersedes NFSv4.0's NFS4ERR_RESTOREFH
	// (RFC 8881 §18.27.3, §15.1.16.4), which §15.2 no longer lists for RESTOREFH.
	wantStatus4(t, "RESTOREFH without a saved one", c.call(rootOp, &nfs4.NoArgs{OpNum: nfs4.OpRestorefh}), nfs4.ErrNofilehandle)
	wantStatus4(t, "PUTFH of garbage", c.call(&nfs4.PutfhArgs{Object: []byte{1, 2, 3}}), nfs4.ErrBadhandle)
	stale := bytes.Clone(e.root)
	stale[20] ^= 1
	wantStatus4(t, "PUTFH of a forged handle", c.call(&nfs4.PutfhArgs{Object: stale}), nfs4.ErrStale)
	// Execution stops at the first failure: GETFH after it does not run.
	res := c.call(rootOp, &nfs4.LookupArgs{ObjName: []byte("nope")}, getfhOp)
	if res.Status != nfs4.ErrNoent || len(res.Results) != 3 {
		t.Fatalf("COMPOUND failing at LOOKUP: %v with %d results", res.Status, len(res.Results))
	}
	for _, name := range []string{".", "..", "a/b"} {
		wantStatus4(t, "LOOKUP "+name, c.call(rootOp, &nfs4.LookupArgs{ObjName: []byte(name)}), nfs4.ErrBadname)
	}
	wantStatus4(t, "LOOKUP of an empty name", c.call(rootOp, &nfs4.LookupArgs{}), nfs4.ErrInval)
}

// TestV4ServerIdentity: the server owner and scope stay the same across a restart
// with the same state directory (so clients may reclaim) and differ between servers
// with different state directories (so clients do not trunk them together).
func TestV4ServerIdentity(t *testing.T) {
	owner := func(e *env) (nfs4.ServerOwner4, []byte) {
		c := e.v4(rootCred())
		res := c.rawMust(&nfs4.ExchangeIDArgs{ClientOwner: nfs4.ClientOwner4{OwnerID: c.owner}})
		wantStatus4(t, "EXCHANGE_ID", res, nfs4.OK)
		r := res.Results[0].(*nfs4.ExchangeIDRes)
		return r.ServerOwner, r.ServerScope
	}
	e := newEnv(t, Options{})
	o1, s1 := owner(e)
	e.stop()
	e.start(Options{Root: e.dir, StateDir: e.state})
	o2, s2 := owner(e)
	if !bytes.Equal(o1.MajorID, o2.MajorID) || !bytes.Equal(s1, s2) {
		t.Fatalf("identity changed across a restart: %q %q, then %q %q", o1.MajorID, s1, o2.MajorID, s2)
	}
	o3, _ := owner(newEnv(t, Options{}))
	if bytes.Equal(o1.MajorID, o3.MajorID) {
		t.Fatalf("two servers with different state directories share the owner %q", o1.MajorID)
	}
	// SECINFO of a name answers the export's flavors and consumes the file handle.
	c := e.v4(rootCred())
	c.mount()
	res := c.must(append(putroot(e.exportComponents()[:1]...), &nfs4.SecinfoArgs{Name: []byte(e.exportComponents()[1])})...)
	if fl := res.Results[len(res.Results)-1].(*nfs4.SecinfoRes).Flavors; len(fl) != 2 {
		t.Fatalf("SECINFO flavors %+v", fl)
	}
	wantStatus4(t, "GETFH after SECINFO", c.call(append(putroot(e.exportComponents()[:1]...),
		&nfs4.SecinfoArgs{Name: []byte(e.exportComponents()[1])}, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})...), nfs4.ErrNofilehandle)
}

// TestV4ExportOfSlash: an export whose path is "/" is the pseudo root itself:
// PUTROOTFH gives its root handle, LOOKUPP there is NFS4ERR_NOENT, and a pseudo
// handle naming "/" leads to the export root too.
func TestV4ExportOfSlash(t *testing.T) {
	e := newEnv(t, Options{ExportPath: "/"})
	c := e.v4(rootCred())
	c.mount()
	if fh := c.lookupFH(); !bytes.Equal(fh, e.root) {
		t.Fatalf("PUTROOTFH gave %x, the export root is %x", fh, e.root)
	}
	wantStatus4(t, "LOOKUPP of the root", c.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}, &nfs4.NoArgs{OpNum: nfs4.OpLookupp}), nfs4.ErrNoent)
	var n pseudoNode
	n.id = pathID("/")
	res := c.must(&nfs4.PutfhArgs{Object: n.handle(nil)}, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	if fh := getfh(t, res); !bytes.Equal(fh, e.root) {
		t.Fatalf("the pseudo handle of / gave %x", fh)
	}
}

// TestV4HandlerOfExportsMember: a Server of an Exports has no NFSv4.1 service of its
// own; its handler refuses calls instead of failing.
func TestV4HandlerOfExportsMember(t *testing.T) {
	e, _ := newExportsEnv(t, "%D 127.0.0.1(rw)\n")
	h := e.x.Servers()[0].NFS4Handler()
	req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: nfs4.ProcNull}}
	if err := h.ServeRPC(context.Background(), req, &xdr.Encoder{}); !errors.Is(err, oncrpc.ErrProcUnavail) {
		t.Fatalf("NULL on a member's handler: %v", err)
	}
}
