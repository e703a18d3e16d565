package nfs4state

import (
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// ConnID names a transport connection; the server assigns one per connection (any
// counter will do) and calls ConnClosed when the connection goes.
type ConnID uint64

// session is a session (RFC 8881 §2.10): its channels, slot table and bound connections.
type session struct {
	id        nfs4.SessionID
	client    *client
	flags     uint32
	fore      nfs4.ChannelAttrs4
	back      nfs4.ChannelAttrs4
	cbProgram uint32
	cbSec     []nfs4.CallbackSecParms4 // owned copy; replaced whole, never changed in place
	slots     []slot
	conns     []connBinding // oldest first, at most MaxConnsPerSession
	reserved  int64         // reply cache bytes reserved
	dead      bool
}

type connBinding struct {
	conn ConnID
	dir  nfs4.ChannelDirFromServer
}

// CreateSessionArgs are the parts of CREATE_SESSION4args the Manager judges or keeps.
type CreateSessionArgs struct {
	ClientID   uint64             // csa_clientid
	SequenceID uint32             // csa_sequence
	Flags      uint32             // csa_flags
	Fore, Back nfs4.ChannelAttrs4 // csa_fore_chan_attrs, csa_back_chan_attrs
	CBProgram  uint32             // csa_cb_program
	// SecParms is csa_sec_parms, the credentials the client accepts on callbacks. The
	// session keeps a copy (see copySecParms), so it may alias the request.
	SecParms  []nfs4.CallbackSecParms4
	Principal string // the caller's RPC principal
	Conn      ConnID // the connection the request came on
}

// CreateSessionResult is CREATE_SESSION4resok.
type CreateSessionResult struct {
	SessionID  nfs4.SessionID
	SequenceID uint32
	Flags      uint32
	Fore, Back nfs4.ChannelAttrs4
}

const createSessionFlagsMask = nfs4.CreateSessionFlagPersist | nfs4.CreateSessionFlagConnBackChan |
	nfs4.CreateSessionFlagConnRDMA

// Smallest channel sizes accepted; smaller gets NFS4ERR_TOOSMALL. A fore-channel request
// or reply must hold at least an RPC header and a COMPOUND with one SEQUENCE; a
// back-channel one a CB_COMPOUND with CB_SEQUENCE and one more operation.
const (
	minForeRequestSize  = 64
	minForeResponseSize = 64
	minBackRequestSize  = 128
	minBackResponseSize = 64
	minBackOperations   = 2
)

// CreateSession implements CREATE_SESSION (RFC 8881 §18.36). The client's CREATE_SESSION
// slot orders the requests: csa_sequence one above the last one done is a new request; equal
// to it on a confirmed client is a replay and gets the cached result again; anything else
// gets NFS4ERR_SEQ_MISORDERED. An unknown client ID gets NFS4ERR_STALE_CLIENTID; an
// unconfirmed record created by another principal NFS4ERR_CLID_INUSE. The first
// CREATE_SESSION of an unconfirmed record confirms it, and removes the confirmed record
// of the same owner it replaces (a rebooted client) with all that record's state.
//
// The channel attributes are negotiated down to the Options: ca_maxrequests to at most
// MaxSlots (and fewer when the reply cache budget is short: NFS4ERR_DELAY if not even one
// slot fits), ca_maxresponsesize_cached to MaxCachedReply, sizes and operations to
// MaxRequestSize, MaxResponseSize and MaxOperations; header padding is 0 and ca_rdma_ird
// is not offered. Sizes below what a SEQUENCE needs get NFS4ERR_TOOSMALL. PERSIST and
// CONN_RDMA are never granted; CONN_BACK_CHAN is, binding Conn to both channels (else to
// the fore channel only). Unknown flags get NFS4ERR_INVAL; more than
// MaxSessionsPerClient sessions NFS4ERR_DELAY.
func (m *Manager) CreateSession(a CreateSessionArgs) (CreateSessionResult, nfs4.Status) {
	m.mu.Lock()
	res, st, confirmed := m.createSessionLocked(&a)
	var snap *stateRecord
	if confirmed {
		snap = m.snapshotIfStoredLocked(true)
	}
	m.mu.Unlock()
	m.persist(snap)
	return res, st
}

func (m *Manager) createSessionLocked(a *CreateSessionArgs) (CreateSessionResult, nfs4.Status, bool) {
	c := m.clients[a.ClientID]
	if c == nil {
		return CreateSessionResult{}, nfs4.ErrStaleClientid, false
	}
	if c.confirmed {
		switch a.SequenceID {
		case c.csSeq:
			if c.csDone {
				return c.csResult, c.csStatus, false
			}
			return CreateSessionResult{}, nfs4.ErrSeqMisordered, false
		case c.csSeq + 1:
		default:
			return CreateSessionResult{}, nfs4.ErrSeqMisordered, false
		}
	} else {
		if c.principal != a.Principal {
			return CreateSessionResult{}, nfs4.ErrClidInuse, false
		}
		if a.SequenceID != c.csSeq+1 {
			return CreateSessionResult{}, nfs4.ErrSeqMisordered, false
		}
	}
	res, st := m.newSessionLocked(c, a)
	if st != nfs4.OK {
		// A request refused for its arguments does not consume the sequence ID: the
		// client may correct and resend it (as knfsd does).
		return res, st, false
	}
	c.csSeq = a.SequenceID
	c.csDone = true
	c.csResult, c.csStatus = res, st
	confirmedNow := false
	if !c.confirmed {
		if old := m.confirmed[c.owner]; old != nil {
			m.opts.Logger.Info("nfs4 client rebooted; its previous state is gone", "old", old.id, "new", c.id)
			m.destroyClientLocked(old)
		}
		delete(m.unconfirmed, c.owner)
		c.confirmed = true
		m.confirmed[c.owner] = c
		c.mayReclaim = m.grace.listed(c.owner)
		confirmedNow = true
	}
	c.renewed = m.now()
	return res, st, confirmedNow
}

func (m *Manager) newSessionLocked(c *client, a *CreateSessionArgs) (CreateSessionResult, nfs4.Status) {
	if a.Flags&^createSessionFlagsMask != 0 {
		return CreateSessionResult{}, nfs4.ErrInval
	}
	fore, back := a.Fore, a.Back
	if fore.MaxRequestSize < minForeRequestSize || fore.MaxResponseSize < minForeResponseSize {
		return CreateSessionResult{}, nfs4.ErrToosmall
	}
	if back.MaxRequestSize < minBackRequestSize || back.MaxResponseSize < minBackResponseSize ||
		back.MaxOperations < minBackOperations {
		return CreateSessionResult{}, nfs4.ErrToosmall
	}
	if len(c.sessions) >= m.opts.MaxSessionsPerClient {
		return CreateSessionResult{}, nfs4.ErrDelay
	}
	fore.HeaderPadSize = 0
	fore.HasRdmaIrd, fore.RdmaIrd = false, 0
	fore.MaxRequestSize = min(fore.MaxRequestSize, m.opts.MaxRequestSize)
	fore.MaxResponseSize = min(fore.MaxResponseSize, m.opts.MaxResponseSize)
	fore.MaxResponseSizeCached = min(fore.MaxResponseSizeCached, uint32(m.opts.MaxCachedReply), fore.MaxResponseSize)
	fore.MaxOperations = min(fore.MaxOperations, m.opts.MaxOperations)
	if fore.MaxOperations == 0 {
		return CreateSessionResult{}, nfs4.ErrToosmall
	}
	slots := int64(min(max(fore.MaxRequests, 1), uint32(m.opts.MaxSlots)))
	per := int64(fore.MaxResponseSizeCached)
	if per > 0 {
		room := m.opts.MaxReplyCacheBytes - m.cacheBytes
		if fit := room / per; fit < slots {
			slots = fit
		}
		if slots < 1 {
			return CreateSessionResult{}, nfs4.ErrDelay
		}
	}
	fore.MaxRequests = uint32(slots)
	back.HeaderPadSize = 0
	back.HasRdmaIrd, back.RdmaIrd = false, 0
	back.MaxResponseSizeCached = 0

	s := &session{
		client:    c,
		flags:     a.Flags &^ (nfs4.CreateSessionFlagPersist | nfs4.CreateSessionFlagConnRDMA),
		fore:      fore,
		back:      back,
		cbProgram: a.CBProgram,
		cbSec:     copySecParms(a.SecParms),
		slots:     make([]slot, slots),
		reserved:  slots * per,
	}
	m.nextSession++
	binary.BigEndian.PutUint64(s.id[0:8], c.id)
	binary.BigEndian.PutUint32(s.id[8:12], m.nextSession)
	binary.BigEndian.PutUint32(s.id[12:16], randomUint32()) // not guessable from the client ID
	if _, dup := m.sessions[s.id]; dup {                    // the counter wrapped onto a live session
		return CreateSessionResult{}, nfs4.ErrDelay
	}
	dir := nfs4.CDFS4Fore
	if s.flags&nfs4.CreateSessionFlagConnBackChan != 0 {
		dir = nfs4.CDFS4Both
	}
	s.bindLocked(a.Conn, dir, m.opts.MaxConnsPerSession)
	m.cacheBytes += s.reserved
	m.sessions[s.id] = s
	c.sessions[s.id] = s
	return CreateSessionResult{SessionID: s.id, SequenceID: a.SequenceID, Flags: s.flags, Fore: fore, Back: back}, nfs4.OK
}

// DestroySession implements DESTROY_SESSION (RFC 8881 §18.37): an unknown session gets
// NFS4ERR_BADSESSION. Requests in progress on the session finish normally; their
// Slot.Done is then a no-op.
func (m *Manager) DestroySession(id nfs4.SessionID) nfs4.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return nfs4.ErrBadsession
	}
	m.destroySessionLocked(s)
	return nfs4.OK
}

