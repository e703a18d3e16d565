package nfs4

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The callback program (RFC 8881 §20): the server calls the client on the session's
// back channel, with the program number the client chose in CREATE_SESSION
// (csa_cb_program) or BACKCHANNEL_CTL, version CBVersion. CB_NULL has no arguments or
// results; CB_COMPOUND carries CB_SEQUENCE first and then, here, CB_RECALL.

// CBOpArgs is the arguments of one CB_COMPOUND operation, without its number.
type CBOpArgs interface {
	Message
	CBOp() CBOpNum
}

// CBOpRes is the result of one CB_COMPOUND operation, without its number.
type CBOpRes interface {
	Message
	CBOp() CBOpNum
	// Result returns the operation's status.
	Result() Status
}

// MaxReferringCalls bounds csa_referring_call_lists and each list's calls.
const MaxReferringCalls = 64

// ReferringCall4 is referring_call4.
//
//	struct referring_call4 { sequenceid4 rc_sequenceid; slotid4 rc_slotid; };
type ReferringCall4 struct {
	SequenceID uint32
	SlotID     uint32
}

// ReferringCallList4 is referring_call_list4: the fore-channel calls of a session that
// caused a callback.
//
//	struct referring_call_list4 { sessionid4 rcl_sessionid; referring_call4 rcl_referring_calls<>; };
type ReferringCallList4 struct {
	SessionID SessionID
	Calls     []ReferringCall4
}

// CBSequenceArgs is CB_SEQUENCE4args.
//
//	struct CB_SEQUENCE4args {
//	   sessionid4 csa_sessionid; sequenceid4 csa_sequenceid; slotid4 csa_slotid;
//	   slotid4 csa_highest_slotid; bool csa_cachethis;
//	   referring_call_list4 csa_referring_call_lists<>; };
type CBSequenceArgs struct {
	SessionID          SessionID
	SequenceID         uint32
	SlotID             uint32
	HighestSlotID      uint32
	CacheThis          bool
	ReferringCallLists []ReferringCallList4
}

// CBOp returns CBOpSequence.
func (a *CBSequenceArgs) CBOp() CBOpNum { return CBOpSequence }

// EncodeXDR encodes CB_SEQUENCE4args.
func (a *CBSequenceArgs) EncodeXDR(e *xdr.Encoder) {
	e.FixedOpaque(a.SessionID[:])
	e.Uint32(a.SequenceID)
	e.Uint32(a.SlotID)
	e.Uint32(a.HighestSlotID)
	e.Bool(a.CacheThis)
	e.ArrayLen(len(a.ReferringCallLists))
	for i := range a.ReferringCallLists {
		l := &a.ReferringCallLists[i]
		e.FixedOpaque(l.SessionID[:])
		e.ArrayLen(len(l.Calls))
		for _, c := range l.Calls {
			e.Uint32(c.SequenceID)
			e.Uint32(c.SlotID)
		}
	}
}

// DecodeXDR decodes CB_SEQUENCE4args.
func (a *CBSequenceArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "CB_SEQUENCE4args"
	if err = a.SessionID.decode(d, n+".csa_sessionid"); err != nil {
		return err
	}
	if d.Len() < 12 {
		_, err = d.FixedOpaque(12)
		return field(n, err)
	}
	a.SequenceID, _ = d.Uint32()
	a.SlotID, _ = d.Uint32()
	a.HighestSlotID, _ = d.Uint32()
	if a.CacheThis, err = decodeBool(d, n+".csa_cachethis"); err != nil {
		return err
	}
	cnt, err := d.ArrayLen(MaxReferringCalls, SessionIDSize+4)
	if err != nil {
		return field(n+".csa_referring_call_lists", err)
	}
	a.ReferringCallLists = a.ReferringCallLists[:0]
	for range cnt {
		var l ReferringCallList4
		_ = l.SessionID.decode(d, "") // ArrayLen checked the bytes are there
		calls, err := d.ArrayLen(MaxReferringCalls, 8)
		if err != nil {
			return field(n+".rcl_referring_calls", err)
		}
		for range calls {
			var c ReferringCall4
			c.SequenceID, _ = d.Uint32()
			c.SlotID, _ = d.Uint32()
			l.Calls = append(l.Calls, c)
		}
		a.ReferringCallLists = append(a.ReferringCallLists, l)
	}
	return nil
}

