package nfs4

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A Message is any value this package encodes and decodes.
type Message interface {
	xdr.EncoderTo
	xdr.DecoderFrom
}

// OpArgs is the arguments of one COMPOUND operation (the arm of nfs_argop4 after the
// operation number). EncodeXDR and DecodeXDR handle the arguments only; the COMPOUND
// layer writes and reads the operation number.
type OpArgs interface {
	Message
	Op() OpNum
}

// OpRes is the result of one COMPOUND operation (the arm of nfs_resop4 after the
// operation number): its status and, usually only for NFS4_OK, its body.
type OpRes interface {
	Message
	Op() OpNum
	// Result returns the operation's status.
	Result() Status
}

// CompoundArgsReader decodes COMPOUND4args one operation at a time, so a server can act
// on each operation before decoding the next and never holds more than one decoded
// operation.
//
//	struct COMPOUND4args { utf8str_cs tag; uint32_t minorversion; nfs_argop4 argarray<>; };
//
// Reset decodes the header and exposes the operation count (NumOps) before any operation
// is decoded, so the server can answer NFS4ERR_TOO_MANY_OPS or NFS4ERR_RESOURCE first,
// and a minorversion it does not speak with NFS4ERR_MINOR_VERS_MISMATCH. Then, while
// More, Next reads an operation number and the server decodes that operation's
// arguments with its own typed value from Decoder (allocation-free when the value is
// reused), or with DecodeArgs.
type CompoundArgsReader struct {
	Tag          []byte // aliases the decoder's buffer
	MinorVersion uint32
	NumOps       int // the count the client claimed, checked against the bytes present
	d            *xdr.Decoder
	next         int
	raw          uint32
}

// Reset decodes the COMPOUND4args header from d. The tag is at most MaxUTF8Str bytes and
// the count at most MaxOpsPerCompound, each operation needing at least its 4-byte number.
func (r *CompoundArgsReader) Reset(d *xdr.Decoder) (err error) {
	r.d, r.next, r.raw, r.NumOps, r.MinorVersion = d, 0, 0, 0, 0
	if r.Tag, err = decodeStr(d, MaxUTF8Str, "COMPOUND4args.tag"); err != nil {
		return err
	}
	if r.MinorVersion, err = decodeU32(d, "COMPOUND4args.minorversion"); err != nil {
		return err
	}
	if r.NumOps, err = d.ArrayLen(MaxOpsPerCompound, 4); err != nil {
		return field("COMPOUND4args.argarray", err)
	}
	return nil
}

// More reports whether operations remain to be read.
func (r *CompoundArgsReader) More() bool { return r.next < r.NumOps }

// Index returns the index of the operation Next returned last (0 for the first).
func (r *CompoundArgsReader) Index() int { return r.next - 1 }

// Next reads the next operation number. A number RFC 8881 does not define is returned as
// OpIllegal (RawOp gives the number sent): the server answers it with an ILLEGAL result
// (IllegalRes, NFS4ERR_OP_ILLEGAL) and stops, since its arguments cannot be parsed.
func (r *CompoundArgsReader) Next() (OpNum, error) {
	if r.next >= r.NumOps {
		return 0, fmt.Errorf("nfs4: COMPOUND4args: read past operation %d of %d", r.next, r.NumOps)
	}
	v, err := r.d.Uint32()
	if err != nil {
		return 0, field(fmt.Sprintf("COMPOUND4args.argarray[%d].argop", r.next), err)
	}
	r.next++
	r.raw = v
	op := OpNum(v)
	if !op.Defined() {
		op = OpIllegal
	}
	return op, nil
}

// RawOp returns the operation number Next read last, as sent.
func (r *CompoundArgsReader) RawOp() uint32 { return r.raw }

// Decoder returns the decoder positioned at the current operation's arguments.
func (r *CompoundArgsReader) Decoder() *xdr.Decoder { return r.d }

// DecodeArgs decodes the current operation's arguments into a new value (see NewArgs).
// It fails with a *StatusError carrying NFS4ERR_OP_ILLEGAL for an undefined operation
// and NFS4ERR_NOTSUPP for one this package does not decode.
func (r *CompoundArgsReader) DecodeArgs(op OpNum) (OpArgs, error) {
	a, err := NewArgs(op)
	if err != nil {
		return nil, err
	}
	if err := a.DecodeXDR(r.d); err != nil {
		return nil, err
	}
	return a, nil
}