func (m *Manager) destroySessionLocked(s *session) {
	s.dead = true
	for i := range s.slots {
		if s.slots[i].inUse {
			s.slots[i].inUse = false
			s.client.inFlight--
		}
		s.slots[i].reply = nil
	}
	m.cacheBytes -= s.reserved
	s.reserved = 0
	delete(m.sessions, s.id)
	delete(s.client.sessions, s.id)
}

// BindConnToSession implements BIND_CONN_TO_SESSION (RFC 8881 §18.34) for SP4_NONE
// clients: it binds conn to the session's fore channel, back channel or both, and returns
// the channels bound (bctsr_dir). FORE_OR_BOTH and BACK_OR_BOTH bind both. A connection
// already bound is rebound as asked. An unknown session gets NFS4ERR_BADSESSION, an
// undefined direction NFS4ERR_INVAL. Binding more than MaxConnsPerSession connections
// unbinds the oldest. Binding leaves the callback path as the last probe found it
// (SetCallbackPath).
func (m *Manager) BindConnToSession(id nfs4.SessionID, conn ConnID, dir nfs4.ChannelDirFromClient) (nfs4.ChannelDirFromServer, nfs4.Status) {
	var got nfs4.ChannelDirFromServer
	switch dir {
	case nfs4.CDFC4Fore:
		got = nfs4.CDFS4Fore
	case nfs4.CDFC4Back:
		got = nfs4.CDFS4Back
	case nfs4.CDFC4ForeOrBoth, nfs4.CDFC4BackOrBoth:
		got = nfs4.CDFS4Both
	default:
		return 0, nfs4.ErrInval
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return 0, nfs4.ErrBadsession
	}
	// A back channel bound after a failed probe is still reported down: the flag
	// follows the server's probes (SetCallbackPath), which may wait for a back-off; a
	// client that binds a connection on seeing SEQ4_STATUS_CB_PATH_DOWN would
	// otherwise see the flag cleared with no probe made.
	s.bindLocked(conn, got, m.opts.MaxConnsPerSession)
	return got, nfs4.OK
}

