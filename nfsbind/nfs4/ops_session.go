package nfs4

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// StateProtectOps4 is state_protect_ops4: operations (bits numbered by OpNum) the client
// wants the machine credential enforced for, or allowed with.
//
//	struct state_protect_ops4 { bitmap4 spo_must_enforce; bitmap4 spo_must_allow; };
type StateProtectOps4 struct {
	MustEnforce Bitmap4
	MustAllow   Bitmap4
}

func (s *StateProtectOps4) encode(e *xdr.Encoder) {
	s.MustEnforce.EncodeXDR(e)
	s.MustAllow.EncodeXDR(e)
}

func (s *StateProtectOps4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "state_protect_ops4"
	defer wrapErr(&err, outer)
	if err := s.MustEnforce.decode(d, name+".spo_must_enforce"); err != nil {
		return err
	}
	return s.MustAllow.decode(d, name+".spo_must_allow")
}

// StateProtect4 is state_protect4_a (EXCHANGE_ID arguments) and state_protect4_r
// (results) for the arms this package decodes: SP4_NONE and SP4_MACH_CRED. SP4_SSV is
// refused while decoding with a *StatusError carrying NFS4ERR_ENCR_ALG_UNSUPP, which is
// what a server without SSV support answers.
//
//	union state_protect4_a switch (state_protect_how4 spa_how) {
//	case SP4_NONE: void; case SP4_MACH_CRED: state_protect_ops4 spa_mach_ops;
//	case SP4_SSV: ssv_sp_parms4 spa_ssv_parms; };
type StateProtect4 struct {
	How     StateProtectHow
	MachOps StateProtectOps4 // SP4_MACH_CRED
}

func (s *StateProtect4) encode(e *xdr.Encoder) {
	e.Uint32(uint32(s.How))
	if s.How == SP4MachCred {
		s.MachOps.encode(e)
	}
}

func (s *StateProtect4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "state_protect4"
	defer wrapErr(&err, outer)
	how, err := decodeU32(d, name+".how")
	if err != nil {
		return err
	}
	s.How = StateProtectHow(how)
	switch s.How {
	case SP4None:
		s.MachOps.MustEnforce, s.MachOps.MustAllow = s.MachOps.MustEnforce[:0], s.MachOps.MustAllow[:0]
		return nil
	case SP4MachCred:
		return s.MachOps.decode(d, name+".mach_ops")
	case SP4SSV:
		return &StatusError{Status: ErrEncrAlgUnsupp, Err: fmt.Errorf("nfs4: %s: SP4_SSV: %w", name, ErrUnsupported)}
	}
	return badEnum(name+".how", how)
}

// ExchangeIDArgs is EXCHANGE_ID4args.
//
//	struct EXCHANGE_ID4args {
//	   client_owner4 eia_clientowner; uint32_t eia_flags;
//	   state_protect4_a eia_state_protect; nfs_impl_id4 eia_client_impl_id<1>; };
type ExchangeIDArgs struct {
	ClientOwner  ClientOwner4
	Flags        uint32
	StateProtect StateProtect4
	HasImplID    bool // eia_client_impl_id holds one element
	ImplID       NFSImplID4
}

// Op returns OpExchangeID.
func (a *ExchangeIDArgs) Op() OpNum { return OpExchangeID }

// EncodeXDR encodes EXCHANGE_ID4args.
func (a *ExchangeIDArgs) EncodeXDR(e *xdr.Encoder) {
	a.ClientOwner.EncodeXDR(e)
	e.Uint32(a.Flags)
	a.StateProtect.encode(e)
	encodeImplID(e, a.HasImplID, &a.ImplID)
}

// DecodeXDR decodes EXCHANGE_ID4args.
func (a *ExchangeIDArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "EXCHANGE_ID4args"
	if err = a.ClientOwner.decode(d, n+".eia_clientowner"); err != nil {
		return err
	}
	if a.Flags, err = decodeU32(d, n+".eia_flags"); err != nil {
		return err
	}
	if err = a.StateProtect.decode(d, n+".eia_state_protect"); err != nil {
		return err
	}
	a.HasImplID, err = decodeImplID(d, &a.ImplID, n+".eia_client_impl_id")
	return err
}