// CBSequenceRes is CB_SEQUENCE4res.
//
//	struct CB_SEQUENCE4resok {
//	   sessionid4 csr_sessionid; sequenceid4 csr_sequenceid; slotid4 csr_slotid;
//	   slotid4 csr_highest_slotid; slotid4 csr_target_highest_slotid; };
type CBSequenceRes struct {
	Status              Status
	SessionID           SessionID
	SequenceID          uint32
	SlotID              uint32
	HighestSlotID       uint32
	TargetHighestSlotID uint32
}

// CBOp returns CBOpSequence.
func (r *CBSequenceRes) CBOp() CBOpNum { return CBOpSequence }

// Result returns the status.
func (r *CBSequenceRes) Result() Status { return r.Status }

// EncodeXDR encodes CB_SEQUENCE4res.
func (r *CBSequenceRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.FixedOpaque(r.SessionID[:])
	e.Uint32(r.SequenceID)
	e.Uint32(r.SlotID)
	e.Uint32(r.HighestSlotID)
	e.Uint32(r.TargetHighestSlotID)
}

// DecodeXDR decodes CB_SEQUENCE4res.
func (r *CBSequenceRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "CB_SEQUENCE4res"
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	if err = r.SessionID.decode(d, n+".csr_sessionid"); err != nil {
		return err
	}
	if d.Len() < 16 {
		_, err = d.FixedOpaque(16)
		return field(n, err)
	}
	r.SequenceID, _ = d.Uint32()
	r.SlotID, _ = d.Uint32()
	r.HighestSlotID, _ = d.Uint32()
	r.TargetHighestSlotID, _ = d.Uint32()
	return nil
}

// CBRecallArgs is CB_RECALL4args: the server recalls a delegation.
//
//	struct CB_RECALL4args { stateid4 stateid; bool truncate; nfs_fh4 fh; };
type CBRecallArgs struct {
	Stateid  Stateid4
	Truncate bool
	FH       FH
}

// CBOp returns CBOpRecall.
func (a *CBRecallArgs) CBOp() CBOpNum { return CBOpRecall }

// EncodeXDR encodes CB_RECALL4args.
func (a *CBRecallArgs) EncodeXDR(e *xdr.Encoder) {
	a.Stateid.EncodeXDR(e)
	e.Bool(a.Truncate)
	e.Opaque(a.FH)
}

// DecodeXDR decodes CB_RECALL4args.
func (a *CBRecallArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if err = a.Stateid.decode(d, "CB_RECALL4args.stateid"); err != nil {
		return err
	}
	if a.Truncate, err = decodeBool(d, "CB_RECALL4args.truncate"); err != nil {
		return err
	}
	a.FH, err = decodeFH(d, "CB_RECALL4args.fh")
	return err
}

// CBStatusRes is the result of CB_RECALL and CB_ILLEGAL: a status alone.
type CBStatusRes struct {
	CBOpNum CBOpNum
	Status  Status
}

// CBOp returns the operation.
func (r *CBStatusRes) CBOp() CBOpNum { return r.CBOpNum }

// Result returns the status.
func (r *CBStatusRes) Result() Status { return r.Status }

// EncodeXDR encodes the status.
func (r *CBStatusRes) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(r.Status)) }

// DecodeXDR decodes the status.
func (r *CBStatusRes) DecodeXDR(d *xdr.Decoder) (err error) {
	v, err := d.Uint32()
	if err != nil {
		return field(r.CBOpNum.String()+"4res.status", err)
	}
	r.Status = Status(v)
	return nil
}

// CBNoArgs is the (empty) arguments of CB_ILLEGAL.
type CBNoArgs struct {
	CBOpNum CBOpNum
}

// CBOp returns the operation.
func (a *CBNoArgs) CBOp() CBOpNum { return a.CBOpNum }

// EncodeXDR encodes nothing.
func (a *CBNoArgs) EncodeXDR(e *xdr.Encoder) {}

// DecodeXDR decodes nothing.
func (a *CBNoArgs) DecodeXDR(d *xdr.Decoder) error { return nil }

// NewCBArgs returns a new argument value for callback operation op: CB_SEQUENCE and
// CB_RECALL. Other defined operations fail with a *StatusError carrying NFS4ERR_NOTSUPP
// and undefined ones with NFS4ERR_OP_ILLEGAL, which is what a client answers.
func NewCBArgs(op CBOpNum) (CBOpArgs, error) {
	switch op {
	case CBOpSequence:
		return &CBSequenceArgs{}, nil
	case CBOpRecall:
		return &CBRecallArgs{}, nil
	}
	if op >= CBOpGetattr && op <= CBOpNotifyDeviceid {
		return nil, &StatusError{Status: ErrNotsupp, Err: fmt.Errorf("nfs4: %v arguments: %w", op, ErrUnsupported)}
	}
	return nil, &StatusError{Status: ErrOpIllegal, Err: fmt.Errorf("nfs4: callback operation %d: %w", uint32(op), ErrBadEnum)}
}

