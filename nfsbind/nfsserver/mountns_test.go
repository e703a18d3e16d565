//go:build linux

package nfsserver

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// mountNSEnv names, in the environment of the copy of the test binary that
// inPrivateMountNS starts, the test that copy runs.
const mountNSEnv = "NFSSERVER_TEST_MOUNTNS"

// inPrivateMountNS lets a test mount file systems that no other process sees and that
// vanish with it (internal/testns puts a whole package in namespaces; this is for one
// test). Called first in a test, it runs that test again in a copy of the test binary
// started in a mount namespace of its own (clone(CLONE_NEWNS), which needs root) and
// returns false: the copy's output is logged, and its outcome, pass, skip or fail, is
// the test's. In the copy it makes every mount private, so that none propagates to the
// host, and returns true: the test goes on there.
func inPrivateMountNS(t *testing.T) bool {
	t.Helper()
	if os.Getenv(mountNSEnv) == t.Name() {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Fatalf("making the mounts of the namespace private: %v", err)
		}
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot run the test binary again: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), mountNSEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig follows the thread that started the child: keep it.
	runtime.LockOSThread()
	out, err := cmd.CombinedOutput()
	runtime.UnlockOSThread()
	t.Logf("in a mount namespace of its own:\n%s", out)
	switch {
	case err != nil && cmd.ProcessState == nil:
		t.Skipf("cannot create a mount namespace: %v", err)
	case err != nil:
		t.Fatalf("in a mount namespace of its own: %v", err)
	case bytes.Contains(out, []byte("--- SKIP: "+t.Name())):
		t.Skip("skipped in the mount namespace")
	case !bytes.Contains(out, []byte("--- PASS: "+t.Name())):
		t.Fatal("the test did not run in the mount namespace")
	}
	return false
}
