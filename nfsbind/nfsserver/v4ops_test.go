//go:build linux

package nfsserver

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestV4OpenModes: GUARDED4 refuses an existing name; EXCLUSIVE4_1 stores its
// verifier so that a retry finds its own file (and another verifier is
// NFS4ERR_EXIST), names the verifier's attributes in attrset and applies the mode it
// carries; OPEN_DOWNGRADE back to an earlier OPEN's access takes write access away;
// CLAIM_FH opens the current file; the delegation claims are NFS4ERR_NOTSUPP; a LOCK
// against another owner's lock is NFS4ERR_DENIED with the holder.
func TestV4OpenModes(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)

	g := openArgs4("o", "g", nfs4.ShareAccessBoth, true)
	g.How.Mode = nfs4.Guarded4
	c.openFile(dir, g)
	wantStatus4(t, "GUARDED4 of an existing name", c.call(&nfs4.PutfhArgs{Object: dir}, g), nfs4.ErrExist)

	x := openArgs4("o", "x", nfs4.ShareAccessBoth, true)
	x.How = nfs4.CreateHow4{Mode: nfs4.Exclusive41, CreateVerf: nfs4.Verifier{9, 8, 7, 6, 5, 4, 3, 2},
		Mask: nfs4.NewBitmap(nfs4.AttrMode), Attrs: nfs4.Fattr{Mode: 0o600}}
	res := c.must(&nfs4.PutfhArgs{Object: dir}, x, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	xfh := getfh(t, res)
	set := res.Results[2].(*nfs4.OpenRes).AttrSet
	if !set.Has(nfs4.AttrTimeAccessSet) || !set.Has(nfs4.AttrTimeModifySet) || !set.Has(nfs4.AttrMode) {
		t.Fatalf("EXCLUSIVE4_1 attrset %v", set)
	}
	if a := c.getattr(xfh, nfs4.AttrMode); a.Mode != 0o600 {
		t.Fatalf("EXCLUSIVE4_1 mode %o", a.Mode)
	}
	res = c.must(&nfs4.PutfhArgs{Object: dir}, x, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	if !bytes.Equal(getfh(t, res), xfh) {
		t.Fatal("a retried EXCLUSIVE4_1 OPEN found another file")
	}
	x.How.CreateVerf[0]++
	wantStatus4(t, "EXCLUSIVE4_1 with another verifier", c.call(&nfs4.PutfhArgs{Object: dir}, x), nfs4.ErrExist)
	x.How.Mask = nfs4.NewBitmap(nfs4.AttrTimeModifySet)
	wantStatus4(t, "EXCLUSIVE4_1 setting a time", c.call(&nfs4.PutfhArgs{Object: dir}, x), nfs4.ErrInval)

	c.openFile(dir, openArgs4("o2", "g", nfs4.ShareAccessRead, false))
	fh, sid := c.openFile(dir, openArgs4("o2", "g", nfs4.ShareAccessBoth, false))
	res = c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.OpenDowngradeArgs{OpenStateid: sid, ShareAccess: nfs4.ShareAccessRead})
	down := res.Results[2].(*nfs4.StateidRes).Stateid
	if down.Seqid != sid.Seqid+1 {
		t.Fatalf("OPEN_DOWNGRADE stateid %v after %v", down, sid)
	}
	wantStatus4(t, "WRITE after OPEN_DOWNGRADE to read", c.call(&nfs4.PutfhArgs{Object: fh},
		&nfs4.WriteArgs{Stateid: down, Data: []byte("x")}), nfs4.ErrOpenmode)
	wantStatus4(t, "OPEN_DOWNGRADE to more access", c.call(&nfs4.PutfhArgs{Object: fh},
		&nfs4.OpenDowngradeArgs{OpenStateid: down, ShareAccess: nfs4.ShareAccessBoth}), nfs4.ErrInval)

	byFH := &nfs4.OpenArgs{ShareAccess: nfs4.ShareAccessRead, Owner: nfs4.StateOwner4{Owner: []byte("o3")}, Claim: nfs4.OpenClaim4{Claim: nfs4.ClaimFH}}
	c.must(&nfs4.PutfhArgs{Object: fh}, byFH)
	wantStatus4(t, "OPEN CLAIM_FH of a directory", c.call(&nfs4.PutfhArgs{Object: dir}, byFH), nfs4.ErrIsdir)
	for _, claim := range []nfs4.ClaimType{nfs4.ClaimDelegateCur, nfs4.ClaimDelegCurFH, nfs4.ClaimDelegatePrev, nfs4.ClaimDelegPrevFH} {
		a := &nfs4.OpenArgs{ShareAccess: nfs4.ShareAccessRead, Owner: nfs4.StateOwner4{Owner: []byte("o4")},
			Claim: nfs4.OpenClaim4{Claim: claim, File: []byte("g")}}
		wantStatus4(t, "OPEN with a delegation claim", c.call(&nfs4.PutfhArgs{Object: dir}, a), nfs4.ErrNotsupp)
	}

	// LOCK against LOCK.
	_, wsid := c.openFile(dir, openArgs4("o5", "g", nfs4.ShareAccessBoth, false))
	lock := func(owner string, open nfs4.Stateid4, off uint64) *nfs4.CompoundRes {
		return c.call(&nfs4.PutfhArgs{Object: fh}, &nfs4.LockArgs{LockType: nfs4.WriteLT, Offset: off, Length: 10,
			Locker: nfs4.Locker4{NewLockOwner: true, OpenStateid: open, LockOwner: nfs4.StateOwner4{ClientID: c.cid, Owner: []byte(owner)}}})
	}
	wantStatus4(t, "LOCK", lock("l1", wsid, 100), nfs4.OK)
	res = lock("l2", wsid, 105)
	wantStatus4(t, "conflicting LOCK", res, nfs4.ErrDenied)
	if d := res.Results[2].(*nfs4.LockRes).Denied; d.Offset != 100 || d.Length != 10 || string(d.Owner.Owner) != "l1" || d.LockType != nfs4.WriteLT {
		t.Fatalf("LOCK4denied %+v", d)
	}
	wantStatus4(t, "LOCK of a zero length", c.call(&nfs4.PutfhArgs{Object: fh}, &nfs4.LockArgs{LockType: nfs4.WriteLT, Offset: 0, Length: 0,
		Locker: nfs4.Locker4{NewLockOwner: true, OpenStateid: wsid, LockOwner: nfs4.StateOwner4{Owner: []byte("l3")}}}), nfs4.ErrInval)
}

