package rpcbind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Port is the well-known port of rpcbind (and of the portmapper before it).
const Port = 111

// ErrEmpty is wrapped by the *FieldError of Registry.Set for a registration with an
// empty netid or address (RFC 1833 §2.2.1: "neither r_netid nor r_addr can be NULL").
var ErrEmpty = errors.New("empty")

// Owners a Registry records, as Linux rpcbind does.
const (
	// OwnerSuperuser is the r_owner of the registrations a Registry makes for itself
	// and for SetPort, as Linux rpcbind records registrations made by root.
	OwnerSuperuser = "superuser"
	// OwnerUnknown is the r_owner of the registrations a Registry's SET makes: their
	// caller's identity cannot be known over TCP or UDP, and the r_owner it sends is
	// not trusted.
	OwnerUnknown = "unknown"
)

// MaxRegistrations bounds the table of a Registry, its own registrations included:
// past it, SET answers FALSE and Registry.Set fails with ErrTooManyEntries, so that
// no caller can grow it without limit and a DUMP of it always fits MaxDumpEntries and
// oncrpc.DefaultMaxRecord (1024 entries of at most 1428 bytes each). Linux rpcbind
// sets no bound; a host has some tens of registrations.
const MaxRegistrations = 1024

// A Registry is an in-memory rpcbind: a table of registrations that Register serves
// on an oncrpc.Server as portmap version 2 (NULL, SET, UNSET, GETPORT, DUMP) and
// rpcbind versions 3 and 4 (NULL, SET, UNSET, GETADDR, DUMP, GETTIME, and in version
// 4 GETVERSADDR), for a host that runs no rpcbind of its own, so that Linux clients
// can mount without port options. Other procedures get PROC_UNAVAIL. It is safe for
// concurrent use.
//
// What it answers, and where that differs from Linux rpcbind (TestRegistryMatchesRealRPCBind
// runs the same calls against both and pins each difference):
//   - SET and UNSET are honoured only from local callers, as Linux rpcbind's
//     is_loopback has it: a TCP or UDP remote address of 127.0.0.1, ::1 or
//     ::ffff:127.0.0.1, not the rest of 127.0.0.0/8. Any other caller's SET or
//     UNSET is denied with AUTH_TOOWEAK (MSG_DENIED, AUTH_ERROR), as rpcbind's
//     check_access denies it, after its arguments decode.
//   - The owner of a registration is its caller, whatever r_owner says, as in Linux:
//     SET records "unknown" (OwnerUnknown), for a Registry cannot tell who calls over
//     TCP or UDP (Linux trusts only the credentials of its AF_LOCAL socket, which a
//     Registry does not serve). UNSET removes only what its caller owns (RFC 1833
//     §2.2.1: "Only the owner of the service or the super-user is allowed to unset a
//     service"): when a registration it matches has another owner, such as
//     rpcbind's own or one made through Set or SetPort, it answers FALSE and
//     removes nothing (Linux removes the caller's registrations it meets before
//     the first it may not remove). Version 2 UNSET, as in Linux, unsets "tcp" and
//     then "udp", each on its own, and answers TRUE when either removed
//     something. Every local caller is "unknown",
//     so each may remove what another registered over the network, as in Linux.
//     The Go API (Set, SetPort, Unset) is the super-user's: it sets any owner and
//     removes anything.
//   - SET answers FALSE when the table holds MaxRegistrations registrations (Linux
//     sets no bound), and when the program version is registered under the netid
//     already (version 2: under the netid of its IP protocol, "tcp" or "udp"), even
//     with the same address, which Linux accepts again. Version 2 SET of a protocol
//     other than TCP or UDP, or of a port above 65535, answers FALSE (Linux keeps the
//     port's low 16 bits). Versions 3 and 4 SET with an empty r_netid or r_addr
//     answer FALSE (RFC 1833 §2.2.1: "neither r_netid nor r_addr can be NULL";
//     Linux registers them).
//   - UNSET answers TRUE only when it removed something (Linux rpcbind also answers
//     TRUE when nothing matched, so Client.Unregister of a missing registration
//     fails with ErrRefused here). Version 2 UNSET removes none of the program
//     version's registrations under netids other than "tcp" and "udp", as in
//     Linux.
//   - GETADDR answers the universal address registered at SET time; an address
//     registered through SetPort or version 2 SET is "0.0.0.0.p1.p2", which Linux
//     clients accept because they take only the port (Linux rpcbind puts the
//     address the caller reached it at in place of the wildcard host). When the
//     version asked for is not registered GETADDR answers the address of another
//     version of the program under the same netid (RFC 1833 §2.2.1); GETVERSADDR
//     and version 2 GETPORT do not (Linux GETPORT does). GETADDR looks up r_netid,
//     not the netid of the connection the call came on as Linux does, so it finds
//     "rdma" registrations too; an empty r_netid is the connection's ("tcp",
//     "tcp6", "udp" or "udp6"), as RFC 1833 §2.2.1 says of every GETADDR.
//   - GETPORT and version 2 DUMP see only the "tcp" and "udp" registrations whose
//     address parses as an IP universal address.
//
// A malformed argument gets GARBAGE_ARGS.
type Registry struct {
	mu   sync.RWMutex
	regs []RPCB
}

