package nfs4

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Attr is a file attribute number, the bit that names the attribute in a bitmap4
// (RFC 8881 §5).
type Attr uint32

// Attribute numbers (FATTR4_*).
const (
	AttrSupportedAttrs    Attr = 0
	AttrType              Attr = 1
	AttrFHExpireType      Attr = 2
	AttrChange            Attr = 3
	AttrSize              Attr = 4
	AttrLinkSupport       Attr = 5
	AttrSymlinkSupport    Attr = 6
	AttrNamedAttr         Attr = 7
	AttrFSID              Attr = 8
	AttrUniqueHandles     Attr = 9
	AttrLeaseTime         Attr = 10
	AttrRdattrError       Attr = 11
	AttrACL               Attr = 12
	AttrACLSupport        Attr = 13
	AttrArchive           Attr = 14
	AttrCansettime        Attr = 15
	AttrCaseInsensitive   Attr = 16
	AttrCasePreserving    Attr = 17
	AttrChownRestricted   Attr = 18
	AttrFilehandle        Attr = 19
	AttrFileid            Attr = 20
	AttrFilesAvail        Attr = 21
	AttrFilesFree         Attr = 22
	AttrFilesTotal        Attr = 23
	AttrFSLocations       Attr = 24
	AttrHidden            Attr = 25
	AttrHomogeneous       Attr = 26
	AttrMaxfilesize       Attr = 27
	AttrMaxlink           Attr = 28
	AttrMaxname           Attr = 29
	AttrMaxread           Attr = 30
	AttrMaxwrite          Attr = 31
	AttrMimetype          Attr = 32
	AttrMode              Attr = 33
	AttrNoTrunc           Attr = 34
	AttrNumlinks          Attr = 35
	AttrOwner             Attr = 36
	AttrOwnerGroup        Attr = 37
	AttrQuotaAvailHard    Attr = 38
	AttrQuotaAvailSoft    Attr = 39
	AttrQuotaUsed         Attr = 40
	AttrRawdev            Attr = 41
	AttrSpaceAvail        Attr = 42
	AttrSpaceFree         Attr = 43
	AttrSpaceTotal        Attr = 44
	AttrSpaceUsed         Attr = 45
	AttrSystem            Attr = 46
	AttrTimeAccess        Attr = 47
	AttrTimeAccessSet     Attr = 48
	AttrTimeBackup        Attr = 49
	AttrTimeCreate        Attr = 50
	AttrTimeDelta         Attr = 51
	AttrTimeMetadata      Attr = 52
	AttrTimeModify        Attr = 53
	AttrTimeModifySet     Attr = 54
	AttrMountedOnFileid   Attr = 55
	AttrDirNotifDelay     Attr = 56
	AttrDirentNotifDelay  Attr = 57
	AttrDACL              Attr = 58
	AttrSACL              Attr = 59
	AttrChangePolicy      Attr = 60
	AttrFSStatus          Attr = 61
	AttrFSLayoutTypes     Attr = 62
	AttrLayoutHint        Attr = 63
	AttrLayoutTypes       Attr = 64
	AttrLayoutBlksize     Attr = 65
	AttrLayoutAlignment   Attr = 66
	AttrFSLocationsInfo   Attr = 67
	AttrMdsthreshold      Attr = 68
	AttrRetentionGet      Attr = 69
	AttrRetentionSet      Attr = 70
	AttrRetentevtGet      Attr = 71
	AttrRetentevtSet      Attr = 72
	AttrRetentionHold     Attr = 73
	AttrModeSetMasked     Attr = 74
	AttrSuppattrExclcreat Attr = 75
	AttrFSCharsetCap      Attr = 76
)

func (a Attr) String() string { return "FATTR4(" + strconv.FormatUint(uint64(a), 10) + ")" }

