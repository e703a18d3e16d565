package nfs3

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Fuzz inputs start with one selector byte: 0..21 pick an NFSv3 procedure, 22..27 a
// MOUNT v3 procedure (selector-22); the rest is the XDR to decode.
const numSelectors = NumProcs + NumMountProcs

func selectMsg(sel byte, args bool) (string, func() Message) {
	s := int(sel) % numSelectors
	if s < NumProcs {
		p := Proc(s)
		if args {
			return p.String() + " args", func() Message { return NewArgs(p) }
		}
		return p.String() + " res", func() Message { return NewRes(p) }
	}
	p := MountProc(s - NumProcs)
	if args {
		return p.String() + " args", func() Message { return NewMountArgs(p) }
	}
	return p.String() + " res", func() Message { return NewMountRes(p) }
}

// checkDecode is the property both fuzz targets share: decoding never panics; a failure
// is a typed error (an *xdr.DecodeError, ErrBadEnum or ErrCountMismatch); a success
// re-encodes to exactly the bytes consumed, modulo XDR pad contents, and decodes again to
// an equal value.
func checkDecode(t *testing.T, data []byte, args bool) {
	if len(data) == 0 {
		return
	}
	name, fresh := selectMsg(data[0], args)
	in := data[1:]
	m := fresh()
	d := xdr.NewDecoder(in)
	err := m.DecodeXDR(d)
	if err != nil {
		var de *xdr.DecodeError
		if !errors.As(err, &de) && !errors.Is(err, ErrBadEnum) && !errors.Is(err, ErrCountMismatch) {
			t.Fatalf("%s: untyped error %v", name, err)
		}
		return
	}
	out := encode(m)
	if len(out) != d.Offset() {
		t.Fatalf("%s: consumed %d bytes, re-encoded %d", name, d.Offset(), len(out))
	}
	m2 := fresh()
	d2 := xdr.NewDecoder(out)
	if err := m2.DecodeXDR(d2); err != nil {
		t.Fatalf("%s: re-decode: %v", name, err)
	}
	if !reflect.DeepEqual(normalize(m), normalize(m2)) {
		t.Fatalf("%s: re-decoded value differs", name)
	}
	if !bytes.Equal(encode(m2), out) {
		t.Fatalf("%s: encoding not stable", name)
	}
}

// FuzzArgs decodes procedure arguments as a server does.
func FuzzArgs(f *testing.F) {
	for _, s := range argSeeds() {
		f.Add(s.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data, true) })
}

// FuzzRes decodes procedure results as a client does.
func FuzzRes(f *testing.F) {
	for _, s := range resSeeds() {
		f.Add(s.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data, false) })
}

type seed struct {
	name string
	data []byte
}

func withSel(sel int, b []byte) []byte { return append([]byte{byte(sel)}, b...) }

// argSeeds: one valid message per procedure, then one per validation rule.
func argSeeds() []seed {
	var s []seed
	args := sampleArgs()
	for p := Proc(0); p < NumProcs; p++ {
		s = append(s, seed{"valid-" + p.String(), withSel(int(p), encode(args[p]))})
	}
	for p, m := range sampleMountArgs() {
		s = append(s, seed{"valid-mount-" + p.String(), withSel(NumProcs+int(p), encode(m))})
	}
	long := func(n int) []byte { return bytes.Repeat([]byte{'a'}, n) }
	over := encode(&WriteArgs{File: testFH, Count: MaxData + 1})
	over = append(over[:len(over)-4], 0, 0x10, 0x10, 0x01)
	s = append(s,
		seed{"fh-too-long", withSel(int(ProcGetattr), encode(&FHArgs{Object: long(65)}))},
		seed{"name-too-long", withSel(int(ProcLookup), encode(&DirOpArgsMsg{What: DirOpArgs{Dir: testFH, Name: long(MaxComponent + 1)}}))},
		seed{"path-too-long", withSel(int(ProcSymlink), encode(&SymlinkArgs{Where: testWhere, Data: long(MaxSymlinkData + 1)}))},
		seed{"mount-path-too-long", withSel(NumProcs+int(MountProcMnt), encode(&DirPathArgs{Path: long(1025)}))},
		seed{"bad-stable", withSel(int(ProcWrite), encode(&WriteArgs{File: testFH, Stable: 3}))},
		seed{"write-count-mismatch", withSel(int(ProcWrite), encode(&WriteArgs{File: testFH, Count: 4, Data: []byte("abc")}))},
		seed{"write-over-maxdata", withSel(int(ProcWrite), over)},
		seed{"bad-create-mode", withSel(int(ProcCreate), encode(&CreateArgs{Where: testWhere, Mode: 3}))},
		seed{"bad-mknod-type", withSel(int(ProcMknod), encode(&MknodArgs{Where: testWhere, Type: 0}))},
		seed{"bad-time-how", withSel(int(ProcMkdir), append(encode(&DirOpArgsMsg{What: testWhere}), mustHex("00000000 00000000 00000000 00000000 00000003")...))},
		seed{"bad-bool", withSel(int(ProcSetattr), append(encode(&FHArgs{Object: testFH}), mustHex("00000002")...))},
		seed{"bad-guard", withSel(int(ProcSetattr), append(encode(&SetattrArgs{Object: testFH})[:len(encode(&SetattrArgs{Object: testFH}))-4], 0, 0, 0, 7))},
		seed{"truncated-read", withSel(int(ProcRead), encode(&ReadArgs{File: testFH})[:15])},
		seed{"opaque-beyond-buffer", withSel(int(ProcReaddir), mustHex("00000040 0000"))},
	)
	return s
}