// TestV4NamespaceAndAttributes: CREATE of a directory, a symbolic link and a FIFO,
// READLINK, REMOVE of a non-empty directory (NFS4ERR_NOTEMPTY), VERIFY and NVERIFY,
// SETATTR with owners as numbers and as name@domain (NFS4ERR_BADOWNER for an unknown
// name), attributes that cannot be set (NFS4ERR_INVAL), ACCESS for the owner and for
// another user.
func TestV4NamespaceAndAttributes(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	res := c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("d"),
		Mask: nfs4.NewBitmap(nfs4.AttrMode), Attrs: nfs4.Fattr{Mode: 0o750}}, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	d := getfh(t, res)
	if cr := res.Results[2].(*nfs4.CreateRes); !cr.AttrSet.Has(nfs4.AttrMode) || cr.Cinfo.After == cr.Cinfo.Before {
		t.Fatalf("CREATE result %+v", cr)
	}
	if a := c.getattr(d, nfs4.AttrType, nfs4.AttrMode); a.Type != nfs4.NF4Dir || a.Mode != 0o750 {
		t.Fatalf("new directory: type %v mode %o", a.Type, a.Mode)
	}
	res = c.must(&nfs4.PutfhArgs{Object: d}, &nfs4.CreateArgs{ObjType: nfs4.NF4Lnk, LinkData: []byte("../target"), ObjName: []byte("l")},
		&nfs4.NoArgs{OpNum: nfs4.OpReadlink})
	if got := string(res.Results[3].(*nfs4.ReadlinkRes).Link); got != "../target" {
		t.Fatalf("READLINK %q", got)
	}
	c.must(&nfs4.PutfhArgs{Object: d}, &nfs4.CreateArgs{ObjType: nfs4.NF4Fifo, ObjName: []byte("p")})
	if st, err := os.Lstat(filepath.Join(e.dir, "d", "p")); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("FIFO: %v %v", st, err)
	}
	wantStatus4(t, "CREATE of a regular file", c.call(&nfs4.PutfhArgs{Object: d}, &nfs4.CreateArgs{ObjType: nfs4.NF4Reg, ObjName: []byte("r")}), nfs4.ErrBadtype)
	wantStatus4(t, "LOOKUP through a symlink", c.call(&nfs4.PutfhArgs{Object: d}, &nfs4.LookupArgs{ObjName: []byte("l")}, &nfs4.LookupArgs{ObjName: []byte("x")}), nfs4.ErrSymlink)
	wantStatus4(t, "REMOVE of a non-empty directory", c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("d")}), nfs4.ErrNotempty)
	wantStatus4(t, "READLINK of a directory", c.call(&nfs4.PutfhArgs{Object: d}, &nfs4.NoArgs{OpNum: nfs4.OpReadlink}), nfs4.ErrInval)

	f, sid := c.openFile(dir, openArgs4("o", "f", nfs4.ShareAccessBoth, true))
	c.must(&nfs4.PutfhArgs{Object: f}, &nfs4.WriteArgs{Stateid: sid, Data: []byte("12345")})
	size5 := fattrVals(nfs4.NewBitmap(nfs4.AttrSize), &nfs4.Fattr{Size: 5})
	size6 := fattrVals(nfs4.NewBitmap(nfs4.AttrSize), &nfs4.Fattr{Size: 6})
	verify := func(op nfs4.OpNum, vals nfs4.Fattr4) *nfs4.CompoundRes {
		return c.call(&nfs4.PutfhArgs{Object: f}, &nfs4.VerifyArgs{OpNum: op, Attrs: vals})
	}
	wantStatus4(t, "VERIFY size 5", verify(nfs4.OpVerify, size5), nfs4.OK)
	wantStatus4(t, "VERIFY size 6", verify(nfs4.OpVerify, size6), nfs4.ErrNotSame)
	wantStatus4(t, "NVERIFY size 5", verify(nfs4.OpNverify, size5), nfs4.ErrSame)
	wantStatus4(t, "NVERIFY size 6", verify(nfs4.OpNverify, size6), nfs4.OK)

	setattr := func(mask nfs4.Bitmap4, a nfs4.Fattr) *nfs4.CompoundRes {
		return c.call(&nfs4.PutfhArgs{Object: f}, &nfs4.SetattrArgs{Stateid: sid, Mask: mask, Attr: a})
	}
	owners := nfs4.NewBitmap(nfs4.AttrOwner, nfs4.AttrOwnerGroup)
	wantStatus4(t, "SETATTR owner 1000", setattr(owners, nfs4.Fattr{Owner: []byte("1000"), OwnerGroup: []byte("1001")}), nfs4.OK)
	if a := c.getattr(f, nfs4.AttrOwner, nfs4.AttrOwnerGroup); string(a.Owner) != "1000" || string(a.OwnerGroup) != "1001" {
		t.Fatalf("owner %q group %q", a.Owner, a.OwnerGroup)
	}
	wantStatus4(t, "SETATTR owner root@domain", setattr(owners, nfs4.Fattr{Owner: []byte("root@example.org"), OwnerGroup: []byte("root@example.org")}), nfs4.OK)
	if a := c.getattr(f, nfs4.AttrOwner); string(a.Owner) != "0" {
		t.Fatalf("owner %q after root@example.org", a.Owner)
	}
	wantStatus4(t, "SETATTR of an unknown owner", setattr(owners, nfs4.Fattr{Owner: []byte("no-such-user-here@example.org"), OwnerGroup: []byte("0")}), nfs4.ErrBadowner)
	res = setattr(nfs4.NewBitmap(nfs4.AttrSize, nfs4.AttrMode), nfs4.Fattr{Size: 2, Mode: 0o604})
	wantStatus4(t, "SETATTR size and mode", res, nfs4.OK)
	if set := res.Results[2].(*nfs4.SetattrRes).AttrsSet; !set.Has(nfs4.AttrSize) || !set.Has(nfs4.AttrMode) {
		t.Fatalf("attrsset %v", set)
	}
	if a := c.getattr(f, nfs4.AttrSize, nfs4.AttrMode); a.Size != 2 || a.Mode != 0o604 {
		t.Fatalf("after SETATTR: size %d mode %o", a.Size, a.Mode)
	}
	res = c.call(&nfs4.PutfhArgs{Object: f}, &nfs4.SetattrArgs{Stateid: sid, Mask: nfs4.NewBitmap(nfs4.AttrNumlinks), Attr: nfs4.Fattr{Numlinks: 9}})
	if res.Status != nfs4.ErrInval && res.Status != nfs4.ErrAttrnotsupp {
		t.Fatalf("SETATTR of numlinks: %v", res.Status)
	}

	res = c.must(&nfs4.PutfhArgs{Object: f}, &nfs4.AccessArgs{Access: nfs4.Access4Read | nfs4.Access4Modify | nfs4.Access4Execute})
	if r := res.Results[2].(*nfs4.AccessRes); r.Access != nfs4.Access4Read|nfs4.Access4Modify {
		t.Fatalf("ACCESS for root of a 0604 file: %#x of %#x", r.Access, r.Supported)
	}
	u := e.v4(userCred(2000, 2000))
	u.mount()
	res = u.must(&nfs4.PutfhArgs{Object: f}, &nfs4.AccessArgs{Access: nfs4.Access4Read | nfs4.Access4Modify})
	if r := res.Results[2].(*nfs4.AccessRes); r.Access != nfs4.Access4Read {
		t.Fatalf("ACCESS for another user of a 0604 file: %#x", r.Access)
	}
	wantStatus4(t, "OPEN for writing by another user", u.call(&nfs4.PutfhArgs{Object: dir}, openArgs4("u", "f", nfs4.ShareAccessWrite, false)), nfs4.ErrAccess)
}

