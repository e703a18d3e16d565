//go:build linux

package nfsserver

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// statusOf maps an operating-system error to the nfsstat3 RFC 1813 §2.6 defines for
// it. Errors with no NFSv3 equivalent become NFS3ERR_IO, as in Linux nfsd.
func statusOf(err error) nfs3.Status {
	if err == nil {
		return nfs3.StatusOK
	}
	var st nfs3.Status
	if errors.As(err, &st) {
		return st
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return nfs3.StatusServerFault
	}
	switch errno {
	case unix.EPERM:
		return nfs3.StatusPerm
	case unix.ENOENT:
		return nfs3.StatusNoEnt
	case unix.EIO:
		return nfs3.StatusIO
	case unix.ENXIO:
		return nfs3.StatusNXIO
	case unix.EACCES, unix.ETXTBSY:
		return nfs3.StatusAcces
	case unix.EBUSY:
		// A name something is mounted on, which cannot be removed or renamed:
		// knfsd answers NFS3ERR_ACCES for NFSv3 (nfsd_unlink: "there is no
		// perfect error status"), NFS4ERR_ACCESS for NFSv4's REMOVE of a directory.
		return nfs3.StatusAcces
	case unix.EEXIST:
		return nfs3.StatusExist
	case unix.EXDEV:
		return nfs3.StatusXDev
	case unix.ENODEV:
		return nfs3.StatusNoDev
	case unix.ENOTDIR:
		return nfs3.StatusNotDir
	case unix.EISDIR:
		return nfs3.StatusIsDir
	case unix.EINVAL, unix.ELOOP:
		// ELOOP: the server met a symbolic link where it refuses to follow one.
		return nfs3.StatusInval
	case unix.EFBIG, unix.EOVERFLOW:
		return nfs3.StatusFBig
	case unix.ENOSPC:
		return nfs3.StatusNoSpc
	case unix.EROFS:
		return nfs3.StatusROFS
	case unix.EMLINK:
		return nfs3.StatusMLink
	case unix.ENAMETOOLONG:
		return nfs3.StatusNameTooLong
	case unix.ENOTEMPTY:
		return nfs3.StatusNotEmpty
	case unix.EDQUOT:
		return nfs3.StatusDQuot
	case unix.ESTALE:
		return nfs3.StatusStale
	case unix.EOPNOTSUPP, unix.ENOSYS:
		return nfs3.StatusNotSupp
	case unix.EAGAIN, unix.ENOMEM, unix.EINTR:
		return nfs3.StatusJukebox
	case unix.EBADF, unix.EFAULT:
		return nfs3.StatusServerFault
	}
	return nfs3.StatusIO
}
