package soft

import (
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
)

// maxSTagIndex is the largest STag index (24 bits, RFC 5040 §2.1 STag =
// index<<8 | key). Index 0 is never used: STag 0 means "none".
const maxSTagIndex = 1<<24 - 1

// stagTable maps STag indices to memory regions for one device.
//
// The 8-bit key of an STag is drawn at random (keyStream) every time its
// index is registered, re-registered or reused after a Close, and always
// differs from the last two keys the index had, so a peer cannot derive a
// valid STag from the index, and a stale STag (from before an invalidation
// and the Reregister that followed it, or from a closed region, or one
// generation older still) never matches the region that replaced it (RFC
// 5042 §5.1). An older key can recur, with the odds of a blind guess (1 in
// 254); every wrong guess costs the peer its connection (an invalid-STag
// Terminate).
//
// The index is not the table slot either: slot s carries index perm(s), a
// permutation of the 24-bit index space keyed per device from the same
// random stream, so the indices in use are scattered rather than 1, 2, 3...
// (defence in depth; perm is a cheap mixing network, not a cipher).
//
// Locks: lookups (per FPDU) take none: they read slots, published
// atomically. mu guards nslots, free, keys and prev; it is held only to add
// or remove a region. While a region holds a slot, the slot's last two keys
// are the region's own (its STag's and memRegion.prevKey): rekey (the per-call
// Reregister) changes them under the region's lock alone, so that
// connections re-keying their regions on different processors write no
// common cache line; remove hands them back to keys and prev, where the
// slot's next region starts from them. Keys come from keyStreams (per P, no
// lock), or from rnd under rndMu when rnd.fill is set (deterministic tests).
type stagTable struct {
	mu     sync.RWMutex
	slots  atomic.Pointer[stagSlots] // by slot; nil when none was ever added
	nslots int                       // slots in use (free or not) of slots
	keys   []uint8                   // last key used per free slot (a registered one's is its region's)
	prev   []uint8                   // the key before it
	free   []uint32                  // free slots (LIFO)
	rndMu  sync.Mutex
	rnd    keyStream
	perm   indexPerm
}

// stagSlots holds the region of each slot (nil when free). Its length is a
// capacity: add replaces it by a copy twice as long when it is full, so a
// lookup reads whichever copy it loaded, and the region's own checks (key,
// closed, under its lock) reject what a stale copy may still hold.
type stagSlots struct{ s []atomic.Pointer[memRegion] }

// minSTagSlots is the length of a table's first stagSlots.
const minSTagSlots = 64

// newSlotLocked appends a slot and returns it. Caller holds mu for writing.
func (t *stagTable) newSlotLocked() uint32 {
	cur := t.slots.Load()
	if cur == nil || t.nslots == len(cur.s) {
		n := minSTagSlots
		if cur != nil {
			n = 2 * len(cur.s)
		}
		next := &stagSlots{s: make([]atomic.Pointer[memRegion], n)}
		if cur != nil {
			for i := range cur.s {
				next.s[i].Store(cur.s[i].Load())
			}
		}
		t.slots.Store(next)
	}
	t.nslots++
	return uint32(t.nslots - 1)
}

// indexPerm is a 4-round Feistel network on 24 bits (two 12-bit halves):
// a bijection from table slots to STag indices, cheap enough for the
// per-FPDU lookup. New keys it once; it does not change afterwards, so it
// is read without a lock. The zero value is the identity (tests).
type indexPerm struct {
	keyed bool
	k     [4]uint32
}

// key draws the round keys from s.
func (p *indexPerm) key(s *keyStream) {
	for i := range p.k {
		p.k[i] = uint32(s.next()) | uint32(s.next())<<8 | uint32(s.next())<<16 | uint32(s.next())<<24
	}
	p.keyed = true
}

// round is the Feistel round function: 12 bits from a 12-bit half and a key.
func round(h, k uint32) uint32 { return ((h ^ k) * 0x9e3779b1) >> 20 }

// index returns the STag index of slot.
func (p *indexPerm) index(slot uint32) uint32 {
	if !p.keyed {
		return slot
	}
	l, r := slot>>12&0xfff, slot&0xfff
	for _, k := range p.k {
		l, r = r, l^round(r, k)
	}
	return l<<12 | r
}

// slot returns the slot of STag index idx (the inverse of index).
func (p *indexPerm) slot(idx uint32) uint32 {
	if !p.keyed {
		return idx
	}
	l, r := idx>>12&0xfff, idx&0xfff
	for i := len(p.k) - 1; i >= 0; i-- {
		l, r = r^round(l, p.k[i]), l
	}
	return l<<12 | r
}

