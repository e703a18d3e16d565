package nfs3

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Message is an XDR-encodable procedure argument or result: every *XxxArgs and *XxxRes
// type of this package implements it.
type Message interface {
	xdr.EncoderTo
	xdr.DecoderFrom
}

// Void is the empty argument or result of NULL and of several MOUNT procedures.
type Void struct{}

// EncodeXDR encodes nothing.
func (Void) EncodeXDR(*xdr.Encoder) {}

// DecodeXDR decodes nothing.
func (*Void) DecodeXDR(*xdr.Decoder) error { return nil }

// FHArgs is the argument of the procedures that take only a file handle: GETATTR3args,
// READLINK3args, FSSTAT3args, FSINFO3args and PATHCONF3args.
//
//	struct GETATTR3args { nfs_fh3 object; };
type FHArgs struct {
	Object FH
}

// Argument types of the procedures that take only a file handle.
type (
	GetattrArgs  = FHArgs // GETATTR3args
	ReadlinkArgs = FHArgs // READLINK3args (symlink)
	FsstatArgs   = FHArgs // FSSTAT3args (fsroot)
	FsinfoArgs   = FHArgs // FSINFO3args (fsroot)
	PathconfArgs = FHArgs // PATHCONF3args
)

// EncodeXDR encodes the file handle.
func (a *FHArgs) EncodeXDR(e *xdr.Encoder) { encodeFH(e, a.Object) }

// DecodeXDR decodes the file handle.
func (a *FHArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.Object, err = decodeFH(d, "args.object")
	return err
}

// GetattrRes is GETATTR3res.
//
//	union GETATTR3res switch (nfsstat3 status) {
//	case NFS3_OK: fattr3 obj_attributes; default: void; };
type GetattrRes struct {
	Status Status
	Attr   Fattr
}

// EncodeXDR encodes GETATTR3res.
func (r *GetattrRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == StatusOK {
		r.Attr.EncodeXDR(e)
	}
}

// DecodeXDR decodes GETATTR3res.
func (r *GetattrRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "GETATTR3res"); err != nil || r.Status != StatusOK {
		return err
	}
	if err := r.Attr.DecodeXDR(d); err != nil {
		return fmt.Errorf("GETATTR3res.obj_attributes: %w", err)
	}
	return nil
}

// SetattrArgs is SETATTR3args. When Guard is set, the server applies the change only if
// the object's ctime equals GuardCtime.
//
//	struct SETATTR3args { nfs_fh3 object; sattr3 new_attributes; sattrguard3 guard; };
//	union sattrguard3 switch (bool check) { case TRUE: nfstime3 obj_ctime; case FALSE: void; };
type SetattrArgs struct {
	Object     FH
	Attr       Sattr
	Guard      bool
	GuardCtime Time
}

// EncodeXDR encodes SETATTR3args.
func (a *SetattrArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.Object)
	a.Attr.EncodeXDR(e)
	e.Bool(a.Guard)
	if a.Guard {
		a.GuardCtime.encode(e)
	}
}

// DecodeXDR decodes SETATTR3args.
func (a *SetattrArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.Object, err = decodeFH(d, "SETATTR3args.object"); err != nil {
		return err
	}
	if err = a.Attr.decode(d, "SETATTR3args.new_attributes"); err != nil {
		return err
	}
	if a.Guard, err = decodeBool(d, "SETATTR3args.guard"); err != nil {
		return err
	}
	a.GuardCtime = Time{}
	if a.Guard {
		return a.GuardCtime.decode(d, "SETATTR3args.guard.obj_ctime")
	}
	return nil
}

// WccRes is the result of procedures that return only weak cache consistency data
// whatever the status: SETATTR3res (obj_wcc), REMOVE3res and RMDIR3res (dir_wcc).
//
//	struct SETATTR3resok { wcc_data obj_wcc; }; struct SETATTR3resfail { wcc_data obj_wcc; };
type WccRes struct {
	Status Status
	Wcc    WccData
}

// Result types of procedures that return only wcc_data.
type (
	SetattrRes = WccRes // SETATTR3res
	RemoveRes  = WccRes // REMOVE3res
	RmdirRes   = WccRes // RMDIR3res
)

