package rpcbind

import (
	"errors"
	"fmt"
	"net/netip"
)

// Netids (RFC 5665 §5.1 and the "rdma" netid of RFC 8166 §12 / seed draft §12;
// "rdma6" is the IPv6 form Linux uses, RPCBIND_NETID_RDMA6). A netid names the
// transport and the address family; the address registered under it is a universal
// address of that family.
const (
	NetIDTCP   = "tcp"   // TCP over IPv4
	NetIDTCP6  = "tcp6"  // TCP over IPv6
	NetIDUDP   = "udp"   // UDP over IPv4
	NetIDUDP6  = "udp6"  // UDP over IPv6
	NetIDRDMA  = "rdma"  // RPC-over-RDMA, IPv4 port addressing
	NetIDRDMA6 = "rdma6" // RPC-over-RDMA, IPv6 port addressing
	NetIDLocal = "local" // AF_LOCAL stream socket; the address is a path
)

// ErrUnknownNetID means a netid is not one of the IP netids this package knows.
var ErrUnknownNetID = errors.New("unknown netid")

// ErrFamily means an address's family does not match the netid it is used with.
var ErrFamily = errors.New("address family does not match netid")

// netIDFamily reports whether netid is an IPv6 (true) or IPv4 (false) netid.
func netIDFamily(netid string) (v6 bool, err error) {
	switch netid {
	case NetIDTCP, NetIDUDP, NetIDRDMA:
		return false, nil
	case NetIDTCP6, NetIDUDP6, NetIDRDMA6:
		return true, nil
	}
	return false, fmt.Errorf("rpcbind: netid %q: %w (want tcp, tcp6, udp, udp6, rdma or rdma6)", netid, ErrUnknownNetID)
}

// NetIDFor returns the netid of transport ("tcp", "udp" or "rdma") over addr's family:
// the name itself for IPv4, with "6" appended for IPv6 (IPv4-mapped IPv6 included).
func NetIDFor(transport string, addr netip.Addr) (string, error) {
	switch transport {
	case NetIDTCP, NetIDUDP, NetIDRDMA:
	default:
		return "", fmt.Errorf("rpcbind: transport %q: %w (want tcp, udp or rdma)", transport, ErrUnknownNetID)
	}
	if !addr.IsValid() {
		return "", fmt.Errorf("rpcbind: transport %q: invalid IP address", transport)
	}
	if addr.Is4() {
		return transport, nil
	}
	return transport + "6", nil
}

// CheckAddr reports whether ap is a valid address for netid: a known IP netid and an
// address of its family (IPv4 for tcp, udp and rdma; IPv6 for tcp6, udp6 and rdma6).
func CheckAddr(netid string, ap netip.AddrPort) error {
	v6, err := netIDFamily(netid)
	if err != nil {
		return err
	}
	if !ap.Addr().IsValid() {
		return fmt.Errorf("rpcbind: r_addr for netid %q: invalid IP address", netid)
	}
	if ap.Addr().Is4() == v6 {
		fam := "IPv4"
		if !ap.Addr().Is4() {
			fam = "IPv6"
		}
		return fmt.Errorf("rpcbind: r_addr %s for netid %q: %s address: %w", ap, netid, fam, ErrFamily)
	}
	return nil
}
