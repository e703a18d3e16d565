package rpcrdma

import (
	"net"
	"net/netip"
	"testing"
)

// Addr reports the netid of its address family and, for servers matching callers,
// the IP address and port without formatting them.
func TestAddr(t *testing.T) {
	for _, tc := range []struct {
		a     net.Addr
		netid string
		ap    netip.AddrPort
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 700}, "rdma", netip.MustParseAddrPort("127.0.0.2:700")},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 20049}, "rdma6", netip.MustParseAddrPort("[2001:db8::1]:20049")},
		{&net.UnixAddr{Name: "x", Net: "unix"}, "rdma", netip.AddrPort{}},
	} {
		a := Addr{tc.a}
		if a.Network() != tc.netid || a.AddrPort().Addr().Unmap() != tc.ap.Addr() || a.AddrPort().Port() != tc.ap.Port() {
			t.Errorf("%v: %s %v, want %s %v", tc.a, a.Network(), a.AddrPort(), tc.netid, tc.ap)
		}
	}
}
