//go:build linux

package nfsserver

import (
	"context"
	"fmt"
	"math"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func (s *Server) getattr(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.FHArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var r nfs3.GetattrRes
	var st unix.Statx_t
	c := s.credOf(ctx, req)
	if s.statCached(a.Object, &st, &c) {
		s.fattr(&st, &r.Attr)
		r.EncodeXDR(res)
		return nil
	}
	var o object
	r.Status = s.open(a.Object, &o, &c)
	defer o.close()
	if r.Status == nfs3.StatusOK {
		s.fattr(&o.st, &r.Attr)
	}
	r.EncodeXDR(res)
	return nil
}

// statCached fills st with the attributes of the file fh names if the open-file cache
// holds it for the caller c and it is still valid there (see revalidate); otherwise
// the caller resolves fh itself.
func (s *Server) statCached(fh nfs3.FH, st *unix.Statx_t, c *cred) bool {
	f := s.cached(fh, c)
	if f == nil {
		return false
	}
	ok := s.revalidate(f, st, c) == nfs3.StatusOK
	if !ok {
		s.files.remove(f)
	}
	s.files.release(f)
	return ok
}

// openFHArgs decodes the arguments of READLINK, FSSTAT, FSINFO or PATHCONF (a file
// handle alone) and opens the object for the caller, setting *status. Only an
// argument that does not decode is an error (GARBAGE_ARGS); the caller closes o
// otherwise.
func (s *Server) openFHArgs(ctx context.Context, req *oncrpc.Request, o *object, status *nfs3.Status) error {
	var a nfs3.FHArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	c := s.credOf(ctx, req)
	*status = s.open(a.Object, o, &c)
	return nil
}

func (s *Server) setattr(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.SetattrArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var o object
	c := s.credOf(ctx, req)
	r := nfs3.WccRes{Status: s.open(a.Object, &o, &c)}
	defer o.close()
	if r.Status == nfs3.StatusOK {
		r.Status = s.doSetattr(&o, &a, &c)
		if r.Status == nfs3.StatusOK && !c.ro { // a read-only caller's SETATTR sets nothing
			r.Status = statusOf(s.stableObject(&o))
		}
		r.Wcc = s.wcc(&o)
	}
	r.EncodeXDR(res)
	return nil
}

func (s *Server) doSetattr(o *object, a *nfs3.SetattrArgs, c *cred) nfs3.Status {
	if a.Guard && (uint32(o.st.Ctime.Sec) != a.GuardCtime.Seconds || o.st.Ctime.Nsec != a.GuardCtime.Nseconds) {
		return nfs3.StatusNotSync
	}
	at := &a.Attr
	if c.ro && (at.SetMode || at.SetUID || at.SetGID || at.SetSize || at.Atime.How != nfs3.DontChange || at.Mtime.How != nfs3.DontChange) {
		return nfs3.StatusROFS
	}
	// Permission checks first, so that a refused call changes nothing.
	if (at.SetMode || at.Atime.How == nfs3.SetToClientTime || at.Mtime.How == nfs3.SetToClientTime) && !isOwner(c, &o.st) {
		return nfs3.StatusPerm
	}
	// As chown(2) (chown_ok, chgrp_ok): root may give any owner and group; the owner
	// may set the owner it has and a group it is in, and nobody else may set either,
	// not even to the value it has (a chown clears the setuid bit).
	if at.SetUID && c.uid != 0 && (c.uid != o.st.Uid || at.UID != o.st.Uid) {
		return nfs3.StatusPerm
	}
	if at.SetGID && c.uid != 0 && (c.uid != o.st.Uid || (at.GID != o.st.Gid && !c.inGroup(at.GID))) {
		return nfs3.StatusPerm
	}
	if (at.Atime.How == nfs3.SetToServerTime || at.Mtime.How == nfs3.SetToServerTime) && !isOwner(c, &o.st) && !allowed(c, &o.st, permW) {
		return nfs3.StatusAcces
	}
	if at.SetSize {
		switch {
		case isDir(&o.st):
			return nfs3.StatusIsDir
		case !isReg(&o.st):
			return nfs3.StatusInval
		case !allowed(c, &o.st, permW) && !isOwner(c, &o.st):
			return nfs3.StatusAcces
		case at.Size > math.MaxInt64:
			return nfs3.StatusFBig
		}
		if err := s.dropSUID(o.fd, c, &o.st); err != nil {
			return statusOf(err)
		}
		if err := unix.Truncate(procPath(o.fd), int64(at.Size)); err != nil {
			return statusOf(err)
		}
	}
	if at.SetUID || at.SetGID {
		uid, gid := -1, -1
		if at.SetUID {
			uid = int(at.UID)
		}
		if at.SetGID {
			gid = int(at.GID)
		}
		if err := unix.Fchownat(o.fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return statusOf(err)
		}
	}
	if at.SetMode && !isLnk(&o.st) { // symbolic links have no mode of their own on Linux
		gid := o.st.Gid
		if at.SetGID {
			gid = at.GID
		}
		if err := unix.Chmod(procPath(o.fd), c.keepSGID(at.Mode&0o7777, gid)); err != nil {
			return statusOf(err)
		}
	}
	if at.Atime.How != nfs3.DontChange || at.Mtime.How != nfs3.DontChange {
		ts := []unix.Timespec{setTime(at.Atime), setTime(at.Mtime)}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, procPath(o.fd), ts, 0); err != nil {
			return statusOf(err)
		}
	}
	return nfs3.StatusOK
}