// NewCBRes returns a new result value for callback operation op; operations other
// than CB_SEQUENCE get a CBStatusRes, which decodes only an error status for operations
// whose success carries a body.
func NewCBRes(op CBOpNum) CBOpRes {
	if op == CBOpSequence {
		return &CBSequenceRes{}
	}
	return &CBStatusRes{CBOpNum: op}
}

// CBCompoundArgs is CB_COMPOUND4args.
//
//	struct CB_COMPOUND4args {
//	   utf8str_cs tag; uint32_t minorversion; uint32_t callback_ident; nfs_cb_argop4 argarray<>; };
type CBCompoundArgs struct {
	Tag           []byte
	MinorVersion  uint32
	CallbackIdent uint32 // not used in NFSv4.1
	Ops           []CBOpArgs
}

// EncodeXDR encodes CB_COMPOUND4args.
func (c *CBCompoundArgs) EncodeXDR(e *xdr.Encoder) {
	e.Opaque(c.Tag)
	e.Uint32(c.MinorVersion)
	e.Uint32(c.CallbackIdent)
	e.ArrayLen(len(c.Ops))
	for _, a := range c.Ops {
		e.Uint32(uint32(a.CBOp()))
		a.EncodeXDR(e)
	}
}

// DecodeXDR decodes CB_COMPOUND4args with every operation (at most MaxOpsPerCompound);
// see NewCBArgs for the operations it refuses.
func (c *CBCompoundArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "CB_COMPOUND4args"
	if c.Tag, err = decodeStr(d, MaxUTF8Str, n+".tag"); err != nil {
		return err
	}
	if c.MinorVersion, err = decodeU32(d, n+".minorversion"); err != nil {
		return err
	}
	if c.CallbackIdent, err = decodeU32(d, n+".callback_ident"); err != nil {
		return err
	}
	cnt, err := d.ArrayLen(MaxOpsPerCompound, 4)
	if err != nil {
		return field(n+".argarray", err)
	}
	c.Ops = c.Ops[:0]
	for i := range cnt {
		v, err := decodeU32(d, n+".argop")
		if err != nil {
			return err
		}
		a, err := NewCBArgs(CBOpNum(v))
		if err != nil {
			return fmt.Errorf("nfs4: %s.argarray[%d]: %w", n, i, err)
		}
		if err := a.DecodeXDR(d); err != nil {
			return err
		}
		c.Ops = append(c.Ops, a)
	}
	return nil
}

// CBCompoundRes is CB_COMPOUND4res.
//
//	struct CB_COMPOUND4res { nfsstat4 status; utf8str_cs tag; nfs_cb_resop4 resarray<>; };
type CBCompoundRes struct {
	Status  Status
	Tag     []byte
	Results []CBOpRes
}

// EncodeXDR encodes CB_COMPOUND4res.
func (c *CBCompoundRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(c.Status))
	e.Opaque(c.Tag)
	e.ArrayLen(len(c.Results))
	for _, r := range c.Results {
		e.Uint32(uint32(r.CBOp()))
		r.EncodeXDR(e)
	}
}

// DecodeXDR decodes CB_COMPOUND4res.
func (c *CBCompoundRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "CB_COMPOUND4res"
	if c.Status, err = decodeStatus(d, n); err != nil {
		return err
	}
	if c.Tag, err = decodeStr(d, MaxUTF8Str, n+".tag"); err != nil {
		return err
	}
	cnt, err := d.ArrayLen(MaxOpsPerCompound, 8)
	if err != nil {
		return field(n+".resarray", err)
	}
	c.Results = c.Results[:0]
	for range cnt {
		v, err := decodeU32(d, n+".resop")
		if err != nil {
			return err
		}
		op := CBOpNum(v)
		if op != CBOpIllegal && (op < CBOpGetattr || op > CBOpNotifyDeviceid) {
			return badEnum(n+".resop", v)
		}
		r := NewCBRes(op)
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		if op != CBOpSequence && op != CBOpRecall && op != CBOpIllegal && r.Result() == OK {
			return fmt.Errorf("nfs4: %s: %v result body: %w", n, op, ErrUnsupported)
		}
		c.Results = append(c.Results, r)
	}
	return nil
}
