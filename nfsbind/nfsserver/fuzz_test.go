//go:build linux

package nfsserver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

var fuzzKey = bytes.Repeat([]byte{7}, KeySize)

func handleSeeds() map[string][]byte {
	c := newHandleCodec(fuzzKey, 99)
	valid := c.encode(nil, handleID{key: fileKey{dev: 2049, ino: 1234}, gen: 42})
	badMAC := bytes.Clone(valid)
	badMAC[40] ^= 0x80
	badVersion := bytes.Clone(valid)
	badVersion[0] = 2
	reserved := bytes.Clone(valid)
	reserved[2] = 1
	other := newHandleCodec(fuzzKey, 100).encode(nil, handleID{key: fileKey{dev: 2049, ino: 1234}, gen: 42})
	otherKey := newHandleCodec(bytes.Repeat([]byte{8}, KeySize), 99).encode(nil, handleID{key: fileKey{dev: 2049, ino: 1234}, gen: 42})
	return map[string][]byte{
		"valid":            valid,
		"bad-mac":          badMAC,
		"bad-version":      badVersion,
		"reserved-nonzero": reserved,
		"other-export":     other,
		"other-key":        otherKey,
		"short":            valid[:HandleSize-1],
		"long":             append(bytes.Clone(valid), 0),
		"empty":            {},
	}
}

// FuzzHandle decodes arbitrary file handles: never a panic; a handle is accepted only
// if it is exactly what this codec would issue for the identity it names; it is
// NFS3ERR_BADHANDLE exactly when malformed (length, version or reserved bytes), and
// any other refusal is NFS3ERR_STALE.
func FuzzHandle(f *testing.F) {
	for _, s := range handleSeeds() {
		f.Add(s)
	}
	c := newHandleCodec(fuzzKey, 99)
	f.Fuzz(func(t *testing.T, fh []byte) {
		id, st := c.decode(nfs3.FH(fh))
		malformed := len(fh) != HandleSize || fh[0] != handleVersion || fh[1]|fh[2]|fh[3] != 0
		switch st {
		case nfs3.StatusOK:
			if !bytes.Equal(c.encode(nil, id), fh) {
				t.Fatalf("accepted handle %x does not re-encode", fh)
			}
		case nfs3.StatusBadHandle:
			if !malformed {
				t.Fatalf("well-formed handle %x is NFS3ERR_BADHANDLE", fh)
			}
		case nfs3.StatusStale:
			if malformed {
				t.Fatalf("malformed handle %x is NFS3ERR_STALE", fh)
			}
		default:
			t.Fatalf("decode status %v", st)
		}
		if malformed && st != nfs3.StatusBadHandle {
			t.Fatalf("malformed handle %x: %v", fh, st)
		}
	})
}

func mountPathSeeds() []string {
	return []string{"/export", "/export/", "/export/a/b", "/export/../etc", "/export/./a", "/export//a",
		"/exportx", "/", "", "/export/a\x00b", "/export/" + strings.Repeat("n", 256)}
}

// FuzzMountPath checks that no MOUNT dirpath maps outside the export, cleaned by
// cleanMountPath (as MNT does) or not: an accepted path is relative, with no empty,
// "." or ".." component; a cleaned path has no repeated or trailing slash and cleans
// to itself.
func FuzzMountPath(f *testing.F) {
	for _, s := range mountPathSeeds() {
		f.Add(s)
	}
	s := &Server{exportPath: "/export"}
	root := &Server{exportPath: "/"}
	f.Fuzz(func(t *testing.T, p string) {
		c := cleanMountPath(p)
		if strings.Contains(c, "//") || len(c) > 1 && strings.HasSuffix(c, "/") || cleanMountPath(c) != c {
			t.Fatalf("%q cleans to %q", p, c)
		}
		for _, in := range []string{p, c} {
			for _, srv := range []*Server{s, root} {
				rel, st := srv.mountPath(in)
				if st != nfs3.MountOK || rel == "" {
					continue
				}
				if strings.HasPrefix(rel, "/") {
					t.Fatalf("%q -> absolute %q", in, rel)
				}
				for _, c := range strings.Split(rel, "/") {
					if c == "" || c == "." || c == ".." || strings.IndexByte(c, 0) >= 0 {
						t.Fatalf("%q -> %q has component %q", in, rel, c)
					}
				}
			}
		}
	})
}

func TestHandleSeeds(t *testing.T) {
	c := newHandleCodec(fuzzKey, 99)
	want := map[string]nfs3.Status{"valid": nfs3.StatusOK, "other-export": nfs3.StatusStale,
		"bad-mac": nfs3.StatusStale, "other-key": nfs3.StatusStale}
	for name, fh := range handleSeeds() {
		w, ok := want[name]
		if !ok {
			w = nfs3.StatusBadHandle
		}
		if _, st := c.decode(fh); st != w {
			t.Errorf("%s: %v, want %v", name, st, w)
		}
	}
}

// TestWriteCorpus regenerates the committed seed corpora when NFSSERVER_WRITE_CORPUS=1.
func TestWriteCorpus(t *testing.T) {
	if os.Getenv("NFSSERVER_WRITE_CORPUS") != "1" {
		t.Skip("set NFSSERVER_WRITE_CORPUS=1 to regenerate testdata/fuzz")
	}
	write := func(target, name, body string) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, fh := range handleSeeds() {
		write("FuzzHandle", name, fmt.Sprintf("[]byte(%q)", fh))
	}
	for i, p := range mountPathSeeds() {
		write("FuzzMountPath", fmt.Sprintf("seed-%02d", i), fmt.Sprintf("string(%q)", p))
	}
}

func TestDirCacheOnlySettledListings(t *testing.T) {
	var c dirCache
	k := fileKey{1, 2}
	old := &dirListing{mtime: unixTS(1000), ctime: unixTS(1000)}
	c.put(k, old)
	st := statWithTimes(1000, 1000)
	if c.get(k, &st) != old {
		t.Fatal("settled listing not cached")
	}
	st2 := statWithTimes(1000, 1001)
	if c.get(k, &st2) != nil {
		t.Fatal("listing served after the directory's ctime changed")
	}
	fresh := &dirListing{mtime: unixTSNow(), ctime: unixTSNow()}
	c.put(fileKey{3, 4}, fresh)
	stf := statWithTimes(fresh.mtime.Sec, fresh.ctime.Sec)
	if c.get(fileKey{3, 4}, &stf) != nil {
		t.Fatal("listing of a directory changed just now was cached")
	}
}
