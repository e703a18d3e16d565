package nfs4

import "github.com/go-rpcrdma/rpcrdma/xdr"

// ReadArgs is READ4args. Decoding into a reused value does not allocate.
//
//	struct READ4args { stateid4 stateid; offset4 offset; count4 count; };
type ReadArgs struct {
	Stateid Stateid4
	Offset  uint64
	Count   uint32
}

// Op returns OpRead.
func (a *ReadArgs) Op() OpNum { return OpRead }

// EncodeXDR encodes READ4args.
func (a *ReadArgs) EncodeXDR(e *xdr.Encoder) {
	a.Stateid.EncodeXDR(e)
	e.Uint64(a.Offset)
	e.Uint32(a.Count)
}

// DecodeXDR decodes READ4args. Count is not limited here: a server may return fewer
// bytes than asked, so it clamps Count to its maximum.
func (a *ReadArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if err = a.Stateid.decode(d, "READ4args.stateid"); err != nil {
		return err
	}
	if d.Len() < 12 {
		_, err = d.FixedOpaque(12)
		return field("READ4args", err)
	}
	a.Offset, _ = d.Uint64()
	a.Count, _ = d.Uint32()
	return nil
}

// ReadRes is READ4res. Data is DDP-eligible (RFC 8267): EncodeXDR writes it with
// xdr.Encoder.Payload and DecodeXDR reads it with xdr.Decoder.Payload, so over RDMA it
// moves in the write chunk that belongs to this READ's position in the COMPOUND.
//
//	struct READ4resok { bool eof; opaque data<>; };
type ReadRes struct {
	Status Status
	EOF    bool   // NFS4_OK only
	Data   []byte // NFS4_OK only; at most MaxData bytes
}

// Op returns OpRead.
func (r *ReadRes) Op() OpNum { return OpRead }

// Result returns the status.
func (r *ReadRes) Result() Status { return r.Status }

// EncodeXDR encodes READ4res; the caller keeps Data unchanged until the reply is sent.
func (r *ReadRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		e.Bool(r.EOF)
		e.Payload(r.Data)
	}
}

// DecodeXDR decodes READ4res. Data aliases the placed buffer or the decoder's input.
func (r *ReadRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.EOF, r.Data = false, nil
	if r.Status, err = decodeStatus(d, "READ4res"); err != nil || r.Status != OK {
		return err
	}
	if r.EOF, err = decodeBool(d, "READ4res.eof"); err != nil {
		return err
	}
	if r.Data, err = d.Payload(MaxData); err != nil {
		return field("READ4res.data", err)
	}
	return nil
}

// WriteArgs is WRITE4args. Data is DDP-eligible (RFC 8267): EncodeXDR writes it with
// xdr.Encoder.Payload so it may travel in an RDMA read chunk, and DecodeXDR reads it with
// xdr.Decoder.Payload. Decoding into a reused value does not allocate.
//
//	struct WRITE4args { stateid4 stateid; offset4 offset; stable_how4 stable; opaque data<>; };
type WriteArgs struct {
	Stateid Stateid4
	Offset  uint64
	Stable  StableHow
	Data    []byte // at most MaxData bytes
}

// Op returns OpWrite.
func (a *WriteArgs) Op() OpNum { return OpWrite }

// EncodeXDR encodes WRITE4args; the caller keeps Data unchanged until the call is sent.
func (a *WriteArgs) EncodeXDR(e *xdr.Encoder) {
	a.Stateid.EncodeXDR(e)
	e.Uint64(a.Offset)
	e.Uint32(uint32(a.Stable))
	e.Payload(a.Data)
}

// DecodeXDR decodes WRITE4args; stable must be a defined stable_how4.
func (a *WriteArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if err = a.Stateid.decode(d, "WRITE4args.stateid"); err != nil {
		return err
	}
	if d.Len() < 12 {
		_, err = d.FixedOpaque(12)
		return field("WRITE4args", err)
	}
	a.Offset, _ = d.Uint64()
	stable, _ := d.Uint32()
	if stable > uint32(FileSync4) {
		return badEnum("WRITE4args.stable", stable)
	}
	a.Stable = StableHow(stable)
	if a.Data, err = d.Payload(MaxData); err != nil {
		return field("WRITE4args.data", err)
	}
	return nil
}

// WriteRes is WRITE4res.
//
//	struct WRITE4resok { count4 count; stable_how4 committed; verifier4 writeverf; };
type WriteRes struct {
	Status    Status
	Count     uint32
	Committed StableHow
	WriteVerf Verifier
}

// Op returns OpWrite.
func (r *WriteRes) Op() OpNum { return OpWrite }

// Result returns the status.
func (r *WriteRes) Result() Status { return r.Status }

// EncodeXDR encodes WRITE4res.
func (r *WriteRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		e.Uint32(r.Count)
		e.Uint32(uint32(r.Committed))
		e.FixedOpaque(r.WriteVerf[:])
	}
}

// DecodeXDR decodes WRITE4res.
func (r *WriteRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "WRITE4res"); err != nil || r.Status != OK {
		return err
	}
	if r.Count, err = decodeU32(d, "WRITE4res.count"); err != nil {
		return err
	}
	c, err := decodeU32(d, "WRITE4res.committed")
	if err != nil {
		return err
	}
	if c > uint32(FileSync4) {
		return badEnum("WRITE4res.committed", c)
	}
	r.Committed = StableHow(c)
	return r.WriteVerf.decode(d, "WRITE4res.writeverf")
}

// CommitArgs is COMMIT4args.
//
//	struct COMMIT4args { offset4 offset; count4 count; };
type CommitArgs struct {
	Offset uint64
	Count  uint32
}

// Op returns OpCommit.
func (a *CommitArgs) Op() OpNum { return OpCommit }

// EncodeXDR encodes COMMIT4args.
func (a *CommitArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint64(a.Offset)
	e.Uint32(a.Count)
}

// DecodeXDR decodes COMMIT4args.
func (a *CommitArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.Offset, err = decodeU64(d, "COMMIT4args.offset"); err != nil {
		return err
	}
	a.Count, err = decodeU32(d, "COMMIT4args.count")
	return err
}

// CommitRes is COMMIT4res.
//
//	struct COMMIT4resok { verifier4 writeverf; };
type CommitRes struct {
	Status    Status
	WriteVerf Verifier
}

// Op returns OpCommit.
func (r *CommitRes) Op() OpNum { return OpCommit }

// Result returns the status.
func (r *CommitRes) Result() Status { return r.Status }

// EncodeXDR encodes COMMIT4res.
func (r *CommitRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		e.FixedOpaque(r.WriteVerf[:])
	}
}

// DecodeXDR decodes COMMIT4res.
func (r *CommitRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "COMMIT4res"); err != nil || r.Status != OK {
		return err
	}
	return r.WriteVerf.decode(d, "COMMIT4res.writeverf")
}
