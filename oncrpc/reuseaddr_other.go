//go:build !unix

package oncrpc

import "syscall"

// reuseAddr does nothing where SO_REUSEADDR means something else than on Unix
// (Windows lets it take a port another socket is bound to).
func reuseAddr(network, address string, c syscall.RawConn) error { return nil }