func encodeImplID(e *xdr.Encoder, has bool, id *NFSImplID4) {
	if !has {
		e.ArrayLen(0)
		return
	}
	e.ArrayLen(1)
	id.EncodeXDR(e)
}

func decodeImplID(d *xdr.Decoder, id *NFSImplID4, name string) (bool, error) {
	n, err := d.ArrayLen(1, 4)
	if err != nil {
		return false, field(name, err)
	}
	if n == 0 {
		*id = NFSImplID4{}
		return false, nil
	}
	return true, id.decode(d, name)
}

// ExchangeIDRes is EXCHANGE_ID4res.
//
//	struct EXCHANGE_ID4resok {
//	   clientid4 eir_clientid; sequenceid4 eir_sequenceid; uint32_t eir_flags;
//	   state_protect4_r eir_state_protect; server_owner4 eir_server_owner;
//	   opaque eir_server_scope<NFS4_OPAQUE_LIMIT>; nfs_impl_id4 eir_server_impl_id<1>; };
type ExchangeIDRes struct {
	Status       Status
	ClientID     uint64
	SequenceID   uint32
	Flags        uint32
	StateProtect StateProtect4
	ServerOwner  ServerOwner4
	ServerScope  []byte
	HasImplID    bool
	ImplID       NFSImplID4
}

// Op returns OpExchangeID.
func (r *ExchangeIDRes) Op() OpNum { return OpExchangeID }

// Result returns the status.
func (r *ExchangeIDRes) Result() Status { return r.Status }

// EncodeXDR encodes EXCHANGE_ID4res.
func (r *ExchangeIDRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.Uint64(r.ClientID)
	e.Uint32(r.SequenceID)
	e.Uint32(r.Flags)
	r.StateProtect.encode(e)
	r.ServerOwner.EncodeXDR(e)
	e.Opaque(r.ServerScope)
	encodeImplID(e, r.HasImplID, &r.ImplID)
}

// DecodeXDR decodes EXCHANGE_ID4res.
func (r *ExchangeIDRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "EXCHANGE_ID4res"
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	if r.ClientID, err = decodeU64(d, n+".eir_clientid"); err != nil {
		return err
	}
	if r.SequenceID, err = decodeU32(d, n+".eir_sequenceid"); err != nil {
		return err
	}
	if r.Flags, err = decodeU32(d, n+".eir_flags"); err != nil {
		return err
	}
	if err = r.StateProtect.decode(d, n+".eir_state_protect"); err != nil {
		return err
	}
	if err = r.ServerOwner.decode(d, n+".eir_server_owner"); err != nil {
		return err
	}
	if r.ServerScope, err = decodeOpaque(d, OpaqueLimit, n+".eir_server_scope"); err != nil {
		return err
	}
	r.HasImplID, err = decodeImplID(d, &r.ImplID, n+".eir_server_impl_id")
	return err
}

func encodeSecParms(e *xdr.Encoder, p []CallbackSecParms4) {
	e.ArrayLen(len(p))
	for i := range p {
		p[i].EncodeXDR(e)
	}
}

func decodeSecParms(d *xdr.Decoder, dst []CallbackSecParms4, name string) ([]CallbackSecParms4, error) {
	n, err := d.ArrayLen(MaxSecFlavors, 4)
	if err != nil {
		return dst[:0], field(name, err)
	}
	dst = dst[:0]
	for i := range n {
		if len(dst) < cap(dst) {
			dst = dst[:i+1]
			gids := dst[i].Sys.GIDs[:0] // keep the storage
			dst[i] = CallbackSecParms4{}
			dst[i].Sys.GIDs = gids
		} else {
			dst = append(dst, CallbackSecParms4{})
		}
		if err := dst[i].decode(d, ""); err != nil {
			return dst, fmt.Errorf("nfs4: %s[%d]: %w", name, i, err)
		}
	}
	return dst, nil
}

// CreateSessionArgs is CREATE_SESSION4args.
//
//	struct CREATE_SESSION4args {
//	   clientid4 csa_clientid; sequenceid4 csa_sequence; uint32_t csa_flags;
//	   channel_attrs4 csa_fore_chan_attrs; channel_attrs4 csa_back_chan_attrs;
//	   uint32_t csa_cb_program; callback_sec_parms4 csa_sec_parms<>; };
type CreateSessionArgs struct {
	ClientID      uint64
	Sequence      uint32
	Flags         uint32
	ForeChanAttrs ChannelAttrs4
	BackChanAttrs ChannelAttrs4
	CBProgram     uint32
	SecParms      []CallbackSecParms4 // at most MaxSecFlavors
}

