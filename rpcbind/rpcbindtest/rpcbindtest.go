// Package rpcbindtest lets tests use the system's real rpcbind (Debian's, which
// .ci/run installs): Need makes sure it answers on 127.0.0.1:111, starting it when it
// is not running, and Lock serializes the tests of several packages that register
// the same programs with it.
//
// It does not import package rpcbind, so that package's own tests can use it.
package rpcbindtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// Addr is where Need expects rpcbind: loopback TCP port 111.
const Addr = "127.0.0.1:111"

var mu sync.Mutex

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

// Binary returns the path of the rpcbind program, or "" when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("rpcbind"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/rpcbind", "/sbin/rpcbind"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Need makes sure rpcbind answers at Addr. When nothing answers it starts
// `rpcbind -w`, which daemonizes as the system service does, and waits for it. A
// started rpcbind is left running: other test packages may be using it at the same
// time, as they would the system's. Need skips the test only when the binary is not
// installed or starting it needs root; it fails the test when a started rpcbind does
// not answer within 10 seconds.
func Need(t testing.TB) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if Ping(context.Background()) == nil {
		return
	}
	path := Binary()
	if path == "" {
		t.Skip("rpcbind is not installed (apt-get install rpcbind; .ci/run does it) and nothing answers on " + Addr)
	}
	if os.Geteuid() != 0 {
		t.Skipf("rpcbind (%s) is not running and starting it needs root", path)
	}
	if out, err := exec.Command(path, "-w").CombinedOutput(); err != nil {
		// Another test package may have started it a moment ago; the ping decides.
		t.Logf("%s -w: %v: %s", path, err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := Ping(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rpcbind (%s) does not answer on %s: %v", path, Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Lock takes, until the test ends, a lock shared by every test process of this
// module that registers programs with the local rpcbind (go test runs packages at
// the same time), so that one package's cleanup cannot remove another's mappings.
func Lock(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "go-rpcrdma-rpcbind-tests.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}
