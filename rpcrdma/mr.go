package rpcrdma

import (
	"fmt"
	"sync"

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
// of RPCs over the same buffers therefore registers nothing new.
//
// A cached region keeps its buffer reachable; the cache holds at most maxCachedRegs
// regions and maxCachedBytes bytes, closing the least recently used idle ones beyond
// that, so buffers a caller has dropped are not kept alive for long.

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

// reg is one registration handed out by a regCache.
type reg struct {
	key  regKey
	mr   verbs.MR
	busy bool
	last uint64
	own  bool // not cached: closed on release
}

type regCache struct {
	pd    verbs.PD
	mu    sync.Mutex
	m     map[regKey]*reg
	bytes int // total length of the cached regions
	tick  uint64
}

func newRegCache(pd verbs.PD) *regCache {
	return &regCache{pd: pd, m: make(map[regKey]*reg)}
}

// register returns a valid registration of buf with access acc and a STag no earlier
// registration had.
func (c *regCache) register(buf []byte, acc verbs.Access) (*reg, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("rpcrdma: register: empty buffer")
	}
	key := regKey{p: &buf[0], n: len(buf), acc: acc}
	c.mu.Lock()
	c.tick++
	if r, ok := c.m[key]; ok && !r.busy {
		r.busy, r.last = true, c.tick
		c.mu.Unlock()
		if err := r.mr.Reregister(acc); err != nil {
			c.mu.Lock()
			delete(c.m, key)
			c.bytes -= key.n
			c.mu.Unlock()
			r.mr.Close()
			return nil, fmt.Errorf("rpcrdma: re-register %d bytes: %w", len(buf), err)
		}
		return r, nil
	}
	_, taken := c.m[key]
	var victims []*reg
	cache := !taken && len(buf) <= maxCachedBytes/4
	for cache && (len(c.m) >= maxCachedRegs || c.bytes+len(buf) > maxCachedBytes) {
		var victim *reg
		for _, r := range c.m {
			if !r.busy && (victim == nil || r.last < victim.last) {
				victim = r
			}
		}
		if victim == nil {
			cache = false
			break
		}
		delete(c.m, victim.key)
		c.bytes -= victim.key.n
		victims = append(victims, victim)
	}
	if cache {
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
			c.bytes -= len(buf)
			c.mu.Unlock()
		}
		return nil, fmt.Errorf("rpcrdma: register %d bytes: %w", len(buf), err)
	}
	r := &reg{key: key, mr: mr, busy: true, own: !cache}
	if cache {
		c.mu.Lock()
		if _, dup := c.m[key]; dup {
			r.own = true
			c.bytes -= len(buf)
		} else {
			r.last = c.tick
			c.m[key] = r
		}
		c.mu.Unlock()
	}
	return r, nil
}

// release revokes the registration: when it returns, no peer operation can touch the
// memory until the buffer is registered again.
func (c *regCache) release(r *reg) {
	if r.own {
		r.mr.Close()
		return
	}
	r.mr.Invalidate()
	c.mu.Lock()
	r.busy = false
	c.mu.Unlock()
}

// close deregisters every cached region.
func (c *regCache) close() {
	c.mu.Lock()
	m := c.m
	c.m = make(map[regKey]*reg)
	c.bytes = 0
	c.mu.Unlock()
	for _, r := range m {
		r.mr.Close()
	}
}