// Op returns OpCreateSession.
func (a *CreateSessionArgs) Op() OpNum { return OpCreateSession }

// EncodeXDR encodes CREATE_SESSION4args.
func (a *CreateSessionArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint64(a.ClientID)
	e.Uint32(a.Sequence)
	e.Uint32(a.Flags)
	a.ForeChanAttrs.EncodeXDR(e)
	a.BackChanAttrs.EncodeXDR(e)
	e.Uint32(a.CBProgram)
	encodeSecParms(e, a.SecParms)
}

// DecodeXDR decodes CREATE_SESSION4args.
func (a *CreateSessionArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "CREATE_SESSION4args"
	if a.ClientID, err = decodeU64(d, n+".csa_clientid"); err != nil {
		return err
	}
	if a.Sequence, err = decodeU32(d, n+".csa_sequence"); err != nil {
		return err
	}
	if a.Flags, err = decodeU32(d, n+".csa_flags"); err != nil {
		return err
	}
	if err = a.ForeChanAttrs.decode(d, n+".csa_fore_chan_attrs"); err != nil {
		return err
	}
	if err = a.BackChanAttrs.decode(d, n+".csa_back_chan_attrs"); err != nil {
		return err
	}
	if a.CBProgram, err = decodeU32(d, n+".csa_cb_program"); err != nil {
		return err
	}
	a.SecParms, err = decodeSecParms(d, a.SecParms, n+".csa_sec_parms")
	return err
}

// CreateSessionRes is CREATE_SESSION4res.
//
//	struct CREATE_SESSION4resok {
//	   sessionid4 csr_sessionid; sequenceid4 csr_sequence; uint32_t csr_flags;
//	   channel_attrs4 csr_fore_chan_attrs; channel_attrs4 csr_back_chan_attrs; };
type CreateSessionRes struct {
	Status        Status
	SessionID     SessionID
	Sequence      uint32
	Flags         uint32
	ForeChanAttrs ChannelAttrs4
	BackChanAttrs ChannelAttrs4
}

// Op returns OpCreateSession.
func (r *CreateSessionRes) Op() OpNum { return OpCreateSession }

// Result returns the status.
func (r *CreateSessionRes) Result() Status { return r.Status }

// EncodeXDR encodes CREATE_SESSION4res.
func (r *CreateSessionRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.FixedOpaque(r.SessionID[:])
	e.Uint32(r.Sequence)
	e.Uint32(r.Flags)
	r.ForeChanAttrs.EncodeXDR(e)
	r.BackChanAttrs.EncodeXDR(e)
}

// DecodeXDR decodes CREATE_SESSION4res.
func (r *CreateSessionRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "CREATE_SESSION4res"
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	if err = r.SessionID.decode(d, n+".csr_sessionid"); err != nil {
		return err
	}
	if r.Sequence, err = decodeU32(d, n+".csr_sequence"); err != nil {
		return err
	}
	if r.Flags, err = decodeU32(d, n+".csr_flags"); err != nil {
		return err
	}
	if err = r.ForeChanAttrs.decode(d, n+".csr_fore_chan_attrs"); err != nil {
		return err
	}
	return r.BackChanAttrs.decode(d, n+".csr_back_chan_attrs")
}

// DestroySessionArgs is DESTROY_SESSION4args; the result is a StatusRes.
//
//	struct DESTROY_SESSION4args { sessionid4 dsa_sessionid; };
type DestroySessionArgs struct {
	SessionID SessionID
}

// Op returns OpDestroySession.
func (a *DestroySessionArgs) Op() OpNum { return OpDestroySession }

// EncodeXDR encodes DESTROY_SESSION4args.
func (a *DestroySessionArgs) EncodeXDR(e *xdr.Encoder) { e.FixedOpaque(a.SessionID[:]) }

// DecodeXDR decodes DESTROY_SESSION4args.
func (a *DestroySessionArgs) DecodeXDR(d *xdr.Decoder) error {
	return a.SessionID.decode(d, "DESTROY_SESSION4args.dsa_sessionid")
}

