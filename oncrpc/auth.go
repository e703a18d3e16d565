package oncrpc

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Authentication layout (RFC 5531 §8.2 and Appendix A):
//
//	enum auth_flavor { AUTH_NONE = 0, AUTH_SYS = 1, AUTH_SHORT = 2, AUTH_DH = 3,
//	                   RPCSEC_GSS = 6 /* and more, IANA-assigned */ };
//
//	struct opaque_auth {
//	    auth_flavor flavor;
//	    opaque body<400>;
//	};
//
//	struct authsys_parms {
//	    unsigned int stamp;
//	    string machinename<255>;
//	    unsigned int uid;
//	    unsigned int gid;
//	    unsigned int gids<16>;
//	};

// Flavor is an authentication flavor (auth_flavor).
type Flavor uint32

// Authentication flavors.
const (
	AuthNone  Flavor = 0 // AUTH_NONE
	AuthSys   Flavor = 1 // AUTH_SYS (formerly AUTH_UNIX)
	AuthShort Flavor = 2 // AUTH_SHORT
	AuthDH    Flavor = 3 // AUTH_DH
	RPCSecGSS Flavor = 6 // RPCSEC_GSS
)

func (f Flavor) String() string {
	switch f {
	case AuthNone:
		return "AUTH_NONE"
	case AuthSys:
		return "AUTH_SYS"
	case AuthShort:
		return "AUTH_SHORT"
	case AuthDH:
		return "AUTH_DH"
	case RPCSecGSS:
		return "RPCSEC_GSS"
	}
	return fmt.Sprintf("auth_flavor(%d)", uint32(f))
}

// Limits from RFC 5531.
const (
	MaxAuthBytes       = 400 // opaque_auth body<400>
	MaxMachineNameLen  = 255 // authsys_parms machinename<255>
	MaxAuthSysGIDs     = 16  // authsys_parms gids<16>
	maxAuthSysBodySize = 4 + 4 + MaxMachineNameLen + 1 + 4 + 4 + 4 + 4*MaxAuthSysGIDs
)

// OpaqueAuth is a credential or verifier: a flavor and an opaque body of at most
// MaxAuthBytes. A decoded Body aliases the decoded buffer.
type OpaqueAuth struct {
	Flavor Flavor
	Body   []byte
}

// Append appends the encoded opaque_auth to b. The body is written as is; encoders
// that build bodies (NewAuthSys) enforce the limit.
func (a *OpaqueAuth) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(a.Flavor))
	return xdr.AppendOpaque(b, a.Body)
}

// EncodeXDR encodes the opaque_auth.
func (a *OpaqueAuth) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(a.Flavor))
	e.Opaque(a.Body)
}

// DecodeXDR decodes an opaque_auth, enforcing the 400-byte body limit.
func (a *OpaqueAuth) DecodeXDR(d *xdr.Decoder) error {
	if field, err := a.decode(d, "opaque_auth"); err != nil {
		return fmt.Errorf("oncrpc: %s: %w", field, err)
	}
	return nil
}

func (a *OpaqueAuth) decode(d *xdr.Decoder, name string) (field string, err error) {
	v, err := d.Uint32()
	if err != nil {
		return name + ".flavor", err
	}
	a.Flavor = Flavor(v)
	if a.Body, err = d.Opaque(MaxAuthBytes); err != nil {
		return name + ".body", err
	}
	return "", nil
}

// ErrAuthSysTooLong means an AUTH_SYS credential exceeds an RFC 5531 limit when encoding.
var ErrAuthSysTooLong = errors.New("AUTH_SYS credential exceeds RFC 5531 limits")

// AuthSysParams is the AUTH_SYS credential body (authsys_parms). Decoding reuses GIDs'
// storage and makes MachineName alias the decoded buffer, so a decoded AuthSysParams is
// valid only as long as the message it came from.
type AuthSysParams struct {
	Stamp       uint32
	MachineName []byte // at most MaxMachineNameLen bytes
	UID, GID    uint32
	GIDs        []uint32 // at most MaxAuthSysGIDs
}

