//go:build linux

package nfsd

import (
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// DefaultIdleTimeout is the default Config.IdleTimeout: knfsd closes connections idle
// for about 6 minutes.
const DefaultIdleTimeout = oncrpc.DefaultIdleTimeout

// DefaultMaxConns returns the default Config.MaxConns: oncrpc.DefaultMaxConns (1024)
// connections per listener, or a quarter of the process's descriptor limit
// (RLIMIT_NOFILE) when that is less, so that the listeners together with the NFS
// server's open-file cache (another quarter at most) cannot run the process out of
// descriptors.
func DefaultMaxConns() int {
	n := oncrpc.DefaultMaxConns
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur != ^uint64(0) {
		n = min(n, max(int(lim.Cur/4), 1))
	}
	return n
}
