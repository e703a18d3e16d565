package soft

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// memRegion is the software provider's verbs.MR.
//
// Tagged offsets are STag-index based: byte 0 of the region is TO
// index<<32 (regions are < 4 GiB). That keeps TOs non-zero, so a ULP that
// forgets MR.Addr() fails its tests, without sending heap addresses to the
// peer as a virtual-address-based TO would.
//
// mu is held for reading while the connection goroutines place data into or
// send data from the region on behalf of the peer, and for writing while the
// STag changes state. Invalidate, Reregister and Close therefore return only
// after every peer access in progress has finished, and no later peer access
// can match the old STag.
type memRegion struct {
	pd   *protDomain
	buf  []byte
	base uint64
	slot uint32 // in the device's stagTable

	mu   sync.RWMutex
	stag uint32 // its low byte is the slot's last key
	// prevKey is the slot's key before stag's while m holds the slot (see
	// stagTable).
	prevKey uint8
	access  verbs.Access
	valid   bool
	closed  bool

	// local mirrors stag, access and "valid and not closed" for the local
	// checks of every post (resolveSGL, RKey), which need a snapshot, not
	// the exclusion of peer accesses mu gives: one atomic load instead of
	// a read lock and unlock per SGE. Written under mu (publishLocked).
	local atomic.Uint64
}

// The layout of memRegion.local: the STag in the low 32 bits, the access
// flags above them, and localUsable set while the region is valid and open.
const (
	localAccessShift = 32
	localUsable      = 1 << 63
)

// publishLocked updates local from the fields it mirrors. Caller holds mu
// for writing (or owns m alone).
func (m *memRegion) publishLocked() {
	v := uint64(m.stag) | uint64(m.access)<<localAccessShift
	if m.valid && !m.closed {
		v |= localUsable
	}
	m.local.Store(v)
}

// localState returns a snapshot of the region for a local access check: its
// access flags and whether it is valid and open.
func (m *memRegion) localState() (verbs.Access, bool) {
	v := m.local.Load()
	return verbs.Access(uint32(v >> localAccessShift &^ (localUsable >> localAccessShift))), v&localUsable != 0
}

var _ verbs.MR = (*memRegion)(nil)

func (pd *protDomain) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	if len(buf) == 0 {
		return nil, errors.New("soft: RegMR: empty buffer")
	}
	if uint64(len(buf)) > 1<<32-1 {
		return nil, fmt.Errorf("soft: RegMR: buffer length %d exceeds 4 GiB", len(buf))
	}
	if access&^(verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite) != 0 {
		return nil, fmt.Errorf("soft: RegMR: unknown access flags %#x", uint32(access))
	}
	pd.mu.Lock()
	closed := pd.closed
	pd.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("soft: RegMR: %w", verbs.ErrClosed)
	}
	m := &memRegion{pd: pd, buf: buf, access: access, valid: true}
	m.mu.Lock() // add publishes m to the peer's lookups
	_, err := pd.dev.stags.add(m)
	m.publishLocked()
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	pd.mu.Lock()
	pd.nmr++
	pd.mu.Unlock()
	return m, nil
}

func (m *memRegion) Buf() []byte  { return m.buf }
func (m *memRegion) Addr() uint64 { return m.base }

func (m *memRegion) LKey() uint32 { return m.RKey() }

func (m *memRegion) RKey() uint32 { return uint32(m.local.Load()) }

func (m *memRegion) Access() verbs.Access {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.access
}

func (m *memRegion) Valid() bool {
	_, ok := m.localState()
	return ok
}

func (m *memRegion) Invalidate() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("soft: Invalidate: %w", verbs.ErrClosed)
	}
	m.valid = false
	m.publishLocked()
	return nil
}