func setTime(t nfs3.SetTime) unix.Timespec {
	switch t.How {
	case nfs3.SetToServerTime:
		return unix.Timespec{Nsec: unix.UTIME_NOW}
	case nfs3.SetToClientTime:
		return unix.Timespec{Sec: int64(t.Time.Seconds), Nsec: int64(t.Time.Nseconds)}
	}
	return unix.Timespec{Nsec: unix.UTIME_OMIT}
}

// child resolves name in the open directory dir for the caller c, "." and ".."
// included, without following symbolic links and without leaving the export. A name
// that is a mount point c may not cross (see visible) is NFS3ERR_ACCES: knfsd would
// show the directory the mount covers, which a server in user space cannot reach.
func (s *Server) child(dir *object, name []byte, st *unix.Statx_t, c *cred) (string, nfs3.Status) {
	p, status := s.childStat(dir, name, st)
	if status == nfs3.StatusOK && !s.visible(c, st) {
		*st = unix.Statx_t{}
		return "", nfs3.StatusAcces
	}
	return p, status
}

// childStat is child without the check of mount points: st may be the root of a file
// system mounted on name.
func (s *Server) childStat(dir *object, name []byte, st *unix.Statx_t) (string, nfs3.Status) {
	if status := validName(name); status != nfs3.StatusOK {
		return "", status
	}
	switch string(name) {
	case ".":
		*st = dir.st
		return dir.path, nfs3.StatusOK
	case "..":
		p := parentPath(dir.path)
		if dir.path == "" {
			*st = dir.st
			return "", nfs3.StatusOK
		}
		fd, err := s.openPath(p)
		if err != nil {
			return "", statusOf(err)
		}
		defer unix.Close(fd)
		if err := statFD(fd, st); err != nil {
			return "", statusOf(err)
		}
		return p, nfs3.StatusOK
	}
	if err := statAt(dir.fd, string(name), st); err != nil {
		return "", statusOf(err)
	}
	return joinPath(dir.path, string(name)), nfs3.StatusOK
}

// openDir resolves a directory handle and checks the caller may do want in it.
func (s *Server) openDir(fh nfs3.FH, o *object, c *cred, want uint32) nfs3.Status {
	if st := s.open(fh, o, c); st != nfs3.StatusOK {
		return st
	}
	if !isDir(&o.st) {
		return nfs3.StatusNotDir
	}
	if !allowed(c, &o.st, want) {
		return nfs3.StatusAcces
	}
	return nfs3.StatusOK
}

func (s *Server) lookup(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.LookupArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var dir object
	var r nfs3.LookupRes
	c := s.credOf(ctx, req)
	r.Status = s.openDir(a.What.Dir, &dir, &c, permX)
	defer dir.close()
	var fhbuf [HandleSize]byte
	if r.Status == nfs3.StatusOK {
		var st unix.Statx_t
		var p string
		p, r.Status = s.childStat(&dir, a.What.Name, &st)
		switch {
		case r.Status != nfs3.StatusOK:
		case !s.onExportMount(&st):
			if n := s.crossInto(ctx, req, &st, c.crossmnt); n != nil {
				// The root of a nested export: its handle, so that its options
				// and fsid apply from here on.
				r.Object = n.handles.encode(fhbuf[:0], idOf(&st))
				r.ObjAttr = n.postOp(&st)
				break
			}
			if !c.crossmnt {
				r.Status = nfs3.StatusAcces // a mount point c may not cross (see child)
				break
			}
			fallthrough
		default:
			s.idx.put(keyOf(&st), p)
			r.Object = s.handles.encode(fhbuf[:0], idOf(&st))
			r.ObjAttr = s.postOp(&st)
		}
	}
	r.DirAttr = s.attr(&dir)
	r.EncodeXDR(res)
	return nil
}

func (s *Server) access(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.AccessArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var o object
	var r nfs3.AccessRes
	c := s.credOf(ctx, req)
	if s.statCached(a.Object, &o.st, &c) {
		o.fd = -1
	} else {
		r.Status = s.open(a.Object, &o, &c)
	}
	defer o.close()
	if r.Status == nfs3.StatusOK {
		st := &o.st
		var granted uint32
		if allowed(&c, st, permR) {
			granted |= nfs3.AccessRead
		}
		// Changing a directory's entries takes search permission as well as write
		// (openChangeDir), as in knfsd's map for directories (nfs3_diraccess).
		switch {
		case c.ro:
		case isDir(st) && allowed(&c, st, permW|permX):
			granted |= nfs3.AccessModify | nfs3.AccessExtend | nfs3.AccessDelete
		case !isDir(st) && allowed(&c, st, permW):
			granted |= nfs3.AccessModify | nfs3.AccessExtend
		}
		if allowed(&c, st, permX) {
			if isDir(st) {
				granted |= nfs3.AccessLookup
			} else {
				granted |= nfs3.AccessExecute
			}
		}
		r.Access = a.Access & granted
		r.Attr = s.postOp(st)
	}
	r.EncodeXDR(res)
	return nil
}