// DestroyClientIDArgs is DESTROY_CLIENTID4args; the result is a StatusRes.
//
//	struct DESTROY_CLIENTID4args { clientid4 dca_clientid; };
type DestroyClientIDArgs struct {
	ClientID uint64
}

// Op returns OpDestroyClientID.
func (a *DestroyClientIDArgs) Op() OpNum { return OpDestroyClientID }

// EncodeXDR encodes DESTROY_CLIENTID4args.
func (a *DestroyClientIDArgs) EncodeXDR(e *xdr.Encoder) { e.Uint64(a.ClientID) }

// DecodeXDR decodes DESTROY_CLIENTID4args.
func (a *DestroyClientIDArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.ClientID, err = decodeU64(d, "DESTROY_CLIENTID4args.dca_clientid")
	return err
}

// BindConnToSessionArgs is BIND_CONN_TO_SESSION4args.
//
//	struct BIND_CONN_TO_SESSION4args {
//	   sessionid4 bctsa_sessid; channel_dir_from_client4 bctsa_dir;
//	   bool bctsa_use_conn_in_rdma_mode; };
type BindConnToSessionArgs struct {
	SessionID         SessionID
	Dir               ChannelDirFromClient
	UseConnInRDMAMode bool
}

// Op returns OpBindConnToSession.
func (a *BindConnToSessionArgs) Op() OpNum { return OpBindConnToSession }

// EncodeXDR encodes BIND_CONN_TO_SESSION4args.
func (a *BindConnToSessionArgs) EncodeXDR(e *xdr.Encoder) {
	e.FixedOpaque(a.SessionID[:])
	e.Uint32(uint32(a.Dir))
	e.Bool(a.UseConnInRDMAMode)
}

// DecodeXDR decodes BIND_CONN_TO_SESSION4args; the direction must be defined.
func (a *BindConnToSessionArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "BIND_CONN_TO_SESSION4args"
	if err = a.SessionID.decode(d, n+".bctsa_sessid"); err != nil {
		return err
	}
	dir, err := decodeU32(d, n+".bctsa_dir")
	if err != nil {
		return err
	}
	switch ChannelDirFromClient(dir) {
	case CDFC4Fore, CDFC4Back, CDFC4ForeOrBoth, CDFC4BackOrBoth:
	default:
		return badEnum(n+".bctsa_dir", dir)
	}
	a.Dir = ChannelDirFromClient(dir)
	a.UseConnInRDMAMode, err = decodeBool(d, n+".bctsa_use_conn_in_rdma_mode")
	return err
}

// BindConnToSessionRes is BIND_CONN_TO_SESSION4res.
//
//	struct BIND_CONN_TO_SESSION4resok {
//	   sessionid4 bctsr_sessid; channel_dir_from_server4 bctsr_dir;
//	   bool bctsr_use_conn_in_rdma_mode; };
type BindConnToSessionRes struct {
	Status            Status
	SessionID         SessionID
	Dir               ChannelDirFromServer
	UseConnInRDMAMode bool
}

// Op returns OpBindConnToSession.
func (r *BindConnToSessionRes) Op() OpNum { return OpBindConnToSession }

// Result returns the status.
func (r *BindConnToSessionRes) Result() Status { return r.Status }

// EncodeXDR encodes BIND_CONN_TO_SESSION4res.
func (r *BindConnToSessionRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.FixedOpaque(r.SessionID[:])
	e.Uint32(uint32(r.Dir))
	e.Bool(r.UseConnInRDMAMode)
}

// DecodeXDR decodes BIND_CONN_TO_SESSION4res.
func (r *BindConnToSessionRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "BIND_CONN_TO_SESSION4res"
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	if err = r.SessionID.decode(d, n+".bctsr_sessid"); err != nil {
		return err
	}
	dir, err := decodeU32(d, n+".bctsr_dir")
	if err != nil {
		return err
	}
	if dir < uint32(CDFS4Fore) || dir > uint32(CDFS4Both) {
		return badEnum(n+".bctsr_dir", dir)
	}
	r.Dir = ChannelDirFromServer(dir)
	r.UseConnInRDMAMode, err = decodeBool(d, n+".bctsr_use_conn_in_rdma_mode")
	return err
}