// supported lists the attributes Fattr holds, in bit order.
var supported = []Attr{
	AttrSupportedAttrs, AttrType, AttrFHExpireType, AttrChange, AttrSize, AttrLinkSupport,
	AttrSymlinkSupport, AttrNamedAttr, AttrFSID, AttrUniqueHandles, AttrLeaseTime,
	AttrRdattrError, AttrACLSupport, AttrCansettime, AttrCaseInsensitive,
	AttrCasePreserving, AttrChownRestricted, AttrFilehandle, AttrFileid, AttrFilesAvail,
	AttrFilesFree, AttrFilesTotal, AttrHomogeneous, AttrMaxfilesize, AttrMaxlink,
	AttrMaxname, AttrMaxread, AttrMaxwrite, AttrMode, AttrNoTrunc, AttrNumlinks, AttrOwner,
	AttrOwnerGroup, AttrRawdev, AttrSpaceAvail, AttrSpaceFree, AttrSpaceTotal,
	AttrSpaceUsed, AttrTimeAccess, AttrTimeAccessSet, AttrTimeDelta, AttrTimeMetadata,
	AttrTimeModify, AttrTimeModifySet, AttrMountedOnFileid, AttrFSLayoutTypes,
	AttrSuppattrExclcreat,
}

// SupportedAttrs returns a new bitmap of every attribute Fattr holds: the attributes
// this package can encode and decode.
func SupportedAttrs() Bitmap4 { return NewBitmap(supported...) }

// SettableAttrs returns a new bitmap of the attributes among SupportedAttrs that a
// client may set (SETATTR, CREATE and OPEN createattrs): size, mode, owner,
// owner_group, time_access_set and time_modify_set. A server answers NFS4ERR_INVAL for
// a SETATTR of any other attribute it knows.
func SettableAttrs() Bitmap4 {
	return NewBitmap(AttrSize, AttrMode, AttrOwner, AttrOwnerGroup, AttrTimeAccessSet, AttrTimeModifySet)
}

// WriteOnlyAttrs returns a new bitmap of the write-only attributes among
// SupportedAttrs ("W" in the table of RFC 8881 §5.7): time_access_set and
// time_modify_set, which tell SETATTR, CREATE or OPEN how to set a time and have no
// value to read. A server answers NFS4ERR_INVAL for a GETATTR, READDIR, VERIFY or
// NVERIFY that asks for one.
func WriteOnlyAttrs() Bitmap4 { return NewBitmap(AttrTimeAccessSet, AttrTimeModifySet) }

// Fattr holds the values of the attributes this package supports (SupportedAttrs). Only
// the fields whose bits are in the accompanying mask are meaningful.
type Fattr struct {
	SupportedAttrs    Bitmap4
	Type              FileType
	FHExpireType      uint32
	Change            uint64
	Size              uint64
	LinkSupport       bool
	SymlinkSupport    bool
	NamedAttr         bool
	FSID              FSID4
	UniqueHandles     bool
	LeaseTime         uint32
	RdattrError       Status
	ACLSupport        uint32
	Cansettime        bool
	CaseInsensitive   bool
	CasePreserving    bool
	ChownRestricted   bool
	Filehandle        FH
	Fileid            uint64
	FilesAvail        uint64
	FilesFree         uint64
	FilesTotal        uint64
	Homogeneous       bool
	Maxfilesize       uint64
	Maxlink           uint32
	Maxname           uint32
	Maxread           uint64
	Maxwrite          uint64
	Mode              uint32
	NoTrunc           bool
	Numlinks          uint32
	Owner             []byte // utf8str_mixed, e.g. "1000" or "user@domain"
	OwnerGroup        []byte
	Rawdev            SpecData4
	SpaceAvail        uint64
	SpaceFree         uint64
	SpaceTotal        uint64
	SpaceUsed         uint64
	TimeAccess        NFSTime4
	TimeAccessSet     SetTime4
	TimeDelta         NFSTime4
	TimeMetadata      NFSTime4
	TimeModify        NFSTime4
	TimeModifySet     SetTime4
	MountedOnFileid   uint64
	FSLayoutTypes     []uint32 // layouttype4; empty for a server without pNFS
	SuppattrExclcreat Bitmap4
}

// EncodeFattr encodes an fattr4: mask, then attr_vals holding a's value of every
// attribute in mask, in bit order. The caller passes a mask already limited to
// SupportedAttrs (GETATTR: the request ANDed with what it supports); EncodeFattr panics
// on another bit, which is a programming error. The mask is written without trailing
// zero words.
func EncodeFattr(e *xdr.Encoder, mask Bitmap4, a *Fattr) {
	mask = mask.trim()
	mask.EncodeXDR(e)
	lenAt := e.Len()
	e.Uint32(0)
	start := e.Len()
	for w, word := range mask {
		for word != 0 {
			bit := uint32(w*32) + uint32(trailingZeros(word))
			word &= word - 1
			encodeAttr(e, Attr(bit), a)
		}
	}
	binary.BigEndian.PutUint32(e.Bytes()[lenAt:], uint32(e.Len()-start))
}

