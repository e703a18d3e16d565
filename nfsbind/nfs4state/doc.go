// Package nfs4state keeps the state of an NFSv4.1 server (RFC 8881): client records,
// sessions with their slot tables and reply caches, open and lock stateids, share
// reservations, byte-range locks, leases and the grace period. It is pure logic: it
// decodes nothing and sends nothing; the COMPOUND server calls one Manager method per
// operation with the decoded arguments and encodes the result. Results are nfs4.Status
// values; nfs4.OK means success.
//
// # Using it
//
// A server instance creates one Manager with New (which fails only when the state file in
// Options.StateDir cannot be read or written); a restart is a new Manager. The clock is
// Options.Now, so tests drive time by hand. The server calls:
//
//   - ExchangeID, CreateSession, DestroySession, DestroyClientID, BindConnToSession,
//     ReclaimComplete, BackchannelCtl (BACKCHANNEL_CTL) for the session operations;
//   - Sequence first in every COMPOUND that has it, with the COMPOUND's number of
//     operations and size, which it checks against the session's limits before it
//     takes the slot (NFS4ERR_TOO_MANY_OPS, NFS4ERR_REQ_TOO_BIG). A retry returns the
//     cached reply in SequenceResult.Replay, to send as is, or, when none was cached,
//     SequenceResult.Uncached: SEQUENCE's result, then NFS4ERR_RETRY_UNCACHED_REP for
//     the operation after it; a new request holds SequenceResult.Slot, and the server
//     must call Slot.Done with the encoded COMPOUND4res once it is built, whatever the
//     COMPOUND's status, or Slot.Abandon (deferred) when the COMPOUND ends without a
//     reply, whose retry is then Uncached. Before that, a reply larger than Slot.MaxCachedReply
//     to a request with sa_cachethis must become NFS4ERR_REP_TOO_BIG_TO_CACHE.
//     SequenceResult.ClientID is the client every later operation of the COMPOUND acts
//     for; SequenceResult.Fore the negotiated limits to check the reply against;
//   - Open, OpenDowngrade, Close, Lock, LockT, LockU, TestStateid, FreeStateid with that
//     client ID and a FileKey (the file's identity: the same for every handle of it);
//     CheckOpen before creating the file of an OPEN4_CREATE, so that an OPEN refused
//     creates nothing; OpenUndoable and UndoOpen for an OPEN that has more to do once
//     the share reservation is granted (the truncation of its createattrs) and may yet
//     fail;
//   - CheckIO before READ, WRITE and SETATTR of the size, with the operation's stateid;
//   - Sweep every few seconds, which ends expired leases and the grace period;
//   - ConnClosed when a connection closes; Backchannel (program, security parameters,
//     connections) and SetCallbackPath for its callback probes
//     (SEQ4_STATUS_CB_PATH_DOWN follows the last probe's result);
//   - RevokeClient or RevokeFile when an administrator takes state away: the stateids
//     then answer NFS4ERR_ADMIN_REVOKED until freed, and SEQUENCE carries
//     SEQ4_STATUS_ADMIN_STATE_REVOKED.
//
// The server replaces the "current stateid" (seqid 1, other zeros) by the COMPOUND's
// current stateid before calling; the Manager treats it as bad. Stateids are 16 bytes:
// seqid, then "other" = boot epoch (4 bytes), client counter (4), stateid counter (4).
// Client IDs are epoch<<32 | counter and session IDs carry the client ID (and 4 random
// bytes), so an
// identifier from a previous instance gets NFS4ERR_STALE_CLIENTID, NFS4ERR_STALE_STATEID
// or NFS4ERR_BADSESSION. Seqid 0 in a request means "the current seqid" (v4.1).
//
// # Leases, expiry and the grace period
//
// A client's lease is renewed by every SEQUENCE (and by finishing one). Sweep removes a
// client whose lease ran out and that has no request in progress, with its sessions, opens
// and locks (no courtesy period); its stateids get NFS4ERR_EXPIRED afterwards (the last
// MaxClients expired clients are remembered for that), its sessions NFS4ERR_BADSESSION.
// With a StateDir its opens and locks are released only once the state file no longer
// lists it (see below), so that no other client holds a conflicting lock it could
// reclaim after a crash (RFC 8881 §8.4.3).
//
// The grace period starts at New and lasts Options.GraceTime, or until every client the
// previous instance knew has sent RECLAIM_COMPLETE. Whether in grace or not, a client
// that has not sent RECLAIM_COMPLETE (rca_one_fs false) may only reclaim: its other
// OPENs and LOCKs get NFS4ERR_GRACE (RFC 8881 §18.51.3). Those clients are listed in a small
// file in Options.StateDir (StateFileName), rewritten when a client is confirmed or
// removed and when the grace period ends; it also holds the boot epoch, which a new
// instance makes larger than the last (without a StateDir the epoch is random). Without a StateDir, or with no client listed,
// nobody can reclaim, so the grace period ends at once.
//
// # Bounds
//
// Nothing a client sends sizes a table without a limit (Options): client records
// (MaxClients), sessions per client (MaxSessionsPerClient), slots per session (MaxSlots,
// ca_maxrequests is negotiated down to it), cached reply bytes per slot (MaxCachedReply)
// and over all sessions (MaxReplyCacheBytes: a session gets fewer slots when it is
// short), connections per session (MaxConnsPerSession), open- plus lock-owners per client
// (MaxStateOwnersPerClient), stateids per client and in all (MaxStateidsPerClient,
// MaxStateids), lock ranges per lock-owner (MaxLocksPerOwner), owner names
// (nfs4.OpaqueLimit). A request that would exceed a bound gets NFS4ERR_DELAY (NFSv4.1 has
// no NFS4ERR_RESOURCE), except that a full client table first drops its oldest unconfirmed
// record, and a LOCKU split beyond MaxLocksPerOwner gets NFS4ERR_LOCK_RANGE.
//
// Delegations are not granted; layouts are not supported.
package nfs4state
