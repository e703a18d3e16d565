package nfs4

import "github.com/go-rpcrdma/rpcrdma/xdr"

// GetattrArgs is GETATTR4args.
//
//	struct GETATTR4args { bitmap4 attr_request; };
type GetattrArgs struct {
	AttrRequest Bitmap4
}

// Op returns OpGetattr.
func (a *GetattrArgs) Op() OpNum { return OpGetattr }

// EncodeXDR encodes GETATTR4args.
func (a *GetattrArgs) EncodeXDR(e *xdr.Encoder) { a.AttrRequest.EncodeXDR(e) }

// DecodeXDR decodes GETATTR4args, reusing the bitmap's storage. Bits this package does
// not support are kept: a server ANDs the request with what it supports.
func (a *GetattrArgs) DecodeXDR(d *xdr.Decoder) error {
	return a.AttrRequest.decode(d, "GETATTR4args.attr_request")
}

// GetattrRes is GETATTR4res. EncodeXDR writes the attributes in Mask from Attr with
// EncodeFattr, so Mask must be within SupportedAttrs.
//
//	struct GETATTR4resok { fattr4 obj_attributes; };
type GetattrRes struct {
	Status Status
	Mask   Bitmap4 // NFS4_OK only
	Attr   Fattr   // NFS4_OK only
}

// Op returns OpGetattr.
func (r *GetattrRes) Op() OpNum { return OpGetattr }

// Result returns the status.
func (r *GetattrRes) Result() Status { return r.Status }

// EncodeXDR encodes GETATTR4res.
func (r *GetattrRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		EncodeFattr(e, r.Mask, &r.Attr)
	}
}

// DecodeXDR decodes GETATTR4res.
func (r *GetattrRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.Mask = r.Mask[:0]
	if r.Status, err = decodeStatus(d, "GETATTR4res"); err != nil || r.Status != OK {
		return err
	}
	return decodeFattr(d, &r.Mask, &r.Attr, "GETATTR4res.obj_attributes")
}

// SetattrArgs is SETATTR4args.
//
//	struct SETATTR4args { stateid4 stateid; fattr4 obj_attributes; };
type SetattrArgs struct {
	Stateid Stateid4
	Mask    Bitmap4
	Attr    Fattr
}

// Op returns OpSetattr.
func (a *SetattrArgs) Op() OpNum { return OpSetattr }

// EncodeXDR encodes SETATTR4args.
func (a *SetattrArgs) EncodeXDR(e *xdr.Encoder) {
	a.Stateid.EncodeXDR(e)
	EncodeFattr(e, a.Mask, &a.Attr)
}

// DecodeXDR decodes SETATTR4args; see DecodeFattr for the attributes it refuses.
func (a *SetattrArgs) DecodeXDR(d *xdr.Decoder) error {
	if err := a.Stateid.decode(d, "SETATTR4args.stateid"); err != nil {
		return err
	}
	return decodeFattr(d, &a.Mask, &a.Attr, "SETATTR4args.obj_attributes")
}

// SetattrRes is SETATTR4res; attrsset is present whatever the status.
//
//	struct SETATTR4res { nfsstat4 status; bitmap4 attrsset; };
type SetattrRes struct {
	Status   Status
	AttrsSet Bitmap4
}

// Op returns OpSetattr.
func (r *SetattrRes) Op() OpNum { return OpSetattr }

// Result returns the status.
func (r *SetattrRes) Result() Status { return r.Status }

// EncodeXDR encodes SETATTR4res.
func (r *SetattrRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	r.AttrsSet.EncodeXDR(e)
}

// DecodeXDR decodes SETATTR4res.
func (r *SetattrRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "SETATTR4res"); err != nil {
		return err
	}
	return r.AttrsSet.decode(d, "SETATTR4res.attrsset")
}

// VerifyArgs is VERIFY4args and NVERIFY4args; the result is a StatusRes. The attributes
// stay encoded (Fattr4) for a byte-wise comparison.
//
//	struct VERIFY4args { fattr4 obj_attributes; };
type VerifyArgs struct {
	OpNum OpNum // OpVerify or OpNverify
	Attrs Fattr4
}

// Op returns OpVerify or OpNverify.
func (a *VerifyArgs) Op() OpNum { return a.OpNum }

// EncodeXDR encodes the fattr4.
func (a *VerifyArgs) EncodeXDR(e *xdr.Encoder) { a.Attrs.EncodeXDR(e) }

// DecodeXDR decodes the fattr4 without decoding its values.
func (a *VerifyArgs) DecodeXDR(d *xdr.Decoder) error {
	return opErr(a.OpNum, "4args.obj_attributes", a.Attrs.decode(d, "fattr4"))
}

// AccessArgs is ACCESS4args.
//
//	struct ACCESS4args { uint32_t access; };
type AccessArgs struct {
	Access uint32 // ACCESS4_* bits
}

// Op returns OpAccess.
func (a *AccessArgs) Op() OpNum { return OpAccess }

// EncodeXDR encodes ACCESS4args.
func (a *AccessArgs) EncodeXDR(e *xdr.Encoder) { e.Uint32(a.Access) }

// DecodeXDR decodes ACCESS4args.
func (a *AccessArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.Access, err = decodeU32(d, "ACCESS4args.access")
	return err
}

// AccessRes is ACCESS4res.
//
//	struct ACCESS4resok { uint32_t supported; uint32_t access; };
type AccessRes struct {
	Status    Status
	Supported uint32
	Access    uint32
}

// Op returns OpAccess.
func (r *AccessRes) Op() OpNum { return OpAccess }

// Result returns the status.
func (r *AccessRes) Result() Status { return r.Status }

// EncodeXDR encodes ACCESS4res.
func (r *AccessRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		e.Uint32(r.Supported)
		e.Uint32(r.Access)
	}
}

// DecodeXDR decodes ACCESS4res.
func (r *AccessRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "ACCESS4res"); err != nil || r.Status != OK {
		return err
	}
	if r.Supported, err = decodeU32(d, "ACCESS4res.supported"); err != nil {
		return err
	}
	r.Access, err = decodeU32(d, "ACCESS4res.access")
	return err
}
