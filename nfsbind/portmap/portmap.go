// Package portmap implements the port mapper and rpcbind protocols (RFC 1833) that
// Linux NFS clients consult before they mount: PMAP version 2 (GETPORT by program,
// version and IP protocol) and RPCBIND versions 3 and 4 (GETADDR by netid, answering a
// universal address). It provides the XDR, an in-memory registry served as oncrpc
// handlers (for a host that runs no rpcbind of its own), and client calls to register
// a service with an existing rpcbind (PMAPPROC_SET / PMAPPROC_UNSET).
//
// The registry answers GETADDR with the universal address it was given at SET time; an
// address registered through PMAP v2 (or with a wildcard host) is answered as
// "0.0.0.0.p1.p2", which Linux clients accept because they take only the port from it.
// SET and UNSET are honoured only from loopback callers.
package portmap

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Program numbers and versions (RFC 1833).
const (
	Program   = 100000
	VersionV2 = 2 // PMAP
	VersionV3 = 3 // RPCBIND
	VersionV4 = 4 // RPCBIND
	// Port is the well-known port of the port mapper.
	Port = 111
)

// IP protocol numbers used by PMAP v2 mappings.
const (
	ProtoTCP = 6
	ProtoUDP = 17
)

// PMAP v2 procedures.
const (
	PmapNull    = 0
	PmapSet     = 1
	PmapUnset   = 2
	PmapGetport = 3
	PmapDump    = 4
)

// RPCBIND v3/v4 procedures this package serves.
const (
	RpcbNull        = 0
	RpcbSet         = 1
	RpcbUnset       = 2
	RpcbGetaddr     = 3
	RpcbDump        = 4
	RpcbGettime     = 6
	RpcbGetversaddr = 9 // v4 only
)

// Limits applied when decoding.
const (
	// MaxStringLen bounds netids, universal addresses and owners.
	MaxStringLen = 255
	// MaxList bounds the entries of a decoded DUMP reply.
	MaxList = 1024
)

// Mapping is a PMAP v2 mapping.
//
//	struct mapping { unsigned int prog; unsigned int vers; unsigned int prot; unsigned int port; };
type Mapping struct {
	Prog, Vers, Prot, Port uint32
}

// MappingSize is the encoded size of a Mapping.
const MappingSize = 16

// EncodeXDR encodes the mapping.
func (m *Mapping) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(m.Prog)
	e.Uint32(m.Vers)
	e.Uint32(m.Prot)
	e.Uint32(m.Port)
}

// DecodeXDR decodes a mapping.
func (m *Mapping) DecodeXDR(d *xdr.Decoder) error {
	if d.Len() < MappingSize {
		_, err := d.FixedOpaque(MappingSize)
		return fmt.Errorf("portmap: mapping: %w", err)
	}
	m.Prog, _ = d.Uint32()
	m.Vers, _ = d.Uint32()
	m.Prot, _ = d.Uint32()
	m.Port, _ = d.Uint32()
	return nil
}

// Rpcb is an RPCBIND v3/v4 registration.
//
//	struct rpcb { rpcprog r_prog; rpcvers r_vers; string r_netid<>; string r_addr<>; string r_owner<>; };
type Rpcb struct {
	Prog, Vers uint32
	Netid      string // "tcp", "udp", "tcp6", "udp6", "rdma", ...
	Addr       string // universal address, e.g. "127.0.0.1.8.1" for port 2049
	Owner      string
}

// EncodeXDR encodes the rpcb.
func (r *Rpcb) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(r.Prog)
	e.Uint32(r.Vers)
	e.String(r.Netid)
	e.String(r.Addr)
	e.String(r.Owner)
}

// DecodeXDR decodes an rpcb; strings are at most MaxStringLen bytes.
func (r *Rpcb) DecodeXDR(d *xdr.Decoder) error {
	var err error
	if r.Prog, err = d.Uint32(); err != nil {
		return fmt.Errorf("portmap: rpcb.r_prog: %w", err)
	}
	if r.Vers, err = d.Uint32(); err != nil {
		return fmt.Errorf("portmap: rpcb.r_vers: %w", err)
	}
	if r.Netid, err = d.String(MaxStringLen); err != nil {
		return fmt.Errorf("portmap: rpcb.r_netid: %w", err)
	}
	if r.Addr, err = d.String(MaxStringLen); err != nil {
		return fmt.Errorf("portmap: rpcb.r_addr: %w", err)
	}
	if r.Owner, err = d.String(MaxStringLen); err != nil {
		return fmt.Errorf("portmap: rpcb.r_owner: %w", err)
	}
	return nil
}

