package oncrpc

import "net"

// Netid returns the netid (RFC 5665) of a transport address: "tcp6" and "udp6" for
// TCP and UDP over IPv6, as rpcbind names them, and addr.Network() otherwise ("tcp",
// "udp", or what the transport's own address type says, such as "rdma" and "rdma6"
// from an RPC-over-RDMA endpoint). An IPv4-mapped IPv6 address is IPv4.
func Netid(addr net.Addr) string {
	switch a := addr.(type) {
	case *net.TCPAddr:
		if isIPv6(a.IP) {
			return "tcp6"
		}
		return "tcp"
	case *net.UDPAddr:
		if isIPv6(a.IP) {
			return "udp6"
		}
		return "udp"
	}
	return addr.Network()
}

// isIPv6 reports whether ip is an IPv6 address other than an IPv4-mapped one.
func isIPv6(ip net.IP) bool { return ip != nil && ip.To4() == nil }
