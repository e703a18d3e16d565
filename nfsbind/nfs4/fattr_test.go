package nfs4

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fattr4 layouts derived by hand from RFC 8881's XDR: bitmap4 is a counted array of
// words, bit n in word n/32 at 1<<(n%32); attr_vals is an opaque holding the values in
// bit order.
func TestFattrGolden(t *testing.T) {
	cases := []struct {
		name string
		mask Bitmap4
		attr Fattr
		want []byte
	}{
		{"type+size", NewBitmap(AttrType, AttrSize), Fattr{Type: NF4Dir, Size: 4096}, []byte{
			0, 0, 0, 1, 0, 0, 0, 0x12, // bitmap: 1 word, bits 1 and 4
			0, 0, 0, 12, // attr_vals length
			0, 0, 0, 2, // NF4DIR
			0, 0, 0, 0, 0, 0, 0x10, 0, // size 4096
		}},
		{"size+mode (two words)", NewBitmap(AttrMode, AttrSize), Fattr{Size: 1, Mode: 0o755}, []byte{
			0, 0, 0, 2, 0, 0, 0, 0x10, 0, 0, 0, 0x02, // bits 4 and 33
			0, 0, 0, 12,
			0, 0, 0, 0, 0, 0, 0, 1, // size
			0, 0, 0x01, 0xed, // mode 0755
		}},
		{"owner+time_modify_set", NewBitmap(AttrOwner, AttrTimeModifySet),
			Fattr{Owner: []byte("bob"), TimeModifySet: SetTime4{How: SetToClientTime4, Time: NFSTime4{Seconds: -2, Nseconds: 3}}}, []byte{
				0, 0, 0, 2, 0, 0, 0, 0, 0, 0x40, 0, 0x10, // bits 36 and 54
				0, 0, 0, 24,
				0, 0, 0, 3, 'b', 'o', 'b', 0, // owner
				0, 0, 0, 1, // SET_TO_CLIENT_TIME4
				0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 3, // nfstime4
			}},
	}
	for _, c := range cases {
		var e xdr.Encoder
		EncodeFattr(&e, c.mask, &c.attr)
		if !bytes.Equal(e.Bytes(), c.want) {
			t.Errorf("%s: encoded\n% x\nwant\n% x", c.name, e.Bytes(), c.want)
		}
		var mask Bitmap4
		var got Fattr
		if err := DecodeFattr(xdr.NewDecoder(c.want), &mask, &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !mask.Equal(c.mask) || show(got) != show(c.attr) {
			t.Errorf("%s: decoded %v %+v", c.name, mask, got)
		}
	}
}

// Every supported attribute round-trips, all at once.
func TestFattrAllSupported(t *testing.T) {
	a := testAttr
	a.SupportedAttrs = SupportedAttrs()
	a.FHExpireType, a.LinkSupport, a.SymlinkSupport, a.UniqueHandles, a.LeaseTime = FH4Persistent, true, true, true, 90
	a.RdattrError, a.ACLSupport, a.Cansettime, a.CasePreserving, a.ChownRestricted = ErrAccess, 0, true, true, true
	a.Filehandle, a.FilesAvail, a.FilesFree, a.FilesTotal, a.Homogeneous = testFH, 1, 2, 3, true
	a.Maxfilesize, a.Maxlink, a.Maxname, a.Maxread, a.Maxwrite, a.NoTrunc = 1<<63, 255, 255, 1<<20, 1<<20, true
	a.Rawdev, a.SpaceAvail, a.SpaceFree, a.SpaceTotal = SpecData4{Major: 8, Minor: 1}, 4, 5, 6
	a.TimeAccessSet, a.TimeModifySet = SetTime4{How: SetToServerTime4}, SetTime4{How: SetToClientTime4, Time: NFSTime4{Seconds: 8}}
	a.TimeDelta, a.FSLayoutTypes, a.SuppattrExclcreat = NFSTime4{Nseconds: 1}, []uint32{}, setMask
	var e xdr.Encoder
	EncodeFattr(&e, SupportedAttrs(), &a)
	var mask Bitmap4
	var got Fattr
	if err := DecodeFattr(xdr.NewDecoder(e.Bytes()), &mask, &got); err != nil {
		t.Fatal(err)
	}
	if !mask.Equal(SupportedAttrs()) || show(got) != show(a) {
		t.Fatalf("got %+v\nwant %+v", got, a)
	}
}

func TestFattrRefusals(t *testing.T) {
	// An attribute this package does not know (FATTR4_ACL, 12): NFS4ERR_ATTRNOTSUPP.
	in := []byte{0, 0, 0, 1, 0, 0, 0x10, 0, 0, 0, 0, 4, 0, 0, 0, 0}
	var mask Bitmap4
	var a Fattr
	if err := DecodeFattr(xdr.NewDecoder(in), &mask, &a); StatusOf(err) != ErrAttrnotsupp {
		t.Errorf("ACL bit: %v", err)
	}
	// A bit beyond the highest defined attribute, in a third word.
	in = []byte{0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0}
	if err := DecodeFattr(xdr.NewDecoder(in), &mask, &a); StatusOf(err) != ErrAttrnotsupp {
		t.Errorf("bit 95: %v", err)
	}
	// Values left over after the attributes in the mask: NFS4ERR_BADXDR.
	in = []byte{0, 0, 0, 1, 0, 0, 0, 0x10, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}
	if err := DecodeFattr(xdr.NewDecoder(in), &mask, &a); !errors.Is(err, ErrCountMismatch) || StatusOf(err) != ErrBadxdr {
		t.Errorf("trailing values: %v", err)
	}
	// Values too short for the mask.
	in = []byte{0, 0, 0, 1, 0, 0, 0, 0x10, 0, 0, 0, 4, 0, 0, 0, 0}
	if err := DecodeFattr(xdr.NewDecoder(in), &mask, &a); !errors.Is(err, xdr.ErrShort) {
		t.Errorf("short values: %v", err)
	}
	// An undefined file type.
	in = []byte{0, 0, 0, 1, 0, 0, 0, 0x02, 0, 0, 0, 4, 0, 0, 0, 10}
	if err := DecodeFattr(xdr.NewDecoder(in), &mask, &a); !errors.Is(err, ErrBadEnum) {
		t.Errorf("type 10: %v", err)
	}
	// A bitmap longer than MaxBitmapWords.
	long := xdr.AppendUint32(nil, MaxBitmapWords+1)
	long = append(long, make([]byte, 4*(MaxBitmapWords+2))...)
	if err := DecodeFattr(xdr.NewDecoder(long), &mask, &a); !errors.Is(err, xdr.ErrTooLong) {
		t.Errorf("long bitmap: %v", err)
	}
	// An owner longer than MaxUTF8Str.
	var e xdr.Encoder
	EncodeFattr(&e, NewBitmap(AttrOwner), &Fattr{Owner: make([]byte, MaxUTF8Str+1)})
	if err := DecodeFattr(xdr.NewDecoder(e.Bytes()), &mask, &a); !errors.Is(err, xdr.ErrTooLong) {
		t.Errorf("long owner: %v", err)
	}
}

// TestWriteOnlyAttrs: the write-only attributes are time_access_set and
// time_modify_set (RFC 8881 §5.7), supported and settable both.
func TestWriteOnlyAttrs(t *testing.T) {
	w := WriteOnlyAttrs()
	if !w.Equal(NewBitmap(AttrTimeAccessSet, AttrTimeModifySet)) {
		t.Errorf("WriteOnlyAttrs %v", w)
	}
	if !w.And(SupportedAttrs()).Equal(w) || !w.And(SettableAttrs()).Equal(w) {
		t.Errorf("WriteOnlyAttrs %v not within SupportedAttrs and SettableAttrs", w)
	}
}

func TestBitmapHelpers(t *testing.T) {
	b := NewBitmap(AttrSize, AttrMode)
	if !b.Has(AttrSize) || !b.Has(AttrMode) || b.Has(AttrType) || b.Has(Attr(500)) {
		t.Fatalf("Has: %v", b)
	}
	and := b.And(SettableAttrs())
	if !and.Equal(b) {
		t.Errorf("And: %v", and)
	}
	rest := b.AndNot(NewBitmap(AttrMode))
	if !rest.Equal(NewBitmap(AttrSize)) || len(rest) != 1 {
		t.Errorf("AndNot: %v", rest)
	}
	req := Bitmap4{0xffffffff, 0xffffffff, 0xffffffff, 1}
	req.Intersect(SettableAttrs())
	if !req.Equal(SettableAttrs()) || len(req) != 2 {
		t.Errorf("Intersect: %v", req)
	}
	b.Clear(AttrSize)
	b.Clear(AttrMode)
	if !b.IsZero() || !b.Equal(nil) {
		t.Errorf("Clear: %v", b)
	}
	if !(Bitmap4{1, 0, 0}).Equal(Bitmap4{1}) || (Bitmap4{1}).Equal(Bitmap4{1, 1}) {
		t.Error("Equal ignores trailing zero words only")
	}
}
