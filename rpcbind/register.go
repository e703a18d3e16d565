package rpcbind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Registration is one mapping a server makes with rpcbind: program, version, netid
// and universal address (RFC 1833 rpcb, with the address parsed).
type Registration struct {
	Prog, Vers uint32
	NetID      string
	Addr       netip.AddrPort
}

// String returns "prog/vers/netid=uaddr", as logs show a registration.
func (r Registration) String() string {
	return fmt.Sprintf("%d/%d/%s=%s", r.Prog, r.Vers, r.NetID, FormatUniversalAddr(r.Addr))
}

// ListenerRegistrations returns the registrations of prog/vers for a listener on addr
// whose transport is "tcp" or "rdma": one under the netid of the address's family,
// and, for the IPv6 unspecified address (a dual-stack listener), one under each
// family (the IPv4 one at 0.0.0.0).
func ListenerRegistrations(prog, vers uint32, transport string, addr net.Addr) ([]Registration, error) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return nil, fmt.Errorf("rpcbind: listener address %q: %w", addr, err)
	}
	ap = netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port())
	if ap.Addr().Is4In6() {
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	if ap.Addr() == netip.IPv6Unspecified() {
		return []Registration{
			{Prog: prog, Vers: vers, NetID: transport, Addr: netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port())},
			{Prog: prog, Vers: vers, NetID: transport + "6", Addr: ap},
		}, nil
	}
	netid, err := NetIDFor(transport, ap.Addr())
	if err != nil {
		return nil, err
	}
	return []Registration{{Prog: prog, Vers: vers, NetID: netid, Addr: ap}}, nil
}

// Dial connects to the rpcbind at addr as commands name it: "host:port" over TCP, or
// "unix:PATH" for its AF_LOCAL socket (where rpcbind records the caller's uid as the
// owner); "" is DefaultAddr.
func Dial(ctx context.Context, addr string) (*Client, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return DialLocalClient(ctx, path, nil)
	}
	return DialClient(ctx, addr, nil)
}

// Conflict says what RegisterAll does with a mapping already present for the same
// program, version and netid.
type Conflict int

// Conflict policies.
const (
	// ReplaceSameAddr replaces a mapping at the same address (left behind by an
	// instance that died) and refuses one at another address, which belongs to
	// another server (ErrRegisteredElsewhere).
	ReplaceSameAddr Conflict = iota
	// ReplaceAny replaces whatever is registered.
	ReplaceAny
)

// ErrRegisteredElsewhere is wrapped by RegisterAll's error when, under
// ReplaceSameAddr, another server holds a mapping.
var ErrRegisteredElsewhere = errors.New("rpcbind: already registered at another address")

// rollbackTimeout bounds the removal of what a failed RegisterAll made.
const rollbackTimeout = 5 * time.Second

// RegisterAll makes the registrations regs under owner, all or nothing: on an error,
// rpcbind's table is put back as RegisterAll found it, even when ctx has ended
// (within rollbackTimeout, 5 s, of the failure; the error then also reports what
// could not be put back). The ones it made are removed again, in the reverse order,
// and each mapping it replaced is registered again at the universal address it had.
// A mapping already present is handled as conflict says; replaced, when set, is
// called with each one it removes.
//
// A mapping put back is owned by whoever rpcbind takes the caller to be (over TCP,
// "unknown"; through its AF_LOCAL socket, the caller's uid), as rpcbind records the
// owner of every SET; its r_owner is sent as it was.
func (c *Client) RegisterAll(ctx context.Context, regs []Registration, owner string, conflict Conflict, replaced func(old Registration)) error {
	// undo lists, in the order they happened, the changes to put back: a
	// registration made (added) or a mapping removed (removed).
	type change struct {
		added   *Registration
		removed *RPCB
	}
	var undo []change
	fail := func(err error) error {
		// ctx may be what failed (its deadline passed, or it was cancelled): the
		// rollback gets a context of its own, so that the table is put back.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		errs := []error{err}
		for i := len(undo) - 1; i >= 0; i-- {
			switch u := undo[i]; {
			case u.added != nil:
				if uerr := c.Unregister(rctx, u.added.Prog, u.added.Vers, u.added.NetID); uerr != nil {
					errs = append(errs, fmt.Errorf("rolling back %s: %w", u.added, uerr))
				}
			case u.removed != nil:
				if rerr := c.restore(rctx, u.removed); rerr != nil {
					errs = append(errs, fmt.Errorf("restoring %d/%d/%s=%s: %w", u.removed.Prog, u.removed.Vers, u.removed.NetID, u.removed.Addr, rerr))
				}
			}
		}
		if len(errs) == 1 {
			return err
		}
		return errors.Join(errs...)
	}
	for _, r := range regs {
		old, err := c.lookupRPCB(ctx, r.Prog, r.Vers, r.NetID)
		switch {
		case errors.Is(err, ErrNotRegistered):
		case err != nil:
			return fail(err)
		default:
			oldAddr, err := ParseUniversalAddr(old.Addr)
			if err == nil {
				err = CheckAddr(r.NetID, oldAddr)
			}
			if err != nil {
				return fail(fmt.Errorf("rpcbind: lookup prog %d vers %d netid %q: %w", r.Prog, r.Vers, r.NetID, err))
			}
			if oldAddr != r.Addr && conflict == ReplaceSameAddr {
				return fail(fmt.Errorf("program %d version %d under %s at %s: %w (see `rpcinfo -p`)",
					r.Prog, r.Vers, r.NetID, FormatUniversalAddr(oldAddr), ErrRegisteredElsewhere))
			}
			if err := c.Unregister(ctx, r.Prog, r.Vers, r.NetID); err != nil {
				return fail(err)
			}
			undo = append(undo, change{removed: &old})
			if replaced != nil {
				replaced(Registration{Prog: r.Prog, Vers: r.Vers, NetID: r.NetID, Addr: oldAddr})
			}
		}
		if err := c.Register(ctx, r.Prog, r.Vers, r.NetID, r.Addr, owner); err != nil {
			return fail(err)
		}
		undo = append(undo, change{added: &r})
	}
	return nil
}

// restore registers m again as DUMP showed it, with its universal address as it was.
func (c *Client) restore(ctx context.Context, m *RPCB) error {
	ok, err := c.Set(ctx, m)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("rpcbind: register prog %d vers %d netid %q addr %s: %w", m.Prog, m.Vers, m.NetID, m.Addr, ErrRefused)
	}
	return nil
}

// UnregisterAll removes the registrations regs, going on after a failure; the
// failures are joined in its error.
func (c *Client) UnregisterAll(ctx context.Context, regs []Registration) error {
	var errs []error
	for _, r := range regs {
		if err := c.Unregister(ctx, r.Prog, r.Vers, r.NetID); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r, err))
		}
	}
	return errors.Join(errs...)
}