// EncodeXDR encodes the status and wcc_data.
func (r *WccRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Wcc.EncodeXDR(e)
}

// DecodeXDR decodes the status and wcc_data.
func (r *WccRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "res"); err != nil {
		return err
	}
	return r.Wcc.decode(d, "res.wcc")
}

// DirOpArgsMsg is the argument of procedures that take only a diropargs3: LOOKUP3args
// (what), REMOVE3args and RMDIR3args (object).
type DirOpArgsMsg struct {
	What DirOpArgs
}

// Argument types of procedures that take only a diropargs3.
type (
	LookupArgs = DirOpArgsMsg // LOOKUP3args
	RemoveArgs = DirOpArgsMsg // REMOVE3args
	RmdirArgs  = DirOpArgsMsg // RMDIR3args
)

// EncodeXDR encodes the diropargs3.
func (a *DirOpArgsMsg) EncodeXDR(e *xdr.Encoder) { a.What.encode(e) }

// DecodeXDR decodes the diropargs3.
func (a *DirOpArgsMsg) DecodeXDR(d *xdr.Decoder) error { return a.What.decode(d, "args") }

// LookupRes is LOOKUP3res.
//
//	struct LOOKUP3resok { nfs_fh3 object; post_op_attr obj_attributes; post_op_attr dir_attributes; };
//	struct LOOKUP3resfail { post_op_attr dir_attributes; };
type LookupRes struct {
	Status  Status
	Object  FH         // NFS3_OK only
	ObjAttr PostOpAttr // NFS3_OK only
	DirAttr PostOpAttr
}

// EncodeXDR encodes LOOKUP3res.
func (r *LookupRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == StatusOK {
		encodeFH(e, r.Object)
		r.ObjAttr.EncodeXDR(e)
	}
	r.DirAttr.EncodeXDR(e)
}

// DecodeXDR decodes LOOKUP3res.
func (r *LookupRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "LOOKUP3res"); err != nil {
		return err
	}
	r.Object, r.ObjAttr.Present = nil, false
	if r.Status == StatusOK {
		if r.Object, err = decodeFH(d, "LOOKUP3res.object"); err != nil {
			return err
		}
		if err = r.ObjAttr.decode(d, "LOOKUP3res.obj_attributes"); err != nil {
			return err
		}
	}
	return r.DirAttr.decode(d, "LOOKUP3res.dir_attributes")
}

// AccessArgs is ACCESS3args.
//
//	struct ACCESS3args { nfs_fh3 object; uint32 access; };
type AccessArgs struct {
	Object FH
	Access uint32 // Access* bits
}

// EncodeXDR encodes ACCESS3args.
func (a *AccessArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.Object)
	e.Uint32(a.Access)
}

// DecodeXDR decodes ACCESS3args.
func (a *AccessArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.Object, err = decodeFH(d, "ACCESS3args.object"); err != nil {
		return err
	}
	a.Access, err = decodeU32(d, "ACCESS3args.access")
	return err
}

// AccessRes is ACCESS3res.
//
//	struct ACCESS3resok { post_op_attr obj_attributes; uint32 access; };
//	struct ACCESS3resfail { post_op_attr obj_attributes; };
type AccessRes struct {
	Status Status
	Attr   PostOpAttr
	Access uint32 // NFS3_OK only
}

// EncodeXDR encodes ACCESS3res.
func (r *AccessRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Attr.EncodeXDR(e)
	if r.Status == StatusOK {
		e.Uint32(r.Access)
	}
}

// DecodeXDR decodes ACCESS3res.
func (r *AccessRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "ACCESS3res"); err != nil {
		return err
	}
	if err = r.Attr.decode(d, "ACCESS3res.obj_attributes"); err != nil {
		return err
	}
	r.Access = 0
	if r.Status == StatusOK {
		r.Access, err = decodeU32(d, "ACCESS3res.access")
	}
	return err
}

// ReadlinkRes is READLINK3res.
//
//	struct READLINK3resok { post_op_attr symlink_attributes; nfspath3 data; };
//	struct READLINK3resfail { post_op_attr symlink_attributes; };
type ReadlinkRes struct {
	Status Status
	Attr   PostOpAttr
	Data   []byte // NFS3_OK only: the link's target
}