// invalidateRemote is Send with Invalidate's invalidation: it succeeds for a
// registered region of pd whose STag matches exactly, whether still valid or
// invalid already (invalidated locally, or by an earlier Send with
// Invalidate): invalidating an invalid STag leaves it invalid, as the verbs
// define it and siw does (siw_invalidate_stag makes no state check). When it
// fails it reports the Terminate code: the RDMAP Remote Protection Error
// "STag cannot be invalidated" for the STag of a region of another
// protection domain, as siw answers a PD mismatch (siw_rdmap_complete,
// -EACCES from siw_invalidate_stag), and the Remote Operation Error of that
// name for an STag that names no region: deregistered, or a stale key
// (RFC 5040 §7.2).
func (m *memRegion) invalidateRemote(pd *protDomain, stag uint32) (iwarp.TermCode, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed || m.stag != stag:
		return iwarp.TermRDMAPOpCannotInvalidate, false
	case m.pd != pd:
		return iwarp.TermRDMAPProtCannotInvalidate, false
	case !m.valid:
		return 0, true
	}
	m.valid = false
	m.publishLocked()
	return 0, true
}

func (m *memRegion) Reregister(access verbs.Access) error {
	if access&^(verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite) != 0 {
		return fmt.Errorf("soft: Reregister: unknown access flags %#x", uint32(access))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("soft: Reregister: %w", verbs.ErrClosed)
	}
	m.stag = m.pd.dev.stags.rekey(m)
	handOff()
	m.access = access
	m.valid = true
	m.publishLocked()
	return nil
}

func (m *memRegion) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.valid = false
	m.publishLocked()
	key, prev := uint8(m.stag), m.prevKey
	m.mu.Unlock()
	m.pd.dev.stags.remove(m.slot, key, prev)
	m.pd.mu.Lock()
	m.pd.nmr--
	m.pd.mu.Unlock()
	return nil
}

// remoteCheck validates a peer access of n bytes at tagged offset to with
// the given right, for a QP in pd. On success the region is returned with
// m.mu read-locked; the caller must call m.mu.RUnlock after the access. On
// failure it returns the Terminate code for a tagged DDP access (tagged is
// true: RDMA Write / Read Response sink) or an RDMAP access (Read Request
// source), and a reason.
func (t *stagTable) remoteCheck(pd *protDomain, stag uint32, to uint64, n int, right verbs.Access, tagged bool) (*memRegion, int, iwarp.TermCode, string) {
	invalid, bounds, notAssoc := iwarp.TermRDMAPInvalidSTag, iwarp.TermRDMAPBaseBounds, iwarp.TermRDMAPSTagNotAssociated
	if tagged {
		invalid, bounds, notAssoc = iwarp.TermDDPTaggedInvalidSTag, iwarp.TermDDPTaggedBaseBounds, iwarp.TermDDPTaggedSTagNotAssociated
	}
	m := t.lookup(stag)
	if m == nil {
		return nil, 0, invalid, fmt.Sprintf("STag %#08x is not registered", stag)
	}
	m.mu.RLock()
	switch {
	case m.closed || m.stag != stag:
		m.mu.RUnlock()
		return nil, 0, invalid, fmt.Sprintf("STag %#08x is not registered (stale key)", stag)
	case !m.valid:
		m.mu.RUnlock()
		return nil, 0, invalid, fmt.Sprintf("STag %#08x has been invalidated", stag)
	case m.pd != pd:
		m.mu.RUnlock()
		return nil, 0, notAssoc, fmt.Sprintf("STag %#08x belongs to another protection domain", stag)
	case m.access&right == 0:
		m.mu.RUnlock()
		return nil, 0, iwarp.TermRDMAPAccessRights, fmt.Sprintf("STag %#08x lacks %v access (has %v)", stag, right, m.access)
	}
	off := to - m.base
	if to < m.base || off > uint64(len(m.buf)) || uint64(n) > uint64(len(m.buf))-off {
		m.mu.RUnlock()
		return nil, 0, bounds, fmt.Sprintf("STag %#08x: TO %#x length %d outside [%#x, %#x)", stag, to, n, m.base, m.base+uint64(len(m.buf)))
	}
	return m, int(off), 0, ""
}
