//go:build linux

package nfsserver

import (
	"math"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
)

// OPEN, OPEN_DOWNGRADE and CLOSE.
//
// OPEN supports CLAIM_NULL (a name in the current directory), CLAIM_FH (the current
// file) and CLAIM_PREVIOUS (a reclaim after a server restart, during the grace
// period); the delegation claims are NFS4ERR_NOTSUPP, since this server grants no
// delegations (every OPEN answers OPEN_DELEGATE_NONE, or OPEN_DELEGATE_NONE_EXT when
// the client expressed a delegation wish). Files are created as NFSv3's CREATE makes
// them: UNCHECKED4 and GUARDED4 with their createattrs, of which attrset names those
// the file got (see createdFD; a file that existed gets the size only), EXCLUSIVE4
// and EXCLUSIVE4_1 with the verifier stored in the new file's mtime and atime
// seconds (so a retried OPEN finds its own file), which the reply's attrset names
// (time_access_set and time_modify_set) so that the client sets the real times
// afterwards; EXCLUSIVE4_1 also applies the createattrs suppattr_exclcreat allows. The file must be a regular
// file the caller may read or write as share_access asks (directory: NFS4ERR_ISDIR,
// symbolic link: NFS4ERR_SYMLINK, other: NFS4ERR_WRONG_TYPE, for UNCHECKED4 too; GUARDED4,
// and an exclusive create whose verifier does not match, refuse an existing name of any
// type with NFS4ERR_EXIST). Share reservations and
// open stateids are the state manager's (NFS4ERR_SHARE_DENIED, upgrades, grace).
//
// The size of the createattrs is a write of the file: it is applied only once the
// share reservation is granted, so that a refused OPEN truncates nothing (as knfsd
// truncates after its share checks), and the OPEN is taken back if it fails. An OPEN
// that would change the size of an existing file without OPEN4_SHARE_ACCESS_WRITE is
// NFS4ERR_INVAL (as from knfsd): holding no write access, it could otherwise write
// under another owner's OPEN4_SHARE_DENY_WRITE.

// exclusiveSet is the attrset of an exclusive create: the attributes holding the
// verifier.
var exclusiveSet = nfs4.NewBitmap(nfs4.AttrTimeAccessSet, nfs4.AttrTimeModifySet)

func (c *compound) opOpen(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.open
	r := &c.ops.openRes
	*r = nfs4.OpenRes{AttrSet: r.AttrSet[:0]}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.open(a, r)
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) open(a *nfs4.OpenArgs, r *nfs4.OpenRes) nfs4.Status {
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	switch a.Claim.Claim {
	case nfs4.ClaimNull:
		return c.openByName(a, r)
	case nfs4.ClaimFH, nfs4.ClaimPrevious:
		if a.OpenType == nfs4.Open4Create {
			return nfs4.ErrInval
		}
		return c.openFile(a, r, false, createSize{})
	}
	return nfs4.ErrNotsupp
}

// createSize is the size attribute of an OPEN4_CREATE's createattrs (cva_attrs for
// EXCLUSIVE4_1), which OPEN applies after the share reservation (see above).
type createSize struct {
	set  bool
	size uint64
}

// take moves the size out of s into z, so that the file is created without it.
func (z *createSize) take(s *nfs3.Sattr) {
	z.set, z.size = s.SetSize, s.Size
	s.SetSize, s.Size = false, 0
}

