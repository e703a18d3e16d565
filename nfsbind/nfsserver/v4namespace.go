//go:build linux

package nfsserver

import (
	"math"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// Namespace operations: CREATE, REMOVE, RENAME, LINK, READLINK and READDIR. They
// share NFSv3's code and rules: the same permission checks (write and search on the
// directory, the sticky bit, protected hard links, who may make devices), the
// caller's ownership of new objects, and on sync exports the same fsyncs before the
// reply. change_info4 is the directory's change attribute (ctime) before and after,
// not atomic.

// changeOf is the change attribute of st.
func changeOf(st *unix.Statx_t) uint64 { return uint64(st.Ctime.Sec)*1e9 + uint64(st.Ctime.Nsec) }

// cinfo returns the change_info4 of the open directory dir, whose attributes before
// the change dir.st holds.
func cinfo(dir *object) nfs4.ChangeInfo4 {
	ci := nfs4.ChangeInfo4{Before: changeOf(&dir.st)}
	var now unix.Statx_t
	if statFD(dir.fd, &now) == nil {
		ci.After = changeOf(&now)
	}
	return ci
}

// openChangeDir4 opens the current file handle, a directory of an export, for a
// change of its entries: write and search permission, not read-only. The pseudo file
// system is read-only.
func (c *compound) openChangeDir4(dir *object) nfs4.Status {
	dir.fd = -1
	switch {
	case c.cur.n == 0:
		return nfs4.ErrNofilehandle
	case c.cur.node != nil:
		return nfs4.ErrRofs
	}
	if st := c.openCurDir(dir, permW|permX); st != nfs4.OK {
		return st
	}
	if c.credFor(c.cur.srv).ro {
		return nfs4.ErrRofs
	}
	return nfs4.OK
}

func (c *compound) opCreate(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.create
	r := &c.ops.createRes
	*r = nfs4.CreateRes{AttrSet: r.AttrSet[:0]}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.create(a, r)
	}
	c.w.Add(r)
	return r.Status
}

// bitmap sets *dst, reusing its storage, to the attributes of a, as the attrset of
// CREATE and OPEN names the createattrs the server set (RFC 8881 §18.4.4, §18.16.4):
// mode, owner and owner_group when createdFD applied them. CREATE accepts the times
// and the size but sets neither; OPEN adds the size it sets.
func (a appliedAttrs) bitmap(dst *nfs4.Bitmap4) {
	*dst = (*dst)[:0]
	if a.mode {
		dst.Set(nfs4.AttrMode)
	}
	if a.uid {
		dst.Set(nfs4.AttrOwner)
	}
	if a.gid {
		dst.Set(nfs4.AttrOwnerGroup)
	}
}

func (c *compound) create(a *nfs4.CreateArgs, r *nfs4.CreateRes) nfs4.Status {
	switch a.ObjType {
	case nfs4.NF4Dir, nfs4.NF4Lnk, nfs4.NF4Blk, nfs4.NF4Chr, nfs4.NF4Sock, nfs4.NF4Fifo:
	default:
		return nfs4.ErrBadtype
	}
	if st := checkName(a.ObjName); st != nfs4.OK {
		return st
	}
	if a.ObjType == nfs4.NF4Lnk && len(a.LinkData) > nfs4.MaxPathLen {
		return nfs4.ErrNametoolong // longer than PATH_MAX: symlink(2) says ENAMETOOLONG
	}
	var attr nfs3.Sattr
	if st := sattr3(a.Mask, &a.Attrs, &attr); st != nfs4.OK {
		return st
	}
	var dir object
	st := c.openChangeDir4(&dir)
	defer dir.close()
	if st != nfs4.OK {
		return st
	}
	srv, cr, name := c.cur.srv, c.credFor(c.cur.srv), string(a.ObjName)
	mode := uint32(0o755)
	if a.ObjType != nfs4.NF4Dir {
		mode = 0o644
	}
	if attr.SetMode {
		mode = attr.Mode
	}
	var err error
	switch a.ObjType {
	case nfs4.NF4Dir:
		err = unix.Mkdirat(dir.fd, name, mode)
	case nfs4.NF4Lnk:
		err = unix.Symlinkat(string(a.LinkData), dir.fd, name)
	case nfs4.NF4Blk, nfs4.NF4Chr:
		if cr.uid != 0 {
			return nfs4.ErrPerm // only root makes devices, as NFSv3's MKNOD
		}
		kind := uint32(unix.S_IFCHR)
		if a.ObjType == nfs4.NF4Blk {
			kind = unix.S_IFBLK
		}
		err = unix.Mknodat(dir.fd, name, mode|kind, int(unix.Mkdev(a.DevData.Major, a.DevData.Minor)))
	case nfs4.NF4Sock:
		err = unix.Mknodat(dir.fd, name, mode|unix.S_IFSOCK, 0)
	case nfs4.NF4Fifo:
		err = unix.Mknodat(dir.fd, name, mode|unix.S_IFIFO, 0)
	}
	if err != nil {
		return errStatus4(err)
	}
	var r3 nfs3.CreateRes
	var fhbuf [HandleSize]byte
	set, st3 := srv.created(&dir, name, cr, &attr, true, &r3, fhbuf[:])
	if st3 != nfs3.StatusOK {
		return st4(st3)
	}
	r.Cinfo = cinfo(&dir)
	set.bitmap(&r.AttrSet)
	id, _ := srv.handles.decode(r3.Obj.FH) // issued just now by srv
	c.setExportFH(srv, r3.Obj.FH, id)
	return nfs4.OK
}