// EncodeXDR encodes READLINK3res.
func (r *ReadlinkRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Attr.EncodeXDR(e)
	if r.Status == StatusOK {
		e.Opaque(r.Data)
	}
}

// DecodeXDR decodes READLINK3res.
func (r *ReadlinkRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "READLINK3res"); err != nil {
		return err
	}
	if err = r.Attr.decode(d, "READLINK3res.symlink_attributes"); err != nil {
		return err
	}
	r.Data = nil
	if r.Status == StatusOK {
		r.Data, err = decodeNFSPath(d, "READLINK3res.data")
	}
	return err
}

// ReadArgs is READ3args.
//
//	struct READ3args { nfs_fh3 file; offset3 offset; count3 count; };
type ReadArgs struct {
	File   FH
	Offset uint64
	Count  uint32
}

// EncodeXDR encodes READ3args.
func (a *ReadArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.File)
	e.Uint64(a.Offset)
	e.Uint32(a.Count)
}

// DecodeXDR decodes READ3args. Count is not limited here: RFC 1813 lets the server
// return fewer bytes than asked, so a server clamps it to its rtmax.
func (a *ReadArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.File, err = decodeFH(d, "READ3args.file"); err != nil {
		return err
	}
	if a.Offset, err = decodeU64(d, "READ3args.offset"); err != nil {
		return err
	}
	a.Count, err = decodeU32(d, "READ3args.count")
	return err
}

// ReadRes is READ3res. Data is DDP-eligible (RFC 8267 §5): EncodeXDR writes it with
// xdr.Encoder.Payload and DecodeXDR reads it with xdr.Decoder.Payload, so it may travel
// in an RDMA write chunk.
//
//	struct READ3resok { post_op_attr file_attributes; count3 count; bool eof; opaque data<>; };
//	struct READ3resfail { post_op_attr file_attributes; };
type ReadRes struct {
	Status Status
	Attr   PostOpAttr
	Count  uint32 // NFS3_OK only; equals len(Data)
	EOF    bool   // NFS3_OK only
	Data   []byte // NFS3_OK only
}

// EncodeXDR encodes READ3res; Count is written as given.
func (r *ReadRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Attr.EncodeXDR(e)
	if r.Status == StatusOK {
		e.Uint32(r.Count)
		e.Bool(r.EOF)
		e.Payload(r.Data)
	}
}

// DecodeXDR decodes READ3res. Data aliases the placed buffer or the decoder's input.
func (r *ReadRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "READ3res"); err != nil {
		return err
	}
	if err = r.Attr.decode(d, "READ3res.file_attributes"); err != nil {
		return err
	}
	r.Count, r.EOF, r.Data = 0, false, nil
	if r.Status != StatusOK {
		return nil
	}
	if r.Count, err = decodeU32(d, "READ3res.count"); err != nil {
		return err
	}
	if r.EOF, err = decodeBool(d, "READ3res.eof"); err != nil {
		return err
	}
	if r.Data, err = d.Payload(MaxData); err != nil {
		return field("READ3res.data", err)
	}
	if uint64(len(r.Data)) != uint64(r.Count) {
		return fmt.Errorf("nfs3: READ3res.count %d, data %d bytes: %w", r.Count, len(r.Data), ErrCountMismatch)
	}
	return nil
}

// WriteArgs is WRITE3args. Data is DDP-eligible (RFC 8267 §5): EncodeXDR writes it with
// xdr.Encoder.Payload so it may travel in an RDMA read chunk, and the caller must keep
// it unchanged until the call has been sent.
//
//	struct WRITE3args { nfs_fh3 file; offset3 offset; count3 count; stable_how stable; opaque data<>; };
type WriteArgs struct {
	File   FH
	Offset uint64
	Count  uint32
	Stable StableHow
	Data   []byte
}

// EncodeXDR encodes WRITE3args; Count is written as given.
func (a *WriteArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.File)
	e.Uint64(a.Offset)
	e.Uint32(a.Count)
	e.Uint32(uint32(a.Stable))
	e.Payload(a.Data)
}