// TestV4WriteOnlyAttributes: time_access_set and time_modify_set are write-only ("W"
// in the table of RFC 8881 §5.7): they say how SETATTR should set a time and have no
// value to read. GETATTR, READDIR, VERIFY and NVERIFY asking for one, alone or with
// readable attributes, in an export or in the pseudo file system, are NFS4ERR_INVAL,
// as knfsd (NFSD_WRITEONLY_ATTRS_WORD1) and pynfs (testWriteOnlyAttributes, RDDR9)
// have it, not a made-up value.
func TestV4WriteOnlyAttributes(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	d, _, _ := v4SpecialObjects(t, c, e)
	root := &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}
	atime := nfs4.NewBitmap(nfs4.AttrTimeAccessSet)
	mtime := nfs4.NewBitmap(nfs4.AttrSize, nfs4.AttrTimeModifySet)
	for _, tc := range []struct {
		what string
		ops  []nfs4.OpArgs
	}{
		{"GETATTR time_access_set", []nfs4.OpArgs{&nfs4.PutfhArgs{Object: d}, &nfs4.GetattrArgs{AttrRequest: atime}}},
		{"GETATTR size, time_modify_set", []nfs4.OpArgs{&nfs4.PutfhArgs{Object: d}, &nfs4.GetattrArgs{AttrRequest: mtime}}},
		{"GETATTR time_access_set of the pseudo root", []nfs4.OpArgs{root, &nfs4.GetattrArgs{AttrRequest: atime}}},
		{"READDIR size, time_modify_set", []nfs4.OpArgs{&nfs4.PutfhArgs{Object: d}, &nfs4.ReaddirArgs{DirCount: 4096, MaxCount: 4096, AttrRequest: mtime}}},
		{"READDIR time_access_set of the pseudo root", []nfs4.OpArgs{root, &nfs4.ReaddirArgs{DirCount: 4096, MaxCount: 4096, AttrRequest: atime}}},
		{"VERIFY time_access_set", []nfs4.OpArgs{&nfs4.PutfhArgs{Object: d},
			&nfs4.VerifyArgs{OpNum: nfs4.OpVerify, Attrs: fattrVals(atime, &nfs4.Fattr{TimeAccessSet: nfs4.SetTime4{How: nfs4.SetToServerTime4}})}}},
		{"NVERIFY time_access_set", []nfs4.OpArgs{&nfs4.PutfhArgs{Object: d},
			&nfs4.VerifyArgs{OpNum: nfs4.OpNverify, Attrs: fattrVals(atime, &nfs4.Fattr{TimeAccessSet: nfs4.SetTime4{How: nfs4.SetToServerTime4}})}}},
	} {
		if res := c.call(tc.ops...); res.Status != nfs4.ErrInval {
			t.Errorf("%s: %v, want NFS4ERR_INVAL", tc.what, res.Status)
		}
	}
	// supported_attrs names them all the same: they can be set.
	if a := c.getattr(d, nfs4.AttrSupportedAttrs); !a.SupportedAttrs.Has(nfs4.AttrTimeAccessSet) || !a.SupportedAttrs.Has(nfs4.AttrTimeModifySet) {
		t.Errorf("supported_attrs %v without time_access_set and time_modify_set", a.SupportedAttrs)
	}
}

