package nfs4

import "github.com/go-rpcrdma/rpcrdma/xdr"

// ChangeInfo4 is change_info4: a directory's change attribute before and after an
// operation.
//
//	struct change_info4 { bool atomic; changeid4 before; changeid4 after; };
type ChangeInfo4 struct {
	Atomic bool
	Before uint64
	After  uint64
}

func (c *ChangeInfo4) encode(e *xdr.Encoder) {
	e.Bool(c.Atomic)
	e.Uint64(c.Before)
	e.Uint64(c.After)
}

func (c *ChangeInfo4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "change_info4"
	defer wrapErr(&err, outer)
	if c.Atomic, err = decodeBool(d, name+".atomic"); err != nil {
		return err
	}
	if d.Len() < 16 {
		_, err = d.FixedOpaque(16)
		return field(name, err)
	}
	c.Before, _ = d.Uint64()
	c.After, _ = d.Uint64()
	return nil
}

// CreateHow4 is createhow4, how OPEN4_CREATE creates a file.
//
//	union createhow4 switch (createmode4 mode) {
//	case UNCHECKED4: case GUARDED4: fattr4 createattrs;
//	case EXCLUSIVE4: verifier4 createverf;
//	case EXCLUSIVE4_1: creatverfattr ch_createboth; };
//	struct creatverfattr { verifier4 cva_verf; fattr4 cva_attrs; };
type CreateHow4 struct {
	Mode       CreateMode
	Mask       Bitmap4  // UNCHECKED4, GUARDED4, EXCLUSIVE4_1
	Attrs      Fattr    // UNCHECKED4, GUARDED4, EXCLUSIVE4_1
	CreateVerf Verifier // EXCLUSIVE4, EXCLUSIVE4_1
}

func (c *CreateHow4) encode(e *xdr.Encoder) {
	e.Uint32(uint32(c.Mode))
	switch c.Mode {
	case Unchecked4, Guarded4:
		EncodeFattr(e, c.Mask, &c.Attrs)
	case Exclusive4:
		e.FixedOpaque(c.CreateVerf[:])
	case Exclusive41:
		e.FixedOpaque(c.CreateVerf[:])
		EncodeFattr(e, c.Mask, &c.Attrs)
	}
}

func (c *CreateHow4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "createhow4"
	defer wrapErr(&err, outer)
	mode, err := decodeU32(d, name+".mode")
	if err != nil {
		return err
	}
	c.Mode = CreateMode(mode)
	switch c.Mode {
	case Unchecked4, Guarded4:
		return decodeFattr(d, &c.Mask, &c.Attrs, name+".createattrs")
	case Exclusive4:
		return c.CreateVerf.decode(d, name+".createverf")
	case Exclusive41:
		if err := c.CreateVerf.decode(d, name+".cva_verf"); err != nil {
			return err
		}
		return decodeFattr(d, &c.Mask, &c.Attrs, name+".cva_attrs")
	}
	return badEnum(name+".mode", mode)
}

// OpenClaim4 is open_claim4, the file an OPEN names and on what grounds.
//
//	union open_claim4 switch (open_claim_type4 claim) {
//	case CLAIM_NULL: component4 file;
//	case CLAIM_PREVIOUS: open_delegation_type4 delegate_type;
//	case CLAIM_DELEGATE_CUR: open_claim_delegate_cur4 delegate_cur_info;
//	case CLAIM_DELEGATE_PREV: component4 file_delegate_prev;
//	case CLAIM_FH: void; case CLAIM_DELEG_PREV_FH: void;
//	case CLAIM_DELEG_CUR_FH: stateid4 oc_delegate_stateid; };
//	struct open_claim_delegate_cur4 { stateid4 delegate_stateid; component4 file; };
type OpenClaim4 struct {
	Claim           ClaimType
	File            []byte         // CLAIM_NULL, CLAIM_DELEGATE_CUR, CLAIM_DELEGATE_PREV
	DelegateType    DelegationType // CLAIM_PREVIOUS
	DelegateStateid Stateid4       // CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH
}

