//go:build linux

package main

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

func TestHumanBytes(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "0"}, {1023, "1023"}, {1024, "1.0K"}, {1025, "1.1K"}, {10*1024 - 1, "10K"},
		{1536 << 10, "1.5M"}, {(1 << 30) - 1, "1.0G"}, {252 << 30, "252G"}, {1<<40 + 1, "1.1T"},
	} {
		if got := humanBytes(c.n); got != c.want {
			t.Errorf("humanBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := percentUp(1, 3); got != "34%" {
		t.Errorf("percentUp(1, 3) = %q", got)
	}
	if got := percentUp(0, 0); got != "-" {
		t.Errorf("percentUp(0, 0) = %q", got)
	}
}

// df shows the export's file system as df does, over both transports.
func TestDf(t *testing.T) {
	s := startServer(t)
	var fs unix.Statfs_t
	if err := unix.Statfs(s.export, &fs); err != nil {
		t.Fatal(err)
	}
	bs := uint64(fs.Bsize)
	want := dfTable("127.0.0.1:/export", &nfs3.FsstatRes{Tbytes: fs.Blocks * bs, Fbytes: fs.Bfree * bs, Abytes: fs.Bavail * bs, Tfiles: fs.Files, Ffiles: fs.Ffree, Afiles: fs.Ffree})
	wantSize := strings.Fields(strings.Split(want, "\n")[1])[1]
	for _, proto := range []string{"rdma", "tcp"} {
		out := s.mustCLI(t, "df", "-proto", proto, "127.0.0.1:/export/")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "Export ") {
			t.Fatalf("over %s: %q", proto, out)
		}
		f := strings.Fields(lines[1])
		if len(f) != 9 || f[0] != "127.0.0.1:/export" || f[1] != wantSize || f[5] != strings.Fields(strings.Split(want, "\n")[1])[5] {
			t.Errorf("over %s: %q, want about %q", proto, lines[1], strings.Split(want, "\n")[1])
		}
	}
}
