package rpcbind

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Wire formats of rpcbind versions 3 and 4 and portmap version 2 (RFC 1833 §2.1, §3.1):
//
//	struct rpcb {                      versions 3 and 4
//	    unsigned long r_prog;          program number
//	    unsigned long r_vers;          version number
//	    string r_netid<>;              network id
//	    string r_addr<>;               universal address
//	    string r_owner<>;              owner of this service
//	};
//
//	struct rp__list {
//	    rpcb rpcb_map;
//	    struct rp__list *rpcb_next;
//	};
//	typedef rp__list *rpcblist_ptr;    RPCBPROC_DUMP result
//
//	struct mapping {                   version 2 (portmap)
//	    unsigned int prog;
//	    unsigned int vers;
//	    unsigned int prot;             IPPROTO_TCP = 6, IPPROTO_UDP = 17
//	    unsigned int port;
//	};
//
//	struct *pmaplist {                 PMAPPROC_DUMP result
//	    mapping map;
//	    pmaplist next;
//	};
//
// An XDR "unsigned long" is 32 bits. A list is optional-data chained through
// optional-data: a bool (1: an entry follows) before each entry, and a final 0.
//
//	program RPCBPROG {                         = 100000
//	    version PMAPVERS  { ... } = 2;         SET 1, UNSET 2, GETPORT 3, DUMP 4, CALLIT 5
//	    version RPCBVERS  { ... } = 3;         SET 1, UNSET 2, GETADDR 3, DUMP 4, CALLIT 5,
//	                                           GETTIME 6, UADDR2TADDR 7, TADDR2UADDR 8
//	    version RPCBVERS4 { ... } = 4;         as 3 (5 is BCAST), GETVERSADDR 9, INDIRECT 10,
//	                                           GETADDRLIST 11, GETSTAT 12
//	};
//
// SET, UNSET and GETADDR take an rpcb; SET and UNSET return bool, GETADDR a string (the
// universal address, "" when nothing is registered). Version 2 takes a mapping; its
// SET and UNSET return bool and GETPORT an unsigned int (0: not registered).

// Program and versions of rpcbind (RFC 1833).
const (
	Program  = 100000 // RPCBPROG (PMAP_PROG)
	Version2 = 2      // PMAPVERS: portmap
	Version3 = 3      // RPCBVERS
	Version4 = 4      // RPCBVERS4
)

// Procedures. Versions 2, 3 and 4 share numbers 0 to 5; ProcGetAddr is PMAPPROC_GETPORT
// in version 2.
const (
	ProcNull        = 0
	ProcSet         = 1
	ProcUnset       = 2
	ProcGetAddr     = 3 // RPCBPROC_GETADDR; PMAPPROC_GETPORT in version 2
	ProcDump        = 4
	ProcCallit      = 5 // RPCBPROC_CALLIT; RPCBPROC_BCAST in version 4
	ProcGetTime     = 6
	ProcUaddr2Taddr = 7
	ProcTaddr2Uaddr = 8
	ProcGetVersAddr = 9
	ProcIndirect    = 10
	ProcGetAddrList = 11
	ProcGetStat     = 12
)

// IP protocol numbers of a version 2 mapping.
const (
	IPProtoTCP = 6
	IPProtoUDP = 17
)

// Limits this package enforces on the strings of an rpcb (RFC 1833 leaves them
// unbounded) and on the number of entries of a DUMP reply.
const (
	MaxNetIDLen    = 128  // r_netid: netids are short names ("tcp6", "rdma6")
	MaxAddrLen     = 1024 // r_addr: universal addresses, or paths for "local"
	MaxOwnerLen    = 255  // r_owner: "superuser", "unknown" or a uid
	MaxDumpEntries = 16384
)

// ErrTooManyEntries means a DUMP reply lists more than MaxDumpEntries entries, or
// that a Registry holds MaxRegistrations registrations already.
var ErrTooManyEntries = errors.New("too many entries")

// ErrTrailing means a reply has bytes after its result.
var ErrTrailing = errors.New("trailing bytes after the result")

// A FieldError reports a field of an rpcbind argument or result that does not decode
// or does not respect a limit. Entry is the index of the list entry (-1 outside lists).
type FieldError struct {
	Type  string // "rpcb", "rpcblist", "mapping", "pmaplist", "bool", "string", ...
	Entry int
	Field string // RFC 1833 field name: "r_netid", "rpcb_next", "port", ...
	Err   error  // an *xdr.DecodeError, xdr.ErrTooLong, ErrTooManyEntries, ...
}