func (c *OpenClaim4) encode(e *xdr.Encoder) {
	e.Uint32(uint32(c.Claim))
	switch c.Claim {
	case ClaimNull, ClaimDelegatePrev:
		e.Opaque(c.File)
	case ClaimPrevious:
		e.Uint32(uint32(c.DelegateType))
	case ClaimDelegateCur:
		c.DelegateStateid.EncodeXDR(e)
		e.Opaque(c.File)
	case ClaimDelegCurFH:
		c.DelegateStateid.EncodeXDR(e)
	}
}

func (c *OpenClaim4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "open_claim4"
	defer wrapErr(&err, outer)
	claim, err := decodeU32(d, name+".claim")
	if err != nil {
		return err
	}
	c.Claim, c.File = ClaimType(claim), nil
	switch c.Claim {
	case ClaimNull, ClaimDelegatePrev:
		c.File, err = decodeComponent(d, name+".file")
		return err
	case ClaimPrevious:
		v, err := decodeU32(d, name+".delegate_type")
		if err != nil {
			return err
		}
		if v > uint32(DelegateNoneExt) {
			return badEnum(name+".delegate_type", v)
		}
		c.DelegateType = DelegationType(v)
		return nil
	case ClaimDelegateCur:
		if err = c.DelegateStateid.decode(d, name+".delegate_stateid"); err != nil {
			return err
		}
		c.File, err = decodeComponent(d, name+".file")
		return err
	case ClaimFH, ClaimDelegPrevFH:
		return nil
	case ClaimDelegCurFH:
		return c.DelegateStateid.decode(d, name+".oc_delegate_stateid")
	}
	return badEnum(name+".claim", claim)
}

// OpenArgs is OPEN4args.
//
//	struct OPEN4args {
//	   seqid4 seqid; uint32_t share_access; uint32_t share_deny; open_owner4 owner;
//	   openflag4 openhow; open_claim4 claim; };
//	union openflag4 switch (opentype4 opentype) { case OPEN4_CREATE: createhow4 how; default: void; };
type OpenArgs struct {
	Seqid       uint32 // ignored in NFSv4.1
	ShareAccess uint32 // OPEN4_SHARE_ACCESS_* with OPEN4_SHARE_ACCESS_WANT_* bits
	ShareDeny   uint32
	Owner       StateOwner4
	OpenType    OpenType
	How         CreateHow4 // OPEN4_CREATE only
	Claim       OpenClaim4
}

// Op returns OpOpen.
func (a *OpenArgs) Op() OpNum { return OpOpen }

// EncodeXDR encodes OPEN4args.
func (a *OpenArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(a.Seqid)
	e.Uint32(a.ShareAccess)
	e.Uint32(a.ShareDeny)
	a.Owner.EncodeXDR(e)
	e.Uint32(uint32(a.OpenType))
	if a.OpenType == Open4Create {
		a.How.encode(e)
	}
	a.Claim.encode(e)
}

// DecodeXDR decodes OPEN4args. The share bits are not judged here: a server answers
// NFS4ERR_INVAL for combinations it does not accept.
func (a *OpenArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "OPEN4args"
	if d.Len() < 12 {
		_, err = d.FixedOpaque(12)
		return field(n, err)
	}
	a.Seqid, _ = d.Uint32()
	a.ShareAccess, _ = d.Uint32()
	a.ShareDeny, _ = d.Uint32()
	if err = a.Owner.decode(d, n+".owner"); err != nil {
		return err
	}
	t, err := decodeU32(d, n+".openhow.opentype")
	if err != nil {
		return err
	}
	switch OpenType(t) {
	case Open4NoCreate:
		a.OpenType = Open4NoCreate
	case Open4Create:
		a.OpenType = Open4Create
		if err = a.How.decode(d, n+".openhow.how"); err != nil {
			return err
		}
	default:
		return badEnum(n+".openhow.opentype", t)
	}
	return a.Claim.decode(d, n+".claim")
}