// NewRegistry returns a registry that knows only itself: program 100000, versions 2
// to 4, on port 111 of every IPv4 address ("0.0.0.0.0.111") over "tcp" and "udp".
func NewRegistry() *Registry {
	r := &Registry{}
	self := FormatUniversalAddr(netip.AddrPortFrom(netip.IPv4Unspecified(), Port))
	for _, v := range []uint32{Version2, Version3, Version4} {
		for _, n := range []string{NetIDTCP, NetIDUDP} {
			r.regs = append(r.regs, RPCB{Prog: Program, Vers: v, NetID: n, Addr: self, Owner: OwnerSuperuser})
		}
	}
	return r
}

// Set adds the registration m, or replaces the one of the same program, version and
// netid, as the super-user: m.Owner is recorded as given, and a registration owned by
// anyone but OwnerUnknown cannot be removed by the Registry's callers. It fails with a
// *FieldError when m breaks a limit of Validate or has an empty netid or address
// (wrapping ErrEmpty), and with an error wrapping ErrTooManyEntries when m is new and
// the table holds MaxRegistrations registrations; the address is not parsed (a "local" registration's address is
// a path).
func (r *Registry) Set(m RPCB) error {
	err := m.Validate()
	switch {
	case err != nil:
	case m.NetID == "":
		err = &FieldError{Type: "rpcb", Entry: -1, Field: "r_netid", Err: ErrEmpty}
	case m.Addr == "":
		err = &FieldError{Type: "rpcb", Entry: -1, Field: "r_addr", Err: ErrEmpty}
	}
	if err != nil {
		return fmt.Errorf("rpcbind: registry set prog %d vers %d: %w", m.Prog, m.Vers, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.find(m.Prog, m.Vers, m.NetID); i >= 0 {
		r.regs[i] = m
		return nil
	}
	if !r.add(m) {
		return fmt.Errorf("rpcbind: registry set prog %d vers %d netid %q: table full (%d registrations): %w", m.Prog, m.Vers, m.NetID, MaxRegistrations, ErrTooManyEntries)
	}
	return nil
}

// add appends m to the table unless it holds MaxRegistrations already, and reports
// whether it did. The caller holds r.mu for writing.
func (r *Registry) add(m RPCB) bool {
	if len(r.regs) >= MaxRegistrations {
		return false
	}
	r.regs = append(r.regs, m)
	return true
}

// SetPort registers program prog, version vers on port of every IPv4 address
// ("0.0.0.0.p1.p2", which Linux clients accept: they take only the port) under the
// netid of prot, IPProtoTCP ("tcp") or IPProtoUDP ("udp"), owned by "superuser".
func (r *Registry) SetPort(prog, vers, prot uint32, port uint16) error {
	netid := protNetID(prot)
	if netid == "" {
		return fmt.Errorf("rpcbind: registry set prog %d vers %d: prot %d: want %d (TCP) or %d (UDP)", prog, vers, prot, IPProtoTCP, IPProtoUDP)
	}
	addr := FormatUniversalAddr(netip.AddrPortFrom(netip.IPv4Unspecified(), port))
	return r.Set(RPCB{Prog: prog, Vers: vers, NetID: netid, Addr: addr, Owner: OwnerSuperuser})
}

// Unset removes the registrations of program prog, version vers under netid ("" for
// every netid), whoever owns them, and reports whether any existed.
func (r *Registry) Unset(prog, vers uint32, netid string) bool {
	return r.unset(prog, vers, netid, OwnerSuperuser)
}

// unset is Unset by owner: unless owner is the super-user, it removes nothing and
// answers false when a registration it matches has another owner (RFC 1833 §2.2.1).
func (r *Registry) unset(prog, vers uint32, netid, owner string) bool {
	match := func(g *RPCB) bool {
		return g.Prog == prog && g.Vers == vers && (netid == "" || g.NetID == netid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if owner != OwnerSuperuser {
		for i := range r.regs {
			if g := &r.regs[i]; match(g) && g.Owner != owner {
				return false
			}
		}
	}
	out, found := r.regs[:0], false
	for _, g := range r.regs {
		if match(&g) {
			found = true
			continue
		}
		out = append(out, g)
	}
	clear(r.regs[len(out):])
	r.regs = out
	return found
}

// Lookup returns the registration of program prog, version vers under netid.
func (r *Registry) Lookup(prog, vers uint32, netid string) (RPCB, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i := r.find(prog, vers, netid); i >= 0 {
		return r.regs[i], true
	}
	return RPCB{}, false
}

// List returns a copy of every registration, in the order they were made.
func (r *Registry) List() []RPCB {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]RPCB(nil), r.regs...)
}

// find returns the index of the registration of prog, vers and netid, or -1. The
// caller holds r.mu.
func (r *Registry) find(prog, vers uint32, netid string) int {
	for i := range r.regs {
		if g := &r.regs[i]; g.Prog == prog && g.Vers == vers && g.NetID == netid {
			return i
		}
	}
	return -1
}

// Register makes rs serve the registry as program 100000: version 2 (portmap) and
// versions 3 and 4 (rpcbind).
func (r *Registry) Register(rs *oncrpc.Server) {
	rs.Register(Program, Version2, r.pmapHandler())
	rs.Register(Program, Version3, r.rpcbHandler(Version3))
	rs.Register(Program, Version4, r.rpcbHandler(Version4))
}

// protNetID returns the netid of a version 2 IP protocol number ("" if none).
func protNetID(prot uint32) string {
	switch prot {
	case IPProtoTCP:
		return NetIDTCP
	case IPProtoUDP:
		return NetIDUDP
	}
	return ""
}

// callerOwner returns the owner of what the caller of req registers and its right to
// remove registrations: its identity, which only a local socket's peer credentials
// could tell (Linux records "superuser" for root there, else the uid). The Registry
// is served over TCP and UDP, whose callers are OwnerUnknown; a caller that claims
// another r_owner is not trusted.
func callerOwner(*oncrpc.Request) string { return OwnerUnknown }

// localCaller returns nil when a caller at address a may SET and UNSET, and the
// error that denies its call otherwise (AUTH_TOOWEAK). As Linux rpcbind's
// is_loopback, only 127.0.0.1 and ::1 (or ::ffff:127.0.0.1) are local: not the
// rest of 127.0.0.0/8.
func localCaller(a net.Addr) error {
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	}
	if ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback) {
		return nil
	}
	return oncrpc.AuthErr(oncrpc.AuthTooWeak)
}

