//go:build linux

package nfsserver

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

func TestStatusOf(t *testing.T) {
	cases := map[error]nfs3.Status{
		nil:                                 nfs3.StatusOK,
		unix.EPERM:                          nfs3.StatusPerm,
		unix.ENOENT:                         nfs3.StatusNoEnt,
		unix.EIO:                            nfs3.StatusIO,
		unix.ENXIO:                          nfs3.StatusNXIO,
		unix.EACCES:                         nfs3.StatusAcces,
		unix.ETXTBSY:                        nfs3.StatusAcces,
		unix.EEXIST:                         nfs3.StatusExist,
		unix.EXDEV:                          nfs3.StatusXDev,
		unix.ENODEV:                         nfs3.StatusNoDev,
		unix.ENOTDIR:                        nfs3.StatusNotDir,
		unix.EISDIR:                         nfs3.StatusIsDir,
		unix.EINVAL:                         nfs3.StatusInval,
		unix.ELOOP:                          nfs3.StatusInval,
		unix.EFBIG:                          nfs3.StatusFBig,
		unix.ENOSPC:                         nfs3.StatusNoSpc,
		unix.EROFS:                          nfs3.StatusROFS,
		unix.EMLINK:                         nfs3.StatusMLink,
		unix.ENAMETOOLONG:                   nfs3.StatusNameTooLong,
		unix.ENOTEMPTY:                      nfs3.StatusNotEmpty,
		unix.EDQUOT:                         nfs3.StatusDQuot,
		unix.ESTALE:                         nfs3.StatusStale,
		unix.EOPNOTSUPP:                     nfs3.StatusNotSupp,
		unix.EAGAIN:                         nfs3.StatusJukebox,
		unix.EBADF:                          nfs3.StatusServerFault,
		unix.ECONNRESET:                     nfs3.StatusIO, // no NFSv3 equivalent
		fmt.Errorf("open: %w", unix.ENOENT): nfs3.StatusNoEnt,
		nfs3.StatusBadCookie:                nfs3.StatusBadCookie,
		errors.New("not an errno"):          nfs3.StatusServerFault,
	}
	for err, want := range cases {
		if got := statusOf(err); got != want {
			t.Errorf("statusOf(%v) = %v, want %v", err, got, want)
		}
	}
}