func (c *compound) opRemove(op nfs4.OpNum) nfs4.Status { return c.nameCinfoOp(op, (*compound).remove) }

// nameCinfoOp runs an operation whose arguments are a component name and whose
// result is change_info4 (REMOVE, LINK): decode, run do, add the result.
func (c *compound) nameCinfoOp(op nfs4.OpNum, do func(*compound, []byte, *nfs4.ChangeInfo4) nfs4.Status) nfs4.Status {
	a := &c.ops.name
	a.OpNum = op
	r := &c.ops.cinfoRes
	*r = nfs4.CinfoRes{OpNum: op}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = do(c, a.Name, &r.Cinfo)
	}
	c.w.Add(r)
	return r.Status
}

// remove is REMOVE: a file or an empty directory.
func (c *compound) remove(nameb []byte, ci *nfs4.ChangeInfo4) nfs4.Status {
	if st := checkName(nameb); st != nfs4.OK {
		return st
	}
	var dir object
	st := c.openChangeDir4(&dir)
	defer dir.close()
	if st != nfs4.OK {
		return st
	}
	srv, cr, name := c.cur.srv, c.credFor(c.cur.srv), string(nameb)
	var child unix.Statx_t
	if err := statAt(dir.fd, name, &child); err != nil {
		return errStatus4(err)
	}
	if !mayDelete(cr, &dir.st, &child) {
		return nfs4.ErrAccess
	}
	flags := 0
	if isDir(&child) {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(dir.fd, name, flags); err != nil {
		return errStatus4(err)
	}
	srv.idx.del(keyOf(&child), joinPath(dir.path, name))
	srv.files.forget(keyOf(&child))
	if err := srv.stableDir(&dir); err != nil {
		return errStatus4(err)
	}
	*ci = cinfo(&dir)
	return nfs4.OK
}

// savedDir opens the saved file handle's object for RENAME (the source directory) or
// LINK (the file), which must be of the current handle's export: NFS4ERR_XDEV
// otherwise, as knfsd answers across exports.
func (c *compound) openSaved(o *object) nfs4.Status {
	o.fd = -1
	switch {
	case c.saved.n == 0:
		return nfs4.ErrNofilehandle
	case c.saved.node != nil && c.cur.node != nil:
		return nfs4.ErrRofs
	case c.saved.srv != c.cur.srv:
		return nfs4.ErrXdev
	}
	return st4(c.saved.srv.open(c.saved.fh(), o, c.credFor(c.saved.srv)))
}

func (c *compound) opRename(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.rename
	r := &c.ops.renameRes
	*r = nfs4.RenameRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.rename(a, r)
	}
	c.w.Add(r)
	return r.Status
}

