//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
)

// rpcbindTimeout bounds asking the server's rpcbind for a port, after which the
// client uses the well-known port instead.
const rpcbindTimeout = 5 * time.Second

// portFinder finds the server's NFS and MOUNT ports as Linux mount does: a port
// given on the command line is used as it is; otherwise the server's rpcbind is
// asked (DUMP of version 4 for any netid, else portmap GETPORT for tcp); when it
// does not answer or knows nothing, the well-known port is used (the default of
// -rdma-port, -tcp-port or -mountport), and the reason is logged at debug.
type portFinder struct {
	f    *connFlags
	host string
	c    *rpcbind.Client // nil until first needed
	err  error           // why rpcbind cannot be asked, once known
}

// close releases the connection to rpcbind, if one was made.
func (p *portFinder) close() {
	if p.c != nil {
		p.c.Close()
	}
}

// mountPort is the MOUNT port over TCP.
func (p *portFinder) mountPort(ctx context.Context) int {
	if p.f.set["mountport"] {
		return p.f.mountport
	}
	return p.find(ctx, nfs3.MountProgram, nfs3.MountVersion, "tcp", p.f.mountport)
}

// nfsPort is the NFS port over proto ("rdma" or "tcp").
func (p *portFinder) nfsPort(ctx context.Context, proto string) int {
	switch {
	case p.f.port != 0:
		return p.f.port
	case proto == "rdma" && p.f.set["rdma-port"]:
		return p.f.rdmaPort
	case proto == "tcp" && p.f.set["tcp-port"]:
		return p.f.tcpPort
	}
	return p.find(ctx, nfs3.Program, nfs3.Version, proto, p.f.nfsPort(proto))
}

// find asks rpcbind for program prog, version vers over transport ("tcp" or "rdma")
// and returns its port, or def when rpcbind cannot tell.
func (p *portFinder) find(ctx context.Context, prog, vers uint32, transport string, def int) int {
	port, err := p.lookup(ctx, prog, vers, transport)
	if err != nil {
		p.f.log.Debug("using the well-known port", "server", p.host, "program", prog, "version", vers, "transport", transport, "port", def, "reason", err)
		return def
	}
	p.f.log.Debug("port from rpcbind", "server", p.host, "program", prog, "version", vers, "transport", transport, "port", port)
	return port
}

// netids are the netids of transport for the server's address family: "tcp" or
// "tcp6", "rdma" or "rdma6"; for a host name, both.
func (p *portFinder) netids(transport string) []string {
	a, err := netip.ParseAddr(p.host)
	switch {
	case err != nil:
		return []string{transport, transport + "6"}
	case a.Is6() && !a.Is4In6():
		return []string{transport + "6"}
	}
	return []string{transport}
}

func (p *portFinder) lookup(ctx context.Context, prog, vers uint32, transport string) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	ctx, cancel := context.WithTimeout(ctx, rpcbindTimeout)
	defer cancel()
	addr := net.JoinHostPort(p.host, strconv.Itoa(p.f.rpcbindPort))
	if p.c == nil {
		c, err := rpcbind.DialClient(ctx, addr, &rpcbind.Options{TCP: &oncrpc.TCPOptions{Logger: p.f.log.Named("rpcbind")}})
		if err != nil {
			p.err = fmt.Errorf("rpcbind at %s: %w", addr, err)
			return 0, p.err
		}
		p.c = c
	}
	var notFound error
	for _, netid := range p.netids(transport) {
		ap, err := p.c.Lookup(ctx, prog, vers, netid)
		if err == nil {
			return int(ap.Port()), nil
		}
		if errors.Is(err, rpcbind.ErrNotRegistered) {
			notFound = err
			continue
		}
		// No version 4 (a portmap-only server): GETPORT knows tcp alone.
		if transport == "tcp" {
			if port, perr := p.c.PmapGetPort(ctx, &rpcbind.Mapping{Prog: prog, Vers: vers, Prot: rpcbind.IPProtoTCP}); perr == nil && port != 0 && port <= 65535 {
				return int(port), nil
			}
		}
		if ctx.Err() != nil || errors.Is(err, oncrpc.ErrClosed) {
			p.err = fmt.Errorf("rpcbind at %s: %w", addr, err)
		}
		return 0, err
	}
	return 0, notFound
}
