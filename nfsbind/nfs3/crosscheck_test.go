package nfs3

import (
	"bytes"
	"testing"

	godxdr "github.com/davecgh/go-xdr/xdr2"
)

// Flat structures cross-checked against github.com/davecgh/go-xdr, an independent
// reflection-based encoder (used only in tests).

type refFattr struct {
	Type, Mode, Nlink, UID, GID uint32
	Size, Used                  uint64
	Major, Minor                uint32
	FSID, FileID                uint64
	Atime, AtimeN               uint32
	Mtime, MtimeN               uint32
	Ctime, CtimeN               uint32
}

type refFsinfoOK struct {
	Status                                       uint32
	Present                                      bool
	Attr                                         refFattr
	Rtmax, Rtpref, Rtmult, Wtmax, Wtpref, Wtmult uint32
	Dtpref                                       uint32
	MaxFileSize                                  uint64
	DeltaS, DeltaN                               uint32
	Properties                                   uint32
}

type refReaddirplusArgs struct {
	Dir        []byte
	Cookie     uint64
	CookieVerf [8]byte
	DirCount   uint32
	MaxCount   uint32
}

type refCommitRes struct {
	Status         uint32
	BeforePresent  bool
	Size           uint64
	MtimeS, MtimeN uint32
	CtimeS, CtimeN uint32
	AfterPresent   bool
	Verf           [8]byte
}

func refBytes(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := godxdr.Marshal(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCrossCheckGoXDR(t *testing.T) {
	a := testAttr
	ra := refFattr{uint32(a.Type), a.Mode, a.Nlink, a.UID, a.GID, a.Size, a.Used, a.Rdev.Major, a.Rdev.Minor,
		a.FSID, a.FileID, a.Atime.Seconds, a.Atime.Nseconds, a.Mtime.Seconds, a.Mtime.Nseconds, a.Ctime.Seconds, a.Ctime.Nseconds}
	if got, want := encode(&GetattrRes{Attr: a}), refBytes(t, struct {
		S uint32
		A refFattr
	}{0, ra}); !bytes.Equal(got, want) {
		t.Errorf("GETATTR3res:\n got %x\nwant %x", got, want)
	}

	fi := sampleRes()[ProcFsinfo].(*FsinfoRes)
	rfi := refFsinfoOK{0, true, ra, fi.Rtmax, fi.Rtpref, fi.Rtmult, fi.Wtmax, fi.Wtpref, fi.Wtmult, fi.Dtpref,
		fi.MaxFileSize, fi.TimeDelta.Seconds, fi.TimeDelta.Nseconds, fi.Properties}
	if got, want := encode(fi), refBytes(t, rfi); !bytes.Equal(got, want) {
		t.Errorf("FSINFO3res:\n got %x\nwant %x", got, want)
	}

	rp := sampleArgs()[ProcReaddirplus].(*ReaddirplusArgs)
	if got, want := encode(rp), refBytes(t, refReaddirplusArgs{rp.Dir, rp.Cookie, rp.CookieVerf, rp.DirCount, rp.MaxCount}); !bytes.Equal(got, want) {
		t.Errorf("READDIRPLUS3args:\n got %x\nwant %x", got, want)
	}

	cr := &CommitRes{Wcc: WccData{Before: PreOpAttr{Present: true, Attr: WccAttr{Size: 77, Mtime: Time{1, 2}, Ctime: Time{3, 4}}}}, Verf: [8]byte{9, 8, 7}}
	if got, want := encode(cr), refBytes(t, refCommitRes{0, true, 77, 1, 2, 3, 4, false, cr.Verf}); !bytes.Equal(got, want) {
		t.Errorf("COMMIT3res:\n got %x\nwant %x", got, want)
	}
}