func (s *Server) readlink(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var o object
	var r nfs3.ReadlinkRes
	if err := s.openFHArgs(ctx, req, &o, &r.Status); err != nil {
		return err
	}
	defer o.close()
	var buf [nfs3.MaxNFSPathLen + 1]byte
	if r.Status == nfs3.StatusOK {
		r.Attr = s.postOp(&o.st)
		if !isLnk(&o.st) {
			r.Status = nfs3.StatusInval
		} else if n, err := unix.Readlinkat(o.fd, "", buf[:]); err != nil {
			r.Status = statusOf(err)
		} else if n > nfs3.MaxNFSPathLen {
			r.Status = nfs3.StatusNameTooLong
		} else {
			r.Data = buf[:n]
		}
	}
	r.EncodeXDR(res)
	return nil
}

// mayWrite reports whether c may WRITE the regular file st: the export is not
// read-only for it and mayIO allows it.
func mayWrite(c *cred, st *unix.Statx_t) bool { return !c.ro && mayIO(c, st, permW) }

// mayCommit is whether c may COMMIT the file st: only a caller that may write it, as
// knfsd's nfsd_commit asks (NFS3ERR_ROFS, NFS3ERR_ACCES), so that a caller that may
// only read cannot make the server sync the file on every call.
func mayCommit(c *cred, st *unix.Statx_t) nfs3.Status {
	switch {
	case c.ro:
		return nfs3.StatusROFS
	case !mayIO(c, st, permW):
		return nfs3.StatusAcces
	}
	return nfs3.StatusOK
}

// mayIO reports whether c may read (want permR) or write (permW) the regular file st:
// the owner always may, as for a file it has open, and reading is also allowed by an
// execute bit.
func mayIO(c *cred, st *unix.Statx_t, want uint32) bool {
	return isOwner(c, st) || allowed(c, st, want) || (want == permR && allowed(c, st, permX))
}

// postOpIf is the post_op_attr of st, "no attributes" when st was never filled.
func (s *Server) postOpIf(st *unix.Statx_t) nfs3.PostOpAttr {
	if st.Mask == 0 {
		return nfs3.PostOpAttr{}
	}
	return s.postOp(st)
}

func (s *Server) read(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.ReadArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var st unix.Statx_t
	c := s.credOf(ctx, req)
	f, status := s.openIO(a.File, accRead, &c, &st)
	r := nfs3.ReadRes{Status: status}
	if f != nil {
		defer s.files.release(f)
		if !mayIO(&c, &st, permR) {
			r.Status = nfs3.StatusAcces
		} else {
			count := min(int(a.Count), s.opts.MaxIO)
			// The buffer is held until the reply has been sent: account it against
			// the connection's memory budget first, waiting while a peer that takes
			// no replies holds it (ctx ends when its connection does).
			size := s.readBufSize(count)
			if err := req.Reserve(ctx, size); err != nil {
				return err
			}
			rb := s.getReadBuf(size)
			buf := rb.b[:count]
			n, err := preadFull(f.fd, buf, a.Offset)
			if err != nil {
				r.Status = statusOf(err)
				rb.release()
			} else {
				r.Count, r.Data = uint32(n), buf[:n]
				req.AfterReply(rb.release)
			}
			// A short read met the end of the file. A full one ending at or past the
			// size seen before it found the file grown: look again. Otherwise the
			// attributes from before the read stand; paired with the data they
			// cannot make a client's cache look newer than what it read.
			end := a.Offset + uint64(n)
			if n == count && end >= st.Size && count > 0 {
				_ = statFD(f.fd, &st)
			}
			r.EOF = n < count || end >= st.Size
		}
	}
	r.Attr = s.postOpIf(&st)
	r.EncodeXDR(res)
	return nil
}

func (s *Server) write(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.WriteArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	c := s.credOf(ctx, req)
	var st unix.Statx_t
	f, status := s.openWrite(a.File, &c, &st) // writable only if c may write it
	r := nfs3.WriteRes{Status: status}
	if f != nil {
		defer s.files.release(f)
		r.Status = s.doWrite(f, &st, &a, &c, &r)
		r.Wcc = s.wccOf(f.fd, &st)
	} else if st.Mask != 0 {
		r.Wcc = nfs3.WccData{Before: preOp(&st), After: s.postOp(&st)}
	}
	r.EncodeXDR(res)
	return nil
}