// NFSAce4 is nfsace4, an access control entry (in a delegation's permissions).
//
//	struct nfsace4 { acetype4 type; aceflag4 flag; acemask4 access_mask; utf8str_mixed who; };
type NFSAce4 struct {
	Type, Flag, AccessMask uint32
	Who                    []byte
}

func (a *NFSAce4) encode(e *xdr.Encoder) {
	e.Uint32(a.Type)
	e.Uint32(a.Flag)
	e.Uint32(a.AccessMask)
	e.Opaque(a.Who)
}

func (a *NFSAce4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "nfsace4"
	defer wrapErr(&err, outer)
	if d.Len() < 12 {
		_, err = d.FixedOpaque(12)
		return field(name, err)
	}
	a.Type, _ = d.Uint32()
	a.Flag, _ = d.Uint32()
	a.AccessMask, _ = d.Uint32()
	a.Who, err = decodeStr(d, MaxUTF8Str, name+".who")
	return err
}

// OpenDelegation4 is open_delegation4, the delegation an OPEN grants or why none was.
//
//	union open_delegation4 switch (open_delegation_type4 delegation_type) {
//	case OPEN_DELEGATE_NONE: void;
//	case OPEN_DELEGATE_READ: open_read_delegation4 read;
//	case OPEN_DELEGATE_WRITE: open_write_delegation4 write;
//	case OPEN_DELEGATE_NONE_EXT: open_none_delegation4 od_whynone; };
//	struct open_read_delegation4 { stateid4 stateid; bool recall; nfsace4 permissions; };
//	struct open_write_delegation4 {
//	   stateid4 stateid; bool recall; nfs_space_limit4 space_limit; nfsace4 permissions; };
//	union open_none_delegation4 switch (why_no_delegation4 ond_why) {
//	case WND4_CONTENTION: bool ond_server_will_push_deleg;
//	case WND4_RESOURCE: bool ond_server_will_signal_avail; default: void; };
type OpenDelegation4 struct {
	Type        DelegationType
	Stateid     Stateid4 // READ, WRITE
	Recall      bool     // READ, WRITE
	Permissions NFSAce4  // READ, WRITE
	// SpaceLimit is nfs_space_limit4 (WRITE): LimitSize with FileSize, or LimitBlocks
	// with NumBlocks and BytesPerBlock.
	LimitBy       LimitBy
	FileSize      uint64
	NumBlocks     uint32
	BytesPerBlock uint32
	WhyNone       WhyNoDelegation // NONE_EXT
	// WillPushOrSignal is ond_server_will_push_deleg (WND4_CONTENTION) or
	// ond_server_will_signal_avail (WND4_RESOURCE).
	WillPushOrSignal bool
}

func (o *OpenDelegation4) encode(e *xdr.Encoder) {
	e.Uint32(uint32(o.Type))
	switch o.Type {
	case DelegateRead, DelegateWrite:
		o.Stateid.EncodeXDR(e)
		e.Bool(o.Recall)
		if o.Type == DelegateWrite {
			e.Uint32(uint32(o.LimitBy))
			if o.LimitBy == LimitSize {
				e.Uint64(o.FileSize)
			} else {
				e.Uint32(o.NumBlocks)
				e.Uint32(o.BytesPerBlock)
			}
		}
		o.Permissions.encode(e)
	case DelegateNoneExt:
		e.Uint32(uint32(o.WhyNone))
		if o.WhyNone == WNDContention || o.WhyNone == WNDResource {
			e.Bool(o.WillPushOrSignal)
		}
	}
}

