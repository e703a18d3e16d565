package nfs3

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Errors for values the XDR layer cannot judge; they are wrapped with the field's name.
var (
	// ErrBadEnum means a discriminant or enum has a value the protocol does not define.
	ErrBadEnum = errors.New("value not defined by the protocol")
	// ErrCountMismatch means a count field disagrees with the length of its data.
	ErrCountMismatch = errors.New("count differs from data length")
)

// field wraps a decoding error with the name of the field that failed.
func field(name string, err error) error { return fmt.Errorf("nfs3: %s: %w", name, err) }

func badEnum(name string, v uint32) error {
	return fmt.Errorf("nfs3: %s: %w: %d", name, ErrBadEnum, v)
}

// FH is nfs_fh3, an opaque file handle of at most FHSize bytes.
//
//	struct nfs_fh3 { opaque data<NFS3_FHSIZE>; };
type FH []byte

func encodeFH(e *xdr.Encoder, fh FH) { e.Opaque(fh) }

func decodeFH(d *xdr.Decoder, name string) (FH, error) {
	b, err := d.Opaque(FHSize)
	if err != nil {
		return nil, field(name, err)
	}
	return FH(b), nil
}

func decodeName(d *xdr.Decoder, name string) ([]byte, error) {
	b, err := d.StringBytes(MaxNameLen)
	if err != nil {
		return nil, field(name, err)
	}
	return b, nil
}

// decodePath decodes a MOUNT dirpath (at most MaxPathLen bytes).
func decodePath(d *xdr.Decoder, name string) ([]byte, error) {
	return decodeStringBytes(d, MaxPathLen, name)
}

// decodeNFSPath decodes an nfspath3, a symbolic link's text (at most MaxNFSPathLen
// bytes).
func decodeNFSPath(d *xdr.Decoder, name string) ([]byte, error) {
	return decodeStringBytes(d, MaxNFSPathLen, name)
}

func decodeStringBytes(d *xdr.Decoder, limit int, name string) ([]byte, error) {
	b, err := d.StringBytes(limit)
	if err != nil {
		return nil, field(name, err)
	}
	return b, nil
}

func decodeU32(d *xdr.Decoder, name string) (uint32, error) {
	v, err := d.Uint32()
	if err != nil {
		return 0, field(name, err)
	}
	return v, nil
}

func decodeU64(d *xdr.Decoder, name string) (uint64, error) {
	v, err := d.Uint64()
	if err != nil {
		return 0, field(name, err)
	}
	return v, nil
}

func decodeBool(d *xdr.Decoder, name string) (bool, error) {
	v, err := d.Bool()
	if err != nil {
		return false, field(name, err)
	}
	return v, nil
}

func decodeFixed8(d *xdr.Decoder, dst *[8]byte, name string) error {
	b, err := d.FixedOpaque(8)
	if err != nil {
		return field(name, err)
	}
	copy(dst[:], b)
	return nil
}

// Time is nfstime3.
//
//	struct nfstime3 { uint32 seconds; uint32 nseconds; };
type Time struct {
	Seconds  uint32
	Nseconds uint32
}

func (t Time) encode(e *xdr.Encoder) {
	e.Uint32(t.Seconds)
	e.Uint32(t.Nseconds)
}

func (t *Time) decode(d *xdr.Decoder, name string) error {
	v, err := d.Uint64()
	if err != nil {
		return field(name, err)
	}
	t.Seconds, t.Nseconds = uint32(v>>32), uint32(v)
	return nil
}

// SpecData is specdata3, a device's major and minor numbers.
//
//	struct specdata3 { uint32 specdata1; uint32 specdata2; };
type SpecData struct {
	Major, Minor uint32
}

// Fattr is fattr3, the attributes of a file system object (RFC 1813 §2.6); 84 bytes.
//
//	struct fattr3 {
//	   ftype3 type; mode3 mode; uint32 nlink; uid3 uid; gid3 gid;
//	   size3 size; size3 used; specdata3 rdev; uint64 fsid; fileid3 fileid;
//	   nfstime3 atime; nfstime3 mtime; nfstime3 ctime;
//	};
type Fattr struct {
	Type   FileType
	Mode   uint32
	Nlink  uint32
	UID    uint32
	GID    uint32
	Size   uint64
	Used   uint64
	Rdev   SpecData
	FSID   uint64
	FileID uint64
	Atime  Time
	Mtime  Time
	Ctime  Time
}

// FattrSize is the encoded size of a fattr3.
const FattrSize = 84

// EncodeXDR encodes a fattr3.
func (a *Fattr) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(a.Type))
	e.Uint32(a.Mode)
	e.Uint32(a.Nlink)
	e.Uint32(a.UID)
	e.Uint32(a.GID)
	e.Uint64(a.Size)
	e.Uint64(a.Used)
	e.Uint32(a.Rdev.Major)
	e.Uint32(a.Rdev.Minor)
	e.Uint64(a.FSID)
	e.Uint64(a.FileID)
	a.Atime.encode(e)
	a.Mtime.encode(e)
	a.Ctime.encode(e)
}

