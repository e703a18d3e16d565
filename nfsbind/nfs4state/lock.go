package nfs4state

import (
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// lockRange is a byte range [start, end] (end inclusive; ^uint64(0) reaches end of file)
// held with a lock type (read or write).
type lockRange struct {
	start, end uint64
	write      bool
}

func (r lockRange) overlaps(start, end uint64) bool { return r.start <= end && start <= r.end }

// toEOF is the length meaning "to the end of the file" (NFS4_UINT64_MAX).
const toEOF = ^uint64(0)

// rangeOf converts an (offset, length) of LOCK, LOCKT or LOCKU into an inclusive range:
// a zero length, or one reaching past 2^64-1 other than NFS4_UINT64_MAX, gets
// NFS4ERR_INVAL (RFC 8881 §18.10.3).
func rangeOf(offset, length uint64) (start, end uint64, st nfs4.Status) {
	switch {
	case length == 0:
		return 0, 0, nfs4.ErrInval
	case length == toEOF:
		return offset, toEOF, nfs4.OK
	case length > toEOF-offset:
		return 0, 0, nfs4.ErrInval
	}
	return offset, offset + length - 1, nfs4.OK
}

// LockDenied is LOCK4denied: the lock that conflicts with a request.
type LockDenied struct {
	Offset, Length uint64
	Type           nfs4.LockType
	ClientID       uint64 // the lock owner's client
	Owner          []byte // the lock owner (a copy)
}

func deniedBy(st *stateid, r lockRange) *LockDenied {
	d := &LockDenied{Offset: r.start, Type: nfs4.ReadLT, ClientID: st.client.id, Owner: []byte(st.owner.owner)}
	if r.write {
		d.Type = nfs4.WriteLT
	}
	if r.end == toEOF {
		d.Length = toEOF
	} else {
		d.Length = r.end - r.start + 1
	}
	return d
}

// conflictLocked returns the first lock on f, of an owner other than self, that conflicts
// with [start, end] of the given type, or nil.
func conflictLocked(f *file, self *stateOwner, start, end uint64, write bool) *LockDenied {
	if f == nil {
		return nil
	}
	for st := range f.locks {
		if st.owner == self {
			continue
		}
		for _, r := range st.ranges {
			if r.start > end {
				break
			}
			if r.overlaps(start, end) && (write || r.write) {
				return deniedBy(st, r)
			}
		}
	}
	return nil
}

// LockArgs are LOCK4args with the file resolved.
type LockArgs struct {
	ClientID uint64
	File     FileKey
	Type     nfs4.LockType // READ_LT, WRITE_LT, or the blocking forms (handled as non-blocking)
	Reclaim  bool
	Offset   uint64
	Length   uint64
	// NewLockOwner selects open_to_lock_owner4: OpenStateid and Owner name the open and
	// the lock-owner; otherwise exist_lock_owner4: LockStateid. The seqids inside them
	// are not used in v4.1.
	NewLockOwner bool
	OpenStateid  nfs4.Stateid4
	Owner        []byte
	LockStateid  nfs4.Stateid4
}

// Lock implements LOCK (RFC 8881 §18.10, §9): POSIX-style advisory byte-range locks. A lock
// conflicts with a lock of another lock-owner on an overlapping range when either is a
// write lock: the answer is NFS4ERR_DENIED and the conflicting lock's range, type and
// owner. The lock-owner's own locks are replaced where the new one overlaps them (an
// upgrade or downgrade), split where it lies inside, and merged with adjacent or
// overlapping locks of the same type. The lock stateid is one per (lock-owner, file): a
// new lock-owner gets a stateid derived from its open stateid (an existing one is reused),
// and every granted LOCK advances its seqid.
//
// A read lock needs an open with read access and a write lock one with write access (else
// NFS4ERR_OPENMODE). Grace rules as for Open (NFS4ERR_GRACE, NFS4ERR_NO_GRACE,
// NFS4ERR_RECLAIM_BAD). An invalid range or type gets NFS4ERR_INVAL; more than
// MaxLocksPerOwner ranges, or full tables, NFS4ERR_DELAY.
func (m *Manager) Lock(a *LockArgs) (nfs4.Stateid4, *LockDenied, nfs4.Status) {
	start, end, st := rangeOf(a.Offset, a.Length)
	if st != nfs4.OK || !a.Type.Valid() || len(a.Owner) > nfs4.OpaqueLimit {
		return nfs4.Stateid4{}, nil, nfs4.ErrInval
	}
	write := a.Type == nfs4.WriteLT || a.Type == nfs4.WritewLT
	m.mu.Lock()
	defer m.mu.Unlock()
	c, st := m.clientLocked(a.ClientID)
	if st != nfs4.OK {
		return nfs4.Stateid4{}, nil, st
	}
	if st := m.checkReclaimLocked(c, a.Reclaim); st != nfs4.OK {
		return nfs4.Stateid4{}, nil, st
	}
	var ls, open *stateid
	var owner *stateOwner
	if a.NewLockOwner {
		open, st = m.lookupLocked(c, a.OpenStateid, kindOpen)
		if st != nfs4.OK {
			return nfs4.Stateid4{}, nil, st
		}
		if o := c.lockOwners[string(a.Owner)]; o != nil {
			owner = o
			ls = o.stateids[a.File]
		}
	} else {
		ls, st = m.lookupLocked(c, a.LockStateid, kindLock)
		if st != nfs4.OK {
			return nfs4.Stateid4{}, nil, st
		}
		open, owner = ls.open, ls.owner
	}
	if open.file.key != a.File {
		return nfs4.Stateid4{}, nil, nfs4.ErrBadStateid
	}
	need := nfs4.ShareAccessRead
	if write {
		need = nfs4.ShareAccessWrite
	}
	if open.access&need == 0 {
		return nfs4.Stateid4{}, nil, nfs4.ErrOpenmode
	}
	if d := conflictLocked(open.file, owner, start, end, write); d != nil {
		return nfs4.Stateid4{}, d, nfs4.ErrDenied
	}
	var have []lockRange
	if ls != nil {
		have = ls.ranges
	}
	ranges := setRange(have, lockRange{start: start, end: end, write: write})
	nlocks := len(ranges) - len(have)
	if owner != nil {
		nlocks += owner.nlocks
	}
	if nlocks > m.opts.MaxLocksPerOwner {
		return nfs4.Stateid4{}, nil, nfs4.ErrDelay
	}
	if ls == nil {
		if !m.roomLocked(c) {
			return nfs4.Stateid4{}, nil, nfs4.ErrDelay
		}
		if owner == nil {
			if owner = m.ownerLocked(c, a.Owner, true); owner == nil {
				return nfs4.Stateid4{}, nil, nfs4.ErrDelay
			}
		}
		ls = m.newStateidLocked(kindLock, owner, open.file)
		ls.open = open
		open.locks = append(open.locks, ls)
	}
	owner.nlocks += len(ranges) - len(ls.ranges)
	ls.ranges = ranges
	ls.bump()
	return ls.wire(), nil, nfs4.OK
}

// LockT implements LOCKT (RFC 8881 §18.11): it reports the first lock of another
// lock-owner that would conflict (NFS4ERR_DENIED with it), or NFS4_OK. The lock-owner is
// (clientID, owner); it need not exist. During the grace period it gets NFS4ERR_GRACE.
func (m *Manager) LockT(clientID uint64, key FileKey, typ nfs4.LockType, offset, length uint64, owner []byte) (*LockDenied, nfs4.Status) {
	start, end, st := rangeOf(offset, length)
	if st != nfs4.OK || !typ.Valid() {
		return nil, nfs4.ErrInval
	}
	write := typ == nfs4.WriteLT || typ == nfs4.WritewLT
	m.mu.Lock()
	defer m.mu.Unlock()
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		return nil, st
	}
	if m.inGraceLocked(m.now()) {
		return nil, nfs4.ErrGrace
	}
	if d := conflictLocked(m.files[key], c.lockOwners[string(owner)], start, end, write); d != nil {
		return d, nfs4.ErrDenied
	}
	return nil, nfs4.OK
}