// TestV4CreateAttrsetNamesWhatWasSet: CREATE's attrset names the createattrs the
// server set (RFC 8881 §18.4.4), and the server leaves some out without an error, as
// NFSv3 does: an owner other than the caller's own unless the caller is root, a
// group the caller is not in, the mode of a symbolic link (Linux links have none).
// Each of mode, owner and owner_group is in attrset exactly when the new object has
// the value asked for; root's owner and group, and a caller's own, are applied.
func TestV4CreateAttrsetNamesWhatWasSet(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.SetattrArgs{Mask: nfs4.NewBitmap(nfs4.AttrMode), Attr: nfs4.Fattr{Mode: 0o777}})
	u := e.v4(userCred(2000, 2000))
	u.mount()
	owners := nfs4.NewBitmap(nfs4.AttrOwner, nfs4.AttrOwnerGroup)
	asRoot := os.Geteuid() == 0
	for _, tc := range []struct {
		what      string
		c         *v4client
		args      nfs4.CreateArgs
		wantSet   []nfs4.Attr // in attrset (checked when the server runs as root, as it gives owners only then)
		wantUnset []nfs4.Attr // not in attrset
	}{
		{"another's owner and group by a user", u, nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("u3000"),
			Mask: owners, Attrs: nfs4.Fattr{Owner: []byte("3000"), OwnerGroup: []byte("3000")}},
			nil, []nfs4.Attr{nfs4.AttrOwner, nfs4.AttrOwnerGroup}},
		{"a user's own owner and group", u, nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("u2000"),
			Mask: owners, Attrs: nfs4.Fattr{Owner: []byte("2000"), OwnerGroup: []byte("2000")}},
			[]nfs4.Attr{nfs4.AttrOwner, nfs4.AttrOwnerGroup}, nil},
		{"another's owner and group by root", c, nfs4.CreateArgs{ObjType: nfs4.NF4Fifo, ObjName: []byte("r3000"),
			Mask: owners, Attrs: nfs4.Fattr{Owner: []byte("3000"), OwnerGroup: []byte("3000")}},
			[]nfs4.Attr{nfs4.AttrOwner, nfs4.AttrOwnerGroup}, nil},
		{"the mode of a FIFO", c, nfs4.CreateArgs{ObjType: nfs4.NF4Fifo, ObjName: []byte("p"),
			Mask: nfs4.NewBitmap(nfs4.AttrMode), Attrs: nfs4.Fattr{Mode: 0o640}},
			[]nfs4.Attr{nfs4.AttrMode}, nil},
		{"the mode of a symbolic link", c, nfs4.CreateArgs{ObjType: nfs4.NF4Lnk, LinkData: []byte("x"), ObjName: []byte("l"),
			Mask: nfs4.NewBitmap(nfs4.AttrMode), Attrs: nfs4.Fattr{Mode: 0o600}},
			nil, []nfs4.Attr{nfs4.AttrMode}},
	} {
		res := tc.c.must(&nfs4.PutfhArgs{Object: dir}, &tc.args, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
		set := res.Results[2].(*nfs4.CreateRes).AttrSet
		got := tc.c.getattr(getfh(t, res), nfs4.AttrMode, nfs4.AttrOwner, nfs4.AttrOwnerGroup)
		if set.Has(nfs4.AttrOwner) != (tc.args.Mask.Has(nfs4.AttrOwner) && bytes.Equal(got.Owner, tc.args.Attrs.Owner)) ||
			set.Has(nfs4.AttrOwnerGroup) != (tc.args.Mask.Has(nfs4.AttrOwnerGroup) && bytes.Equal(got.OwnerGroup, tc.args.Attrs.OwnerGroup)) {
			t.Errorf("CREATE with %s: attrset %v, object owner %q group %q", tc.what, set, got.Owner, got.OwnerGroup)
		}
		for _, a := range tc.wantUnset {
			if set.Has(a) {
				t.Errorf("CREATE with %s: attrset %v names %v", tc.what, set, a)
			}
		}
		for _, a := range tc.wantSet {
			if asRoot && !set.Has(a) {
				t.Errorf("CREATE with %s: attrset %v without %v", tc.what, set, a)
			}
		}
		if set.Has(nfs4.AttrMode) && got.Mode != tc.args.Attrs.Mode {
			t.Errorf("CREATE with %s: attrset %v, but mode %o", tc.what, set, got.Mode)
		}
	}
}

// TestV4OpenAttrsetNamesWhatWasSet: OPEN4_CREATE's attrset, like CREATE's, names
// the createattrs the server set (RFC 8881 §18.16.4): with UNCHECKED4 or GUARDED4,
// not an owner or group the caller may not give, and for a file that exists already
// (UNCHECKED4), which keeps its attributes, the size alone, and only a size of 0 (a
// nonzero size is ignored, as knfsd does).
func TestV4OpenAttrsetNamesWhatWasSet(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.SetattrArgs{Mask: nfs4.NewBitmap(nfs4.AttrMode), Attr: nfs4.Fattr{Mode: 0o777}})
	u := e.v4(userCred(2000, 2000))
	u.mount()
	asRoot := os.Geteuid() == 0
	all := nfs4.NewBitmap(nfs4.AttrMode, nfs4.AttrOwner, nfs4.AttrOwnerGroup)
	for _, tc := range []struct {
		what  string
		c     *v4client
		name  string
		mode  nfs4.CreateMode
		mask  nfs4.Bitmap4
		attrs nfs4.Fattr
		want  nfs4.Bitmap4 // attrset
		root  nfs4.Bitmap4 // attrset when the server runs as root, if not want
	}{
		{"a new file with another's owner and group by a user", u, "uf", nfs4.Unchecked4, all,
			nfs4.Fattr{Mode: 0o600, Owner: []byte("3000"), OwnerGroup: []byte("3000")}, nfs4.NewBitmap(nfs4.AttrMode), nil},
		{"an existing file", u, "uf", nfs4.Unchecked4, all,
			nfs4.Fattr{Mode: 0o644, Owner: []byte("2000"), OwnerGroup: []byte("2000")}, nil, nil},
		{"an existing file with size 0", u, "uf", nfs4.Unchecked4, nfs4.NewBitmap(nfs4.AttrSize, nfs4.AttrMode),
			nfs4.Fattr{Mode: 0o644}, nfs4.NewBitmap(nfs4.AttrSize), nil},
		{"an existing file with size 5", u, "uf", nfs4.Unchecked4, nfs4.NewBitmap(nfs4.AttrSize),
			nfs4.Fattr{Size: 5}, nil, nil},
		{"a new file with another's owner and group by root", c, "rf", nfs4.Guarded4, all,
			nfs4.Fattr{Mode: 0o600, Owner: []byte("3000"), OwnerGroup: []byte("3000")}, nfs4.NewBitmap(nfs4.AttrMode), all},
	} {
		a := openArgs4("o", tc.name, nfs4.ShareAccessBoth, true)
		a.How = nfs4.CreateHow4{Mode: tc.mode, Mask: tc.mask, Attrs: tc.attrs}
		res := tc.c.must(&nfs4.PutfhArgs{Object: dir}, a, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
		set, want := res.Results[2].(*nfs4.OpenRes).AttrSet, tc.want
		if asRoot && tc.root != nil {
			want = tc.root
		}
		if !set.Equal(want) {
			got := tc.c.getattr(getfh(t, res), nfs4.AttrMode, nfs4.AttrOwner, nfs4.AttrOwnerGroup)
			t.Errorf("OPEN of %s: attrset %v, want %v (file mode %o owner %q group %q)", tc.what, set, want, got.Mode, got.Owner, got.OwnerGroup)
		}
	}
	if a := u.getattr(u.lookupFH(append(e.exportComponents(), "uf")...), nfs4.AttrMode, nfs4.AttrSize); a.Mode != 0o600 || a.Size != 0 {
		t.Errorf("the existing file's mode %o or size %d changed by OPEN4_CREATE (only a size of 0 applies to it)", a.Mode, a.Size)
	}
}

