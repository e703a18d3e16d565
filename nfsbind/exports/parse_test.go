package exports

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseGolden parses every testdata/golden/*.exports and compares the
// canonical rendering with the .golden file beside it.
func TestParseGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.exports")
	if len(files) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tab, err := ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".exports") + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			if got := tab.String(); got != string(want) {
				t.Errorf("rendering differs\ngot:\n%s\nwant:\n%s", got, want)
			}
			again, err := Parse("again", []byte(tab.String()))
			if err != nil {
				t.Fatalf("the rendering does not parse: %v", err)
			}
			if again.String() != tab.String() {
				t.Errorf("rendering is not stable:\n%s\n%s", again, tab)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	tab, err := Parse("x", []byte("/a 10.1.0.0/16(rw) b.example.com *.c.example.com * fe80::1\n/b -fsid=root\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := tab.Exports[0]
	kinds := []Kind{Network, Host, Wildcard, Anyone, Host}
	for i, k := range kinds {
		if e.Clients[i].Kind != k {
			t.Errorf("client %d %s: kind %d, want %d", i, e.Clients[i].Spec, e.Clients[i].Kind, k)
		}
	}
	if e.Line != 1 || e.File != "x" || e.HasFSID {
		t.Errorf("export 0: line %d file %q fsid %v", e.Line, e.File, e.HasFSID)
	}
	if g := strings.Join(e.Groups(), " "); g != "10.1.0.0/16 b.example.com *.c.example.com * fe80::1" {
		t.Errorf("groups %q", g)
	}
	b := tab.Exports[1]
	if !b.HasFSID || b.FSID != 0 || b.Line != 2 || len(b.Clients) != 1 || b.Clients[0].Kind != Anyone {
		t.Errorf("export 1: %+v", b)
	}
	if !b.Clients[0].Options.ReadOnly || b.Clients[0].Options.NoRootSquash || b.Clients[0].Options.AllSquash || b.Clients[0].Options.Insecure {
		t.Errorf("defaults: %+v", b.Clients[0].Options)
	}
}

// TestParseNoHide: nohide sets Options.NoHide for its client entry, hide (the default)
// clears it, the last one given wins, and the rendering names nohide and parses back.
func TestParseNoHide(t *testing.T) {
	tab, err := Parse("x", []byte("/a h1(rw,nohide) h2(nohide,hide) h3(rw)\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, false} {
		if c := tab.Exports[0].Clients[i]; c.Options.NoHide != want {
			t.Errorf("client %s: NoHide %v, want %v", c.Spec, c.Options.NoHide, want)
		}
	}
	r := tab.String()
	if !strings.Contains(r, "h1(rw,root_squash,no_all_squash,anonuid=65534,anongid=65534,sync,nocrossmnt,secure,nohide)") {
		t.Errorf("rendering %q", r)
	}
	again, err := Parse("again", []byte(r))
	if err != nil || !again.Exports[0].Clients[0].Options.NoHide || again.Exports[0].Clients[1].Options.NoHide {
		t.Errorf("the rendering parses back as %v, %v", again, err)
	}
}

// TestParseAllSquashBeatsNoRootSquash: root_squash and all_squash are two
// independent settings, as in nfs-utils (NFSEXP_ROOTSQUASH and NFSEXP_ALLSQUASH,
// support/nfs/exports.c), and knfsd squashes every caller whenever all_squash is set;
// so no_root_squash, before or after all_squash, from the line's defaults or the
// client's own list, leaves everyone squashed.
func TestParseAllSquashBeatsNoRootSquash(t *testing.T) {
	for _, tc := range []struct {
		line         string
		noRootSquash bool
	}{
		{"/a *(rw,all_squash,no_root_squash)\n", true},
		{"/a *(rw,no_root_squash,all_squash)\n", true},
		{"/a -all_squash *(rw,no_root_squash)\n", true},
		{"/a -no_root_squash *(rw,all_squash)\n", true},
		{"/a *(rw,all_squash,root_squash)\n", false},
	} {
		tab := mustParse(t, tc.line)
		o := tab.Exports[0].Clients[0].Options
		if !o.AllSquash || o.NoRootSquash != tc.noRootSquash {
			t.Errorf("%q: all_squash %v no_root_squash %v, want all_squash true no_root_squash %v (knfsd squashes every caller)",
				tc.line, o.AllSquash, o.NoRootSquash, tc.noRootSquash)
		}
		if s := o.String(); !strings.Contains(s, ",all_squash,") {
			t.Errorf("%q renders as %q, without all_squash", tc.line, s)
		}
	}
}

// TestParseNoAllSquashKeepsNoRootSquash: no_all_squash clears all_squash only, so
// "no_root_squash,all_squash,no_all_squash" ends as no_root_squash, as knfsd reads it.
func TestParseNoAllSquashKeepsNoRootSquash(t *testing.T) {
	tab := mustParse(t, "/a *(no_root_squash,all_squash,no_all_squash)\n")
	if o := tab.Exports[0].Clients[0].Options; o.AllSquash || !o.NoRootSquash {
		t.Errorf("all_squash %v no_root_squash %v, want no_root_squash alone", o.AllSquash, o.NoRootSquash)
	}
}

// TestParseErrors checks that each bad table is refused with the position and a
// message naming what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in        string
		line, col int
		msg       string
	}{
		{"/a *(rw,bogus)\n", 1, 9, `unknown option "bogus"`},
		{"# c\n\n/a  *(rw)\n/b h(rw,nope=1)\n", 4, 9, `unknown option "nope"`},
		{"relative *(rw)\n", 1, 1, "not absolute"},
		{"/a (rw)\n", 1, 4, "options with no client"},
		{"/a *(rw\n", 1, 8, "missing )"},
		{"/a *(rw,anonuid=x)\n", 1, 9, "anonuid"},
		{"/a *(anonuid)\n", 1, 6, "needs a value"},
		{"/a *(rw=1)\n", 1, 6, "takes no value"},
		{"/a *(fsid=abc)\n", 1, 6, "fsid"},
		{"/a *(fsid=1) h(fsid=2)\n", 1, 16, "fsid=2 differs from fsid=1"},
		{"/a *(sec=krb5)\n", 1, 6, "sec=sys"},
		{"/a *(nohide=1)\n", 1, 6, "takes no value"},
		{"/a *(crossmnt=1)\n", 1, 6, "takes no value"},
		{"/a *(rw,)\n", 1, 9, "empty option"},
		{"/a @group(rw)\n", 1, 4, "netgroups"},
		{"/a 10.0.0.0/33\n", 1, 4, "network"},
		{"/a 10.0.0.0/255.0.255.0\n", 1, 4, "not contiguous"},
		{"/a ho$t\n", 1, 4, "not a host name"},
		{"\"/a b *(rw)\n", 1, 12, "unterminated double quote"},
		{"/a\\x *(rw)\n", 1, 3, "octal escape"},
		{"/a\\000\n", 1, 3, "not a byte"},
		{"/a *(rw)x\n", 1, 9, "unexpected text after the options of client *"},
		{"/a h)\n", 1, 5, "unexpected )"},
		{"/a \\\n  h\"x\"\n", 2, 4, "quotes and escapes"},
		{"/a *(r w)\n", 1, 7, "missing )"},
		{"/a\x00 *\n", 1, 3, "NUL"},
	} {
		_, err := Parse("exports", []byte(tc.in))
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want *Error", tc.in, err)
			continue
		}
		if pe.File != "exports" || pe.Line != tc.line || pe.Col != tc.col || !strings.Contains(pe.Msg, tc.msg) {
			t.Errorf("%q: got %v, want exports:%d:%d: ...%s...", tc.in, err, tc.line, tc.col, tc.msg)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	if _, err := ParseFile(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFile(big); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("big file: %v", err)
	}
}

func TestContinuationCRLF(t *testing.T) {
	tab, err := Parse("x", []byte("/a 127.0.0.1(rw) \\\r\n  ::1(ro)\r\n/b\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Exports) != 2 || len(tab.Exports[0].Clients) != 2 || tab.Exports[0].Clients[1].Spec != "::1" {
		t.Fatalf("got %s", tab)
	}
}

// TestParseAnonIDNotMinusOne: anonuid=4294967295 and anongid=4294967295 are
// (uid_t)-1 and (gid_t)-1, which are no identity: the kernel's nfsd refuses an export
// whose anonymous uid or gid is not valid (uid_valid, gid_valid in
// svc_export_parse), and chown(2) reads -1 as "leave unchanged", so a file created by
// a squashed caller would keep the server's own owner (root). Every other 32-bit value
// is accepted.
func TestParseAnonIDNotMinusOne(t *testing.T) {
	for _, in := range []string{"/a *(anonuid=4294967295)\n", "/a *(anongid=4294967295)\n", "/a -anonuid=4294967295 *(rw)\n"} {
		_, err := Parse("exports", []byte(in))
		var pe *Error
		if !errors.As(err, &pe) || pe.Line != 1 || !strings.Contains(pe.Msg, "4294967295") || !strings.Contains(pe.Msg, "anon") {
			t.Errorf("%q: got %v, want an *Error on line 1 naming the anonymous id 4294967295", in, err)
		}
	}
	o := mustParse(t, "/a *(anonuid=4294967294,anongid=0)\n").Exports[0].Clients[0].Options
	if o.AnonUID != 4294967294 || o.AnonGID != 0 {
		t.Errorf("anonuid=4294967294,anongid=0 parse as %d, %d", o.AnonUID, o.AnonGID)
	}
}

// TestParsePathOnSeveralLines: as in nfs-utils, which keys its export table by
// path and client, one path may be listed on several lines, each with its own
// clients and "-" defaults; the lines make one export whose clients are in file
// order (so that within one kind the earlier line wins, as under mountd), whose fsid
// is the one any line gives, and which a different fsid on another line refuses.
func TestParsePathOnSeveralLines(t *testing.T) {
	tab := mustParse(t, "/a 10.0.0.0/8(rw)\n/b *\n/a/ -no_root_squash 192.168.0.0/16 10.1.0.0/16(ro,fsid=7)\n")
	if len(tab.Exports) != 2 {
		t.Fatalf("%d exports, want 2:\n%s", len(tab.Exports), tab)
	}
	e := tab.Exports[0]
	if e.Path != "/a" || e.Line != 1 || !e.HasFSID || e.FSID != 7 {
		t.Errorf("export %s: line %d fsid %v %d, want /a from line 1 with fsid 7", e.Path, e.Line, e.HasFSID, e.FSID)
	}
	if g := strings.Join(e.Groups(), " "); g != "10.0.0.0/8 192.168.0.0/16 10.1.0.0/16" {
		t.Errorf("clients %q", g)
	}
	if o := e.Clients[0].Options; o.ReadOnly || o.NoRootSquash {
		t.Errorf("line 1's client took line 3's defaults: %+v", o)
	}
	if o := e.Clients[1].Options; !o.ReadOnly || !o.NoRootSquash {
		t.Errorf("line 3's client lost its line's defaults: %+v", o)
	}
	// Within one kind the earlier line wins: 10.1.2.3 is in both networks.
	if c := e.Match(context.Background(), netip.MustParseAddr("10.1.2.3"), nil); c == nil || c.Spec != "10.0.0.0/8" {
		t.Errorf("10.1.2.3 matches %v, want 10.0.0.0/8 (the earlier line)", c)
	}
	again, err := Parse("again", []byte(tab.String()))
	if err != nil || again.String() != tab.String() {
		t.Errorf("the rendering does not parse back the same: %v\n%s", err, tab)
	}

	_, err = Parse("exports", []byte("/a h(fsid=1)\n/a g(fsid=2)\n"))
	var pe *Error
	if !errors.As(err, &pe) || pe.Line != 2 || !strings.Contains(pe.Msg, "fsid=2 differs from fsid=1") || !strings.Contains(pe.Msg, "line 1") {
		t.Errorf("different fsids on two lines of /a: %v", err)
	}
}

// TestParseFSIDBases: fsid=N is read as exportfs reads it (strtoul with base 0): 0x
// hexadecimal, a leading 0 octal, decimal otherwise; so the same table gives the same
// file system id under both, rather than 010 being 8 there and 10 here.
func TestParseFSIDBases(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want uint32
	}{{"10", 10}, {"010", 8}, {"0x10", 16}, {"0X1f", 31}, {"0", 0}, {"4294967295", 1<<32 - 1}, {"0xffffffff", 1<<32 - 1}} {
		tab := mustParse(t, "/a *(fsid="+tc.val+")\n")
		if e := tab.Exports[0]; !e.HasFSID || e.FSID != tc.want {
			t.Errorf("fsid=%s: %v %d, want %d", tc.val, e.HasFSID, e.FSID, tc.want)
		}
	}
	for _, val := range []string{"08", "0x", "0x1g", "-1", "+1", "1_0", "4294967296", "0x100000000"} {
		if _, err := Parse("x", []byte("/a *(fsid="+val+")\n")); err == nil || !strings.Contains(err.Error(), "fsid") {
			t.Errorf("fsid=%s: %v, want an error naming fsid", val, err)
		}
	}
}