// CompoundResWriter encodes COMPOUND4res as the server produces results: Begin writes
// the header with placeholders, Op (or Add) appends one result, Finish patches the
// status and the result count.
//
//	struct COMPOUND4res { nfsstat4 status; utf8str_cs tag; nfs_resop4 resarray<>; };
type CompoundResWriter struct {
	e        *xdr.Encoder
	statusAt int // inline offset of the status word
	countAt  int // inline offset of the resarray count
	lastPos  int // logical position where the last result began
	n        int
}

// Begin starts a COMPOUND4res on e with the call's tag.
func (w *CompoundResWriter) Begin(e *xdr.Encoder, tag []byte) {
	w.e, w.n, w.lastPos = e, 0, -1
	w.statusAt = e.Len()
	e.Uint32(0)
	e.Opaque(tag)
	w.countAt = e.Len()
	e.Uint32(0)
}

// Op starts one result: it writes the resop number; the caller then encodes the result
// (status and body) itself, e.g. res.EncodeXDR(w.Encoder()).
func (w *CompoundResWriter) Op(op OpNum) {
	w.lastPos = w.e.Pos()
	w.e.Uint32(uint32(op))
	w.n++
}

// Add appends a whole result: Op(res.Op()) and res.EncodeXDR.
func (w *CompoundResWriter) Add(res OpRes) {
	w.Op(res.Op())
	res.EncodeXDR(w.e)
}

// Undo removes the result started last (a server that finds the result too large for
// the reply replaces it with NFS4ERR_REP_TOO_BIG). It can undo only one result.
func (w *CompoundResWriter) Undo() {
	if w.lastPos < 0 {
		panic("nfs4: CompoundResWriter.Undo without a result to undo")
	}
	w.e.Truncate(w.lastPos)
	w.lastPos = -1
	w.n--
}

// Encoder returns the encoder results are written to.
func (w *CompoundResWriter) Encoder() *xdr.Encoder { return w.e }

// NumResults returns the number of results written so far.
func (w *CompoundResWriter) NumResults() int { return w.n }

// Finish writes status, the status of the last result (or of the whole COMPOUND when
// no operation ran), and the result count into the header.
func (w *CompoundResWriter) Finish(status Status) {
	b := w.e.Bytes()
	binary.BigEndian.PutUint32(b[w.statusAt:], uint32(status))
	binary.BigEndian.PutUint32(b[w.countAt:], uint32(w.n))
}

// CompoundArgsWriter encodes COMPOUND4args on the client: Begin, then Op (or Add) per
// operation, then Finish, which patches the operation count.
type CompoundArgsWriter struct {
	e       *xdr.Encoder
	countAt int
	n       int
}

// Begin starts a COMPOUND4args on e.
func (w *CompoundArgsWriter) Begin(e *xdr.Encoder, tag []byte, minorVersion uint32) {
	w.e, w.n = e, 0
	e.Opaque(tag)
	e.Uint32(minorVersion)
	w.countAt = e.Len()
	e.Uint32(0)
}

// Op writes an operation number; the caller encodes the arguments.
func (w *CompoundArgsWriter) Op(op OpNum) {
	w.e.Uint32(uint32(op))
	w.n++
}

// Add appends a whole operation: Op(a.Op()) and a.EncodeXDR.
func (w *CompoundArgsWriter) Add(a OpArgs) {
	w.Op(a.Op())
	a.EncodeXDR(w.e)
}

// Encoder returns the encoder operations are written to.
func (w *CompoundArgsWriter) Encoder() *xdr.Encoder { return w.e }

// Finish patches the operation count.
func (w *CompoundArgsWriter) Finish() {
	binary.BigEndian.PutUint32(w.e.Bytes()[w.countAt:], uint32(w.n))
}

// CompoundResReader decodes COMPOUND4res one result at a time on the client: Reset
// decodes status, tag and count; while More, Next reads a result's operation number
// and the caller decodes the result from Decoder (or with DecodeRes).
type CompoundResReader struct {
	Status     Status
	Tag        []byte
	NumResults int
	d          *xdr.Decoder
	next       int
}

// Reset decodes the COMPOUND4res header from d.
func (r *CompoundResReader) Reset(d *xdr.Decoder) (err error) {
	r.d, r.next, r.NumResults = d, 0, 0
	if r.Status, err = decodeStatus(d, "COMPOUND4res"); err != nil {
		return err
	}
	if r.Tag, err = decodeStr(d, MaxUTF8Str, "COMPOUND4res.tag"); err != nil {
		return err
	}
	if r.NumResults, err = d.ArrayLen(MaxOpsPerCompound, 8); err != nil {
		return field("COMPOUND4res.resarray", err)
	}
	return nil
}

