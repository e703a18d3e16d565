//go:build !linux

package testns

import (
	"os"
	"os/exec"
	"testing"
)

// Options say what Main sets up inside the namespaces.
type Options struct {
	// RPCBind starts the system's rpcbind in the namespaces.
	RPCBind bool
}

// Main runs m and exits with its status: namespaces are Linux-only, so the tests run
// here and Private says why.
func Main(m *testing.M, opts Options) { os.Exit(m.Run()) }

// Private reports false: private namespaces exist only on Linux.
func Private() (ok bool, reason string) {
	return false, "private network namespaces are Linux-only"
}

// RPCBindBinary returns the path of the rpcbind program, or "" when it is not
// installed.
func RPCBindBinary() string {
	p, _ := exec.LookPath("rpcbind")
	return p
}
