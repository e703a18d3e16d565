//go:build unix

package soft

import "syscall"

// setRcvBuf sets the socket's SO_RCVBUF.
func setRcvBuf(fd uintptr, n int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