func (o *OpenDelegation4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "open_delegation4"
	defer wrapErr(&err, outer)
	t, err := decodeU32(d, name+".delegation_type")
	if err != nil {
		return err
	}
	*o = OpenDelegation4{Type: DelegationType(t)}
	switch o.Type {
	case DelegateNone:
		return nil
	case DelegateRead, DelegateWrite:
		if err = o.Stateid.decode(d, name+".stateid"); err != nil {
			return err
		}
		if o.Recall, err = decodeBool(d, name+".recall"); err != nil {
			return err
		}
		if o.Type == DelegateWrite {
			lb, err := decodeU32(d, name+".space_limit.limitby")
			if err != nil {
				return err
			}
			o.LimitBy = LimitBy(lb)
			switch o.LimitBy {
			case LimitSize:
				if o.FileSize, err = decodeU64(d, name+".space_limit.filesize"); err != nil {
					return err
				}
			case LimitBlocks:
				if o.NumBlocks, err = decodeU32(d, name+".space_limit.num_blocks"); err != nil {
					return err
				}
				if o.BytesPerBlock, err = decodeU32(d, name+".space_limit.bytes_per_block"); err != nil {
					return err
				}
			default:
				return badEnum(name+".space_limit.limitby", lb)
			}
		}
		return o.Permissions.decode(d, name+".permissions")
	case DelegateNoneExt:
		w, err := decodeU32(d, name+".ond_why")
		if err != nil {
			return err
		}
		if w > uint32(WNDIsDir) {
			return badEnum(name+".ond_why", w)
		}
		o.WhyNone = WhyNoDelegation(w)
		if o.WhyNone == WNDContention || o.WhyNone == WNDResource {
			o.WillPushOrSignal, err = decodeBool(d, name+".ond_server_will")
		}
		return err
	}
	return badEnum(name+".delegation_type", t)
}

// OpenRes is OPEN4res.
//
//	struct OPEN4resok {
//	   stateid4 stateid; change_info4 cinfo; uint32_t rflags; bitmap4 attrset;
//	   open_delegation4 delegation; };
type OpenRes struct {
	Status     Status
	Stateid    Stateid4
	Cinfo      ChangeInfo4
	Rflags     uint32 // OPEN4_RESULT_*
	AttrSet    Bitmap4
	Delegation OpenDelegation4
}

// Op returns OpOpen.
func (r *OpenRes) Op() OpNum { return OpOpen }

// Result returns the status.
func (r *OpenRes) Result() Status { return r.Status }

// EncodeXDR encodes OPEN4res.
func (r *OpenRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	r.Stateid.EncodeXDR(e)
	r.Cinfo.encode(e)
	e.Uint32(r.Rflags)
	r.AttrSet.EncodeXDR(e)
	r.Delegation.encode(e)
}

// DecodeXDR decodes OPEN4res.
func (r *OpenRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "OPEN4res"
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	if err = r.Stateid.decode(d, n+".stateid"); err != nil {
		return err
	}
	if err = r.Cinfo.decode(d, n+".cinfo"); err != nil {
		return err
	}
	if r.Rflags, err = decodeU32(d, n+".rflags"); err != nil {
		return err
	}
	if err = r.AttrSet.decode(d, n+".attrset"); err != nil {
		return err
	}
	return r.Delegation.decode(d, n+".delegation")
}

// OpenDowngradeArgs is OPEN_DOWNGRADE4args.
//
//	struct OPEN_DOWNGRADE4args {
//	   stateid4 open_stateid; seqid4 seqid; uint32_t share_access; uint32_t share_deny; };
type OpenDowngradeArgs struct {
	OpenStateid Stateid4
	Seqid       uint32
	ShareAccess uint32
	ShareDeny   uint32
}

// Op returns OpOpenDowngrade.
func (a *OpenDowngradeArgs) Op() OpNum { return OpOpenDowngrade }

// EncodeXDR encodes OPEN_DOWNGRADE4args.
func (a *OpenDowngradeArgs) EncodeXDR(e *xdr.Encoder) {
	a.OpenStateid.EncodeXDR(e)
	e.Uint32(a.Seqid)
	e.Uint32(a.ShareAccess)
	e.Uint32(a.ShareDeny)
}

// DecodeXDR decodes OPEN_DOWNGRADE4args.
func (a *OpenDowngradeArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "OPEN_DOWNGRADE4args"
	if err = a.OpenStateid.decode(d, n+".open_stateid"); err != nil {
		return err
	}
	if d.Len() < 12 {
		_, err = d.FixedOpaque(12)
		return field(n, err)
	}
	a.Seqid, _ = d.Uint32()
	a.ShareAccess, _ = d.Uint32()
	a.ShareDeny, _ = d.Uint32()
	return nil
}

