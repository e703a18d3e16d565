//go:build linux

package oncrpc

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/testns"
)

// TestMain runs the tests in private network and mount namespaces with an rpcbind of
// their own, so the interoperability tests never call the host's.
func TestMain(m *testing.M) { testns.Main(m, testns.Options{RPCBind: true}) }