// DecodeXDR decodes WRITE3args: data is at most MaxData bytes, stable a defined
// stable_how, and count must equal the data's length.
func (a *WriteArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.File, err = decodeFH(d, "WRITE3args.file"); err != nil {
		return err
	}
	if a.Offset, err = decodeU64(d, "WRITE3args.offset"); err != nil {
		return err
	}
	if a.Count, err = decodeU32(d, "WRITE3args.count"); err != nil {
		return err
	}
	stable, err := decodeU32(d, "WRITE3args.stable")
	if err != nil {
		return err
	}
	if stable > uint32(FileSync) {
		return badEnum("WRITE3args.stable", stable)
	}
	a.Stable = StableHow(stable)
	if a.Data, err = d.Payload(MaxData); err != nil {
		return field("WRITE3args.data", err)
	}
	if uint64(len(a.Data)) != uint64(a.Count) {
		return fmt.Errorf("nfs3: WRITE3args.count %d, data %d bytes: %w", a.Count, len(a.Data), ErrCountMismatch)
	}
	return nil
}

// WriteRes is WRITE3res.
//
//	struct WRITE3resok { wcc_data file_wcc; count3 count; stable_how committed; writeverf3 verf; };
//	struct WRITE3resfail { wcc_data file_wcc; };
type WriteRes struct {
	Status    Status
	Wcc       WccData
	Count     uint32    // NFS3_OK only
	Committed StableHow // NFS3_OK only
	Verf      [WriteVerfSize]byte
}

// EncodeXDR encodes WRITE3res.
func (r *WriteRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Wcc.EncodeXDR(e)
	if r.Status == StatusOK {
		e.Uint32(r.Count)
		e.Uint32(uint32(r.Committed))
		e.FixedOpaque(r.Verf[:])
	}
}

// DecodeXDR decodes WRITE3res.
func (r *WriteRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "WRITE3res"); err != nil {
		return err
	}
	if err = r.Wcc.decode(d, "WRITE3res.file_wcc"); err != nil {
		return err
	}
	r.Count, r.Committed, r.Verf = 0, 0, [WriteVerfSize]byte{}
	if r.Status != StatusOK {
		return nil
	}
	if r.Count, err = decodeU32(d, "WRITE3res.count"); err != nil {
		return err
	}
	c, err := decodeU32(d, "WRITE3res.committed")
	if err != nil {
		return err
	}
	if c > uint32(FileSync) {
		return badEnum("WRITE3res.committed", c)
	}
	r.Committed = StableHow(c)
	return decodeFixed8(d, &r.Verf, "WRITE3res.verf")
}

// CreateArgs is CREATE3args. Attr is used with UNCHECKED and GUARDED, Verf with
// EXCLUSIVE.
//
//	struct CREATE3args { diropargs3 where; createhow3 how; };
//	union createhow3 switch (createmode3 mode) {
//	case UNCHECKED: case GUARDED: sattr3 obj_attributes;
//	case EXCLUSIVE: createverf3 verf; };
type CreateArgs struct {
	Where DirOpArgs
	Mode  CreateMode
	Attr  Sattr
	Verf  [CreateVerfSize]byte
}

// EncodeXDR encodes CREATE3args.
func (a *CreateArgs) EncodeXDR(e *xdr.Encoder) {
	a.Where.encode(e)
	e.Uint32(uint32(a.Mode))
	if a.Mode == Exclusive {
		e.FixedOpaque(a.Verf[:])
	} else {
		a.Attr.EncodeXDR(e)
	}
}

// DecodeXDR decodes CREATE3args.
func (a *CreateArgs) DecodeXDR(d *xdr.Decoder) error {
	if err := a.Where.decode(d, "CREATE3args.where"); err != nil {
		return err
	}
	m, err := decodeU32(d, "CREATE3args.how.mode")
	if err != nil {
		return err
	}
	a.Mode, a.Attr, a.Verf = CreateMode(m), Sattr{}, [CreateVerfSize]byte{}
	switch a.Mode {
	case Unchecked, Guarded:
		return a.Attr.decode(d, "CREATE3args.how.obj_attributes")
	case Exclusive:
		return decodeFixed8(d, &a.Verf, "CREATE3args.how.verf")
	}
	return badEnum("CREATE3args.how.mode", m)
}