// keyStream hands out random bytes for STag keys. It reads them from
// crypto/rand in batches of len(buf), so a registration costs neither an
// allocation nor, most of the time, a system call. A stream is used by one
// goroutine at a time (keyStreams, or stagTable.rnd under stagTable.rndMu).
type keyStream struct {
	buf [256]byte
	n   int // unused bytes left at the start of buf
	// fill replaces crypto/rand.Read when set (deterministic tests).
	fill func([]byte)
}

// next returns a random byte.
func (s *keyStream) next() uint8 {
	if s.n == 0 {
		if s.fill != nil {
			s.fill(s.buf[:])
		} else {
			rand.Read(s.buf[:]) // never fails (crypto/rand, Go 1.24+)
		}
		s.n = len(s.buf)
	}
	s.n--
	return s.buf[s.n]
}

// newKey returns a random key other than cur and prev (the last two keys of
// an index): one of the 254 others, or of the 255 others when they are equal.
func (s *keyStream) newKey(cur, prev uint8) uint8 {
	if cur == prev {
		return cur + 1 + s.next()%255
	}
	a, b := min(cur, prev), max(cur, prev)
	k := s.next() % 254 // the k-th value of 0..255 without a and b
	if k >= a {
		k++
	}
	if k >= b {
		k++
	}
	return k
}

// keyStreams hold the key streams of every table (crypto/rand behind each), so that
// the per-call Reregister of connections on different CPUs takes no common lock.
var keyStreams = sync.Pool{New: func() any { return new(keyStream) }}

// stream returns a key stream for the caller's exclusive use until putKeys.
func (t *stagTable) stream() *keyStream {
	if t.rnd.fill != nil { // deterministic tests: the table's own stream, in order
		t.rndMu.Lock()
		return &t.rnd
	}
	return keyStreams.Get().(*keyStream)
}

// putKeys gives back what stream returned.
func (t *stagTable) putKeys(s *keyStream) {
	if s == &t.rnd {
		t.rndMu.Unlock()
		return
	}
	keyStreams.Put(s)
}

// nextKey returns a new key for a slot whose last two keys are cur and prev
// (newKey).
func (t *stagTable) nextKey(cur, prev uint8) uint8 {
	s := t.stream()
	k := s.newKey(cur, prev)
	t.putKeys(s)
	return k
}

func (t *stagTable) add(m *memRegion) (uint32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var slot uint32
	if n := len(t.free); n > 0 {
		slot = t.free[n-1]
		t.free = t.free[:n-1]
		t.prev[slot], t.keys[slot] = t.keys[slot], t.nextKey(t.keys[slot], t.prev[slot])
	} else {
		if t.nslots == 0 {
			t.newSlotLocked() // slot 0 reserved
			t.keys = append(t.keys, 0)
			t.prev = append(t.prev, 0)
		}
		for {
			if t.nslots > maxSTagIndex {
				return 0, fmt.Errorf("soft: RegMR: STag index space (%d regions) exhausted", maxSTagIndex)
			}
			slot = t.newSlotLocked()
			s := t.stream()
			k := s.next()
			t.putKeys(s)
			t.keys = append(t.keys, k)
			t.prev = append(t.prev, k)
			if t.perm.index(slot) != 0 {
				break
			}
			// Index 0 is never used: this slot stays empty for good.
		}
	}
	idx := t.perm.index(slot)
	m.slot, m.stag = slot, idx<<8|uint32(t.keys[slot])
	m.prevKey = t.prev[slot]
	m.base = uint64(idx) << 32
	t.slots.Load().s[slot].Store(m) // publish after m is complete
	return m.stag, nil
}

// rekey gives region m a fresh key and returns its new STag. The caller
// holds m's lock for writing (Reregister), and m holds its slot.
func (t *stagTable) rekey(m *memRegion) uint32 {
	cur := uint8(m.stag)
	k := t.nextKey(cur, m.prevKey)
	m.prevKey = cur
	return t.perm.index(m.slot)<<8 | uint32(k)
}

// remove frees slot, whose region (closed) last had keys key and, before it,
// prev.
func (t *stagTable) remove(slot uint32, key, prev uint8) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(slot) < t.nslots && t.slots.Load().s[slot].Load() != nil {
		t.slots.Load().s[slot].Store(nil)
		t.keys[slot], t.prev[slot] = key, prev
		t.free = append(t.free, slot)
	}
}

// lookup returns the region whose index matches stag (the key is checked by
// the caller under the region's lock), or nil.
func (t *stagTable) lookup(stag uint32) *memRegion {
	idx := stag >> 8
	slot := t.perm.slot(idx)
	if cur := t.slots.Load(); cur != nil && idx != 0 && int(slot) < len(cur.s) {
		return cur.s[slot].Load()
	}
	return nil
}
