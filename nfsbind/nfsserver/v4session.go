//go:build linux

package nfsserver

import (
	"strconv"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Session operations: EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID,
// BIND_CONN_TO_SESSION, SEQUENCE, RECLAIM_COMPLETE, SECINFO_NO_NAME, TEST_STATEID and
// FREE_STATEID, decided by the nfs4state.Manager. The server's part is the
// principal (AUTH_SYS calls are "sys:<uid>", others "none"), the connection
// identity, the server owner and scope, and the per-COMPOUND checks SEQUENCE makes.

// principal names the caller as nfs4state compares principals: a client record may be
// changed or confirmed only by the principal that made it (RFC 8881 §18.35.5).
func principal(req *oncrpc.Request) string {
	if a := req.AuthSys; a != nil {
		return "sys:" + strconv.FormatUint(uint64(a.UID), 10)
	}
	return "none"
}

func (c *compound) opExchangeID(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.exchangeID
	r := &c.ops.exchangeIDRes
	*r = nfs4.ExchangeIDRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if a.StateProtect.How != nfs4.SP4None {
		// Machine-credential state protection needs RPCSEC_GSS, which this server
		// does not offer: refuse it (RFC 8881 §18.35.4), as knfsd does for
		// AUTH_SYS callers.
		r.Status = nfs4.ErrNotsupp
	} else {
		res, st := c.v.state.ExchangeID(nfs4state.ExchangeIDArgs{
			OwnerID: a.ClientOwner.OwnerID, Verifier: a.ClientOwner.Verifier,
			Flags: a.Flags, Principal: principal(c.req),
		})
		r.Status = st
		if st == nfs4.OK {
			r.ClientID, r.SequenceID = res.ClientID, res.SequenceID
			r.Flags = res.Flags&^nfs4.ExchgIDFlagMaskPNFS | nfs4.ExchgIDFlagUseNonPNFS
			r.StateProtect = nfs4.StateProtect4{How: nfs4.SP4None}
			r.ServerOwner = c.v.owner
			r.ServerScope = c.v.scope
			r.HasImplID, r.ImplID = true, c.v.impl
		}
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) opCreateSession(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.createSession
	r := &c.ops.createSessionRes
	*r = nfs4.CreateSessionRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		// csa_sec_parms is kept with the session for the callbacks; if no entry has a
		// flavor the server can send, the back channel is reported down (see probe).
		res, st := c.v.state.CreateSession(nfs4state.CreateSessionArgs{
			ClientID: a.ClientID, SequenceID: a.Sequence, Flags: a.Flags,
			Fore: a.ForeChanAttrs, Back: a.BackChanAttrs, CBProgram: a.CBProgram, SecParms: a.SecParms,
			Principal: principal(c.req), Conn: c.v.conns.of(c.ctx, c.req.Conn),
		})
		r.Status = st
		if st == nfs4.OK {
			r.SessionID, r.Sequence, r.Flags = res.SessionID, res.SequenceID, res.Flags
			r.ForeChanAttrs, r.BackChanAttrs = res.Fore, res.Back
			if res.Flags&nfs4.CreateSessionFlagConnBackChan != 0 {
				c.v.probe(c.req.Conn, res.SessionID, false)
			}
		}
	}
	c.w.Add(r)
	return r.Status
}

// opDestroySession is DESTROY_SESSION. Of the session the COMPOUND's SEQUENCE names it
// must be the last operation (RFC 8881 §18.37.3); followed by others it is refused
// with NFS4ERR_NOT_ONLY_OP, as knfsd does, before the session is touched.
func (c *compound) opDestroySession(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.destroySession
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	if c.inSession && a.SessionID == c.sessionID && c.r.More() {
		return c.only(op, nfs4.ErrNotOnlyOp)
	}
	st := c.v.state.DestroySession(a.SessionID)
	if st == nfs4.OK {
		c.v.cb.forget(a.SessionID)
	}
	return c.only(op, st)
}

func (c *compound) opDestroyClientID(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.destroyClientID
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	return c.only(op, c.v.state.DestroyClientID(a.ClientID))
}

func (c *compound) opBindConnToSession(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.bindConn
	r := &c.ops.bindConnRes
	*r = nfs4.BindConnToSessionRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		dir, st := c.v.state.BindConnToSession(a.SessionID, c.v.conns.of(c.ctx, c.req.Conn), a.Dir)
		r.Status = st
		if st == nfs4.OK {
			r.SessionID, r.Dir = a.SessionID, dir
			if dir != nfs4.CDFS4Fore {
				c.v.probe(c.req.Conn, a.SessionID, false)
			}
		}
	}
	c.w.Add(r)
	return r.Status
}

