//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

func TestShownName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"with spaces", "with spaces"},
		{"ünïcödé", "ünïcödé"},
		{"nl\nname", `"nl\nname"`},
		{"tab\there", `"tab\there"`},
		{"\x1b[2Jclear", `"\x1b[2Jclear"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"nbsp\u00a0x", `"nbsp\u00a0x"`}, // not a space: would pass for one
		{"rtl\u202eevil", `"rtl\u202eevil"`},
	} {
		if got := shownName(c.in); got != c.want {
			t.Errorf("shownName(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// A listing shows names and link targets with control characters quoted: a server
// cannot split the listing's lines or write escape sequences to the terminal.
func TestLsQuotesControlCharacters(t *testing.T) {
	s := startServer(t)
	for _, name := range []string{"nl\nname", "\x1b[2Jclear", "plain"} {
		if err := os.WriteFile(filepath.Join(s.export, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("target\x07bell", filepath.Join(s.export, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.export, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := s.mustCLI(t, "ls", "127.0.0.1:/export")
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("listing has raw control characters:\n%q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 6 { // five entries and the summary
		t.Errorf("listing has %d lines, want 6:\n%s", len(lines), out)
	}
	for _, want := range []string{` "nl\nname"` + "\n", ` "\x1b[2Jclear"` + "\n", " plain\n", ` link -> "target\abell"` + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
	if _, err := s.cli(t, "get", "127.0.0.1:/export/fifo", "-"); err == nil || !strings.Contains(err.Error(), "a named pipe (NF3FIFO), not a regular file") {
		t.Errorf("get of a FIFO: %v", err)
	}
}

func TestTypeName(t *testing.T) {
	for ty := nfs3.FileType(0); ty <= nfs3.TypeFifo+1; ty++ {
		n := typeName(ty)
		if !strings.HasPrefix(n, "a ") || (ty.Valid() && strings.Contains(n, "type")) {
			t.Errorf("typeName(%v) = %q", ty, n)
		}
	}
}
