// Registered buffers for reassembled calls and long replies, pooled per Listener.

package rpcrdma

import (
	"fmt"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// bigBuf is a registered buffer for reassembled calls and long replies.
type bigBuf struct {
	mr verbs.MR
}

// bufPool keeps registered buffers (registered once, re-keyed per use) in the sizes of
// bufSize.
type bufPool struct {
	pd        verbs.PD
	mu        sync.Mutex
	free      []*bigBuf
	freeBytes int
	all       []*bigBuf
}

// Bounds on the idle buffers a pool keeps: after a burst (or an attack) the rest
// are deregistered and go back to the runtime. 16 MiB is half the default memory
// budget (oncrpc.DefaultBudget), a dozen 1 MiB WRITEs' reassembly buffers.
const (
	maxPooled      = 64
	maxPooledBytes = 16 << 20
)

// minBuf is the smallest buffer a bufPool registers.
const minBuf = 64 << 10

// bufSize is the size of buffer registered for an n-byte message: at least minBuf, and
// above that four size classes per power of two (5/4, 6/4, 7/4 and 2 times the power of
// two below), so that a buffer wastes at most a quarter of its size (a 1 MiB NFS WRITE
// with its headers takes 1.25 MiB, not 2) while sizes still repeat for reuse.
func bufSize(n int) int {
	size := minBuf
	for size < n {
		size <<= 1
	}
	if size == minBuf {
		return size
	}
	for q := 5; q < 8; q++ {
		if s := size / 8 * q; s >= n {
			return s
		}
	}
	return size
}

// get returns a registered buffer of at least n bytes with the given access, reusing an
// idle one (re-registered, so its STag is new) when it can. A pooled buffer whose
// re-registration fails is deregistered and dropped, never handed out with stale rights,
// and a fresh buffer is registered instead.
func (p *bufPool) get(n int, access verbs.Access) (*bigBuf, error) {
	if b := p.takeFree(n); b != nil {
		if err := b.mr.Reregister(access | verbs.AccessLocalWrite); err == nil {
			return b, nil
		}
		p.drop(b)
	}
	size := bufSize(n)
	mr, err := p.pd.RegMR(make([]byte, size), access|verbs.AccessLocalWrite)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: register %d-byte buffer: %w", size, err)
	}
	b := &bigBuf{mr: mr}
	p.mu.Lock()
	p.all = append(p.all, b)
	p.mu.Unlock()
	return b, nil
}

func (p *bufPool) put(b *bigBuf) {
	b.mr.Invalidate()
	p.mu.Lock()
	if len(p.free) >= maxPooled || p.freeBytes+len(b.mr.Buf()) > maxPooledBytes {
		p.mu.Unlock()
		p.drop(b)
		return
	}
	p.free = append(p.free, b)
	p.freeBytes += len(b.mr.Buf())
	p.mu.Unlock()
}

// takeFree removes and returns the smallest idle buffer of at least n bytes, or nil, so
// that small calls do not take the buffers large ones need (which would then register
// new ones).
func (p *bufPool) takeFree(n int) *bigBuf {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if l := len(b.mr.Buf()); l >= n && (best < 0 || l < len(p.free[best].mr.Buf())) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := p.free[best]
	p.free = append(p.free[:best], p.free[best+1:]...)
	p.freeBytes -= len(b.mr.Buf())
	return b
}

// drop forgets b, which is not on the free list, and deregisters it.
func (p *bufPool) drop(b *bigBuf) {
	p.mu.Lock()
	for i, x := range p.all {
		if x == b {
			p.all = append(p.all[:i], p.all[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	b.mr.Close()
}

func (p *bufPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.all {
		b.mr.Close()
	}
	p.all, p.free, p.freeBytes = nil, nil, 0
}