func resSeeds() []seed {
	var s []seed
	res := sampleRes()
	for p := Proc(0); p < NumProcs; p++ {
		s = append(s, seed{"valid-" + p.String(), withSel(int(p), encode(res[p]))})
	}
	for p, m := range sampleMountRes() {
		s = append(s, seed{"valid-mount-" + p.String(), withSel(NumProcs+int(p), encode(m))})
	}
	long := func(n int) []byte { return bytes.Repeat([]byte{'b'}, n) }
	s = append(s,
		seed{"bad-ftype", withSel(int(ProcGetattr), append([]byte{0, 0, 0, 0, 0, 0, 0, 9}, make([]byte, 80)...))},
		seed{"short-fattr", withSel(int(ProcGetattr), make([]byte, 40))},
		seed{"read-count-mismatch", withSel(int(ProcRead), encode(&ReadRes{Count: 1, Data: []byte("ab")}))},
		seed{"bad-committed", withSel(int(ProcWrite), append(encode(&WriteRes{Count: 1})[:16], 0, 0, 0, 5))},
		seed{"readlink-path-too-long", withSel(int(ProcReadlink), encode(&ReadlinkRes{Data: long(MaxNFSPathLen + 1)}))},
		seed{"entry-name-too-long", withSel(int(ProcReaddir), encode(&ReaddirRes{Entries: []DirEntry{{Name: long(256)}}}))},
		seed{"entry-bad-bool", withSel(int(ProcReaddirplus), append(encode(&ReaddirplusRes{})[:16], 0, 0, 0, 3))},
		seed{"fh-too-long", withSel(int(ProcLookup), encode(&LookupRes{Object: long(65)}))},
		seed{"auth-flavors-too-many", withSel(NumProcs+int(MountProcMnt), mustHex("00000000 00000000 00001000"))},
		seed{"mountlist-truncated", withSel(NumProcs+int(MountProcDump), mustHex("00000001 00000003 6162"))},
		seed{"exports-bad-bool", withSel(NumProcs+int(MountProcExport), mustHex("00000001 00000000 00000009"))},
	)
	return s
}

// TestSeedsMatchRules makes sure every invalid seed is rejected (so each one exercises
// the rule it is named for) and every valid one decodes.
func TestSeedsMatchRules(t *testing.T) {
	for _, set := range []struct {
		args  bool
		seeds []seed
	}{{true, argSeeds()}, {false, resSeeds()}} {
		for _, s := range set.seeds {
			name, fresh := selectMsg(s.data[0], set.args)
			err := fresh().DecodeXDR(xdr.NewDecoder(s.data[1:]))
			valid := len(s.name) > 6 && s.name[:6] == "valid-"
			if valid != (err == nil) {
				t.Errorf("seed %s (%s): err %v", s.name, name, err)
			}
			checkDecode(t, s.data, set.args)
		}
	}
}

// TestWriteCorpus regenerates testdata/fuzz/Fuzz{Args,Res} when NFS3_WRITE_CORPUS=1.
func TestWriteCorpus(t *testing.T) {
	if os.Getenv("NFS3_WRITE_CORPUS") != "1" {
		t.Skip("set NFS3_WRITE_CORPUS=1 to regenerate the committed seed corpus")
	}
	for target, seeds := range map[string][]seed{"FuzzArgs": argSeeds(), "FuzzRes": resSeeds()} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s.data)
			if err := os.WriteFile(filepath.Join(dir, s.name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
