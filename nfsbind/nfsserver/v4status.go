//go:build linux

package nfsserver

import (
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
)

// st4 maps the nfsstat3 the shared NFSv3/NFSv4 code paths (handle resolution,
// permission checks, statusOf of an errno) produce to the nfsstat4 an NFSv4.1 reply
// carries. Most codes have the same name and value in both versions (RFC 8881
// §15.1 kept them); the rest map as Linux nfsd does: NFS3ERR_JUKEBOX is
// NFS4ERR_DELAY, NFS3ERR_NODEV (no NFSv4 equivalent) NFS4ERR_IO, and NFS3ERR_NOT_SYNC
// (SETATTR's guard, which NFSv4 expresses with VERIFY) NFS4ERR_NOT_SAME.
func st4(st nfs3.Status) nfs4.Status {
	switch st {
	case nfs3.StatusOK:
		return nfs4.OK
	case nfs3.StatusPerm:
		return nfs4.ErrPerm
	case nfs3.StatusNoEnt:
		return nfs4.ErrNoent
	case nfs3.StatusNXIO:
		return nfs4.ErrNxio
	case nfs3.StatusAcces:
		return nfs4.ErrAccess
	case nfs3.StatusExist:
		return nfs4.ErrExist
	case nfs3.StatusXDev:
		return nfs4.ErrXdev
	case nfs3.StatusNotDir:
		return nfs4.ErrNotdir
	case nfs3.StatusIsDir:
		return nfs4.ErrIsdir
	case nfs3.StatusInval:
		return nfs4.ErrInval
	case nfs3.StatusFBig:
		return nfs4.ErrFbig
	case nfs3.StatusNoSpc:
		return nfs4.ErrNospc
	case nfs3.StatusROFS:
		return nfs4.ErrRofs
	case nfs3.StatusMLink:
		return nfs4.ErrMlink
	case nfs3.StatusNameTooLong:
		return nfs4.ErrNametoolong
	case nfs3.StatusNotEmpty:
		return nfs4.ErrNotempty
	case nfs3.StatusDQuot:
		return nfs4.ErrDquot
	case nfs3.StatusStale:
		return nfs4.ErrStale
	case nfs3.StatusBadHandle:
		return nfs4.ErrBadhandle
	case nfs3.StatusNotSync:
		return nfs4.ErrNotSame
	case nfs3.StatusBadCookie:
		return nfs4.ErrBadCookie
	case nfs3.StatusNotSupp:
		return nfs4.ErrNotsupp
	case nfs3.StatusTooSmall:
		return nfs4.ErrToosmall
	case nfs3.StatusServerFault:
		return nfs4.ErrServerfault
	case nfs3.StatusBadType:
		return nfs4.ErrBadtype
	case nfs3.StatusJukebox:
		return nfs4.ErrDelay
	}
	return nfs4.ErrIO
}

// ioStatus4 is the nfsstat4 of a failed openIO or openWrite, which filled st with the
// file's attributes (st.Mask not 0) when the handle resolved: the file's type decides
// when it is not a regular file (regTypeStatus), else the NFSv3 status maps as st4.
func ioStatus4(st3 nfs3.Status, st *unix.Statx_t) nfs4.Status {
	if st.Mask != 0 && !isReg(st) {
		return regTypeStatus(st)
	}
	return st4(st3)
}

// errStatus4 is the nfsstat4 of an operating-system error (see statusOf).
func errStatus4(err error) nfs4.Status { return st4(statusOf(err)) }

// fileKeyOf is the identity the state manager keys opens and locks by: the file's
// device, inode and generation, as in its handle.
func fileKeyOf(st *unix.Statx_t) nfs4state.FileKey {
	id := idOf(st)
	return nfs4state.FileKey{Dev: id.key.dev, Ino: id.key.ino, Gen: id.gen}
}