// sequence runs SEQUENCE, the first operation of a COMPOUND in a session. A retry of
// the slot's last request whose reply was cached is answered with that reply: the
// COMPOUND4res begun is replaced by it and c.replay set. One whose reply was not
// cached is answered by replayUncached, c.replay set too. The state manager checks the
// COMPOUND's number of operations and size against the session's limits before it
// takes the slot, so that a SEQUENCE failing for them leaves the slot and the lease
// alone (RFC 8881 §18.46.3).
func (c *compound) sequence(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.sequence
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	res, st := c.v.state.Sequence(nfs4state.SequenceArgs{
		SessionID: a.SessionID, SequenceID: a.SequenceID, SlotID: a.SlotID,
		HighestSlotID: a.HighestSlotID, CacheThis: a.CacheThis, Conn: c.v.conns.of(c.ctx, c.req.Conn),
		Ops: c.r.NumOps, RequestSize: c.requestSize(),
	})
	if st != nfs4.OK {
		return c.only(op, st)
	}
	if res.Replay != nil {
		c.res.Truncate(c.start)
		c.res.FixedOpaque(res.Replay)
		c.replay = true
		return nfs4.OK
	}
	r := &c.ops.sequenceRes
	*r = nfs4.SequenceRes{Status: nfs4.OK, SessionID: res.SessionID, SequenceID: res.SequenceID,
		SlotID: res.SlotID, HighestSlotID: res.HighestSlotID, TargetHighestSlotID: res.TargetHighestSlotID,
		StatusFlags: res.StatusFlags}
	if res.Uncached {
		c.replayUncached(r)
		return nfs4.OK
	}
	c.slot, c.inSession, c.clientID, c.cacheThis = res.Slot, true, res.ClientID, a.CacheThis
	c.sessionID = res.SessionID
	// ca_maxresponsesize and ca_maxresponsesize_cached bound the whole reply, its RPC
	// header with it (RFC 8881 §18.36.3, as knfsd counts them); the header is what
	// res holds before COMPOUND4res (c.start), and the bounds are kept from there.
	c.maxReply = sizeAfterHeader(int(res.Fore.MaxResponseSize), c.start)
	if a.CacheThis {
		c.maxCached = sizeAfterHeader(c.slot.MaxCachedReply(), c.start)
	}
	c.w.Add(r)
	return nfs4.OK
}

// replayUncached answers a retry of the slot's last request whose reply was not cached
// (sa_cachethis FALSE, or no reply at all): the SEQUENCE result r, which the slot
// gives, then NFS4ERR_RETRY_UNCACHED_REP for the operation after SEQUENCE, if there
// is one, and nothing runs. sa_cachethis asks for the results of the operations after
// SEQUENCE to be cached (RFC 8881 §2.10.6.1.3), so a solo SEQUENCE's retry (a Linux
// client's lease renewal) succeeds, as under knfsd (nfsd4_enc_sequence_replay).
func (c *compound) replayUncached(r *nfs4.SequenceRes) {
	c.w.Add(r)
	status := nfs4.OK
	if c.r.More() {
		op, err := c.r.Next()
		if err != nil {
			op = nfs4.OpIllegal
		}
		status = c.only(op, nfs4.ErrRetryUncachedRep)
	}
	c.w.Finish(status)
	c.replay = true
}

// requestSize is the size of the call as ca_maxrequestsize counts it (RFC 8881
// §18.36.3): the bytes decoded so far, the RPC call header among them (the decoder's
// positions are those of the whole call), and the inline bytes left.
func (c *compound) requestSize() int { return c.d.Pos() + c.d.Len() }

