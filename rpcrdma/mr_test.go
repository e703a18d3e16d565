package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

func TestRegCache(t *testing.T) {
	pd, err := soft.New(soft.Config{}).AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	c := newRegCache(pd)
	buf := make([]byte, 4096)
	a, err := c.register(buf, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	stag := a.mr.RKey()
	// The same buffer while the first registration is in use: a separate region.
	b, err := c.register(buf, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if b == a || !b.own {
		t.Fatal("a busy registration was handed out twice")
	}
	c.release(b)
	c.release(a)
	if a.mr.Valid() {
		t.Fatal("released registration still valid")
	}
	// Registered again: the cached region with a new STag.
	a2, err := c.register(buf, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if a2 != a || a2.mr.RKey() == stag || !a2.mr.Valid() {
		t.Fatalf("re-registration: same %v, STag %#x (old %#x), valid %v", a2 == a, a2.mr.RKey(), stag, a2.mr.Valid())
	}
	c.release(a2)
	// Different access or length: different regions.
	d, _ := c.register(buf, verbs.AccessRemoteRead)
	e, _ := c.register(buf[:100], verbs.AccessRemoteWrite)
	if d == a || e == a {
		t.Fatal("registration reused across access rights or lengths")
	}
	c.release(d)
	c.release(e)
	// Eviction keeps the cache bounded.
	for i := 0; i < maxCachedRegs+10; i++ {
		r, err := c.register(make([]byte, 64), 0)
		if err != nil {
			t.Fatal(err)
		}
		c.release(r)
	}
	if n := len(c.m); n > maxCachedRegs {
		t.Fatalf("%d cached regions, bound %d", n, maxCachedRegs)
	}
	// And by bytes: big buffers push older ones out.
	for i := 0; i < 8; i++ {
		r, err := c.register(make([]byte, maxCachedBytes/4), 0)
		if err != nil {
			t.Fatal(err)
		}
		c.release(r)
	}
	total := 0
	for _, r := range c.m {
		total += r.key.n
	}
	if total > maxCachedBytes || total != c.bytes {
		t.Fatalf("cache holds %d bytes (counted %d), bound %d", total, c.bytes, maxCachedBytes)
	}
	// A buffer above a quarter of the bound is never cached.
	big, err := c.register(make([]byte, maxCachedBytes/4+1), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !big.own {
		t.Fatal("a huge buffer was cached")
	}
	c.release(big)
	if _, err := c.register(nil, 0); err == nil {
		t.Fatal("empty buffer registered")
	}
	c.close()
	if err := pd.Close(); err != nil {
		t.Fatalf("PD still has regions after close: %v", err)
	}
}
