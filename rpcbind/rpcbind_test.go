package rpcbind

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/rpcbind/rpcbindtest"
)

// confRDMAProg is the program the tests register: CONF_RDMA (seed draft §12).
const confRDMAProg = 100400

// needRPCBind makes sure the private rpcbind answers (see rpcbindtest.Need).
func needRPCBind(t testing.TB) {
	t.Helper()
	rpcbindtest.Need(t)
}

// findRPCInfo returns the path of libtirpc's rpcinfo, or "" when it is not installed.
func findRPCInfo() string {
	if p, err := exec.LookPath("rpcinfo"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/rpcinfo", "/sbin/rpcinfo", "/usr/bin/rpcinfo"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// hasFields reports whether a line of out begins with the fields want.
func hasFields(out string, want []string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(want) && slices.Equal(f[:len(want)], want) {
			return true
		}
	}
	return false
}

func dialTest(t *testing.T, vers uint32) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := DialClient(ctx, "", &Options{Version: vers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func findInDump(l []RPCB, prog, vers uint32, netid string) (RPCB, bool) {
	for _, m := range l {
		if m.Prog == prog && m.Vers == vers && m.NetID == netid {
			return m, true
		}
	}
	return RPCB{}, false
}

// TestRealRPCBindRDMA registers CONF_RDMA (100400) under "rdma" and "rdma6" with the
// real rpcbind, looks both up, finds them in DUMP, unregisters them and checks they
// are gone, once with rpcbind version 4 and once with version 3.
func TestRealRPCBindRDMA(t *testing.T) {
	needRPCBind(t)
	for _, vers := range []uint32{Version4, Version3} {
		t.Run("v"+string(rune('0'+vers)), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := dialTest(t, vers)
			const progVers = 1
			// A crashed earlier run may have left registrations behind.
			c.Unregister(ctx, confRDMAProg, progVers, NetIDRDMA)
			c.Unregister(ctx, confRDMAProg, progVers, NetIDRDMA6)

			v4 := netip.MustParseAddrPort("127.0.0.1:20049")
			v6 := netip.MustParseAddrPort("[::1]:20050")
			if err := c.Register(ctx, confRDMAProg, progVers, NetIDRDMA, v4, "superuser"); err != nil {
				t.Fatal(err)
			}
			if err := c.Register(ctx, confRDMAProg, progVers, NetIDRDMA6, v6, "superuser"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c.Unregister(context.Background(), confRDMAProg, progVers, NetIDRDMA)
				c.Unregister(context.Background(), confRDMAProg, progVers, NetIDRDMA6)
			})

			// A second registration under the same netid with another address is refused.
			other := netip.MustParseAddrPort("127.0.0.1:20051")
			if err := c.Register(ctx, confRDMAProg, progVers, NetIDRDMA, other, "superuser"); !errors.Is(err, ErrRefused) {
				t.Errorf("second Register under rdma: %v, want ErrRefused", err)
			}

			got, err := c.Lookup(ctx, confRDMAProg, progVers, NetIDRDMA)
			if err != nil || got != v4 {
				t.Errorf("Lookup rdma = %v, %v; want %v", got, err, v4)
			}
			got, err = c.Lookup(ctx, confRDMAProg, progVers, NetIDRDMA6)
			if err != nil || got != v6 {
				t.Errorf("Lookup rdma6 = %v, %v; want %v", got, err, v6)
			}
			if _, err := c.Lookup(ctx, confRDMAProg, progVers, NetIDTCP); !errors.Is(err, ErrNotRegistered) {
				t.Errorf("Lookup tcp: %v, want ErrNotRegistered", err)
			}
			if _, err := c.Lookup(ctx, confRDMAProg, 2, NetIDRDMA); !errors.Is(err, ErrNotRegistered) {
				t.Errorf("Lookup version 2: %v, want ErrNotRegistered", err)
			}

			l, err := c.Dump(ctx)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := findInDump(l, confRDMAProg, progVers, NetIDRDMA)
			if !ok || m.Addr != "127.0.0.1.78.81" {
				t.Errorf("DUMP rdma entry = %+v, %v; want r_addr 127.0.0.1.78.81", m, ok)
			}
			t.Logf("DUMP rdma entry: %+v (rpcbind records the owner of a TCP registration itself)", m)
			m, ok = findInDump(l, confRDMAProg, progVers, NetIDRDMA6)
			if !ok || m.Addr != "::1.78.82" {
				t.Errorf("DUMP rdma6 entry = %+v, %v; want r_addr ::1.78.82", m, ok)
			}
			// libtirpc's rpcinfo, an independent client, sees the same table.
			if path := findRPCInfo(); path != "" {
				out, err := exec.CommandContext(ctx, path, "127.0.0.1").CombinedOutput()
				if err != nil {
					t.Fatalf("rpcinfo: %v: %s", err, out)
				}
				for _, want := range [][]string{{"100400", "1", "rdma", "127.0.0.1.78.81"}, {"100400", "1", "rdma6", "::1.78.82"}} {
					if !hasFields(string(out), want) {
						t.Errorf("rpcinfo 127.0.0.1 lacks %q:\n%s", want, out)
					}
				}
			}
			// rpcbind itself is always registered.
			if _, ok := findInDump(l, Program, Version4, NetIDTCP); !ok {
				t.Errorf("DUMP lacks rpcbind's own tcp registration: %+v", l)
			}

			// GETADDR answers for the connection's netid ("tcp"): log what it says.
			ua, err := c.GetAddr(ctx, &RPCB{Prog: confRDMAProg, Vers: progVers, NetID: NetIDRDMA})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("GETADDR netid rdma over tcp answers %q", ua)

			if err := c.Unregister(ctx, confRDMAProg, progVers, NetIDRDMA); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Lookup(ctx, confRDMAProg, progVers, NetIDRDMA); !errors.Is(err, ErrNotRegistered) {
				t.Errorf("Lookup rdma after Unregister: %v, want ErrNotRegistered", err)
			}
			if got, err := c.Lookup(ctx, confRDMAProg, progVers, NetIDRDMA6); err != nil || got != v6 {
				t.Errorf("Lookup rdma6 after unregistering rdma = %v, %v; want %v", got, err, v6)
			}
			// Linux rpcbind answers TRUE to an UNSET that matches nothing.
			if err := c.Unregister(ctx, confRDMAProg, progVers, NetIDRDMA); err != nil {
				t.Errorf("second Unregister rdma: %v, want nil", err)
			}
			if err := c.Unregister(ctx, confRDMAProg, progVers, NetIDRDMA6); err != nil {
				t.Fatal(err)
			}
			l, err = c.Dump(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range l {
				if m.Prog == confRDMAProg {
					t.Errorf("DUMP still lists %+v after Unregister", m)
				}
			}
		})
	}
}

// TestRealRPCBindTCPGetAddr checks GETADDR where it does work: a "tcp" registration
// looked up over a TCP connection.
func TestRealRPCBindTCPGetAddr(t *testing.T) {
	needRPCBind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialTest(t, Version4)
	const vers = 3
	c.Unregister(ctx, confRDMAProg, vers, "")
	ap := netip.MustParseAddrPort("127.0.0.1:20052")
	if err := c.Register(ctx, confRDMAProg, vers, NetIDTCP, ap, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Unregister(context.Background(), confRDMAProg, vers, "") })
	ua, err := c.GetAddr(ctx, &RPCB{Prog: confRDMAProg, Vers: vers, NetID: NetIDTCP})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseUniversalAddr(ua)
	if err != nil || got.Port() != ap.Port() {
		t.Errorf("GETADDR = %q (%v, %v), want port %d", ua, got, err, ap.Port())
	}
	if err := c.Unregister(ctx, confRDMAProg, vers, NetIDTCP); err != nil {
		t.Fatal(err)
	}
	ua, err = c.GetAddr(ctx, &RPCB{Prog: confRDMAProg, Vers: vers, NetID: NetIDTCP})
	if err != nil || ua != "" {
		t.Errorf("GETADDR after UNSET = %q, %v; want \"\"", ua, err)
	}
}

// TestRealRPCBindPortmap exercises version 2: SET, GETPORT, DUMP, UNSET.
func TestRealRPCBindPortmap(t *testing.T) {
	needRPCBind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialTest(t, Version4)
	for _, v := range []uint32{Version2, Version3, Version4} {
		if err := c.Null(ctx, v); err != nil {
			t.Errorf("NULL v%d: %v", v, err)
		}
	}
	const vers = 2
	m := Mapping{Prog: confRDMAProg, Vers: vers, Prot: IPProtoTCP, Port: 20053}
	c.PmapUnset(ctx, &m)
	ok, err := c.PmapSet(ctx, &m)
	if err != nil || !ok {
		t.Fatalf("PMAPPROC_SET = %v, %v", ok, err)
	}
	t.Cleanup(func() { c.PmapUnset(context.Background(), &m) })
	port, err := c.PmapGetPort(ctx, &Mapping{Prog: confRDMAProg, Vers: vers, Prot: IPProtoTCP})
	if err != nil || port != 20053 {
		t.Errorf("PMAPPROC_GETPORT = %d, %v; want 20053", port, err)
	}
	if port, err := c.PmapGetPort(ctx, &Mapping{Prog: confRDMAProg, Vers: vers, Prot: IPProtoUDP}); err != nil || port != 0 {
		t.Errorf("PMAPPROC_GETPORT udp = %d, %v; want 0", port, err)
	}
	l, err := c.PmapDump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range l {
		found = found || e == m
	}
	if !found {
		t.Errorf("PMAPPROC_DUMP lacks %+v: %+v", m, l)
	}
	// The version 2 registration is a "tcp" mapping with a universal address in the
	// version 4 table.
	rl, err := c.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := findInDump(rl, confRDMAProg, vers, NetIDTCP); !ok || e.Addr != "0.0.0.0.78.85" {
		t.Errorf("v4 DUMP entry for the portmap registration = %+v, %v; want r_addr 0.0.0.0.78.85", e, ok)
	}
	ok, err = c.PmapUnset(ctx, &m)
	if err != nil || !ok {
		t.Fatalf("PMAPPROC_UNSET = %v, %v", ok, err)
	}
	if port, err := c.PmapGetPort(ctx, &m); err != nil || port != 0 {
		t.Errorf("PMAPPROC_GETPORT after UNSET = %d, %v; want 0", port, err)
	}
	if ts, err := c.GetTime(ctx); err != nil || ts == 0 {
		t.Errorf("GETTIME = %d, %v", ts, err)
	}
}

// TestRealRPCBindLocalOwner registers through rpcbind's AF_LOCAL socket as root, so
// the mapping is owned by "superuser": UNSET over TCP (owner "unknown") is refused and
// UNSET through the local socket succeeds.
func TestRealRPCBindLocalOwner(t *testing.T) {
	needRPCBind(t)
	if os.Geteuid() != 0 {
		t.Skip("the superuser owner needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	local, err := DialLocalClient(ctx, "", nil)
	if err != nil {
		t.Skipf("rpcbind's local socket: %v", err)
	}
	defer local.Close()
	remote := dialTest(t, Version4)
	const vers = 4
	local.Unregister(ctx, confRDMAProg, vers, "")
	ap := netip.MustParseAddrPort("[::]:20054")
	if err := local.Register(ctx, confRDMAProg, vers, NetIDRDMA6, ap, "superuser"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Unregister(context.Background(), confRDMAProg, vers, "") })
	l, err := remote.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := findInDump(l, confRDMAProg, vers, NetIDRDMA6); !ok || m.Owner != "superuser" || m.Addr != "::.78.86" {
		t.Errorf("DUMP entry = %+v, %v; want owner superuser, r_addr ::.78.86", m, ok)
	}
	if err := remote.Unregister(ctx, confRDMAProg, vers, NetIDRDMA6); !errors.Is(err, ErrRefused) {
		t.Errorf("Unregister over TCP of a superuser mapping: %v, want ErrRefused", err)
	}
	if got, err := remote.Lookup(ctx, confRDMAProg, vers, NetIDRDMA6); err != nil || got != ap {
		t.Errorf("Lookup = %v, %v; want %v", got, err, ap)
	}
	if err := local.Unregister(ctx, confRDMAProg, vers, NetIDRDMA6); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Lookup(ctx, confRDMAProg, vers, NetIDRDMA6); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("Lookup after local Unregister: %v, want ErrNotRegistered", err)
	}
}