// More reports whether results remain to be read.
func (r *CompoundResReader) More() bool { return r.next < r.NumResults }

// Next reads the next result's operation number, which must be a defined operation.
func (r *CompoundResReader) Next() (OpNum, error) {
	if r.next >= r.NumResults {
		return 0, fmt.Errorf("nfs4: COMPOUND4res: read past result %d of %d", r.next, r.NumResults)
	}
	name := fmt.Sprintf("COMPOUND4res.resarray[%d].resop", r.next)
	v, err := decodeU32(r.d, name)
	if err != nil {
		return 0, err
	}
	r.next++
	if !OpNum(v).Defined() {
		return 0, badEnum(name, v)
	}
	return OpNum(v), nil
}

// Decoder returns the decoder positioned at the current result.
func (r *CompoundResReader) Decoder() *xdr.Decoder { return r.d }

// DecodeRes decodes the current result into a new value (see NewRes).
func (r *CompoundResReader) DecodeRes(op OpNum) (OpRes, error) {
	res := NewRes(op)
	if err := res.DecodeXDR(r.d); err != nil {
		return nil, err
	}
	return res, nil
}

// CompoundArgs is a whole COMPOUND4args, for clients and tests that build or inspect a
// request as one value. Servers use CompoundArgsReader.
type CompoundArgs struct {
	Tag          []byte
	MinorVersion uint32
	Ops          []OpArgs
}

// EncodeXDR encodes COMPOUND4args.
func (c *CompoundArgs) EncodeXDR(e *xdr.Encoder) {
	var w CompoundArgsWriter
	w.Begin(e, c.Tag, c.MinorVersion)
	for _, a := range c.Ops {
		w.Add(a)
	}
	w.Finish()
}

// DecodeXDR decodes COMPOUND4args with every operation; see CompoundArgsReader.DecodeArgs
// for the operations it refuses.
func (c *CompoundArgs) DecodeXDR(d *xdr.Decoder) error {
	var r CompoundArgsReader
	if err := r.Reset(d); err != nil {
		return err
	}
	c.Tag, c.MinorVersion, c.Ops = r.Tag, r.MinorVersion, c.Ops[:0]
	for r.More() {
		op, err := r.Next()
		if err != nil {
			return err
		}
		a, err := r.DecodeArgs(op)
		if err != nil {
			return fmt.Errorf("nfs4: COMPOUND4args.argarray[%d] (%v): %w", r.Index(), op, err)
		}
		c.Ops = append(c.Ops, a)
	}
	return nil
}

// CompoundRes is a whole COMPOUND4res.
type CompoundRes struct {
	Status  Status
	Tag     []byte
	Results []OpRes
}

// EncodeXDR encodes COMPOUND4res; Status is written as given.
func (c *CompoundRes) EncodeXDR(e *xdr.Encoder) {
	var w CompoundResWriter
	w.Begin(e, c.Tag)
	for _, r := range c.Results {
		w.Add(r)
	}
	w.Finish(c.Status)
}

// DecodeXDR decodes COMPOUND4res with every result.
func (c *CompoundRes) DecodeXDR(d *xdr.Decoder) error {
	var r CompoundResReader
	if err := r.Reset(d); err != nil {
		return err
	}
	c.Status, c.Tag, c.Results = r.Status, r.Tag, c.Results[:0]
	for r.More() {
		op, err := r.Next()
		if err != nil {
			return err
		}
		res, err := r.DecodeRes(op)
		if err != nil {
			return fmt.Errorf("nfs4: COMPOUND4res.resarray[%d] (%v): %w", r.next-1, op, err)
		}
		c.Results = append(c.Results, res)
	}
	return nil
}

// Sessionless reports whether op may open a COMPOUND that does not start with
// SEQUENCE: EXCHANGE_ID, CREATE_SESSION, BIND_CONN_TO_SESSION, DESTROY_SESSION and
// DESTROY_CLIENTID, each only as the sole operation (RFC 8881's COMPOUND and SEQUENCE
// rules). A server answers NFS4ERR_NOT_ONLY_OP when such a COMPOUND holds more
// operations, NFS4ERR_OP_NOT_IN_SESSION when its first operation is any other, and
// NFS4ERR_SEQUENCE_POS for a SEQUENCE that is not first.
func (o OpNum) Sessionless() bool {
	switch o {
	case OpExchangeID, OpCreateSession, OpBindConnToSession, OpDestroySession, OpDestroyClientID:
		return true
	}
	return false
}
