//go:build linux

package nfsserver

import (
	"bytes"
	"math"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// GETATTR, SETATTR, ACCESS, VERIFY and NVERIFY.

// curAttrs fills mask with the attributes of req this server supports and a with
// their values for the current file handle, for GETATTR, VERIFY and NVERIFY. A
// write-only attribute (time_access_set, time_modify_set) has no value to give: req
// naming one is NFS4ERR_INVAL, as knfsd answers (NFSD_WRITEONLY_ATTRS_WORD1).
func (c *compound) curAttrs(req nfs4.Bitmap4, mask *nfs4.Bitmap4, a *nfs4.Fattr, buf *attrBuf) nfs4.Status {
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	if overlaps(req, v4WriteOnly) {
		return nfs4.ErrInval
	}
	andInto(mask, req, v4Supported)
	if n := c.cur.node; n != nil {
		c.pseudoAttrs(n, c.cur.fh(), a, buf)
		return nfs4.OK
	}
	srv, fh := c.cur.srv, c.cur.fh()
	var st unix.Statx_t
	if !overlaps(*mask, fsStatAttrs) && srv.statCached(fh, &st, c.credFor(srv)) {
		return c.exportAttrs(srv, &st, fh, -1, *mask, a, buf, false)
	}
	var o object
	st3 := srv.open(fh, &o, c.credFor(srv))
	defer o.close()
	if st3 != nfs3.StatusOK {
		return st4(st3)
	}
	root := isDir(&o.st) && mask.Has(nfs4.AttrMountedOnFileid) && o.path == ""
	return c.exportAttrs(srv, &o.st, fh, o.fd, *mask, a, buf, root)
}

func (c *compound) opGetattr(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.getattr
	r := &c.ops.getattrRes
	r.Status = nfs4.OK
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.curAttrs(a.AttrRequest, &r.Mask, &r.Attr, &c.ops.attrBuf)
	}
	c.w.Add(r)
	return r.Status
}

// opVerify is VERIFY and NVERIFY: the server encodes its own values of the attributes
// the client sent and compares the bytes (RFC 8881 §18.15.3, §18.31.3). rdattr_error
// and the write-only attributes (curAttrs) have no value to compare: NFS4ERR_INVAL.
func (c *compound) opVerify(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.verify
	a.OpNum = op
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	if a.Attrs.Mask.Has(nfs4.AttrRdattrError) {
		return c.only(op, nfs4.ErrInval)
	}
	var mask nfs4.Bitmap4 = c.ops.verifyMask[:0]
	andInto(&mask, a.Attrs.Mask, v4Supported)
	c.ops.verifyMask = mask
	if !bitmapEqual(mask, a.Attrs.Mask) {
		return c.only(op, nfs4.ErrAttrnotsupp)
	}
	var attrs nfs4.Fattr
	if st := c.curAttrs(a.Attrs.Mask, &mask, &attrs, &c.ops.attrBuf); st != nfs4.OK {
		return c.only(op, st)
	}
	var e xdr.Encoder
	e.Reset(c.ops.verifyBuf[:0])
	nfs4.EncodeFattr(&e, mask, &attrs)
	c.ops.verifyBuf = e.Bytes()
	// The encoding is the mask, the length of attr_vals, then attr_vals.
	vals := e.Bytes()[4+4*len(mask)+4:]
	same := bytes.Equal(vals, a.Attrs.Vals)
	switch {
	case op == nfs4.OpVerify && !same:
		return c.only(op, nfs4.ErrNotSame)
	case op == nfs4.OpNverify && same:
		return c.only(op, nfs4.ErrSame)
	}
	return c.only(op, nfs4.OK)
}

// bitmapEqual reports whether a and b have the same bits set.
func bitmapEqual(a, b nfs4.Bitmap4) bool {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y uint32
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}

func (c *compound) opAccess(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.access
	r := &c.ops.accessRes
	*r = nfs4.AccessRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.access(a.Access, r)
	}
	c.w.Add(r)
	return r.Status
}

// access evaluates the ACCESS4 bits asked for, with the same rules as NFSv3's
// ACCESS: the mode bits for the caller's (squashed) identity, no modification on a
// read-only export. The pseudo file system may be read and searched only.
func (c *compound) access(want uint32, r *nfs4.AccessRes) nfs4.Status {
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	const all = nfs4.Access4Read | nfs4.Access4Lookup | nfs4.Access4Modify | nfs4.Access4Extend |
		nfs4.Access4Delete | nfs4.Access4Execute
	if c.cur.node != nil {
		r.Supported = want & all
		r.Access = want & (nfs4.Access4Read | nfs4.Access4Lookup)
		return nfs4.OK
	}
	srv, fh := c.cur.srv, c.cur.fh()
	var st unix.Statx_t
	if !srv.statCached(fh, &st, c.credFor(srv)) {
		var o object
		st3 := srv.open(fh, &o, c.credFor(srv))
		st = o.st
		o.close()
		if st3 != nfs3.StatusOK {
			return st4(st3)
		}
	}
	cr := c.credFor(srv)
	var granted uint32
	if allowed(cr, &st, permR) {
		granted |= nfs4.Access4Read
	}
	if allowed(cr, &st, permW) && !cr.ro {
		granted |= nfs4.Access4Modify | nfs4.Access4Extend
		if isDir(&st) {
			granted |= nfs4.Access4Delete
		}
	}
	if allowed(cr, &st, permX) {
		if isDir(&st) {
			granted |= nfs4.Access4Lookup
		} else {
			granted |= nfs4.Access4Execute
		}
	}
	r.Supported = want & all
	r.Access = want & granted
	return nfs4.OK
}

