//go:build linux

package soft

import (
	"net"
	"syscall"
)

// tcpMSS returns the connection's TCP maximum segment size, or 0.
func tcpMSS(c net.Conn) int {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	mss := 0
	raw.Control(func(fd uintptr) {
		v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG)
		if err == nil {
			mss = v
		}
	})
	return mss
}

// mssStep is the RawConn.Control callback of refreshMaxFPDULocked: it reads
// the socket's current MSS into q.mss (0 on error).
func (q *queuePair) mssStep(fd uintptr) {
	q.mss = 0
	if v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG); err == nil {
		q.mss = v
	}
}
