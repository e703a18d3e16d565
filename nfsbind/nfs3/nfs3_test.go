package nfs3

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

var (
	testFH   = FH{0x01, 0x02, 0x03, 0x04, 0x05}
	testAttr = Fattr{Type: TypeReg, Mode: 0o644, Nlink: 1, UID: 1000, GID: 100, Size: 12345,
		Used: 16384, Rdev: SpecData{1, 2}, FSID: 0xabcdef, FileID: 77,
		Atime: Time{1, 2}, Mtime: Time{3, 4}, Ctime: Time{5, 6}}
	testPost = PostOpAttr{Present: true, Attr: testAttr}
	testWcc  = WccData{Before: PreOpAttr{Present: true, Attr: WccAttr{Size: 9, Mtime: Time{7, 8}, Ctime: Time{9, 10}}},
		After: testPost}
	testSattr = Sattr{SetMode: true, Mode: 0o755, SetUID: true, UID: 5, SetGID: false, SetSize: true, Size: 1 << 40,
		Atime: SetTime{How: SetToServerTime}, Mtime: SetTime{How: SetToClientTime, Time: Time{11, 12}}}
	testWhere = DirOpArgs{Dir: testFH, Name: []byte("name.txt")}
)

// sampleArgs returns a populated argument value for every NFSv3 procedure.
func sampleArgs() map[Proc]Message {
	return map[Proc]Message{
		ProcNull:        &Void{},
		ProcGetattr:     &FHArgs{Object: testFH},
		ProcSetattr:     &SetattrArgs{Object: testFH, Attr: testSattr, Guard: true, GuardCtime: Time{5, 6}},
		ProcLookup:      &DirOpArgsMsg{What: testWhere},
		ProcAccess:      &AccessArgs{Object: testFH, Access: AccessRead | AccessLookup},
		ProcReadlink:    &FHArgs{Object: testFH},
		ProcRead:        &ReadArgs{File: testFH, Offset: 1 << 33, Count: 4096},
		ProcWrite:       &WriteArgs{File: testFH, Offset: 7, Count: 5, Stable: DataSync, Data: []byte("hello")},
		ProcCreate:      &CreateArgs{Where: testWhere, Mode: Exclusive, Verf: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		ProcMkdir:       &MkdirArgs{Where: testWhere, Attr: testSattr},
		ProcSymlink:     &SymlinkArgs{Where: testWhere, Attr: Sattr{}, Data: []byte("../target")},
		ProcMknod:       &MknodArgs{Where: testWhere, Type: TypeChr, Attr: testSattr, Spec: SpecData{4, 64}},
		ProcRemove:      &DirOpArgsMsg{What: testWhere},
		ProcRmdir:       &DirOpArgsMsg{What: testWhere},
		ProcRename:      &RenameArgs{From: testWhere, To: DirOpArgs{Dir: FH{9}, Name: []byte("b")}},
		ProcLink:        &LinkArgs{File: testFH, Link: testWhere},
		ProcReaddir:     &ReaddirArgs{Dir: testFH, Cookie: 3, CookieVerf: [8]byte{8}, Count: 8192},
		ProcReaddirplus: &ReaddirplusArgs{Dir: testFH, Cookie: 3, CookieVerf: [8]byte{8}, DirCount: 4096, MaxCount: 32768},
		ProcFsstat:      &FHArgs{Object: testFH},
		ProcFsinfo:      &FHArgs{Object: testFH},
		ProcPathconf:    &FHArgs{Object: testFH},
		ProcCommit:      &CommitArgs{File: testFH, Offset: 0, Count: 0},
	}
}

// sampleRes returns a populated result value for every NFSv3 procedure.
func sampleRes() map[Proc]Message {
	return map[Proc]Message{
		ProcNull:     &Void{},
		ProcGetattr:  &GetattrRes{Status: StatusOK, Attr: testAttr},
		ProcSetattr:  &WccRes{Status: StatusPerm, Wcc: testWcc},
		ProcLookup:   &LookupRes{Status: StatusOK, Object: testFH, ObjAttr: testPost, DirAttr: PostOpAttr{}},
		ProcAccess:   &AccessRes{Status: StatusOK, Attr: testPost, Access: AccessRead},
		ProcReadlink: &ReadlinkRes{Status: StatusOK, Attr: testPost, Data: []byte("/etc/passwd")},
		ProcRead:     &ReadRes{Status: StatusOK, Attr: testPost, Count: 3, EOF: true, Data: []byte("abc")},
		ProcWrite:    &WriteRes{Status: StatusOK, Wcc: testWcc, Count: 5, Committed: FileSync, Verf: [8]byte{0xde, 0xad}},
		ProcCreate:   &CreateRes{Status: StatusOK, Obj: PostOpFH{Present: true, FH: testFH}, ObjAttr: testPost, DirWcc: testWcc},
		ProcMkdir:    &CreateRes{Status: StatusExist, DirWcc: testWcc},
		ProcSymlink:  &CreateRes{Status: StatusOK, Obj: PostOpFH{}, ObjAttr: PostOpAttr{}, DirWcc: WccData{}},
		ProcMknod:    &CreateRes{Status: StatusBadType, DirWcc: WccData{}},
		ProcRemove:   &WccRes{Status: StatusOK, Wcc: testWcc},
		ProcRmdir:    &WccRes{Status: StatusNotEmpty, Wcc: testWcc},
		ProcRename:   &RenameRes{Status: StatusOK, FromDirWcc: testWcc, ToDirWcc: WccData{After: testPost}},
		ProcLink:     &LinkRes{Status: StatusXDev, FileAttr: testPost, LinkDirWcc: testWcc},
		ProcReaddir: &ReaddirRes{Status: StatusOK, DirAttr: testPost, CookieVerf: [8]byte{1},
			Entries: []DirEntry{{FileID: 1, Name: []byte("."), Cookie: 1}, {FileID: 2, Name: []byte("abcde"), Cookie: 2}}, EOF: true},
		ProcReaddirplus: &ReaddirplusRes{Status: StatusOK, DirAttr: testPost, CookieVerf: [8]byte{1},
			Entries: []DirEntryPlus{{FileID: 1, Name: []byte("x"), Cookie: 10, Attr: testPost, Handle: PostOpFH{Present: true, FH: testFH}},
				{FileID: 2, Name: []byte("yy"), Cookie: 20}}, EOF: false},
		ProcFsstat: &FsstatRes{Status: StatusOK, Attr: testPost, Tbytes: 1, Fbytes: 2, Abytes: 3, Tfiles: 4, Ffiles: 5, Afiles: 6, Invarsec: 7},
		ProcFsinfo: &FsinfoRes{Status: StatusOK, Attr: testPost, Rtmax: 1 << 20, Rtpref: 1 << 20, Rtmult: 4096,
			Wtmax: 1 << 20, Wtpref: 1 << 20, Wtmult: 4096, Dtpref: 8192, MaxFileSize: 1 << 62, TimeDelta: Time{0, 1},
			Properties: FSFLink | FSFSymlink | FSFHomogeneous | FSFCanSetTime},
		ProcPathconf: &PathconfRes{Status: StatusOK, Attr: testPost, Linkmax: 32000, NameMax: 255, NoTrunc: true, CasePreserving: true},
		ProcCommit:   &CommitRes{Status: StatusOK, Wcc: testWcc, Verf: [8]byte{1, 2, 3}},
	}
}

func sampleMountArgs() map[MountProc]Message {
	return map[MountProc]Message{
		MountProcNull: &Void{}, MountProcMnt: &DirPathArgs{Path: []byte("/export")},
		MountProcDump: &Void{}, MountProcUmnt: &DirPathArgs{Path: []byte("/export")},
		MountProcUmntall: &Void{}, MountProcExport: &Void{},
	}
}

func sampleMountRes() map[MountProc]Message {
	return map[MountProc]Message{
		MountProcNull: &Void{}, MountProcMnt: &MntRes{Status: MountOK, FH: testFH, AuthFlavors: []uint32{1, 0}},
		MountProcDump: &DumpRes{Mounts: []MountBody{{Hostname: []byte("client"), Directory: []byte("/export")}}},
		MountProcUmnt: &Void{}, MountProcUmntall: &Void{},
		MountProcExport: &ExportRes{Exports: []ExportNode{{Dir: []byte("/export"), Groups: [][]byte{[]byte("*")}}, {Dir: []byte("/b")}}},
	}
}

// encode returns the whole logical stream of m (payloads put back in place).
func encode(m Message) []byte {
	var e xdr.Encoder
	m.EncodeXDR(&e)
	return xdr.Flatten(nil, e.Bytes(), e.Payloads())
}

func roundTrip(t *testing.T, name string, m, fresh Message) {
	t.Helper()
	b := encode(m)
	d := xdr.NewDecoder(b)
	if err := fresh.DecodeXDR(d); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	if d.Len() != 0 {
		t.Fatalf("%s: %d bytes left over", name, d.Len())
	}
	if !reflect.DeepEqual(normalize(m), normalize(fresh)) {
		t.Fatalf("%s: round trip differs:\n got %+v\nwant %+v", name, fresh, m)
	}
	if b2 := encode(fresh); !bytes.Equal(b, b2) {
		t.Fatalf("%s: re-encoding differs", name)
	}
}

// normalize makes values compare equal regardless of nil versus empty slices.
func normalize(m Message) Message {
	switch v := m.(type) {
	case *ReaddirRes:
		c := *v
		if len(c.Entries) == 0 {
			c.Entries = nil
		}
		return &c
	case *ReaddirplusRes:
		c := *v
		if len(c.Entries) == 0 {
			c.Entries = nil
		}
		return &c
	case *MntRes:
		c := *v
		if len(c.AuthFlavors) == 0 {
			c.AuthFlavors = nil
		}
		return &c
	case *DumpRes:
		c := *v
		if len(c.Mounts) == 0 {
			c.Mounts = nil
		}
		return &c
	case *ExportRes:
		c := *v
		if len(c.Exports) == 0 {
			c.Exports = nil
		}
		return &c
	}
	return m
}

func TestRoundTripAll(t *testing.T) {
	args, res := sampleArgs(), sampleRes()
	for p := Proc(0); p < NumProcs; p++ {
		roundTrip(t, p.String()+" args", args[p], NewArgs(p))
		roundTrip(t, p.String()+" res", res[p], NewRes(p))
	}
	margs, mres := sampleMountArgs(), sampleMountRes()
	for p := MountProc(0); p < NumMountProcs; p++ {
		roundTrip(t, p.String()+" args", margs[p], NewMountArgs(p))
		roundTrip(t, p.String()+" res", mres[p], NewMountRes(p))
	}
	if NewArgs(NumProcs) != nil || NewRes(NumProcs) != nil || NewMountArgs(NumMountProcs) != nil || NewMountRes(NumMountProcs) != nil {
		t.Fatal("table returned a value for an undefined procedure")
	}
}

// Failure results carry only the fields the RFC lists for resfail.
func TestFailureResultsOmitOKFields(t *testing.T) {
	cases := []struct {
		m    Message
		want int
	}{
		{&GetattrRes{Status: StatusStale, Attr: testAttr}, 4},
		{&LookupRes{Status: StatusNoEnt, Object: testFH, ObjAttr: testPost}, 8},
		{&ReadRes{Status: StatusIsDir, Count: 9, Data: []byte("x")}, 8},
		{&WriteRes{Status: StatusNoSpc, Count: 9}, 12},
		{&CommitRes{Status: StatusIO, Verf: [8]byte{1}}, 12},
		{&ReaddirRes{Status: StatusBadCookie, Entries: []DirEntry{{Name: []byte("a")}}}, 8},
		{&MntRes{Status: MountErrAcces, FH: testFH}, 4},
	}
	for _, c := range cases {
		if got := len(encode(c.m)); got != c.want {
			t.Errorf("%T: %d bytes, want %d", c.m, got, c.want)
		}
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// Golden vectors, derived by hand from RFC 1813's XDR.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		m    Message
		hex  string
	}{
		{
			// LOOKUP3args: nfs_fh3 (len 5, 5 bytes, 3 pad), filename3 "name.txt" (len 8, no pad).
			"LOOKUP3args", &DirOpArgsMsg{What: testWhere},
			"00000005 0102030405 000000  00000008 6e616d652e747874",
		},
		{
			// WRITE3args: fh; offset 7 (hyper); count 5; stable DATA_SYNC=1; data<> len 5,
			// "hello", 3 pad bytes.
			"WRITE3args", sampleArgs()[ProcWrite],
			"00000005 0102030405 000000  0000000000000007 00000005 00000001 00000005 68656c6c6f 000000",
		},
		{
			// CREATE3args EXCLUSIVE: diropargs3, mode 2, createverf3 (8 bytes, no length word).
			"CREATE3args", sampleArgs()[ProcCreate],
			"00000005 0102030405 000000 00000008 6e616d652e747874  00000002 0102030405060708",
		},
		{
			// READ3res failure NFS3ERR_ISDIR=21 with post_op_attr absent: status, FALSE.
			"READ3resfail", &ReadRes{Status: StatusIsDir},
			"00000015 00000000",
		},
		{
			// READDIR3resok: status 0; dir_attributes FALSE; cookieverf; one entry3
			// (value_follows TRUE, fileid 2, name "ab" len 2 + 2 pad, cookie 9); FALSE; eof TRUE.
			"READDIR3res", &ReaddirRes{CookieVerf: [8]byte{0xa}, Entries: []DirEntry{{FileID: 2, Name: []byte("ab"), Cookie: 9}}, EOF: true},
			"00000000 00000000 0a00000000000000  00000001 0000000000000002 00000002 61620000 0000000000000009  00000000 00000001",
		},
		{
			// mountres3 MNT3_OK: status 0, fhandle3 len 5 + pad, auth_flavors<> = [AUTH_UNIX=1].
			"mountres3", &MntRes{FH: testFH, AuthFlavors: []uint32{1}},
			"00000000 00000005 0102030405 000000 00000001 00000001",
		},
		{
			// sattr3 with mode 0755 set and everything else unchanged: TRUE 0x1ed, four
			// FALSE, two DONT_CHANGE.
			"sattr3", &SetattrArgs{Object: FH{}, Attr: Sattr{SetMode: true, Mode: 0o755}},
			"00000000  00000001 000001ed 00000000 00000000 00000000 00000000 00000000  00000000",
		},
	}
	for _, c := range cases {
		want := mustHex(c.hex)
		if got := encode(c.m); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %x\nwant %x", c.name, got, want)
		}
	}
}

