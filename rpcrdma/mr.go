package rpcrdma

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// Registration of caller memory (Linux frwr_ops.c). Memory that is not in a registered
// pool (a caller's payloads, reply sinks and reply buffer; a server's reply payloads) is
// registered per RPC and revoked as soon as the RPC completes, so a peer can never touch
// it afterwards. To make that cheap, a regCache keeps the registrations of recently used
// buffers: a buffer registered again gets its cached region back with a fresh STag
// (MR.Reregister, a fast-register in ibverbs terms), and releasing it invalidates the
// region (MR.Invalidate returns only once no peer operation can touch the memory), which
// is exactly the guarantee a fresh registration and deregistration give. A steady stream
// of RPCs over the same buffers therefore registers nothing new. A registration with no
// right at all (access 0: a server's reply payloads, only ever the source of its own
// RDMA Writes and Sends) gives the peer nothing to use: its STag never goes on the wire,
// unlike a sink's, even one of local write only (an RDMA Read's sink STag travels in the
// Read Request), and a peer access would lack the right. So a cached one is handed out
// again as it is, neither re-keyed nor invalidated: two fewer region updates per reply
// with a write chunk.
//
// A buffer in use by several RPCs at once (a server returning the same data to many
// clients) has several cached regions, one per RPC. A cached region keeps its buffer
// reachable; the cache holds at most maxCachedRegs regions and maxCachedBytes bytes,
// closing the least recently used idle ones beyond that, so buffers a caller has
// dropped are not kept alive for long.
//
// A Client has one cache; a server has one per connection, so that connections never
// wait for each other's registrations (Linux keeps its MRs per transport, too). A
// server connection's cache is bounded by its memory budget (ServerOptions.ConnBudget)
// rather than maxCachedBytes: cached regions keep dropped buffers (READ buffers the
// pool let go) reachable, so many connections must not each pin 64 MiB.

// Bounds on what a regCache keeps.
const (
	maxCachedRegs  = 256
	maxCachedBytes = 64 << 20
)

type regKey struct {
	p   *byte
	n   int
	acc verbs.Access
}

// addr is the cache's map key for k: the buffer's address. The map is keyed by the
// address alone (a word: runtime.mapaccess1_fast64, where the three-field regKey took
// the generic hash, ~160 instructions a lookup on each registration) and the list
// under it holds the regions of every length and access starting there. The address
// stays that buffer's while a region of it is cached, since the region's MR holds
// the buffer (k.p too).
func (k regKey) addr() uintptr { return uintptr(unsafe.Pointer(k.p)) }

// reg is one registration handed out by a regCache.
type reg struct {
	key  regKey
	mr   verbs.MR
	busy bool
	last uint64
	own  bool // not cached: closed on release
	next *reg // the next cached region of the same key
}

// A regCache is ready once pd is set; newRegCache returns one.
type regCache struct {
	pd    verbs.PD
	mu    sync.Mutex
	m     map[uintptr]*reg // cached regions by buffer address (regKey.addr), as a list through next
	n     int              // cached regions
	bytes int              // total length of the cached regions
	tick  uint64
	// maxBytes bounds bytes (0: maxCachedBytes).
	maxBytes int
}

// limit returns the cache's bound in bytes.
func (c *regCache) limit() int {
	if c.maxBytes > 0 {
		return c.maxBytes
	}
	return maxCachedBytes
}

func newRegCache(pd verbs.PD) *regCache { return &regCache{pd: pd} }

// register returns a valid registration of buf with access acc and a STag no earlier
// registration had.
func (c *regCache) register(buf []byte, acc verbs.Access) (*reg, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("rpcrdma: register: empty buffer")
	}
	key := regKey{p: &buf[0], n: len(buf), acc: acc}
	c.mu.Lock()
	c.tick++
	for r := c.m[key.addr()]; r != nil; r = r.next {
		if r.busy || r.key != key {
			continue
		}
		r.busy, r.last = true, c.tick
		c.mu.Unlock()
		if acc == 0 {
			return r, nil // a source only: still valid, as release left it
		}
		if err := r.mr.Reregister(acc); err != nil {
			c.mu.Lock()
			c.unlink(r)
			c.mu.Unlock()
			r.mr.Close()
			return nil, fmt.Errorf("rpcrdma: re-register %d bytes: %w", len(buf), err)
		}
		return r, nil
	}
	var victims []*reg
	cache := len(buf) <= c.limit()/4
	for cache && (c.n >= maxCachedRegs || c.bytes+len(buf) > c.limit()) {
		var victim *reg
		for _, l := range c.m {
			for r := l; r != nil; r = r.next {
				if !r.busy && (victim == nil || r.last < victim.last) {
					victim = r
				}
			}
		}
		if victim == nil {
			cache = false
			break
		}
		c.unlink(victim)
		victims = append(victims, victim)
	}
	if cache {
		c.n++
		c.bytes += len(buf) // reserved; given back below if the registration fails
	}
	c.mu.Unlock()
	for _, v := range victims {
		v.mr.Close()
	}
	mr, err := c.pd.RegMR(buf, acc)
	if err != nil {
		if cache {
			c.mu.Lock()
			c.n--
			c.bytes -= len(buf)
			c.mu.Unlock()
		}
		return nil, fmt.Errorf("rpcrdma: register %d bytes: %w", len(buf), err)
	}
	r := &reg{key: key, mr: mr, busy: true, own: !cache}
	if cache {
		c.mu.Lock()
		if c.m == nil {
			c.m = make(map[uintptr]*reg)
		}
		r.last, r.next = c.tick, c.m[key.addr()]
		c.m[key.addr()] = r
		c.mu.Unlock()
	}
	return r, nil
}

// unlink removes cached region r from the cache (c.mu held).
func (c *regCache) unlink(r *reg) {
	p := c.m[r.key.addr()]
	if p == r {
		if r.next == nil {
			delete(c.m, r.key.addr())
		} else {
			c.m[r.key.addr()] = r.next
		}
	} else {
		for p != nil && p.next != r {
			p = p.next
		}
		if p == nil {
			return
		}
		p.next = r.next
	}
	r.next = nil
	c.n--
	c.bytes -= r.key.n
}

// release revokes the registration: when it returns, no peer operation can touch the
// memory until the buffer is registered again. A cached source-only one (access 0,
// which no peer operation can use) stays valid for its next use.
func (c *regCache) release(r *reg) {
	if r.own {
		r.mr.Close()
		return
	}
	if r.key.acc != 0 {
		r.mr.Invalidate()
	}
	c.mu.Lock()
	r.busy = false
	c.mu.Unlock()
}

// revoke invalidates r (as release) but keeps it from other registrations: its STag
// may still be named by a reply in flight (a Send With Invalidate), which must find it
// invalid under that same STag, not re-keyed for another call. released takes it back.
func (c *regCache) revoke(r *reg) {
	if r.key.acc != 0 {
		r.mr.Invalidate()
	}
}

// released takes back r, which the peer has invalidated already (a Send With
// Invalidate naming its STag) or revoke has: it is not invalidated again.
func (c *regCache) released(r *reg) {
	if r.own {
		r.mr.Close()
		return
	}
	c.mu.Lock()
	r.busy = false
	c.mu.Unlock()
}

// close deregisters every cached region.
func (c *regCache) close() {
	c.mu.Lock()
	m := c.m
	c.m, c.n, c.bytes = nil, 0, 0
	c.mu.Unlock()
	for _, l := range m {
		for r := l; r != nil; r = r.next {
			r.mr.Close()
		}
	}
}