// SequenceArgs is SEQUENCE4args. Decoding into a reused value does not allocate.
//
//	struct SEQUENCE4args {
//	   sessionid4 sa_sessionid; sequenceid4 sa_sequenceid; slotid4 sa_slotid;
//	   slotid4 sa_highest_slotid; bool sa_cachethis; };
type SequenceArgs struct {
	SessionID     SessionID
	SequenceID    uint32
	SlotID        uint32
	HighestSlotID uint32
	CacheThis     bool
}

// Op returns OpSequence.
func (a *SequenceArgs) Op() OpNum { return OpSequence }

// EncodeXDR encodes SEQUENCE4args.
func (a *SequenceArgs) EncodeXDR(e *xdr.Encoder) {
	e.FixedOpaque(a.SessionID[:])
	e.Uint32(a.SequenceID)
	e.Uint32(a.SlotID)
	e.Uint32(a.HighestSlotID)
	e.Bool(a.CacheThis)
}

// DecodeXDR decodes SEQUENCE4args.
func (a *SequenceArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "SEQUENCE4args"
	if err = a.SessionID.decode(d, n+".sa_sessionid"); err != nil {
		return err
	}
	if a.SequenceID, err = decodeU32(d, n+".sa_sequenceid"); err != nil {
		return err
	}
	if a.SlotID, err = decodeU32(d, n+".sa_slotid"); err != nil {
		return err
	}
	if a.HighestSlotID, err = decodeU32(d, n+".sa_highest_slotid"); err != nil {
		return err
	}
	a.CacheThis, err = decodeBool(d, n+".sa_cachethis")
	return err
}

// SequenceRes is SEQUENCE4res.
//
//	struct SEQUENCE4resok {
//	   sessionid4 sr_sessionid; sequenceid4 sr_sequenceid; slotid4 sr_slotid;
//	   slotid4 sr_highest_slotid; slotid4 sr_target_highest_slotid;
//	   uint32_t sr_status_flags; };
type SequenceRes struct {
	Status              Status
	SessionID           SessionID
	SequenceID          uint32
	SlotID              uint32
	HighestSlotID       uint32
	TargetHighestSlotID uint32
	StatusFlags         uint32 // SEQ4_STATUS_*
}

// Op returns OpSequence.
func (r *SequenceRes) Op() OpNum { return OpSequence }

// Result returns the status.
func (r *SequenceRes) Result() Status { return r.Status }

// EncodeXDR encodes SEQUENCE4res.
func (r *SequenceRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.FixedOpaque(r.SessionID[:])
	e.Uint32(r.SequenceID)
	e.Uint32(r.SlotID)
	e.Uint32(r.HighestSlotID)
	e.Uint32(r.TargetHighestSlotID)
	e.Uint32(r.StatusFlags)
}

// DecodeXDR decodes SEQUENCE4res.
func (r *SequenceRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "SEQUENCE4res"
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	if err = r.SessionID.decode(d, n+".sr_sessionid"); err != nil {
		return err
	}
	if d.Len() < 20 {
		_, err = d.FixedOpaque(20)
		return field(n, err)
	}
	r.SequenceID, _ = d.Uint32()
	r.SlotID, _ = d.Uint32()
	r.HighestSlotID, _ = d.Uint32()
	r.TargetHighestSlotID, _ = d.Uint32()
	r.StatusFlags, _ = d.Uint32()
	return nil
}

// ReclaimCompleteArgs is RECLAIM_COMPLETE4args; the result is a StatusRes.
//
//	struct RECLAIM_COMPLETE4args { bool rca_one_fs; };
type ReclaimCompleteArgs struct {
	OneFS bool
}

// Op returns OpReclaimComplete.
func (a *ReclaimCompleteArgs) Op() OpNum { return OpReclaimComplete }

// EncodeXDR encodes RECLAIM_COMPLETE4args.
func (a *ReclaimCompleteArgs) EncodeXDR(e *xdr.Encoder) { e.Bool(a.OneFS) }

// DecodeXDR decodes RECLAIM_COMPLETE4args.
func (a *ReclaimCompleteArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.OneFS, err = decodeBool(d, "RECLAIM_COMPLETE4args.rca_one_fs")
	return err
}

