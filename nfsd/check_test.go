//go:build linux

package nfsd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckExports(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(content string) string {
		p := filepath.Join(t.TempDir(), "exports")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines, err := CheckExports(Config{ExportsFile: write(a + " 10.0.0.0/8(rw) *(ro)\n" + b + " -fsid=7 host.example(rw,no_root_squash)\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], a+" as "+a+" to 10.0.0.0/8(rw,") || !strings.Contains(lines[1], "host.example(rw,no_root_squash,") {
		t.Errorf("lines %q", lines)
	}
	if lines, err := CheckExports(Config{Export: a, ExportPath: "/data"}); err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], a+" as /data to *(rw,") {
		t.Errorf("-export: %q, %v", lines, err)
	}

	for _, c := range []struct{ name, file, want string }{
		{"syntax", a + " *(rw,nonsense)\n", `unknown option "nonsense"`},
		{"missing directory", a + " *(rw)\n" + filepath.Join(b, "absent") + " *(ro)\n", "line 2: export " + filepath.Join(b, "absent") + " cannot be served"},
		{"a file, not a directory", write("") + " *(ro)\n", "not a directory"},
		{"one fsid twice", a + " *(rw,fsid=3)\n" + b + " *(rw,fsid=3)\n", "the same fsid 3"},
	} {
		if _, err := CheckExports(Config{ExportsFile: write(c.file)}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := CheckExports(Config{}); err == nil {
		t.Error("no exports at all: no error")
	}
}
