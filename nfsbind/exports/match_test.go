package exports

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeResolver answers from maps; it counts reverse lookups.
type fakeResolver struct {
	ptr     map[string][]string
	hosts   map[string][]string
	reverse atomic.Int32
}

func (r *fakeResolver) LookupAddr(_ context.Context, addr string) ([]string, error) {
	r.reverse.Add(1)
	if n, ok := r.ptr[addr]; ok {
		return n, nil
	}
	return nil, errors.New("no PTR")
}

func (r *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if a, ok := r.hosts[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func mustParse(t *testing.T, s string) *Table {
	t.Helper()
	tab, err := Parse("test", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestMatchPrecedence(t *testing.T) {
	tab := mustParse(t, "/a *(ro) *.example.com(rw,insecure) 10.0.0.0/8(rw,all_squash) 10.1.0.0/16(rw,async) 10.1.2.3(no_root_squash) h.example.com(anonuid=7) ::ffff:192.0.2.0/120(rw)\n")
	r := &fakeResolver{
		ptr: map[string][]string{
			"10.1.2.4":   {"h.example.com."},     // verified: host entry beats the networks
			"10.9.9.9":   {"x.example.com"},      // wildcard loses to 10.0.0.0/8
			"172.16.0.1": {"y.example.com"},      // wildcard beats *
			"172.16.0.2": {"forged.example.com"}, // forward lookup does not confirm
			"172.16.0.3": {"H.Example.COM."},     // case and trailing dot
		},
		hosts: map[string][]string{
			"h.example.com.":     {"10.1.2.4"},
			"x.example.com":      {"10.9.9.9"},
			"y.example.com":      {"172.16.0.1"},
			"forged.example.com": {"172.16.0.99"},
			"H.Example.COM.":     {"172.16.0.3"},
		},
	}
	names := NewNames(r, 0)
	e := &tab.Exports[0]
	for _, tc := range []struct{ ip, spec string }{
		{"10.1.2.3", "10.1.2.3"},
		{"10.1.2.4", "h.example.com"},
		{"10.1.9.9", "10.0.0.0/8"}, // the first network on the line wins, not the longest
		{"10.9.9.9", "10.0.0.0/8"},
		{"172.16.0.1", "*.example.com"},
		{"172.16.0.2", "*"},
		{"172.16.0.3", "h.example.com"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"192.0.2.7", "::ffff:192.0.2.0/120"},
		{"2001:db8::1", "*"},
	} {
		c := e.Match(context.Background(), netip.MustParseAddr(tc.ip), names)
		if c == nil || c.Spec != tc.spec {
			t.Errorf("%s matched %v, want %s", tc.ip, c, tc.spec)
		}
	}
	n := r.reverse.Load()
	e.Match(context.Background(), netip.MustParseAddr("172.16.0.2"), names)
	if r.reverse.Load() != n {
		t.Errorf("a failed verification was not cached")
	}
}

// TestMatchHostNameBeforeAddress: a host by name and a host by address are one kind,
// as in knfsd (both MCL_FQDN entries, taken in file order), so the first of them on
// the line wins, as the package documents: a name entry written before an address
// entry of the same host beats it. When the address entry comes first, no name can
// beat it and Match looks up no name.
func TestMatchHostNameBeforeAddress(t *testing.T) {
	r := &fakeResolver{
		ptr: map[string][]string{
			"10.0.0.5": {"h.example.com."},
			"10.0.0.6": {"h.example.com."}, // not confirmed by the forward lookup
		},
		hosts: map[string][]string{"h.example.com.": {"10.0.0.5"}},
	}
	for _, tc := range []struct {
		line, ip, spec string
		lookups        int32
	}{
		{"/a h.example.com(rw) 10.0.0.5(ro)\n", "10.0.0.5", "h.example.com", 1},
		{"/a h.example.com(rw) 10.0.0.6(ro)\n", "10.0.0.6", "10.0.0.6", 1},
		{"/a 10.0.0.5(ro) h.example.com(rw)\n", "10.0.0.5", "10.0.0.5", 0},
		{"/a 10.0.0.5(ro) h.example.com(rw) 10.0.0.0/8 *.example.com\n", "10.0.0.5", "10.0.0.5", 0},
		{"/a 10.0.0.0/8 *.example.com\n", "10.0.0.5", "10.0.0.0/8", 0},
	} {
		r.reverse.Store(0)
		e := &mustParse(t, tc.line).Exports[0]
		c := e.Match(context.Background(), netip.MustParseAddr(tc.ip), NewNames(r, 0))
		if got := specOf(c); got != tc.spec {
			t.Errorf("%q: %s matched %s, want %s (the first host entry on the line)", tc.line, tc.ip, got, tc.spec)
		}
		if n := r.reverse.Load(); n != tc.lookups {
			t.Errorf("%q: %s: %d reverse lookups, want %d", tc.line, tc.ip, n, tc.lookups)
		}
	}
}

// TestMatchZonedCallerInNetwork: a network matches a caller by its address bits,
// whatever its zone (the interface of a link-local caller), as knfsd's mountd
// compares masked addresses; netip.Prefix.Contains alone refuses every zoned address.
func TestMatchZonedCallerInNetwork(t *testing.T) {
	e := &mustParse(t, "/a 10.0.0.0/8 fe80::/10(rw)\n").Exports[0]
	if c := e.Match(context.Background(), netip.MustParseAddr("fe80::1%eth0"), nil); specOf(c) != "fe80::/10" {
		t.Errorf("fe80::1%%eth0 matched %s, want fe80::/10", specOf(c))
	}
}

// specOf is c's Spec, "<nil>" for no entry.
func specOf(c *Client) string {
	if c == nil {
		return "<nil>"
	}
	return c.Spec
}

func TestMatchNone(t *testing.T) {
	tab := mustParse(t, "/a 127.0.0.1(rw) 2001:db8::/32 *.example.com\n")
	e := &tab.Exports[0]
	if c := e.Match(context.Background(), netip.MustParseAddr("127.0.0.2"), nil); c != nil {
		t.Errorf("127.0.0.2 matched %s with no names", c.Spec)
	}
	if c := e.Match(context.Background(), netip.MustParseAddr("127.0.0.2"), NewNames(nil, 0)); c != nil {
		t.Errorf("127.0.0.2 matched %s with no resolver", c.Spec)
	}
	if c := e.Match(context.Background(), netip.MustParseAddr("2001:db8:1::5"), nil); c == nil || c.Spec != "2001:db8::/32" {
		t.Errorf("2001:db8:1::5 matched %v", c)
	}
}

func TestNamesBounded(t *testing.T) {
	r := &fakeResolver{}
	n := NewNames(r, 2)
	for _, a := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
		n.Names(context.Background(), netip.MustParseAddr(a))
	}
	if len(n.m) > 2 {
		t.Errorf("cache holds %d addresses, max 2", len(n.m))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.Names(ctx, netip.MustParseAddr("10.0.0.9"))
	if _, ok := n.m[netip.MustParseAddr("10.0.0.9")]; ok {
		t.Errorf("a lookup under a cancelled context was cached")
	}
}

func TestClientForAndNewExport(t *testing.T) {
	c, err := ClientFor("*", Options{AnonUID: 1})
	if err != nil || c.Kind != Anyone {
		t.Fatalf("%v %v", c, err)
	}
	if _, err := ClientFor("a b", Options{}); err == nil {
		t.Errorf("ClientFor accepted %q", "a b")
	}
	if _, err := NewExport("rel", c); err == nil {
		t.Errorf("NewExport accepted a relative path")
	}
	h, _ := ClientFor("h.example.com", Options{})
	e, err := NewExport("/x/", c, h)
	if err != nil || e.Path != "/x" || !e.byName {
		t.Errorf("NewExport: %+v %v", e, err)
	}
}

// BenchmarkMatch is the matching part of the per-call check: a caller matched by the
// last of 21 entries (20 networks before it), by address and by a cached host name.
func BenchmarkMatch(b *testing.B) {
	var nets strings.Builder
	for i := range 20 {
		fmt.Fprintf(&nets, " 10.%d.0.0/16(rw)", i)
	}
	r := &fakeResolver{ptr: map[string][]string{"127.0.0.1": {"h.example.com"}}, hosts: map[string][]string{"h.example.com": {"127.0.0.1"}}}
	ip := netip.MustParseAddr("127.0.0.1")
	for _, c := range []struct{ name, last string }{{"address", "127.0.0.0/8"}, {"hostname", "h.example.com"}, {"star", "*"}} {
		b.Run(c.name, func(b *testing.B) {
			tab, err := Parse("bench", []byte("/x"+nets.String()+" "+c.last+"(ro)\n"))
			if err != nil {
				b.Fatal(err)
			}
			e, names, ctx := &tab.Exports[0], NewNames(r, 0), context.Background()
			b.ReportAllocs()
			for range b.N {
				if e.Match(ctx, ip, names) == nil {
					b.Fatal("no match")
				}
			}
		})
	}
}
