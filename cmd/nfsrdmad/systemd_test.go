//go:build linux

package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
)

// TestSystemdNotify runs the command as systemd runs a Type=notify service, with
// $NOTIFY_SOCKET and $STATE_DIRECTORY set: it reports READY=1 once it listens,
// RELOADING=1 (with the monotonic time) and READY=1 around each SIGHUP, with a STATUS
// saying whether the exports were re-read, and STOPPING=1 on SIGTERM; the handle key
// goes into the state directory.
func TestSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "notify"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	exportsFile := filepath.Join(dir, "exports")
	export := t.TempDir()
	if err := os.WriteFile(exportsFile, []byte(export+" 127.0.0.1(rw)\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := clitest.Command("-exports", exportsFile, "-rdma", "127.0.0.1:0", "-tcp", "127.0.0.1:0")
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+filepath.Join(dir, "notify"), "STATE_DIRECTORY="+state)
	stderr := startDaemon(t, cmd)
	next := func(what string) string {
		t.Helper()
		sock.SetReadDeadline(time.Now().Add(60 * time.Second))
		buf := make([]byte, 4096)
		n, err := sock.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v; stderr:\n%s", what, err, stderr.String())
		}
		return string(buf[:n])
	}
	serving := regexp.MustCompile(`^READY=1\nSTATUS=serving NFS on RDMA 127\.0\.0\.1:\d+ and TCP 127\.0\.0\.1:\d+$`)
	if m := next("READY=1"); !serving.MatchString(m) {
		t.Fatalf("first notification %q", m)
	}
	if ents, _ := os.ReadDir(state); len(ents) == 0 {
		t.Errorf("nothing in $STATE_DIRECTORY %s: the handle key went elsewhere", state)
	}

	reload := func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		m := next("RELOADING=1")
		usec, ok := strings.CutPrefix(m, "RELOADING=1\nMONOTONIC_USEC=")
		n, err := strconv.ParseInt(usec, 10, 64)
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		if !ok || err != nil || n <= 0 || n > ts.Nano()/1e3 {
			t.Errorf("reload notification %q (now %d µs)", m, ts.Nano()/1e3)
		}
	}
	reload()
	if m := next("READY=1 after the reload"); !serving.MatchString(m) {
		t.Errorf("after a good reload %q", m)
	}
	os.WriteFile(exportsFile, []byte(export+" 127.0.0.1(rw,nonsense)\n"), 0o644)
	reload()
	if m := next("READY=1 after a failed reload"); !strings.HasPrefix(m, "READY=1\nSTATUS=exports not reloaded (") || !strings.Contains(m, "nonsense") {
		t.Errorf("after a failed reload %q", m)
	} else if !strings.Contains(m, "-exports ") || strings.Contains(m, "ExportsFile") {
		t.Errorf("after a failed reload %q: want the file named by its flag, -exports", m)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if m := next("STOPPING=1"); m != "STOPPING=1" {
		t.Errorf("at SIGTERM %q", m)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v; stderr:\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "cannot notify systemd") {
		t.Errorf("a notification failed:\n%s", stderr.String())
	}
}

// -check checks the exports as a reload would (the unit's first ExecReload): status
// 0 and the exports listed, every option spelled out (crossmnt or nocrossmnt
// included), when they can be served, 1 and the reason when not, and nothing served
// either way.
func TestCheckFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "exports")
	os.WriteFile(file, []byte(dir+" 127.0.0.1(rw) 127.0.0.2(crossmnt)\n"), 0o644)
	code, stdout, stderr := clitest.Run(t, "-check", "-exports", file)
	if code != 0 || stdout != "nfsrdmad: can serve "+dir+" as "+dir+" to 127.0.0.1(rw,root_squash,no_all_squash,anonuid=65534,anongid=65534,sync,nocrossmnt,secure)"+
		" 127.0.0.2(ro,root_squash,no_all_squash,anonuid=65534,anongid=65534,sync,crossmnt,secure)\n" {
		t.Errorf("good file: status %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	os.WriteFile(file, []byte(dir+" 127.0.0.1(rw)\n"+filepath.Join(dir, "absent")+" *(ro)\n"), 0o644)
	code, stdout, stderr = clitest.Run(t, "-check", "-exports", file)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "line 2: export "+filepath.Join(dir, "absent")+" cannot be served") {
		t.Errorf("missing directory: status %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = clitest.Run(t, "-check", "-export", dir, "-ro")
	if code != 0 {
		t.Errorf("-export: status %d, stderr %q", code, stderr)
	}
}
