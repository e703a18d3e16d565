package nfs4

import (
	"fmt"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func readdirFill(t *testing.T, dircount, maxcount uint32, names int) (ReaddirRes, int) {
	t.Helper()
	e := xdr.NewEncoder(nil)
	var w ReaddirEncoder
	w.Begin(e, Verifier{1}, dircount, maxcount)
	mask := NewBitmap(AttrType, AttrFileid)
	added := 0
	for i := range names {
		a := Fattr{Type: NF4Reg, Fileid: uint64(i)}
		if !w.Add(uint64(i+1), []byte(fmt.Sprintf("file%04d", i)), mask, &a) {
			break
		}
		added++
	}
	w.Finish(added == names)
	if w.Len() != added {
		t.Fatalf("Len %d, added %d", w.Len(), added)
	}
	var r ReaddirRes
	if err := r.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil {
		t.Fatal(err)
	}
	// The READDIR4resok (everything after the status) stays within maxcount.
	if size := uint32(e.Len() - 4); size > maxcount {
		t.Fatalf("resok is %d bytes, maxcount %d", size, maxcount)
	}
	return r, added
}

// Each entry here takes 4 (list) + 8 (cookie) + 12 (name) + 8 (bitmap) + 4 (vals len) +
// 12 (type, fileid) = 48 bytes; the resok adds 8 (verifier) + 8 (end, eof) = 16.
func TestReaddirEncoderMaxcount(t *testing.T) {
	r, n := readdirFill(t, 0, 16+48*3, 10)
	if n != 3 || len(r.Entries) != 3 || r.EOF {
		t.Fatalf("maxcount for 3: %d entries, eof %v", n, r.EOF)
	}
	r, n = readdirFill(t, 0, 16+48*3-1, 10)
	if n != 2 || len(r.Entries) != 2 {
		t.Fatalf("maxcount one byte short of 3: %d entries", n)
	}
	r, n = readdirFill(t, 0, 1<<20, 10)
	if n != 10 || !r.EOF || string(r.Entries[9].Name) != "file0009" || r.Entries[9].Cookie != 10 {
		t.Fatalf("all: %d entries, eof %v", n, r.EOF)
	}
}

// dircount counts cookie and name: 8 + 4 + 8 = 20 bytes an entry; the first entry is
// always allowed by dircount.
func TestReaddirEncoderDircount(t *testing.T) {
	if _, n := readdirFill(t, 60, 1<<20, 10); n != 3 {
		t.Fatalf("dircount 60: %d entries", n)
	}
	if _, n := readdirFill(t, 1, 1<<20, 10); n != 1 {
		t.Fatalf("dircount 1: %d entries", n)
	}
}

func TestReaddirEncoderTooSmall(t *testing.T) {
	e := xdr.NewEncoder(nil)
	e.Uint32(uint32(OpReaddir))
	var w ReaddirEncoder
	w.Begin(e, Verifier{}, 0, 20)
	if w.Add(1, []byte("name"), nil, &Fattr{}) {
		t.Fatal("entry fitted in 20 bytes")
	}
	w.Abort(ErrToosmall)
	r := ReaddirRes{}
	d := xdr.NewDecoder(e.Bytes()[4:])
	if err := r.DecodeXDR(d); err != nil || r.Status != ErrToosmall || d.Len() != 0 {
		t.Fatalf("%v %v", r.Status, err)
	}
}

// An empty READDIR4resok takes 16 bytes: maxcount 15 cannot hold it (pynfs RDDR8).
func TestReaddirEncoderFits(t *testing.T) {
	for _, tc := range []struct {
		maxcount uint32
		fits     bool
	}{{0, false}, {15, false}, {16, true}, {1 << 20, true}} {
		var w ReaddirEncoder
		w.Begin(xdr.NewEncoder(nil), Verifier{}, 0, tc.maxcount)
		if w.Fits() != tc.fits {
			t.Errorf("maxcount %d: Fits %v", tc.maxcount, w.Fits())
		}
	}
	var w ReaddirEncoder
	w.Begin(xdr.NewEncoder(nil), Verifier{}, 0, 16+48)
	if !w.Add(1, []byte("file0000"), NewBitmap(AttrType, AttrFileid), &Fattr{Type: NF4Reg}) || !w.Fits() {
		t.Error("an entry that fits exactly")
	}
}
