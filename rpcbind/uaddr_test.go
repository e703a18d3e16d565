package rpcbind

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
)

func TestParseUniversalAddr(t *testing.T) {
	tests := []struct {
		in   string
		want string // netip.AddrPort text
	}{
		{"127.0.0.1.0.111", "127.0.0.1:111"},
		{"192.0.2.7.78.81", "192.0.2.7:20049"}, // 78*256+81 = 20049
		{"0.0.0.0.0.0", "0.0.0.0:0"},
		{"255.255.255.255.255.255", "255.255.255.255:65535"},
		{"::1.0.111", "[::1]:111"},
		{"::.78.81", "[::]:20049"},
		{"2001:db8:0:0:0:0:0:1.8.1", "[2001:db8::1]:2049"}, // 8*256+1 = 2049
		{"fe80::a:b:c:d.1.0", "[fe80::a:b:c:d]:256"},
		{"::ffff:10.1.2.3.0.1", "[::ffff:10.1.2.3]:1"},
		{"2001:DB8::1.0.2", "[2001:db8::1]:2"},
	}
	for _, tc := range tests {
		got, err := ParseUniversalAddr(tc.in)
		if err != nil {
			t.Errorf("ParseUniversalAddr(%q): %v", tc.in, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("ParseUniversalAddr(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseUniversalAddrErrors(t *testing.T) {
	tests := []struct {
		in, part string
	}{
		{"", "format"},
		{"127.0.0.1", "host"}, // splits into host "127.0", p1 "0", p2 "1"
		{"111", "format"},
		{"1.111", "format"},
		{"127.0.0.1.0.256", "p2"},
		{"127.0.0.1.256.0", "p1"},
		{"127.0.0.1.0.", "p2"},
		{"127.0.0.1..1", "p1"},
		{"127.0.0.1.00.1", "p1"},
		{"127.0.0.1.0.01", "p2"},
		{"127.0.0.1.+1.1", "p1"},
		{"127.0.0.1.1.-1", "p2"},
		{"127.0.0.1.1.1000", "p2"},
		{".0.111", "host"},
		{"localhost.0.111", "host"},
		{"127.0.0.01.0.111", "host"},
		{"127.0.0.256.0.111", "host"},
		{"1.2.3.0.111", "host"},
		{"fe80::1%eth0.0.111", "host"},
		{"2001:db8::g.0.1", "host"},
		{"[::1].0.111", "host"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255.255.255x", "format"},
	}
	for _, tc := range tests {
		_, err := ParseUniversalAddr(tc.in)
		var ue *UniversalAddrError
		if !errors.As(err, &ue) {
			t.Errorf("ParseUniversalAddr(%q) error = %v, want *UniversalAddrError", tc.in, err)
			continue
		}
		if !errors.Is(err, ErrBadUniversalAddr) {
			t.Errorf("ParseUniversalAddr(%q): error does not wrap ErrBadUniversalAddr", tc.in)
		}
		if ue.Part != tc.part {
			t.Errorf("ParseUniversalAddr(%q): part %q, want %q (%v)", tc.in, ue.Part, tc.part, err)
		}
	}
}

func TestFormatUniversalAddr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"127.0.0.1:111", "127.0.0.1.0.111"},
		{"192.0.2.7:20049", "192.0.2.7.78.81"},
		{"[::1]:2049", "::1.8.1"},
		{"[2001:db8:0:0:1:0:0:1]:65535", "2001:db8::1:0:0:1.255.255"},
		{"[::ffff:10.1.2.3]:1", "::ffff:10.1.2.3.0.1"},
		{"[fe80::1%eth0]:256", "fe80::1.1.0"}, // the zone is not part of a universal address
	}
	for _, tc := range tests {
		ap := netip.MustParseAddrPort(tc.in)
		if got := FormatUniversalAddr(ap); got != tc.want {
			t.Errorf("FormatUniversalAddr(%v) = %q, want %q", ap, got, tc.want)
		}
	}
}

// TestUniversalAddrRoundTrip formats random IPv4 and IPv6 addresses and ports and
// parses them back.
func TestUniversalAddrRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		var ip netip.Addr
		switch i % 3 {
		case 0:
			var b [4]byte
			for j := range b {
				b[j] = byte(r.UintN(256))
			}
			ip = netip.AddrFrom4(b)
		case 1:
			var b [16]byte
			for j := range b {
				if r.UintN(3) != 0 { // zero runs exercise "::"
					b[j] = byte(r.UintN(256))
				}
			}
			ip = netip.AddrFrom16(b)
		case 2:
			var b [4]byte
			for j := range b {
				b[j] = byte(r.UintN(256))
			}
			ip = netip.AddrFrom16(netip.AddrFrom4(b).As16()) // IPv4-mapped
		}
		ap := netip.AddrPortFrom(ip, uint16(r.UintN(65536)))
		s := FormatUniversalAddr(ap)
		got, err := ParseUniversalAddr(s)
		if err != nil {
			t.Fatalf("ParseUniversalAddr(FormatUniversalAddr(%v) = %q): %v", ap, s, err)
		}
		if got != ap {
			t.Fatalf("round trip of %v through %q gave %v", ap, s, got)
		}
	}
}