func (e *FieldError) Error() string {
	if e.Entry >= 0 {
		return fmt.Sprintf("rpcbind: %s entry %d: %s: %v", e.Type, e.Entry, e.Field, e.Err)
	}
	return fmt.Sprintf("rpcbind: %s: %s: %v", e.Type, e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// RPCB is an rpcbind version 3/4 mapping (struct rpcb).
type RPCB struct {
	Prog  uint32
	Vers  uint32
	NetID string // r_netid, e.g. "tcp", "rdma6"
	Addr  string // r_addr, a universal address ("" in GETADDR and UNSET arguments)
	Owner string // r_owner
}

// Validate checks the string limits (MaxNetIDLen, MaxAddrLen, MaxOwnerLen).
func (m *RPCB) Validate() error {
	switch {
	case len(m.NetID) > MaxNetIDLen:
		return &FieldError{Type: "rpcb", Entry: -1, Field: "r_netid", Err: fmt.Errorf("%d bytes, limit %d: %w", len(m.NetID), MaxNetIDLen, xdr.ErrTooLong)}
	case len(m.Addr) > MaxAddrLen:
		return &FieldError{Type: "rpcb", Entry: -1, Field: "r_addr", Err: fmt.Errorf("%d bytes, limit %d: %w", len(m.Addr), MaxAddrLen, xdr.ErrTooLong)}
	case len(m.Owner) > MaxOwnerLen:
		return &FieldError{Type: "rpcb", Entry: -1, Field: "r_owner", Err: fmt.Errorf("%d bytes, limit %d: %w", len(m.Owner), MaxOwnerLen, xdr.ErrTooLong)}
	}
	return nil
}

// EncodeXDR encodes the rpcb. Limits are not checked here (see Validate).
func (m *RPCB) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(m.Prog)
	e.Uint32(m.Vers)
	e.String(m.NetID)
	e.String(m.Addr)
	e.String(m.Owner)
}

// DecodeXDR decodes an rpcb, enforcing the string limits.
func (m *RPCB) DecodeXDR(d *xdr.Decoder) error {
	if field, err := m.decode(d); err != nil {
		return &FieldError{Type: "rpcb", Entry: -1, Field: field, Err: err}
	}
	return nil
}

func (m *RPCB) decode(d *xdr.Decoder) (field string, err error) {
	if m.Prog, err = d.Uint32(); err != nil {
		return "r_prog", err
	}
	if m.Vers, err = d.Uint32(); err != nil {
		return "r_vers", err
	}
	if m.NetID, err = d.String(MaxNetIDLen); err != nil {
		return "r_netid", err
	}
	if m.Addr, err = d.String(MaxAddrLen); err != nil {
		return "r_addr", err
	}
	if m.Owner, err = d.String(MaxOwnerLen); err != nil {
		return "r_owner", err
	}
	return "", nil
}

// RPCBList is an rpcblist_ptr: the result of RPCBPROC_DUMP.
type RPCBList []RPCB

// EncodeXDR encodes the list as chained optional-data.
func (l *RPCBList) EncodeXDR(e *xdr.Encoder) {
	for i := range *l {
		e.Optional(true)
		(*l)[i].EncodeXDR(e)
	}
	e.Optional(false)
}

// DecodeXDR decodes a list, replacing l's entries (and reusing its storage). At most
// MaxDumpEntries entries are accepted.
func (l *RPCBList) DecodeXDR(d *xdr.Decoder) error {
	*l = (*l)[:0]
	for i := 0; ; i++ {
		field := "rpcb_next"
		if i == 0 {
			field = "rpcblist_ptr"
		}
		more, err := d.Optional()
		if err != nil {
			return &FieldError{Type: "rpcblist", Entry: i, Field: field, Err: err}
		}
		if !more {
			return nil
		}
		if i == MaxDumpEntries {
			return &FieldError{Type: "rpcblist", Entry: i, Field: field, Err: fmt.Errorf("more than %d: %w", MaxDumpEntries, ErrTooManyEntries)}
		}
		var m RPCB
		if f, err := m.decode(d); err != nil {
			return &FieldError{Type: "rpcblist", Entry: i, Field: "rpcb_map." + f, Err: err}
		}
		*l = append(*l, m)
	}
}

// Mapping is a portmap version 2 mapping (struct mapping).
type Mapping struct {
	Prog uint32
	Vers uint32
	Prot uint32 // IPProtoTCP or IPProtoUDP
	Port uint32
}

// EncodeXDR encodes the mapping.
func (m *Mapping) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(m.Prog)
	e.Uint32(m.Vers)
	e.Uint32(m.Prot)
	e.Uint32(m.Port)
}

