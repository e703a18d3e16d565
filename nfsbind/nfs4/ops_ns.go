package nfs4

import "github.com/go-rpcrdma/rpcrdma/xdr"

// CreateArgs is CREATE4args: make a non-regular file (directory, symlink, device,
// socket or FIFO).
//
//	union createtype4 switch (nfs_ftype4 type) {
//	case NF4LNK: linktext4 linkdata; case NF4BLK: case NF4CHR: specdata4 devdata;
//	case NF4SOCK: case NF4FIFO: case NF4DIR: void; default: void; };
//	struct CREATE4args { createtype4 objtype; component4 objname; fattr4 createattrs; };
//
// The default arm is void, so any type decodes; a server answers NFS4ERR_BADTYPE for
// NF4REG and types it cannot create.
type CreateArgs struct {
	ObjType  FileType
	LinkData []byte    // NF4LNK; at most MaxLinkData bytes
	DevData  SpecData4 // NF4BLK, NF4CHR
	ObjName  []byte
	Mask     Bitmap4
	Attrs    Fattr
}

// Op returns OpCreate.
func (a *CreateArgs) Op() OpNum { return OpCreate }

// EncodeXDR encodes CREATE4args.
func (a *CreateArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(a.ObjType))
	switch a.ObjType {
	case NF4Lnk:
		e.Opaque(a.LinkData)
	case NF4Blk, NF4Chr:
		e.Uint32(a.DevData.Major)
		e.Uint32(a.DevData.Minor)
	}
	e.Opaque(a.ObjName)
	EncodeFattr(e, a.Mask, &a.Attrs)
}

// DecodeXDR decodes CREATE4args.
func (a *CreateArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "CREATE4args"
	t, err := decodeU32(d, n+".objtype")
	if err != nil {
		return err
	}
	a.ObjType, a.LinkData, a.DevData = FileType(t), nil, SpecData4{}
	switch a.ObjType {
	case NF4Lnk:
		if a.LinkData, err = decodeStr(d, MaxLinkData, n+".linkdata"); err != nil {
			return err
		}
	case NF4Blk, NF4Chr:
		if a.DevData.Major, err = decodeU32(d, n+".devdata.specdata1"); err != nil {
			return err
		}
		if a.DevData.Minor, err = decodeU32(d, n+".devdata.specdata2"); err != nil {
			return err
		}
	}
	if a.ObjName, err = decodeComponent(d, n+".objname"); err != nil {
		return err
	}
	return decodeFattr(d, &a.Mask, &a.Attrs, n+".createattrs")
}

// CreateRes is CREATE4res.
//
//	struct CREATE4resok { change_info4 cinfo; bitmap4 attrset; };
type CreateRes struct {
	Status  Status
	Cinfo   ChangeInfo4
	AttrSet Bitmap4
}

// Op returns OpCreate.
func (r *CreateRes) Op() OpNum { return OpCreate }

// Result returns the status.
func (r *CreateRes) Result() Status { return r.Status }

// EncodeXDR encodes CREATE4res.
func (r *CreateRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		r.Cinfo.encode(e)
		r.AttrSet.EncodeXDR(e)
	}
}

// DecodeXDR decodes CREATE4res.
func (r *CreateRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "CREATE4res"); err != nil || r.Status != OK {
		return err
	}
	if err = r.Cinfo.decode(d, "CREATE4res.cinfo"); err != nil {
		return err
	}
	return r.AttrSet.decode(d, "CREATE4res.attrset")
}

// NameArgs is the arguments of REMOVE and LINK: one name.
//
//	struct REMOVE4args { component4 target; };
//	struct LINK4args { component4 newname; };
type NameArgs struct {
	OpNum OpNum // OpRemove or OpLink
	Name  []byte
}

// Op returns OpRemove or OpLink.
func (a *NameArgs) Op() OpNum { return a.OpNum }

// EncodeXDR encodes the name.
func (a *NameArgs) EncodeXDR(e *xdr.Encoder) { e.Opaque(a.Name) }