func (s *Server) doWrite(f *openFile, st *unix.Statx_t, a *nfs3.WriteArgs, c *cred, r *nfs3.WriteRes) nfs3.Status {
	if c.ro {
		return nfs3.StatusROFS
	}
	if len(a.Data) > s.opts.MaxIO {
		a.Data = a.Data[:s.opts.MaxIO] // a short write; the client sends the rest again
	}
	if a.Offset > math.MaxInt64-uint64(len(a.Data)) {
		return nfs3.StatusFBig
	}
	if !mayIO(c, st, permW) {
		return nfs3.StatusAcces
	}
	if len(a.Data) > 0 { // a write of nothing changes nothing, as write(2)'s
		if err := s.dropSUID(f.fd, c, st); err != nil {
			return statusOf(err)
		}
	}
	// The verifier from before the write: should writing back this data fail before a
	// COMMIT, the failure changes the verifier (resetVerifier) after this reply
	// carries it, and the client writes the data again.
	verf := s.writeVerf()
	n := 0
	for n < len(a.Data) {
		m, err := unix.Pwrite(f.fd, a.Data[n:], int64(a.Offset)+int64(n))
		if err == nil && m == 0 {
			err = unix.EIO
		}
		if err != nil {
			s.resetVerifier(err)
			return statusOf(err)
		}
		n += m
	}
	var err error
	switch a.Stable {
	case nfs3.FileSync:
		err = s.sys.fsync(f.fd)
	case nfs3.DataSync:
		err = s.sys.fdatasync(f.fd)
	}
	if err != nil {
		s.resetVerifier(err)
		return statusOf(err)
	}
	r.Count, r.Committed, r.Verf = uint32(n), a.Stable, verf
	return nfs3.StatusOK
}

func (s *Server) commit(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.CommitArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var st unix.Statx_t
	c := s.credOf(ctx, req)
	f, status := s.openIO(a.File, 0, &c, &st)
	r := nfs3.CommitRes{Status: status}
	if f != nil {
		defer s.files.release(f)
		r.Status = mayCommit(&c, &st)
		// fsync writes back the inode's dirty pages whichever descriptor wrote them.
		if r.Status == nfs3.StatusOK {
			if err := s.sys.fsync(f.fd); err != nil {
				s.resetVerifier(err)
				r.Status = statusOf(err)
			}
		}
		r.Wcc = s.wccOf(f.fd, &st)
	} else if st.Mask != 0 {
		r.Wcc = nfs3.WccData{Before: preOp(&st), After: s.postOp(&st)}
	}
	if st.Mask != 0 {
		// The verifier from after the fsync, so that a failure another call met
		// meanwhile (Linux reports a writeback error to one of the descriptions
		// syncing the file) is seen by the client.
		r.Verf = s.writeVerf()
	}
	r.EncodeXDR(res)
	return nil
}

// openChangeDir is the common start of every procedure that adds, removes or renames a
// directory entry: it opens the directory, checks the caller may change it and
// validates the name. dotStatus is the answer for "." or "..": they always exist
// (NFS3ERR_EXIST for CREATE, MKDIR, SYMLINK, MKNOD and LINK) and cannot be removed or
// renamed (NFS3ERR_INVAL for REMOVE, RMDIR and RENAME).
func (s *Server) openChangeDir(where *nfs3.DirOpArgs, dir *object, c *cred, dotStatus nfs3.Status) nfs3.Status {
	if st := s.openDir(where.Dir, dir, c, permW|permX); st != nfs3.StatusOK {
		return st
	}
	if c.ro {
		return nfs3.StatusROFS
	}
	if st := validName(where.Name); st != nfs3.StatusOK {
		return st
	}
	if isDot(where.Name) {
		return dotStatus
	}
	return nfs3.StatusOK
}

// openCreateDir opens the directory of a CREATE, MKDIR, SYMLINK, MKNOD or LINK.
func (s *Server) openCreateDir(where *nfs3.DirOpArgs, dir *object, c *cred) nfs3.Status {
	return s.openChangeDir(where, dir, c, nfs3.StatusExist)
}

// newEntry is the state of a procedure that makes a directory entry and answers with a
// CREATE3res: CREATE, MKDIR, SYMLINK and MKNOD.
type newEntry struct {
	s     *Server
	dir   object
	c     cred
	r     nfs3.CreateRes
	fhbuf [HandleSize]byte
}

// beginEntry opens the directory the entry is to be made in (see openCreateDir) and
// reports whether the procedure may go on; the caller closes e.dir either way.
func (s *Server) beginEntry(ctx context.Context, req *oncrpc.Request, where *nfs3.DirOpArgs, e *newEntry) bool {
	e.s = s
	e.c = s.credOf(ctx, req)
	e.r.Status = s.openCreateDir(where, &e.dir, &e.c)
	return e.r.Status == nfs3.StatusOK
}

// made finishes MKDIR, SYMLINK and MKNOD: err is what making the new entry name
// returned; on success the entry is fresh and gets attr, its times included (see
// createdFD).
func (s *Server) made(e *newEntry, name string, attr *nfs3.Sattr, err error) {
	if err != nil {
		e.r.Status = statusOf(err)
		return
	}
	fd, err := unix.Openat(e.dir.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		e.r.Status = statusOf(err)
		return
	}
	defer unix.Close(fd)
	_, e.r.Status = s.createdFD(&e.dir, name, fd, &e.c, attr, true, true, &e.r, e.fhbuf[:])
}

// reply encodes the CREATE3res with the directory's wcc_data.
func (e *newEntry) reply(res *xdr.Encoder) error {
	e.r.DirWcc = e.s.wcc(&e.dir)
	e.r.EncodeXDR(res)
	return nil
}

