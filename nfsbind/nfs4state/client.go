package nfs4state

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// client is a client record (RFC 8881 §2.4): the client owner, its verifier and
// principal, whether CREATE_SESSION confirmed it, its lease, and everything it holds.
type client struct {
	id        uint64
	owner     string // co_ownerid
	verifier  nfs4.Verifier
	principal string
	confirmed bool
	created   time.Time
	renewed   time.Time // last lease renewal (SEQUENCE, or confirmation)

	// The CREATE_SESSION slot (RFC 8881 §18.36.4): the sequence ID of the last
	// CREATE_SESSION done and its result, for replays.
	csSeq    uint32
	csDone   bool
	csResult CreateSessionResult
	csStatus nfs4.Status

	sessions   map[nfs4.SessionID]*session
	openOwners map[string]*stateOwner
	lockOwners map[string]*stateOwner
	nstateids  int                   // open and lock stateids, revoked ones included
	revoked    map[*stateid]struct{} // revoked stateids awaiting FREE_STATEID
	inFlight   int                   // requests between Sequence and Slot.Done

	mayReclaim      bool // listed by the previous instance
	reclaimComplete bool
	cbState         callbackState
}

type callbackState uint8

const (
	cbUnknown callbackState = iota
	cbUp
	cbDown
)

func (c *client) hasState() bool {
	return len(c.sessions) > 0 || c.nstateids > 0
}

// ExchangeIDArgs are the parts of EXCHANGE_ID4args the Manager judges.
type ExchangeIDArgs struct {
	OwnerID   []byte        // eia_clientowner.co_ownerid, at most nfs4.OpaqueLimit bytes
	Verifier  nfs4.Verifier // eia_clientowner.co_verifier
	Flags     uint32        // eia_flags
	Principal string        // the caller's RPC principal, as the server names it (e.g. "sys:1000")
}

// ExchangeIDResult is what EXCHANGE_ID4resok needs from the Manager.
type ExchangeIDResult struct {
	ClientID   uint64 // eir_clientid
	SequenceID uint32 // eir_sequenceid: the csa_sequence of the next CREATE_SESSION
	Flags      uint32 // eir_flags
}

// exchangeIDFlagsMask is the eia_flags a client may send: EXCHGID4_FLAG_MASK_A and
// SUPP_FENCE_OPS, which RFC 8881 added (and this server ignores).
const exchangeIDFlagsMask = nfs4.ExchgIDFlagSuppMovedRefer | nfs4.ExchgIDFlagSuppMovedMigr | nfs4.ExchgIDFlagSuppFenceOps |
	nfs4.ExchgIDFlagBindPrincStateid | nfs4.ExchgIDFlagMaskPNFS | nfs4.ExchgIDFlagUpdConfirmedRecA

