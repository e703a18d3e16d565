//go:build linux

package nfsserver

import (
	"math"
	"os/user"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// NFSv4 attributes (fattr4) from statx.
//
// The attributes are the ones package nfs4 supports (nfs4.SupportedAttrs), computed
// from the object's statx and, for the file-system counts (files_*, space_avail,
// space_free, space_total), an fstatfs made only when one of them is asked for.
// change is the ctime in nanoseconds, which every change to the object moves. The
// fsid of an object in an export is its device's (or on the export root's file system
// fsid=, Options.FSID; see Server.fsid) as major, 0 as minor; the pseudo file
// system's is (0, pseudoFSIDMinor). An export root's mounted_on_fileid is the fileid
// of the pseudo directory it hangs under. time_access_set and time_modify_set are
// write-only (v4WriteOnly): asking for them in GETATTR, READDIR, VERIFY or NVERIFY is
// NFS4ERR_INVAL.
//
// owner and owner_group are the numeric uid and gid as decimal strings ("1000"), as
// knfsd sends them with id mapping disabled, which is what the Linux client sends
// and accepts by default for AUTH_SYS (nfs4_disable_idmapping). SETATTR, CREATE and
// OPEN accept those and also "name@domain" for a name this host's user or group
// database knows (the domain is not checked: there is no idmapd domain to compare
// it with); anything else is NFS4ERR_BADOWNER.

// v4Supported is nfs4.SupportedAttrs, computed once.
var v4Supported = nfs4.SupportedAttrs()

// v4Settable is nfs4.SettableAttrs, computed once.
var v4Settable = nfs4.SettableAttrs()

// v4WriteOnly is nfs4.WriteOnlyAttrs, computed once: GETATTR, READDIR, VERIFY and
// NVERIFY of any of them is NFS4ERR_INVAL.
var v4WriteOnly = nfs4.WriteOnlyAttrs()

// v4ExclCreat are the attributes a client may set with an EXCLUSIVE4_1 OPEN
// (suppattr_exclcreat): the settable ones but the times, which hold the verifier.
var v4ExclCreat = nfs4.NewBitmap(nfs4.AttrSize, nfs4.AttrMode, nfs4.AttrOwner, nfs4.AttrOwnerGroup)

// fsStatAttrs are the attributes that need an fstatfs.
var fsStatAttrs = nfs4.NewBitmap(nfs4.AttrFilesAvail, nfs4.AttrFilesFree, nfs4.AttrFilesTotal,
	nfs4.AttrSpaceAvail, nfs4.AttrSpaceFree, nfs4.AttrSpaceTotal)

// pseudoTime is the time attributes of the pseudo directories report: when the
// process started.
var pseudoTime = time.Now()

// andInto sets *dst to the bits set in both a and b, reusing dst's storage, without
// trailing zero words.
func andInto(dst *nfs4.Bitmap4, a, b nfs4.Bitmap4) {
	n := min(len(a), len(b))
	*dst = (*dst)[:0]
	for i := 0; i < n; i++ {
		*dst = append(*dst, a[i]&b[i])
	}
	for len(*dst) > 0 && (*dst)[len(*dst)-1] == 0 {
		*dst = (*dst)[:len(*dst)-1]
	}
}

// overlaps reports whether a and b share a bit.
func overlaps(a, b nfs4.Bitmap4) bool {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i]&b[i] != 0 {
			return true
		}
	}
	return false
}

func ftype4(st *unix.Statx_t) nfs4.FileType {
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		return nfs4.NF4Dir
	case unix.S_IFLNK:
		return nfs4.NF4Lnk
	case unix.S_IFBLK:
		return nfs4.NF4Blk
	case unix.S_IFCHR:
		return nfs4.NF4Chr
	case unix.S_IFSOCK:
		return nfs4.NF4Sock
	case unix.S_IFIFO:
		return nfs4.NF4Fifo
	}
	return nfs4.NF4Reg
}

func time4(t unix.StatxTimestamp) nfs4.NFSTime4 {
	return nfs4.NFSTime4{Seconds: t.Sec, Nseconds: t.Nsec}
}

// attrBuf holds the storage the attributes of one object refer to.
type attrBuf struct {
	owner, group [20]byte
}

// commonAttrs fills the attributes that are the same for every object of the server.
func (v *v4Server) commonAttrs(a *nfs4.Fattr) {
	a.SupportedAttrs = v4Supported
	a.FHExpireType = nfs4.FH4Persistent
	a.LinkSupport, a.SymlinkSupport, a.NamedAttr = true, true, false
	a.UniqueHandles = true
	a.LeaseTime = uint32(v.state.LeaseTime() / time.Second)
	a.RdattrError = nfs4.OK
	a.ACLSupport = 0
	a.Cansettime, a.CaseInsensitive, a.CasePreserving, a.ChownRestricted = true, false, true, true
	a.Homogeneous = true
	a.Maxfilesize = math.MaxInt64
	a.Maxlink = 65000
	a.Maxname = nfs4.MaxNameLen
	a.NoTrunc = true
	a.TimeDelta = nfs4.NFSTime4{Nseconds: 1}
	a.FSLayoutTypes = a.FSLayoutTypes[:0]
	a.SuppattrExclcreat = v4ExclCreat
}

