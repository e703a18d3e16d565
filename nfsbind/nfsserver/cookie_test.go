//go:build linux

package nfsserver

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// sipHash24Vectors are the test vectors of the SipHash authors' reference
// implementation (siphash24.c, vectors.h) for SipHash-2-4 with 64-bit output: the
// key 00 01 02 ... 0f and the messages "", 00, 00 01, ..., 00 01 ... 3e. The one for
// the 15-byte message, a129ca6149be45e5, is the example of appendix A of the paper
// ("SipHash: a fast short-input PRF").
var sipHash24Vectors = [64]uint64{
	0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d,
	0xcf2794e0277187b7, 0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137,
	0x93f5f5799a932462, 0x9e0082df0ba9e4b0, 0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7,
	0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee, 0xa129ca6149be45e5,
	0x3f2acc7f57c29bdb, 0x699ae9f52cbe4794, 0x4bc1b3f0968dd39c, 0xbb6dc91da77961bd,
	0xbed65cf21aa2ee98, 0xd0f2cbb02e3b67c7, 0x93536795e3a33e88, 0xa80c038ccd5ccec8,
	0xb8ad50c6f649af94, 0xbce192de8a85b8ea, 0x17d835b85bbb15f3, 0x2f2e6163076bcfad,
	0xde4daaaca71dc9a5, 0xa6a2506687956571, 0xad87a3535c49ef28, 0x32d892fad841c342,
	0x7127512f72f27cce, 0xa7f32346f95978e3, 0x12e0b01abb051238, 0x15e034d40fa197ae,
	0x314dffbe0815a3b4, 0x027990f029623981, 0xcadcd4e59ef40c4d, 0x9abfd8766a33735c,
	0x0e3ea96b5304a7d0, 0xad0c42d6fc585992, 0x187306c89bc215a9, 0xd4a60abcf3792b95,
	0xf935451de4f21df2, 0xa9538f0419755787, 0xdb9acddff56ca510, 0xd06c98cd5c0975eb,
	0xe612a3cb9ecba951, 0xc766e62cfcadaf96, 0xee64435a9752fe72, 0xa192d576b245165a,
	0x0a8787bf8ecb74b2, 0x81b3e73d20b49b6f, 0x7fa8220ba3b2ecea, 0x245731c13ca42499,
	0xb78dbfaf3a8d83bd, 0xea1ad565322a1a0b, 0x60e61c23a3795013, 0x6606d7e446282b93,
	0x6ca4ecb15c5f91e1, 0x9f626da15c9625f3, 0xe51b38608ef25f57, 0x958a324ceb064572,
}

func TestSipHash24Vectors(t *testing.T) {
	const k0, k1 = 0x0706050403020100, 0x0f0e0d0c0b0a0908 // 00 01 ... 0f, little-endian
	var msg [64]byte
	for i := range msg {
		msg[i] = byte(i)
	}
	for n, want := range sipHash24Vectors {
		if got := sipHash24(k0, k1, string(msg[:n])); got != want {
			t.Errorf("SipHash-2-4 of %d bytes: %#016x, want %#016x", n, got, want)
		}
	}
	var sink uint64
	if n := testing.AllocsPerRun(100, func() { sink += sipHash24(k0, k1, "a name of a file.txt") }); n != 0 {
		t.Errorf("sipHash24 allocates %v times", n)
	}
}

// TestCookieOfHash: no hash value gives a cookie NFSv3 or NFSv4 reserves (0, 1, 2),
// and the mapping keeps the order of hash values (it may only merge, never swap).
func TestCookieOfHash(t *testing.T) {
	for _, h := range []uint64{0, 1, 2, 3} {
		if c := cookieOfHash(h); c != 3 {
			t.Errorf("cookieOfHash(%d) = %d, want 3", h, c)
		}
	}
	for _, h := range []uint64{4, 1 << 32, 1<<64 - 1} {
		if c := cookieOfHash(h); c != h {
			t.Errorf("cookieOfHash(%#x) = %#x", h, c)
		}
	}
	k := newCookieKey(fuzzKey)
	for _, name := range []string{"", ".", "..", "a", "file"} {
		if c := k.cookie(name); c < 3 {
			t.Errorf("cookie of %q is %d", name, c)
		}
	}
	if c := pseudoCookie(""); c < 3 {
		t.Errorf("pseudo cookie %d", c)
	}
}

// TestDirentOrder: equal cookies (a chance collision) are listed in name order, so
// the listing is the same every time.
func TestDirentOrder(t *testing.T) {
	ents := []dirent{{7, "b", 0}, {5, "z", 0}, {7, "a", 0}, {9, "a", 0}, {7, "c", 0}}
	slices.SortFunc(ents, compareDirents)
	want := []dirent{{5, "z", 0}, {7, "a", 0}, {7, "b", 0}, {7, "c", 0}, {9, "a", 0}}
	if !slices.Equal(ents, want) {
		t.Fatalf("listing order %v, want %v", ents, want)
	}
}

