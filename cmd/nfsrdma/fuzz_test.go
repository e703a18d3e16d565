//go:build linux

package main

import (
	"path"
	"strings"
	"testing"
)

// FuzzParseRemote checks that parseRemote never panics and that what it accepts is a
// non-empty host and a clean absolute path that print and parse back unchanged.
func FuzzParseRemote(f *testing.F) {
	for _, s := range []string{"server:/export", "[2001:db8::1]:/x", "h:/a/../b//c/", "nocolon", ":/x", "h:relative", "[::1/x", "[::1]x", "h:/a\x00b", "[]:/x", "[[x]:/p", "a b:/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRemote(s)
		if err != nil {
			return
		}
		if r.host == "" || !strings.HasPrefix(r.path, "/") || path.Clean(r.path) != r.path || strings.IndexByte(r.path, 0) >= 0 {
			t.Fatalf("parseRemote(%q) accepted %+v", s, r)
		}
		if strings.ContainsAny(r.host, "[]/ \t\n\x00") {
			t.Fatalf("parseRemote(%q) accepted the host %q", s, r.host)
		}
		back, err := parseRemote(r.String())
		if err != nil || back != r {
			t.Fatalf("parseRemote(%q) = %+v, but its String %q parses to %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// FuzzParseSize checks that parseSize never panics and accepts only positive sizes up
// to 1 TiB.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4096", "4k", "4KiB", "1MiB", "2 m", "0", "-1", "1x", "99999999999999999999", "1048577gib", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err == nil && (n <= 0 || n > 1<<40) {
			t.Fatalf("parseSize(%q) = %d", s, n)
		}
	})
}
