package nfs4state

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// checkInvariants verifies the Manager's tables against each other and against the
// bounds; it returns the first violation found.
func checkInvariants(m *Manager) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.opts
	if len(m.clients) > o.MaxClients {
		return fmt.Errorf("%d clients > MaxClients %d", len(m.clients), o.MaxClients)
	}
	if len(m.stateids) > o.MaxStateids {
		return fmt.Errorf("%d stateids > MaxStateids", len(m.stateids))
	}
	if len(m.confirmed)+len(m.unconfirmed) != len(m.clients) {
		return fmt.Errorf("%d confirmed + %d unconfirmed != %d clients", len(m.confirmed), len(m.unconfirmed), len(m.clients))
	}
	if len(m.expired) != len(m.expiredFIFO) || len(m.expired) > o.MaxClients {
		return fmt.Errorf("expired set %d, fifo %d", len(m.expired), len(m.expiredFIFO))
	}
	var cache int64
	nsess, nstateids := 0, 0
	for id, c := range m.clients {
		if c.id != id {
			return fmt.Errorf("client %x filed under %x", c.id, id)
		}
		tab := m.unconfirmed
		if c.confirmed {
			tab = m.confirmed
		}
		if tab[c.owner] != c {
			return fmt.Errorf("client %x not in its owner table", id)
		}
		if !c.confirmed && (len(c.sessions) > 0 || c.nstateids > 0) {
			return fmt.Errorf("unconfirmed client %x has state", id)
		}
		if len(c.sessions) > o.MaxSessionsPerClient {
			return fmt.Errorf("client %x has %d sessions", id, len(c.sessions))
		}
		if len(c.openOwners)+len(c.lockOwners) > o.MaxStateOwnersPerClient {
			return fmt.Errorf("client %x has %d owners", id, len(c.openOwners)+len(c.lockOwners))
		}
		if c.nstateids > o.MaxStateidsPerClient {
			return fmt.Errorf("client %x has %d stateids", id, c.nstateids)
		}
		inUse := 0
		for sid, s := range c.sessions {
			if m.sessions[sid] != s || s.client != c || s.dead {
				return fmt.Errorf("session %x of client %x not filed", sid, id)
			}
			if err := checkSecParms(s.cbSec); err != nil {
				return fmt.Errorf("session %x: %w", sid, err)
			}
			if len(s.slots) > o.MaxSlots || len(s.slots) == 0 {
				return fmt.Errorf("session with %d slots", len(s.slots))
			}
			if len(s.conns) > o.MaxConnsPerSession {
				return fmt.Errorf("session with %d connections", len(s.conns))
			}
			for i := range s.slots {
				if s.slots[i].inUse {
					inUse++
				}
				if len(s.slots[i].reply) > int(s.fore.MaxResponseSizeCached) {
					return fmt.Errorf("slot caches %d bytes > %d", len(s.slots[i].reply), s.fore.MaxResponseSizeCached)
				}
			}
			cache += s.reserved
			nsess++
		}
		if inUse != c.inFlight {
			return fmt.Errorf("client %x: %d slots in use, inFlight %d", id, inUse, c.inFlight)
		}
		n := 0
		for _, tab := range []map[string]*stateOwner{c.openOwners, c.lockOwners} {
			for name, ow := range tab {
				if ow.owner != name || ow.client != c || len(ow.stateids) == 0 {
					return fmt.Errorf("owner %q of client %x: bad or empty", name, id)
				}
				locks := 0
				for key, st := range ow.stateids {
					if st.revoked {
						return fmt.Errorf("owner %q links a revoked stateid", name)
					}
					if st.owner != ow || st.file.key != key || m.stateids[st.other] != st || st.client != c {
						return fmt.Errorf("stateid of owner %q not filed", name)
					}
					locks += len(st.ranges)
					n++
				}
				if ow.nlocks != locks || locks > o.MaxLocksPerOwner {
					return fmt.Errorf("owner %q counts %d locks, holds %d", name, ow.nlocks, locks)
				}
			}
		}
		for st := range c.revoked {
			if !st.revoked || st.client != c || m.stateids[st.other] != st || len(st.ranges) > 0 || st.locks != nil {
				return fmt.Errorf("revoked stateid of client %x: bad or not filed", id)
			}
			if st.owner.stateids[st.file.key] == st || st.file.opens != nil && hasKey(st.file.opens, st) || hasKey(st.file.locks, st) {
				return fmt.Errorf("revoked stateid still linked")
			}
			n++
		}
		if n != c.nstateids {
			return fmt.Errorf("client %x counts %d stateids, has %d", id, c.nstateids, n)
		}
		nstateids += n
	}
	if nsess != len(m.sessions) {
		return fmt.Errorf("%d sessions filed, %d reachable", len(m.sessions), nsess)
	}
	if nstateids != len(m.stateids) {
		return fmt.Errorf("%d stateids filed, %d reachable", len(m.stateids), nstateids)
	}
	if cache != m.cacheBytes || cache > o.MaxReplyCacheBytes {
		return fmt.Errorf("reply cache %d reserved, %d counted, bound %d", cache, m.cacheBytes, o.MaxReplyCacheBytes)
	}
	for key, f := range m.files {
		if f.key != key || len(f.opens)+len(f.locks) == 0 {
			return fmt.Errorf("file %v: bad or empty", key)
		}
		for st := range f.opens {
			if st.kind != kindOpen || st.file != f || m.stateids[st.other] != st {
				return fmt.Errorf("open on file %v not filed", key)
			}
			if st.access == 0 || st.access > 3 || st.deny > 3 {
				return fmt.Errorf("open with access %d deny %d", st.access, st.deny)
			}
			if _, a, d := keptOpens(st.opened, 3, 3); a != st.access || d != st.deny {
				return fmt.Errorf("open with access %d deny %d from OPENs %#x", st.access, st.deny, st.opened)
			}
			for x := range f.opens {
				if x != st && (x.access&st.deny != 0 || x.deny&st.access != 0) {
					return fmt.Errorf("file %v: conflicting share reservations", key)
				}
			}
			for _, l := range st.locks {
				if l.open != st || m.stateids[l.other] != l {
					return fmt.Errorf("lock stateid of an open not filed")
				}
			}
		}
		for st := range f.locks {
			if st.kind != kindLock || st.file != f || st.open == nil || st.open.file != f {
				return fmt.Errorf("lock on file %v not filed", key)
			}
			for i, r := range st.ranges {
				if r.start > r.end || i > 0 && st.ranges[i-1].end >= r.start {
					return fmt.Errorf("lock ranges not sorted and disjoint: %v", st.ranges)
				}
			}
			for x := range f.locks {
				if x.owner == st.owner {
					continue
				}
				for _, r := range st.ranges {
					for _, q := range x.ranges {
						if r.overlaps(q.start, q.end) && (r.write || q.write) {
							return fmt.Errorf("file %v: conflicting locks %v and %v", key, r, q)
						}
					}
				}
			}
		}
	}
	return nil
}

func hasKey(m map[*stateid]struct{}, st *stateid) bool {
	_, ok := m[st]
	return ok
}

// checkSecParms checks a session's copy of its callback security parameters against
// the bounds copySecParms keeps.
func checkSecParms(p []nfs4.CallbackSecParms4) error {
	if len(p) > nfs4.MaxSecFlavors {
		return fmt.Errorf("%d callback security parameters", len(p))
	}
	for i := range p {
		if len(p[i].Sys.MachineName) > 255 || len(p[i].Sys.GIDs) > nfs4.MaxGIDs {
			return fmt.Errorf("callback AUTH_SYS parameters of %d bytes, %d gids", len(p[i].Sys.MachineName), len(p[i].Sys.GIDs))
		}
		if p[i].GSS.HandleFromServer != nil || p[i].GSS.HandleFromClient != nil {
			return fmt.Errorf("callback RPCSEC_GSS handles kept")
		}
	}
	return nil
}