// rename is RENAME from the saved file handle's directory to the current one's.
func (c *compound) rename(a *nfs4.RenameArgs, r *nfs4.RenameRes) nfs4.Status {
	if st := checkName(a.OldName); st != nfs4.OK {
		return st
	}
	if st := checkName(a.NewName); st != nfs4.OK {
		return st
	}
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	var from, to object
	st := c.openSaved(&from)
	defer from.close()
	if st != nfs4.OK {
		return st
	}
	srv, cr := c.cur.srv, c.credFor(c.cur.srv)
	if !isDir(&from.st) {
		return dirTypeStatus(&from.st)
	}
	if !allowed(cr, &from.st, permW|permX) {
		return nfs4.ErrAccess
	}
	st = c.openChangeDir4(&to)
	defer to.close()
	if st != nfs4.OK {
		return st
	}
	a3 := nfs3.RenameArgs{From: nfs3.DirOpArgs{Name: a.OldName}, To: nfs3.DirOpArgs{Name: a.NewName}}
	if st3 := srv.doRename(&from, &to, &a3, cr); st3 != nfs3.StatusOK {
		return st4(st3)
	}
	if err := srv.stableDirs(&from, &to); err != nil {
		return errStatus4(err)
	}
	r.SourceCinfo, r.TargetCinfo = cinfo(&from), cinfo(&to)
	return nfs4.OK
}

func (c *compound) opLink(op nfs4.OpNum) nfs4.Status { return c.nameCinfoOp(op, (*compound).link) }

// link is LINK: a new name in the current directory for the saved file handle's file.
func (c *compound) link(nameb []byte, ci *nfs4.ChangeInfo4) nfs4.Status {
	if st := checkName(nameb); st != nfs4.OK {
		return st
	}
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	var file, dir object
	st := c.openSaved(&file)
	defer file.close()
	if st != nfs4.OK {
		return st
	}
	st = c.openChangeDir4(&dir)
	defer dir.close()
	if st != nfs4.OK {
		return st
	}
	srv, cr := c.cur.srv, c.credFor(c.cur.srv)
	switch {
	case isDir(&file.st):
		return nfs4.ErrIsdir
	case !mayHardlink(cr, &file.st):
		return nfs4.ErrPerm
	}
	if err := unix.Linkat(unix.AT_FDCWD, procPath(file.fd), dir.fd, string(nameb), unix.AT_SYMLINK_FOLLOW); err != nil {
		return errStatus4(err)
	}
	if err := srv.stableObject(&file); err != nil {
		return errStatus4(err)
	}
	if err := srv.stableDir(&dir); err != nil {
		return errStatus4(err)
	}
	*ci = cinfo(&dir)
	return nfs4.OK
}

func (c *compound) opReadlink(op nfs4.OpNum) nfs4.Status {
	r := &c.ops.readlinkRes
	*r = nfs4.ReadlinkRes{}
	var buf [nfs4.MaxPathLen + 1]byte
	r.Status = c.readlink(buf[:], r)
	c.w.Add(r)
	return r.Status
}

func (c *compound) readlink(buf []byte, r *nfs4.ReadlinkRes) nfs4.Status {
	switch {
	case c.cur.n == 0:
		return nfs4.ErrNofilehandle
	case c.cur.node != nil:
		return nfs4.ErrInval
	}
	var o object
	st3 := c.cur.srv.open(c.cur.fh(), &o, c.credFor(c.cur.srv))
	defer o.close()
	switch {
	case st3 != nfs3.StatusOK:
		return st4(st3)
	case !isLnk(&o.st):
		return nfs4.ErrInval
	}
	n, err := unix.Readlinkat(o.fd, "", buf)
	switch {
	case err != nil:
		return errStatus4(err)
	case n > nfs4.MaxPathLen:
		return nfs4.ErrNametoolong
	}
	r.Link = buf[:n]
	return nfs4.OK
}

// READDIR.
//
// Cookies and the listing are NFSv3's (readdir.go): a cookie is a keyed hash of the
// entry's name, never 0, 1 or 2, and the listing is in cookie order, so a cookie
// stays valid whatever changes and the cookie verifier (the directory's mtime) is
// never cause to refuse one. "." and ".." are not returned (RFC 8881 §18.23.3).
// Entry attributes need search permission on the directory as well as read (a LOOKUP
// of each entry would): without it, unless only rdattr_error is asked for, each entry
// is listed with rdattr_error NFS4ERR_ACCESS alone, as from knfsd, whose lookup of the
// entry fails, and a READDIR that does not ask for rdattr_error fails NFS4ERR_ACCESS
// (§18.23.3). The pseudo file system
// lists the way to the exports the client is admitted to, its cookies hashes of the
// names too (pseudoCookie).