func (c *compound) opSetattr(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.setattr
	r := &c.ops.setattrRes
	r.Status, r.AttrsSet = nfs4.OK, r.AttrsSet[:0]
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.setattr(c.stateid(a.Stateid), a.Mask, &a.Attr)
		if r.Status == nfs4.OK {
			r.AttrsSet = append(r.AttrsSet, a.Mask...)
		}
	}
	c.w.Add(r)
	return r.Status
}

// sattr3 converts the settable NFSv4 attributes in mask to NFSv3's sattr3, so that
// SETATTR (and the attributes of CREATE and OPEN) go through the very checks NFSv3's
// SETATTR makes. A time before 1970 or after 2106 (which sattr3 cannot hold) is
// NFS4ERR_INVAL, an owner that maps to no id NFS4ERR_BADOWNER, and an attribute that
// cannot be set NFS4ERR_INVAL.
func sattr3(mask nfs4.Bitmap4, a *nfs4.Fattr, s *nfs3.Sattr) nfs4.Status {
	*s = nfs3.Sattr{}
	for i, w := range mask {
		var allowed uint32
		if i < len(v4Settable) {
			allowed = v4Settable[i]
		}
		if w&^allowed != 0 {
			return nfs4.ErrInval
		}
	}
	if mask.Has(nfs4.AttrSize) {
		s.SetSize, s.Size = true, a.Size
	}
	if mask.Has(nfs4.AttrMode) {
		s.SetMode, s.Mode = true, a.Mode&0o7777
	}
	if mask.Has(nfs4.AttrOwner) {
		uid, ok := parseOwner(a.Owner, false)
		if !ok {
			return nfs4.ErrBadowner
		}
		s.SetUID, s.UID = true, uid
	}
	if mask.Has(nfs4.AttrOwnerGroup) {
		gid, ok := parseOwner(a.OwnerGroup, true)
		if !ok {
			return nfs4.ErrBadowner
		}
		s.SetGID, s.GID = true, gid
	}
	for _, t := range [2]struct {
		attr nfs4.Attr
		in   *nfs4.SetTime4
		out  *nfs3.SetTime
	}{{nfs4.AttrTimeAccessSet, &a.TimeAccessSet, &s.Atime}, {nfs4.AttrTimeModifySet, &a.TimeModifySet, &s.Mtime}} {
		if !mask.Has(t.attr) {
			continue
		}
		if t.in.How == nfs4.SetToServerTime4 {
			t.out.How = nfs3.SetToServerTime
			continue
		}
		if t.in.Time.Seconds < 0 || t.in.Time.Seconds > math.MaxUint32 || t.in.Time.Nseconds >= 1e9 {
			return nfs4.ErrInval
		}
		t.out.How = nfs3.SetToClientTime
		t.out.Time = nfs3.Time{Seconds: uint32(t.in.Time.Seconds), Nseconds: t.in.Time.Nseconds}
	}
	return nfs4.OK
}

// setattr sets the attributes of the current file handle. A size change is I/O: the
// stateid (the current stateid already resolved, RFC 8881 §16.2.3.1.2) must allow
// writing (nfs4state CheckIO); the other attributes ignore it, as RFC 8881 §18.30.3
// allows.
func (c *compound) setattr(sid nfs4.Stateid4, mask nfs4.Bitmap4, attrs *nfs4.Fattr) nfs4.Status {
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	var s3 nfs3.SetattrArgs
	if st := sattr3(mask, attrs, &s3.Attr); st != nfs4.OK {
		return st
	}
	if c.cur.node != nil {
		return nfs4.ErrRofs
	}
	srv := c.cur.srv
	var o object
	st3 := srv.open(c.cur.fh(), &o, c.credFor(srv))
	defer o.close()
	if st3 != nfs3.StatusOK {
		return st4(st3)
	}
	if s3.Attr.SetSize && isReg(&o.st) {
		if st := c.v.state.CheckIO(c.clientID, sid, fileKeyOf(&o.st), true); st != nfs4.OK {
			return st
		}
	}
	cr := c.credFor(srv)
	if st3 := srv.doSetattr(&o, &s3, cr); st3 != nfs3.StatusOK {
		return st4(st3)
	}
	if cr.ro {
		return nfs4.OK // a read-only caller's SETATTR sets nothing (NFS4ERR_ROFS otherwise)
	}
	return errStatus4(srv.stableObject(&o))
}