func TestAppendUniversalAddrAllocs(t *testing.T) {
	ap := netip.MustParseAddrPort("[2001:db8::1]:20049")
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendUniversalAddr(buf[:0], ap) }); n != 0 {
		t.Errorf("AppendUniversalAddr: %v allocs, want 0", n)
	}
}

func BenchmarkUniversalAddr(b *testing.B) {
	ap := netip.MustParseAddrPort("[2001:db8::1]:20049")
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64)
		for b.Loop() {
			buf = AppendUniversalAddr(buf[:0], ap)
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		s := FormatUniversalAddr(ap)
		for b.Loop() {
			if _, err := ParseUniversalAddr(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestNetIDFor(t *testing.T) {
	tests := []struct {
		transport, addr, want string
	}{
		{"rdma", "192.0.2.1", "rdma"},
		{"rdma", "2001:db8::1", "rdma6"},
		{"rdma", "::ffff:192.0.2.1", "rdma6"},
		{"tcp", "127.0.0.1", "tcp"},
		{"udp", "::1", "udp6"},
	}
	for _, tc := range tests {
		got, err := NetIDFor(tc.transport, netip.MustParseAddr(tc.addr))
		if err != nil || got != tc.want {
			t.Errorf("NetIDFor(%q, %s) = %q, %v; want %q", tc.transport, tc.addr, got, err, tc.want)
		}
	}
	if _, err := NetIDFor("sctp", netip.MustParseAddr("::1")); !errors.Is(err, ErrUnknownNetID) {
		t.Errorf("NetIDFor(sctp): %v, want ErrUnknownNetID", err)
	}
	if _, err := NetIDFor("rdma", netip.Addr{}); err == nil {
		t.Error("NetIDFor(rdma, invalid address) succeeded")
	}
}

func TestCheckAddr(t *testing.T) {
	v4 := netip.MustParseAddrPort("192.0.2.1:20049")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:20049")
	for _, netid := range []string{NetIDTCP, NetIDUDP, NetIDRDMA} {
		if err := CheckAddr(netid, v4); err != nil {
			t.Errorf("CheckAddr(%q, %v): %v", netid, v4, err)
		}
		if err := CheckAddr(netid, v6); !errors.Is(err, ErrFamily) {
			t.Errorf("CheckAddr(%q, %v): %v, want ErrFamily", netid, v6, err)
		}
	}
	for _, netid := range []string{NetIDTCP6, NetIDUDP6, NetIDRDMA6} {
		if err := CheckAddr(netid, v6); err != nil {
			t.Errorf("CheckAddr(%q, %v): %v", netid, v6, err)
		}
		if err := CheckAddr(netid, v4); !errors.Is(err, ErrFamily) {
			t.Errorf("CheckAddr(%q, %v): %v, want ErrFamily", netid, v4, err)
		}
	}
	if err := CheckAddr("ib", v4); !errors.Is(err, ErrUnknownNetID) {
		t.Errorf("CheckAddr(ib): %v, want ErrUnknownNetID", err)
	}
	if err := CheckAddr(NetIDRDMA, netip.AddrPort{}); err == nil {
		t.Error("CheckAddr(rdma, zero AddrPort) succeeded")
	}
}