// created gives the object name just made in dir its owner and attr but its times,
// then fills the CREATE-style result and says which of attr it applied (see
// createdFD).
func (s *Server) created(dir *object, name string, c *cred, attr *nfs3.Sattr, fresh bool, r *nfs3.CreateRes, fhbuf []byte) (appliedAttrs, nfs3.Status) {
	fd, err := unix.Openat(dir.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return appliedAttrs{}, statusOf(err)
	}
	defer unix.Close(fd)
	return s.createdFD(dir, name, fd, c, attr, fresh, false, r, fhbuf)
}

// appliedAttrs says which of the mode, owner and group an nfs3.Sattr asked for a new
// object has (createdFD), for NFSv4's attrset, which names the createattrs the server
// set (RFC 8881 §18.4.4, §18.16.4). NFSv3 has no such result and ignores it.
type appliedAttrs struct {
	mode, uid, gid bool
}

// createdFD gives a new (fresh) object its owner and attr, makes it stable, then
// fills the CREATE-style result. The object is the one fd refers to (O_PATH, or
// open), found or made under name in dir: every change is made through fd, never by
// name again, so that an object another process puts under name meanwhile is never
// changed, nor opened (opening a FIFO can block).
//
// Parts of attr are left out without an error, as NFSv3 always did: an owner other
// than the caller's own unless the caller is root, a group the caller is not in, any
// owner when the server does not run as root, the mode of a symbolic link (Linux
// links have none), and all of attr for an object that is not fresh. attr's atime
// and mtime are applied only with times (NFSv3, whose CREATE, MKDIR, SYMLINK and MKNOD
// take all of sattr3 as the initial attributes, RFC 1813 §3.3.8, as knfsd's
// nfsd_create_setattr applies them; NFSv4 does not set them, see
// appliedAttrs.bitmap). The result says what the object got: the owner and the group
// when it has the ones asked for, the mode when it was set.
func (s *Server) createdFD(dir *object, name string, fd int, c *cred, attr *nfs3.Sattr, fresh, times bool, r *nfs3.CreateRes, fhbuf []byte) (appliedAttrs, nfs3.Status) {
	var set appliedAttrs
	if fresh && s.asRoot {
		uid, gid := int(c.uid), int(c.gid)
		if dir.st.Mode&unix.S_ISGID != 0 {
			gid = int(dir.st.Gid)
		}
		if attr != nil && attr.SetUID && c.uid == 0 {
			uid = int(attr.UID)
		}
		if attr != nil && attr.SetGID && (c.uid == 0 || c.inGroup(attr.GID)) {
			gid = int(attr.GID)
		}
		if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return set, statusOf(err)
		}
	}
	var st unix.Statx_t
	if err := statFD(fd, &st); err != nil {
		return set, statusOf(err)
	}
	if fresh && attr != nil {
		set.uid = attr.SetUID && st.Uid == attr.UID
		set.gid = attr.SetGID && st.Gid == attr.GID
	}
	if fresh && attr != nil && attr.SetMode && !isLnk(&st) {
		mode := c.keepSGID(attr.Mode&0o7777, st.Gid)
		if isDir(&st) && dir.st.Mode&unix.S_ISGID != 0 {
			mode |= unix.S_ISGID // a new directory inherits its parent's setgid bit
		}
		if err := chmodFD(fd, mode); err != nil {
			return set, statusOf(err)
		}
		_ = statFD(fd, &st)
		set.mode = true
	}
	if fresh && times && attr != nil && (attr.Atime.How != nfs3.DontChange || attr.Mtime.How != nfs3.DontChange) {
		// The caller owns the new object: it may set any time (see doSetattr).
		ts := []unix.Timespec{setTime(attr.Atime), setTime(attr.Mtime)}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, procPath(fd), ts, 0); err != nil {
			return set, statusOf(err)
		}
		_ = statFD(fd, &st)
	}
	p := joinPath(dir.path, name)
	if err := s.stableNew(fd, p, &st); err != nil {
		return set, statusOf(err)
	}
	if err := s.stableDir(dir); err != nil {
		return set, statusOf(err)
	}
	s.idx.put(keyOf(&st), p)
	r.Obj = nfs3.PostOpFH{Present: true, FH: s.handles.encode(fhbuf[:0], idOf(&st))}
	r.ObjAttr = s.postOp(&st)
	return set, nfs3.StatusOK
}

// dropSUID clears what a write or truncate by c must clear of the setuid and setgid
// bits (killSUID) of the regular file fd (O_PATH, or open) refers to, with attributes
// st, before the server writes or truncates it. The kernel does so itself when the
// server does not run as root, and it removes the file's capabilities
// (security.capability) on every write and truncate, by root too.
func (s *Server) dropSUID(fd int, c *cred, st *unix.Statx_t) error {
	kill := killSUID(c, st)
	if kill == 0 || !s.asRoot {
		return nil
	}
	if err := chmodFD(fd, uint32(st.Mode)&^kill); err != nil {
		return fmt.Errorf("nfsserver: clearing setuid and setgid for uid %d: %w", c.uid, err)
	}
	return nil
}

// truncateFD sets the size of the regular file fd (O_PATH, or open) refers to; sizes
// beyond what Linux can hold are clamped to math.MaxInt64. truncate(2) through
// /proc/self/fd reaches that very inode without opening it.
func truncateFD(fd int, size uint64) error {
	return unix.Truncate(procPath(fd), int64(min(size, math.MaxInt64)))
}

