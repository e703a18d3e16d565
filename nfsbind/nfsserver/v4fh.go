//go:build linux

package nfsserver

import (
	"encoding/binary"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// File handle operations: PUTFH, PUTROOTFH, PUTPUBFH, GETFH, SAVEFH, RESTOREFH,
// LOOKUP and LOOKUPP, and the access rules every operation on an export goes
// through.
//
// Access follows NFSv3 (see SetClients). A handle of an export the caller's client
// entry does not admit is NFS4ERR_STALE, as NFSv3 answers it (and knfsd, for whom the
// client has no such export); a TCP caller on a port a "secure" export refuses gets
// NFS4ERR_PERM. The pseudo file system shows each client only the way to the exports
// it is admitted to: any other name is NFS4ERR_NOENT, PUTFH of the handle of a
// pseudo directory hidden so NFS4ERR_STALE, and a client no export admits gets
// NFS4ERR_ACCESS from PUTROOTFH (a Linux mount then reports "access denied by
// server", as against knfsd). PUTPUBFH is PUTROOTFH: the public file handle is the
// root (RFC 8881 §18.20.3 allows that).

// admit checks the caller against srv's client list (see Server.admit).
func (c *compound) admit(srv *Server) nfs4.Status {
	if srv.clients.Load() == nil {
		return nfs4.OK
	}
	return st4(srv.admit(c.ctx, c.req))
}

// admits reports whether srv's client list admits the caller at all.
func (c *compound) admits(srv *Server) bool { return srv.grant(c.ctx, c.req) != nil }

// credFor returns the identity the call acts as on srv (see Server.credOf), computed
// once per COMPOUND and export.
func (c *compound) credFor(srv *Server) *cred {
	if c.credSrv != srv {
		c.cred = srv.credOf(c.ctx, c.req)
		c.credSrv = srv
	}
	return &c.cred
}

// setExportFH makes fh, srv's handle of id, the current file handle.
func (c *compound) setExportFH(srv *Server, fh []byte, id handleID) {
	c.cur.set(fh, srv, nil)
	c.cur.id = id
}

// setNewFH makes id, an object of srv, the current file handle.
func (c *compound) setNewFH(srv *Server, id handleID) {
	var buf [HandleSize]byte
	c.setExportFH(srv, srv.handles.encode(buf[:0], id), id)
}

// setPseudo makes the pseudo directory n the current file handle, or the root of the
// export at its path when there is one.
func (c *compound) setPseudo(n *pseudoNode) nfs4.Status {
	if n.export != nil {
		if st := c.admit(n.export); st != nfs4.OK {
			return st
		}
		var st unix.Statx_t
		if err := statFD(n.export.rootFD, &st); err != nil {
			return nfs4.ErrStale
		}
		c.setNewFH(n.export, idOf(&st))
		return nfs4.OK
	}
	var buf [pseudoHandleSize]byte
	c.cur.set(n.handle(buf[:0]), nil, n)
	return nfs4.OK
}

// rootHandle appends the handle of the export root to dst; nil when the root cannot
// be read.
func (s *Server) rootHandle(dst []byte) []byte {
	var st unix.Statx_t
	if err := statFD(s.rootFD, &st); err != nil {
		return nil
	}
	return s.handles.encode(dst, idOf(&st))
}

// putfh makes fh the current file handle: a pseudo directory's, or an export's that
// the caller may use. The object itself is resolved by the operations that use it.
// A pseudo handle is a hash of a path, which anyone can compute: one of a pseudo
// directory that leads to no export the caller is admitted to is NFS4ERR_STALE, as
// if the directory did not exist (LOOKUP hides it, NFS4ERR_NOENT).
func (c *compound) putfh(fh []byte) nfs4.Status {
	if isPseudoHandle(fh) {
		n := c.set.pseudo.node(fh)
		switch {
		case n == nil:
			return nfs4.ErrStale
		case n.export != nil:
			return c.setPseudo(n) // an export's path: its root, as LOOKUP gives it
		case !n.visible(c.admits):
			return nfs4.ErrStale
		}
		c.cur.set(fh, nil, n)
		return nfs4.OK
	}
	if len(fh) != HandleSize || fh[0] != handleVersion || fh[1]|fh[2]|fh[3] != 0 {
		return nfs4.ErrBadhandle
	}
	srv := c.set.byID[binary.BigEndian.Uint32(fh[4:])]
	if srv == nil {
		return nfs4.ErrStale // no export (any longer) of this id
	}
	if st := c.admit(srv); st != nfs4.OK {
		return st
	}
	if f := srv.files.get(fh); f != nil {
		// The open-file cache is keyed by whole handles it verified: this one is
		// genuine, and names f.id, without computing its MAC again.
		id := f.id
		srv.files.release(f)
		c.setExportFH(srv, fh, id)
		return nfs4.OK
	}
	id, st := srv.handles.decode(fh)
	if st != nfs3.StatusOK {
		return st4(st)
	}
	c.setExportFH(srv, fh, id)
	return nfs4.OK
}

func (c *compound) opPutfh(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.putfh
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	return c.only(op, c.putfh(a.Object))
}

func (c *compound) opPutrootfh(op nfs4.OpNum) nfs4.Status {
	root := c.set.pseudo.root
	if root.export == nil && !root.visible(c.admits) {
		return c.only(op, nfs4.ErrAccess)
	}
	return c.only(op, c.setPseudo(root))
}

func (c *compound) opGetfh(op nfs4.OpNum) nfs4.Status {
	r := &c.ops.getfh
	*r = nfs4.GetfhRes{Status: nfs4.OK}
	if c.cur.n == 0 {
		r.Status = nfs4.ErrNofilehandle
	} else {
		r.Object = c.cur.fh()
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) opSavefh(op nfs4.OpNum) nfs4.Status {
	if c.cur.n == 0 {
		return c.only(op, nfs4.ErrNofilehandle)
	}
	c.saved = c.cur
	return c.only(op, nfs4.OK)
}

// opRestorefh is RESTOREFH: the saved file handle and stateid become the current
// ones. Without a saved file handle it is NFS4ERR_NOFILEHANDLE, which in NFSv4.1
// supersedes NFSv4.0's NFS4ERR_RESTOREFH (RFC 8881 §18.27.3, §15.1.16.4), though knfsd
// still answers the latter.
func (c *compound) opRestorefh(op nfs4.OpNum) nfs4.Status {
	if c.saved.n == 0 {
		return c.only(op, nfs4.ErrNofilehandle)
	}
	c.cur = c.saved
	return c.only(op, nfs4.OK)
}

// checkName applies the NFSv4 rules for a component4 naming an object to look up,
// create, remove or rename: empty is NFS4ERR_INVAL, longer than NAME_MAX
// NFS4ERR_NAMETOOLONG, "." and ".." and names holding "/" or NUL NFS4ERR_BADNAME (as
// knfsd answers; RFC 8881 §18.13.4 leaves "." and ".." to the server).
func checkName(name []byte) nfs4.Status {
	switch {
	case len(name) == 0:
		return nfs4.ErrInval
	case len(name) > nfs4.MaxNameLen:
		return nfs4.ErrNametoolong
	case isDot(name):
		return nfs4.ErrBadname
	}
	for _, b := range name {
		if b == '/' || b == 0 {
			return nfs4.ErrBadname
		}
	}
	return nfs4.OK
}

// dirTypeStatus is the status of an operation that needs a directory and found the
// object st: NFS4ERR_SYMLINK for a symbolic link, NFS4ERR_NOTDIR otherwise.
func dirTypeStatus(st *unix.Statx_t) nfs4.Status {
	if isLnk(st) {
		return nfs4.ErrSymlink
	}
	return nfs4.ErrNotdir
}

// regTypeStatus is the status of an operation that needs a regular file (OPEN, READ,
// WRITE, COMMIT) and found the object st, which is not one: NFS4ERR_ISDIR for a
// directory, NFS4ERR_SYMLINK for a symbolic link and NFS4ERR_WRONG_TYPE for anything
// else (RFC 8881 §18.16.3, §18.22.3, §18.32.3, §18.3.3). Not NFS4ERR_INVAL, NFSv3's
// answer: the arguments were fine, and the client need not know the type beforehand.
func regTypeStatus(st *unix.Statx_t) nfs4.Status {
	switch {
	case isDir(st):
		return nfs4.ErrIsdir
	case isLnk(st):
		return nfs4.ErrSymlink
	}
	return nfs4.ErrWrongType
}

// openCurDir opens the current file handle, an export's directory, checking the
// caller may do want in it. The caller closes dir.
func (c *compound) openCurDir(dir *object, want uint32) nfs4.Status {
	dir.fd = -1
	srv := c.cur.srv
	if st := srv.open(c.cur.fh(), dir, c.credFor(srv)); st != nfs3.StatusOK {
		return st4(st)
	}
	if !isDir(&dir.st) {
		return dirTypeStatus(&dir.st)
	}
	if !allowed(c.credFor(srv), &dir.st, want) {
		return nfs4.ErrAccess
	}
	return nfs4.OK
}

func (c *compound) opLookup(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.lookup
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	return c.only(op, c.lookup(a.ObjName))
}

func (c *compound) lookup(name []byte) nfs4.Status {
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	if st := checkName(name); st != nfs4.OK {
		return st
	}
	if n := c.cur.node; n != nil {
		kid := n.lookup(string(name))
		if kid == nil || !kid.visible(c.admits) {
			return nfs4.ErrNoent
		}
		return c.setPseudo(kid)
	}
	srv := c.cur.srv
	var dir object
	st := c.openCurDir(&dir, permX)
	defer dir.close()
	if st != nfs4.OK {
		return st
	}
	var child unix.Statx_t
	p, st3 := srv.childStat(&dir, name, &child)
	if st3 != nfs3.StatusOK {
		return st4(st3)
	}
	if n := c.exportAt(srv, &child); n != nil {
		return c.setPseudo(n)
	}
	if !srv.visible(c.credFor(srv), &child) {
		return nfs4.ErrAccess // a mount point (see Server.child)
	}
	srv.idx.put(keyOf(&child), p)
	c.setNewFH(srv, idOf(&child))
	return nfs4.OK
}

// exportAt returns the pseudo file system's node of the export whose root is st, an
// object of srv that is not on srv's root mount (a mount point LOOKUP or READDIR
// met), if there is one and it admits the caller; nil otherwise. An NFSv4 client
// crosses into such an export whatever srv's options, with that export's handles and
// options, as knfsd lets NFSv4 clients cross into an exported mount
// (nfsd_cross_mnt): that is how a client reaches an export nested in another by its
// path (PUTROOTFH, then LOOKUP of each component).
func (c *compound) exportAt(srv *Server, st *unix.Statx_t) *pseudoNode {
	if srv.onExportMount(st) {
		return nil
	}
	for _, s := range c.set.list {
		if s == srv || s.rootKey != keyOf(st) ||
			(s.hasRootMnt && st.Mask&unix.STATX_MNT_ID != 0 && s.rootMnt != st.Mnt_id) {
			continue
		}
		if n := c.set.pseudo.byExp[s]; n != nil && c.admits(s) {
			return n
		}
	}
	return nil
}

func (c *compound) opLookupp(op nfs4.OpNum) nfs4.Status { return c.only(op, c.lookupp()) }

func (c *compound) lookupp() nfs4.Status {
	if c.cur.n == 0 {
		return nfs4.ErrNofilehandle
	}
	if n := c.cur.node; n != nil {
		if n.parent == nil {
			return nfs4.ErrNoent
		}
		return c.setPseudo(n.parent)
	}
	srv := c.cur.srv
	var dir object
	st := c.openCurDir(&dir, permX)
	defer dir.close()
	if st != nfs4.OK {
		return st
	}
	if dir.path == "" {
		// The export root: its parent is in the pseudo file system.
		n := c.set.pseudo.byExp[srv]
		if n == nil || n.parent == nil {
			return nfs4.ErrNoent
		}
		return c.exportRootParent(n.parent)
	}
	var parent unix.Statx_t
	p, st3 := srv.child(&dir, []byte(".."), &parent, c.credFor(srv))
	if st3 != nfs3.StatusOK {
		return st4(st3)
	}
	srv.idx.put(keyOf(&parent), p)
	c.setNewFH(srv, idOf(&parent))
	return nfs4.OK
}

// exportRootParent makes p, the pseudo directory above an export's root, the current
// file handle, as LOOKUPP from that root leads to it. When p lies inside another
// export (the root is a nested export, a mount below that export's directory p, which
// LOOKUP crossed into: exportAt), that is the other export's directory p, the handle
// LOOKUP gave for it, as knfsd's LOOKUPP follows the mount up: not a pseudo directory,
// which would hold only the way to the nested export. Where the other export does not
// admit the caller, or p cannot be reached in it as LOOKUP would (a mount the caller
// may not cross), it is the pseudo directory.
func (c *compound) exportRootParent(p *pseudoNode) nfs4.Status {
	anc := p
	for anc != nil && anc.export == nil {
		anc = anc.parent
	}
	if anc == nil || anc == p || !c.admits(anc.export) {
		return c.setPseudo(p)
	}
	srv := anc.export
	if st := c.admit(srv); st != nfs4.OK {
		return st
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p.path, anc.path), "/")
	fd, err := srv.openPath(rel)
	if err != nil {
		return c.setPseudo(p)
	}
	defer unix.Close(fd)
	var st unix.Statx_t
	if err := statFD(fd, &st); err != nil {
		return errStatus4(err)
	}
	if !isDir(&st) || !srv.visible(c.credFor(srv), &st) {
		return c.setPseudo(p)
	}
	srv.idx.put(keyOf(&st), rel)
	c.setNewFH(srv, idOf(&st))
	return nfs4.OK
}
