package exports

import (
	"context"
	"net/netip"
	"strings"
	"sync"
)

// Resolver looks up host names; *net.Resolver (net.DefaultResolver) is one.
type Resolver interface {
	// LookupAddr returns the names of an address (reverse lookup).
	LookupAddr(ctx context.Context, addr string) ([]string, error)
	// LookupHost returns the addresses of a name (forward lookup).
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// DefaultMaxNames bounds the addresses a Names cache remembers.
const DefaultMaxNames = 4096

// Names finds and caches the verified host names of caller addresses: the names a
// reverse lookup gives whose forward lookup returns the address again. A failed
// lookup counts as "no names" and is cached too, so an unresolvable caller costs one
// lookup, not one per call. The cache lives until the Names is dropped (nfsrdmad
// makes a new one on every reload) and holds at most Max addresses: when full it is
// emptied. It is safe for concurrent use.
type Names struct {
	r   Resolver
	max int

	mu sync.Mutex
	m  map[netip.Addr][]string
}

// NewNames returns a cache over r holding at most max addresses (max <= 0:
// DefaultMaxNames).
func NewNames(r Resolver, max int) *Names {
	if max <= 0 {
		max = DefaultMaxNames
	}
	return &Names{r: r, max: max, m: make(map[netip.Addr][]string)}
}

// Names returns the verified names of ip, lower case without a trailing dot. A nil
// *Names knows no names.
func (n *Names) Names(ctx context.Context, ip netip.Addr) []string {
	if n == nil {
		return nil
	}
	ip = ip.Unmap()
	n.mu.Lock()
	names, ok := n.m[ip]
	n.mu.Unlock()
	if ok {
		return names
	}
	names = n.lookup(ctx, ip)
	if ctx.Err() != nil {
		return names // not cached: the caller gave up, not the resolver
	}
	n.mu.Lock()
	if len(n.m) >= n.max {
		clear(n.m)
	}
	n.m[ip] = names
	n.mu.Unlock()
	return names
}

func (n *Names) lookup(ctx context.Context, ip netip.Addr) []string {
	if n.r == nil {
		return nil
	}
	ptrs, err := n.r.LookupAddr(ctx, ip.String())
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range ptrs {
		addrs, err := n.r.LookupHost(ctx, name)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if fa, err := netip.ParseAddr(a); err == nil && fa.Unmap() == ip {
				out = append(out, strings.ToLower(strings.TrimSuffix(name, ".")))
				break
			}
		}
	}
	return out
}