func (c *compound) opReaddir(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.readdir
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	c.w.Op(op)
	st, written := c.readdir(a)
	if !written {
		c.res.Uint32(uint32(st))
	}
	return st
}

// readdirLimit bounds the READDIR4resok by maxcount, the export's MaxDirReply and
// what the session's reply size leaves.
func (c *compound) readdirLimit(maxcount uint32, srv *Server) uint32 {
	limit := uint64(maxcount)
	if srv != nil {
		limit = min(limit, uint64(srv.opts.MaxDirReply))
	}
	if c.maxReply > 0 {
		left := c.maxReply - (c.res.Pos() - c.start) - 8
		limit = min(limit, uint64(max(left, 0)))
	}
	return uint32(min(limit, math.MaxUint32))
}

// readdir encodes READDIR4res and reports that it did (written), or returns the
// status of a failure found before anything was written.
func (c *compound) readdir(a *nfs4.ReaddirArgs) (st nfs4.Status, written bool) {
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle, false
	}
	if overlaps(a.AttrRequest, v4WriteOnly) {
		return nfs4.ErrInval, false // no value to give, as GETATTR (curAttrs)
	}
	// Cookies 1 and 2 are reserved (RFC 8881 §18.23.3), and a first READDIR (cookie
	// 0) carries a zero verifier: knfsd refuses anything else as a bad cookie.
	if a.Cookie == 1 || a.Cookie == 2 || (a.Cookie == 0 && a.CookieVerf != nfs4.Verifier{}) {
		return nfs4.ErrBadCookie, false
	}
	mask := &c.ops.readdirMask
	andInto(mask, a.AttrRequest, v4Supported)
	if n := c.cur.node; n != nil {
		return c.readdirPseudo(n, a, *mask)
	}
	srv := c.cur.srv
	attrsAsked := false
	for i, w := range *mask {
		if i == 0 {
			w &^= 1 << nfs4.AttrRdattrError
		}
		attrsAsked = attrsAsked || w != 0
	}
	var dir object
	st = c.openCurDir(&dir, permR)
	defer dir.close()
	if st != nfs4.OK {
		return st, false
	}
	cr := c.credFor(srv)
	searchable := !attrsAsked || allowed(cr, &dir.st, permX)
	if !searchable && !mask.Has(nfs4.AttrRdattrError) {
		return nfs4.ErrAccess, false
	}
	ents, err := srv.listDir(&dir, a.Cookie)
	if err != nil {
		return errStatus4(err), false
	}
	w := &c.ops.readdirEnc
	w.Begin(c.res, nfs4.Verifier(cookieVerf(&dir.st)), a.DirCount, c.readdirLimit(a.MaxCount, srv))
	eof := true
	attrs := &c.ops.readdirAttrs
	var child unix.Statx_t
	var fhbuf [HandleSize]byte
	for _, e := range ents {
		if e.name == "." || e.name == ".." {
			continue
		}
		if statAt(dir.fd, e.name, &child) != nil {
			continue // removed since it was listed
		}
		entMask, index := *mask, false
		var n *pseudoNode
		if searchable {
			n = c.exportAt(srv, &child)
		}
		switch {
		case !searchable:
			// The caller may not look the entry up: its name, with rdattr_error
			// NFS4ERR_ACCESS alone (asked for, as checked above).
			entMask = rdattrErrorOnly
			c.v.commonAttrs(attrs)
			attrs.RdattrError = nfs4.ErrAccess
		case n != nil:
			// The root of a nested export: as LOOKUP crosses into it.
			fh := n.export.handles.encode(fhbuf[:0], idOf(&child))
			if st := c.exportAttrs(n.export, &child, fh, -1, entMask, attrs, &c.ops.attrBuf, false); st != nfs4.OK {
				w.Abort(st)
				return st, true
			}
			attrs.MountedOnFileid = e.ino
		case !srv.visible(cr, &child):
			// A mount point the caller may not cross: its name, with rdattr_error
			// NFS4ERR_ACCESS and no other attribute, as knfsd answers an entry whose
			// attributes it cannot give; a READDIR asking for attributes but not
			// rdattr_error fails with that error, as RFC 8881 §18.23.3 has it (the
			// Linux client always asks for rdattr_error).
			if len(entMask) > 0 && !entMask.Has(nfs4.AttrRdattrError) {
				w.Abort(nfs4.ErrAccess)
				return nfs4.ErrAccess, true
			}
			if len(entMask) > 0 {
				entMask = rdattrErrorOnly
			}
			c.v.commonAttrs(attrs)
			attrs.RdattrError = nfs4.ErrAccess
		default:
			fh := srv.handles.encode(fhbuf[:0], idOf(&child))
			if st := c.exportAttrs(srv, &child, fh, -1, entMask, attrs, &c.ops.attrBuf, false); st != nfs4.OK {
				w.Abort(st)
				return st, true
			}
			index = true
		}
		if !w.Add(e.cookie, []byte(e.name), entMask, attrs) {
			eof = false
			break
		}
		if index {
			srv.idx.put(keyOf(&child), joinPath(dir.path, e.name))
		}
	}
	return c.readdirEnd(eof), true
}