// DecodeXDR decodes a fattr3; the type must be a defined ftype3.
func (a *Fattr) DecodeXDR(d *xdr.Decoder) error {
	if d.Len() < FattrSize {
		// Let the first field report the shortfall with its position.
		_, err := d.FixedOpaque(FattrSize)
		return field("fattr3", err)
	}
	var w [9]uint32
	for i := range w {
		w[i], _ = d.Uint32()
	}
	if !FileType(w[0]).Valid() {
		return badEnum("fattr3.type", w[0])
	}
	a.Type, a.Mode, a.Nlink, a.UID, a.GID = FileType(w[0]), w[1], w[2], w[3], w[4]
	a.Size = uint64(w[5])<<32 | uint64(w[6])
	a.Used = uint64(w[7])<<32 | uint64(w[8])
	a.Rdev.Major, _ = d.Uint32()
	a.Rdev.Minor, _ = d.Uint32()
	a.FSID, _ = d.Uint64()
	a.FileID, _ = d.Uint64()
	_ = a.Atime.decode(d, "")
	_ = a.Mtime.decode(d, "")
	_ = a.Ctime.decode(d, "")
	return nil
}

// PostOpAttr is post_op_attr: attributes that may be absent.
//
//	union post_op_attr switch (bool attributes_follow) {
//	case TRUE: fattr3 attributes; case FALSE: void; };
type PostOpAttr struct {
	Present bool
	Attr    Fattr
}

// EncodeXDR encodes a post_op_attr.
func (p *PostOpAttr) EncodeXDR(e *xdr.Encoder) {
	e.Optional(p.Present)
	if p.Present {
		p.Attr.EncodeXDR(e)
	}
}

// DecodeXDR decodes a post_op_attr.
func (p *PostOpAttr) DecodeXDR(d *xdr.Decoder) error { return p.decode(d, "post_op_attr") }

func (p *PostOpAttr) decode(d *xdr.Decoder, name string) error { return p.decodeIn(d, name, "") }

// decodeIn decodes a post_op_attr whose errors name it parent.child (parent alone when
// child is ""), joined only for an error.
func (p *PostOpAttr) decodeIn(d *xdr.Decoder, parent, child string) error {
	ok, err := d.Optional()
	if err != nil {
		return field(joinField(parent, child), err)
	}
	p.Present = ok
	if !ok {
		return nil
	}
	if err := p.Attr.DecodeXDR(d); err != nil {
		return fmt.Errorf("%s: %w", joinField(parent, child), err)
	}
	return nil
}

// joinField names the field child of parent; child "" is parent itself.
func joinField(parent, child string) string {
	if child == "" {
		return parent
	}
	return parent + "." + child
}

// WccAttr is wcc_attr, the attributes weak cache consistency checks compare.
//
//	struct wcc_attr { size3 size; nfstime3 mtime; nfstime3 ctime; };
type WccAttr struct {
	Size  uint64
	Mtime Time
	Ctime Time
}

// PreOpAttr is pre_op_attr.
//
//	union pre_op_attr switch (bool attributes_follow) {
//	case TRUE: wcc_attr attributes; case FALSE: void; };
type PreOpAttr struct {
	Present bool
	Attr    WccAttr
}

// WccData is wcc_data: an object's attributes before and after an operation.
//
//	struct wcc_data { pre_op_attr before; post_op_attr after; };
type WccData struct {
	Before PreOpAttr
	After  PostOpAttr
}

// EncodeXDR encodes a wcc_data.
func (w *WccData) EncodeXDR(e *xdr.Encoder) {
	e.Optional(w.Before.Present)
	if w.Before.Present {
		e.Uint64(w.Before.Attr.Size)
		w.Before.Attr.Mtime.encode(e)
		w.Before.Attr.Ctime.encode(e)
	}
	w.After.EncodeXDR(e)
}

// DecodeXDR decodes a wcc_data.
func (w *WccData) DecodeXDR(d *xdr.Decoder) error { return w.decode(d, "wcc_data") }

func (w *WccData) decode(d *xdr.Decoder, name string) error {
	ok, err := d.Optional()
	if err != nil {
		return field(name+".before", err)
	}
	w.Before.Present = ok
	if ok {
		if d.Len() < 24 {
			_, err := d.FixedOpaque(24)
			return field(name+".before", err)
		}
		w.Before.Attr.Size, _ = d.Uint64()
		_ = w.Before.Attr.Mtime.decode(d, "")
		_ = w.Before.Attr.Ctime.decode(d, "")
	}
	return w.After.decodeIn(d, name, "after")
}

// PostOpFH is post_op_fh3: a file handle that may be absent.
//
//	union post_op_fh3 switch (bool handle_follows) {
//	case TRUE: nfs_fh3 handle; case FALSE: void; };
type PostOpFH struct {
	Present bool
	FH      FH
}

func (p *PostOpFH) encode(e *xdr.Encoder) {
	e.Optional(p.Present)
	if p.Present {
		encodeFH(e, p.FH)
	}
}