// openByName opens (and with OPEN4_CREATE creates) the file named by CLAIM_NULL in
// the current directory, which it then makes the current file handle.
func (c *compound) openByName(a *nfs4.OpenArgs, r *nfs4.OpenRes) nfs4.Status {
	name := a.Claim.File
	if st := checkName(name); st != nfs4.OK {
		return st
	}
	if n := c.cur.node; n != nil {
		kid := n.lookup(string(name))
		switch {
		case a.OpenType == nfs4.Open4Create:
			return nfs4.ErrRofs
		case kid == nil || !kid.visible(c.admits):
			return nfs4.ErrNoent
		}
		return nfs4.ErrIsdir
	}
	srv := c.cur.srv
	var dir object
	defer dir.close()
	var fhbuf [HandleSize]byte
	var fh []byte
	fresh := false
	var size createSize
	if a.OpenType == nfs4.Open4Create {
		if st := c.openCreateDir4(&dir, a); st != nfs4.OK {
			return st
		}
		var st nfs4.Status
		fh, fresh, size, st = c.openCreate(srv, &dir, a, r, fhbuf[:0])
		if st != nfs4.OK {
			return st
		}
		r.Cinfo = cinfo(&dir)
	} else {
		if st := c.openCurDir(&dir, permX); st != nfs4.OK {
			return st
		}
		var child unix.Statx_t
		p, st3 := srv.child(&dir, name, &child, c.credFor(srv))
		if st3 != nfs3.StatusOK {
			return st4(st3)
		}
		srv.idx.put(keyOf(&child), p)
		fh = srv.handles.encode(fhbuf[:0], idOf(&child))
		r.Cinfo.Before, r.Cinfo.After = changeOf(&dir.st), changeOf(&dir.st)
	}
	id, _ := srv.handles.decode(fh) // issued just now by srv
	c.setExportFH(srv, fh, id)
	return c.openFile(a, r, fresh, size)
}

// openCreateDir4 opens the current directory for an OPEN4_CREATE: search permission
// always, and write permission only when the OPEN may create the file. Of an existing
// name, an UNCHECKED4 OPEN opens it, as open(2) with O_CREAT does, and a GUARDED4 or
// exclusive one is NFS4ERR_EXIST (or, an exclusive one with the name's verifier, a
// retry that opens it), as open(2) with O_CREAT|O_EXCL fails EEXIST: none needs to
// write the directory (as knfsd checks only for a name it creates). On a read-only
// export every OPEN4_CREATE is NFS4ERR_ROFS, as from knfsd.
func (c *compound) openCreateDir4(dir *object, a *nfs4.OpenArgs) nfs4.Status {
	if st := c.openCurDir(dir, permX); st != nfs4.OK {
		return st
	}
	cr := c.credFor(c.cur.srv)
	if cr.ro {
		return nfs4.ErrRofs
	}
	var st unix.Statx_t
	if statAt(dir.fd, string(a.Claim.File), &st) == nil {
		return nfs4.OK
	}
	if !allowed(cr, &dir.st, permW) {
		return nfs4.ErrAccess
	}
	return nfs4.OK
}