// rdattrErrorOnly is the attribute mask of a READDIR entry whose attributes cannot
// be given: rdattr_error alone.
var rdattrErrorOnly = nfs4.NewBitmap(nfs4.AttrRdattrError)

// readdirEnd finishes the READDIR4res of readdir or readdirPseudo: NFS4ERR_TOOSMALL
// when the READDIR4resok would be larger than its limit (readdirLimit), because not
// even one entry fit and the directory has more, or because the limit cannot hold an
// empty one (RFC 8881 §18.23.3: maxcount counts the whole READDIR4resok, XDR
// included).
func (c *compound) readdirEnd(eof bool) nfs4.Status {
	w := &c.ops.readdirEnc
	if !w.Fits() || (w.Len() == 0 && !eof) {
		w.Abort(nfs4.ErrToosmall)
		return nfs4.ErrToosmall
	}
	w.Finish(eof)
	return nfs4.OK
}

// pseudoCookie is the READDIR cookie of a pseudo directory's entry name: as in an
// export, a hash of the name (so a cookie keeps its place when a table reload adds
// or removes entries), kept clear of 0, 1 and 2, which NFSv4 reserves
// (cookieOfHash). The hash is FNV-1a (pathID), unkeyed: these names are the export
// table's, which only the administrator writes, so nobody can choose one to collide
// with another (see readdir.go).
func pseudoCookie(name string) uint64 { return cookieOfHash(pathID(name)) }

func (c *compound) readdirPseudo(n *pseudoNode, a *nfs4.ReaddirArgs, mask nfs4.Bitmap4) (nfs4.Status, bool) {
	w := &c.ops.readdirEnc
	w.Begin(c.res, nfs4.Verifier{}, a.DirCount, c.readdirLimit(a.MaxCount, nil))
	eof := true
	attrs := &c.ops.readdirAttrs
	var fhbuf [HandleSize]byte
	for _, i := range n.byCookie {
		kid := n.kids[i]
		cookie := pseudoCookie(n.names[i])
		if a.Cookie != 0 && cookie <= a.Cookie {
			continue
		}
		if !kid.visible(c.admits) {
			continue
		}
		if kid.export != nil {
			fh := kid.export.rootHandle(fhbuf[:0])
			var st unix.Statx_t
			if fh == nil || statFD(kid.export.rootFD, &st) != nil {
				continue
			}
			if s := c.exportAttrs(kid.export, &st, fh, kid.export.rootFD, mask, attrs, &c.ops.attrBuf, true); s != nfs4.OK {
				w.Abort(s)
				return s, true
			}
		} else {
			c.pseudoAttrs(kid, kid.handle(fhbuf[:0]), attrs, &c.ops.attrBuf)
		}
		if !w.Add(cookie, []byte(n.names[i]), mask, attrs) {
			eof = false
			break
		}
	}
	return c.readdirEnd(eof), true
}