// DecodeXDR decodes a mapping.
func (m *Mapping) DecodeXDR(d *xdr.Decoder) error {
	if field, err := m.decode(d); err != nil {
		return &FieldError{Type: "mapping", Entry: -1, Field: field, Err: err}
	}
	return nil
}

func (m *Mapping) decode(d *xdr.Decoder) (field string, err error) {
	if m.Prog, err = d.Uint32(); err != nil {
		return "prog", err
	}
	if m.Vers, err = d.Uint32(); err != nil {
		return "vers", err
	}
	if m.Prot, err = d.Uint32(); err != nil {
		return "prot", err
	}
	if m.Port, err = d.Uint32(); err != nil {
		return "port", err
	}
	return "", nil
}

// PmapList is a pmaplist: the result of PMAPPROC_DUMP.
type PmapList []Mapping

// EncodeXDR encodes the list as chained optional-data.
func (l *PmapList) EncodeXDR(e *xdr.Encoder) {
	for i := range *l {
		e.Optional(true)
		(*l)[i].EncodeXDR(e)
	}
	e.Optional(false)
}

// DecodeXDR decodes a list, replacing l's entries (and reusing its storage). At most
// MaxDumpEntries entries are accepted.
func (l *PmapList) DecodeXDR(d *xdr.Decoder) error {
	*l = (*l)[:0]
	for i := 0; ; i++ {
		field := "next"
		if i == 0 {
			field = "pmaplist"
		}
		more, err := d.Optional()
		if err != nil {
			return &FieldError{Type: "pmaplist", Entry: i, Field: field, Err: err}
		}
		if !more {
			return nil
		}
		if i == MaxDumpEntries {
			return &FieldError{Type: "pmaplist", Entry: i, Field: field, Err: fmt.Errorf("more than %d: %w", MaxDumpEntries, ErrTooManyEntries)}
		}
		var m Mapping
		if f, err := m.decode(d); err != nil {
			return &FieldError{Type: "pmaplist", Entry: i, Field: "map." + f, Err: err}
		}
		*l = append(*l, m)
	}
}

// boolResult is a bool result (SET, UNSET).
type boolResult bool

func (r *boolResult) DecodeXDR(d *xdr.Decoder) error {
	v, err := d.Bool()
	if err != nil {
		return &FieldError{Type: "bool", Entry: -1, Field: "result", Err: err}
	}
	*r = boolResult(v)
	return nil
}

// uint32Result is an unsigned int result (PMAPPROC_GETPORT, RPCBPROC_GETTIME).
type uint32Result uint32

func (r *uint32Result) DecodeXDR(d *xdr.Decoder) error {
	v, err := d.Uint32()
	if err != nil {
		return &FieldError{Type: "unsigned int", Entry: -1, Field: "result", Err: err}
	}
	*r = uint32Result(v)
	return nil
}

// stringResult is a string result (RPCBPROC_GETADDR): a universal address.
type stringResult string

func (r *stringResult) DecodeXDR(d *xdr.Decoder) error {
	v, err := d.String(MaxAddrLen)
	if err != nil {
		return &FieldError{Type: "string", Entry: -1, Field: "r_addr", Err: err}
	}
	*r = stringResult(v)
	return nil
}

// DecodeDump decodes a whole RPCBPROC_DUMP result: the list and nothing after it.
func DecodeDump(b []byte) (RPCBList, error) {
	var l RPCBList
	d := xdr.NewDecoder(b)
	if err := l.DecodeXDR(d); err != nil {
		return nil, err
	}
	if d.Len() != 0 {
		return nil, &FieldError{Type: "rpcblist", Entry: len(l), Field: "rpcb_next", Err: fmt.Errorf("%d bytes: %w", d.Len(), ErrTrailing)}
	}
	return l, nil
}

// DecodePmapDump decodes a whole PMAPPROC_DUMP result: the list and nothing after it.
func DecodePmapDump(b []byte) (PmapList, error) {
	var l PmapList
	d := xdr.NewDecoder(b)
	if err := l.DecodeXDR(d); err != nil {
		return nil, err
	}
	if d.Len() != 0 {
		return nil, &FieldError{Type: "pmaplist", Entry: len(l), Field: "next", Err: fmt.Errorf("%d bytes: %w", d.Len(), ErrTrailing)}
	}
	return l, nil
}