// ExchangeID implements EXCHANGE_ID's server side (RFC 8881 §18.35.5; the case numbers
// below are that section's):
//
//   - with EXCHGID4_FLAG_UPD_CONFIRMED_REC_A: a confirmed record for the owner with the
//     same verifier and principal is returned as is (case 6); a different principal gets
//     NFS4ERR_PERM (9), a different verifier NFS4ERR_NOT_SAME (8), no confirmed record
//     NFS4ERR_NOENT (7);
//   - otherwise: a new owner gets a new unconfirmed record (1); a confirmed record with
//     the same verifier and principal is returned as is (2); a different principal gets
//     NFS4ERR_CLID_INUSE while the old record holds state, else it is replaced (3); an
//     unconfirmed record is replaced (4); a confirmed record with a different verifier
//     (the client rebooted) gets a new unconfirmed record, and the old one and its state
//     go when CREATE_SESSION confirms the new one (5).
//
// Flags outside EXCHGID4_FLAG_MASK_A (and SUPP_FENCE_OPS) get NFS4ERR_INVAL. When the client table is full the
// oldest unconfirmed record makes room; with none, the answer is NFS4ERR_DELAY.
func (m *Manager) ExchangeID(a ExchangeIDArgs) (ExchangeIDResult, nfs4.Status) {
	if a.Flags&^exchangeIDFlagsMask != 0 || len(a.OwnerID) > nfs4.OpaqueLimit {
		return ExchangeIDResult{}, nfs4.ErrInval
	}
	update := a.Flags&nfs4.ExchgIDFlagUpdConfirmedRecA != 0
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if conf := m.confirmed[string(a.OwnerID)]; conf != nil {
		samePrincipal := conf.principal == a.Principal
		sameVerifier := conf.verifier == a.Verifier
		switch {
		case update && !samePrincipal: // case 9
			return ExchangeIDResult{}, nfs4.ErrPerm
		case update && !sameVerifier: // case 8
			return ExchangeIDResult{}, nfs4.ErrNotSame
		case update, samePrincipal && sameVerifier: // cases 6 and 2
			return m.exchangeResult(conf), nfs4.OK
		case !samePrincipal: // case 3
			if conf.hasState() {
				return ExchangeIDResult{}, nfs4.ErrClidInuse
			}
			m.destroyClientLocked(conf)
		}
		// case 5 (or 3 without state): a new unconfirmed record below.
	} else if update { // case 7
		return ExchangeIDResult{}, nfs4.ErrNoent
	}
	if old := m.unconfirmed[string(a.OwnerID)]; old != nil { // case 4
		m.destroyClientLocked(old)
	}
	if len(m.clients) >= m.opts.MaxClients && !m.evictUnconfirmedLocked() {
		return ExchangeIDResult{}, nfs4.ErrDelay
	}
	c := &client{
		id:         m.newClientID(),
		owner:      string(a.OwnerID),
		verifier:   a.Verifier,
		principal:  a.Principal,
		created:    now,
		renewed:    now,
		sessions:   make(map[nfs4.SessionID]*session),
		openOwners: make(map[string]*stateOwner),
		lockOwners: make(map[string]*stateOwner),
		revoked:    make(map[*stateid]struct{}),
	}
	m.clients[c.id] = c
	m.unconfirmed[c.owner] = c
	m.opts.Logger.Debug("nfs4 client record created", "clientid", c.id)
	return m.exchangeResult(c), nfs4.OK
}

// evictUnconfirmedLocked drops the oldest unconfirmed client record to make room for a
// new one: it holds nothing, and its client, if it comes back, gets
// NFS4ERR_STALE_CLIENTID and starts over. It reports whether there was one.
func (m *Manager) evictUnconfirmedLocked() bool {
	var oldest *client
	for _, c := range m.unconfirmed {
		if oldest == nil || c.created.Before(oldest.created) || c.created.Equal(oldest.created) && c.id < oldest.id {
			oldest = c
		}
	}
	if oldest == nil {
		return false
	}
	m.destroyClientLocked(oldest)
	return true
}

func (m *Manager) exchangeResult(c *client) ExchangeIDResult {
	flags := nfs4.ExchgIDFlagUseNonPNFS
	if c.confirmed {
		flags |= nfs4.ExchgIDFlagConfirmedR
	}
	return ExchangeIDResult{ClientID: c.id, SequenceID: c.csSeq + 1, Flags: flags}
}

// DestroyClientID implements DESTROY_CLIENTID (RFC 8881 §18.50): an unknown client ID gets
// NFS4ERR_STALE_CLIENTID, a client with sessions or stateids NFS4ERR_CLIENTID_BUSY.
func (m *Manager) DestroyClientID(clientID uint64) nfs4.Status {
	m.mu.Lock()
	c := m.clients[clientID]
	if c == nil {
		m.mu.Unlock()
		return nfs4.ErrStaleClientid
	}
	if c.hasState() {
		m.mu.Unlock()
		return nfs4.ErrClientidBusy
	}
	m.destroyClientLocked(c)
	snap := m.snapshotIfStoredLocked(c.confirmed)
	m.mu.Unlock()
	m.persist(snap)
	return nfs4.OK
}

