package gonfsinterop

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildNfsrdma builds the nfsrdma command of this checkout into a temporary directory.
func buildNfsrdma(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build nfsrdma: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "nfsrdma")
	cmd := exec.Command(goTool, "build", "-o", bin, "github.com/go-rpcrdma/rpcrdma/cmd/nfsrdma")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build nfsrdma: %v\n%s", err, out)
	}
	return bin
}

// nfsrdma bench measures willscott/go-nfs over TCP, a server without MOUNT EXPORT:
// it mounts the given path with MNT, creates, fills, reads, writes and removes its
// file there, and reports the median of its rounds.
func TestNfsrdmaBenchGoNFS(t *testing.T) {
	bin := buildNfsrdma(t)
	// go-nfs over osfs cannot change a mode, so it accepts the bench file's CREATE
	// (mode 0644) only if it creates files 0644 itself: 0666 under umask 022.
	defer syscall.Umask(syscall.Umask(0o022))
	dir := t.TempDir()
	p := startGoNFS(t, dir)
	_, port, _ := net.SplitHostPort(p.tcp)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "bench", "-proto", "tcp", "-tcp-port", port, "-mountport", port,
		"-ops", "read,write", "-sizes", "4k,64k", "-qd", "1,4", "-rounds", "3", "-duration", "150ms", "-file-size", "1MiB",
		"127.0.0.1:/")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nfsrdma bench against go-nfs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("nfsrdma bench against go-nfs:\n%s", out)
	for _, w := range []string{
		"mounted / as it is (MOUNT EXPORT:",
		"in 3 rounds (medians)",
		"[ 1/8] READ     4 KiB qd 1  over tcp   median of 3 rounds",
		"[ 8/8] WRITE   64 KiB qd 4  over tcp   median of 3 rounds",
		"tcp MB/s",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, row := range lines[len(lines)-8:] {
		f := strings.Fields(row)
		if len(f) != 7 || f[4] == "0.0" || f[5] == "0" || f[6] == "0.0" {
			t.Errorf("summary row %q: want op, size (2 fields), qd and nonzero MB/s, IOPS and client CPU µs per call", row)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 0 {
		t.Errorf("bench left %v (%v) in go-nfs's directory", ents, err)
	}
}

// nfsrdma put, ls and get work against willscott/go-nfs too (no MOUNT EXPORT: the
// path is mounted with MNT as it is), put through its temporary file and RENAME.
func TestNfsrdmaFilesGoNFS(t *testing.T) {
	bin := buildNfsrdma(t)
	defer syscall.Umask(syscall.Umask(0o022))
	dir := t.TempDir()
	p := startGoNFS(t, dir)
	_, port, _ := net.SplitHostPort(p.tcp)
	local := t.TempDir()
	src := filepath.Join(local, "f")
	if err := os.WriteFile(src, []byte("to go-nfs and back"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o644)
	nfsrdma := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		all := append([]string{args[0], "-proto", "tcp", "-tcp-port", port, "-mountport", port}, args[1:]...)
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, all...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("nfsrdma %q against go-nfs: %v\nstdout:\n%s\nstderr:\n%s", all, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	nfsrdma("put", src, "127.0.0.1:/")
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); string(got) != "to go-nfs and back" {
		t.Errorf("go-nfs's f holds %q after put", got)
	}
	if out := nfsrdma("ls", "127.0.0.1:/"); !strings.Contains(out, " f\n") || !strings.Contains(out, "1 entries") {
		t.Errorf("ls printed %q", out)
	}
	if out := nfsrdma("get", "127.0.0.1:/f", "-"); out != "to go-nfs and back" {
		t.Errorf("get printed %q", out)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("go-nfs's directory holds %v, want only f", ents)
	}
}