// StateidRes is the result of OPEN_DOWNGRADE, CLOSE and LOCKU: a stateid on NFS4_OK.
//
//	union CLOSE4res switch (nfsstat4 status) { case NFS4_OK: stateid4 open_stateid; default: void; };
type StateidRes struct {
	OpNum   OpNum // OpOpenDowngrade, OpClose or OpLocku
	Status  Status
	Stateid Stateid4
}

// Op returns the operation.
func (r *StateidRes) Op() OpNum { return r.OpNum }

// Result returns the status.
func (r *StateidRes) Result() Status { return r.Status }

// EncodeXDR encodes the result.
func (r *StateidRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status == OK {
		r.Stateid.EncodeXDR(e)
	}
}

// DecodeXDR decodes the result.
func (r *StateidRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.Stateid = Stateid4{}
	v, err := d.Uint32()
	if err != nil {
		return opErr(r.OpNum, "4res.status", err)
	}
	if r.Status = Status(v); r.Status != OK {
		return nil
	}
	return opErr(r.OpNum, "4res", r.Stateid.decode(d, "stateid"))
}

// CloseArgs is CLOSE4args.
//
//	struct CLOSE4args { seqid4 seqid; stateid4 open_stateid; };
type CloseArgs struct {
	Seqid       uint32
	OpenStateid Stateid4
}

// Op returns OpClose.
func (a *CloseArgs) Op() OpNum { return OpClose }

// EncodeXDR encodes CLOSE4args.
func (a *CloseArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(a.Seqid)
	a.OpenStateid.EncodeXDR(e)
}

// DecodeXDR decodes CLOSE4args.
func (a *CloseArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.Seqid, err = decodeU32(d, "CLOSE4args.seqid"); err != nil {
		return err
	}
	return a.OpenStateid.decode(d, "CLOSE4args.open_stateid")
}

func decodeLockType(d *xdr.Decoder, name string) (LockType, error) {
	v, err := decodeU32(d, name)
	if err != nil {
		return 0, err
	}
	if !LockType(v).Valid() {
		return 0, badEnum(name, v)
	}
	return LockType(v), nil
}

// Locker4 is locker4: a new lock owner (derived from an open) or an existing one.
//
//	union locker4 switch (bool new_lock_owner) {
//	case TRUE: open_to_lock_owner4 open_owner; case FALSE: exist_lock_owner4 lock_owner; };
//	struct open_to_lock_owner4 {
//	   seqid4 open_seqid; stateid4 open_stateid; seqid4 lock_seqid; lock_owner4 lock_owner; };
//	struct exist_lock_owner4 { stateid4 lock_stateid; seqid4 lock_seqid; };
type Locker4 struct {
	NewLockOwner bool
	OpenSeqid    uint32      // new
	OpenStateid  Stateid4    // new
	LockSeqid    uint32      // both
	LockOwner    StateOwner4 // new
	LockStateid  Stateid4    // existing
}

func (l *Locker4) encode(e *xdr.Encoder) {
	e.Bool(l.NewLockOwner)
	if l.NewLockOwner {
		e.Uint32(l.OpenSeqid)
		l.OpenStateid.EncodeXDR(e)
		e.Uint32(l.LockSeqid)
		l.LockOwner.EncodeXDR(e)
		return
	}
	l.LockStateid.EncodeXDR(e)
	e.Uint32(l.LockSeqid)
}

