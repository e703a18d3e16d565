package rpcbind

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Universal addresses (RFC 5665 §5.2.3):
//
//	IPv4 (netids tcp, udp, rdma):    h1.h2.h3.h4.p1.p2
//	IPv6 (netids tcp6, udp6, rdma6): x1:x2:x3:x4:x5:x6:x7:x8.p1.p2
//
// h1..h4 are the decimal octets of the IPv4 address; the IPv6 part is any text form of
// RFC 4291 §2.2 (so "::" compression and an embedded dotted quad are allowed); p1 and p2
// are the decimal high and low octets of the port: port = p1*256 + p2. This package
// writes the canonical forms (dotted quad; RFC 5952 for IPv6) and reads any form the
// RFCs allow, but rejects what they do not: signs, leading zeros in an octet, values
// above 255, IPv6 zone identifiers, and missing or extra parts.

// ErrBadUniversalAddr is the cause carried by every *UniversalAddrError.
var ErrBadUniversalAddr = errors.New("malformed universal address")

// A UniversalAddrError reports a universal address that does not parse, naming the
// part at fault: "host", "p1", "p2" or "format".
type UniversalAddrError struct {
	Addr   string // the input, truncated to 64 bytes
	Part   string // "host", "p1", "p2" or "format"
	Reason string
}

func (e *UniversalAddrError) Error() string {
	return fmt.Sprintf("rpcbind: universal address %q: %s: %s", e.Addr, e.Part, e.Reason)
}

// Unwrap returns ErrBadUniversalAddr.
func (e *UniversalAddrError) Unwrap() error { return ErrBadUniversalAddr }

// maxUniversalAddrLen bounds the input of ParseUniversalAddr: the longest IPv6 text
// form ("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", 45 bytes) plus ".255.255".
const maxUniversalAddrLen = 45 + 8

func uaddrErr(s, part, reason string) error {
	if len(s) > 64 {
		s = s[:64]
	}
	return &UniversalAddrError{Addr: s, Part: part, Reason: reason}
}

// ParseUniversalAddr parses an IPv4 or IPv6 universal address (RFC 5665 §5.2.3.3,
// §5.2.3.4) into an IP address and port. Errors are *UniversalAddrError.
func ParseUniversalAddr(s string) (netip.AddrPort, error) {
	if len(s) > maxUniversalAddrLen {
		return netip.AddrPort{}, uaddrErr(s, "format", fmt.Sprintf("%d bytes, longer than any IP universal address (%d)", len(s), maxUniversalAddrLen))
	}
	i2 := strings.LastIndexByte(s, '.')
	if i2 < 0 {
		return netip.AddrPort{}, uaddrErr(s, "format", "no \".p1.p2\" port suffix")
	}
	i1 := strings.LastIndexByte(s[:i2], '.')
	if i1 < 0 {
		return netip.AddrPort{}, uaddrErr(s, "format", "no \".p1.p2\" port suffix")
	}
	host, p1s, p2s := s[:i1], s[i1+1:i2], s[i2+1:]
	p1, err := parseOctet(p1s)
	if err != nil {
		return netip.AddrPort{}, uaddrErr(s, "p1", err.Error())
	}
	p2, err := parseOctet(p2s)
	if err != nil {
		return netip.AddrPort{}, uaddrErr(s, "p2", err.Error())
	}
	if host == "" {
		return netip.AddrPort{}, uaddrErr(s, "host", "empty")
	}
	if strings.IndexByte(host, '%') >= 0 {
		return netip.AddrPort{}, uaddrErr(s, "host", "IPv6 zone identifiers are not part of a universal address")
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, uaddrErr(s, "host", strings.TrimPrefix(err.Error(), "ParseAddr"))
	}
	return netip.AddrPortFrom(ip, uint16(p1)<<8|uint16(p2)), nil
}

// parseOctet parses a decimal number 0..255 with no sign and no leading zero.
func parseOctet(s string) (int, error) {
	switch {
	case s == "":
		return 0, errors.New("empty")
	case len(s) > 3:
		return 0, fmt.Errorf("%q is longer than 3 digits", s)
	case len(s) > 1 && s[0] == '0':
		return 0, fmt.Errorf("%q has a leading zero", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal number", s)
		}
		n = n*10 + int(c-'0')
	}
	if n > 255 {
		return 0, fmt.Errorf("%d is greater than 255", n)
	}
	return n, nil
}

// FormatUniversalAddr returns the universal address of ap: the canonical text of its
// IP address (without zone) followed by ".p1.p2".
func FormatUniversalAddr(ap netip.AddrPort) string {
	var buf [maxUniversalAddrLen]byte
	return string(AppendUniversalAddr(buf[:0], ap))
}

// AppendUniversalAddr appends the universal address of ap to b (see
// FormatUniversalAddr). It does not allocate when b has room.
func AppendUniversalAddr(b []byte, ap netip.AddrPort) []byte {
	b = ap.Addr().WithZone("").AppendTo(b)
	p := ap.Port()
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(p>>8), 10)
	b = append(b, '.')
	return strconv.AppendUint(b, uint64(p&0xff), 10)
}