// Validate reports whether p respects the RFC 5531 limits.
func (p *AuthSysParams) Validate() error {
	if len(p.MachineName) > MaxMachineNameLen {
		return fmt.Errorf("oncrpc: authsys_parms.machinename: %d bytes, limit %d: %w", len(p.MachineName), MaxMachineNameLen, ErrAuthSysTooLong)
	}
	if len(p.GIDs) > MaxAuthSysGIDs {
		return fmt.Errorf("oncrpc: authsys_parms.gids: %d entries, limit %d: %w", len(p.GIDs), MaxAuthSysGIDs, ErrAuthSysTooLong)
	}
	return nil
}

// Append appends the encoded authsys_parms to b without checking limits (see Validate).
func (p *AuthSysParams) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, p.Stamp)
	b = xdr.AppendOpaque(b, p.MachineName)
	b = xdr.AppendUint32(b, p.UID)
	b = xdr.AppendUint32(b, p.GID)
	b = xdr.AppendUint32(b, uint32(len(p.GIDs)))
	for _, g := range p.GIDs {
		b = xdr.AppendUint32(b, g)
	}
	return b
}

// EncodeXDR encodes the authsys_parms without checking limits (see Validate).
func (p *AuthSysParams) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(p.Stamp)
	e.Opaque(p.MachineName)
	e.Uint32(p.UID)
	e.Uint32(p.GID)
	e.ArrayLen(len(p.GIDs))
	for _, g := range p.GIDs {
		e.Uint32(g)
	}
}

// DecodeXDR decodes authsys_parms, enforcing the machinename and gids limits. The
// errors name the field.
func (p *AuthSysParams) DecodeXDR(d *xdr.Decoder) error {
	var err error
	if p.Stamp, err = d.Uint32(); err != nil {
		return fmt.Errorf("oncrpc: authsys_parms.stamp: %w", err)
	}
	if p.MachineName, err = d.StringBytes(MaxMachineNameLen); err != nil {
		return fmt.Errorf("oncrpc: authsys_parms.machinename: %w", err)
	}
	if p.UID, err = d.Uint32(); err != nil {
		return fmt.Errorf("oncrpc: authsys_parms.uid: %w", err)
	}
	if p.GID, err = d.Uint32(); err != nil {
		return fmt.Errorf("oncrpc: authsys_parms.gid: %w", err)
	}
	n, err := d.ArrayLen(MaxAuthSysGIDs, 4)
	if err != nil {
		return fmt.Errorf("oncrpc: authsys_parms.gids: %w", err)
	}
	if cap(p.GIDs) < n {
		p.GIDs = make([]uint32, n, MaxAuthSysGIDs)
	}
	p.GIDs = p.GIDs[:n]
	for i := range p.GIDs {
		// ArrayLen checked that n words remain.
		p.GIDs[i], _ = d.Uint32()
	}
	return nil
}

// ErrAuthSysTrailing means an AUTH_SYS credential body has bytes after authsys_parms.
var ErrAuthSysTrailing = errors.New("trailing bytes after authsys_parms")

// DecodeAuthSysBody decodes a whole AUTH_SYS credential body into p: authsys_parms and
// nothing after it.
func DecodeAuthSysBody(p *AuthSysParams, body []byte) error {
	var d xdr.Decoder
	d.Reset(body)
	if err := p.DecodeXDR(&d); err != nil {
		return err
	}
	if d.Len() != 0 {
		return fmt.Errorf("oncrpc: authsys_parms: %d bytes: %w", d.Len(), ErrAuthSysTrailing)
	}
	return nil
}

// NewAuthSys returns an AUTH_SYS credential carrying p, after checking the RFC 5531
// limits. The result owns a fresh body and may be reused for any number of calls.
func NewAuthSys(p *AuthSysParams) (OpaqueAuth, error) {
	if err := p.Validate(); err != nil {
		return OpaqueAuth{}, err
	}
	return OpaqueAuth{Flavor: AuthSys, Body: p.Append(make([]byte, 0, maxAuthSysBodySize))}, nil
}
