package nfs4

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// NoArgs is the arguments of an operation that has none: PUTROOTFH, PUTPUBFH, GETFH,
// SAVEFH, RESTOREFH, LOOKUPP, READLINK and ILLEGAL.
type NoArgs struct {
	OpNum OpNum
}

// Op returns the operation.
func (a *NoArgs) Op() OpNum { return a.OpNum }

// EncodeXDR encodes nothing.
func (a *NoArgs) EncodeXDR(e *xdr.Encoder) {}

// DecodeXDR decodes nothing.
func (a *NoArgs) DecodeXDR(d *xdr.Decoder) error { return nil }

// StatusRes is the result of an operation whose result is its status alone: PUTFH,
// PUTPUBFH, PUTROOTFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, VERIFY, NVERIFY,
// DELEGRETURN, RELEASE_LOCKOWNER, DESTROY_SESSION, DESTROY_CLIENTID, FREE_STATEID,
// RECLAIM_COMPLETE, BACKCHANNEL_CTL and ILLEGAL (whose status is NFS4ERR_OP_ILLEGAL).
//
//	struct PUTFH4res { nfsstat4 status; };  (and so on)
type StatusRes struct {
	OpNum  OpNum
	Status Status
}

// Op returns the operation.
func (r *StatusRes) Op() OpNum { return r.OpNum }

// Result returns the status.
func (r *StatusRes) Result() Status { return r.Status }

// EncodeXDR encodes the status.
func (r *StatusRes) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(r.Status)) }

// DecodeXDR decodes the status.
func (r *StatusRes) DecodeXDR(d *xdr.Decoder) (err error) {
	v, err := d.Uint32()
	r.Status = Status(v)
	return opErr(r.OpNum, "4res.status", err)
}

// UnsupportedRes is the result of an operation RFC 8881 defines but this package does
// not decode (pNFS, delegation management, NFSv4.0-only and SSV operations). A server
// answers those with an error status, which this type encodes and decodes; decoding an
// NFS4_OK result fails with ErrUnsupported, since its body is unknown.
type UnsupportedRes struct {
	OpNum  OpNum
	Status Status
}

// Op returns the operation.
func (r *UnsupportedRes) Op() OpNum { return r.OpNum }

// Result returns the status.
func (r *UnsupportedRes) Result() Status { return r.Status }

// EncodeXDR encodes the status; Status must not be NFS4_OK.
func (r *UnsupportedRes) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(r.Status)) }

// DecodeXDR decodes an error status.
func (r *UnsupportedRes) DecodeXDR(d *xdr.Decoder) (err error) {
	v, err := d.Uint32()
	if err != nil {
		return opErr(r.OpNum, "4res.status", err)
	}
	if r.Status = Status(v); r.Status == OK {
		return fmt.Errorf("nfs4: %v4res: result body: %w", r.OpNum, ErrUnsupported)
	}
	return nil
}

// PutfhArgs is PUTFH4args.
//
//	struct PUTFH4args { nfs_fh4 object; };
type PutfhArgs struct {
	Object FH
}

// Op returns OpPutfh.
func (a *PutfhArgs) Op() OpNum { return OpPutfh }

// EncodeXDR encodes PUTFH4args.
func (a *PutfhArgs) EncodeXDR(e *xdr.Encoder) { e.Opaque(a.Object) }

// DecodeXDR decodes PUTFH4args: a handle of at most FHSize bytes, aliasing d's buffer.
func (a *PutfhArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.Object, err = decodeFH(d, "PUTFH4args.object")
	return err
}

// GetfhRes is GETFH4res.
//
//	struct GETFH4resok { nfs_fh4 object; };
//	union GETFH4res switch (nfsstat4 status) { case NFS4_OK: GETFH4resok resok4; default: void; };
type GetfhRes struct {
	Status Status
	Object FH // NFS4_OK only
}

// Op returns OpGetfh.
func (r *GetfhRes) Op() OpNum { return OpGetfh }

// Result returns the status.
func (r *GetfhRes) Result() Status { return r.Status }

// EncodeXDR encodes GETFH4res.
func (r *GetfhRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		e.Opaque(r.Object)
	}
}

// DecodeXDR decodes GETFH4res.
func (r *GetfhRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.Object = nil
	if r.Status, err = decodeStatus(d, "GETFH4res"); err != nil || r.Status != OK {
		return err
	}
	r.Object, err = decodeFH(d, "GETFH4res.object")
	return err
}

// LookupArgs is LOOKUP4args.
//
//	struct LOOKUP4args { component4 objname; };
type LookupArgs struct {
	ObjName []byte
}

// Op returns OpLookup.
func (a *LookupArgs) Op() OpNum { return OpLookup }

// EncodeXDR encodes LOOKUP4args.
func (a *LookupArgs) EncodeXDR(e *xdr.Encoder) { e.Opaque(a.ObjName) }

// DecodeXDR decodes LOOKUP4args; the name is at most MaxComponent bytes.
func (a *LookupArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.ObjName, err = decodeComponent(d, "LOOKUP4args.objname")
	return err
}
