package nfs4

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
	// ErrUnsupported means the item is well formed but this package does not decode its
	// contents (an RPCSEC_GSS callback handle, an SSV state protection, a pNFS result
	// body); the error wraps the Status a server answers with.
	ErrUnsupported = errors.New("not supported")
)

// A StatusError is a decoding failure that maps to a specific NFSv4 status rather than
// NFS4ERR_BADXDR, such as an attribute bit this package does not know
// (NFS4ERR_ATTRNOTSUPP).
type StatusError struct {
	Status Status
	Err    error
}

func (e *StatusError) Error() string { return e.Err.Error() + " (" + e.Status.String() + ")" }

func (e *StatusError) Unwrap() error { return e.Err }

// StatusOf returns the status a server answers for a decoding error err: the Status of a
// *StatusError in its chain, NFS4_OK for nil, else NFS4ERR_BADXDR.
func StatusOf(err error) Status {
	if err == nil {
		return OK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return ErrBadxdr
}

// opErr wraps a decoding error, if any, with the operation's name and the field, which
// it builds only on failure.
func opErr(op OpNum, suffix string, err error) error {
	if err == nil {
		return nil
	}
	return field(op.String()+suffix, err)
}

// wrapErr prefixes *err, if set, with the name of the enclosing field; sub-decoders use
// it so that names are joined only on failure.
func wrapErr(err *error, outer string) {
	if *err != nil {
		*err = field(outer, *err)
	}
}

// field wraps a decoding error with the name of the field that failed.
// An empty name leaves err as it is.
func field(name string, err error) error {
	if name == "" {
		return err
	}
	return fmt.Errorf("nfs4: %s: %w", name, err)
}

func badEnum(name string, v uint32) error {
	return fmt.Errorf("nfs4: %s: %w: %d", name, ErrBadEnum, v)
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

func decodeOpaque(d *xdr.Decoder, max int, name string) ([]byte, error) {
	b, err := d.Opaque(max)
	if err != nil {
		return nil, field(name, err)
	}
	return b, nil
}

func decodeStr(d *xdr.Decoder, max int, name string) ([]byte, error) {
	b, err := d.StringBytes(max)
	if err != nil {
		return nil, field(name, err)
	}
	return b, nil
}

// decodeComponent decodes a component4 (a file name) of at most MaxComponent bytes. A
// zero-length name is well formed XDR; the server answers NFS4ERR_INVAL for it.
func decodeComponent(d *xdr.Decoder, name string) ([]byte, error) {
	return decodeStr(d, MaxComponent, name)
}

func decodeStatus(d *xdr.Decoder, name string) (Status, error) {
	v, err := d.Uint32()
	if err != nil {
		return 0, field(name+".status", err)
	}
	return Status(v), nil
}

// Bitmap4 is bitmap4, a set of bits numbered from 0 in word 0's least significant bit. It
// names attributes (Attr) in GETATTR, SETATTR and fattr4, and operations in EXCHANGE_ID's
// state protection.
//
//	typedef uint32_t bitmap4<>;
type Bitmap4 []uint32

// HasBit reports whether bit n is set.
func (b Bitmap4) HasBit(n uint32) bool {
	w := n / 32
	return int(w) < len(b) && b[w]&(1<<(n%32)) != 0
}

// SetBit sets bit n, growing b as needed.
func (b *Bitmap4) SetBit(n uint32) {
	w := int(n / 32)
	for len(*b) <= w {
		*b = append(*b, 0)
	}
	(*b)[w] |= 1 << (n % 32)
}

// ClearBit clears bit n.
func (b Bitmap4) ClearBit(n uint32) {
	if w := int(n / 32); w < len(b) {
		b[w] &^= 1 << (n % 32)
	}
}

// Has reports whether attribute a is in b.
func (b Bitmap4) Has(a Attr) bool { return b.HasBit(uint32(a)) }

// Set adds attribute a to b.
func (b *Bitmap4) Set(a Attr) { b.SetBit(uint32(a)) }

// Clear removes attribute a from b.
func (b Bitmap4) Clear(a Attr) { b.ClearBit(uint32(a)) }

// NewBitmap returns a bitmap with the given attributes set.
func NewBitmap(attrs ...Attr) Bitmap4 {
	var b Bitmap4
	for _, a := range attrs {
		b.Set(a)
	}
	return b
}

// And returns the bits set in both b and o, as a new bitmap without trailing zero words.
func (b Bitmap4) And(o Bitmap4) Bitmap4 {
	n := min(len(b), len(o))
	out := make(Bitmap4, n)
	for i := range out {
		out[i] = b[i] & o[i]
	}
	return out.trim()
}

// Intersect clears in b every bit not set in o and drops trailing zero words, in place
// and without allocating (a server limiting a GETATTR request to what it supports).
func (b *Bitmap4) Intersect(o Bitmap4) {
	for i := range *b {
		if i < len(o) {
			(*b)[i] &= o[i]
		} else {
			(*b)[i] = 0
		}
	}
	*b = b.trim()
}

// AndNot returns the bits set in b and not in o.
func (b Bitmap4) AndNot(o Bitmap4) Bitmap4 {
	out := make(Bitmap4, len(b))
	for i := range out {
		out[i] = b[i]
		if i < len(o) {
			out[i] &^= o[i]
		}
	}
	return out.trim()
}

// IsZero reports whether no bit is set.
func (b Bitmap4) IsZero() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether b and o have the same bits set, ignoring trailing zero words.
func (b Bitmap4) Equal(o Bitmap4) bool {
	for i := 0; i < max(len(b), len(o)); i++ {
		var x, y uint32
		if i < len(b) {
			x = b[i]
		}
		if i < len(o) {
			y = o[i]
		}
		if x != y {
			return false
		}
	}
	return true
}

func (b Bitmap4) trim() Bitmap4 {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// EncodeXDR encodes a bitmap4 with the words of b as given.
func (b Bitmap4) EncodeXDR(e *xdr.Encoder) {
	e.ArrayLen(len(b))
	for _, w := range b {
		e.Uint32(w)
	}
}

// decode decodes a bitmap4 of at most MaxBitmapWords words into b, reusing its storage.
func (b *Bitmap4) decode(d *xdr.Decoder, name string) error {
	n, err := d.ArrayLen(MaxBitmapWords, 4)
	if err != nil {
		return field(name, err)
	}
	*b = (*b)[:0]
	for range n {
		w, _ := d.Uint32() // ArrayLen checked the bytes are there
		*b = append(*b, w)
	}
	return nil
}

// DecodeXDR decodes a bitmap4 of at most MaxBitmapWords words, reusing b's storage.
func (b *Bitmap4) DecodeXDR(d *xdr.Decoder) error { return b.decode(d, "bitmap4") }

// Stateid4 is stateid4 (RFC 8881 §8.2).
//
//	struct stateid4 { uint32_t seqid; opaque other[NFS4_OTHER_SIZE]; };
type Stateid4 struct {
	Seqid uint32
	Other [OtherSize]byte
}

// Special stateids (RFC 8881 §8.2.3).
var (
	// AnonymousStateid is all zeros: I/O without open state.
	AnonymousStateid = Stateid4{}
	// BypassStateid is all ones: READ that bypasses share reservations.
	BypassStateid = Stateid4{Seqid: 0xffffffff, Other: [OtherSize]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	// CurrentStateid (seqid 1, other zero) means the current stateid of the COMPOUND.
	CurrentStateid = Stateid4{Seqid: 1}
	// InvalidStateid (seqid 0xffffffff, other zero) never names state.
	InvalidStateid = Stateid4{Seqid: 0xffffffff}
)

// EncodeXDR encodes a stateid4.
func (s *Stateid4) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(s.Seqid)
	e.FixedOpaque(s.Other[:])
}

func (s *Stateid4) decode(d *xdr.Decoder, name string) error {
	if d.Len() < StateidSize {
		_, err := d.FixedOpaque(StateidSize)
		return field(name, err)
	}
	s.Seqid, _ = d.Uint32()
	b, _ := d.FixedOpaque(OtherSize)
	copy(s.Other[:], b)
	return nil
}

// DecodeXDR decodes a stateid4.
func (s *Stateid4) DecodeXDR(d *xdr.Decoder) error { return s.decode(d, "stateid4") }

func (s Stateid4) String() string { return fmt.Sprintf("%d:%x", s.Seqid, s.Other) }

// SessionID is sessionid4.
type SessionID [SessionIDSize]byte

func (s *SessionID) decode(d *xdr.Decoder, name string) error {
	b, err := d.FixedOpaque(SessionIDSize)
	if err != nil {
		return field(name, err)
	}
	copy(s[:], b)
	return nil
}

func (s SessionID) String() string { return fmt.Sprintf("%x", s[:]) }

// Verifier is verifier4.
type Verifier [VerifierSize]byte

func (v *Verifier) decode(d *xdr.Decoder, name string) error {
	b, err := d.FixedOpaque(VerifierSize)
	if err != nil {
		return field(name, err)
	}
	copy(v[:], b)
	return nil
}

// FH is nfs_fh4, an opaque file handle of at most FHSize bytes. Decoded handles alias the
// decoder's buffer.
//
//	typedef opaque nfs_fh4<NFS4_FHSIZE>;
type FH []byte

func decodeFH(d *xdr.Decoder, name string) (FH, error) {
	b, err := d.Opaque(FHSize)
	if err != nil {
		return nil, field(name, err)
	}
	return FH(b), nil
}

// ClientOwner4 is client_owner4 (EXCHANGE_ID).
//
//	struct client_owner4 { verifier4 co_verifier; opaque co_ownerid<NFS4_OPAQUE_LIMIT>; };
type ClientOwner4 struct {
	Verifier Verifier
	OwnerID  []byte
}

// EncodeXDR encodes a client_owner4.
func (c *ClientOwner4) EncodeXDR(e *xdr.Encoder) {
	e.FixedOpaque(c.Verifier[:])
	e.Opaque(c.OwnerID)
}

func (c *ClientOwner4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "client_owner4"
	defer wrapErr(&err, outer)
	if err = c.Verifier.decode(d, name+".co_verifier"); err != nil {
		return err
	}
	c.OwnerID, err = decodeOpaque(d, OpaqueLimit, name+".co_ownerid")
	return err
}

// DecodeXDR decodes a client_owner4.
func (c *ClientOwner4) DecodeXDR(d *xdr.Decoder) error { return c.decode(d, "client_owner4") }

// StateOwner4 is state_owner4, the open_owner4 and lock_owner4 of OPEN and LOCK.
//
//	struct state_owner4 { clientid4 clientid; opaque owner<NFS4_OPAQUE_LIMIT>; };
type StateOwner4 struct {
	ClientID uint64
	Owner    []byte
}

// EncodeXDR encodes a state_owner4.
func (s *StateOwner4) EncodeXDR(e *xdr.Encoder) {
	e.Uint64(s.ClientID)
	e.Opaque(s.Owner)
}

func (s *StateOwner4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "state_owner4"
	defer wrapErr(&err, outer)
	if s.ClientID, err = decodeU64(d, name+".clientid"); err != nil {
		return err
	}
	s.Owner, err = decodeOpaque(d, OpaqueLimit, name+".owner")
	return err
}

// DecodeXDR decodes a state_owner4.
func (s *StateOwner4) DecodeXDR(d *xdr.Decoder) error { return s.decode(d, "state_owner4") }

// NFSTime4 is nfstime4.
//
//	struct nfstime4 { int64_t seconds; uint32_t nseconds; };
type NFSTime4 struct {
	Seconds  int64
	Nseconds uint32
}

// EncodeXDR encodes an nfstime4.
func (t *NFSTime4) EncodeXDR(e *xdr.Encoder) {
	e.Int64(t.Seconds)
	e.Uint32(t.Nseconds)
}

func (t *NFSTime4) decode(d *xdr.Decoder, name string) error {
	if d.Len() < 12 {
		_, err := d.FixedOpaque(12)
		return field(name, err)
	}
	t.Seconds, _ = d.Int64()
	t.Nseconds, _ = d.Uint32()
	return nil
}

// DecodeXDR decodes an nfstime4. A nanosecond count of 10^9 or more is well formed XDR;
// a server answers NFS4ERR_INVAL for it where it matters (SETATTR).
func (t *NFSTime4) DecodeXDR(d *xdr.Decoder) error { return t.decode(d, "nfstime4") }

// ChannelAttrs4 is channel_attrs4 (CREATE_SESSION).
//
//	struct channel_attrs4 {
//	   count4 ca_headerpadsize; count4 ca_maxrequestsize; count4 ca_maxresponsesize;
//	   count4 ca_maxresponsesize_cached; count4 ca_maxoperations; count4 ca_maxrequests;
//	   uint32_t ca_rdma_ird<1>;
//	};
type ChannelAttrs4 struct {
	HeaderPadSize         uint32
	MaxRequestSize        uint32
	MaxResponseSize       uint32
	MaxResponseSizeCached uint32
	MaxOperations         uint32
	MaxRequests           uint32
	// HasRdmaIrd says ca_rdma_ird holds one element, RdmaIrd.
	HasRdmaIrd bool
	RdmaIrd    uint32
}

// EncodeXDR encodes a channel_attrs4.
func (c *ChannelAttrs4) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(c.HeaderPadSize)
	e.Uint32(c.MaxRequestSize)
	e.Uint32(c.MaxResponseSize)
	e.Uint32(c.MaxResponseSizeCached)
	e.Uint32(c.MaxOperations)
	e.Uint32(c.MaxRequests)
	if c.HasRdmaIrd {
		e.ArrayLen(1)
		e.Uint32(c.RdmaIrd)
	} else {
		e.ArrayLen(0)
	}
}

func (c *ChannelAttrs4) decode(d *xdr.Decoder, name string) error {
	if d.Len() < 28 {
		_, err := d.FixedOpaque(28)
		return field(name, err)
	}
	c.HeaderPadSize, _ = d.Uint32()
	c.MaxRequestSize, _ = d.Uint32()
	c.MaxResponseSize, _ = d.Uint32()
	c.MaxResponseSizeCached, _ = d.Uint32()
	c.MaxOperations, _ = d.Uint32()
	c.MaxRequests, _ = d.Uint32()
	n, err := d.ArrayLen(1, 4)
	if err != nil {
		return field(name+".ca_rdma_ird", err)
	}
	c.HasRdmaIrd, c.RdmaIrd = n == 1, 0
	if n == 1 {
		c.RdmaIrd, _ = d.Uint32()
	}
	return nil
}

// DecodeXDR decodes a channel_attrs4.
func (c *ChannelAttrs4) DecodeXDR(d *xdr.Decoder) error { return c.decode(d, "channel_attrs4") }

// AuthSysParms is authsys_parms (RFC 5531), as carried in callback_sec_parms4.
type AuthSysParms struct {
	Stamp       uint32
	MachineName []byte // at most 255 bytes
	UID, GID    uint32
	GIDs        []uint32 // at most MaxGIDs
}

// GSSCBHandles is gss_cb_handles4, the RPCSEC_GSS arm of callback_sec_parms4.
type GSSCBHandles struct {
	Service          uint32 // rpc_gss_svc_t
	HandleFromServer []byte
	HandleFromClient []byte
}

// CallbackSecParms4 is callback_sec_parms4: how the server authenticates callbacks.
// AUTH_NONE and AUTH_SYS are decoded for use; RPCSEC_GSS is decoded (GSS) so a server can
// see it was asked for and refuse it, since this package implements no GSS.
//
//	union callback_sec_parms4 switch (uint32_t cb_secflavor) {
//	case AUTH_NONE: void; case AUTH_SYS: authsys_parms cbsp_sys_cred;
//	case RPCSEC_GSS: gss_cb_handles4 cbsp_gss_handles; };
type CallbackSecParms4 struct {
	Flavor uint32
	Sys    AuthSysParms // AUTH_SYS
	GSS    GSSCBHandles // RPCSEC_GSS
}

// EncodeXDR encodes a callback_sec_parms4.
func (c *CallbackSecParms4) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(c.Flavor)
	switch c.Flavor {
	case AuthSys:
		e.Uint32(c.Sys.Stamp)
		e.Opaque(c.Sys.MachineName)
		e.Uint32(c.Sys.UID)
		e.Uint32(c.Sys.GID)
		e.ArrayLen(len(c.Sys.GIDs))
		for _, g := range c.Sys.GIDs {
			e.Uint32(g)
		}
	case RPCSecGSS:
		e.Uint32(c.GSS.Service)
		e.Opaque(c.GSS.HandleFromServer)
		e.Opaque(c.GSS.HandleFromClient)
	}
}

func (c *CallbackSecParms4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "callback_sec_parms4"
	defer wrapErr(&err, outer)
	if c.Flavor, err = decodeU32(d, name+".cb_secflavor"); err != nil {
		return err
	}
	switch c.Flavor {
	case AuthNone:
		return nil
	case AuthSys:
		s := &c.Sys
		if s.Stamp, err = decodeU32(d, name+".stamp"); err != nil {
			return err
		}
		if s.MachineName, err = decodeOpaque(d, 255, name+".machinename"); err != nil {
			return err
		}
		if s.UID, err = decodeU32(d, name+".uid"); err != nil {
			return err
		}
		if s.GID, err = decodeU32(d, name+".gid"); err != nil {
			return err
		}
		n, err := d.ArrayLen(MaxGIDs, 4)
		if err != nil {
			return field(name+".gids", err)
		}
		s.GIDs = s.GIDs[:0]
		for range n {
			g, _ := d.Uint32()
			s.GIDs = append(s.GIDs, g)
		}
		return nil
	case RPCSecGSS:
		g := &c.GSS
		if g.Service, err = decodeU32(d, name+".gcbp_service"); err != nil {
			return err
		}
		if g.HandleFromServer, err = decodeOpaque(d, OpaqueLimit, name+".gcbp_handle_from_server"); err != nil {
			return err
		}
		g.HandleFromClient, err = decodeOpaque(d, OpaqueLimit, name+".gcbp_handle_from_client")
		return err
	}
	return badEnum(name+".cb_secflavor", c.Flavor)
}

// DecodeXDR decodes a callback_sec_parms4; flavors other than AUTH_NONE, AUTH_SYS and
// RPCSEC_GSS are an ErrBadEnum.
func (c *CallbackSecParms4) DecodeXDR(d *xdr.Decoder) error {
	return c.decode(d, "callback_sec_parms4")
}

// ServerOwner4 is server_owner4 (EXCHANGE_ID result).
//
//	struct server_owner4 { uint64_t so_minor_id; opaque so_major_id<NFS4_OPAQUE_LIMIT>; };
type ServerOwner4 struct {
	MinorID uint64
	MajorID []byte
}

// EncodeXDR encodes a server_owner4.
func (s *ServerOwner4) EncodeXDR(e *xdr.Encoder) {
	e.Uint64(s.MinorID)
	e.Opaque(s.MajorID)
}

func (s *ServerOwner4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "server_owner4"
	defer wrapErr(&err, outer)
	if s.MinorID, err = decodeU64(d, name+".so_minor_id"); err != nil {
		return err
	}
	s.MajorID, err = decodeOpaque(d, OpaqueLimit, name+".so_major_id")
	return err
}

// DecodeXDR decodes a server_owner4.
func (s *ServerOwner4) DecodeXDR(d *xdr.Decoder) error { return s.decode(d, "server_owner4") }

// NFSImplID4 is nfs_impl_id4, an implementation's self-description (EXCHANGE_ID).
//
//	struct nfs_impl_id4 { utf8str_cis nii_domain; utf8str_cs nii_name; nfstime4 nii_date; };
type NFSImplID4 struct {
	Domain []byte
	Name   []byte
	Date   NFSTime4
}

// EncodeXDR encodes an nfs_impl_id4.
func (n *NFSImplID4) EncodeXDR(e *xdr.Encoder) {
	e.Opaque(n.Domain)
	e.Opaque(n.Name)
	n.Date.EncodeXDR(e)
}

func (n *NFSImplID4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "nfs_impl_id4"
	defer wrapErr(&err, outer)
	if n.Domain, err = decodeStr(d, MaxUTF8Str, name+".nii_domain"); err != nil {
		return err
	}
	if n.Name, err = decodeStr(d, MaxUTF8Str, name+".nii_name"); err != nil {
		return err
	}
	return n.Date.decode(d, name+".nii_date")
}

// DecodeXDR decodes an nfs_impl_id4.
func (n *NFSImplID4) DecodeXDR(d *xdr.Decoder) error { return n.decode(d, "nfs_impl_id4") }

// FSID4 is fsid4.
type FSID4 struct {
	Major, Minor uint64
}

// SpecData4 is specdata4, a device's major and minor numbers.
type SpecData4 struct {
	Major, Minor uint32
}

// SetTime4 is settime4: a time to set, or "the server's time".
//
//	union settime4 switch (time_how4 set_it) {
//	case SET_TO_CLIENT_TIME4: nfstime4 time; default: void; };
type SetTime4 struct {
	How  TimeHow
	Time NFSTime4 // SET_TO_CLIENT_TIME4 only
}

// EncodeXDR encodes a settime4.
func (s *SetTime4) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(s.How))
	if s.How == SetToClientTime4 {
		s.Time.EncodeXDR(e)
	}
}

func (s *SetTime4) decode(d *xdr.Decoder, outer string) (err error) {
	const name = "settime4"
	defer wrapErr(&err, outer)
	how, err := decodeU32(d, name+".set_it")
	if err != nil {
		return err
	}
	switch TimeHow(how) {
	case SetToServerTime4:
		s.How, s.Time = SetToServerTime4, NFSTime4{}
		return nil
	case SetToClientTime4:
		s.How = SetToClientTime4
		return s.Time.decode(d, name+".time")
	}
	return badEnum(name+".set_it", how)
}
