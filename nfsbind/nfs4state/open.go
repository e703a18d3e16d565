package nfs4state

import (
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// OpenArgs are the parts of OPEN4args the Manager judges, the file already resolved.
type OpenArgs struct {
	ClientID uint64
	Owner    []byte         // open_owner4.owner (its clientid is the session's in v4.1)
	File     FileKey        // the file opened (or created)
	Access   uint32         // share_access; the OPEN4_SHARE_ACCESS_WANT_* bits are ignored
	Deny     uint32         // share_deny
	Claim    nfs4.ClaimType // CLAIM_NULL, CLAIM_FH, CLAIM_PREVIOUS (a reclaim); delegation claims are refused
}

// shareWantBits are share_access bits that express delegation wishes, not access.
const shareWantBits = nfs4.ShareAccessWantDelegMask | nfs4.ShareAccessWantSignalDelegWhenResrcAvail |
	nfs4.ShareAccessWantPushDelegWhenUncontended

func validShare(access, deny uint32) bool {
	access &^= shareWantBits
	return access >= nfs4.ShareAccessRead && access <= nfs4.ShareAccessBoth && deny <= nfs4.ShareDenyBoth
}

// Open records an OPEN (RFC 8881 §18.16, §9.7): it returns the open stateid of (open-owner,
// file), new with seqid 1, or, when the owner has the file open already, the same stateid
// with the union of the share access and deny and its seqid advanced (an upgrade). It
// refuses, with NFS4ERR_SHARE_DENIED, access that another open-owner's OPEN of the file
// denies and a deny of access another open-owner has. During the grace period, and
// before the client's RECLAIM_COMPLETE (RFC 8881 §18.51.3), only CLAIM_PREVIOUS is
// allowed (else NFS4ERR_GRACE); CLAIM_PREVIOUS is refused outside it and after
// RECLAIM_COMPLETE (NFS4ERR_NO_GRACE) and for clients the previous instance did not
// know (NFS4ERR_RECLAIM_BAD). Delegation claims get NFS4ERR_BAD_STATEID
// (CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH: this server grants no delegations) or
// NFS4ERR_NOTSUPP (CLAIM_DELEGATE_PREV, CLAIM_DELEG_PREV_FH). Access or deny values
// outside the protocol's get NFS4ERR_INVAL; full owner or stateid tables NFS4ERR_DELAY.
func (m *Manager) Open(a OpenArgs) (nfs4.Stateid4, nfs4.Status) {
	sid, _, st := m.OpenUndoable(a)
	return sid, st
}

// OpenUndo is what UndoOpen needs to take back one Open; the zero value takes back
// nothing.
type OpenUndo struct {
	s            *stateid
	seq          uint32 // the seqid the Open gave s
	created      bool   // the Open created s
	prevSeq      uint32 // s's seqid, access, deny and OPENs before the Open (an upgrade)
	access, deny uint32
	opened       uint16
}

// OpenUndoable is Open, and also returns what UndoOpen needs to take the OPEN back:
// for a server whose OPEN has more to do once the share reservation is granted (the
// truncation its createattrs ask for), and which must answer an error, with no open
// state left, when that fails.
func (m *Manager) OpenUndoable(a OpenArgs) (nfs4.Stateid4, OpenUndo, nfs4.Status) {
	access, reclaim, st := openClaim(&a)
	if st != nfs4.OK {
		return nfs4.Stateid4{}, OpenUndo{}, st
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, cur, st := m.judgeOpenLocked(&a, access, reclaim)
	if st != nfs4.OK {
		return nfs4.Stateid4{}, OpenUndo{}, st
	}
	var u OpenUndo
	if cur == nil {
		if !m.roomLocked(c) {
			return nfs4.Stateid4{}, OpenUndo{}, nfs4.ErrDelay
		}
		o := m.ownerLocked(c, a.Owner, false)
		if o == nil {
			return nfs4.Stateid4{}, OpenUndo{}, nfs4.ErrDelay
		}
		cur = m.newStateidLocked(kindOpen, o, m.fileLocked(a.File))
		u.created = true
	}
	u.s, u.prevSeq, u.access, u.deny, u.opened = cur, cur.seq, cur.access, cur.deny, cur.opened
	cur.access |= access
	cur.deny |= a.Deny
	cur.opened |= sharePair(access, a.Deny)
	cur.bump()
	u.seq = cur.seq
	return cur.wire(), u, nfs4.OK
}

// CheckOpen answers as Open(a) would now, and records nothing: the share values, the
// claim, the client, the grace period and RECLAIM_COMPLETE, the share reservations of
// a.File and the room for a new open stateid. A server that creates the file of an
// OPEN4_CREATE calls it first, with the key of the file the name holds, or the zero
// FileKey when it holds none, so that an OPEN refused for any of these creates
// nothing (a refused OPEN has no effect: RFC 8881 §8.4.2.1 refuses new OPENs during
// the grace period). Open judges again: the state may change in between.
func (m *Manager) CheckOpen(a OpenArgs) nfs4.Status {
	access, reclaim, st := openClaim(&a)
	if st != nfs4.OK {
		return st
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, cur, st := m.judgeOpenLocked(&a, access, reclaim)
	switch {
	case st != nfs4.OK:
		return st
	case cur != nil:
		return nfs4.OK
	case !m.roomLocked(c):
		return nfs4.ErrDelay
	case c.openOwners[string(a.Owner)] == nil && len(c.openOwners)+len(c.lockOwners) >= m.opts.MaxStateOwnersPerClient:
		return nfs4.ErrDelay
	}
	return nfs4.OK
}

// openClaim checks the share values, the owner's length and the claim of an OPEN,
// and returns its share access without the want bits and whether it is a reclaim.
func openClaim(a *OpenArgs) (access uint32, reclaim bool, st nfs4.Status) {
	if !validShare(a.Access, a.Deny) || len(a.Owner) > nfs4.OpaqueLimit {
		return 0, false, nfs4.ErrInval
	}
	switch a.Claim {
	case nfs4.ClaimNull, nfs4.ClaimFH:
	case nfs4.ClaimPrevious:
		reclaim = true
	case nfs4.ClaimDelegateCur, nfs4.ClaimDelegCurFH:
		return 0, false, nfs4.ErrBadStateid
	case nfs4.ClaimDelegatePrev, nfs4.ClaimDelegPrevFH:
		return 0, false, nfs4.ErrNotsupp
	default:
		return 0, false, nfs4.ErrInval
	}
	return a.Access &^ shareWantBits, reclaim, nfs4.OK
}

// judgeOpenLocked judges an OPEN against the client, the grace period and the other
// open-owners' share reservations of the file, and returns the client and the
// owner's open stateid of the file, nil when it has none.
func (m *Manager) judgeOpenLocked(a *OpenArgs, access uint32, reclaim bool) (*client, *stateid, nfs4.Status) {
	c, st := m.clientLocked(a.ClientID)
	if st != nfs4.OK {
		return nil, nil, st
	}
	if st := m.checkReclaimLocked(c, reclaim); st != nfs4.OK {
		return nil, nil, st
	}
	var cur *stateid
	if o := c.openOwners[string(a.Owner)]; o != nil {
		cur = o.stateids[a.File]
	}
	if f := m.files[a.File]; f != nil {
		for other := range f.opens {
			if other == cur {
				continue
			}
			if access&other.deny != 0 || a.Deny&other.access != 0 {
				return nil, nil, nfs4.ErrShareDenied
			}
		}
	}
	return c, cur, nfs4.OK
}

// UndoOpen takes back the OPEN that OpenUndoable granted with u: an open stateid it
// created is closed, an upgrade is reverted (share access and deny, and seqid, which
// the client never saw). An open stateid that changed since (another OPEN, an
// OPEN_DOWNGRADE, CLOSE, revocation or expiry) is left as it is. UndoOpen reports
// whether it took the OPEN back.
func (m *Manager) UndoOpen(u OpenUndo) bool {
	if u.s == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := u.s
	if s.revoked || m.stateids[s.other] != s || s.seq != u.seq {
		return false
	}
	if u.created {
		m.closeLocked(s)
		return true
	}
	s.seq, s.access, s.deny, s.opened = u.prevSeq, u.access, u.deny, u.opened
	return true
}

// OpenDowngrade implements OPEN_DOWNGRADE (RFC 8881 §18.18): the open's share access and
// deny become the given ones, which must be the union of the share access and deny of
// some of the open-owner's OPENs of the file that are in effect (else NFS4ERR_INVAL),
// and its seqid advances. The OPENs it keeps are those whose access and deny lie within
// the new ones, which later downgrades are judged against. sid must be the client's
// open stateid for file.
//
// RFC 8881 §18.18.3 states the rule for share_access and share_deny each; a pair taken
// from two different sets of OPENs (the access of one, the deny of another) stands for
// no set of OPENs the client may keep, and is refused too. knfsd (st_access_bmap,
// st_deny_bmap) judges access and deny apart, and each against the values single OPENs
// had rather than their unions; a Linux client, which opens with
// OPEN4_SHARE_DENY_NONE and downgrades to the access of the opens it still has, meets
// neither difference.
func (m *Manager) OpenDowngrade(clientID uint64, sid nfs4.Stateid4, key FileKey, access, deny uint32) (nfs4.Stateid4, nfs4.Status) {
	if !validShare(access, deny) {
		return nfs4.Stateid4{}, nfs4.ErrInval
	}
	access &^= shareWantBits
	m.mu.Lock()
	defer m.mu.Unlock()
	s, st := m.openStateidLocked(clientID, sid, key)
	if st != nfs4.OK {
		return nfs4.Stateid4{}, st
	}
	kept, a, d := keptOpens(s.opened, access, deny)
	if a != access || d != deny {
		return nfs4.Stateid4{}, nfs4.ErrInval
	}
	s.access, s.deny, s.opened = access, deny, kept
	s.bump()
	return s.wire(), nfs4.OK
}

// sharePair is the bit of the opened set of an open stateid that stands for OPENs with
// share access access (1 to 3) and share deny deny (0 to 3).
func sharePair(access, deny uint32) uint16 { return 1 << (access<<2 | deny) }

// keptOpens returns, of the (access, deny) pairs in opened, those within access and
// deny, and the union of their access and of their deny.
func keptOpens(opened uint16, access, deny uint32) (kept uint16, a, d uint32) {
	for i := uint32(4); i < 16; i++ {
		pa, pd := i>>2, i&3
		if opened&(1<<i) != 0 && pa&^access == 0 && pd&^deny == 0 {
			kept |= 1 << i
			a |= pa
			d |= pd
		}
	}
	return kept, a, d
}

// Close implements CLOSE (RFC 8881 §18.2): it ends the open, releasing its share
// reservation and the lock stateids (and locks) that came from it, and returns the
// special invalid stateid, as RFC 8881 recommends for v4.1.
func (m *Manager) Close(clientID uint64, sid nfs4.Stateid4, key FileKey) (nfs4.Stateid4, nfs4.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, st := m.openStateidLocked(clientID, sid, key)
	if st != nfs4.OK {
		return nfs4.Stateid4{}, st
	}
	m.closeLocked(s)
	return InvalidStateid, nfs4.OK
}

func (m *Manager) openStateidLocked(clientID uint64, sid nfs4.Stateid4, key FileKey) (*stateid, nfs4.Status) {
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		return nil, st
	}
	s, st := m.lookupLocked(c, sid, kindOpen)
	if st != nfs4.OK {
		return nil, st
	}
	if s.file.key != key {
		return nil, nfs4.ErrBadStateid
	}
	return s, nfs4.OK
}

func (m *Manager) closeLocked(s *stateid) {
	locks := s.locks
	s.locks = nil
	for _, l := range locks {
		m.freeLockStateidLocked(l)
	}
	m.dropStateidLocked(s)
}