// fattrVals is the fattr4 of the attributes mask of a, as VERIFY carries them.
func fattrVals(mask nfs4.Bitmap4, a *nfs4.Fattr) nfs4.Fattr4 {
	var e xdr.Encoder
	nfs4.EncodeFattr(&e, mask, a)
	var f nfs4.Fattr4
	if err := f.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil {
		panic(err)
	}
	f.Vals = bytes.Clone(f.Vals)
	return f
}

// TestV4OpenCreateExistingInReadOnlyDirectory: OPEN4_CREATE (UNCHECKED4) of an
// existing file in a directory the caller may not write opens the file, as open(2)
// with O_CREAT does; creating a new name there is NFS4ERR_ACCESS. GUARDED4 and
// EXCLUSIVE4_1 (a Linux client's O_CREAT|O_EXCL) of the existing name are
// NFS4ERR_EXIST (RFC 8881 §18.16.3), as open(2) with O_CREAT|O_EXCL fails EEXIST
// there, not NFS4ERR_ACCESS: the directory's write permission matters only for a
// name that would be created.
func TestV4OpenCreateExistingInReadOnlyDirectory(t *testing.T) {
	e := newEnv(t, Options{})
	sub := filepath.Join(e.dir, "ro")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "mine"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(sub, "mine"), 2000, 2000); err != nil {
		t.Fatal(err)
	}
	u := e.v4(userCred(2000, 2000))
	u.mount()
	dir := u.lookupFH(append(e.exportComponents(), "ro")...)
	u.openFile(dir, openArgs4("u", "mine", nfs4.ShareAccessBoth, true))
	wantStatus4(t, "OPEN4_CREATE of a new name in a directory of root's", u.call(&nfs4.PutfhArgs{Object: dir},
		openArgs4("u", "new", nfs4.ShareAccessBoth, true)), nfs4.ErrAccess)
	for _, mode := range []nfs4.CreateMode{nfs4.Guarded4, nfs4.Exclusive4, nfs4.Exclusive41} {
		a := openArgs4("u", "mine", nfs4.ShareAccessBoth, true)
		a.How = nfs4.CreateHow4{Mode: mode, CreateVerf: nfs4.Verifier{1, 2, 3, 4, 5, 6, 7, 8}}
		wantStatus4(t, createModeNames[mode]+" OPEN of the existing name", u.call(&nfs4.PutfhArgs{Object: dir}, a), nfs4.ErrExist)
		a.Claim.File = []byte("new")
		wantStatus4(t, createModeNames[mode]+" OPEN of a new name", u.call(&nfs4.PutfhArgs{Object: dir}, a), nfs4.ErrAccess)
	}
	if _, err := os.Stat(filepath.Join(sub, "new")); !os.IsNotExist(err) {
		t.Fatalf("new: %v, want it not to exist", err)
	}
}

// TestV4SetattrSizeWithCurrentStateid: SETATTR of the size takes the current stateid
// (seqid 1, other zeros: RFC 8881 §16.2.3.1.2) as READ and WRITE do, here the one the
// OPEN before it in the COMPOUND returned, rather than refusing it as a bad stateid.
func TestV4SetattrSizeWithCurrentStateid(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	current := nfs4.Stateid4{Seqid: 1}
	res := c.call(&nfs4.PutfhArgs{Object: dir}, openArgs4("o", "f", nfs4.ShareAccessBoth, true),
		&nfs4.WriteArgs{Stateid: current, Data: []byte("12345")},
		&nfs4.SetattrArgs{Stateid: current, Mask: nfs4.NewBitmap(nfs4.AttrSize), Attr: nfs4.Fattr{Size: 2}},
		&nfs4.GetattrArgs{AttrRequest: nfs4.NewBitmap(nfs4.AttrSize)})
	wantStatus4(t, "OPEN; WRITE; SETATTR(size); GETATTR with the current stateid", res, nfs4.OK)
	if got := res.Results[len(res.Results)-1].(*nfs4.GetattrRes).Attr.Size; got != 2 {
		t.Fatalf("size after SETATTR: %d, want 2", got)
	}
}

// TestV4OpenRefusedLeavesFileAlone: the size in an OPEN4_CREATE's createattrs is a
// write of the file (RFC 8881 §9.7, §18.16.3), applied only once the share
// reservation is granted. Against another client's OPEN4_SHARE_DENY_WRITE, an
// UNCHECKED4 OPEN for writing with size 0 is NFS4ERR_SHARE_DENIED and one for reading
// NFS4ERR_INVAL (a truncation needs OPEN4_SHARE_ACCESS_WRITE, as knfsd has it), and
// neither truncates the file; once the deny is gone, the OPEN for writing truncates
// it, and a new file gets the size asked for.
func TestV4OpenRefusedLeavesFileAlone(t *testing.T) {
	e := newEnv(t, Options{})
	path := filepath.Join(e.dir, "f")
	if err := os.WriteFile(path, []byte("precious data"), 0o666); err != nil {
		t.Fatal(err)
	}
	a := e.v4(rootCred())
	a.mount()
	dir := a.lookupFH(e.exportComponents()...)
	oa := openArgs4("a", "f", nfs4.ShareAccessRead, false)
	oa.ShareDeny = nfs4.ShareDenyWrite
	fh, asid := a.openFile(dir, oa)

	b := e.v4(rootCred())
	b.mount()
	truncating := func(name string, access uint32) *nfs4.OpenArgs {
		o := openArgs4("b", name, access, true)
		o.How.Mask = nfs4.NewBitmap(nfs4.AttrSize)
		o.How.Attrs = nfs4.Fattr{Size: 0}
		return o
	}
	intact := func(what string) {
		t.Helper()
		if got, err := os.ReadFile(path); err != nil || string(got) != "precious data" {
			t.Fatalf("%s: file now %q (%v)", what, got, err)
		}
	}
	wantStatus4(t, "truncating OPEN for writing against DENY_WRITE",
		b.call(&nfs4.PutfhArgs{Object: dir}, truncating("f", nfs4.ShareAccessWrite)), nfs4.ErrShareDenied)
	intact("after an OPEN refused NFS4ERR_SHARE_DENIED")
	wantStatus4(t, "truncating OPEN for reading",
		b.call(&nfs4.PutfhArgs{Object: dir}, truncating("f", nfs4.ShareAccessRead)), nfs4.ErrInval)
	intact("after an OPEN refused NFS4ERR_INVAL")

	a.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.CloseArgs{OpenStateid: asid})
	b.must(&nfs4.PutfhArgs{Object: dir}, truncating("f", nfs4.ShareAccessWrite))
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Fatalf("truncating OPEN granted: %v, %v", st.Size(), err)
	}
	sized := truncating("new", nfs4.ShareAccessRead)
	sized.How.Attrs.Size = 5
	b.must(&nfs4.PutfhArgs{Object: dir}, sized)
	if st, err := os.Stat(filepath.Join(e.dir, "new")); err != nil || st.Size() != 5 {
		t.Fatalf("new file created with size 5: %v, %v", st.Size(), err)
	}
}

