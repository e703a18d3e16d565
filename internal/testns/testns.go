//go:build linux

// Package testns runs a package's tests inside private network and mount namespaces,
// with a private rpcbind when asked, so that tests which need rpcbind on
// 127.0.0.1:111 never see or change the host's (a running nfsrdmad's registrations
// stay untouched, and no daemon outlives `go test`).
//
// A package opts in from its TestMain:
//
//	func TestMain(m *testing.M) { testns.Main(m, testns.Options{RPCBind: true}) }
//
// Main re-executes the test binary in new namespaces (CLONE_NEWNET|CLONE_NEWNS; this
// needs root, or CAP_SYS_ADMIN). Inside, it brings the loopback interface up, mounts a
// private tmpfs on /run (rpcbind's socket and lock files live there), starts
// `rpcbind -f` as a child that dies with the test binary, runs the tests, then stops
// rpcbind. Where namespaces cannot be created, the tests run in the host's namespaces
// and Private reports why, so that tests needing rpcbind can skip with that reason
// instead of touching the host's.
package testns

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// env carries the state across the re-execution: "1" inside the namespaces, or the
// reason they could not be created.
const env = "GO_RPCRDMA_TESTNS"

// Options say what Main sets up inside the namespaces.
type Options struct {
	// RPCBind starts the system's rpcbind (Debian's package rpcbind) in the
	// namespaces, listening on 127.0.0.1:111.
	RPCBind bool
}

// Main runs m in private namespaces and exits with its status. Call it from
// TestMain; it does not return.
func Main(m *testing.M, opts Options) {
	switch v := os.Getenv(env); v {
	case "":
		os.Exit(reexec(m))
	case "1":
		os.Exit(inside(m, opts))
	default: // a reason recorded by a parent that could not create the namespaces
		os.Exit(m.Run())
	}
}

// Private reports whether the tests run in private namespaces, and if not, why.
func Private() (ok bool, reason string) {
	switch v := os.Getenv(env); v {
	case "1":
		return true, ""
	case "":
		return false, "testns.Main did not run (the package has no TestMain calling it)"
	default:
		return false, v
	}
}

// RPCBindBinary returns the path of the rpcbind program, or "" when it is not
// installed.
func RPCBindBinary() string {
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

// reexec runs this test binary again in new namespaces and returns its exit status.
// When the namespaces cannot be created it runs the tests here, recording why.
func reexec(m *testing.M) int {
	// Pdeathsig follows the thread that started the child: keep it.
	runtime.LockOSThread()
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		os.Setenv(env, fmt.Sprintf("cannot create private network and mount namespaces (root needed): %v", err))
		return m.Run()
	}
	err := cmd.Wait()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			fmt.Fprintf(os.Stderr, "testns: test process killed by %v\n", st.Signal())
			return 2
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "testns: %v\n", err)
	return 2
}

// inside sets the namespaces up, runs the tests and tears down what it started.
func inside(m *testing.M, opts Options) int {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "testns: %v\n", err)
		return 2
	}
	if !opts.RPCBind {
		return m.Run()
	}
	stop, err := startRPCBind()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testns: %v\n", err)
		return 2
	}
	code := m.Run()
	stop()
	return code
}

// setup makes this mount namespace's mounts private, gives it its own /run and brings
// the loopback interface up.
func setup() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("testns", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting a private /run: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for interface flags: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback interface request: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing loopback up: %w", err)
	}
	return nil
}

// startRPCBind starts `rpcbind -f` and waits until it accepts connections on
// 127.0.0.1:111. When rpcbind is not installed it starts nothing: the tests that need
// it skip (Private still reports the namespaces).
func startRPCBind() (stop func(), err error) {
	path := RPCBindBinary()
	if path == "" {
		return func() {}, nil
	}
	cmd := exec.Command(path, "-f")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:111", time.Second)
		if err == nil {
			c.Close()
			return stop, nil
		}
		select {
		case werr := <-exited:
			return nil, fmt.Errorf("%s -f exited before it listened: %v", path, werr)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("%s -f does not listen on 127.0.0.1:111 after 10s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
