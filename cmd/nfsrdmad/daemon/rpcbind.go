//go:build linux

package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
)

// registration is one rpcbind mapping.
type registration struct {
	prog, vers uint32
	netid      string
	addr       netip.AddrPort
}

func (r registration) String() string {
	return fmt.Sprintf("%d/%d/%s=%s", r.prog, r.vers, r.netid, rpcbind.FormatUniversalAddr(r.addr))
}

// netAddrs returns the (netid, address) pairs under which a listener on addr is
// registered: one under the netid of the address's family for transport ("tcp" or
// "rdma"), and for the IPv6 unspecified address (a dual-stack listener) one under
// each family.
func netAddrs(transport string, addr net.Addr) ([]registration, error) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return nil, fmt.Errorf("listener address %q: %w", addr, err)
	}
	ap = netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port())
	if ap.Addr().Is4In6() {
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	if ap.Addr() == netip.IPv6Unspecified() {
		return []registration{
			{netid: transport, addr: netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port())},
			{netid: transport + "6", addr: ap},
		}, nil
	}
	netid, err := rpcbind.NetIDFor(transport, ap.Addr())
	if err != nil {
		return nil, err
	}
	return []registration{{netid: netid, addr: ap}}, nil
}

// registrationsFor lists the mappings of a server: NFS v3 under tcp and rdma, MOUNT
// v3 under tcp (its own listener when there is one), CONF_RDMA under rdma.
func registrationsFor(info Info) ([]registration, error) {
	var out []registration
	add := func(prog, vers uint32, transport string, a net.Addr) error {
		if a == nil {
			return nil
		}
		rs, err := netAddrs(transport, a)
		if err != nil {
			return err
		}
		for _, r := range rs {
			r.prog, r.vers = prog, vers
			out = append(out, r)
		}
		return nil
	}
	mount := info.Mountd
	if mount == nil {
		mount = info.TCP
	}
	for _, e := range []struct {
		prog, vers uint32
		transport  string
		addr       net.Addr
	}{
		{nfs3.Program, nfs3.Version, rpcbind.NetIDTCP, info.TCP},
		{nfs3.Program, nfs3.Version, rpcbind.NetIDRDMA, info.RDMA},
		{nfs3.MountProgram, nfs3.MountVersion, rpcbind.NetIDTCP, mount},
		{confproto.Program, confproto.Version, rpcbind.NetIDRDMA, info.RDMA},
	} {
		if err := add(e.prog, e.vers, e.transport, e.addr); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dialRPCBind connects to cfg.RPCBindAddr.
func dialRPCBind(ctx context.Context, cfg *Config) (*rpcbind.Client, error) {
	if path, ok := strings.CutPrefix(cfg.RPCBindAddr, "unix:"); ok {
		return rpcbind.DialLocalClient(ctx, path, nil)
	}
	return rpcbind.DialClient(ctx, cfg.RPCBindAddr, nil)
}

// register makes the mappings regs and returns them. A mapping already present at the
// same address (left by an instance that died) is replaced; one at another address
// belongs to another server and is an error, after which nothing stays registered.
func register(ctx context.Context, cfg *Config, regs []registration) ([]registration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.RPCBindTimeout)
	defer cancel()
	c, err := dialRPCBind(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("rpcbind %s: %w", cfg.RPCBindAddr, err)
	}
	defer c.Close()
	var done []registration
	fail := func(err error) ([]registration, error) {
		for _, r := range done {
			c.Unregister(ctx, r.prog, r.vers, r.netid)
		}
		return nil, fmt.Errorf("rpcbind %s: %w", cfg.RPCBindAddr, err)
	}
	for _, r := range regs {
		old, err := c.Lookup(ctx, r.prog, r.vers, r.netid)
		switch {
		case errors.Is(err, rpcbind.ErrNotRegistered):
		case err != nil:
			return fail(err)
		case old == r.addr:
			cfg.Logger.Warn("replacing a stale rpcbind registration", "mapping", r.String())
			if err := c.Unregister(ctx, r.prog, r.vers, r.netid); err != nil {
				return fail(err)
			}
		default:
			return fail(fmt.Errorf("program %d version %d is already registered under %s at %s by another server (kernel nfsd? see `rpcinfo -p`); stop it, or run without -rpcbind",
				r.prog, r.vers, r.netid, rpcbind.FormatUniversalAddr(old)))
		}
		if err := c.Register(ctx, r.prog, r.vers, r.netid, r.addr, Owner); err != nil {
			return fail(err)
		}
		done = append(done, r)
		cfg.Logger.Debug("registered with rpcbind", "mapping", r.String())
	}
	return done, nil
}

// unregister removes regs from rpcbind, logging failures.
func unregister(cfg *Config, regs []registration) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.RPCBindTimeout)
	defer cancel()
	c, err := dialRPCBind(ctx, cfg)
	if err != nil {
		cfg.Logger.Error("could not unregister from rpcbind", "rpcbind", cfg.RPCBindAddr, "error", err)
		return
	}
	defer c.Close()
	for _, r := range regs {
		if err := c.Unregister(ctx, r.prog, r.vers, r.netid); err != nil {
			cfg.Logger.Error("could not unregister from rpcbind", "mapping", r.String(), "error", err)
			continue
		}
		cfg.Logger.Debug("unregistered from rpcbind", "mapping", r.String())
	}
}