// destroyClientLocked removes a client record with its sessions and state.
func (m *Manager) destroyClientLocked(c *client) {
	m.unhashClientLocked(c)
	m.freeClientStateLocked(c)
}

// unhashClientLocked removes a client record and its sessions, so that no request
// acts for it any more, but not its state: its opens and locks still conflict with
// others' until freeClientStateLocked.
func (m *Manager) unhashClientLocked(c *client) {
	for _, s := range c.sessions {
		m.destroySessionLocked(s)
	}
	delete(m.clients, c.id)
	if c.confirmed {
		if m.confirmed[c.owner] == c {
			delete(m.confirmed, c.owner)
		}
	} else if m.unconfirmed[c.owner] == c {
		delete(m.unconfirmed, c.owner)
	}
}

// freeClientStateLocked releases the opens, share reservations and locks of a client
// record, and forgets its revoked stateids.
func (m *Manager) freeClientStateLocked(c *client) {
	for _, o := range c.openOwners {
		for _, st := range o.stateids {
			m.closeLocked(st)
		}
	}
	for _, o := range c.lockOwners {
		for _, st := range o.stateids {
			m.freeLockStateidLocked(st)
		}
	}
	for st := range c.revoked {
		m.freeRevokedLocked(st)
	}
}

// clientLocked returns the confirmed client record a session-bearing request names.
func (m *Manager) clientLocked(clientID uint64) (*client, nfs4.Status) {
	c := m.clients[clientID]
	if c == nil || !c.confirmed {
		if uint32(clientID>>32) != m.epoch {
			return nil, nfs4.ErrStaleClientid
		}
		if _, ok := m.expired[uint32(clientID)]; ok {
			return nil, nfs4.ErrExpired
		}
		return nil, nfs4.ErrStaleClientid
	}
	return c, nfs4.OK
}

// Sweep ends the leases that expired by now (RFC 8881 §8.3): a confirmed client that sent
// no SEQUENCE for LeaseTime, and has no request in progress, loses its record, sessions,
// opens and locks; its stateids then get NFS4ERR_EXPIRED. Unconfirmed records older than
// LeaseTime are dropped. Sweep also ends the grace period once GraceTime has passed. The
// server calls it periodically (every few seconds). It returns the number of clients
// removed.
//
// With a state file, an expired client's opens and locks are released only once the
// file no longer lists it (RFC 8881 §8.4.3): were they released first, another client
// could be granted a conflicting lock, and after a crash before the file was
// rewritten the expired client could reclaim its own in the grace period. Its record
// and sessions go at once, so that it cannot renew meanwhile.
func (m *Manager) Sweep(now time.Time) int {
	m.mu.Lock()
	n := 0
	lost := false
	var held []*client // expired, their state held until the state file is rewritten
	for _, c := range m.clients {
		if c.inFlight > 0 {
			continue
		}
		if c.confirmed {
			if now.Sub(c.renewed) < m.opts.LeaseTime {
				continue
			}
			m.opts.Logger.Info("nfs4 client lease expired", "clientid", c.id)
			m.rememberExpired(c.id)
			lost = true
			if m.store != nil {
				m.unhashClientLocked(c)
				held = append(held, c)
				n++
				continue
			}
		} else if now.Sub(c.created) < m.opts.LeaseTime {
			continue
		}
		m.destroyClientLocked(c)
		n++
	}
	ended := m.grace.endIfOver(now)
	if ended {
		m.opts.Logger.Info("nfs4 grace period over")
	}
	snap := m.snapshotIfStoredLocked(lost || ended)
	m.mu.Unlock()
	m.persist(snap)
	if len(held) > 0 {
		m.mu.Lock()
		for _, c := range held {
			m.freeClientStateLocked(c)
		}
		m.mu.Unlock()
	}
	return n
}