// UniversalAddr returns the universal address (RFC 5665 §5.2.3.3) of ip and port:
// "h1.h2.h3.h4.p1.p2" for IPv4, the IPv6 text form plus ".p1.p2" for IPv6.
func UniversalAddr(ip net.IP, port int) string {
	host := "0.0.0.0"
	if ip4 := ip.To4(); ip4 != nil {
		host = ip4.String()
	} else if ip != nil {
		host = ip.String()
	}
	return host + "." + strconv.Itoa(port>>8&0xff) + "." + strconv.Itoa(port&0xff)
}

// ParseUniversalAddr splits a universal address into host and port.
func ParseUniversalAddr(uaddr string) (host string, port int, err error) {
	i := strings.LastIndexByte(uaddr, '.')
	if i < 0 {
		return "", 0, fmt.Errorf("portmap: universal address %q: no port", uaddr)
	}
	j := strings.LastIndexByte(uaddr[:i], '.')
	if j < 0 {
		return "", 0, fmt.Errorf("portmap: universal address %q: no port", uaddr)
	}
	hi, err1 := strconv.ParseUint(uaddr[j+1:i], 10, 8)
	lo, err2 := strconv.ParseUint(uaddr[i+1:], 10, 8)
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("portmap: universal address %q: bad port", uaddr)
	}
	return uaddr[:j], int(hi<<8 | lo), nil
}

// netidProto maps a netid to the PMAP v2 protocol number (0 if none).
func netidProto(netid string) uint32 {
	switch netid {
	case "tcp", "tcp6":
		return ProtoTCP
	case "udp", "udp6":
		return ProtoUDP
	}
	return 0
}

func protoNetid(prot uint32) string {
	switch prot {
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	}
	return ""
}

// uint32Res and boolRes are the single-value results of several procedures.
type uint32Res struct{ v uint32 }

func (r *uint32Res) EncodeXDR(e *xdr.Encoder) { e.Uint32(r.v) }
func (r *uint32Res) DecodeXDR(d *xdr.Decoder) (err error) {
	r.v, err = d.Uint32()
	return err
}

type boolRes struct{ v bool }

func (r *boolRes) EncodeXDR(e *xdr.Encoder) { e.Bool(r.v) }
func (r *boolRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.v, err = d.Bool()
	return err
}

type stringRes struct{ v string }

func (r *stringRes) EncodeXDR(e *xdr.Encoder) { e.String(r.v) }
func (r *stringRes) DecodeXDR(d *xdr.Decoder) (err error) {
	r.v, err = d.String(MaxStringLen)
	return err
}

// PmapList is the result of PMAPPROC_DUMP.
//
//	struct pmaplist { mapping map; pmaplist *next; };
type PmapList []Mapping

// EncodeXDR encodes the list.
func (l *PmapList) EncodeXDR(e *xdr.Encoder) {
	for i := range *l {
		e.Optional(true)
		(*l)[i].EncodeXDR(e)
	}
	e.Optional(false)
}

// DecodeXDR decodes the list, at most MaxList entries.
func (l *PmapList) DecodeXDR(d *xdr.Decoder) error {
	*l = (*l)[:0]
	for {
		more, err := d.Optional()
		if err != nil {
			return fmt.Errorf("portmap: pmaplist: %w", err)
		}
		if !more {
			return nil
		}
		if len(*l) == MaxList {
			return fmt.Errorf("portmap: pmaplist: more than %d entries: %w", MaxList, xdr.ErrTooLong)
		}
		var m Mapping
		if err := m.DecodeXDR(d); err != nil {
			return err
		}
		*l = append(*l, m)
	}
}

// RpcbList is the result of RPCBPROC_DUMP.
//
//	struct rp__list { rpcb rpcb_map; struct rp__list *rpcb_next; };
type RpcbList []Rpcb

// EncodeXDR encodes the list.
func (l *RpcbList) EncodeXDR(e *xdr.Encoder) {
	for i := range *l {
		e.Optional(true)
		(*l)[i].EncodeXDR(e)
	}
	e.Optional(false)
}

// DecodeXDR decodes the list, at most MaxList entries.
func (l *RpcbList) DecodeXDR(d *xdr.Decoder) error {
	*l = (*l)[:0]
	for {
		more, err := d.Optional()
		if err != nil {
			return fmt.Errorf("portmap: rp__list: %w", err)
		}
		if !more {
			return nil
		}
		if len(*l) == MaxList {
			return fmt.Errorf("portmap: rp__list: more than %d entries: %w", MaxList, xdr.ErrTooLong)
		}
		var r Rpcb
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		*l = append(*l, r)
	}
}