// openCreate creates the file of an OPEN4_CREATE in dir (or finds the one a retried
// exclusive create made) as NFSv3's CREATE does, but without the size attribute, and
// returns its handle, whether this call created it and the size to apply. It asks the
// state manager first whether it would grant the OPEN, so that one refused (during
// the grace period, say: RFC 8881 §8.4.2.1) creates no file.
func (c *compound) openCreate(srv *Server, dir *object, a *nfs4.OpenArgs, r *nfs4.OpenRes, fhbuf []byte) ([]byte, bool, createSize, nfs4.Status) {
	cr := c.credFor(srv)
	h := &a.How
	a3 := nfs3.CreateArgs{Where: nfs3.DirOpArgs{Name: a.Claim.File}}
	var excl nfs3.Sattr
	var size createSize
	switch h.Mode {
	case nfs4.Unchecked4, nfs4.Guarded4:
		a3.Mode = nfs3.Unchecked
		if h.Mode == nfs4.Guarded4 {
			a3.Mode = nfs3.Guarded
		}
		if st := sattr3(h.Mask, &h.Attrs, &a3.Attr); st != nfs4.OK {
			return nil, false, createSize{}, st
		}
		size.take(&a3.Attr)
	case nfs4.Exclusive4, nfs4.Exclusive41:
		a3.Mode, a3.Verf = nfs3.Exclusive, h.CreateVerf
		if h.Mode == nfs4.Exclusive41 {
			for i, w := range h.Mask {
				if i >= len(v4ExclCreat) || w&^v4ExclCreat[i] != 0 {
					return nil, false, createSize{}, nfs4.ErrInval
				}
			}
			if st := sattr3(h.Mask, &h.Attrs, &excl); st != nfs4.OK {
				return nil, false, createSize{}, st
			}
			size.take(&excl)
		}
		r.AttrSet = append(r.AttrSet[:0], exclusiveSet...)
	default:
		return nil, false, createSize{}, nfs4.ErrInval
	}
	// Whether the name exists decides "fresh" (doCreate reports only success).
	var before unix.Statx_t
	existed := statAt(dir.fd, string(a.Claim.File), &before) == nil
	if h.Mode == nfs4.Unchecked4 && existed && size.size != 0 {
		// An UNCHECKED4 OPEN of an existing file may truncate it; any other size
		// is ignored (as knfsd does), not applied.
		size = createSize{}
	}
	// An OPEN the state manager would refuse (the grace period, RECLAIM_COMPLETE not
	// sent, a share reservation, full tables) creates nothing.
	var key nfs4state.FileKey
	if existed {
		key = fileKeyOf(&before)
	}
	if st := c.v.state.CheckOpen(openArgs(c.clientID, a, key)); st != nfs4.OK {
		return nil, false, createSize{}, st
	}
	var r3 nfs3.CreateRes
	var buf [HandleSize]byte
	set, st3 := srv.doCreate(dir, &a3, cr, &r3, buf[:])
	if st3 != nfs3.StatusOK {
		if st3 == nfs3.StatusExist && existed && h.Mode == nfs4.Unchecked4 && !isReg(&before) {
			// UNCHECKED4 opens what the name holds, which is no regular file:
			// the status of OPEN of it (RFC 8881 §18.16.4), as from knfsd. GUARDED4
			// and the exclusive modes keep NFS4ERR_EXIST, whatever the type
			// (§18.16.3).
			return nil, false, createSize{}, regTypeStatus(&before)
		}
		return nil, false, createSize{}, st4(st3)
	}
	fh := append(fhbuf, r3.Obj.FH...)
	if a3.Mode != nfs3.Exclusive {
		// What the new file got (nothing but the size for a file that existed),
		// and the size, which openFile applies once the OPEN is granted.
		set.bitmap(&r.AttrSet)
		if size.set {
			r.AttrSet.Set(nfs4.AttrSize)
		}
	}
	if h.Mode == nfs4.Exclusive41 && existed {
		size = createSize{} // a retried exclusive create: its size was applied
	}
	if h.Mode == nfs4.Exclusive41 && !existed && (excl.SetMode || excl.SetUID || excl.SetGID) {
		var o object
		if st3 := srv.open(fh, &o, cr); st3 != nfs3.StatusOK {
			return nil, false, createSize{}, st4(st3)
		}
		st3 := srv.doSetattr(&o, &nfs3.SetattrArgs{Attr: excl}, cr)
		if st3 == nfs3.StatusOK {
			st3 = statusOf(srv.stableObject(&o))
		}
		o.close()
		if st3 != nfs3.StatusOK {
			return nil, false, createSize{}, st4(st3)
		}
		for i, w := range h.Mask {
			for len(r.AttrSet) <= i {
				r.AttrSet = append(r.AttrSet, 0)
			}
			r.AttrSet[i] |= w // within v4ExclCreat, checked above
		}
	}
	return fh, !existed, size, nfs4.OK
}

