package rpcrdma

import "math/bits"

// pendingCalls maps the XIDs of a connection's calls awaiting replies to their
// requests (the client's pending table). It is an open-addressed table with linear
// probing and backward-shift deletion. An entry's home slot is the top bits of the
// XID times 2^32/φ (Fibonacci hashing): oncrpc.Client numbers calls consecutively,
// and consecutive XIDs so hashed land far apart, so probe runs stay short (indexed
// by the low bits, 32 calls in flight made one run of 32 slots, which every deletion
// walked to its end). A lookup, insert or delete is then a few loads and compares (a
// Go map cost ~100 instructions to insert and ~250 to delete, once per call each). The table doubles when half full
// and never shrinks; it holds at most the calls in flight and the orphans, which
// credits bound. The caller serialises access (clientConn.mu).
type pendingCalls struct {
	slots []pendingSlot // length a power of two; r == nil marks a free slot
	shift uint          // 32 - log2(len(slots))
	n     int           // slots in use
}

// home returns xid's home slot.
func (p *pendingCalls) home(xid uint32) uint32 { return (xid * 0x9e3779b9) >> p.shift }

type pendingSlot struct {
	xid uint32
	r   *request
}

// minPendingSlots is the table's initial size: four 16-byte slots, one 64-byte line
// of memory (the size class Go allocates it from is 64-byte aligned), so that a
// connection with a call or two in flight touches the same line for every call rather
// than a different one of four, each a cache miss at many connections.
const minPendingSlots = 4

func newPendingCalls() pendingCalls {
	var p pendingCalls
	p.resize(minPendingSlots)
	return p
}

// resize makes the table n slots (a power of two) long, empty.
func (p *pendingCalls) resize(n int) {
	p.slots, p.n, p.shift = make([]pendingSlot, n), 0, uint(32-bits.TrailingZeros(uint(n)))
}

// put makes r pending under xid, replacing what was pending under it.
func (p *pendingCalls) put(xid uint32, r *request) {
	if 2*(p.n+1) > len(p.slots) {
		p.grow()
	}
	mask := uint32(len(p.slots) - 1)
	for i := p.home(xid); ; i = (i + 1) & mask {
		s := &p.slots[i]
		if s.r == nil {
			s.xid, s.r = xid, r
			p.n++
			return
		}
		if s.xid == xid {
			s.r = r
			return
		}
	}
}

// find returns the slot index of xid.
func (p *pendingCalls) find(xid uint32) (uint32, bool) {
	if p.n == 0 {
		return 0, false
	}
	mask := uint32(len(p.slots) - 1)
	for i := p.home(xid); ; i = (i + 1) & mask {
		s := &p.slots[i]
		if s.r == nil {
			return 0, false
		}
		if s.xid == xid {
			return i, true
		}
	}
}

// has reports whether a call is pending under xid.
func (p *pendingCalls) has(xid uint32) bool {
	_, ok := p.find(xid)
	return ok
}

// take removes and returns the request pending under xid.
func (p *pendingCalls) take(xid uint32) (*request, bool) {
	i, ok := p.find(xid)
	if !ok {
		return nil, false
	}
	r := p.slots[i].r
	p.removeAt(i)
	return r, true
}

// removeAt frees slot i, moving later entries of its probe run back so that every
// entry stays reachable from its home slot without crossing a free slot.
func (p *pendingCalls) removeAt(i uint32) {
	mask := uint32(len(p.slots) - 1)
	for j := (i + 1) & mask; p.slots[j].r != nil; j = (j + 1) & mask {
		home := p.home(p.slots[j].xid)
		// The entry at j may fill the hole at i unless its home lies cyclically in
		// (i, j], where it would then be unreachable.
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			p.slots[i] = p.slots[j]
			i = j
		}
	}
	p.slots[i] = pendingSlot{}
	p.n--
}

// grow doubles the table.
func (p *pendingCalls) grow() {
	old := p.slots
	p.resize(max(2*len(old), minPendingSlots))
	for _, s := range old {
		if s.r != nil {
			p.put(s.xid, s.r)
		}
	}
}

// drain removes every pending request, calling f on each.
func (p *pendingCalls) drain(f func(r *request)) {
	for i := range p.slots {
		if r := p.slots[i].r; r != nil {
			p.slots[i] = pendingSlot{}
			f(r)
		}
	}
	p.n = 0
}
