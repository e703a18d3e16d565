package nfs4state

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// graceState is the grace period of RFC 8881 §8.4.2.1: from New until GraceTime has passed
// or every client the previous instance listed has sent RECLAIM_COMPLETE, only reclaims
// (OPEN with CLAIM_PREVIOUS, LOCK with reclaim) are allowed.
type graceState struct {
	end     time.Time
	over    bool
	prev    map[string]struct{} // owners the previous instance confirmed
	pending map[string]struct{} // of those, the ones that have not sent RECLAIM_COMPLETE
}

func (g *graceState) start(now time.Time, d time.Duration, prev []string) {
	g.end = now.Add(d)
	g.prev = make(map[string]struct{}, len(prev))
	g.pending = make(map[string]struct{}, len(prev))
	for _, o := range prev {
		g.prev[o] = struct{}{}
		g.pending[o] = struct{}{}
	}
	g.over = len(prev) == 0
}

func (g *graceState) active(now time.Time) bool { return !g.over && now.Before(g.end) }

// endIfOver ends the grace period if its time has passed; it reports whether it just did.
func (g *graceState) endIfOver(now time.Time) bool {
	if g.over || now.Before(g.end) {
		return false
	}
	g.finish()
	return true
}

func (g *graceState) finish() {
	g.over = true
	g.pending = nil
}

func (g *graceState) listed(owner string) bool {
	_, ok := g.prev[owner]
	return ok && !g.over
}

// reclaimDone notes a listed client's RECLAIM_COMPLETE; it reports whether that ended
// the grace period.
func (g *graceState) reclaimDone(owner string) bool {
	if g.over {
		return false
	}
	delete(g.pending, owner)
	if len(g.pending) == 0 {
		g.finish()
		return true
	}
	return false
}

func (m *Manager) inGraceLocked(now time.Time) bool { return m.grace.active(now) }

// InGrace reports whether the grace period is in effect.
func (m *Manager) InGrace() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inGraceLocked(m.now())
}

// checkReclaimLocked judges a request against the grace period: a reclaim is allowed only
// in grace (else NFS4ERR_NO_GRACE), by a client of the previous instance (else
// NFS4ERR_RECLAIM_BAD) that has not sent RECLAIM_COMPLETE (else NFS4ERR_NO_GRACE); any
// other request that creates state gets NFS4ERR_GRACE during grace, and also after it
// from a client that has not sent RECLAIM_COMPLETE: RFC 8881 §18.51.3, "If non-reclaim
// locking operations are done before the RECLAIM_COMPLETE, an NFS4ERR_GRACE error will
// be returned" (knfsd answers so to OPEN, whether in grace or not).
func (m *Manager) checkReclaimLocked(c *client, reclaim bool) nfs4.Status {
	in := m.inGraceLocked(m.now())
	if !reclaim {
		if in || !c.reclaimComplete {
			return nfs4.ErrGrace
		}
		return nfs4.OK
	}
	if !in || c.reclaimComplete {
		return nfs4.ErrNoGrace
	}
	if !c.mayReclaim {
		return nfs4.ErrReclaimBad
	}
	return nfs4.OK
}

// ReclaimComplete implements RECLAIM_COMPLETE (RFC 8881 §18.51). With rca_one_fs false it
// records that the client has reclaimed all it will (a second time gets
// NFS4ERR_COMPLETE_ALREADY), which every client must do before its first non-reclaim
// OPEN or LOCK; once every client of the previous instance has, the grace period ends. With rca_one_fs true it is accepted and changes nothing (this server has
// one file system namespace for reclaim purposes). An unknown client gets
// NFS4ERR_STALE_CLIENTID.
func (m *Manager) ReclaimComplete(clientID uint64, oneFS bool) nfs4.Status {
	m.mu.Lock()
	c, st := m.clientLocked(clientID)
	if st != nfs4.OK {
		m.mu.Unlock()
		return st
	}
	if oneFS {
		m.mu.Unlock()
		return nfs4.OK
	}
	if c.reclaimComplete {
		m.mu.Unlock()
		return nfs4.ErrCompleteAlready
	}
	c.reclaimComplete = true
	ended := false
	if c.mayReclaim {
		ended = m.grace.reclaimDone(c.owner)
		if ended {
			m.opts.Logger.Info("nfs4 grace period over: every client reclaimed")
		}
	}
	snap := m.snapshotIfStoredLocked(ended)
	m.mu.Unlock()
	m.persist(snap)
	return nfs4.OK
}
