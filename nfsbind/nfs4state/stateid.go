package nfs4state

import (
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// FileKey identifies a file for share reservations and locks; the server fills it from
// the file's identity so that every handle of one file gives the same key.
type FileKey struct {
	Dev, Ino, Gen uint64
}

type stateKind uint8

const (
	kindOpen stateKind = iota + 1
	kindLock
)

// stateid is an open or lock stateid (RFC 8881 §8.2) and what it stands for.
type stateid struct {
	kind   stateKind
	seq    uint32
	other  [nfs4.OtherSize]byte
	client *client
	owner  *stateOwner
	file   *file

	// Open stateids: the union of the share access and deny of the OPENs done by the
	// open-owner on the file, the distinct (access, deny) pairs of those OPENs (bit
	// access<<2|deny, as sharePair; after an OPEN_DOWNGRADE those of the OPENs it kept),
	// and the lock stateids opened from it.
	access, deny uint32
	opened       uint16
	locks        []*stateid

	// Lock stateids: the open stateid they came from and the lock-owner's ranges on the
	// file, sorted by start and never overlapping.
	open   *stateid
	ranges []lockRange

	// revoked stateids (RevokeClient, RevokeFile) hold nothing and are linked from no
	// file or owner; they wait in the tables for FREE_STATEID.
	revoked bool
}

func (st *stateid) wire() nfs4.Stateid4 { return nfs4.Stateid4{Seqid: st.seq, Other: st.other} }

// bump advances the stateid's seqid after a change of its state, skipping 0 (which
// means "current" in requests).
func (st *stateid) bump() {
	st.seq++
	if st.seq == 0 {
		st.seq = 1
	}
}

// stateOwner is an open-owner or lock-owner (RFC 8881 §2.4.2 state_owner4).
type stateOwner struct {
	client   *client
	owner    string
	lock     bool
	stateids map[FileKey]*stateid // one stateid per file
	nlocks   int                  // lock-owners: ranges held over all files
}

// file is the state kept per file: its open and lock stateids.
type file struct {
	key   FileKey
	opens map[*stateid]struct{}
	locks map[*stateid]struct{}
}

// Special stateids (RFC 8881 §8.2.3).
var (
	// AnonymousStateid is the all-zeros stateid: I/O without an open, subject to share
	// reservations.
	AnonymousStateid = nfs4.Stateid4{}
	// BypassStateid is the all-ones stateid: READ that bypasses share reservations.
	BypassStateid = nfs4.Stateid4{Seqid: ^uint32(0), Other: [nfs4.OtherSize]byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	// CurrentStateid is seqid 1 with other all zeros: "the current stateid" of the
	// COMPOUND. The server substitutes it before calling the Manager, which treats it as
	// bad.
	CurrentStateid = nfs4.Stateid4{Seqid: 1}
	// InvalidStateid is seqid 0xffffffff with other all zeros: never valid; CLOSE returns it.
	InvalidStateid = nfs4.Stateid4{Seqid: ^uint32(0)}
)

// IsSpecial reports whether sid's other field is all zeros or all ones, the patterns
// reserved for special stateids.
func IsSpecial(sid nfs4.Stateid4) bool {
	return sid.Other == AnonymousStateid.Other || sid.Other == BypassStateid.Other
}

// lookupLocked finds the stateid the client c names with sid (not a special one):
// NFS4ERR_STALE_STATEID when it comes from another server instance; NFS4ERR_EXPIRED when
// its client's lease expired; NFS4ERR_BAD_STATEID when it is unknown, of the wrong kind
// (kind 0 accepts both) or belongs to another client; NFS4ERR_OLD_STATEID for a seqid
// below the current one and NFS4ERR_BAD_STATEID above it; NFS4ERR_ADMIN_REVOKED when it
// was revoked. Seqid 0 means the current one
// (RFC 8881 §8.2.2).
func (m *Manager) lookupLocked(c *client, sid nfs4.Stateid4, kind stateKind) (*stateid, nfs4.Status) {
	if IsSpecial(sid) {
		return nil, nfs4.ErrBadStateid
	}
	if binary.BigEndian.Uint32(sid.Other[0:4]) != m.epoch {
		return nil, nfs4.ErrStaleStateid
	}
	st := m.stateids[sid.Other]
	if st == nil {
		if _, ok := m.expired[binary.BigEndian.Uint32(sid.Other[4:8])]; ok {
			return nil, nfs4.ErrExpired
		}
		return nil, nfs4.ErrBadStateid
	}
	if st.client != c || (kind != 0 && st.kind != kind) {
		return nil, nfs4.ErrBadStateid
	}
	if st.revoked {
		return nil, nfs4.ErrAdminRevoked
	}
	if sid.Seqid != 0 && sid.Seqid != st.seq {
		if int32(sid.Seqid-st.seq) > 0 {
			return nil, nfs4.ErrBadStateid
		}
		return nil, nfs4.ErrOldStateid
	}
	return st, nfs4.OK
}

func (m *Manager) fileLocked(key FileKey) *file {
	f := m.files[key]
	if f == nil {
		f = &file{key: key, opens: make(map[*stateid]struct{}), locks: make(map[*stateid]struct{})}
		m.files[key] = f
	}
	return f
}

func (m *Manager) releaseFileLocked(f *file) {
	if len(f.opens) == 0 && len(f.locks) == 0 {
		delete(m.files, f.key)
	}
}

// ownerLocked finds or creates a client's open- or lock-owner; nil when the client's
// owner table is full.
func (m *Manager) ownerLocked(c *client, owner []byte, lock bool) *stateOwner {
	tab := c.openOwners
	if lock {
		tab = c.lockOwners
	}
	if o := tab[string(owner)]; o != nil {
		return o
	}
	if len(c.openOwners)+len(c.lockOwners) >= m.opts.MaxStateOwnersPerClient {
		return nil
	}
	o := &stateOwner{client: c, owner: string(owner), lock: lock, stateids: make(map[FileKey]*stateid)}
	tab[o.owner] = o
	return o
}

func (m *Manager) releaseOwnerLocked(o *stateOwner) {
	if len(o.stateids) > 0 {
		return
	}
	if o.lock {
		delete(o.client.lockOwners, o.owner)
	} else {
		delete(o.client.openOwners, o.owner)
	}
}

// roomLocked reports whether c may have one more stateid.
func (m *Manager) roomLocked(c *client) bool {
	return len(m.stateids) < m.opts.MaxStateids && c.nstateids < m.opts.MaxStateidsPerClient
}

// newStateidLocked creates a stateid with seqid 0; the caller bumps it when it is granted.
func (m *Manager) newStateidLocked(kind stateKind, o *stateOwner, f *file) *stateid {
	c := o.client
	st := &stateid{kind: kind, other: m.newOther(c), client: c, owner: o, file: f}
	m.stateids[st.other] = st
	c.nstateids++
	o.stateids[f.key] = st
	if kind == kindOpen {
		f.opens[st] = struct{}{}
	} else {
		f.locks[st] = struct{}{}
	}
	return st
}

func (m *Manager) dropStateidLocked(st *stateid) {
	delete(m.stateids, st.other)
	st.client.nstateids--
	m.detachLocked(st)
}

// detachLocked removes a stateid from its owner and its file and releases both (a
// dropped stateid and a revoked one alike).
func (m *Manager) detachLocked(st *stateid) {
	if st.owner.stateids[st.file.key] == st {
		delete(st.owner.stateids, st.file.key)
	}
	if st.kind == kindOpen {
		delete(st.file.opens, st)
	} else {
		delete(st.file.locks, st)
	}
	m.releaseFileLocked(st.file)
	m.releaseOwnerLocked(st.owner)
}

// TestStateid implements TEST_STATEID (RFC 8881 §18.48): it writes the status of each
// stateid of sids, as the client clientID would see it used, into the matching element
// of out (which must be as long): NFS4_OK, NFS4ERR_BAD_STATEID (special stateids, and
// those of another instance or client), NFS4ERR_OLD_STATEID, NFS4ERR_EXPIRED or
// NFS4ERR_ADMIN_REVOKED.
func (m *Manager) TestStateid(clientID uint64, sids []nfs4.Stateid4, out []nfs4.Status) nfs4.Status {
	if len(out) < len(sids) {
		return nfs4.ErrInval
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		return st
	}
	for i, sid := range sids {
		_, st := m.lookupLocked(c, sid, 0)
		if st == nfs4.ErrStaleStateid {
			st = nfs4.ErrBadStateid
		}
		out[i] = st
	}
	return nfs4.OK
}

// FreeStateid implements FREE_STATEID (RFC 8881 §18.38): a lock stateid whose lock-owner
// holds no lock on the file is freed; one with locks gets NFS4ERR_LOCKS_HELD, and so does
// an open stateid (CLOSE frees those). A revoked stateid is freed. The seqid is not
// judged. Unknown stateids get NFS4ERR_BAD_STATEID (or NFS4ERR_EXPIRED).
func (m *Manager) FreeStateid(clientID uint64, sid nfs4.Stateid4) nfs4.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		return st
	}
	sid.Seqid = 0
	s, st := m.lookupLocked(c, sid, 0)
	if st == nfs4.ErrAdminRevoked {
		m.freeRevokedLocked(m.stateids[sid.Other])
		return nfs4.OK
	}
	if st == nfs4.ErrStaleStateid {
		st = nfs4.ErrBadStateid
	}
	if st != nfs4.OK {
		return st
	}
	if s.kind == kindOpen || len(s.ranges) > 0 {
		return nfs4.ErrLocksHeld
	}
	m.freeLockStateidLocked(s)
	return nfs4.OK
}