// chmodFD sets the exact mode (no umask) of the object fd (O_PATH, or open) refers
// to, through /proc/self/fd (fchmod refuses an O_PATH descriptor).
func chmodFD(fd int, mode uint32) error {
	return unix.Chmod(procPath(fd), mode&0o7777)
}

func (s *Server) create(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.CreateArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var e newEntry
	ok := s.beginEntry(ctx, req, &a.Where, &e)
	defer e.dir.close()
	if ok {
		_, e.r.Status = s.doCreateTimes(&e.dir, &a, &e.c, true, &e.r, e.fhbuf[:])
	}
	return e.reply(res)
}

// doCreate is NFSv4's OPEN4_CREATE, and NFSv3's CREATE without the times, of
// a.Where.Name in dir by c: it fills the CREATE-style result and says which of a.Attr
// the new file got (see createdFD; the size, which it applies too, is not among them).
func (s *Server) doCreate(dir *object, a *nfs3.CreateArgs, c *cred, r *nfs3.CreateRes, fhbuf []byte) (appliedAttrs, nfs3.Status) {
	return s.doCreateTimes(dir, a, c, false, r, fhbuf)
}

// doCreateTimes is doCreate, applying the times of a.Attr to a new file with times
// (NFSv3's CREATE; see createdFD).
func (s *Server) doCreateTimes(dir *object, a *nfs3.CreateArgs, c *cred, times bool, r *nfs3.CreateRes, fhbuf []byte) (appliedAttrs, nfs3.Status) {
	name := string(a.Where.Name)
	mode := uint32(0o644)
	if a.Mode != nfs3.Exclusive && a.Attr.SetMode {
		mode = a.Attr.Mode & 0o7777
	}
	// Only a caller that may add entries to dir creates one. NFSv3 checked that when
	// it opened dir; NFSv4's OPEN4_CREATE of a name that existed then did not (it
	// needs no write permission to open it), and the name may be gone by now: for
	// such a caller doCreate only opens what name holds.
	mayCreate := !c.ro && allowed(c, &dir.st, permW|permX)
	fd, err := -1, error(unix.EEXIST)
	if mayCreate {
		// O_NONBLOCK so that opening an existing FIFO cannot block.
		fd, err = unix.Openat(dir.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, mode)
	}
	fresh := err == nil
	if err == unix.EEXIST {
		// What name holds is judged and changed through this one descriptor, never
		// by name again (see createdFD); O_PATH opens nothing, not even a FIFO.
		fd, err = unix.Openat(dir.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && !mayCreate {
			return appliedAttrs{}, nfs3.StatusAcces
		}
	}
	if err != nil {
		return appliedAttrs{}, statusOf(err)
	}
	defer unix.Close(fd)
	if a.Mode == nfs3.Guarded && !fresh {
		return appliedAttrs{}, nfs3.StatusExist
	}
	var st unix.Statx_t // what name holds, when it existed
	if !fresh {
		if err := statFD(fd, &st); err != nil {
			return appliedAttrs{}, statusOf(err)
		}
		if !s.visible(c, &st) {
			// A mount point c may not cross is not there for c to open (see child).
			return appliedAttrs{}, nfs3.StatusAcces
		}
	}
	switch a.Mode {
	case nfs3.Exclusive:
		v0 := int64(uint32(a.Verf[0])<<24 | uint32(a.Verf[1])<<16 | uint32(a.Verf[2])<<8 | uint32(a.Verf[3]))
		v1 := int64(uint32(a.Verf[4])<<24 | uint32(a.Verf[5])<<16 | uint32(a.Verf[6])<<8 | uint32(a.Verf[7]))
		if fresh {
			ts := []unix.Timespec{{Sec: v1}, {Sec: v0}} // atime, mtime
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, procPath(fd), ts, 0); err != nil {
				return appliedAttrs{}, statusOf(err)
			}
		} else {
			// A retransmitted EXCLUSIVE create finds the verifier it stored, in a
			// file still empty: one written since is no longer what the create made
			// (knfsd checks the size too).
			if !isReg(&st) || st.Mtime.Sec != v0 || st.Atime.Sec != v1 || st.Size != 0 {
				return appliedAttrs{}, nfs3.StatusExist
			}
		}
		return s.createdFD(dir, name, fd, c, nil, fresh, false, r, fhbuf)
	default: // UNCHECKED
		if !fresh {
			if !isReg(&st) {
				return appliedAttrs{}, nfs3.StatusExist
			}
			if a.Attr.SetSize {
				if !allowed(c, &st, permW) && !isOwner(c, &st) {
					return appliedAttrs{}, nfs3.StatusAcces
				}
				if err := s.dropSUID(fd, c, &st); err != nil {
					return appliedAttrs{}, statusOf(err)
				}
				if err := truncateFD(fd, a.Attr.Size); err != nil {
					return appliedAttrs{}, statusOf(err)
				}
			}
		}
	}
	if fresh && a.Attr.SetSize && a.Attr.Size != 0 {
		if err := truncateFD(fd, a.Attr.Size); err != nil {
			return appliedAttrs{}, statusOf(err)
		}
	}
	return s.createdFD(dir, name, fd, c, &a.Attr, fresh, times, r, fhbuf)
}