// SecinfoNoNameArgs is SECINFO_NO_NAME4args; the result is a SecinfoRes.
//
//	typedef secinfo_style4 SECINFO_NO_NAME4args;
type SecinfoNoNameArgs struct {
	Style SecinfoStyle
}

// Op returns OpSecinfoNoName.
func (a *SecinfoNoNameArgs) Op() OpNum { return OpSecinfoNoName }

// EncodeXDR encodes SECINFO_NO_NAME4args.
func (a *SecinfoNoNameArgs) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(a.Style)) }

// DecodeXDR decodes SECINFO_NO_NAME4args; the style must be defined.
func (a *SecinfoNoNameArgs) DecodeXDR(d *xdr.Decoder) error {
	v, err := decodeU32(d, "SECINFO_NO_NAME4args")
	if err != nil {
		return err
	}
	if v > uint32(SecinfoStyleParent) {
		return badEnum("SECINFO_NO_NAME4args", v)
	}
	a.Style = SecinfoStyle(v)
	return nil
}

// SecinfoArgs is SECINFO4args.
//
//	struct SECINFO4args { component4 name; };
type SecinfoArgs struct {
	Name []byte
}

// Op returns OpSecinfo.
func (a *SecinfoArgs) Op() OpNum { return OpSecinfo }

// EncodeXDR encodes SECINFO4args.
func (a *SecinfoArgs) EncodeXDR(e *xdr.Encoder) { e.Opaque(a.Name) }

// DecodeXDR decodes SECINFO4args.
func (a *SecinfoArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.Name, err = decodeComponent(d, "SECINFO4args.name")
	return err
}

// Secinfo4 is secinfo4: a security flavor and, for RPCSEC_GSS, its mechanism.
//
//	struct rpcsec_gss_info { sec_oid4 oid; qop4 qop; rpc_gss_svc_t service; };
//	union secinfo4 switch (uint32_t flavor) {
//	case RPCSEC_GSS: rpcsec_gss_info flavor_info; default: void; };
type Secinfo4 struct {
	Flavor  uint32
	OID     []byte // RPCSEC_GSS only
	QOP     uint32 // RPCSEC_GSS only
	Service uint32 // RPCSEC_GSS only
}

// SecinfoRes is SECINFO4res, also the result of SECINFO_NO_NAME.
//
//	typedef secinfo4 SECINFO4resok<>;
type SecinfoRes struct {
	OpNum   OpNum // OpSecinfo or OpSecinfoNoName
	Status  Status
	Flavors []Secinfo4 // at most MaxSecFlavors
}

// Op returns OpSecinfo or OpSecinfoNoName.
func (r *SecinfoRes) Op() OpNum { return r.OpNum }

// Result returns the status.
func (r *SecinfoRes) Result() Status { return r.Status }

// EncodeXDR encodes SECINFO4res.
func (r *SecinfoRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.ArrayLen(len(r.Flavors))
	for i := range r.Flavors {
		f := &r.Flavors[i]
		e.Uint32(f.Flavor)
		if f.Flavor == RPCSecGSS {
			e.Opaque(f.OID)
			e.Uint32(f.QOP)
			e.Uint32(f.Service)
		}
	}
}

// DecodeXDR decodes SECINFO4res.
func (r *SecinfoRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "SECINFO4res" // SECINFO_NO_NAME4res is the same type
	r.Flavors = r.Flavors[:0]
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	cnt, err := d.ArrayLen(MaxSecFlavors, 4)
	if err != nil {
		return field(n+".flavors", err)
	}
	for range cnt {
		var f Secinfo4
		if f.Flavor, err = decodeU32(d, n+".flavor"); err != nil {
			return err
		}
		if f.Flavor == RPCSecGSS {
			if f.OID, err = decodeOpaque(d, OpaqueLimit, n+".oid"); err != nil {
				return err
			}
			if f.QOP, err = decodeU32(d, n+".qop"); err != nil {
				return err
			}
			if f.Service, err = decodeU32(d, n+".service"); err != nil {
				return err
			}
		}
		r.Flavors = append(r.Flavors, f)
	}
	return nil
}

// TestStateidArgs is TEST_STATEID4args.
//
//	struct TEST_STATEID4args { stateid4 ts_stateids<>; };
type TestStateidArgs struct {
	Stateids []Stateid4 // at most MaxStateids
}