// CreateRes is the result of CREATE, MKDIR, SYMLINK and MKNOD (CREATE3res, MKDIR3res,
// SYMLINK3res, MKNOD3res share one layout).
//
//	struct CREATE3resok { post_op_fh3 obj; post_op_attr obj_attributes; wcc_data dir_wcc; };
//	struct CREATE3resfail { wcc_data dir_wcc; };
type CreateRes struct {
	Status  Status
	Obj     PostOpFH   // NFS3_OK only
	ObjAttr PostOpAttr // NFS3_OK only
	DirWcc  WccData
}

// Result types that share CREATE3res's layout.
type (
	MkdirRes   = CreateRes // MKDIR3res
	SymlinkRes = CreateRes // SYMLINK3res
	MknodRes   = CreateRes // MKNOD3res
)

// EncodeXDR encodes the result.
func (r *CreateRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == StatusOK {
		r.Obj.encode(e)
		r.ObjAttr.EncodeXDR(e)
	}
	r.DirWcc.EncodeXDR(e)
}

// DecodeXDR decodes the result.
func (r *CreateRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "CREATE3res"); err != nil {
		return err
	}
	r.Obj, r.ObjAttr.Present = PostOpFH{}, false
	if r.Status == StatusOK {
		if err = r.Obj.decode(d, "CREATE3res.obj"); err != nil {
			return err
		}
		if err = r.ObjAttr.decode(d, "CREATE3res.obj_attributes"); err != nil {
			return err
		}
	}
	return r.DirWcc.decode(d, "CREATE3res.dir_wcc")
}

// MkdirArgs is MKDIR3args.
//
//	struct MKDIR3args { diropargs3 where; sattr3 attributes; };
type MkdirArgs struct {
	Where DirOpArgs
	Attr  Sattr
}

// EncodeXDR encodes MKDIR3args.
func (a *MkdirArgs) EncodeXDR(e *xdr.Encoder) {
	a.Where.encode(e)
	a.Attr.EncodeXDR(e)
}

// DecodeXDR decodes MKDIR3args.
func (a *MkdirArgs) DecodeXDR(d *xdr.Decoder) error {
	if err := a.Where.decode(d, "MKDIR3args.where"); err != nil {
		return err
	}
	return a.Attr.decode(d, "MKDIR3args.attributes")
}

// SymlinkArgs is SYMLINK3args.
//
//	struct SYMLINK3args { diropargs3 where; symlinkdata3 symlink; };
//	struct symlinkdata3 { sattr3 symlink_attributes; nfspath3 symlink_data; };
type SymlinkArgs struct {
	Where DirOpArgs
	Attr  Sattr
	Data  []byte // the link's target
}

// EncodeXDR encodes SYMLINK3args.
func (a *SymlinkArgs) EncodeXDR(e *xdr.Encoder) {
	a.Where.encode(e)
	a.Attr.EncodeXDR(e)
	e.Opaque(a.Data)
}

// DecodeXDR decodes SYMLINK3args.
func (a *SymlinkArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if err = a.Where.decode(d, "SYMLINK3args.where"); err != nil {
		return err
	}
	if err = a.Attr.decode(d, "SYMLINK3args.symlink.symlink_attributes"); err != nil {
		return err
	}
	a.Data, err = decodeStringBytes(d, MaxSymlinkData, "SYMLINK3args.symlink.symlink_data")
	return err
}

// MknodArgs is MKNOD3args. Attr applies to every type but NF3REG, NF3DIR and NF3LNK,
// for which the union is void (the server answers NFS3ERR_BADTYPE); Spec to NF3CHR and
// NF3BLK.
//
//	struct MKNOD3args { diropargs3 where; mknoddata3 what; };
//	union mknoddata3 switch (ftype3 type) {
//	case NF3CHR: case NF3BLK: devicedata3 device;
//	case NF3SOCK: case NF3FIFO: sattr3 pipe_attributes; default: void; };
//	struct devicedata3 { sattr3 dev_attributes; specdata3 spec; };
type MknodArgs struct {
	Where DirOpArgs
	Type  FileType
	Attr  Sattr
	Spec  SpecData
}

