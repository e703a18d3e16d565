package nfs4state

import (
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// slot is one entry of a session's fore-channel slot table (RFC 8881 §2.10.6.1).
type slot struct {
	seq         uint32 // sequence ID of the last request accepted
	inUse       bool   // a request is between Sequence and Slot.Done (or Abandon)
	initialized bool   // a request has completed here
	cacheThis   bool   // that request asked for its reply to be cached
	ops         int    // that request's number of operations (SequenceArgs.Ops)
	cached      bool   // reply holds that request's whole COMPOUND reply
	reply       []byte // at most the session's ca_maxresponsesize_cached bytes
}

// SequenceArgs are SEQUENCE4args plus the connection the request came on and the
// request's size, which SEQUENCE judges against the session's channel attributes.
type SequenceArgs struct {
	SessionID     nfs4.SessionID
	SequenceID    uint32
	SlotID        uint32
	HighestSlotID uint32
	CacheThis     bool
	Conn          ConnID
	// Ops is the number of operations in the COMPOUND, SEQUENCE included, and
	// RequestSize the size of its arguments in bytes; zero passes.
	Ops, RequestSize int
}

// SequenceResult is what SEQUENCE4resok needs, and what the server needs to finish the
// request.
type SequenceResult struct {
	SessionID           nfs4.SessionID
	SequenceID          uint32
	SlotID              uint32
	HighestSlotID       uint32 // sr_highest_slotid: the highest slot ID the session has
	TargetHighestSlotID uint32 // sr_target_highest_slotid
	StatusFlags         uint32 // sr_status_flags
	ClientID            uint64 // the session's client: the one the COMPOUND's state ops act for
	// Fore holds the session's negotiated fore-channel attributes, for the server's checks
	// of the reply's size (NFS4ERR_REP_TOO_BIG, NFS4ERR_REP_TOO_BIG_TO_CACHE); Sequence
	// checked the request's (SequenceArgs.Ops and RequestSize).
	Fore nfs4.ChannelAttrs4
	// Replay, when not nil, means the request is a retry of the slot's last request, whose
	// reply was cached: Replay is a copy of that COMPOUND4res as given to Slot.Done, to be
	// sent as is without executing anything. Slot is then not valid.
	Replay []byte
	// Uncached means the request is a retry of the slot's last request, whose reply was
	// not cached (no sa_cachethis, a reply too big to cache, or none at all): its
	// SEQUENCE is answered NFS4_OK from the fields above, and the operation after it, if
	// any, NFS4ERR_RETRY_UNCACHED_REP, without executing anything (RFC 8881
	// §2.10.6.1.3). Slot is then not valid.
	Uncached bool
	// Slot is the slot the new request holds until Slot.Done or Slot.Abandon.
	Slot Slot
}

// Slot is a request's hold on a slot, from Sequence to Done (or Abandon).
type Slot struct {
	m         *Manager
	s         *session
	index     uint32
	seq       uint32
	cacheThis bool
}

// Sequence implements SEQUENCE (RFC 8881 §18.46, §2.10.6): it finds the session
// (NFS4ERR_BADSESSION), checks the request against the session's ca_maxoperations
// (NFS4ERR_TOO_MANY_OPS) and ca_maxrequestsize (NFS4ERR_REQ_TOO_BIG) before it looks
// at the slot, as knfsd does, then the slot ID against the slot table
// (NFS4ERR_BADSLOT) and the sequence ID against the slot's: one more is a new request,
// which holds the slot until Slot.Done; equal is a retry, answered from the reply
// cache (SequenceResult.Replay) or, if the reply was not cached, with SEQUENCE's own
// result and NFS4ERR_RETRY_UNCACHED_REP for the operation after it
// (SequenceResult.Uncached), or NFS4ERR_DELAY while the original is still in
// progress; anything else is NFS4ERR_SEQ_MISORDERED. A new request renews the client's
// lease and binds Conn to the session's fore channel if it is not bound (SP4_NONE). A
// retry whose sa_cachethis differs from the original's gets NFS4ERR_SEQ_FALSE_RETRY.
// sa_highest_slotid is only the client's hint and is not judged; the server keeps the
// table at its negotiated size, so sr_highest_slotid and sr_target_highest_slotid both
// name its last slot. An error changes neither the slot (sequence ID, cached reply)
// nor the lease (RFC 8881 §18.46.3).
//
// The server must call res.Slot.Done once the COMPOUND's reply is encoded, whatever its
// status, or res.Slot.Abandon when the COMPOUND ends without a reply; a slot not
// released answers its retries with NFS4ERR_DELAY and keeps the client's lease from
// expiring.
func (m *Manager) Sequence(a SequenceArgs) (res SequenceResult, status nfs4.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[a.SessionID]
	if s == nil {
		return res, nfs4.ErrBadsession
	}
	switch {
	case a.Ops > int(s.fore.MaxOperations):
		return res, nfs4.ErrTooManyOps
	case a.RequestSize > int(s.fore.MaxRequestSize):
		return res, nfs4.ErrReqTooBig
	}
	n := uint32(len(s.slots))
	if a.SlotID >= n {
		return res, nfs4.ErrBadslot
	}
	sl := &s.slots[a.SlotID]
	c := s.client
	res = SequenceResult{
		SessionID:           s.id,
		SequenceID:          a.SequenceID,
		SlotID:              a.SlotID,
		HighestSlotID:       n - 1,
		TargetHighestSlotID: n - 1,
		ClientID:            c.id,
		Fore:                s.fore,
	}
	switch a.SequenceID {
	case sl.seq + 1:
		if sl.inUse {
			return SequenceResult{}, nfs4.ErrSeqMisordered
		}
	case sl.seq:
		switch {
		case sl.inUse:
			return SequenceResult{}, nfs4.ErrDelay
		case !sl.initialized:
			return SequenceResult{}, nfs4.ErrSeqMisordered
		case sl.cacheThis != a.CacheThis || sl.ops != a.Ops:
			// Not the request the slot last took: a retry repeats it whole
			// (RFC 8881 §2.10.6.1.3.1; knfsd compares the operation count too).
			return SequenceResult{}, nfs4.ErrSeqFalseRetry
		case !sl.cached:
			res.Uncached = true
		default:
			res.Replay = append(make([]byte, 0, len(sl.reply)), sl.reply...)
		}
		res.StatusFlags = m.statusFlagsLocked(c)
		return res, nfs4.OK
	default:
		return SequenceResult{}, nfs4.ErrSeqMisordered
	}
	sl.seq = a.SequenceID
	sl.inUse = true
	sl.cacheThis = a.CacheThis
	sl.ops = a.Ops
	sl.cached = false
	c.inFlight++
	c.renewed = m.now()
	s.bindIfUnboundLocked(a.Conn, m.opts.MaxConnsPerSession)
	res.StatusFlags = m.statusFlagsLocked(c)
	res.Slot = Slot{m: m, s: s, index: a.SlotID, seq: a.SequenceID, cacheThis: a.CacheThis}
	return res, nfs4.OK
}

func (s *session) bindIfUnboundLocked(conn ConnID, limit int) {
	for i := range s.conns {
		if s.conns[i].conn == conn {
			return
		}
	}
	s.bindLocked(conn, nfs4.CDFS4Fore, limit)
}

func (m *Manager) statusFlagsLocked(c *client) uint32 {
	var f uint32
	if c.callbackDown() {
		f |= nfs4.Seq4StatusCBPathDown
	}
	if len(c.revoked) > 0 {
		f |= nfs4.Seq4StatusAdminStateRevoked
	}
	return f
}

// MaxCachedReply returns the largest reply the slot can cache (the session's
// ca_maxresponsesize_cached). A request with sa_cachethis whose reply is larger must be
// answered NFS4ERR_REP_TOO_BIG_TO_CACHE.
func (sl *Slot) MaxCachedReply() int {
	if sl.s == nil {
		return 0
	}
	return int(sl.s.fore.MaxResponseSizeCached)
}

// Valid reports whether sl holds a slot (it does not after a replay or an error).
func (sl *Slot) Valid() bool { return sl.s != nil }

// Done releases the slot. reply is the encoded COMPOUND4res (status, tag, results; not the
// RPC reply header, which a retry's XID may change); when the request
// asked for caching (sa_cachethis) and reply fits MaxCachedReply, it is copied into the
// slot's cache for retries, otherwise a retry is SequenceResult.Uncached. Done
// returns NFS4ERR_REP_TOO_BIG_TO_CACHE when caching was asked for and the reply did not
// fit. An empty reply is no reply at all: Done(nil) is Abandon. Calling Done again, or
// after the session was destroyed, does nothing.
func (sl *Slot) Done(reply []byte) nfs4.Status {
	return sl.release(reply, len(reply) > 0)
}

// Abandon releases the slot of a request that ends without a reply: the server dropped
// it (its connection closed while it waited) or it panicked. The request counts as done
// at its sequence ID, since it may have changed state, but nothing is cached for it: a
// retry is SequenceResult.Uncached (NFS4ERR_RETRY_UNCACHED_REP after its SEQUENCE,
// RFC 8881 §2.10.6.1), never an empty reply.
// Abandon after Done, or after the session was destroyed, does nothing.
func (sl *Slot) Abandon() { sl.release(nil, false) }

// release is Done (replied true) and Abandon.
func (sl *Slot) release(reply []byte, replied bool) nfs4.Status {
	if sl.s == nil {
		return nfs4.OK
	}
	m := sl.m
	m.mu.Lock()
	defer m.mu.Unlock()
	s := sl.s
	sl.s = nil
	if s.dead {
		return nfs4.OK
	}
	x := &s.slots[sl.index]
	if !x.inUse || x.seq != sl.seq {
		return nfs4.OK
	}
	x.inUse = false
	x.initialized = true
	s.client.inFlight--
	s.client.renewed = m.now()
	if !sl.cacheThis || !replied {
		return nfs4.OK
	}
	if len(reply) > int(s.fore.MaxResponseSizeCached) {
		return nfs4.ErrRepTooBigToCache
	}
	x.reply = append(x.reply[:0], reply...)
	x.cached = true
	return nfs4.OK
}