// TestV4OpenTakenBackWhenTruncationFails: when the size of an OPEN4_CREATE's
// createattrs cannot be applied after the share reservation was granted (a size past
// what the file system holds: NFS4ERR_FBIG), the OPEN fails and leaves no
// open state: a new open stateid is closed, an upgrade reverted to the access and
// seqid the client knows.
func TestV4OpenTakenBackWhenTruncationFails(t *testing.T) {
	orig := truncatePath
	t.Cleanup(func() { truncatePath = orig }) // after the server's cleanup
	truncatePath = func(path string, size int64) error {
		if size == 0 {
			return unix.EFBIG
		}
		return orig(path, size)
	}
	e := newEnv(t, Options{})
	probe := filepath.Join(e.dir, "probe")
	if err := os.WriteFile(probe, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(probe, math.MaxInt64); err == nil {
		t.Skip("this file system holds a file of 2^63-1 bytes: no size to fail with")
	}
	if err := os.WriteFile(filepath.Join(e.dir, "f"), []byte("data"), 0o666); err != nil {
		t.Fatal(err)
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	huge := func(owner, name string) *nfs4.OpenArgs {
		o := openArgs4(owner, name, nfs4.ShareAccessBoth, true)
		o.How.Mask = nfs4.NewBitmap(nfs4.AttrSize)
		o.How.Attrs = nfs4.Fattr{Size: math.MaxUint64}
		return o
	}
	stateids := func() int { return e.srv.v4.state.Stats().Stateids }
	wantStatus4(t, "OPEN of a new file sized past the file system's limit", c.call(&nfs4.PutfhArgs{Object: dir}, huge("o", "new")), nfs4.ErrFbig)
	if n := stateids(); n != 0 {
		t.Fatalf("%d stateids after the OPEN failed, want 0", n)
	}
	fh, sid := c.openFile(dir, openArgs4("p", "f", nfs4.ShareAccessRead, false))
	// An existing file takes only a size of 0 (a nonzero one is ignored): that
	// truncation fails (truncatePath, set before the server started).
	truncate := openArgs4("p", "f", nfs4.ShareAccessBoth, true)
	truncate.How.Mask = nfs4.NewBitmap(nfs4.AttrSize)
	wantStatus4(t, "upgrading OPEN whose truncation fails", c.call(&nfs4.PutfhArgs{Object: dir}, truncate), nfs4.ErrFbig)
	if n := stateids(); n != 1 {
		t.Fatalf("%d stateids after the upgrade failed, want 1", n)
	}
	wantStatus4(t, "READ with the stateid the client knows", c.call(&nfs4.PutfhArgs{Object: fh}, readOp(sid)), nfs4.OK)
	wantStatus4(t, "WRITE with it", c.call(&nfs4.PutfhArgs{Object: fh}, &nfs4.WriteArgs{Stateid: sid, Data: []byte("x")}), nfs4.ErrOpenmode)
	if got, _ := os.ReadFile(filepath.Join(e.dir, "f")); string(got) != "data" {
		t.Fatalf("file now %q", got)
	}
}

// v4SpecialObjects creates a directory d in the export, holding a symbolic link l and
// a FIFO p, and returns their handles.
func v4SpecialObjects(t *testing.T, c *v4client, e *env) (d, l, p nfs4.FH) {
	t.Helper()
	dir := c.lookupFH(e.exportComponents()...)
	getfhOp := &nfs4.NoArgs{OpNum: nfs4.OpGetfh}
	d = getfh(t, c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("d")}, getfhOp))
	l = getfh(t, c.must(&nfs4.PutfhArgs{Object: d}, &nfs4.CreateArgs{ObjType: nfs4.NF4Lnk, LinkData: []byte("x"), ObjName: []byte("l")}, getfhOp))
	p = getfh(t, c.must(&nfs4.PutfhArgs{Object: d}, &nfs4.CreateArgs{ObjType: nfs4.NF4Fifo, ObjName: []byte("p")}, getfhOp))
	return d, l, p
}

// TestV4CurrentStateidFollowsFilehandle: the current stateid is associated with the
// current file handle (RFC 8881 §16.2.3.1.2): an operation that sets the current
// file handle without returning a stateid (PUTFH, LOOKUP, ...) sets it to (0, 0),
// which READ refuses as NFS4ERR_BAD_STATEID, and SAVEFH and RESTOREFH save and
// restore the file handle and the stateid as a set.
func TestV4CurrentStateidFollowsFilehandle(t *testing.T) {
	e := newEnv(t, Options{})
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(e.dir, n), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	wantStatus4(t, "PUTFH; READ(current stateid)", c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.LookupArgs{ObjName: []byte("a")},
		readOp(currentStateid)), nfs4.ErrBadStateid)
	wantStatus4(t, "OPEN; PUTFH; LOOKUP; READ(current stateid)", c.call(&nfs4.PutfhArgs{Object: dir},
		openArgs4("o1", "a", nfs4.ShareAccessRead, false), &nfs4.PutfhArgs{Object: dir}, &nfs4.LookupArgs{ObjName: []byte("a")},
		readOp(currentStateid)), nfs4.ErrBadStateid)
	// Figure 5 of §16.2.3.1.2: RESTOREFH brings back the stateid saved with the file.
	res := c.call(&nfs4.PutfhArgs{Object: dir}, openArgs4("o2", "a", nfs4.ShareAccessBoth, false),
		&nfs4.NoArgs{OpNum: nfs4.OpSavefh},
		&nfs4.PutfhArgs{Object: dir}, openArgs4("o3", "b", nfs4.ShareAccessRead, false),
		&nfs4.NoArgs{OpNum: nfs4.OpRestorefh},
		&nfs4.WriteArgs{Stateid: currentStateid, Data: []byte("DA")})
	wantStatus4(t, "OPEN a; SAVEFH; PUTFH; OPEN b; RESTOREFH; WRITE(current stateid)", res, nfs4.OK)
	if got, err := os.ReadFile(filepath.Join(e.dir, "a")); err != nil || string(got) != "DAta" {
		t.Fatalf("a after the WRITE: %q, %v", got, err)
	}
}