// EncodeXDR encodes MKNOD3args.
func (a *MknodArgs) EncodeXDR(e *xdr.Encoder) {
	a.Where.encode(e)
	e.Uint32(uint32(a.Type))
	switch a.Type {
	case TypeChr, TypeBlk:
		a.Attr.EncodeXDR(e)
		e.Uint32(a.Spec.Major)
		e.Uint32(a.Spec.Minor)
	case TypeSock, TypeFifo:
		a.Attr.EncodeXDR(e)
	}
}

// DecodeXDR decodes MKNOD3args; the type must be a defined ftype3.
func (a *MknodArgs) DecodeXDR(d *xdr.Decoder) error {
	if err := a.Where.decode(d, "MKNOD3args.where"); err != nil {
		return err
	}
	t, err := decodeU32(d, "MKNOD3args.what.type")
	if err != nil {
		return err
	}
	if !FileType(t).Valid() {
		return badEnum("MKNOD3args.what.type", t)
	}
	a.Type, a.Attr, a.Spec = FileType(t), Sattr{}, SpecData{}
	switch a.Type {
	case TypeChr, TypeBlk:
		if err := a.Attr.decode(d, "MKNOD3args.what.device.dev_attributes"); err != nil {
			return err
		}
		if a.Spec.Major, err = decodeU32(d, "MKNOD3args.what.device.spec"); err != nil {
			return err
		}
		a.Spec.Minor, err = decodeU32(d, "MKNOD3args.what.device.spec")
		return err
	case TypeSock, TypeFifo:
		return a.Attr.decode(d, "MKNOD3args.what.pipe_attributes")
	}
	return nil
}

// RenameArgs is RENAME3args.
//
//	struct RENAME3args { diropargs3 from; diropargs3 to; };
type RenameArgs struct {
	From, To DirOpArgs
}

// EncodeXDR encodes RENAME3args.
func (a *RenameArgs) EncodeXDR(e *xdr.Encoder) {
	a.From.encode(e)
	a.To.encode(e)
}

// DecodeXDR decodes RENAME3args.
func (a *RenameArgs) DecodeXDR(d *xdr.Decoder) error {
	if err := a.From.decode(d, "RENAME3args.from"); err != nil {
		return err
	}
	return a.To.decode(d, "RENAME3args.to")
}

// RenameRes is RENAME3res (the same for success and failure).
//
//	struct RENAME3resok { wcc_data fromdir_wcc; wcc_data todir_wcc; };
type RenameRes struct {
	Status     Status
	FromDirWcc WccData
	ToDirWcc   WccData
}

// EncodeXDR encodes RENAME3res.
func (r *RenameRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.FromDirWcc.EncodeXDR(e)
	r.ToDirWcc.EncodeXDR(e)
}

// DecodeXDR decodes RENAME3res.
func (r *RenameRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "RENAME3res"); err != nil {
		return err
	}
	if err = r.FromDirWcc.decode(d, "RENAME3res.fromdir_wcc"); err != nil {
		return err
	}
	return r.ToDirWcc.decode(d, "RENAME3res.todir_wcc")
}

// LinkArgs is LINK3args.
//
//	struct LINK3args { nfs_fh3 file; diropargs3 link; };
type LinkArgs struct {
	File FH
	Link DirOpArgs
}

// EncodeXDR encodes LINK3args.
func (a *LinkArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.File)
	a.Link.encode(e)
}

// DecodeXDR decodes LINK3args.
func (a *LinkArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.File, err = decodeFH(d, "LINK3args.file"); err != nil {
		return err
	}
	return a.Link.decode(d, "LINK3args.link")
}

// LinkRes is LINK3res (the same for success and failure).
//
//	struct LINK3resok { post_op_attr file_attributes; wcc_data linkdir_wcc; };
type LinkRes struct {
	Status     Status
	FileAttr   PostOpAttr
	LinkDirWcc WccData
}

