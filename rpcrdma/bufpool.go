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

// bufPool keeps registered buffers (registered once, re-keyed per use) in power-of-two
// sizes from 64 KiB.
type bufPool struct {
	pd        verbs.PD
	mu        sync.Mutex
	free      []*bigBuf
	freeBytes int
	all       []*bigBuf
}

// Bounds on the idle buffers a pool keeps.
const (
	maxPooled      = 64
	maxPooledBytes = 64 << 20
)

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
	size := 64 << 10
	for size < n {
		size <<= 1
	}
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

// takeFree removes and returns an idle buffer of at least n bytes, or nil.
func (p *bufPool) takeFree(n int) *bigBuf {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.free {
		if len(b.mr.Buf()) >= n {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.freeBytes -= len(b.mr.Buf())
			return b
		}
	}
	return nil
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
