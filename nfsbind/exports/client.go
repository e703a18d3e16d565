package exports

import (
	"context"
	"net/netip"
	"path"
	"strings"
)

// Kind is the kind of a client specification, in exports(5) precedence order.
type Kind uint8

// Client kinds, from the most specific to the least.
const (
	// Host is one host, by name or by address.
	Host Kind = iota
	// Network is an address prefix (CIDR or address/mask).
	Network
	// Wildcard is a host name pattern with "*" or "?".
	Wildcard
	// Anyone is "*": every host.
	Anyone
	numKinds
)

// Client is one client entry of an export line.
type Client struct {
	// Spec is the client as written: "*", "10.0.0.0/8", "h.example.com", ...
	Spec string
	// Kind is what Spec names.
	Kind Kind
	// Options are what the entry grants: the line's defaults, then its own options.
	Options Options

	prefix netip.Prefix // Host by address (a full-length prefix) and Network
	name   string       // Host by name and Wildcard, lower case
}

// classify fills c.Kind and the matching fields from c.Spec; it returns a message
// for people when Spec is not a client.
func (c *Client) classify() string {
	s := c.Spec
	switch {
	case s == "*":
		c.Kind = Anyone
	case strings.HasPrefix(s, "@"):
		return "netgroups (" + s + ") are not supported"
	case strings.Contains(s, "/"):
		p, msg := parseNetwork(s)
		if msg != "" {
			return msg
		}
		c.Kind, c.prefix = Network, p
	default:
		if a, err := netip.ParseAddr(s); err == nil {
			if a.Zone() != "" {
				return "client address " + s + " has a zone"
			}
			a = a.Unmap()
			c.Kind, c.prefix = Host, netip.PrefixFrom(a, a.BitLen())
			return ""
		}
		if !validHostPattern(s) {
			return "client " + s + " is not a host name, address, network or wildcard"
		}
		c.name = strings.ToLower(strings.TrimSuffix(s, "."))
		c.Kind = Host
		if strings.ContainsAny(s, "*?") {
			c.Kind = Wildcard
		}
	}
	return ""
}

// parseNetwork parses addr/bits or an IPv4 addr/dotted-mask.
func parseNetwork(s string) (netip.Prefix, string) {
	if p, err := netip.ParsePrefix(s); err == nil {
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, "network " + s + " has a zone"
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), ""
	}
	a, m, _ := strings.Cut(s, "/")
	addr, err1 := netip.ParseAddr(a)
	mask, err2 := netip.ParseAddr(m)
	if err1 != nil || err2 != nil || !addr.Is4() || !mask.Is4() {
		return netip.Prefix{}, "network " + s + " is neither address/bits nor IPv4 address/mask"
	}
	mb := mask.As4()
	v := uint32(mb[0])<<24 | uint32(mb[1])<<16 | uint32(mb[2])<<8 | uint32(mb[3])
	bits := 0
	for v&0x80000000 != 0 {
		bits++
		v <<= 1
	}
	if v != 0 {
		return netip.Prefix{}, "network " + s + ": mask " + m + " is not contiguous"
	}
	return netip.PrefixFrom(addr, bits).Masked(), ""
}

// validHostPattern reports whether s is made of host-name characters, "*" and "?".
func validHostPattern(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '*' || c == '?'
		if !ok {
			return false
		}
	}
	return true
}

// matchAddr reports whether c matches ip by address alone. A network matches by the
// address bits alone, whatever ip's zone (a link-local caller's interface), as
// knfsd's mountd compares masked addresses; a host address never matches a zoned ip,
// since the entry cannot have a zone (mountd refuses a link-local host whose scope
// differs).
func (c *Client) matchAddr(ip netip.Addr) bool {
	switch c.Kind {
	case Anyone:
		return true
	case Host:
		return c.name == "" && c.prefix.Contains(ip)
	case Network:
		// netip.Prefix.Contains is false for every zoned address.
		return c.prefix.Contains(ip.WithZone(""))
	}
	return false
}

// matchName reports whether c matches a verified host name (lower case).
func (c *Client) matchName(name string) bool {
	switch c.Kind {
	case Host:
		return c.name != "" && c.name == name
	case Wildcard:
		ok, _ := path.Match(c.name, name) // validHostPattern keeps out path.Match's [ and \
		return ok
	}
	return false
}

// NameSource gives the verified host names of an address (see Names).
type NameSource interface {
	Names(ctx context.Context, ip netip.Addr) []string
}

// Match returns the client entry of e that applies to a caller at ip, or nil when no
// entry does: the first in file order of the most specific kind that matches (see the
// package documentation). A host entry by name and one by address are the same kind,
// as in knfsd (both MCL_FQDN), so the earlier of the two on the line wins. names is
// consulted only when a host-name or wildcard entry could still win over what
// matched by address; it may be nil when e has none.
func (e *Export) Match(ctx context.Context, ip netip.Addr, names NameSource) *Client {
	ip = ip.Unmap()
	// got[k] is the index of the first entry of kind k that matches; none: no entry.
	none := len(e.Clients)
	var got [numKinds]int
	for k := range got {
		got[k] = none
	}
	for i := range e.Clients {
		c := &e.Clients[i]
		if got[c.Kind] == none && c.matchAddr(ip) {
			got[c.Kind] = i
		}
	}
	if e.byName && names != nil && e.namesMayWin(&got) {
		for _, n := range names.Names(ctx, ip) {
			for i := range e.Clients {
				c := &e.Clients[i]
				if (c.Kind == Host || c.Kind == Wildcard) && i < got[c.Kind] && c.matchName(n) {
					got[c.Kind] = i
				}
			}
		}
	}
	for _, i := range got {
		if i != none {
			return &e.Clients[i]
		}
	}
	return nil
}

// namesMayWin reports whether a match by host name could change what the address
// matches in got (see Match) chose: a host-name entry before the first host entry
// that matched by address, or a wildcard when no host or network entry matched.
func (e *Export) namesMayWin(got *[numKinds]int) bool {
	none := len(e.Clients)
	for i := range e.Clients {
		c := &e.Clients[i]
		switch {
		case c.Kind == Host && c.name != "" && i < got[Host]:
			return true
		case c.Kind == Wildcard && got[Host] == none && got[Network] == none:
			return true
		}
	}
	return false
}