// TestV4OpenCreateOfExistingNonRegular: OPEN4_CREATE of a name that holds something
// other than a regular file. GUARDED4 refuses any duplicate with NFS4ERR_EXIST, and
// EXCLUSIVE4 and EXCLUSIVE4_1 one whose verifier does not match, a directory's among
// them (RFC 8881 §18.16.3, §18.16.4); UNCHECKED4 opens what is there, which fails as
// an OPEN without OPEN4_CREATE does: NFS4ERR_ISDIR for a directory, NFS4ERR_SYMLINK for
// a symbolic link, NFS4ERR_WRONG_TYPE for anything else (§18.16.4), as knfsd answers.
func TestV4OpenCreateOfExistingNonRegular(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	d, _, _ := v4SpecialObjects(t, c, e)
	if err := os.Mkdir(filepath.Join(e.dir, "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mode nfs4.CreateMode
		want nfs4.Status
	}{
		{"sub", nfs4.Guarded4, nfs4.ErrExist},
		{"l", nfs4.Guarded4, nfs4.ErrExist},
		{"p", nfs4.Guarded4, nfs4.ErrExist},
		{"sub", nfs4.Exclusive4, nfs4.ErrExist},
		{"sub", nfs4.Exclusive41, nfs4.ErrExist},
		{"l", nfs4.Exclusive41, nfs4.ErrExist},
		{"sub", nfs4.Unchecked4, nfs4.ErrIsdir},
		{"l", nfs4.Unchecked4, nfs4.ErrSymlink},
		{"p", nfs4.Unchecked4, nfs4.ErrWrongType},
	} {
		a := openArgs4("o", tc.name, nfs4.ShareAccessRead, true)
		a.How = nfs4.CreateHow4{Mode: tc.mode, CreateVerf: nfs4.Verifier{1, 2, 3, 4, 5, 6, 7, 8}}
		if res := c.call(&nfs4.PutfhArgs{Object: d}, a); res.Status != tc.want {
			t.Errorf("OPEN4_CREATE %s of %q: %v, want %v", createModeNames[tc.mode], tc.name, res.Status, tc.want)
		}
	}
}

// createModeNames are the names of the createmode4 values.
var createModeNames = [...]string{nfs4.Unchecked4: "UNCHECKED4", nfs4.Guarded4: "GUARDED4",
	nfs4.Exclusive4: "EXCLUSIVE4", nfs4.Exclusive41: "EXCLUSIVE4_1"}

// TestV4LockNonRegularFile: LOCK, LOCKT and LOCKU need a regular file: of a
// directory they are NFS4ERR_ISDIR, of a symbolic link NFS4ERR_SYMLINK, of anything
// else NFS4ERR_WRONG_TYPE (RFC 8881 §18.10.3, §18.11.3, §18.12.3), whatever the
// stateid; not a LOCKT that finds no conflict. A file removed while locked still has
// its locks released by LOCKU.
func TestV4LockNonRegularFile(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	d, l, p := v4SpecialObjects(t, c, e)
	fh, sid := c.openFile(d, openArgs4("o", "f", nfs4.ShareAccessBoth, true))
	res := c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.LockArgs{LockType: nfs4.WriteLT, Length: 10,
		Locker: nfs4.Locker4{NewLockOwner: true, OpenStateid: sid, LockOwner: nfs4.StateOwner4{Owner: []byte("l")}}})
	lsid := res.Results[2].(*nfs4.LockRes).LockStateid
	for _, obj := range []struct {
		what string
		fh   nfs4.FH
		want nfs4.Status
	}{{"a directory", d, nfs4.ErrIsdir}, {"a symbolic link", l, nfs4.ErrSymlink}, {"a FIFO", p, nfs4.ErrWrongType}} {
		for _, op := range []nfs4.OpArgs{
			&nfs4.LocktArgs{LockType: nfs4.WriteLT, Length: 10, Owner: nfs4.StateOwner4{Owner: []byte("t")}},
			&nfs4.LockArgs{LockType: nfs4.WriteLT, Offset: 100, Length: 10, Locker: nfs4.Locker4{NewLockOwner: true,
				OpenStateid: sid, LockOwner: nfs4.StateOwner4{Owner: []byte("m")}}},
			&nfs4.LockArgs{LockType: nfs4.WriteLT, Offset: 100, Length: 10, Locker: nfs4.Locker4{LockStateid: lsid}},
			&nfs4.LockuArgs{LockType: nfs4.WriteLT, LockStateid: lsid, Length: 10},
		} {
			if res := c.call(&nfs4.PutfhArgs{Object: obj.fh}, op); res.Status != obj.want {
				t.Errorf("%v of %s: %v, want %v", op.Op(), obj.what, res.Status, obj.want)
			}
		}
	}
	if err := os.Remove(filepath.Join(e.dir, "d", "f")); err != nil {
		t.Fatal(err)
	}
	c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.LockuArgs{LockType: nfs4.WriteLT, LockStateid: lsid, Length: 10})
}

// TestV4OwnerOfInvalidID: an owner or owner_group of 4294967295, (uid_t)-1, names no
// user or group: chown(2) takes it as "leave unchanged", so SETATTR answered NFS4_OK
// with the attribute in attrsset and changed nothing. It is NFS4ERR_BADOWNER, as from
// knfsd (an id that maps to no valid kuid), in SETATTR, CREATE and OPEN alike.
func TestV4OwnerOfInvalidID(t *testing.T) {
	e := newEnv(t, Options{})
	if err := os.WriteFile(filepath.Join(e.dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	f := c.lookupFH(append(e.exportComponents(), "f")...)
	const invalid = "4294967295"
	for _, tc := range []struct {
		what string
		mask nfs4.Bitmap4
		attr nfs4.Fattr
	}{
		{"owner", nfs4.NewBitmap(nfs4.AttrOwner), nfs4.Fattr{Owner: []byte(invalid)}},
		{"owner_group", nfs4.NewBitmap(nfs4.AttrOwnerGroup), nfs4.Fattr{OwnerGroup: []byte(invalid)}},
	} {
		if res := c.call(&nfs4.PutfhArgs{Object: f}, &nfs4.SetattrArgs{Mask: tc.mask, Attr: tc.attr}); res.Status != nfs4.ErrBadowner {
			t.Errorf("SETATTR %s %s: %v %+v, want NFS4ERR_BADOWNER", tc.what, invalid, res.Status, res.Results[len(res.Results)-1])
		}
		if res := c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("d-" + tc.what),
			Mask: tc.mask, Attrs: tc.attr}); res.Status != nfs4.ErrBadowner {
			t.Errorf("CREATE with %s %s: %v, want NFS4ERR_BADOWNER", tc.what, invalid, res.Status)
		}
		o := openArgs4("o", "f-"+tc.what, nfs4.ShareAccessBoth, true)
		o.How.Mask, o.How.Attrs = tc.mask, tc.attr
		if res := c.call(&nfs4.PutfhArgs{Object: dir}, o); res.Status != nfs4.ErrBadowner {
			t.Errorf("OPEN4_CREATE with %s %s: %v, want NFS4ERR_BADOWNER", tc.what, invalid, res.Status)
		}
	}
}

