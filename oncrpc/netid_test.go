package oncrpc

import (
	"context"
	"net"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// rdmaStyleAddr stands for a transport's own address type, such as rpcrdma.Addr.
type rdmaStyleAddr struct{ net.Addr }

func (rdmaStyleAddr) Network() string { return "rdma6" }

func TestNetid(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 2049}, "tcp"},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1").To4(), Port: 2049}, "tcp"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 2049}, "tcp"}, // IPv4-mapped
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 2049}, "tcp6"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 2049, Zone: "lo"}, "tcp6"},
		{&net.TCPAddr{Port: 2049}, "tcp"}, // no IP: unknown family, the transport's name
		{&net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 111}, "udp"},
		{&net.UDPAddr{IP: net.ParseIP("2001:db8::1"), Port: 111}, "udp6"},
		{rdmaStyleAddr{}, "rdma6"},
		{&net.UnixAddr{Name: "/run/rpcbind.sock", Net: "unix"}, "unix"},
	} {
		if got := Netid(c.addr); got != c.want {
			t.Errorf("Netid(%T %v) = %q, want %q", c.addr, c.addr, got, c.want)
		}
	}
}

// A handler sees the caller's netid: "tcp6" for a call over TCP on IPv6, as rpcbind
// names it, and "tcp" over IPv4.
func TestRequestNetidOverIPv6(t *testing.T) {
	got := make(chan string, 1)
	h := Procs{procNull: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		got <- req.Netid
		return nil
	}}
	for _, c := range []struct{ listen, want string }{{"127.0.0.1:0", "tcp"}, {"[::1]:0", "tcp6"}} {
		l, err := ListenTCP(c.listen, nil)
		if err != nil {
			if c.want == "tcp6" {
				t.Skipf("no IPv6 loopback here: %v", err)
			}
			t.Fatal(err)
		}
		s := NewServer(nil)
		s.Register(testProg, testVers, h)
		go s.Serve(l)
		cl := NewClient(dialTCP(t, l.Addr().String(), nil), testProg, testVers)
		if err := cl.Call(context.Background(), procNull, nil, nil); err != nil {
			t.Fatal(err)
		}
		if n := <-got; n != c.want {
			t.Errorf("over %s: Request.Netid %q, want %q", c.listen, n, c.want)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