func (l *Locker4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "locker4"
	defer wrapErr(&err, outer)
	if l.NewLockOwner, err = decodeBool(d, name+".new_lock_owner"); err != nil {
		return err
	}
	if !l.NewLockOwner {
		l.OpenSeqid, l.OpenStateid, l.LockOwner = 0, Stateid4{}, StateOwner4{}
		if err = l.LockStateid.decode(d, name+".lock_stateid"); err != nil {
			return err
		}
		l.LockSeqid, err = decodeU32(d, name+".lock_seqid")
		return err
	}
	l.LockStateid = Stateid4{}
	if l.OpenSeqid, err = decodeU32(d, name+".open_seqid"); err != nil {
		return err
	}
	if err = l.OpenStateid.decode(d, name+".open_stateid"); err != nil {
		return err
	}
	if l.LockSeqid, err = decodeU32(d, name+".lock_seqid"); err != nil {
		return err
	}
	return l.LockOwner.decode(d, name+".lock_owner")
}

// LockArgs is LOCK4args. Length 0xffffffffffffffff means to the end of the file.
//
//	struct LOCK4args {
//	   nfs_lock_type4 locktype; bool reclaim; offset4 offset; length4 length; locker4 locker; };
type LockArgs struct {
	LockType LockType
	Reclaim  bool
	Offset   uint64
	Length   uint64
	Locker   Locker4
}

// Op returns OpLock.
func (a *LockArgs) Op() OpNum { return OpLock }

// EncodeXDR encodes LOCK4args.
func (a *LockArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(a.LockType))
	e.Bool(a.Reclaim)
	e.Uint64(a.Offset)
	e.Uint64(a.Length)
	a.Locker.encode(e)
}

// DecodeXDR decodes LOCK4args.
func (a *LockArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "LOCK4args"
	if a.LockType, err = decodeLockType(d, n+".locktype"); err != nil {
		return err
	}
	if a.Reclaim, err = decodeBool(d, n+".reclaim"); err != nil {
		return err
	}
	if a.Offset, err = decodeU64(d, n+".offset"); err != nil {
		return err
	}
	if a.Length, err = decodeU64(d, n+".length"); err != nil {
		return err
	}
	return a.Locker.decode(d, n+".locker")
}

// LockDenied4 is LOCK4denied: the lock that conflicts.
//
//	struct LOCK4denied {
//	   offset4 offset; length4 length; nfs_lock_type4 locktype; lock_owner4 owner; };
type LockDenied4 struct {
	Offset   uint64
	Length   uint64
	LockType LockType
	Owner    StateOwner4
}

func (l *LockDenied4) encode(e *xdr.Encoder) {
	e.Uint64(l.Offset)
	e.Uint64(l.Length)
	e.Uint32(uint32(l.LockType))
	l.Owner.EncodeXDR(e)
}

func (l *LockDenied4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "LOCK4denied"
	defer wrapErr(&err, outer)
	if l.Offset, err = decodeU64(d, name+".offset"); err != nil {
		return err
	}
	if l.Length, err = decodeU64(d, name+".length"); err != nil {
		return err
	}
	if l.LockType, err = decodeLockType(d, name+".locktype"); err != nil {
		return err
	}
	return l.Owner.decode(d, name+".owner")
}

// LockRes is LOCK4res and LOCKT4res: on NFS4_OK a lock stateid (LOCK only), on
// NFS4ERR_DENIED the conflicting lock.
//
//	union LOCK4res switch (nfsstat4 status) {
//	case NFS4_OK: LOCK4resok resok4; case NFS4ERR_DENIED: LOCK4denied denied; default: void; };
//	union LOCKT4res switch (nfsstat4 status) {
//	case NFS4ERR_DENIED: LOCK4denied denied; case NFS4_OK: void; default: void; };
type LockRes struct {
	OpNum       OpNum // OpLock or OpLockt
	Status      Status
	LockStateid Stateid4    // LOCK, NFS4_OK
	Denied      LockDenied4 // NFS4ERR_DENIED
}

// Op returns OpLock or OpLockt.
func (r *LockRes) Op() OpNum { return r.OpNum }

// Result returns the status.
func (r *LockRes) Result() Status { return r.Status }

// EncodeXDR encodes the result.
func (r *LockRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	switch {
	case r.Status == OK && r.OpNum == OpLock:
		r.LockStateid.EncodeXDR(e)
	case r.Status == ErrDenied:
		r.Denied.encode(e)
	}
}