// exportAttrs fills a with the attributes in mask of the object st of srv, whose
// handle is fh; fd (or -1) is a descriptor of it for fstatfs; root says st is the
// export root.
func (c *compound) exportAttrs(srv *Server, st *unix.Statx_t, fh []byte, fd int, mask nfs4.Bitmap4, a *nfs4.Fattr, buf *attrBuf, root bool) nfs4.Status {
	c.v.commonAttrs(a)
	a.Type = ftype4(st)
	a.Change = uint64(st.Ctime.Sec)*1e9 + uint64(st.Ctime.Nsec)
	a.Size = st.Size
	a.FSID = nfs4.FSID4{Major: srv.fsid(st)}
	a.Filehandle = fh
	a.Fileid = st.Ino
	a.Maxread, a.Maxwrite = uint64(srv.opts.MaxIO), uint64(srv.opts.MaxIO)
	a.Mode = uint32(st.Mode) & 0o7777
	a.Numlinks = st.Nlink
	a.Owner = strconv.AppendUint(buf.owner[:0], uint64(st.Uid), 10)
	a.OwnerGroup = strconv.AppendUint(buf.group[:0], uint64(st.Gid), 10)
	a.Rawdev = nfs4.SpecData4{Major: st.Rdev_major, Minor: st.Rdev_minor}
	a.SpaceUsed = st.Blocks * 512
	a.TimeAccess, a.TimeMetadata, a.TimeModify = time4(st.Atime), time4(st.Ctime), time4(st.Mtime)
	a.MountedOnFileid = st.Ino
	if root {
		if n := c.set.pseudo.byExp[srv]; n != nil && n.parent != nil {
			a.MountedOnFileid = n.id
		}
	}
	if overlaps(mask, fsStatAttrs) {
		var fs unix.Statfs_t
		var err error
		if fd >= 0 {
			err = unix.Fstatfs(fd, &fs)
		} else {
			err = unix.Fstatfs(srv.rootFD, &fs)
		}
		if err != nil {
			return errStatus4(err)
		}
		bs := uint64(fs.Bsize)
		a.FilesAvail, a.FilesFree, a.FilesTotal = fs.Ffree, fs.Ffree, fs.Files
		a.SpaceAvail, a.SpaceFree, a.SpaceTotal = fs.Bavail*bs, fs.Bfree*bs, fs.Blocks*bs
	}
	return nfs4.OK
}

// pseudoAttrs fills a with the attributes of the pseudo directory n: a read-only
// directory owned by root.
func (c *compound) pseudoAttrs(n *pseudoNode, fh []byte, a *nfs4.Fattr, buf *attrBuf) {
	c.v.commonAttrs(a)
	t := nfs4.NFSTime4{Seconds: pseudoTime.Unix(), Nseconds: uint32(pseudoTime.Nanosecond())}
	a.Type = nfs4.NF4Dir
	a.Change = uint64(pseudoTime.UnixNano())
	a.Size = 4096
	a.FSID = nfs4.FSID4{Major: 0, Minor: pseudoFSIDMinor}
	a.Filehandle = fh
	a.Fileid = n.id
	a.Maxread, a.Maxwrite = 0, 0
	if len(c.set.list) > 0 {
		a.Maxread, a.Maxwrite = uint64(c.set.list[0].opts.MaxIO), uint64(c.set.list[0].opts.MaxIO)
	}
	a.Mode = 0o555
	a.Numlinks = uint32(2 + len(n.kids))
	a.Owner = append(buf.owner[:0], '0')
	a.OwnerGroup = append(buf.group[:0], '0')
	a.Rawdev = nfs4.SpecData4{}
	a.FilesAvail, a.FilesFree, a.FilesTotal = 0, 0, 0
	a.SpaceAvail, a.SpaceFree, a.SpaceTotal, a.SpaceUsed = 0, 0, 0, 0
	a.TimeAccess, a.TimeMetadata, a.TimeModify = t, t, t
	a.MountedOnFileid = n.id
}

// parseOwner maps an owner or owner_group string to a uid or gid: a decimal number,
// or name@domain for a name the user (group) database knows. ok is false for
// anything else (NFS4ERR_BADOWNER), noID among them, as knfsd refuses an id that maps
// to no valid kuid.
func parseOwner(s []byte, group bool) (uint32, bool) {
	if len(s) == 0 {
		return 0, false
	}
	if v, err := strconv.ParseUint(string(s), 10, 32); err == nil {
		return uint32(v), v != noID
	}
	name := string(s)
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '@' {
			name = name[:i]
			break
		}
	}
	if name == "" {
		return 0, false
	}
	var id string
	if group {
		g, err := user.LookupGroup(name)
		if err != nil {
			return 0, false
		}
		id = g.Gid
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return 0, false
		}
		id = u.Uid
	}
	v, err := strconv.ParseUint(id, 10, 32)
	return uint32(v), err == nil && v != noID
}