// EncodeXDR encodes LINK3res.
func (r *LinkRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.FileAttr.EncodeXDR(e)
	r.LinkDirWcc.EncodeXDR(e)
}

// DecodeXDR decodes LINK3res.
func (r *LinkRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "LINK3res"); err != nil {
		return err
	}
	if err = r.FileAttr.decode(d, "LINK3res.file_attributes"); err != nil {
		return err
	}
	return r.LinkDirWcc.decode(d, "LINK3res.linkdir_wcc")
}

// FsstatRes is FSSTAT3res.
//
//	struct FSSTAT3resok { post_op_attr obj_attributes; size3 tbytes; size3 fbytes; size3 abytes;
//	   size3 tfiles; size3 ffiles; size3 afiles; uint32 invarsec; };
//	struct FSSTAT3resfail { post_op_attr obj_attributes; };
type FsstatRes struct {
	Status                 Status
	Attr                   PostOpAttr
	Tbytes, Fbytes, Abytes uint64
	Tfiles, Ffiles, Afiles uint64
	Invarsec               uint32
}

// EncodeXDR encodes FSSTAT3res.
func (r *FsstatRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Attr.EncodeXDR(e)
	if r.Status == StatusOK {
		for _, v := range [6]uint64{r.Tbytes, r.Fbytes, r.Abytes, r.Tfiles, r.Ffiles, r.Afiles} {
			e.Uint64(v)
		}
		e.Uint32(r.Invarsec)
	}
}

// DecodeXDR decodes FSSTAT3res.
func (r *FsstatRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "FSSTAT3res"); err != nil {
		return err
	}
	if err = r.Attr.decode(d, "FSSTAT3res.obj_attributes"); err != nil {
		return err
	}
	st := r.Status
	*r = FsstatRes{Status: st, Attr: r.Attr}
	if st != StatusOK {
		return nil
	}
	if d.Len() < 52 {
		_, err := d.FixedOpaque(52)
		return field("FSSTAT3resok", err)
	}
	for _, p := range [6]*uint64{&r.Tbytes, &r.Fbytes, &r.Abytes, &r.Tfiles, &r.Ffiles, &r.Afiles} {
		*p, _ = d.Uint64()
	}
	r.Invarsec, _ = d.Uint32()
	return nil
}

// FsinfoRes is FSINFO3res.
//
//	struct FSINFO3resok { post_op_attr obj_attributes; uint32 rtmax; uint32 rtpref;
//	   uint32 rtmult; uint32 wtmax; uint32 wtpref; uint32 wtmult; uint32 dtpref;
//	   size3 maxfilesize; nfstime3 time_delta; uint32 properties; };
//	struct FSINFO3resfail { post_op_attr obj_attributes; };
type FsinfoRes struct {
	Status                Status
	Attr                  PostOpAttr
	Rtmax, Rtpref, Rtmult uint32
	Wtmax, Wtpref, Wtmult uint32
	Dtpref                uint32
	MaxFileSize           uint64
	TimeDelta             Time
	Properties            uint32 // FSF* bits
}

// EncodeXDR encodes FSINFO3res.
func (r *FsinfoRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Attr.EncodeXDR(e)
	if r.Status == StatusOK {
		for _, v := range [7]uint32{r.Rtmax, r.Rtpref, r.Rtmult, r.Wtmax, r.Wtpref, r.Wtmult, r.Dtpref} {
			e.Uint32(v)
		}
		e.Uint64(r.MaxFileSize)
		r.TimeDelta.encode(e)
		e.Uint32(r.Properties)
	}
}

// DecodeXDR decodes FSINFO3res.
func (r *FsinfoRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "FSINFO3res"); err != nil {
		return err
	}
	if err = r.Attr.decode(d, "FSINFO3res.obj_attributes"); err != nil {
		return err
	}
	st := r.Status
	*r = FsinfoRes{Status: st, Attr: r.Attr}
	if st != StatusOK {
		return nil
	}
	if d.Len() < 48 {
		_, err := d.FixedOpaque(48)
		return field("FSINFO3resok", err)
	}
	for _, p := range [7]*uint32{&r.Rtmax, &r.Rtpref, &r.Rtmult, &r.Wtmax, &r.Wtpref, &r.Wtmult, &r.Dtpref} {
		*p, _ = d.Uint32()
	}
	r.MaxFileSize, _ = d.Uint64()
	_ = r.TimeDelta.decode(d, "")
	r.Properties, _ = d.Uint32()
	return nil
}

