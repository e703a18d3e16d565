package nfs4state

import (
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// RevokeClient revokes every open and lock of a client (an administrator's decision, RFC
// 8881 §8.2.1): their share reservations and locks are released at once, while the
// stateids stay known, answering NFS4ERR_ADMIN_REVOKED (TEST_STATEID too), until the
// client frees each with FREE_STATEID; meanwhile its SEQUENCE replies carry
// SEQ4_STATUS_ADMIN_STATE_REVOKED. It returns the number of stateids revoked, or
// NFS4ERR_STALE_CLIENTID for an unknown client.
func (m *Manager) RevokeClient(clientID uint64) (int, nfs4.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		return 0, st
	}
	n := 0
	for _, o := range c.openOwners {
		for _, s := range o.stateids {
			n += m.revokeOpenLocked(s)
		}
	}
	return n, nfs4.OK
}

// RevokeFile revokes every open and lock of a file, as RevokeClient does for a client:
// for a file that an administrator takes away (an export withdrawn, a file system
// unmounted). It returns the number of stateids revoked.
func (m *Manager) RevokeFile(key FileKey) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.files[key]
	if f == nil {
		return 0
	}
	n := 0
	for s := range f.opens {
		n += m.revokeOpenLocked(s)
	}
	return n
}

// revokeOpenLocked revokes an open stateid and the lock stateids that came from it.
func (m *Manager) revokeOpenLocked(s *stateid) int {
	locks := s.locks
	s.locks = nil
	for _, l := range locks {
		l.owner.nlocks -= len(l.ranges)
		l.ranges = nil
		m.revokeLocked(l)
	}
	m.revokeLocked(s)
	return 1 + len(locks)
}

// revokeLocked detaches a stateid from its file and owner, releasing what it held, and
// keeps it, revoked, in the stateid table (and the client's count) until FREE_STATEID.
func (m *Manager) revokeLocked(st *stateid) {
	m.detachLocked(st)
	st.revoked = true
	st.access, st.deny, st.opened = 0, 0, 0
	st.open = nil
	st.client.revoked[st] = struct{}{}
}

// freeRevokedLocked forgets a revoked stateid.
func (m *Manager) freeRevokedLocked(st *stateid) {
	delete(m.stateids, st.other)
	delete(st.client.revoked, st)
	st.client.nstateids--
}