// Op returns OpTestStateid.
func (a *TestStateidArgs) Op() OpNum { return OpTestStateid }

// EncodeXDR encodes TEST_STATEID4args.
func (a *TestStateidArgs) EncodeXDR(e *xdr.Encoder) {
	e.ArrayLen(len(a.Stateids))
	for i := range a.Stateids {
		a.Stateids[i].EncodeXDR(e)
	}
}

// DecodeXDR decodes TEST_STATEID4args, reusing the slice's storage.
func (a *TestStateidArgs) DecodeXDR(d *xdr.Decoder) error {
	n, err := d.ArrayLen(MaxStateids, StateidSize)
	if err != nil {
		return field("TEST_STATEID4args.ts_stateids", err)
	}
	a.Stateids = a.Stateids[:0]
	for range n {
		var s Stateid4
		_ = s.decode(d, "") // ArrayLen checked the bytes are there
		a.Stateids = append(a.Stateids, s)
	}
	return nil
}

// TestStateidRes is TEST_STATEID4res.
//
//	struct TEST_STATEID4resok { nfsstat4 tsr_status_codes<>; };
type TestStateidRes struct {
	Status      Status
	StatusCodes []Status // one per stateid asked about
}

// Op returns OpTestStateid.
func (r *TestStateidRes) Op() OpNum { return OpTestStateid }

// Result returns the status.
func (r *TestStateidRes) Result() Status { return r.Status }

// EncodeXDR encodes TEST_STATEID4res.
func (r *TestStateidRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.ArrayLen(len(r.StatusCodes))
	for _, s := range r.StatusCodes {
		e.Uint32(uint32(s))
	}
}

// DecodeXDR decodes TEST_STATEID4res.
func (r *TestStateidRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.StatusCodes = r.StatusCodes[:0]
	if r.Status, err = decodeStatus(d, "TEST_STATEID4res"); err != nil || r.Status != OK {
		return err
	}
	n, err := d.ArrayLen(MaxStateids, 4)
	if err != nil {
		return field("TEST_STATEID4res.tsr_status_codes", err)
	}
	for range n {
		v, _ := d.Uint32()
		r.StatusCodes = append(r.StatusCodes, Status(v))
	}
	return nil
}

// StateidArgs is the arguments of FREE_STATEID and DELEGRETURN: a stateid; the result
// is a StatusRes.
//
//	struct FREE_STATEID4args { stateid4 fsa_stateid; };
//	struct DELEGRETURN4args { stateid4 deleg_stateid; };
type StateidArgs struct {
	OpNum   OpNum // OpFreeStateid or OpDelegreturn
	Stateid Stateid4
}

// Op returns OpFreeStateid or OpDelegreturn.
func (a *StateidArgs) Op() OpNum { return a.OpNum }

// EncodeXDR encodes the stateid.
func (a *StateidArgs) EncodeXDR(e *xdr.Encoder) { a.Stateid.EncodeXDR(e) }

// DecodeXDR decodes the stateid.
func (a *StateidArgs) DecodeXDR(d *xdr.Decoder) error {
	return opErr(a.OpNum, "4args.stateid", a.Stateid.decode(d, "stateid4"))
}

// BackchannelCtlArgs is BACKCHANNEL_CTL4args; the result is a StatusRes.
//
//	struct BACKCHANNEL_CTL4args { uint32_t bca_cb_program; callback_sec_parms4 bca_sec_parms<>; };
type BackchannelCtlArgs struct {
	CBProgram uint32
	SecParms  []CallbackSecParms4
}

// Op returns OpBackchannelCtl.
func (a *BackchannelCtlArgs) Op() OpNum { return OpBackchannelCtl }

// EncodeXDR encodes BACKCHANNEL_CTL4args.
func (a *BackchannelCtlArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(a.CBProgram)
	encodeSecParms(e, a.SecParms)
}

// DecodeXDR decodes BACKCHANNEL_CTL4args.
func (a *BackchannelCtlArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.CBProgram, err = decodeU32(d, "BACKCHANNEL_CTL4args.bca_cb_program"); err != nil {
		return err
	}
	a.SecParms, err = decodeSecParms(d, a.SecParms, "BACKCHANNEL_CTL4args.bca_sec_parms")
	return err
}
