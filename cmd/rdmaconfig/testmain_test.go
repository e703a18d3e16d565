//go:build linux

package main

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/rpcbind/rpcbindtest"
)

// TestMain runs the tests in private network and mount namespaces with an rpcbind of
// their own (rpcbindtest.Main): the host's rpcbind is never touched.
func TestMain(m *testing.M) {
	clitest.RunMain("rdmaconfig", main)
	rpcbindtest.Main(m)
}