// bindLocked binds conn with dir, replacing an existing binding of conn.
func (s *session) bindLocked(conn ConnID, dir nfs4.ChannelDirFromServer, limit int) {
	for i := range s.conns {
		if s.conns[i].conn == conn {
			s.conns[i].dir = dir
			return
		}
	}
	if len(s.conns) >= limit {
		s.conns = append(s.conns[:0], s.conns[1:]...)
	}
	s.conns = append(s.conns, connBinding{conn: conn, dir: dir})
}

// ConnClosed unbinds a closed connection from every session.
func (m *Manager) ConnClosed(conn ConnID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		for i := range s.conns {
			if s.conns[i].conn == conn {
				s.conns = append(s.conns[:i], s.conns[i+1:]...)
				break
			}
		}
	}
}

// Backchannel describes a session's back channel, for the server's callback probes.
type Backchannel struct {
	ClientID  uint64
	CBProgram uint32 // csa_cb_program, or as changed by BACKCHANNEL_CTL
	// SecParms is csa_sec_parms, or bca_sec_parms after BACKCHANNEL_CTL, as copied by
	// copySecParms. It is shared with the Manager: read it, never change it.
	SecParms []nfs4.CallbackSecParms4
	Attrs    nfs4.ChannelAttrs4 // the negotiated back-channel attributes
	Conns    []ConnID           // connections bound to the back channel, newest first
}