// DecodeXDR decodes the name.
func (a *NameArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.Name, err = d.StringBytes(MaxComponent)
	return opErr(a.OpNum, "4args.name", err)
}

// CinfoRes is the result of REMOVE and LINK: the directory's change_info4.
//
//	struct REMOVE4resok { change_info4 cinfo; };
//	struct LINK4resok { change_info4 cinfo; };
type CinfoRes struct {
	OpNum  OpNum // OpRemove or OpLink
	Status Status
	Cinfo  ChangeInfo4
}

// Op returns OpRemove or OpLink.
func (r *CinfoRes) Op() OpNum { return r.OpNum }

// Result returns the status.
func (r *CinfoRes) Result() Status { return r.Status }

// EncodeXDR encodes the result.
func (r *CinfoRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		r.Cinfo.encode(e)
	}
}

// DecodeXDR decodes the result.
func (r *CinfoRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.Cinfo = ChangeInfo4{}
	v, err := d.Uint32()
	if err != nil {
		return opErr(r.OpNum, "4res.status", err)
	}
	if r.Status = Status(v); r.Status != OK {
		return nil
	}
	return opErr(r.OpNum, "4res", r.Cinfo.decode(d, "cinfo"))
}

// RenameArgs is RENAME4args (from the saved filehandle's directory to the current one).
//
//	struct RENAME4args { component4 oldname; component4 newname; };
type RenameArgs struct {
	OldName []byte
	NewName []byte
}

// Op returns OpRename.
func (a *RenameArgs) Op() OpNum { return OpRename }

// EncodeXDR encodes RENAME4args.
func (a *RenameArgs) EncodeXDR(e *xdr.Encoder) {
	e.Opaque(a.OldName)
	e.Opaque(a.NewName)
}

// DecodeXDR decodes RENAME4args.
func (a *RenameArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.OldName, err = decodeComponent(d, "RENAME4args.oldname"); err != nil {
		return err
	}
	a.NewName, err = decodeComponent(d, "RENAME4args.newname")
	return err
}

// RenameRes is RENAME4res.
//
//	struct RENAME4resok { change_info4 source_cinfo; change_info4 target_cinfo; };
type RenameRes struct {
	Status      Status
	SourceCinfo ChangeInfo4
	TargetCinfo ChangeInfo4
}

// Op returns OpRename.
func (r *RenameRes) Op() OpNum { return OpRename }

// Result returns the status.
func (r *RenameRes) Result() Status { return r.Status }

// EncodeXDR encodes RENAME4res.
func (r *RenameRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		r.SourceCinfo.encode(e)
		r.TargetCinfo.encode(e)
	}
}

// DecodeXDR decodes RENAME4res.
func (r *RenameRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "RENAME4res"); err != nil || r.Status != OK {
		return err
	}
	if err = r.SourceCinfo.decode(d, "RENAME4res.source_cinfo"); err != nil {
		return err
	}
	return r.TargetCinfo.decode(d, "RENAME4res.target_cinfo")
}

// ReadlinkRes is READLINK4res. RFC 8267 makes the link text DDP-eligible; like Linux,
// this package keeps it in the XDR stream and the reply goes by reply chunk when large.
//
//	struct READLINK4resok { linktext4 link; };
type ReadlinkRes struct {
	Status Status
	Link   []byte // at most MaxPathLen bytes
}

// Op returns OpReadlink.
func (r *ReadlinkRes) Op() OpNum { return OpReadlink }

// Result returns the status.
func (r *ReadlinkRes) Result() Status { return r.Status }

// EncodeXDR encodes READLINK4res.
func (r *ReadlinkRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		e.Opaque(r.Link)
	}
}

// DecodeXDR decodes READLINK4res.
func (r *ReadlinkRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.Link = nil
	if r.Status, err = decodeStatus(d, "READLINK4res"); err != nil || r.Status != OK {
		return err
	}
	r.Link, err = decodeStr(d, MaxPathLen, "READLINK4res.link")
	return err
}