// TestV4ReaddirWithoutSearchPermission: a READDIR of a directory the caller may read
// but not search, asking for entry attributes and rdattr_error as the Linux client
// always does, lists the names, each with rdattr_error NFS4ERR_ACCESS alone, as knfsd
// answers (its lookup of each entry fails): RFC 8881 §18.23.3 has rdattr_error report
// a failure to get an entry's attributes rather than fail the whole READDIR. Only a
// READDIR not asking for rdattr_error fails, NFS4ERR_ACCESS.
func TestV4ReaddirWithoutSearchPermission(t *testing.T) {
	e := newEnv(t, Options{})
	sub := filepath.Join(e.dir, "r")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(sub, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sub, 0o704); err != nil {
		t.Fatal(err)
	}
	u := e.v4(userCred(2000, 2000))
	u.mount()
	dir := u.lookupFH(append(e.exportComponents(), "r")...)
	st, ents := u.readdir4(dir, nfs4.NewBitmap(nfs4.AttrRdattrError, nfs4.AttrType, nfs4.AttrFileid, nfs4.AttrMountedOnFileid))
	if st != nfs4.OK {
		t.Fatalf("READDIR asking for rdattr_error: %v, want NFS4_OK", st)
	}
	for _, name := range []string{"a", "b"} {
		en, ok := ents[name]
		if !ok || !bitmapEqual(en.Mask, rdattrErrorOnly) || en.Attrs.RdattrError != nfs4.ErrAccess {
			t.Errorf("entry %s (listed %v): mask %v rdattr_error %v, want rdattr_error NFS4ERR_ACCESS alone",
				name, ok, en.Mask, en.Attrs.RdattrError)
		}
	}
	if len(ents) != 2 {
		t.Errorf("%d entries, want 2", len(ents))
	}
	if st, _ := u.readdir4(dir, nfs4.NewBitmap(nfs4.AttrType)); st != nfs4.ErrAccess {
		t.Errorf("READDIR asking for attributes but not rdattr_error: %v, want NFS4ERR_ACCESS", st)
	}
	if st, ents := u.readdir4(dir, nil); st != nfs4.OK || len(ents) != 2 {
		t.Errorf("READDIR of names alone: %v, %d entries", st, len(ents))
	}
}

// TestV4OpenDenyReadNeedsWrite checks that an OPEN asking for OPEN4_SHARE_DENY_READ
// takes write permission on the file, as knfsd's do_open_permission asks: a caller
// that may only read it must not be able to keep every other client from reading it.
// The same OPEN with DENY_WRITE or DENY_NONE succeeds, and the caller's failed
// DENY_READ leaves the owner's reads alone.
func TestV4OpenDenyReadNeedsWrite(t *testing.T) {
	e := newEnv(t, Options{})
	if err := os.WriteFile(filepath.Join(e.dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	u := e.v4(userCred(2000, 2000))
	u.mount()
	for _, tc := range []struct {
		deny uint32
		want nfs4.Status
	}{
		{nfs4.ShareDenyRead, nfs4.ErrAccess},
		{nfs4.ShareDenyBoth, nfs4.ErrAccess},
		{nfs4.ShareDenyWrite, nfs4.OK},
		{nfs4.ShareDenyNone, nfs4.OK},
	} {
		a := openArgs4(fmt.Sprintf("u%d", tc.deny), "f", nfs4.ShareAccessRead, false)
		a.ShareDeny = tc.deny
		res := u.call(&nfs4.PutfhArgs{Object: dir}, a)
		wantStatus4(t, fmt.Sprintf("OPEN for reading with deny %d by a user who may not write", tc.deny), res, tc.want)
		if res.Status == nfs4.OK {
			sid := res.Results[2].(*nfs4.OpenRes).Stateid
			u.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.LookupArgs{ObjName: []byte("f")}, &nfs4.CloseArgs{OpenStateid: sid})
		}
	}
	// The owner can still open it for reading.
	c.openFile(dir, openArgs4("root", "f", nfs4.ShareAccessRead, false))
}

// TestV4ReaddirBadCookies: READDIR cookies 1 and 2 are reserved (RFC 8881 §18.23.3),
// and a first READDIR (cookie 0) carries a zero cookie verifier; knfsd answers
// NFS4ERR_BAD_COOKIE to each, in an export and in the pseudo file system alike.
func TestV4ReaddirBadCookies(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	root := &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}
	for _, tc := range []struct {
		what   string
		cookie uint64
		verf   nfs4.Verifier
	}{
		{"cookie 1", 1, nfs4.Verifier{}},
		{"cookie 2", 2, nfs4.Verifier{}},
		{"cookie 0 with a verifier", 0, nfs4.Verifier{1}},
	} {
		for _, at := range []struct {
			where string
			op    nfs4.OpArgs
		}{{"export", &nfs4.PutfhArgs{Object: dir}}, {"pseudo root", root}} {
			res := c.call(at.op, &nfs4.ReaddirArgs{Cookie: tc.cookie, CookieVerf: tc.verf, DirCount: 4096, MaxCount: 4096})
			wantStatus4(t, "READDIR of the "+at.where+" with "+tc.what, res, nfs4.ErrBadCookie)
		}
	}
	res := c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.ReaddirArgs{DirCount: 4096, MaxCount: 4096})
	wantStatus4(t, "READDIR with cookie 0 and a zero verifier", res, nfs4.OK)
}
