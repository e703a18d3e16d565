//go:build linux

package nfsd

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
)

// registrationsFor lists the mappings of a server: NFS v3 and v4 under tcp and rdma,
// MOUNT v3 under tcp (its own listener when there is one), CONF_RDMA under rdma.
func registrationsFor(info Info) ([]rpcbind.Registration, error) {
	mount := info.Mountd
	if mount == nil {
		mount = info.TCP
	}
	var out []rpcbind.Registration
	for _, e := range []struct {
		prog, vers uint32
		transport  string
		addr       net.Addr
	}{
		{nfs3.Program, nfs3.Version, rpcbind.NetIDTCP, info.TCP},
		{nfs3.Program, nfs3.Version, rpcbind.NetIDRDMA, info.RDMA},
		{nfs4.Program, nfs4.Version, rpcbind.NetIDTCP, info.TCP},
		{nfs4.Program, nfs4.Version, rpcbind.NetIDRDMA, info.RDMA},
		{nfs3.MountProgram, nfs3.MountVersion, rpcbind.NetIDTCP, mount},
		{confproto.Program, confproto.Version, rpcbind.NetIDRDMA, info.RDMA},
	} {
		if e.addr == nil {
			continue
		}
		rs, err := rpcbind.ListenerRegistrations(e.prog, e.vers, e.transport, e.addr)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// register makes the mappings regs. A mapping already present at the same address
// (left by an instance that died) is replaced; one at another address belongs to
// another server and is an error, after which nothing stays registered.
func register(ctx context.Context, cfg *Config, regs []rpcbind.Registration) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.RPCBindTimeout)
	defer cancel()
	c, err := rpcbind.Dial(ctx, cfg.RPCBindAddr)
	if err != nil {
		return fmt.Errorf("rpcbind %s: %w", cfg.RPCBindAddr, err)
	}
	defer c.Close()
	err = c.RegisterAll(ctx, regs, Owner, rpcbind.ReplaceSameAddr, func(old rpcbind.Registration) {
		cfg.Logger.Warn("replacing a stale rpcbind registration", "mapping", old.String())
	})
	if errors.Is(err, rpcbind.ErrRegisteredElsewhere) {
		return fmt.Errorf("rpcbind %s: %w: another server (kernel nfsd?) has it; stop it, or run without -rpcbind", cfg.RPCBindAddr, err)
	}
	if err != nil {
		return fmt.Errorf("rpcbind %s: %w", cfg.RPCBindAddr, err)
	}
	for _, r := range regs {
		cfg.Logger.Debug("registered with rpcbind", "mapping", r.String())
	}
	return nil
}

// unregister removes regs from rpcbind, logging failures.
func unregister(cfg *Config, regs []rpcbind.Registration) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.RPCBindTimeout)
	defer cancel()
	c, err := rpcbind.Dial(ctx, cfg.RPCBindAddr)
	if err == nil {
		defer c.Close()
		err = c.UnregisterAll(ctx, regs)
	}
	if err != nil {
		cfg.Logger.Error("could not unregister from rpcbind", "rpcbind", cfg.RPCBindAddr, "error", err)
		return
	}
	cfg.Logger.Debug("unregistered from rpcbind", "mappings", len(regs))
}