func (p *PostOpFH) decode(d *xdr.Decoder, name string) error {
	ok, err := d.Optional()
	if err != nil {
		return field(name, err)
	}
	p.Present, p.FH = ok, nil
	if ok {
		p.FH, err = decodeFH(d, name)
	}
	return err
}

// SetTime is set_atime or set_mtime: how SETATTR changes a time.
//
//	union set_atime switch (time_how set_it) {
//	case SET_TO_CLIENT_TIME: nfstime3 atime; default: void; };
type SetTime struct {
	How  TimeHow
	Time Time // when How is SetToClientTime
}

// Sattr is sattr3: the attributes SETATTR, CREATE, MKDIR, SYMLINK and MKNOD set. Each
// Set* flag says whether the value that follows is present.
//
//	struct sattr3 { set_mode3 mode; set_uid3 uid; set_gid3 gid; set_size3 size;
//	   set_atime atime; set_mtime mtime; };
type Sattr struct {
	SetMode bool
	Mode    uint32
	SetUID  bool
	UID     uint32
	SetGID  bool
	GID     uint32
	SetSize bool
	Size    uint64
	Atime   SetTime
	Mtime   SetTime
}

// EncodeXDR encodes a sattr3.
func (s *Sattr) EncodeXDR(e *xdr.Encoder) {
	e.Bool(s.SetMode)
	if s.SetMode {
		e.Uint32(s.Mode)
	}
	e.Bool(s.SetUID)
	if s.SetUID {
		e.Uint32(s.UID)
	}
	e.Bool(s.SetGID)
	if s.SetGID {
		e.Uint32(s.GID)
	}
	e.Bool(s.SetSize)
	if s.SetSize {
		e.Uint64(s.Size)
	}
	for _, t := range [2]*SetTime{&s.Atime, &s.Mtime} {
		e.Uint32(uint32(t.How))
		if t.How == SetToClientTime {
			t.Time.encode(e)
		}
	}
}

// DecodeXDR decodes a sattr3.
func (s *Sattr) DecodeXDR(d *xdr.Decoder) error { return s.decode(d, "sattr3") }

// Field names below are joined only for an error, so that decoding allocates nothing.

func (s *Sattr) decode(d *xdr.Decoder, name string) error {
	*s = Sattr{}
	if err := decodeSetU32(d, &s.SetMode, &s.Mode); err != nil {
		return field(name+".mode", err)
	}
	if err := decodeSetU32(d, &s.SetUID, &s.UID); err != nil {
		return field(name+".uid", err)
	}
	if err := decodeSetU32(d, &s.SetGID, &s.GID); err != nil {
		return field(name+".gid", err)
	}
	var err error
	if s.SetSize, err = d.Bool(); err == nil && s.SetSize {
		s.Size, err = d.Uint64()
	}
	if err != nil {
		return field(name+".size", err)
	}
	if err := s.Atime.decode(d, name, "atime"); err != nil {
		return err
	}
	return s.Mtime.decode(d, name, "mtime")
}

// decodeSetU32 decodes a set_mode3, set_uid3 or set_gid3: a bool, then the value when
// it is TRUE.
func decodeSetU32(d *xdr.Decoder, set *bool, v *uint32) (err error) {
	if *set, err = d.Bool(); err == nil && *set {
		*v, err = d.Uint32()
	}
	return err
}

// decode decodes a set_atime or set_mtime, the field what of parent.
func (t *SetTime) decode(d *xdr.Decoder, parent, what string) error {
	how, err := d.Uint32()
	if err != nil {
		return field(parent+"."+what, err)
	}
	switch TimeHow(how) {
	case DontChange, SetToServerTime:
		t.How, t.Time = TimeHow(how), Time{}
		return nil
	case SetToClientTime:
		t.How = SetToClientTime
		v, err := d.Uint64()
		if err != nil {
			return field(parent+"."+what, err)
		}
		t.Time = Time{Seconds: uint32(v >> 32), Nseconds: uint32(v)}
		return nil
	}
	return badEnum(parent+"."+what+".set_it", how)
}

// DirOpArgs is diropargs3: a name in a directory.
//
//	struct diropargs3 { nfs_fh3 dir; filename3 name; };
type DirOpArgs struct {
	Dir  FH
	Name []byte
}

func (a *DirOpArgs) encode(e *xdr.Encoder) {
	encodeFH(e, a.Dir)
	e.Opaque(a.Name)
}

func (a *DirOpArgs) decode(d *xdr.Decoder, name string) (err error) {
	// As decodeFH and decodeName, with the field names joined only for an error.
	if a.Dir, err = d.Opaque(FHSize); err != nil {
		a.Dir = nil
		return field(name+".dir", err)
	}
	if a.Name, err = d.StringBytes(MaxComponent); err != nil {
		a.Name = nil
		return field(name+".name", err)
	}
	return nil
}

func decodeStatus(d *xdr.Decoder, name string) (Status, error) {
	v, err := d.Uint32()
	if err != nil {
		return 0, field(name+".status", err)
	}
	return Status(v), nil
}