// LockU implements LOCKU (RFC 8881 §18.12): it unlocks [offset, offset+length) of the
// lock-owner's locks on the file (the lock type is not judged), splitting a lock that
// extends on both sides, and advances the lock stateid's seqid. Unlocking what is not
// locked succeeds. A split beyond MaxLocksPerOwner ranges gets NFS4ERR_LOCK_RANGE.
func (m *Manager) LockU(clientID uint64, sid nfs4.Stateid4, key FileKey, typ nfs4.LockType, offset, length uint64) (nfs4.Stateid4, nfs4.Status) {
	start, end, st := rangeOf(offset, length)
	if st != nfs4.OK || !typ.Valid() {
		return nfs4.Stateid4{}, nfs4.ErrInval
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		return nfs4.Stateid4{}, st
	}
	ls, st := m.lookupLocked(c, sid, kindLock)
	if st != nfs4.OK {
		return nfs4.Stateid4{}, st
	}
	if ls.file.key != key {
		return nfs4.Stateid4{}, nfs4.ErrBadStateid
	}
	ranges := clearRange(ls.ranges, start, end)
	grow := len(ranges) - len(ls.ranges)
	if grow > 0 && ls.owner.nlocks+grow > m.opts.MaxLocksPerOwner {
		return nfs4.Stateid4{}, nfs4.ErrLockRange
	}
	ls.owner.nlocks += grow
	ls.ranges = ranges
	ls.bump()
	return ls.wire(), nfs4.OK
}

// freeLockStateidLocked drops a lock stateid and its locks.
func (m *Manager) freeLockStateidLocked(ls *stateid) {
	ls.owner.nlocks -= len(ls.ranges)
	ls.ranges = nil
	if o := ls.open; o != nil {
		for i, l := range o.locks {
			if l == ls {
				o.locks = append(o.locks[:i], o.locks[i+1:]...)
				break
			}
		}
	}
	m.dropStateidLocked(ls)
}

// clearRange returns ranges (sorted, disjoint) without [start, end], in a new slice.
func clearRange(ranges []lockRange, start, end uint64) []lockRange {
	out := make([]lockRange, 0, len(ranges)+1)
	for _, r := range ranges {
		if !r.overlaps(start, end) {
			out = append(out, r)
			continue
		}
		if r.start < start {
			out = append(out, lockRange{start: r.start, end: start - 1, write: r.write})
		}
		if r.end > end {
			out = append(out, lockRange{start: end + 1, end: r.end, write: r.write})
		}
	}
	return out
}

// setRange returns ranges with n replacing what it overlaps, merged with neighbours of the
// same type that overlap or touch it, in a new sorted, disjoint slice.
func setRange(ranges []lockRange, n lockRange) []lockRange {
	cleared := clearRange(ranges, n.start, n.end)
	out := make([]lockRange, 0, len(cleared)+1)
	for _, r := range cleared {
		if r.write == n.write && (r.end+1 == n.start && r.end != toEOF || n.end+1 == r.start && n.end != toEOF) {
			n.start = min(n.start, r.start)
			n.end = max(n.end, r.end)
			continue
		}
		out = append(out, r)
	}
	i := 0
	for i < len(out) && out[i].start < n.start {
		i++
	}
	out = append(out, lockRange{})
	copy(out[i+1:], out[i:])
	out[i] = n
	return out
}
