package oncrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/testns"
)

// Interoperability with the system's ONC RPC implementation (libtirpc): our Client
// against a running rpcbind, and rpcinfo against our Server. Skipped when they are
// absent. The rpcbind is a private one in the tests' own network namespace (see
// TestMain); the host's is never called.

const (
	rpcbindProg = 100000
)

// dialPrivateRPCBind connects to the rpcbind testns.Main started, or skips the test
// when there is none: the host's rpcbind is never used.
func dialPrivateRPCBind(t *testing.T) net.Conn {
	t.Helper()
	if ok, why := testns.Private(); !ok {
		t.Skip("no private network namespace, and the host's rpcbind is never used: " + why)
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:111", time.Second)
	if err != nil {
		t.Skipf("no rpcbind in the private namespace (is it installed?): %v", err)
	}
	return c
}

func TestInteropClientAgainstRpcbind(t *testing.T) {
	c := dialPrivateRPCBind(t)
	// One fragment per record: rpcbind's non-blocking libtirpc server drops the
	// connection on a multi-fragment call (see TestInteropRpcbindRejectsFragments).
	tr := NewTCPTransport(c, nil)
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sys, err := NewAuthSys(&AuthSysParams{MachineName: []byte("oncrpc-test"), UID: 0, GID: 0, GIDs: []uint32{0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, vers := range []uint32{2, 3, 4} {
		if err := NewClient(tr, rpcbindProg, vers).Call(ctx, 0, nil, nil); err != nil {
			t.Fatalf("NULL v%d: %v", vers, err)
		}
		if err := NewClient(tr, rpcbindProg, vers, WithAuth(sys)).Call(ctx, 0, nil, nil); err != nil {
			t.Fatalf("NULL v%d with AUTH_SYS: %v", vers, err)
		}
	}
	var ae *AcceptError
	err = NewClient(tr, rpcbindProg, 9).Call(ctx, 0, nil, nil)
	if !errors.As(err, &ae) || ae.Stat != ProgMismatch || ae.Low != 2 || ae.High != 4 {
		t.Fatalf("v9: %v, want PROG_MISMATCH 2..4", err)
	}
	err = NewClient(tr, rpcbindProg, 4).Call(ctx, 99, nil, nil)
	if !errors.As(err, &ae) || ae.Stat != ProcUnavail {
		t.Fatalf("proc 99: %v, want PROC_UNAVAIL", err)
	}
	err = NewClient(tr, 0x3fffff00, 1).Call(ctx, 0, nil, nil)
	if !errors.As(err, &ae) || ae.Stat != ProgUnavail {
		t.Fatalf("unknown program: %v, want PROG_UNAVAIL", err)
	}
}

// Records a real peer does not take: documents why MaxFragment defaults to one fragment
// per record. If this starts to fail, libtirpc has learned multi-fragment calls.
func TestInteropRpcbindRejectsFragments(t *testing.T) {
	c := dialPrivateRPCBind(t)
	tr := NewTCPTransport(c, &TCPOptions{MaxFragment: 8})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := NewClient(tr, rpcbindProg, 2).Call(ctx, 0, nil, nil)
	if err == nil {
		t.Log("rpcbind accepted a multi-fragment call")
		return
	}
	var ae *AcceptError
	var re *RejectError
	if errors.As(err, &ae) || errors.As(err, &re) || ctx.Err() != nil {
		t.Fatalf("unexpected outcome %v", err)
	}
	t.Logf("rpcbind drops the connection on a multi-fragment call: %v", err)
}

func TestInteropRpcinfoAgainstServer(t *testing.T) {
	rpcinfo, err := exec.LookPath("rpcinfo")
	if err != nil {
		t.Skip("rpcinfo not installed")
	}
	s := NewServer(nil)
	s.RegisterRange(testProg, 2, 3, echoHandler())
	l, err := ListenTCP("127.0.0.1:0", &TCPOptions{MaxFragment: 8})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	port := l.Addr().(*net.TCPAddr).Port
	uaddr := fmt.Sprintf("127.0.0.1.%d.%d", port>>8, port&0xff) // RFC 5665 universal address
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, rpcinfo, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("rpcinfo %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	prog := fmt.Sprint(testProg)
	// One version: a NULL call (our replies arrive in 8-byte fragments, which the
	// blocking libtirpc client reassembles).
	out := run("-a", uaddr, "-T", "tcp", prog, "3")
	if !strings.Contains(out, "version 3 ready and waiting") {
		t.Fatalf("rpcinfo output:\n%s", out)
	}
	// No version: rpcinfo learns the range from our PROG_MISMATCH and calls each.
	out = run("-a", uaddr, "-T", "tcp", prog)
	if !strings.Contains(out, "version 2 ready and waiting") || !strings.Contains(out, "version 3 ready and waiting") {
		t.Fatalf("rpcinfo output:\n%s", out)
	}
}
