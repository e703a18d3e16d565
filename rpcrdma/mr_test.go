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
	// The same buffer while the first registration is in use: a separate region,
	// cached too.
	b, err := c.register(buf, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if b == a || b.own || b.mr.RKey() == stag {
		t.Fatal("a busy registration was handed out twice")
	}
	stagB := b.mr.RKey()
	c.release(b)
	c.release(a)
	if a.mr.Valid() || b.mr.Valid() {
		t.Fatal("released registration still valid")
	}
	// Registered again, twice at once: both cached regions, each with a new STag.
	a2, err := c.register(buf, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := c.register(buf, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if (a2 != a || b2 != b) && (a2 != b || b2 != a) {
		t.Fatal("re-registration did not reuse the cached regions")
	}
	for _, r := range []*reg{a2, b2} {
		if k := r.mr.RKey(); k == stag || k == stagB || !r.mr.Valid() {
			t.Fatalf("re-registration: STag %#x (old %#x, %#x), valid %v", k, stag, stagB, r.mr.Valid())
		}
	}
	c.release(a2)
	c.release(b2)
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
	if n := c.n; n > maxCachedRegs || n < len(c.m) {
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
	for _, l := range c.m {
		for r := l; r != nil; r = r.next {
			total += r.key.n
		}
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

// TestRegCacheKeepsSourceOnlyRegions: a registration with no right at all (a server's
// reply payload, the source of its RDMA Write) gives the peer nothing, so release
// leaves it valid and the next registration of the buffer gets it back as it is (no
// re-keying), while one with a remote right is still invalidated and re-keyed.
func TestRegCacheKeepsSourceOnlyRegions(t *testing.T) {
	pd, err := soft.New(soft.Config{}).AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	c := newRegCache(pd)
	defer c.close()
	buf := make([]byte, 4096)
	src, err := c.register(buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := src.mr.LKey()
	c.release(src)
	if !src.mr.Valid() {
		t.Fatal("a released source-only region was invalidated")
	}
	again, err := c.register(buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again != src || again.mr.LKey() != key || !again.mr.Valid() || again.mr.Access() != 0 {
		t.Fatalf("source-only region not reused as it was: same %v, key %#x (was %#x), valid %v, access %v",
			again == src, again.mr.LKey(), key, again.mr.Valid(), again.mr.Access())
	}
	c.release(again)
	sink, err := c.register(buf, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	sinkKey := sink.mr.RKey()
	c.release(sink)
	if sink.mr.Valid() {
		t.Fatal("a released sink region (local write) is still valid")
	}
	sink2, err := c.register(buf, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if sink2 != sink || sink2.mr.RKey() == sinkKey {
		t.Fatal("a sink region was not re-keyed on reuse")
	}
	c.release(sink2)
}