// TestCookieKeyDerivation: the cookie key comes from the handle key, through a label
// (so it is neither the handle key nor something an attacker can compute from
// handles), and is the same for the same handle key.
func TestCookieKeyDerivation(t *testing.T) {
	a, b := newCookieKey(fuzzKey), newCookieKey(fuzzKey)
	if a != b {
		t.Fatal("one handle key, two cookie keys")
	}
	other := bytes.Clone(fuzzKey)
	other[0] ^= 1
	if newCookieKey(other) == a {
		t.Fatal("two handle keys, one cookie key")
	}
	var raw cookieKey
	for i := range 8 {
		raw.k0 |= uint64(fuzzKey[i]) << (8 * i)
		raw.k1 |= uint64(fuzzKey[8+i]) << (8 * i)
	}
	if a == raw {
		t.Fatal("the cookie key is the handle key")
	}
}

// readdirCookies lists dir with READDIR and returns each name's cookie.
func (c *client) readdirCookies(dir nfs3.FH) map[string]uint64 {
	c.t.Helper()
	cookies := map[string]uint64{}
	var cookie uint64
	for {
		var r nfs3.ReaddirRes
		c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: dir, Cookie: cookie, Count: 4096}, &r)
		wantStatus(c.t, "READDIR", r.Status, nfs3.StatusOK)
		for _, en := range r.Entries {
			cookies[string(en.Name)] = en.Cookie
			cookie = en.Cookie
		}
		if r.EOF {
			return cookies
		}
	}
}

// TestReaddirCookiesKeyed: cookies are a keyed hash of the names. Servers with
// different handle keys give the same names different cookies (so no one can tell
// which names collide without the key), and a server restarted with its StateDir
// gives the same cookies as before, so a client's listing resumes where it was.
func TestReaddirCookiesKeyed(t *testing.T) {
	e := newEnv(t, Options{})
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(e.dir, fmt.Sprintf("f%02d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := e.c.readdirCookies(e.root)
	if len(before) != 22 {
		t.Fatalf("%d entries", len(before))
	}

	e.stop()
	e.start(Options{Root: e.dir, StateDir: e.state})
	if same := e.dial(rootCred()).readdirCookies(e.root); !maps.Equal(same, before) {
		t.Fatalf("cookies changed across a restart with the same StateDir:\n%v\n%v", before, same)
	}

	// Another handle key (here a new StateDir; the old handles are stale): every
	// name has another cookie.
	e.stop()
	e.start(Options{Root: e.dir, StateDir: t.TempDir()})
	c := e.dial(rootCred())
	other := c.readdirCookies(c.mount(e.srv.ExportPath()))
	if len(other) != len(before) {
		t.Fatalf("%d entries under another key, %d before", len(other), len(before))
	}
	for name, cookie := range before {
		if other[name] == cookie {
			t.Errorf("%q has cookie %#x under both keys", name, cookie)
		}
	}
}

// TestReaddirOneEntryPerReply lists a directory with the smallest replies that hold
// an entry, so that every entry is resumed after, in NFSv3 READDIR and READDIRPLUS
// and NFSv4.1 READDIR: each entry comes exactly once, in cookie order, and no cookie
// is reserved (the checks of readdirAll, readdirplusAll and the v4 readdirAll).
func TestReaddirOneEntryPerReply(t *testing.T) {
	e := newEnv(t, Options{})
	dir := e.c.mkdir(e.root, "d")
	const n = 150
	for i := range n {
		if err := os.WriteFile(filepath.Join(e.dir, "d", fmt.Sprintf("f%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, names []string, dots bool) {
		t.Helper()
		want := n
		if dots {
			want += 2
		}
		if len(names) != want {
			t.Fatalf("%s: %d names, want %d", what, len(names), want)
		}
		for i := range n {
			if !slices.Contains(names, fmt.Sprintf("f%03d", i)) {
				t.Fatalf("%s: f%03d missing", what, i)
			}
		}
	}
	// Every name, "." and ".." included, is 4 bytes on the wire or less.
	one := uint32(nfs3.ReaddirResOverhead - 4 + nfs3.DirEntrySize(4))
	var r nfs3.ReaddirRes
	e.c.must(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: dir, Count: one}, &r)
	if wantStatus(t, "READDIR", r.Status, nfs3.StatusOK); len(r.Entries) != 1 || r.EOF {
		t.Fatalf("READDIR count %d: %d entries, eof %v", one, len(r.Entries), r.EOF)
	}
	check("READDIR", slices.Collect(maps.Keys(e.c.readdirAll(dir, one))), true)
	// dircount 1: one entry per reply (the first always fits).
	check("READDIRPLUS", slices.Collect(maps.Keys(e.c.readdirplusAll(dir, 1, 64<<10))), true)

	c4 := e.v4(rootCred())
	c4.mount()
	fh := c4.lookupFH(append(e.exportComponents(), "d")...)
	res := c4.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.ReaddirArgs{DirCount: 150, MaxCount: 150,
		AttrRequest: nfs4.NewBitmap(nfs4.AttrType, nfs4.AttrFileid, nfs4.AttrMountedOnFileid, nfs4.AttrFilehandle)})
	if r := res.Results[2].(*nfs4.ReaddirRes); len(r.Entries) != 1 || r.EOF {
		t.Fatalf("NFSv4.1 READDIR maxcount 150: %d entries, eof %v", len(r.Entries), r.EOF)
	}
	check("NFSv4.1 READDIR", c4.readdirAll(fh, 150), false)
}