// DecodeXDR decodes the result.
func (r *LockRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.LockStateid, r.Denied = Stateid4{}, LockDenied4{}
	v, err := d.Uint32()
	if err != nil {
		return opErr(r.OpNum, "4res.status", err)
	}
	switch r.Status = Status(v); {
	case r.Status == OK && r.OpNum == OpLock:
		return opErr(r.OpNum, "4res", r.LockStateid.decode(d, "lock_stateid"))
	case r.Status == ErrDenied:
		return opErr(r.OpNum, "4res", r.Denied.decode(d, "denied"))
	}
	return nil
}

// LocktArgs is LOCKT4args.
//
//	struct LOCKT4args { nfs_lock_type4 locktype; offset4 offset; length4 length; lock_owner4 owner; };
type LocktArgs struct {
	LockType LockType
	Offset   uint64
	Length   uint64
	Owner    StateOwner4
}

// Op returns OpLockt.
func (a *LocktArgs) Op() OpNum { return OpLockt }

// EncodeXDR encodes LOCKT4args.
func (a *LocktArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(a.LockType))
	e.Uint64(a.Offset)
	e.Uint64(a.Length)
	a.Owner.EncodeXDR(e)
}

// DecodeXDR decodes LOCKT4args.
func (a *LocktArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "LOCKT4args"
	if a.LockType, err = decodeLockType(d, n+".locktype"); err != nil {
		return err
	}
	if a.Offset, err = decodeU64(d, n+".offset"); err != nil {
		return err
	}
	if a.Length, err = decodeU64(d, n+".length"); err != nil {
		return err
	}
	return a.Owner.decode(d, n+".owner")
}

// LockuArgs is LOCKU4args; the result is a StateidRes.
//
//	struct LOCKU4args {
//	   nfs_lock_type4 locktype; seqid4 seqid; stateid4 lock_stateid; offset4 offset; length4 length; };
type LockuArgs struct {
	LockType    LockType
	Seqid       uint32
	LockStateid Stateid4
	Offset      uint64
	Length      uint64
}

// Op returns OpLocku.
func (a *LockuArgs) Op() OpNum { return OpLocku }

// EncodeXDR encodes LOCKU4args.
func (a *LockuArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(a.LockType))
	e.Uint32(a.Seqid)
	a.LockStateid.EncodeXDR(e)
	e.Uint64(a.Offset)
	e.Uint64(a.Length)
}

// DecodeXDR decodes LOCKU4args.
func (a *LockuArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "LOCKU4args"
	if a.LockType, err = decodeLockType(d, n+".locktype"); err != nil {
		return err
	}
	if a.Seqid, err = decodeU32(d, n+".seqid"); err != nil {
		return err
	}
	if err = a.LockStateid.decode(d, n+".lock_stateid"); err != nil {
		return err
	}
	if a.Offset, err = decodeU64(d, n+".offset"); err != nil {
		return err
	}
	a.Length, err = decodeU64(d, n+".length")
	return err
}

// ReleaseLockownerArgs is RELEASE_LOCKOWNER4args, an NFSv4.0 operation: it is decoded so
// that an NFSv4.1 server can answer it NFS4ERR_NOTSUPP in order. The result is a
// StatusRes.
//
//	struct RELEASE_LOCKOWNER4args { lock_owner4 lock_owner; };
type ReleaseLockownerArgs struct {
	LockOwner StateOwner4
}

// Op returns OpReleaseLockowner.
func (a *ReleaseLockownerArgs) Op() OpNum { return OpReleaseLockowner }

// EncodeXDR encodes RELEASE_LOCKOWNER4args.
func (a *ReleaseLockownerArgs) EncodeXDR(e *xdr.Encoder) { a.LockOwner.EncodeXDR(e) }

// DecodeXDR decodes RELEASE_LOCKOWNER4args.
func (a *ReleaseLockownerArgs) DecodeXDR(d *xdr.Decoder) error {
	return a.LockOwner.decode(d, "RELEASE_LOCKOWNER4args.lock_owner")
}