func (s *Server) mkdir(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.MkdirArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var e newEntry
	ok := s.beginEntry(ctx, req, &a.Where, &e)
	defer e.dir.close()
	if ok {
		mode := uint32(0o755)
		if a.Attr.SetMode {
			mode = a.Attr.Mode & 0o7777
		}
		name := string(a.Where.Name)
		s.made(&e, name, &a.Attr, unix.Mkdirat(e.dir.fd, name, mode))
	}
	return e.reply(res)
}

func (s *Server) symlink(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.SymlinkArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var e newEntry
	ok := s.beginEntry(ctx, req, &a.Where, &e)
	defer e.dir.close()
	switch {
	case !ok:
	case len(a.Data) == 0:
		// As knfsd answers it (nfsd3_proc_symlink); symlinkat(2) would say ENOENT.
		e.r.Status = nfs3.StatusInval
		ok = false
	case len(a.Data) > nfs3.MaxNFSPathLen:
		// Longer than PATH_MAX, as knfsd answers it (nfsd3_proc_symlink).
		e.r.Status = nfs3.StatusNameTooLong
		ok = false
	}
	if ok {
		// The target is stored as given, absolute or not: the server never follows it.
		name := string(a.Where.Name)
		s.made(&e, name, &a.Attr, unix.Symlinkat(string(a.Data), e.dir.fd, name))
	}
	return e.reply(res)
}

func (s *Server) mknod(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.MknodArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var e newEntry
	ok := s.beginEntry(ctx, req, &a.Where, &e)
	defer e.dir.close()
	if ok {
		mode := uint32(0o644)
		if a.Attr.SetMode {
			mode = a.Attr.Mode & 0o7777
		}
		dev := 0
		switch a.Type {
		case nfs3.TypeChr, nfs3.TypeBlk:
			if e.c.uid != 0 {
				// Only root may make devices (CAP_MKNOD); the server, running as
				// root, must not do it for anyone else, squashed root included.
				e.r.Status = nfs3.StatusPerm
				return e.reply(res)
			}
			// Not a bit to flip between the two: S_IFBLK (0o060000) includes
			// S_IFCHR's bit (0o020000).
			if a.Type == nfs3.TypeBlk {
				mode |= unix.S_IFBLK
			} else {
				mode |= unix.S_IFCHR
			}
			dev = int(unix.Mkdev(a.Spec.Major, a.Spec.Minor))
		case nfs3.TypeSock:
			mode |= unix.S_IFSOCK
		case nfs3.TypeFifo:
			mode |= unix.S_IFIFO
		default:
			e.r.Status = nfs3.StatusBadType
			return e.reply(res)
		}
		name := string(a.Where.Name)
		s.made(&e, name, &a.Attr, unix.Mknodat(e.dir.fd, name, mode, dev))
	}
	return e.reply(res)
}

// openRemoveDir opens the directory of a REMOVE, RMDIR or RENAME source or target.
func (s *Server) openRemoveDir(where *nfs3.DirOpArgs, dir *object, c *cred) nfs3.Status {
	return s.openChangeDir(where, dir, c, nfs3.StatusInval)
}

func (s *Server) removeEntry(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder, rmdir bool) error {
	var a nfs3.RemoveArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var dir object
	var r nfs3.WccRes
	c := s.credOf(ctx, req)
	r.Status = s.openRemoveDir(&a.What, &dir, &c)
	defer dir.close()
	if r.Status == nfs3.StatusOK {
		name := string(a.What.Name)
		var st unix.Statx_t
		flags := 0
		if rmdir {
			flags = unix.AT_REMOVEDIR
		}
		switch err := statAt(dir.fd, name, &st); {
		case err != nil:
			r.Status = statusOf(err)
		case !mayDelete(&c, &dir.st, &st):
			r.Status = nfs3.StatusAcces
		case !rmdir && isDir(&st):
			r.Status = nfs3.StatusIsDir
		case rmdir && !isDir(&st):
			r.Status = nfs3.StatusNotDir
		default:
			if err := unix.Unlinkat(dir.fd, name, flags); err != nil {
				r.Status = statusOf(err)
			} else {
				s.idx.del(keyOf(&st), joinPath(dir.path, name))
				s.files.forget(keyOf(&st))
				r.Status = statusOf(s.stableDir(&dir))
			}
		}
	}
	r.Wcc = s.wcc(&dir)
	r.EncodeXDR(res)
	return nil
}

func (s *Server) remove(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	return s.removeEntry(ctx, req, res, false)
}

func (s *Server) rmdir(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	return s.removeEntry(ctx, req, res, true)
}

func (s *Server) rename(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.RenameArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var from, to object
	var r nfs3.RenameRes
	c := s.credOf(ctx, req)
	to.fd = -1
	r.Status = s.openRemoveDir(&a.From, &from, &c)
	defer from.close()
	if r.Status == nfs3.StatusOK {
		r.Status = s.crossExport(s.openRemoveDir(&a.To, &to, &c), a.To.Dir)
	}
	defer to.close()
	if r.Status == nfs3.StatusOK {
		r.Status = s.doRename(&from, &to, &a, &c)
	}
	if r.Status == nfs3.StatusOK {
		r.Status = statusOf(s.stableDirs(&from, &to))
	}
	r.FromDirWcc, r.ToDirWcc = s.wcc(&from), s.wcc(&to)
	r.EncodeXDR(res)
	return nil
}

