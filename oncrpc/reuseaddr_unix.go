//go:build unix

package oncrpc

import "syscall"

// reuseAddr sets SO_REUSEADDR on a socket about to be bound to the source port of a
// lost connection, as Linux's RPC client sets it on its sockets (xs_create_sock):
// without it bind(2) fails with EADDRINUSE while any socket that used the port,
// to this server or another, lingers in TIME_WAIT, although a connection to the
// server from that port is possible (connect(2) checks the whole address quadruple).
func reuseAddr(network, address string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}); err != nil {
		return err
	}
	return serr
}