// sizeAfterHeader is a channel's bound on a whole reply, limit, less the header of
// hdr bytes before COMPOUND4res: at least 1, so that a reply that cannot fit at all
// is refused; a limit of 0 (none) stays 0.
func sizeAfterHeader(limit, hdr int) int {
	if limit <= 0 {
		return 0
	}
	return max(limit-hdr, 1)
}

// replayed reports whether SEQUENCE answered the COMPOUND from the reply cache.
func (c *compound) replayed() bool { return c.replay }

// finishSlot releases the session slot with the encoded reply, which it caches when
// the client asked for that (sa_cachethis). The sizes were checked as the results
// were written (checkReplySize), so the reply fits.
func (c *compound) finishSlot() {
	if !c.slot.Valid() {
		return
	}
	var reply []byte
	if c.cacheThis {
		reply = c.replyBytes()
	}
	c.slot.Done(reply)
}

// replyBytes returns the COMPOUND4res encoded so far as one byte slice: the inline
// bytes, or, when a payload (READ data) was elided from them, a flattened copy.
func (c *compound) replyBytes() []byte {
	inline := c.res.Bytes()[c.startInline:]
	var ps []xdr.Payload
	for _, p := range c.res.Payloads() {
		if p.Pos >= c.start {
			ps = append(ps, xdr.Payload{Pos: p.Pos - c.start, Data: p.Data})
		}
	}
	if len(ps) == 0 {
		return inline
	}
	return xdr.Flatten(nil, inline, ps)
}

// opBackchannelCtl is BACKCHANNEL_CTL: a new callback program and security parameters
// for the COMPOUND's session; the back channel is probed again with them, without
// waiting for the back-off of an earlier failure.
func (c *compound) opBackchannelCtl(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.backchannelCtl
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	st := c.v.state.BackchannelCtl(c.sessionID, a.CBProgram, a.SecParms)
	if st == nfs4.OK {
		c.v.probe(c.req.Conn, c.sessionID, true)
	}
	return c.only(op, st)
}

// opReclaimComplete is RECLAIM_COMPLETE. With rca_one_fs TRUE it names the file
// system of the current file handle, so it needs one (NFS4ERR_NOFILEHANDLE, RFC 8881
// §18.51.3, as knfsd answers).
func (c *compound) opReclaimComplete(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.reclaimComplete
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	if a.OneFS && c.cur.n == 0 {
		return c.only(op, nfs4.ErrNofilehandle)
	}
	return c.only(op, c.v.state.ReclaimComplete(c.clientID, a.OneFS))
}

// opSecinfo answers SECINFO for a name in the current directory with the flavors
// SECINFO_NO_NAME gives; it consumes the current file handle too (RFC 8881 §2.6.3.1.1.8).
func (c *compound) opSecinfo(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.secinfo
	r := &c.ops.secinfoRes
	*r = nfs4.SecinfoRes{OpNum: op, Flavors: r.Flavors[:0]}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if r.Status = c.lookup(a.Name); r.Status == nfs4.OK {
		r.Flavors = append(r.Flavors, nfs4.Secinfo4{Flavor: nfs4.AuthSys}, nfs4.Secinfo4{Flavor: nfs4.AuthNone})
		c.cur.clear()
	}
	c.w.Add(r)
	return r.Status
}

// opSecinfoNoName answers SECINFO_NO_NAME: the flavors of the export (AUTH_SYS, then
// AUTH_NONE, which every export accepts, as calls without credentials act as the
// anonymous identity). It consumes the current file handle (RFC 8881 §2.6.3.1.1.8).
func (c *compound) opSecinfoNoName(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.secinfoNoName
	r := &c.ops.secinfoRes
	*r = nfs4.SecinfoRes{OpNum: op, Flavors: r.Flavors[:0]}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if c.cur.n == 0 {
		r.Status = nfs4.ErrNofilehandle
	} else {
		if a.Style == nfs4.SecinfoStyleParent {
			r.Status = c.lookupp()
		}
		if r.Status == nfs4.OK {
			r.Flavors = append(r.Flavors, nfs4.Secinfo4{Flavor: nfs4.AuthSys}, nfs4.Secinfo4{Flavor: nfs4.AuthNone})
			c.cur.clear()
		}
	}
	c.w.Add(r)
	return r.Status
}