// fattr3 is 84 bytes, laid out in RFC 1813 order.
func TestFattrLayout(t *testing.T) {
	p := PostOpAttr{Present: true, Attr: testAttr}
	b := encode(&GetattrRes{Attr: p.Attr})
	if len(b) != 4+FattrSize {
		t.Fatalf("GETATTR3resok is %d bytes", len(b))
	}
	want := mustHex(`00000000 00000001 000001a4 00000001 000003e8 00000064
		0000000000003039 0000000000004000 00000001 00000002 0000000000abcdef 000000000000004d
		00000001 00000002 00000003 00000004 00000005 00000006`)
	if !bytes.Equal(b, want) {
		t.Fatalf("got  %x\nwant %x", b, want)
	}
}

// WRITE data and READ data are payloads: elided from the inline stream at the right
// position, and decoded from a placed buffer.
func TestPayloads(t *testing.T) {
	w := sampleArgs()[ProcWrite].(*WriteArgs)
	var e xdr.Encoder
	w.EncodeXDR(&e)
	// fh 12 + offset 8 + count 4 + stable 4 + length word 4 = 32.
	if len(e.Payloads()) != 1 || e.Payloads()[0].Pos != 32 || e.Len() != 32 {
		t.Fatalf("WRITE payloads %+v, inline %d", e.Payloads(), e.Len())
	}

	r := &ReadRes{Attr: testPost, Count: 5, EOF: true, Data: []byte("12345")}
	e.Reset(nil)
	r.EncodeXDR(&e)
	// status 4 + post_op_attr 88 + count 4 + eof 4 + length word 4 = 104.
	if len(e.Payloads()) != 1 || e.Payloads()[0].Pos != 104 || e.Len() != 104 {
		t.Fatalf("READ payloads %+v, inline %d", e.Payloads(), e.Len())
	}
	placed := []byte("12345\x00\x00\x00")
	d := xdr.NewDecoder(e.Bytes())
	d.SetPlaced([][]byte{placed})
	var got ReadRes
	if err := got.DecodeXDR(d); err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != "12345" || &got.Data[0] != &placed[0] || !got.EOF {
		t.Fatalf("placed READ data not returned in place: %+v", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	long := func(n int) []byte { return bytes.Repeat([]byte{'a'}, n) }
	cases := []struct {
		name string
		m    Message
		in   []byte
		want error
		text string
	}{
		{"fh too long", &FHArgs{}, encode(&FHArgs{Object: long(65)}), xdr.ErrTooLong, "args.object"},
		{"name too long", &DirOpArgsMsg{}, encode(&DirOpArgsMsg{What: DirOpArgs{Name: long(MaxComponent + 1)}}), xdr.ErrTooLong, "args.name"},
		{"path too long", &SymlinkArgs{}, encode(&SymlinkArgs{Data: long(MaxSymlinkData + 1)}), xdr.ErrTooLong, "symlink_data"},
		{"bad stable", &WriteArgs{}, encode(&WriteArgs{Stable: 3}), ErrBadEnum, "WRITE3args.stable"},
		{"count mismatch", &WriteArgs{}, encode(&WriteArgs{Count: 4, Data: []byte("abc")}), ErrCountMismatch, "WRITE3args.count"},
		{"bad create mode", &CreateArgs{}, encode(&CreateArgs{Mode: 3}), ErrBadEnum, "CREATE3args.how.mode"},
		{"bad mknod type", &MknodArgs{}, encode(&MknodArgs{Type: 8}), ErrBadEnum, "MKNOD3args.what.type"},
		{"bad time_how", &MkdirArgs{}, append(encode(&DirOpArgsMsg{}), mustHex("00000000 00000000 00000000 00000000 00000003")...), ErrBadEnum, "atime.set_it"},
		{"bad bool", &SetattrArgs{}, append(encode(&FHArgs{}), mustHex("00000002")...), xdr.ErrBadBool, "new_attributes.mode"},
		{"short", &ReadArgs{}, encode(&FHArgs{Object: testFH}), xdr.ErrShort, "READ3args.offset"},
		{"bad ftype", &GetattrRes{}, append([]byte{0, 0, 0, 0, 0, 0, 0, 9}, make([]byte, 80)...), ErrBadEnum, "fattr3.type"},
		{"read count mismatch", &ReadRes{}, encode(&ReadRes{Count: 1, Data: []byte("ab")}), ErrCountMismatch, "READ3res.count"},
		{"empty", &WriteArgs{}, nil, xdr.ErrShort, "WRITE3args.file"},
		{"auth flavors", &MntRes{}, mustHex("00000000 00000000 00001000"), xdr.ErrTooLong, "auth_flavors"},
	}
	// A WRITE whose data claims MaxData+1 bytes.
	over := encode(&WriteArgs{Count: MaxData + 1})
	over = append(over[:len(over)-4], 0, 0x10, 0x10, 0x01)
	cases = append(cases, struct {
		name string
		m    Message
		in   []byte
		want error
		text string
	}{"write over MaxData", &WriteArgs{}, over, xdr.ErrTooLong, "WRITE3args.data"})
	for _, c := range cases {
		err := c.m.DecodeXDR(xdr.NewDecoder(c.in))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v, want %v naming %q", c.name, err, c.want, c.text)
		}
	}
}

// Every strict prefix of a valid message fails to decode with ErrShort and never panics.
func TestTruncations(t *testing.T) {
	check := func(name string, b []byte, fresh func() Message) {
		for n := 0; n < len(b); n++ {
			err := fresh().DecodeXDR(xdr.NewDecoder(b[:n]))
			if !errors.Is(err, xdr.ErrShort) {
				t.Fatalf("%s[:%d]: %v, want ErrShort", name, n, err)
			}
		}
	}
	for p, m := range sampleArgs() {
		check(p.String()+" args", encode(m), func() Message { return NewArgs(p) })
	}
	for p, m := range sampleRes() {
		check(p.String()+" res", encode(m), func() Message { return NewRes(p) })
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{ProcReaddirplus.String(), "READDIRPLUS"}, {Proc(99).String(), "PROC99"},
		{MountProcMnt.String(), "MOUNTPROC3_MNT"}, {StatusBadHandle.Error(), "illegal NFS file handle (NFS3ERR_BADHANDLE, 10001)"},
		{StatusNoEnt.Error(), "no such file or directory (NFS3ERR_NOENT, 2)"}, {Status(12345).Error(), "unknown status (nfsstat3(12345), 12345)"},
		{Status(12345).String(), "nfsstat3(12345)"}, {TypeLnk.String(), "NF3LNK"},
		{Unstable.String(), "UNSTABLE"}, {Exclusive.String(), "EXCLUSIVE"},
		{FileSync.String(), "FILE_SYNC"}, {Guarded.String(), "GUARDED"},
		{FileType(0).String(), "ftype3(0)"}, {FileType(8).String(), "ftype3(8)"},
		{StableHow(3).String(), "stable_how(3)"}, {CreateMode(1 << 31).String(), "createmode3(2147483648)"},
		{MountErrNoEnt.Error(), "no such file or directory (MNT3ERR_NOENT, 2)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestEntrySizes(t *testing.T) {
	r := sampleRes()[ProcReaddirplus].(*ReaddirplusRes)
	total := ReaddirResOverhead
	for i := range r.Entries {
		total += r.Entries[i].Size()
	}
	if got := len(encode(r)); got != total {
		t.Fatalf("READDIRPLUS3res is %d bytes, sizes add to %d", got, total)
	}
	rd := sampleRes()[ProcReaddir].(*ReaddirRes)
	total = ReaddirResOverhead
	for i := range rd.Entries {
		total += rd.Entries[i].Size()
	}
	if got := len(encode(rd)); got != total {
		t.Fatalf("READDIR3res is %d bytes, sizes add to %d", got, total)
	}
}

// An EXPORT reply may hold MountMaxList exports and, besides, MountMaxList groups
// over all of them; one more of either is refused, naming the list.
func TestExportListLimits(t *testing.T) {
	list := func(exports, groupsEach int) []byte {
		var r ExportRes
		for range exports {
			x := ExportNode{Dir: []byte("/export/x")}
			for range groupsEach {
				x.Groups = append(x.Groups, []byte("host"))
			}
			r.Exports = append(r.Exports, x)
		}
		return encode(&r)
	}
	var r ExportRes
	if err := r.DecodeXDR(xdr.NewDecoder(list(3000, 1))); err != nil || len(r.Exports) != 3000 {
		t.Errorf("3000 exports of one group each: %d, %v", len(r.Exports), err)
	}
	if err := r.DecodeXDR(xdr.NewDecoder(list(MountMaxList+1, 0))); !errors.Is(err, xdr.ErrTooLong) || !strings.Contains(err.Error(), "exports") {
		t.Errorf("%d exports: %v, want too long naming exports", MountMaxList+1, err)
	}
	if err := r.DecodeXDR(xdr.NewDecoder(list(2, MountMaxList/2+1))); !errors.Is(err, xdr.ErrTooLong) || !strings.Contains(err.Error(), "groups") {
		t.Errorf("%d groups: %v, want too long naming groups", MountMaxList+2, err)
	}
}
