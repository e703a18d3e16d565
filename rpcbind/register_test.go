package rpcbind

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestListenerRegistrations(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	reg := func(netid, ap string) Registration {
		return Registration{Prog: 100400, Vers: 1, NetID: netid, Addr: netip.MustParseAddrPort(ap)}
	}
	tests := []struct {
		transport string
		addr      net.Addr
		want      []Registration
	}{
		{"rdma", tcp("127.0.0.1:20049"), []Registration{reg("rdma", "127.0.0.1:20049")}},
		{"rdma", tcp("[2001:db8::1]:20049"), []Registration{reg("rdma6", "[2001:db8::1]:20049")}},
		{"rdma", tcp("[::ffff:192.0.2.1]:20049"), []Registration{reg("rdma", "192.0.2.1:20049")}},
		{"rdma", tcp("[::]:20049"), []Registration{reg("rdma", "0.0.0.0:20049"), reg("rdma6", "[::]:20049")}},
		{"tcp", tcp("0.0.0.0:111"), []Registration{reg("tcp", "0.0.0.0:111")}},
		{"tcp", tcp("[fe80::1%lo]:7"), []Registration{reg("tcp6", "[fe80::1]:7")}},
	}
	for _, tc := range tests {
		got, err := ListenerRegistrations(100400, 1, tc.transport, tc.addr)
		if err != nil {
			t.Errorf("ListenerRegistrations(%s, %v): %v", tc.transport, tc.addr, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("ListenerRegistrations(%s, %v) = %v, want %v", tc.transport, tc.addr, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ListenerRegistrations(%s, %v)[%d] = %v, want %v", tc.transport, tc.addr, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := ListenerRegistrations(100400, 1, "rdma", &net.UnixAddr{Name: "/run/x", Net: "unix"}); err == nil {
		t.Error("registrations of a unix address succeeded")
	}
	if s := tests[0].want[0].String(); s != "100400/1/rdma=127.0.0.1.78.81" {
		t.Errorf("String() = %q", s)
	}
}

// TestRegisterAllPolicies drives RegisterAll and UnregisterAll against a Registry:
// a stale mapping at the same address is replaced under both policies, one at
// another address is refused (and nothing stays registered) under ReplaceSameAddr
// and replaced under ReplaceAny.
func TestRegisterAllPolicies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newTestClient(t, serveRegistry(t, NewRegistry()), Version4)
	mine := []Registration{
		{Prog: 100400, Vers: 1, NetID: NetIDRDMA, Addr: netip.MustParseAddrPort("127.0.0.1:20049")},
		{Prog: 100003, Vers: 3, NetID: NetIDTCP, Addr: netip.MustParseAddrPort("127.0.0.1:2049")},
	}
	lookup := func(r Registration) (netip.AddrPort, error) { return c.Lookup(ctx, r.Prog, r.Vers, r.NetID) }

	// Fresh: both made.
	if err := c.RegisterAll(ctx, mine, "test", ReplaceSameAddr, nil); err != nil {
		t.Fatal(err)
	}
	// Again (a previous instance's mappings): replaced, each reported.
	var replaced []Registration
	if err := c.RegisterAll(ctx, mine, "test", ReplaceSameAddr, func(old Registration) { replaced = append(replaced, old) }); err != nil {
		t.Fatal(err)
	}
	if len(replaced) != 2 || replaced[0] != mine[0] || replaced[1] != mine[1] {
		t.Errorf("replaced %v, want %v", replaced, mine)
	}
	if err := c.UnregisterAll(ctx, mine); err != nil {
		t.Fatal(err)
	}

	// Another server holds NFS at another port: refused, and our CONF_RDMA mapping
	// made before it is removed again.
	other := Registration{Prog: 100003, Vers: 3, NetID: NetIDTCP, Addr: netip.MustParseAddrPort("127.0.0.1:3049")}
	if err := c.Register(ctx, other.Prog, other.Vers, other.NetID, other.Addr, "other"); err != nil {
		t.Fatal(err)
	}
	err := c.RegisterAll(ctx, mine, "test", ReplaceSameAddr, nil)
	if !errors.Is(err, ErrRegisteredElsewhere) {
		t.Fatalf("RegisterAll over another server's mapping: %v, want ErrRegisteredElsewhere", err)
	}
	if _, err := lookup(mine[0]); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("after a failed RegisterAll, %v is still registered (%v)", mine[0], err)
	}
	if got, err := lookup(other); err != nil || got != other.Addr {
		t.Errorf("the other server's mapping: %v %v, want it untouched", got, err)
	}
	// ReplaceAny takes it over.
	if err := c.RegisterAll(ctx, mine, "test", ReplaceAny, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range mine {
		if got, err := lookup(r); err != nil || got != r.Addr {
			t.Errorf("%v: lookup %v %v", r, got, err)
		}
	}
	if err := c.UnregisterAll(ctx, mine); err != nil {
		t.Fatal(err)
	}
	for _, r := range mine {
		if _, err := lookup(r); !errors.Is(err, ErrNotRegistered) {
			t.Errorf("%v still registered after UnregisterAll: %v", r, err)
		}
	}
}

// TestRegisterAllRollsBackAfterDeadline: RegisterAll is all or nothing even when its
// context ends part way (the rpcbind exchange timed out, or the daemon is stopping):
// the mappings it made are removed again, and the one it replaced registered again,
// with a context of their own, since the caller's can no longer carry a call.
func TestRegisterAllRollsBackAfterDeadline(t *testing.T) {
	reg := NewRegistry()
	c := newTestClient(t, serveRegistry(t, reg), Version4)
	mine := []Registration{
		{Prog: 100400, Vers: 1, NetID: NetIDRDMA, Addr: netip.MustParseAddrPort("127.0.0.1:20049")},
		{Prog: 100003, Vers: 3, NetID: NetIDTCP, Addr: netip.MustParseAddrPort("127.0.0.1:2049")},
	}
	// A stale mapping of the second, which RegisterAll replaces; the context ends
	// while it does.
	if err := reg.Set(RPCB{Prog: 100003, Vers: 3, NetID: NetIDTCP, Addr: "127.0.0.1.8.1", Owner: OwnerUnknown}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.RegisterAll(ctx, mine, "test", ReplaceAny, func(Registration) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RegisterAll whose context ends: %v, want context.Canceled", err)
	}
	if g, ok := reg.Lookup(mine[0].Prog, mine[0].Vers, mine[0].NetID); ok {
		t.Errorf("after a RegisterAll cut short, %v is still registered: %+v", mine[0], g)
	}
	// The stale mapping, removed before the SET that the context's end cut
	// short, is back as it was.
	if g, ok := reg.Lookup(100003, 3, NetIDTCP); !ok || g.Addr != "127.0.0.1.8.1" {
		t.Errorf("after a RegisterAll cut short, the mapping it replaced is %+v %v, want it back at 127.0.0.1.8.1", g, ok)
	}
}

// TestRegisterAllRollbackRestoresReplaced: a RegisterAll that fails part way leaves
// rpcbind's table as it found it. A stale mapping that one of its SETs replaced (an
// UNSET, then the SET) is registered again, at the very universal address it had,
// and not only what RegisterAll added is removed.
func TestRegisterAllRollbackRestoresReplaced(t *testing.T) {
	reg := NewRegistry()
	c := newTestClient(t, serveRegistry(t, reg), Version4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mine := []Registration{
		{Prog: 100400, Vers: 1, NetID: NetIDRDMA, Addr: netip.MustParseAddrPort("127.0.0.1:20049")},
		{Prog: 100003, Vers: 3, NetID: NetIDTCP, Addr: netip.MustParseAddrPort("127.0.0.1:2049")},
	}
	// The first is held by a stale mapping RegisterAll replaces; the second by
	// another owner's, which it cannot remove, so it fails there.
	stale := RPCB{Prog: 100400, Vers: 1, NetID: NetIDRDMA, Addr: "0.0.0.0.78.81", Owner: OwnerUnknown}
	if err := reg.Set(stale); err != nil {
		t.Fatal(err)
	}
	held := RPCB{Prog: 100003, Vers: 3, NetID: NetIDTCP, Addr: "127.0.0.1.8.1", Owner: OwnerSuperuser}
	if err := reg.Set(held); err != nil {
		t.Fatal(err)
	}
	var replaced []Registration
	err := c.RegisterAll(ctx, mine, "test", ReplaceAny, func(old Registration) { replaced = append(replaced, old) })
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("RegisterAll over a mapping it may not remove: %v, want ErrRefused", err)
	}
	if len(replaced) != 1 {
		t.Fatalf("replaced %v, want the stale rdma mapping", replaced)
	}
	if g, ok := reg.Lookup(stale.Prog, stale.Vers, stale.NetID); !ok || g.Addr != stale.Addr {
		t.Errorf("after the rollback the stale mapping is %+v %v, want it back at %s", g, ok, stale.Addr)
	}
	if g, ok := reg.Lookup(held.Prog, held.Vers, held.NetID); !ok || g != held {
		t.Errorf("the other owner's mapping: %+v %v, want it untouched", g, ok)
	}

}
