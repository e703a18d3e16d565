package rpcbind

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func enc(m xdr.EncoderTo) []byte {
	var e xdr.Encoder
	m.EncodeXDR(&e)
	return e.Bytes()
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// Golden vectors derived from RFC 1833's XDR (the vectors of the former
// nfsbind/portmap package).
func TestRegistryGolden(t *testing.T) {
	// mapping: prog 100003 (0x186a3), vers 3, prot TCP 6, port 2049 (0x801).
	if got, want := enc(&Mapping{Prog: 100003, Vers: 3, Prot: IPProtoTCP, Port: 2049}), unhex("000186a3 00000003 00000006 00000801"); !bytes.Equal(got, want) {
		t.Errorf("mapping: %x", got)
	}
	// rpcb: prog 100005, vers 3, netid "tcp" (3 + 1 pad), addr "0.0.0.0.8.1" (11 + 1 pad), owner "".
	r := RPCB{Prog: 100005, Vers: 3, NetID: "tcp", Addr: "0.0.0.0.8.1"}
	want := unhex("000186a5 00000003 00000003 74637000 0000000b 302e302e302e302e382e3100 00000000")
	if got := enc(&r); !bytes.Equal(got, want) {
		t.Errorf("rpcb: %x", got)
	}
	var back RPCB
	if err := back.DecodeXDR(xdr.NewDecoder(want)); err != nil || back != r {
		t.Errorf("rpcb decode: %+v %v", back, err)
	}
	// pmaplist with one entry: TRUE, mapping, FALSE.
	l := PmapList{{Prog: 100000, Vers: 2, Prot: IPProtoTCP, Port: 111}}
	if got := enc(&l); !bytes.Equal(got, unhex("00000001 000186a0 00000002 00000006 0000006f 00000000")) {
		t.Errorf("pmaplist: %x", got)
	}
}

// The universal addresses the Registry writes and reads (cases of the former
// nfsbind/portmap UniversalAddr and ParseUniversalAddr).
func TestRegistryUniversalAddr(t *testing.T) {
	for _, c := range []struct {
		ap   netip.AddrPort
		want string
	}{
		{netip.MustParseAddrPort("127.0.0.1:2049"), "127.0.0.1.8.1"},
		{netip.AddrPortFrom(netip.IPv4Unspecified(), 111), "0.0.0.0.0.111"},
		{netip.MustParseAddrPort("[::1]:20049"), "::1.78.81"},
	} {
		got := FormatUniversalAddr(c.ap)
		if got != c.want {
			t.Errorf("FormatUniversalAddr(%v) = %q, want %q", c.ap, got, c.want)
		}
		back, err := ParseUniversalAddr(got)
		if err != nil || back != c.ap {
			t.Errorf("ParseUniversalAddr(%q) = %v %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "1", "1.2", "a.b.c", "1.2.3.4.256.1", "1.2.3.4.x.1"} {
		if _, err := ParseUniversalAddr(bad); err == nil {
			t.Errorf("ParseUniversalAddr(%q) accepted", bad)
		}
	}
}

// serveRegistry serves reg on 127.0.0.1 over TCP and returns a transport to it.
func serveRegistry(t *testing.T, reg *Registry) oncrpc.RoundTripper {
	t.Helper()
	return dialRegistry(t, listenRegistry(t, reg))
}

// listenRegistry serves reg on 127.0.0.1 over TCP and returns its address.
func listenRegistry(t *testing.T, reg *Registry) string {
	t.Helper()
	rs := oncrpc.NewServer(nil)
	reg.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	t.Cleanup(func() { rs.Close() })
	return l.Addr().String()
}

// dialRegistry returns a transport to the Registry at addr.
func dialRegistry(t *testing.T, addr string) oncrpc.RoundTripper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := oncrpc.DialTCP(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func newTestClient(t *testing.T, tr oncrpc.RoundTripper, vers uint32) *Client {
	t.Helper()
	c, err := NewClient(tr, &Options{Version: vers})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRegistryOverTCP: this package's Client asks a Registry served over TCP what
// Linux mount asks (GETPORT, GETADDR) and registers with it through version 2.
func TestRegistryOverTCP(t *testing.T) {
	reg := NewRegistry()
	if err := reg.SetPort(100003, 3, IPProtoTCP, 2049); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetPort(100005, 3, IPProtoTCP, 2049); err != nil {
		t.Fatal(err)
	}
	tr := serveRegistry(t, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newTestClient(t, tr, Version4)
	if p, err := c.PmapGetPort(ctx, &Mapping{Prog: 100003, Vers: 3, Prot: IPProtoTCP}); err != nil || p != 2049 {
		t.Fatalf("GETPORT nfs: %d %v", p, err)
	}
	if p, err := c.PmapGetPort(ctx, &Mapping{Prog: 100003, Vers: 3, Prot: IPProtoUDP}); err != nil || p != 0 {
		t.Fatalf("GETPORT nfs/udp: %d %v", p, err)
	}
	for _, v := range []uint32{Version3, Version4} {
		cv := newTestClient(t, tr, v)
		a, err := cv.GetAddr(ctx, &RPCB{Prog: 100005, Vers: 3, NetID: "tcp"})
		if err != nil || a != "0.0.0.0.8.1" {
			t.Fatalf("GETADDR v%d: %q %v", v, a, err)
		}
		if a, err := cv.GetAddr(ctx, &RPCB{Prog: 100021, Vers: 4, NetID: "tcp"}); err != nil || a != "" {
			t.Fatalf("GETADDR v%d of an unregistered program: %q %v", v, a, err)
		}
		// GETADDR answers another version of a registered program (RFC 1833 §2.2.1).
		if a, err := cv.GetAddr(ctx, &RPCB{Prog: 100005, Vers: 1, NetID: "tcp"}); err != nil || a != "0.0.0.0.8.1" {
			t.Fatalf("GETADDR v%d of another version: %q %v", v, a, err)
		}
		if a, err := cv.GetAddr(ctx, &RPCB{Prog: 100005, Vers: 3, NetID: "udp"}); err != nil || a != "" {
			t.Fatalf("GETADDR v%d under another netid: %q %v", v, a, err)
		}
	}
	// Registration from loopback works once; a second SET of the same mapping fails.
	m := Mapping{Prog: 400000, Vers: 1, Prot: IPProtoTCP, Port: 4000}
	if ok, err := c.PmapSet(ctx, &m); err != nil || !ok {
		t.Fatalf("SET: %v %v", ok, err)
	}
	if ok, err := c.PmapSet(ctx, &m); err != nil || ok {
		t.Fatalf("SET of an existing mapping: %v %v", ok, err)
	}
	if p, err := c.PmapGetPort(ctx, &Mapping{Prog: 400000, Vers: 1, Prot: IPProtoTCP}); err != nil || p != 4000 {
		t.Fatalf("GETPORT after SET: %d %v", p, err)
	}
	// A protocol other than TCP or UDP, or a port above 65535, is refused.
	for _, bad := range []Mapping{{Prog: 400001, Vers: 1, Prot: 132, Port: 4001}, {Prog: 400001, Vers: 1, Prot: IPProtoTCP, Port: 65536}} {
		if ok, err := c.PmapSet(ctx, &bad); err != nil || ok {
			t.Fatalf("SET %+v: %v %v", bad, ok, err)
		}
	}
	ms, err := c.PmapDump(ctx)
	if err != nil || len(ms) != 9 { // 6 for the port mapper itself, nfs, mount, 400000
		t.Fatalf("DUMP: %d entries %v: %+v", len(ms), err, ms)
	}
	if !slices.Contains(ms, m) || !slices.Contains(ms, Mapping{Prog: Program, Vers: Version2, Prot: IPProtoUDP, Port: Port}) {
		t.Fatalf("DUMP lacks %+v or rpcbind itself: %+v", m, ms)
	}
	// The version 2 registration is a "tcp" mapping of the version 3/4 table.
	if g, ok := reg.Lookup(400000, 1, NetIDTCP); !ok || g.Addr != "0.0.0.0.15.160" {
		t.Fatalf("registry entry of the v2 SET: %+v %v", g, ok)
	}
	if ok, err := c.PmapUnset(ctx, &m); err != nil || !ok {
		t.Fatalf("UNSET: %v %v", ok, err)
	}
	if p, err := c.PmapGetPort(ctx, &Mapping{Prog: 400000, Vers: 1, Prot: IPProtoTCP}); err != nil || p != 0 {
		t.Fatalf("GETPORT after UNSET: %d %v", p, err)
	}
	if ok, err := c.PmapUnset(ctx, &m); err != nil || ok {
		t.Fatalf("UNSET of nothing: %v %v", ok, err)
	}
	// Garbage arguments are GARBAGE_ARGS.
	err = oncrpc.NewClient(tr, Program, Version2).Call(ctx, ProcGetAddr, rawArgs{0, 0, 0, 1}, nil)
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.GarbageArgs {
		t.Fatalf("short GETPORT args: %v", err)
	}
	err = oncrpc.NewClient(tr, Program, Version4).Call(ctx, ProcSet, rawArgs{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0x10, 0}, nil)
	if !errors.As(err, &ae) || ae.Stat != oncrpc.GarbageArgs {
		t.Fatalf("v4 SET args with an overlong r_netid: %v", err)
	}
}

type rawArgs []byte

func (r rawArgs) EncodeXDR(e *xdr.Encoder) { e.FixedOpaque(r) }

// TestClientRegistry: the rpcbind helpers (Register, Lookup, Unregister), SET, UNSET,
// DUMP, GETTIME and NULL of this package's Client against a Registry over TCP, with
// versions 3 and 4.
func TestClientRegistry(t *testing.T) {
	reg := NewRegistry()
	tr := serveRegistry(t, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, vers := range []uint32{Version3, Version4} {
		c := newTestClient(t, tr, vers)
		if err := c.Null(ctx, vers); err != nil {
			t.Fatalf("v%d NULL: %v", vers, err)
		}
		prog := confRDMAProg + vers
		ap4 := netip.MustParseAddrPort("192.0.2.1:20049")
		ap6 := netip.MustParseAddrPort("[2001:db8::1]:20049")
		if err := c.Register(ctx, prog, 1, NetIDRDMA, ap4, "superuser"); err != nil {
			t.Fatalf("v%d Register rdma: %v", vers, err)
		}
		if err := c.Register(ctx, prog, 1, NetIDRDMA6, ap6, "superuser"); err != nil {
			t.Fatalf("v%d Register rdma6: %v", vers, err)
		}
		if err := c.Register(ctx, prog, 1, NetIDRDMA, ap4, "superuser"); !errors.Is(err, ErrRefused) {
			t.Fatalf("v%d second Register: %v, want ErrRefused", vers, err)
		}
		if got, err := c.Lookup(ctx, prog, 1, NetIDRDMA); err != nil || got != ap4 {
			t.Fatalf("v%d Lookup rdma = %v, %v", vers, got, err)
		}
		if got, err := c.Lookup(ctx, prog, 1, NetIDRDMA6); err != nil || got != ap6 {
			t.Fatalf("v%d Lookup rdma6 = %v, %v", vers, got, err)
		}
		// Unlike Linux rpcbind, the Registry finds "rdma" registrations with GETADDR.
		if ua, err := c.GetAddr(ctx, &RPCB{Prog: prog, Vers: 1, NetID: NetIDRDMA}); err != nil || ua != "192.0.2.1.78.81" {
			t.Fatalf("v%d GETADDR rdma = %q, %v", vers, ua, err)
		}
		l, err := c.Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Registered over TCP: owned by "unknown", whatever r_owner said.
		if e, ok := findInDump(l, prog, 1, NetIDRDMA6); !ok || e.Addr != "2001:db8::1.78.81" || e.Owner != OwnerUnknown {
			t.Fatalf("v%d DUMP entry = %+v, %v", vers, e, ok)
		}
		if _, ok := findInDump(l, Program, Version4, NetIDTCP); !ok {
			t.Fatalf("v%d DUMP lacks rpcbind itself: %+v", vers, l)
		}
		if err := c.Unregister(ctx, prog, 1, NetIDRDMA); err != nil {
			t.Fatalf("v%d Unregister rdma: %v", vers, err)
		}
		if _, err := c.Lookup(ctx, prog, 1, NetIDRDMA); !errors.Is(err, ErrNotRegistered) {
			t.Fatalf("v%d Lookup after Unregister: %v", vers, err)
		}
		if _, err := c.Lookup(ctx, prog, 1, NetIDRDMA6); err != nil {
			t.Fatalf("v%d Lookup rdma6 after unregistering rdma: %v", vers, err)
		}
		// Unregistering what is not registered is refused (Linux rpcbind accepts it).
		if err := c.Unregister(ctx, prog, 1, NetIDRDMA); !errors.Is(err, ErrRefused) {
			t.Fatalf("v%d second Unregister: %v, want ErrRefused", vers, err)
		}
		if err := c.Unregister(ctx, prog, 1, ""); err != nil {
			t.Fatalf("v%d Unregister every netid: %v", vers, err)
		}
		if _, ok := reg.Lookup(prog, 1, NetIDRDMA6); ok {
			t.Fatalf("v%d rdma6 registration survived UNSET of every netid", vers)
		}
		if ts, err := c.GetTime(ctx); err != nil || ts == 0 {
			t.Fatalf("v%d GETTIME = %d, %v", vers, ts, err)
		}
	}
	// GETVERSADDR exists in version 4 only, and does not answer another version.
	reg.SetPort(100005, 3, IPProtoTCP, 2049)
	var ua stringResult
	q := RPCB{Prog: 100005, Vers: 3, NetID: NetIDTCP}
	if err := oncrpc.NewClient(tr, Program, Version4).Call(ctx, ProcGetVersAddr, &q, &ua); err != nil || ua != "0.0.0.0.8.1" {
		t.Fatalf("v4 GETVERSADDR = %q, %v", ua, err)
	}
	q.Vers = 1
	if err := oncrpc.NewClient(tr, Program, Version4).Call(ctx, ProcGetVersAddr, &q, &ua); err != nil || ua != "" {
		t.Fatalf("v4 GETVERSADDR of another version = %q, %v", ua, err)
	}
	err := oncrpc.NewClient(tr, Program, Version3).Call(ctx, ProcGetVersAddr, &q, &ua)
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProcUnavail {
		t.Fatalf("v3 GETVERSADDR: %v, want PROC_UNAVAIL", err)
	}
	err = oncrpc.NewClient(tr, Program, Version4).Call(ctx, ProcCallit, nil, nil)
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProcUnavail {
		t.Fatalf("v4 BCAST: %v, want PROC_UNAVAIL", err)
	}
}

// Only local callers may change the registry, through any version: a remote
// caller's SET or UNSET is denied (AUTH_TOOWEAK), and changes nothing.
func TestSetRefusedFromRemote(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(10, 0, 2, 15), Port: 700}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 700}
	local6 := &net.UDPAddr{IP: net.IPv6loopback, Port: 700}
	call := func(h oncrpc.Handler, proc uint32, args xdr.EncoderTo, from net.Addr) bool {
		t.Helper()
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: proc}, Args: xdr.NewDecoder(enc(args)), RemoteAddr: from}
		var e xdr.Encoder
		if err := h.ServeRPC(context.Background(), req, &e); err != nil {
			var re *oncrpc.RejectError
			if !errors.As(err, &re) || re.AuthStat != oncrpc.AuthTooWeak {
				t.Fatalf("proc %d from %v: %v, want TRUE, FALSE or AUTH_TOOWEAK", proc, from, err)
			}
			return false
		}
		var r boolResult
		if err := r.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil {
			t.Fatal(err)
		}
		return bool(r)
	}
	reg := NewRegistry()
	h := reg.pmapHandler()
	m := Mapping{Prog: 7, Vers: 1, Prot: IPProtoTCP, Port: 7}
	for _, c := range []struct {
		addr net.Addr
		want bool
	}{{remote, false}, {local, true}} {
		if got := call(h, ProcSet, &m, c.addr); got != c.want {
			t.Errorf("SET from %v: %v, want %v", c.addr, got, c.want)
		}
	}
	if call(h, ProcUnset, &m, remote) {
		t.Error("v2 UNSET from a remote caller succeeded")
	}
	if _, ok := reg.Lookup(7, 1, NetIDTCP); !ok {
		t.Fatal("v2 UNSET from a remote caller removed the mapping")
	}
	if !call(h, ProcUnset, &m, local) {
		t.Error("v2 UNSET from loopback failed")
	}
	for _, vers := range []uint32{Version3, Version4} {
		h := reg.rpcbHandler(vers)
		q := RPCB{Prog: 8, Vers: vers, NetID: NetIDRDMA, Addr: "192.0.2.1.78.81", Owner: "x"}
		if call(h, ProcSet, &q, remote) {
			t.Errorf("v%d SET from a remote caller succeeded", vers)
		}
		if !call(h, ProcSet, &q, local6) {
			t.Errorf("v%d SET from ::1 failed", vers)
		}
		if call(h, ProcUnset, &q, remote) {
			t.Errorf("v%d UNSET from a remote caller succeeded", vers)
		}
		if !call(h, ProcUnset, &q, local) {
			t.Errorf("v%d UNSET from loopback failed", vers)
		}
	}
}

// TestRegistryUnsetHonoursOwner: UNSET removes only what its caller owns (RFC 1833
// §2.2.1: "Only the owner of the service or the super-user is allowed to unset a
// service"). A caller over TCP is "unknown" whatever r_owner it sends, as in Linux
// rpcbind: through no version can it remove a registration of SetPort or rpcbind's
// own, and what it registers is owned by "unknown", which any loopback caller may
// remove. An UNSET that matches a registration of another owner removes nothing.
func TestRegistryUnsetHonoursOwner(t *testing.T) {
	reg := NewRegistry()
	if err := reg.SetPort(100003, 3, IPProtoTCP, 2049); err != nil { // owned by "superuser"
		t.Fatal(err)
	}
	addr := listenRegistry(t, reg)
	tr := dialRegistry(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, vers := range []uint32{Version3, Version4} {
		c := newTestClient(t, tr, vers)
		for _, q := range []RPCB{
			{Prog: 100003, Vers: 3, NetID: NetIDTCP, Owner: "nobody"},
			{Prog: 100003, Vers: 3, NetID: NetIDTCP, Owner: OwnerSuperuser}, // a claim, not trusted
			{Prog: 100003, Vers: 3},                                // every netid
			{Prog: Program, Vers: Version4, Owner: OwnerSuperuser}, // rpcbind itself
		} {
			if ok, err := c.Unset(ctx, &q); err != nil || ok {
				t.Errorf("v%d UNSET %+v of another owner's registration: %v %v, want FALSE", vers, q, ok, err)
			}
		}
	}
	c := newTestClient(t, tr, Version4)
	if ok, err := c.PmapUnset(ctx, &Mapping{Prog: 100003, Vers: 3, Prot: IPProtoTCP}); err != nil || ok {
		t.Errorf("v2 UNSET of the superuser's NFS registration: %v %v, want FALSE", ok, err)
	}
	if l := reg.List(); len(l) != 7 {
		t.Fatalf("UNSET by a caller that owns nothing removed registrations: %d left: %+v", len(l), l)
	}

	// What a caller registers is owned by "unknown", whatever it claims, and may be
	// removed by any loopback caller (here another connection).
	mine := RPCB{Prog: 400000, Vers: 1, NetID: NetIDUDP, Addr: "127.0.0.1.15.160", Owner: OwnerSuperuser}
	if ok, err := c.Set(ctx, &mine); err != nil || !ok {
		t.Fatalf("v4 SET: %v %v", ok, err)
	}
	if g, ok := reg.Lookup(400000, 1, NetIDUDP); !ok || g.Owner != OwnerUnknown {
		t.Errorf("registration of a SET claiming the superuser: %+v %v, want owner %q", g, ok, OwnerUnknown)
	}
	if ok, err := c.PmapSet(ctx, &Mapping{Prog: 400001, Vers: 1, Prot: IPProtoTCP, Port: 4001}); err != nil || !ok {
		t.Fatalf("v2 SET: %v %v", ok, err)
	}
	if g, ok := reg.Lookup(400001, 1, NetIDTCP); !ok || g.Owner != OwnerUnknown {
		t.Errorf("registration of a v2 SET: %+v %v, want owner %q", g, ok, OwnerUnknown)
	}
	// An UNSET of every netid that matches the superuser's registration too removes
	// nothing, not even the caller's.
	if err := reg.Set(RPCB{Prog: 400000, Vers: 1, NetID: NetIDTCP, Addr: "127.0.0.1.15.161", Owner: OwnerSuperuser}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Unset(ctx, &RPCB{Prog: 400000, Vers: 1}); err != nil || ok {
		t.Errorf("v4 UNSET of every netid, one the superuser's: %v %v, want FALSE", ok, err)
	}
	if _, ok := reg.Lookup(400000, 1, NetIDUDP); !ok {
		t.Errorf("a refused UNSET removed the caller's registration")
	}
	other := newTestClient(t, dialRegistry(t, addr), Version3)
	if ok, err := other.Unset(ctx, &RPCB{Prog: 400000, Vers: 1, NetID: NetIDUDP}); err != nil || !ok {
		t.Errorf("v3 UNSET of an unknown owner's registration from another connection: %v %v, want TRUE", ok, err)
	}
	if ok, err := other.PmapUnset(ctx, &Mapping{Prog: 400001, Vers: 1}); err != nil || !ok {
		t.Errorf("v2 UNSET of an unknown owner's registration from another connection: %v %v, want TRUE", ok, err)
	}
	// The Go API is the superuser's.
	if !reg.Unset(100003, 3, "") || !reg.Unset(400000, 1, "") {
		t.Error("Registry.Unset did not remove the superuser's registrations")
	}
}

// TestRegistrySetNeedsNetIDAndAddr: versions 3 and 4 SET with an empty r_netid or
// r_addr answer FALSE and register nothing (RFC 1833 §2.2.1: "neither r_netid nor
// r_addr can be NULL"), and Registry.Set refuses them too.
func TestRegistrySetNeedsNetIDAndAddr(t *testing.T) {
	reg := NewRegistry()
	tr := serveRegistry(t, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, vers := range []uint32{Version3, Version4} {
		c := newTestClient(t, tr, vers)
		for _, q := range []RPCB{
			{Prog: 300001, Vers: 1, Owner: "x"},
			{Prog: 300002, Vers: 1, NetID: NetIDTCP, Owner: "x"},
			{Prog: 300003, Vers: 1, Addr: "127.0.0.1.8.1", Owner: "x"},
		} {
			if ok, err := c.Set(ctx, &q); err != nil || ok {
				t.Errorf("v%d SET %+v: %v %v, want FALSE", vers, q, ok, err)
			}
		}
	}
	if l := reg.List(); len(l) != 6 {
		t.Errorf("refused SETs registered something: %+v", l[6:])
	}
	var fe *FieldError
	if err := reg.Set(RPCB{Prog: 300001, Vers: 1, Addr: "127.0.0.1.8.1"}); !errors.As(err, &fe) || fe.Field != "r_netid" || !errors.Is(err, ErrEmpty) {
		t.Errorf("Registry.Set with an empty netid: %v", err)
	}
	if err := reg.Set(RPCB{Prog: 300001, Vers: 1, NetID: NetIDTCP}); !errors.As(err, &fe) || fe.Field != "r_addr" || !errors.Is(err, ErrEmpty) {
		t.Errorf("Registry.Set with an empty address: %v", err)
	}
}

// The Go API of the Registry: Set replaces, SetPort and Set check their arguments.
func TestRegistryAPI(t *testing.T) {
	reg := NewRegistry()
	if n := len(reg.List()); n != 6 {
		t.Fatalf("a new registry has %d registrations, want 6", n)
	}
	if err := reg.SetPort(100003, 3, 132, 2049); err == nil || !strings.Contains(err.Error(), "prot 132") {
		t.Errorf("SetPort with SCTP: %v", err)
	}
	var fe *FieldError
	if err := reg.Set(RPCB{Prog: 1, Vers: 1, NetID: strings.Repeat("n", MaxNetIDLen+1)}); !errors.As(err, &fe) || fe.Field != "r_netid" {
		t.Errorf("Set with a long netid: %v", err)
	}
	if err := reg.SetPort(100003, 3, IPProtoUDP, 2049); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetPort(100003, 3, IPProtoUDP, 2050); err != nil {
		t.Fatal(err)
	}
	if g, ok := reg.Lookup(100003, 3, NetIDUDP); !ok || g.Addr != "0.0.0.0.8.2" || g.Owner != OwnerSuperuser {
		t.Errorf("after replacing: %+v %v", g, ok)
	}
	if n := len(reg.List()); n != 7 {
		t.Errorf("%d registrations after two SetPort of one mapping, want 7", n)
	}
	l := reg.List()
	l[0].Addr = "changed"
	if reg.List()[0].Addr == "changed" {
		t.Error("List returned the registry's own storage")
	}
	if !reg.Unset(100003, 3, "") || reg.Unset(100003, 3, "") {
		t.Error("Unset does not report whether it removed something")
	}
}

// BenchmarkRegistryGetPort measures PMAPPROC_GETPORT as the handler sees it (what
// Linux mount asks twice per mount); it does not allocate.
func BenchmarkRegistryGetPort(b *testing.B) {
	reg := NewRegistry()
	reg.SetPort(100003, 3, IPProtoTCP, 2049)
	reg.SetPort(100005, 3, IPProtoTCP, 2049)
	h := reg.pmapHandler()
	args := enc(&Mapping{Prog: 100005, Vers: 3, Prot: IPProtoTCP})
	req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: ProcGetAddr}, Args: xdr.NewDecoder(nil)}
	var e xdr.Encoder
	e.Reset(make([]byte, 0, 64))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req.Args.Reset(args)
		e.Truncate(0)
		if err := h.ServeRPC(ctx, req, &e); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Equal(e.Bytes(), []byte{0, 0, 8, 1}) {
		b.Fatalf("result %x", e.Bytes())
	}
}

// BenchmarkRegistryGetAddr measures RPCBPROC_GETADDR (version 4) as the handler sees
// it; decoding the rpcb's three strings allocates them.
func BenchmarkRegistryGetAddr(b *testing.B) {
	reg := NewRegistry()
	reg.SetPort(100005, 3, IPProtoTCP, 2049)
	h := reg.rpcbHandler(Version4)
	args := enc(&RPCB{Prog: 100005, Vers: 3, NetID: NetIDTCP})
	req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: ProcGetAddr}, Args: xdr.NewDecoder(nil)}
	var e xdr.Encoder
	e.Reset(make([]byte, 0, 64))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req.Args.Reset(args)
		e.Truncate(0)
		if err := h.ServeRPC(ctx, req, &e); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRegistryMatchesRealRPCBind runs the same sequence of version 2 and version 4
// calls against Debian's rpcbind and against a Registry and requires the same
// answers, except for the differences the Registry documents, which it pins down.
// As root it also compares who owns what (RFC 1833 §2.2.1), with registrations of
// the superuser made through rpcbind's AF_LOCAL socket and through Registry.Set.
func TestRegistryMatchesRealRPCBind(t *testing.T) {
	needRPCBind(t)
	const prog = confRDMAProg
	type answer struct{ what, got string }
	// superuser makes and removes registrations as the super-user.
	type superuser struct {
		set   func(RPCB) error
		unset func(prog, vers uint32)
	}
	run := func(t *testing.T, c *Client, su *superuser) []answer {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m := Mapping{Prog: prog, Vers: 7, Prot: IPProtoTCP, Port: 20053}
		q := RPCB{Prog: prog, Vers: 8, NetID: NetIDRDMA, Addr: "192.0.2.1.78.81", Owner: "x"}
		big := Mapping{Prog: prog, Vers: 9, Prot: IPProtoTCP, Port: 70000}
		cleanup := func() {
			c.PmapUnset(context.Background(), &m)
			c.Unset(context.Background(), &q)
			c.PmapUnset(context.Background(), &big)
			c.Unset(context.Background(), &RPCB{Prog: prog, Vers: 12})
			if su != nil {
				su.unset(prog, 10)
				su.unset(prog, 11)
			}
		}
		cleanup()
		t.Cleanup(cleanup)
		var out []answer
		add := func(what string, v any, err error) { out = append(out, answer{what, fmt.Sprintf("%v %v", v, err)}) }
		ok, err := c.PmapSet(ctx, &m)
		add("v2 SET", ok, err)
		ok, err = c.PmapSet(ctx, &m)
		add("v2 SET again", ok, err)
		other := m
		other.Port++
		ok, err = c.PmapSet(ctx, &other)
		add("v2 SET of another port", ok, err)
		ok, err = c.PmapSet(ctx, &Mapping{Prog: prog, Vers: 9, Prot: 132, Port: 5})
		add("v2 SET of SCTP", ok, err)
		ok, err = c.PmapSet(ctx, &big)
		add("v2 SET of port 70000", ok, err)
		ok, err = c.PmapUnset(ctx, &big)
		add("v2 UNSET of port 70000", ok, err)
		p, err := c.PmapGetPort(ctx, &Mapping{Prog: prog, Vers: 7, Prot: IPProtoTCP})
		add("v2 GETPORT tcp", p, err)
		p, err = c.PmapGetPort(ctx, &Mapping{Prog: prog, Vers: 7, Prot: IPProtoUDP})
		add("v2 GETPORT udp", p, err)
		p, err = c.PmapGetPort(ctx, &Mapping{Prog: prog, Vers: 6, Prot: IPProtoTCP})
		add("v2 GETPORT of another version", p, err)
		l, err := c.PmapDump(ctx)
		add("v2 DUMP has it", slices.Contains(l, m), err)
		rl, err := c.Dump(ctx)
		e, _ := findInDump(rl, prog, 7, NetIDTCP)
		add("v4 DUMP r_addr", e.Addr, err)
		add("v4 DUMP r_owner of the v2 SET", e.Owner, err)
		ua, err := c.GetAddr(ctx, &RPCB{Prog: prog, Vers: 7, NetID: NetIDTCP})
		add("v4 GETADDR tcp", ua, err)
		ok, err = c.Set(ctx, &RPCB{Prog: prog, Vers: 7, NetID: NetIDTCP, Addr: "127.0.0.1.78.86", Owner: "x"})
		add("v4 SET over the v2 mapping", ok, err)
		ok, err = c.Set(ctx, &q)
		add("v4 SET rdma", ok, err)
		ok, err = c.Set(ctx, &q)
		add("v4 SET rdma again", ok, err)
		rl, err = c.Dump(ctx)
		e, _ = findInDump(rl, prog, 8, NetIDRDMA)
		add("v4 DUMP rdma r_addr", e.Addr, err)
		add("v4 DUMP rdma r_owner", e.Owner, err)
		ok, err = c.PmapUnset(ctx, &m)
		add("v2 UNSET", ok, err)
		p, err = c.PmapGetPort(ctx, &m)
		add("v2 GETPORT after UNSET", p, err)
		ok, err = c.Unset(ctx, &q)
		add("v4 UNSET rdma", ok, err)
		ua, err = c.GetAddr(ctx, &RPCB{Prog: prog, Vers: 8, NetID: NetIDRDMA})
		add("v4 GETADDR rdma after UNSET", ua, err)
		ok, err = c.Unset(ctx, &RPCB{Prog: Program, Vers: Version4, Owner: OwnerSuperuser})
		add("v4 UNSET of rpcbind itself", ok, err)
		ok, err = c.Set(ctx, &RPCB{Prog: prog, Vers: 12, NetID: NetIDTCP, Owner: "x"})
		add("v4 SET with an empty r_addr", ok, err)
		ok, err = c.Set(ctx, &RPCB{Prog: prog, Vers: 12, Owner: "x"})
		add("v4 SET with an empty r_netid and r_addr", ok, err)
		if su == nil {
			return out
		}
		// Versions 10 and 11: a registration of the caller's, claiming the
		// superuser, then one of the superuser's under another netid.
		for _, vers := range []uint32{10, 11} {
			mine := RPCB{Prog: prog, Vers: vers, NetID: NetIDUDP, Addr: "127.0.0.1.78.88", Owner: OwnerSuperuser}
			ok, err = c.Set(ctx, &mine)
			add(fmt.Sprintf("v4 SET %d claiming the superuser", vers), ok, err)
			if err := su.set(RPCB{Prog: prog, Vers: vers, NetID: NetIDTCP, Addr: "127.0.0.1.78.87", Owner: OwnerSuperuser}); err != nil {
				t.Fatal(err)
			}
		}
		rl, err = c.Dump(ctx)
		e, _ = findInDump(rl, prog, 10, NetIDUDP)
		add("v4 DUMP r_owner of a SET claiming the superuser", e.Owner, err)
		e, _ = findInDump(rl, prog, 10, NetIDTCP)
		add("v4 DUMP r_owner of the superuser's", e.Owner, err)
		ok, err = c.Unset(ctx, &RPCB{Prog: prog, Vers: 10, NetID: NetIDTCP, Owner: OwnerSuperuser})
		add("v4 UNSET of the superuser's", ok, err)
		ok, err = c.Unset(ctx, &RPCB{Prog: prog, Vers: 10})
		add("v4 UNSET of every netid, the caller's then the superuser's", ok, err)
		ok, err = c.PmapUnset(ctx, &Mapping{Prog: prog, Vers: 11})
		add("v2 UNSET of the caller's and the superuser's", ok, err)
		rl, err = c.Dump(ctx)
		for _, vers := range []uint32{10, 11} {
			_, found := findInDump(rl, prog, vers, NetIDTCP)
			add(fmt.Sprintf("v4 DUMP has the superuser's %d", vers), found, err)
			_, found = findInDump(rl, prog, vers, NetIDUDP)
			add(fmt.Sprintf("v4 DUMP has the caller's %d", vers), found, err)
		}
		ok, err = c.Unset(ctx, &RPCB{Prog: prog, Vers: 11, NetID: NetIDUDP})
		add("v4 UNSET of the caller's alone", ok, err) // Linux: TRUE though it has nothing left
		return out
	}
	// Documented differences: {Linux rpcbind, Registry}.
	differ := map[string][2]string{
		"v2 SET again":                  {"true <nil>", "false <nil>"},                    // Linux accepts an identical SET
		"v4 SET rdma again":             {"true <nil>", "false <nil>"},                    // likewise
		"v2 SET of port 70000":          {"true <nil>", "false <nil>"},                    // Linux keeps the low 16 bits
		"v2 UNSET of port 70000":        {"true <nil>", "false <nil>"},                    // so the Registry has nothing to remove
		"v2 GETPORT of another version": {"20053 <nil>", "0 <nil>"},                       // Linux answers any version of the program
		"v4 GETADDR tcp":                {"127.0.0.1.78.85 <nil>", "0.0.0.0.78.85 <nil>"}, // Linux fills in a wildcard host
		// RFC 1833 §2.2.1: "neither r_netid nor r_addr can be NULL"; Linux takes them.
		"v4 SET with an empty r_addr":             {"true <nil>", "false <nil>"},
		"v4 SET with an empty r_netid and r_addr": {"true <nil>", "false <nil>"},
		// A refused UNSET removes nothing in the Registry; Linux removes the caller's
		// registrations it meets before the first it may not remove. (Version 2
		// UNSET unsets "tcp" and "udp" one after the other in both, so the
		// caller's 11 goes in both.)
		"v4 DUMP has the caller's 10": {"false <nil>", "true <nil>"},
		// UNSET of nothing: Linux answers TRUE, the Registry FALSE.
		"v4 UNSET of the caller's alone": {"true <nil>", "false <nil>"},
	}
	var realSU, ourSU *superuser
	reg := NewRegistry()
	if os.Geteuid() == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		local, err := DialLocalClient(ctx, "", nil)
		if err != nil {
			t.Fatalf("rpcbind's local socket: %v", err)
		}
		defer local.Close()
		realSU = &superuser{
			set: func(m RPCB) error {
				if ok, err := local.Set(context.Background(), &m); err != nil || !ok {
					return fmt.Errorf("SET through the local socket: %v %w", ok, err)
				}
				return nil
			},
			unset: func(prog, vers uint32) { local.Unset(context.Background(), &RPCB{Prog: prog, Vers: vers}) },
		}
		ourSU = &superuser{set: reg.Set, unset: func(prog, vers uint32) { reg.Unset(prog, vers, "") }}
	} else {
		t.Log("not root: owners are not compared")
	}
	real := run(t, dialTest(t, Version4), realSU)
	ours := run(t, newTestClient(t, serveRegistry(t, reg), Version4), ourSU)
	if len(real) != len(ours) {
		t.Fatalf("%d answers from rpcbind, %d from the Registry", len(real), len(ours))
	}
	for i := range real {
		want := [2]string{real[i].got, real[i].got}
		if d, ok := differ[real[i].what]; ok {
			want = d
		}
		if real[i].got != want[0] || ours[i].got != want[1] {
			t.Errorf("%s: rpcbind %q, Registry %q; want %q, %q", real[i].what, real[i].got, ours[i].got, want[0], want[1])
		}
	}
}

// TestRegistryTableBounded: a loopback caller cannot grow the table without bound. Each
// SET past MaxRegistrations is refused, and the table stays small enough that this
// package's Client can still DUMP it (MaxDumpEntries entries, and a reply within
// oncrpc.DefaultMaxRecord even with every string at its limit), so that Lookup and
// RegisterAll keep working for the daemons that share the registry.
func TestRegistryTableBounded(t *testing.T) {
	reg := NewRegistry()
	h := reg.rpcbHandler(Version4)
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 700}
	long := strings.Repeat("a", MaxAddrLen)
	const tries = MaxDumpEntries + 1
	accepted := 0
	for i := 0; i < tries; i++ {
		q := RPCB{Prog: 0x40000000 + uint32(i), Vers: 1, NetID: NetIDLocal, Addr: long, Owner: "x"}
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: ProcSet}, Args: xdr.NewDecoder(enc(&q)), RemoteAddr: local}
		var e xdr.Encoder
		if err := h.ServeRPC(context.Background(), req, &e); err != nil {
			t.Fatal(err)
		}
		var r boolResult
		if err := r.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil {
			t.Fatal(err)
		}
		if r {
			accepted++
		}
	}
	if n := len(reg.List()); n > MaxRegistrations {
		t.Errorf("%d of %d SETs from loopback accepted: the table holds %d registrations, more than MaxRegistrations (%d)", accepted, tries, n, MaxRegistrations)
	}
	if err := reg.Set(RPCB{Prog: 0x3fffffff, Vers: 1, NetID: NetIDLocal, Addr: "/x"}); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("Registry.Set into a full table: %v, want ErrTooManyEntries", err)
	}
	if err := reg.Set(RPCB{Prog: Program, Vers: Version4, NetID: NetIDTCP, Addr: "0.0.0.0.0.111", Owner: OwnerSuperuser}); err != nil {
		t.Errorf("Registry.Set replacing a registration of a full table: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestClient(t, serveRegistry(t, reg), Version4)
	if l, err := c.Dump(ctx); err != nil {
		t.Errorf("DUMP of the full table: %v", err)
	} else if len(l) != len(reg.List()) {
		t.Errorf("DUMP of the full table: %d entries, want %d", len(l), len(reg.List()))
	}
}

// TestRegistryGetAddrEmptyNetID: GETADDR and GETVERSADDR with an empty r_netid look
// the service up under the netid of the transport the call came on (RFC 1833 §2.2.1:
// "the r_netid is inferred from the network identifier of the transport on which the
// request came in"), here "tcp", rather than under the netid "".
func TestRegistryGetAddrEmptyNetID(t *testing.T) {
	reg := NewRegistry()
	if err := reg.Set(RPCB{Prog: 300100, Vers: 2, NetID: NetIDTCP, Addr: "127.0.0.1.8.1", Owner: OwnerSuperuser}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Set(RPCB{Prog: 300100, Vers: 2, NetID: NetIDRDMA, Addr: "127.0.0.1.78.81", Owner: OwnerSuperuser}); err != nil {
		t.Fatal(err)
	}
	tr := serveRegistry(t, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		vers, proc, prog, want uint32
		addr                   string
	}{
		{Version3, ProcGetAddr, 300100, 2, "127.0.0.1.8.1"},
		{Version3, ProcGetAddr, 300100, 3, "127.0.0.1.8.1"}, // another version: GETADDR answers any
		{Version4, ProcGetAddr, 300100, 2, "127.0.0.1.8.1"},
		{Version4, ProcGetVersAddr, 300100, 2, "127.0.0.1.8.1"},
		{Version4, ProcGetVersAddr, 300100, 3, ""},
		{Version4, ProcGetAddr, 300101, 2, ""},
	} {
		var r stringResult
		q := RPCB{Prog: c.prog, Vers: c.want}
		if err := oncrpc.NewClient(tr, Program, c.vers).Call(ctx, c.proc, &q, &r); err != nil {
			t.Fatalf("v%d proc %d of %d/%d: %v", c.vers, c.proc, c.prog, c.want, err)
		}
		if string(r) != c.addr {
			t.Errorf("v%d proc %d of %d/%d with r_netid \"\" over tcp: %q, want %q", c.vers, c.proc, c.prog, c.want, r, c.addr)
		}
	}
}

// TestRegistryPmapUnsetOnlyTCPAndUDP: version 2 UNSET removes the program version's
// "tcp" and "udp" mappings, the only ones portmap knows (RFC 1833 §3.2; Linux rpcbind
// unsets those two netids), and leaves its "rdma", "tcp6" and other registrations,
// even when one of those belongs to another owner.
func TestRegistryPmapUnsetOnlyTCPAndUDP(t *testing.T) {
	reg := NewRegistry()
	if err := reg.Set(RPCB{Prog: 300200, Vers: 1, NetID: NetIDRDMA, Addr: "192.0.2.1.78.81", Owner: OwnerSuperuser}); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, serveRegistry(t, reg), Version4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := c.Set(ctx, &RPCB{Prog: 300200, Vers: 1, NetID: NetIDTCP6, Addr: "::1.8.1"}); err != nil || !ok {
		t.Fatalf("v4 SET tcp6: %v %v", ok, err)
	}
	for _, prot := range []uint32{IPProtoTCP, IPProtoUDP} {
		if ok, err := c.PmapSet(ctx, &Mapping{Prog: 300200, Vers: 1, Prot: prot, Port: 2049}); err != nil || !ok {
			t.Fatalf("v2 SET prot %d: %v %v", prot, ok, err)
		}
	}
	if ok, err := c.PmapUnset(ctx, &Mapping{Prog: 300200, Vers: 1}); err != nil || !ok {
		t.Errorf("v2 UNSET: %v %v, want TRUE", ok, err)
	}
	for _, c := range []struct {
		netid string
		want  bool
	}{{NetIDTCP, false}, {NetIDUDP, false}, {NetIDRDMA, true}, {NetIDTCP6, true}} {
		if _, ok := reg.Lookup(300200, 1, c.netid); ok != c.want {
			t.Errorf("after v2 UNSET, registered under %q: %v, want %v", c.netid, ok, c.want)
		}
	}
	// With no registration of another owner in the way, "tcp6" (the caller's own)
	// stays too.
	reg.Unset(300200, 1, NetIDRDMA)
	reg.Unset(300200, 1, NetIDTCP)
	reg.Unset(300200, 1, NetIDUDP)
	if ok, err := c.PmapSet(ctx, &Mapping{Prog: 300200, Vers: 1, Prot: IPProtoTCP, Port: 2049}); err != nil || !ok {
		t.Fatalf("v2 SET again: %v %v", ok, err)
	}
	if ok, err := c.PmapUnset(ctx, &Mapping{Prog: 300200, Vers: 1}); err != nil || !ok {
		t.Errorf("v2 UNSET again: %v %v, want TRUE", ok, err)
	}
	if _, ok := reg.Lookup(300200, 1, NetIDTCP6); !ok {
		t.Error("v2 UNSET removed the caller's \"tcp6\" registration")
	}
}