func trailingZeros(w uint32) int {
	n := 0
	for w&1 == 0 {
		w >>= 1
		n++
	}
	return n
}

func encodeAttr(e *xdr.Encoder, at Attr, a *Fattr) {
	switch at {
	case AttrSupportedAttrs:
		a.SupportedAttrs.EncodeXDR(e)
	case AttrType:
		e.Uint32(uint32(a.Type))
	case AttrFHExpireType:
		e.Uint32(a.FHExpireType)
	case AttrChange:
		e.Uint64(a.Change)
	case AttrSize:
		e.Uint64(a.Size)
	case AttrLinkSupport:
		e.Bool(a.LinkSupport)
	case AttrSymlinkSupport:
		e.Bool(a.SymlinkSupport)
	case AttrNamedAttr:
		e.Bool(a.NamedAttr)
	case AttrFSID:
		e.Uint64(a.FSID.Major)
		e.Uint64(a.FSID.Minor)
	case AttrUniqueHandles:
		e.Bool(a.UniqueHandles)
	case AttrLeaseTime:
		e.Uint32(a.LeaseTime)
	case AttrRdattrError:
		e.Uint32(uint32(a.RdattrError))
	case AttrACLSupport:
		e.Uint32(a.ACLSupport)
	case AttrCansettime:
		e.Bool(a.Cansettime)
	case AttrCaseInsensitive:
		e.Bool(a.CaseInsensitive)
	case AttrCasePreserving:
		e.Bool(a.CasePreserving)
	case AttrChownRestricted:
		e.Bool(a.ChownRestricted)
	case AttrFilehandle:
		e.Opaque(a.Filehandle)
	case AttrFileid:
		e.Uint64(a.Fileid)
	case AttrFilesAvail:
		e.Uint64(a.FilesAvail)
	case AttrFilesFree:
		e.Uint64(a.FilesFree)
	case AttrFilesTotal:
		e.Uint64(a.FilesTotal)
	case AttrHomogeneous:
		e.Bool(a.Homogeneous)
	case AttrMaxfilesize:
		e.Uint64(a.Maxfilesize)
	case AttrMaxlink:
		e.Uint32(a.Maxlink)
	case AttrMaxname:
		e.Uint32(a.Maxname)
	case AttrMaxread:
		e.Uint64(a.Maxread)
	case AttrMaxwrite:
		e.Uint64(a.Maxwrite)
	case AttrMode:
		e.Uint32(a.Mode)
	case AttrNoTrunc:
		e.Bool(a.NoTrunc)
	case AttrNumlinks:
		e.Uint32(a.Numlinks)
	case AttrOwner:
		e.Opaque(a.Owner)
	case AttrOwnerGroup:
		e.Opaque(a.OwnerGroup)
	case AttrRawdev:
		e.Uint32(a.Rawdev.Major)
		e.Uint32(a.Rawdev.Minor)
	case AttrSpaceAvail:
		e.Uint64(a.SpaceAvail)
	case AttrSpaceFree:
		e.Uint64(a.SpaceFree)
	case AttrSpaceTotal:
		e.Uint64(a.SpaceTotal)
	case AttrSpaceUsed:
		e.Uint64(a.SpaceUsed)
	case AttrTimeAccess:
		a.TimeAccess.EncodeXDR(e)
	case AttrTimeAccessSet:
		a.TimeAccessSet.EncodeXDR(e)
	case AttrTimeDelta:
		a.TimeDelta.EncodeXDR(e)
	case AttrTimeMetadata:
		a.TimeMetadata.EncodeXDR(e)
	case AttrTimeModify:
		a.TimeModify.EncodeXDR(e)
	case AttrTimeModifySet:
		a.TimeModifySet.EncodeXDR(e)
	case AttrMountedOnFileid:
		e.Uint64(a.MountedOnFileid)
	case AttrFSLayoutTypes:
		e.ArrayLen(len(a.FSLayoutTypes))
		for _, t := range a.FSLayoutTypes {
			e.Uint32(t)
		}
	case AttrSuppattrExclcreat:
		a.SuppattrExclcreat.EncodeXDR(e)
	default:
		panic(fmt.Sprintf("nfs4: EncodeFattr: attribute %d is not supported", at))
	}
}

