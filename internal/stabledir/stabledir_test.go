package stabledir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// MkdirAll syncs the parent of each directory it makes, and nothing for one that
// exists; a failed sync is its error.
func TestMkdirAllSyncsParents(t *testing.T) {
	base := t.TempDir()
	var synced []string
	sync := func(d string) error { synced = append(synced, d); return nil }
	dir := filepath.Join(base, "a", "b")
	if err := MkdirAll(dir, 0o700, sync); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %v, %v", fi, err)
	}
	if want := []string{base, filepath.Join(base, "a")}; !slices.Equal(synced, want) {
		t.Fatalf("synced %q, want %q", synced, want)
	}
	synced = nil
	if err := MkdirAll(dir, 0o700, sync); err != nil || synced != nil {
		t.Fatalf("existing directory: %v, synced %q", err, synced)
	}
	if err := os.WriteFile(filepath.Join(base, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(base, "f"), 0o700, sync); err == nil {
		t.Fatal("a file taken for a directory")
	}
	fail := func(string) error { return errors.New("injected EIO") }
	if err := MkdirAll(filepath.Join(base, "c"), 0o700, fail); err == nil || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("failed sync: %v", err)
	}
}