func (s *Server) doRename(from, to *object, a *nfs3.RenameArgs, c *cred) nfs3.Status {
	oldName, newName := string(a.From.Name), string(a.To.Name)
	var src, dst unix.Statx_t
	if err := statAt(from.fd, oldName, &src); err != nil {
		return statusOf(err)
	}
	if !mayDelete(c, &from.st, &src) {
		return nfs3.StatusAcces
	}
	// A directory moved to another parent has its ".." entry rewritten: Linux requires
	// write permission on it (vfs_rename: inode_permission(source, MAY_WRITE)).
	if isDir(&src) && keyOf(&from.st) != keyOf(&to.st) && !allowed(c, &src, permW) {
		return nfs3.StatusAcces
	}
	dstExists := statAt(to.fd, newName, &dst) == nil
	if dstExists && !mayDelete(c, &to.st, &dst) {
		return nfs3.StatusAcces
	}
	if err := unix.Renameat(from.fd, oldName, to.fd, newName); err != nil {
		return statusOf(err)
	}
	oldPath, newPath := joinPath(from.path, oldName), joinPath(to.path, newName)
	if dstExists && keyOf(&dst) != keyOf(&src) {
		s.idx.del(keyOf(&dst), newPath)
		s.files.forget(keyOf(&dst))
	}
	s.idx.put(keyOf(&src), newPath)
	if isDir(&src) {
		s.idx.renameDir(oldPath, newPath)
	}
	return nfs3.StatusOK
}

func (s *Server) link(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.LinkArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var file, dir object
	var r nfs3.LinkRes
	c := s.credOf(ctx, req)
	dir.fd = -1
	r.Status = s.open(a.File, &file, &c)
	defer file.close()
	if r.Status == nfs3.StatusOK {
		r.Status = s.crossExport(s.openCreateDir(&a.Link, &dir, &c), a.Link.Dir)
	}
	defer dir.close()
	if r.Status == nfs3.StatusOK {
		if isDir(&file.st) {
			r.Status = nfs3.StatusIsDir
		} else if !mayHardlink(&c, &file.st) {
			r.Status = nfs3.StatusPerm
		} else if err := unix.Linkat(unix.AT_FDCWD, procPath(file.fd), dir.fd, string(a.Link.Name), unix.AT_SYMLINK_FOLLOW); err != nil {
			r.Status = statusOf(err)
		} else if err := s.stableObject(&file); err != nil {
			r.Status = statusOf(err)
		} else {
			r.Status = statusOf(s.stableDir(&dir))
		}
	}
	if file.fd >= 0 {
		_ = file.refresh()
		r.FileAttr = s.postOp(&file.st)
	}
	r.LinkDirWcc = s.wcc(&dir)
	r.EncodeXDR(res)
	return nil
}

func (s *Server) fsstat(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var o object
	var r nfs3.FsstatRes
	if err := s.openFHArgs(ctx, req, &o, &r.Status); err != nil {
		return err
	}
	defer o.close()
	if r.Status == nfs3.StatusOK {
		r.Attr = s.postOp(&o.st)
		var fs unix.Statfs_t
		if err := unix.Fstatfs(o.fd, &fs); err != nil {
			r.Status = statusOf(err)
		} else {
			bs := uint64(fs.Bsize)
			r.Tbytes, r.Fbytes, r.Abytes = fs.Blocks*bs, fs.Bfree*bs, fs.Bavail*bs
			r.Tfiles, r.Ffiles, r.Afiles = fs.Files, fs.Ffree, fs.Ffree
		}
	}
	r.EncodeXDR(res)
	return nil
}

func (s *Server) fsinfo(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var o object
	var r nfs3.FsinfoRes
	if err := s.openFHArgs(ctx, req, &o, &r.Status); err != nil {
		return err
	}
	defer o.close()
	if r.Status == nfs3.StatusOK {
		io := uint32(s.opts.MaxIO)
		r.Attr = s.postOp(&o.st)
		r.Rtmax, r.Rtpref, r.Rtmult = io, io, 4096
		r.Wtmax, r.Wtpref, r.Wtmult = io, io, 4096
		r.Dtpref = 32768
		r.MaxFileSize = math.MaxInt64
		r.TimeDelta = nfs3.Time{Nseconds: 1}
		r.Properties = nfs3.FSFLink | nfs3.FSFSymlink | nfs3.FSFHomogeneous | nfs3.FSFCanSetTime
	}
	r.EncodeXDR(res)
	return nil
}

func (s *Server) pathconf(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var o object
	var r nfs3.PathconfRes
	if err := s.openFHArgs(ctx, req, &o, &r.Status); err != nil {
		return err
	}
	defer o.close()
	if r.Status == nfs3.StatusOK {
		r.Attr = s.postOp(&o.st)
		r.Linkmax, r.NameMax = 65000, nfs3.MaxNameLen
		r.NoTrunc, r.ChownRestricted, r.CaseInsensitive, r.CasePreserving = true, true, false, true
	}
	r.EncodeXDR(res)
	return nil
}