// garbage marks an argument decoding error so that the server answers GARBAGE_ARGS.
func garbage(proc string, err error) error {
	return fmt.Errorf("rpcbind: registry %s arguments: %w: %w", proc, oncrpc.ErrGarbageArgs, err)
}

func null(context.Context, *oncrpc.Request, *xdr.Encoder) error { return nil }

// port returns the port of an IP universal address, false when it does not parse.
func port(uaddr string) (uint16, bool) {
	ap, err := ParseUniversalAddr(uaddr)
	if err != nil {
		return 0, false
	}
	return ap.Port(), true
}

func (r *Registry) pmapHandler() oncrpc.Handler {
	return oncrpc.Procs{
		ProcNull: null,
		ProcSet: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var m Mapping
			if err := m.DecodeXDR(req.Args); err != nil {
				return garbage("v2 SET", err)
			}
			if err := localCaller(req.RemoteAddr); err != nil {
				return fmt.Errorf("rpcbind: registry v2 SET from %v: %w", req.RemoteAddr, err)
			}
			netid := protNetID(m.Prot)
			ok := netid != "" && m.Port <= 0xffff
			if ok {
				r.mu.Lock()
				if r.find(m.Prog, m.Vers, netid) >= 0 {
					ok = false // SET does not replace an existing mapping
				} else {
					addr := FormatUniversalAddr(netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(m.Port)))
					ok = r.add(RPCB{Prog: m.Prog, Vers: m.Vers, NetID: netid, Addr: addr, Owner: callerOwner(req)})
				}
				r.mu.Unlock()
			}
			res.Bool(ok)
			return nil
		},
		ProcUnset: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var m Mapping
			if err := m.DecodeXDR(req.Args); err != nil {
				return garbage("v2 UNSET", err)
			}
			// Portmap knows only "tcp" and "udp": UNSET removes those two mappings
			// and no other netid's (RFC 1833 §3.2: prot is ignored; Linux rpcbind
			// unsets the two netids one after the other, TRUE if either did).
			if err := localCaller(req.RemoteAddr); err != nil {
				return fmt.Errorf("rpcbind: registry v2 UNSET from %v: %w", req.RemoteAddr, err)
			}
			owner := callerOwner(req)
			tcp := r.unset(m.Prog, m.Vers, NetIDTCP, owner)
			udp := r.unset(m.Prog, m.Vers, NetIDUDP, owner)
			res.Bool(tcp || udp)
			return nil
		},
		ProcGetAddr: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error { // PMAPPROC_GETPORT
			var m Mapping
			if err := m.DecodeXDR(req.Args); err != nil {
				return garbage("v2 GETPORT", err)
			}
			var p uint16
			if netid := protNetID(m.Prot); netid != "" {
				r.mu.RLock()
				if i := r.find(m.Prog, m.Vers, netid); i >= 0 {
					p, _ = port(r.regs[i].Addr)
				}
				r.mu.RUnlock()
			}
			res.Uint32(uint32(p))
			return nil
		},
		ProcDump: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			r.mu.RLock()
			defer r.mu.RUnlock()
			for i := range r.regs {
				g := &r.regs[i]
				var prot uint32
				switch g.NetID {
				case NetIDTCP:
					prot = IPProtoTCP
				case NetIDUDP:
					prot = IPProtoUDP
				default:
					continue
				}
				p, ok := port(g.Addr)
				if !ok {
					continue
				}
				m := Mapping{Prog: g.Prog, Vers: g.Vers, Prot: prot, Port: uint32(p)}
				res.Optional(true)
				m.EncodeXDR(res)
			}
			res.Optional(false)
			return nil
		},
	}
}