// openFile opens the current file handle's file: type and permission checks (none
// for a file this OPEN just created, which its creator may open as it asked), then
// the share reservation and the open stateid, then the size of an OPEN4_CREATE's
// createattrs, the OPEN taken back if that fails.
func (c *compound) openFile(a *nfs4.OpenArgs, r *nfs4.OpenRes, fresh bool, size createSize) nfs4.Status {
	if c.cur.node != nil {
		return nfs4.ErrIsdir
	}
	srv, cr := c.cur.srv, c.credFor(c.cur.srv)
	var o object
	st3 := srv.open(c.cur.fh(), &o, cr)
	defer o.close()
	if st3 != nfs3.StatusOK {
		return st4(st3)
	}
	if !isReg(&o.st) {
		return regTypeStatus(&o.st)
	}
	access := a.ShareAccess & nfs4.ShareAccessBoth
	// DENY_READ keeps every other open from reading the file: it takes write
	// permission, as with knfsd (do_open_permission), or a caller that may only read
	// the file could lock all its other readers out.
	denyRead := a.ShareDeny&nfs4.ShareDenyRead != 0
	if (access&nfs4.ShareAccessWrite != 0 || denyRead) && cr.ro {
		return nfs4.ErrRofs
	}
	if !fresh {
		if access&nfs4.ShareAccessRead != 0 && !mayIO(cr, &o.st, permR) {
			return nfs4.ErrAccess
		}
		if (access&nfs4.ShareAccessWrite != 0 || denyRead) && !mayIO(cr, &o.st, permW) {
			return nfs4.ErrAccess
		}
		if size.set && access&nfs4.ShareAccessWrite == 0 {
			return nfs4.ErrInval
		}
	}
	sid, undo, st := c.v.state.OpenUndoable(openArgs(c.clientID, a, fileKeyOf(&o.st)))
	if st != nfs4.OK {
		return st
	}
	if size.set {
		if st := c.openTruncate(srv, &o, size.size); st != nfs4.OK {
			c.v.state.UndoOpen(undo)
			return st
		}
	}
	r.Stateid = sid
	r.Rflags = nfs4.Open4ResultLocktypePosix
	r.Delegation = noDelegation(a.ShareAccess)
	c.setStateid(sid)
	return nfs4.OK
}

// openTruncate sets the size of the file o an OPEN opened, as its createattrs ask
// (sizes past what Linux holds clamped, as NFSv3's CREATE does), and makes it stable on
// a sync export.
func (c *compound) openTruncate(srv *Server, o *object, size uint64) nfs4.Status {
	if err := truncatePath(procPath(o.fd), int64(min(size, math.MaxInt64))); err != nil {
		return errStatus4(err)
	}
	return errStatus4(srv.stableObject(o))
}

// truncatePath sets the size of the file at path (unix.Truncate; tests make it fail).
var truncatePath = unix.Truncate

// openArgs is what the state manager judges of an OPEN by clientID of file.
func openArgs(clientID uint64, a *nfs4.OpenArgs, file nfs4state.FileKey) nfs4state.OpenArgs {
	return nfs4state.OpenArgs{ClientID: clientID, Owner: a.Owner.Owner, File: file,
		Access: a.ShareAccess, Deny: a.ShareDeny, Claim: a.Claim.Claim}
}

// noDelegation is the open_delegation4 of every OPEN: none, with a reason when the
// client expressed a wish (OPEN4_SHARE_ACCESS_WANT_*), as NFSv4.1 requires then.
func noDelegation(access uint32) nfs4.OpenDelegation4 {
	switch access & nfs4.ShareAccessWantDelegMask {
	case nfs4.ShareAccessWantNoPreference:
		return nfs4.OpenDelegation4{Type: nfs4.DelegateNone}
	case nfs4.ShareAccessWantNoDeleg:
		return nfs4.OpenDelegation4{Type: nfs4.DelegateNoneExt, WhyNone: nfs4.WNDNotWanted}
	case nfs4.ShareAccessWantCancel:
		return nfs4.OpenDelegation4{Type: nfs4.DelegateNoneExt, WhyNone: nfs4.WNDCancelled}
	}
	return nfs4.OpenDelegation4{Type: nfs4.DelegateNoneExt, WhyNone: nfs4.WNDResource}
}

func (c *compound) opOpenDowngrade(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.openDowngrade
	r := &c.ops.stateidRes
	*r = nfs4.StateidRes{OpNum: op}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if _, key, st := c.curFile(); st != nfs4.OK {
		r.Status = st
	} else {
		r.Stateid, r.Status = c.v.state.OpenDowngrade(c.clientID, c.stateid(a.OpenStateid), key, a.ShareAccess, a.ShareDeny)
		if r.Status == nfs4.OK {
			c.setStateid(r.Stateid)
		}
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) opClose(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.close
	r := &c.ops.stateidRes
	*r = nfs4.StateidRes{OpNum: op}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if _, key, st := c.curFile(); st != nfs4.OK {
		r.Status = st
	} else {
		r.Stateid, r.Status = c.v.state.Close(c.clientID, c.stateid(a.OpenStateid), key)
		if r.Status == nfs4.OK {
			c.setStateid(r.Stateid)
		}
	}
	c.w.Add(r)
	return r.Status
}
