package portmap

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Registry is an in-memory rpcbind: a set of registrations served by Register as PMAP
// v2 and RPCBIND v3/v4. It is safe for concurrent use.
type Registry struct {
	mu   sync.RWMutex
	regs []Rpcb
}

// NewRegistry returns a registry that knows only itself (program 100000, versions 2
// to 4, on port 111 over TCP and UDP).
func NewRegistry() *Registry {
	r := &Registry{}
	for _, v := range []uint32{VersionV2, VersionV3, VersionV4} {
		for _, n := range []string{"tcp", "udp"} {
			r.Set(Rpcb{Prog: Program, Vers: v, Netid: n, Addr: UniversalAddr(nil, Port), Owner: "superuser"})
		}
	}
	return r
}

// Set adds or replaces the registration of (Prog, Vers, Netid).
func (r *Registry) Set(reg Rpcb) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.regs {
		if r.regs[i].Prog == reg.Prog && r.regs[i].Vers == reg.Vers && r.regs[i].Netid == reg.Netid {
			r.regs[i] = reg
			return
		}
	}
	r.regs = append(r.regs, reg)
}

// SetPort registers prog/vers on port for the TCP (ProtoTCP) or UDP netid.
func (r *Registry) SetPort(prog, vers, prot uint32, port int) {
	r.Set(Rpcb{Prog: prog, Vers: vers, Netid: protoNetid(prot), Addr: UniversalAddr(nil, port), Owner: "superuser"})
}

// Unset removes the registrations of prog/vers for netid ("" for every netid). It
// reports whether any existed.
func (r *Registry) Unset(prog, vers uint32, netid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out, found := r.regs[:0], false
	for _, g := range r.regs {
		if g.Prog == prog && g.Vers == vers && (netid == "" || g.Netid == netid) {
			found = true
			continue
		}
		out = append(out, g)
	}
	r.regs = out
	return found
}

// Lookup returns the registration of prog/vers on netid.
func (r *Registry) Lookup(prog, vers uint32, netid string) (Rpcb, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, g := range r.regs {
		if g.Prog == prog && g.Vers == vers && g.Netid == netid {
			return g, true
		}
	}
	return Rpcb{}, false
}

// List returns every registration.
func (r *Registry) List() []Rpcb {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Rpcb(nil), r.regs...)
}

// Register makes rs serve the registry as PMAP v2 and RPCBIND v3/v4.
func (r *Registry) Register(rs *oncrpc.Server) {
	rs.Register(Program, VersionV2, r.pmapHandler())
	rs.RegisterRange(Program, VersionV3, VersionV4, r.rpcbHandler())
}

func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UDPAddr:
		return a.IP.IsLoopback()
	}
	return false
}

func null(context.Context, *oncrpc.Request, *xdr.Encoder) error { return nil }

func (r *Registry) pmapHandler() oncrpc.Handler {
	return oncrpc.Procs{
		PmapNull: null,
		PmapSet: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var m Mapping
			if err := m.DecodeXDR(req.Args); err != nil {
				return err
			}
			ok := isLoopback(req.RemoteAddr) && protoNetid(m.Prot) != ""
			if ok {
				if _, exists := r.Lookup(m.Prog, m.Vers, protoNetid(m.Prot)); exists {
					ok = false // PMAP v2 SET does not replace an existing mapping
				} else {
					r.SetPort(m.Prog, m.Vers, m.Prot, int(m.Port))
				}
			}
			res.Bool(ok)
			return nil
		},
		PmapUnset: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var m Mapping
			if err := m.DecodeXDR(req.Args); err != nil {
				return err
			}
			res.Bool(isLoopback(req.RemoteAddr) && r.Unset(m.Prog, m.Vers, ""))
			return nil
		},
		PmapGetport: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var m Mapping
			if err := m.DecodeXDR(req.Args); err != nil {
				return err
			}
			port := 0
			if g, ok := r.Lookup(m.Prog, m.Vers, protoNetid(m.Prot)); ok {
				if _, p, err := ParseUniversalAddr(g.Addr); err == nil {
					port = p
				}
			}
			res.Uint32(uint32(port))
			return nil
		},
		PmapDump: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var l PmapList
			for _, g := range r.List() {
				if prot := netidProto(g.Netid); prot != 0 && (g.Netid == "tcp" || g.Netid == "udp") {
					if _, p, err := ParseUniversalAddr(g.Addr); err == nil {
						l = append(l, Mapping{Prog: g.Prog, Vers: g.Vers, Prot: prot, Port: uint32(p)})
					}
				}
			}
			l.EncodeXDR(res)
			return nil
		},
	}
}

func (r *Registry) rpcbHandler() oncrpc.Handler {
	getaddr := func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		var q Rpcb
		if err := q.DecodeXDR(req.Args); err != nil {
			return err
		}
		addr := ""
		if g, ok := r.Lookup(q.Prog, q.Vers, q.Netid); ok {
			addr = g.Addr
		} else if req.Header.Proc == RpcbGetaddr {
			// RPCBPROC_GETADDR may answer any version of the program.
			for _, g := range r.List() {
				if g.Prog == q.Prog && g.Netid == q.Netid {
					addr = g.Addr
					break
				}
			}
		}
		res.String(addr)
		return nil
	}
	return oncrpc.Procs{
		RpcbNull: null,
		RpcbSet: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var q Rpcb
			if err := q.DecodeXDR(req.Args); err != nil {
				return err
			}
			ok := isLoopback(req.RemoteAddr)
			if ok {
				if _, exists := r.Lookup(q.Prog, q.Vers, q.Netid); exists {
					ok = false
				} else {
					r.Set(q)
				}
			}
			res.Bool(ok)
			return nil
		},
		RpcbUnset: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var q Rpcb
			if err := q.DecodeXDR(req.Args); err != nil {
				return err
			}
			res.Bool(isLoopback(req.RemoteAddr) && r.Unset(q.Prog, q.Vers, q.Netid))
			return nil
		},
		RpcbGetaddr:     getaddr,
		RpcbGetversaddr: getaddr,
		RpcbDump: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			l := RpcbList(r.List())
			l.EncodeXDR(res)
			return nil
		},
		RpcbGettime: func(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			res.Uint32(uint32(time.Now().Unix()))
			return nil
		},
	}
}