func (r *Registry) rpcbHandler(vers uint32) oncrpc.Handler {
	getaddr := func(name string, anyVersion bool) oncrpc.HandlerFunc {
		return func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var q RPCB
			if err := q.DecodeXDR(req.Args); err != nil {
				return garbage(fmt.Sprintf("v%d %s", vers, name), err)
			}
			// RFC 1833 §2.2.1: "the r_netid is inferred from the network identifier of
			// the transport on which the request came in". A given r_netid is
			// honoured (so that "rdma" registrations are found over TCP); an empty
			// one is the transport's.
			netid := q.NetID
			if netid == "" {
				netid = req.Netid
			}
			r.mu.RLock()
			defer r.mu.RUnlock()
			i := r.find(q.Prog, q.Vers, netid)
			if i < 0 && anyVersion {
				for j := range r.regs {
					if r.regs[j].Prog == q.Prog && r.regs[j].NetID == netid {
						i = j
						break
					}
				}
			}
			if i >= 0 {
				res.String(r.regs[i].Addr)
			} else {
				res.String("")
			}
			return nil
		}
	}
	procs := oncrpc.Procs{
		ProcNull: null,
		ProcSet: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var q RPCB
			if err := q.DecodeXDR(req.Args); err != nil {
				return garbage(fmt.Sprintf("v%d SET", vers), err)
			}
			if err := localCaller(req.RemoteAddr); err != nil {
				return fmt.Errorf("rpcbind: registry v%d SET from %v: %w", vers, req.RemoteAddr, err)
			}
			// RFC 1833 §2.2.1: "neither r_netid nor r_addr can be NULL".
			ok := q.NetID != "" && q.Addr != ""
			if ok {
				q.Owner = callerOwner(req)
				r.mu.Lock()
				if r.find(q.Prog, q.Vers, q.NetID) >= 0 {
					ok = false // SET does not replace an existing mapping
				} else {
					ok = r.add(q)
				}
				r.mu.Unlock()
			}
			res.Bool(ok)
			return nil
		},
		ProcUnset: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var q RPCB
			if err := q.DecodeXDR(req.Args); err != nil {
				return garbage(fmt.Sprintf("v%d UNSET", vers), err)
			}
			if err := localCaller(req.RemoteAddr); err != nil {
				return fmt.Errorf("rpcbind: registry v%d UNSET from %v: %w", vers, req.RemoteAddr, err)
			}
			res.Bool(r.unset(q.Prog, q.Vers, q.NetID, callerOwner(req)))
			return nil
		},
		ProcGetAddr: getaddr("GETADDR", true),
		ProcDump: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			r.mu.RLock()
			defer r.mu.RUnlock()
			l := RPCBList(r.regs)
			l.EncodeXDR(res)
			return nil
		},
		ProcGetTime: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			res.Uint32(uint32(time.Now().Unix()))
			return nil
		},
	}
	if vers == Version4 {
		procs[ProcGetVersAddr] = getaddr("GETVERSADDR", false)
	}
	return procs
}