// Fattr4 is fattr4 as it travels: the mask and the undecoded attr_vals (aliasing the
// decoder's buffer). VERIFY and NVERIFY carry one, since a server compares the values
// byte for byte with its own encoding of the same mask; Values decodes them.
//
//	struct fattr4 { bitmap4 attrmask; attrlist4 attr_vals; };
type Fattr4 struct {
	Mask Bitmap4
	Vals []byte
}

// EncodeXDR encodes an fattr4.
func (f *Fattr4) EncodeXDR(e *xdr.Encoder) {
	f.Mask.EncodeXDR(e)
	e.Opaque(f.Vals)
}

func (f *Fattr4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "fattr4"
	defer wrapErr(&err, outer)
	if err = f.Mask.decode(d, name+".attrmask"); err != nil {
		return err
	}
	f.Vals, err = decodeOpaque(d, -1, name+".attr_vals")
	return err
}

// DecodeXDR decodes an fattr4 without decoding the values.
func (f *Fattr4) DecodeXDR(d *xdr.Decoder) error { return f.decode(d, "fattr4") }

// Values decodes attr_vals into a; see DecodeFattr for the errors.
func (f *Fattr4) Values(a *Fattr) error { return decodeVals(f.Mask, f.Vals, a, "fattr4") }

// DecodeFattr decodes an fattr4 into mask (without trailing zero words) and a, reusing
// their storage. An attribute bit outside SupportedAttrs fails with a *StatusError
// carrying NFS4ERR_ATTRNOTSUPP (the attribute's length is unknown, so the values after
// it cannot be read); attr_vals longer than the attributes in mask is NFS4ERR_BADXDR.
func DecodeFattr(d *xdr.Decoder, mask *Bitmap4, a *Fattr) error {
	return decodeFattr(d, mask, a, "fattr4")
}

func decodeFattr(d *xdr.Decoder, mask *Bitmap4, a *Fattr, outer string) (err error) {
	const name = "fattr4"
	defer wrapErr(&err, outer)
	if err := mask.decode(d, name+".attrmask"); err != nil {
		return err
	}
	*mask = mask.trim() // as EncodeFattr writes it
	vals, err := decodeOpaque(d, -1, name+".attr_vals")
	if err != nil {
		return err
	}
	return decodeVals(*mask, vals, a, name)
}

func decodeVals(mask Bitmap4, vals []byte, a *Fattr, name string) error {
	var d xdr.Decoder
	d.Reset(vals)
	for w, word := range mask {
		for word != 0 {
			bit := uint32(w*32) + uint32(trailingZeros(word))
			word &= word - 1
			if err := decodeAttr(&d, Attr(bit), a, name); err != nil {
				return err
			}
		}
	}
	if d.Len() != 0 {
		return fmt.Errorf("nfs4: %s.attr_vals: %d bytes after the last attribute: %w", name, d.Len(), ErrCountMismatch)
	}
	return nil
}

func decodeAttr(d *xdr.Decoder, at Attr, a *Fattr, name string) (err error) {
	err = decodeAttrValue(d, at, a)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) {
			return err
		}
		return fmt.Errorf("nfs4: %s.attr_vals (attribute %d): %w", name, uint32(at), err)
	}
	return nil
}