// Backchannel returns the back channel of a session (NFS4ERR_BADSESSION if unknown).
func (m *Manager) Backchannel(id nfs4.SessionID) (Backchannel, nfs4.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return Backchannel{}, nfs4.ErrBadsession
	}
	b := Backchannel{ClientID: s.client.id, CBProgram: s.cbProgram, SecParms: s.cbSec, Attrs: s.back}
	for i := len(s.conns) - 1; i >= 0; i-- {
		if s.conns[i].dir != nfs4.CDFS4Fore {
			b.Conns = append(b.Conns, s.conns[i].conn)
		}
	}
	return b, nfs4.OK
}

// BackchannelCtl records BACKCHANNEL_CTL's bca_cb_program and bca_sec_parms for a
// session (RFC 8881 §18.33): they replace those of CREATE_SESSION or of an earlier
// BACKCHANNEL_CTL. sec is copied (see copySecParms).
func (m *Manager) BackchannelCtl(id nfs4.SessionID, program uint32, sec []nfs4.CallbackSecParms4) nfs4.Status {
	cp := copySecParms(sec)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		return nfs4.ErrBadsession
	}
	s.cbProgram, s.cbSec = program, cp
	return nfs4.OK
}

// copySecParms returns a copy of callback security parameters that shares no memory
// with p (decoded arguments alias the request buffer). It keeps at most
// nfs4.MaxSecFlavors entries, AUTH_SYS machine names of at most 255 bytes and
// nfs4.MaxGIDs gids (the decoder's bounds, so nothing a decoded list holds is lost), and
// of RPCSEC_GSS only the flavor and service: the handles are of no use to a server
// without RPCSEC_GSS, and dropping them bounds a session's copy to a few kilobytes.
func copySecParms(p []nfs4.CallbackSecParms4) []nfs4.CallbackSecParms4 {
	if len(p) == 0 {
		return nil
	}
	p = p[:min(len(p), nfs4.MaxSecFlavors)]
	out := make([]nfs4.CallbackSecParms4, len(p))
	for i := range p {
		out[i].Flavor = p[i].Flavor
		switch p[i].Flavor {
		case nfs4.AuthSys:
			in, o := &p[i].Sys, &out[i].Sys
			o.Stamp, o.UID, o.GID = in.Stamp, in.UID, in.GID
			o.MachineName = append([]byte(nil), in.MachineName[:min(len(in.MachineName), 255)]...)
			o.GIDs = append([]uint32(nil), in.GIDs[:min(len(in.GIDs), nfs4.MaxGIDs)]...)
		case nfs4.RPCSecGSS:
			out[i].GSS.Service = p[i].GSS.Service
		}
	}
	return out
}

// SetCallbackPath records the result of the server's latest callback probe of a client
// (CB_NULL, or CB_COMPOUND with CB_SEQUENCE): while it failed, every SEQUENCE reply carries
// SEQ4_STATUS_CB_PATH_DOWN. Before any probe, the flag is set only when no session of the
// client has a connection bound to its back channel.
func (m *Manager) SetCallbackPath(clientID uint64, up bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.clients[clientID]; c != nil {
		if up {
			c.cbState = cbUp
		} else {
			c.cbState = cbDown
		}
	}
}

func (c *client) callbackDown() bool {
	switch c.cbState {
	case cbDown:
		return true
	case cbUp:
		return false
	}
	for _, s := range c.sessions {
		for _, b := range s.conns {
			if b.dir != nfs4.CDFS4Fore {
				return false
			}
		}
	}
	return true
}
