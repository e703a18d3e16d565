// Package rpcbindtest lets tests use the system's real rpcbind (Debian's, which
// .ci/run installs) without touching the host's: a package's TestMain calls Main,
// which runs its tests in private network and mount namespaces with an rpcbind of
// their own on 127.0.0.1:111 (see internal/testns), and each test that needs it calls
// Need.
//
// It does not import package rpcbind, so that package's own tests can use it.
package rpcbindtest

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/testns"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// Addr is where the private rpcbind listens: loopback TCP port 111 of the test's own
// network namespace.
const Addr = "127.0.0.1:111"

// Main runs the package's tests in private namespaces with a private rpcbind. Call
// it from TestMain; it does not return.
func Main(m *testing.M) { testns.Main(m, testns.Options{RPCBind: true}) }

// Ping calls rpcbind version 4's NULL procedure at Addr.
func Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	t, err := oncrpc.DialTCP(ctx, Addr, nil)
	if err != nil {
		return err
	}
	defer t.Close()
	return oncrpc.NewClient(t, 100000, 4).Call(ctx, 0, nil, nil)
}

// Available reports whether a private rpcbind runs (Main started one), and if not,
// why.
func Available() (ok bool, reason string) {
	if ok, why := testns.Private(); !ok {
		return false, "no private network namespace, and the host's rpcbind is never used: " + why
	}
	if testns.RPCBindBinary() == "" {
		return false, "rpcbind is not installed (apt-get install rpcbind; .ci/run does it)"
	}
	return true, ""
}

// Need skips the test when no private rpcbind runs (see Available), and fails it when
// one was started but does not answer.
func Need(t testing.TB) {
	t.Helper()
	if ok, why := Available(); !ok {
		t.Skip(why)
	}
	if err := Ping(context.Background()); err != nil {
		t.Fatalf("the private rpcbind does not answer on %s: %v", Addr, err)
	}
}