// CheckIO judges the stateid of a READ (write false), WRITE or SETATTR of the size (write
// true) on file by client clientID (RFC 8881 §8.2.2, §9.1.3):
//
//   - the anonymous stateid (all zeros), and the bypass stateid (all ones) for writes, get
//     NFS4ERR_GRACE during the grace period and NFS4ERR_LOCKED when an OPEN of the file
//     denies the access; the bypass stateid for reads is always allowed;
//   - other special stateids get NFS4ERR_BAD_STATEID;
//   - an open or lock stateid must be the client's, current (seqid 0 or the current
//     seqid) and for this file (else the lookup errors above, or NFS4ERR_BAD_STATEID);
//     writes need an open with write access (else NFS4ERR_OPENMODE); reads are allowed
//     with any open, as a client with a write-only open may read to fill its cache.
//
// Byte-range locks are advisory: CheckIO never returns NFS4ERR_LOCKED for them.
func (m *Manager) CheckIO(clientID uint64, sid nfs4.Stateid4, key FileKey, write bool) nfs4.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	if IsSpecial(sid) {
		switch sid {
		case BypassStateid:
			if !write {
				return nfs4.OK
			}
		case AnonymousStateid:
		default:
			return nfs4.ErrBadStateid
		}
		if m.inGraceLocked(m.now()) {
			return nfs4.ErrGrace
		}
		deny := nfs4.ShareDenyRead
		if write {
			deny = nfs4.ShareDenyWrite
		}
		if f := m.files[key]; f != nil {
			for o := range f.opens {
				if o.deny&deny != 0 {
					return nfs4.ErrLocked
				}
			}
		}
		return nfs4.OK
	}
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		return st
	}
	s, st := m.lookupLocked(c, sid, 0)
	if st != nfs4.OK {
		return st
	}
	if s.file.key != key {
		return nfs4.ErrBadStateid
	}
	open := s
	if s.kind == kindLock {
		open = s.open
	}
	if write && open.access&nfs4.ShareAccessWrite == 0 {
		return nfs4.ErrOpenmode
	}
	return nfs4.OK
}