func decodeAttrValue(d *xdr.Decoder, at Attr, a *Fattr) (err error) {
	u32 := func(p *uint32) {
		if err == nil {
			*p, err = d.Uint32()
		}
	}
	u64 := func(p *uint64) {
		if err == nil {
			*p, err = d.Uint64()
		}
	}
	boolean := func(p *bool) {
		if err == nil {
			*p, err = d.Bool()
		}
	}
	const n = "" // decodeAttr names the attribute
	switch at {
	case AttrSupportedAttrs:
		err = a.SupportedAttrs.decode(d, n)
	case AttrType:
		var v uint32
		if u32(&v); err == nil {
			if !FileType(v).Valid() {
				return fmt.Errorf("type: %w: %d", ErrBadEnum, v)
			}
			a.Type = FileType(v)
		}
	case AttrFHExpireType:
		u32(&a.FHExpireType)
	case AttrChange:
		u64(&a.Change)
	case AttrSize:
		u64(&a.Size)
	case AttrLinkSupport:
		boolean(&a.LinkSupport)
	case AttrSymlinkSupport:
		boolean(&a.SymlinkSupport)
	case AttrNamedAttr:
		boolean(&a.NamedAttr)
	case AttrFSID:
		u64(&a.FSID.Major)
		u64(&a.FSID.Minor)
	case AttrUniqueHandles:
		boolean(&a.UniqueHandles)
	case AttrLeaseTime:
		u32(&a.LeaseTime)
	case AttrRdattrError:
		var v uint32
		u32(&v)
		a.RdattrError = Status(v)
	case AttrACLSupport:
		u32(&a.ACLSupport)
	case AttrCansettime:
		boolean(&a.Cansettime)
	case AttrCaseInsensitive:
		boolean(&a.CaseInsensitive)
	case AttrCasePreserving:
		boolean(&a.CasePreserving)
	case AttrChownRestricted:
		boolean(&a.ChownRestricted)
	case AttrFilehandle:
		a.Filehandle, err = decodeFH(d, "filehandle")
	case AttrFileid:
		u64(&a.Fileid)
	case AttrFilesAvail:
		u64(&a.FilesAvail)
	case AttrFilesFree:
		u64(&a.FilesFree)
	case AttrFilesTotal:
		u64(&a.FilesTotal)
	case AttrHomogeneous:
		boolean(&a.Homogeneous)
	case AttrMaxfilesize:
		u64(&a.Maxfilesize)
	case AttrMaxlink:
		u32(&a.Maxlink)
	case AttrMaxname:
		u32(&a.Maxname)
	case AttrMaxread:
		u64(&a.Maxread)
	case AttrMaxwrite:
		u64(&a.Maxwrite)
	case AttrMode:
		u32(&a.Mode)
	case AttrNoTrunc:
		boolean(&a.NoTrunc)
	case AttrNumlinks:
		u32(&a.Numlinks)
	case AttrOwner:
		a.Owner, err = decodeStr(d, MaxUTF8Str, n)
	case AttrOwnerGroup:
		a.OwnerGroup, err = decodeStr(d, MaxUTF8Str, n)
	case AttrRawdev:
		u32(&a.Rawdev.Major)
		u32(&a.Rawdev.Minor)
	case AttrSpaceAvail:
		u64(&a.SpaceAvail)
	case AttrSpaceFree:
		u64(&a.SpaceFree)
	case AttrSpaceTotal:
		u64(&a.SpaceTotal)
	case AttrSpaceUsed:
		u64(&a.SpaceUsed)
	case AttrTimeAccess:
		err = a.TimeAccess.decode(d, n)
	case AttrTimeAccessSet:
		err = a.TimeAccessSet.decode(d, n)
	case AttrTimeDelta:
		err = a.TimeDelta.decode(d, n)
	case AttrTimeMetadata:
		err = a.TimeMetadata.decode(d, n)
	case AttrTimeModify:
		err = a.TimeModify.decode(d, n)
	case AttrTimeModifySet:
		err = a.TimeModifySet.decode(d, n)
	case AttrMountedOnFileid:
		u64(&a.MountedOnFileid)
	case AttrFSLayoutTypes:
		cnt, err := d.ArrayLen(MaxLayoutTypes, 4)
		if err != nil {
			return err
		}
		a.FSLayoutTypes = a.FSLayoutTypes[:0]
		for range cnt {
			v, _ := d.Uint32()
			a.FSLayoutTypes = append(a.FSLayoutTypes, v)
		}
	case AttrSuppattrExclcreat:
		err = a.SuppattrExclcreat.decode(d, n)
	default:
		return &StatusError{Status: ErrAttrnotsupp, Err: fmt.Errorf("nfs4: attribute %d: %w", uint32(at), ErrUnsupported)}
	}
	return err
}