// PathconfRes is PATHCONF3res.
//
//	struct PATHCONF3resok { post_op_attr obj_attributes; uint32 linkmax; uint32 name_max;
//	   bool no_trunc; bool chown_restricted; bool case_insensitive; bool case_preserving; };
//	struct PATHCONF3resfail { post_op_attr obj_attributes; };
type PathconfRes struct {
	Status          Status
	Attr            PostOpAttr
	Linkmax         uint32
	NameMax         uint32
	NoTrunc         bool
	ChownRestricted bool
	CaseInsensitive bool
	CasePreserving  bool
}

// EncodeXDR encodes PATHCONF3res.
func (r *PathconfRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Attr.EncodeXDR(e)
	if r.Status == StatusOK {
		e.Uint32(r.Linkmax)
		e.Uint32(r.NameMax)
		e.Bool(r.NoTrunc)
		e.Bool(r.ChownRestricted)
		e.Bool(r.CaseInsensitive)
		e.Bool(r.CasePreserving)
	}
}

// DecodeXDR decodes PATHCONF3res.
func (r *PathconfRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "PATHCONF3res"); err != nil {
		return err
	}
	if err = r.Attr.decode(d, "PATHCONF3res.obj_attributes"); err != nil {
		return err
	}
	st := r.Status
	*r = PathconfRes{Status: st, Attr: r.Attr}
	if st != StatusOK {
		return nil
	}
	if r.Linkmax, err = decodeU32(d, "PATHCONF3res.linkmax"); err != nil {
		return err
	}
	if r.NameMax, err = decodeU32(d, "PATHCONF3res.name_max"); err != nil {
		return err
	}
	for _, f := range [4]struct {
		p    *bool
		name string
	}{{&r.NoTrunc, "PATHCONF3res.no_trunc"}, {&r.ChownRestricted, "PATHCONF3res.chown_restricted"},
		{&r.CaseInsensitive, "PATHCONF3res.case_insensitive"}, {&r.CasePreserving, "PATHCONF3res.case_preserving"}} {
		if *f.p, err = decodeBool(d, f.name); err != nil {
			return err
		}
	}
	return nil
}

// CommitArgs is COMMIT3args.
//
//	struct COMMIT3args { nfs_fh3 file; offset3 offset; count3 count; };
type CommitArgs struct {
	File   FH
	Offset uint64
	Count  uint32
}

// EncodeXDR encodes COMMIT3args.
func (a *CommitArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.File)
	e.Uint64(a.Offset)
	e.Uint32(a.Count)
}

// DecodeXDR decodes COMMIT3args.
func (a *CommitArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.File, err = decodeFH(d, "COMMIT3args.file"); err != nil {
		return err
	}
	if a.Offset, err = decodeU64(d, "COMMIT3args.offset"); err != nil {
		return err
	}
	a.Count, err = decodeU32(d, "COMMIT3args.count")
	return err
}

// CommitRes is COMMIT3res.
//
//	struct COMMIT3resok { wcc_data file_wcc; writeverf3 verf; };
//	struct COMMIT3resfail { wcc_data file_wcc; };
type CommitRes struct {
	Status Status
	Wcc    WccData
	Verf   [WriteVerfSize]byte // NFS3_OK only
}

// EncodeXDR encodes COMMIT3res.
func (r *CommitRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.Wcc.EncodeXDR(e)
	if r.Status == StatusOK {
		e.FixedOpaque(r.Verf[:])
	}
}

// DecodeXDR decodes COMMIT3res.
func (r *CommitRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "COMMIT3res"); err != nil {
		return err
	}
	if err = r.Wcc.decode(d, "COMMIT3res.file_wcc"); err != nil {
		return err
	}
	r.Verf = [WriteVerfSize]byte{}
	if r.Status == StatusOK {
		return decodeFixed8(d, &r.Verf, "COMMIT3res.verf")
	}
	return nil
}
