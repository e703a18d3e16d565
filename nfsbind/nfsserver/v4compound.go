//go:build linux

package nfsserver

import (
	"context"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// COMPOUND.
//
// The arguments are decoded one operation at a time (nfs4.CompoundArgsReader) into
// values the pooled compound keeps, and each operation runs before the next is read;
// the first operation that fails ends the COMPOUND, whose status is that operation's
// (RFC 8881 §15.2). An operation whose arguments do not decode is answered
// NFS4ERR_BADXDR (or the more specific status the codec names) and ends it too.
//
// Sessions (RFC 8881 §2.10): every COMPOUND must start with SEQUENCE, except one made
// of EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, BIND_CONN_TO_SESSION or
// DESTROY_CLIENTID alone (NFS4ERR_NOT_ONLY_OP when others follow); any other first
// operation is NFS4ERR_OP_NOT_IN_SESSION, and SEQUENCE anywhere but first
// NFS4ERR_SEQUENCE_POS. SEQUENCE checks the COMPOUND against the session's channel
// attributes: more operations than ca_maxoperations is NFS4ERR_TOO_MANY_OPS, a request
// larger than ca_maxrequestsize NFS4ERR_REQ_TOO_BIG. An operation whose result would
// take the reply past ca_maxresponsesize is answered NFS4ERR_REP_TOO_BIG instead, and,
// when the client asked for the reply to be cached (sa_cachethis), past
// ca_maxresponsesize_cached NFS4ERR_REP_TOO_BIG_TO_CACHE. The whole reply is then
// handed to the slot (nfs4state.Slot.Done), which caches it when asked to; a retry of
// the slot's last request is answered with that cached reply without running anything,
// or, when it was not cached, with SEQUENCE's result and NFS4ERR_RETRY_UNCACHED_REP
// for the operation after it.
//
// Minor versions other than 1 are NFS4ERR_MINOR_VERS_MISMATCH with no results, which
// makes a Linux client fall back from 4.2 to 4.1. The NFSv4.0-only operations
// (SETCLIENTID, SETCLIENTID_CONFIRM, RENEW, OPEN_CONFIRM, RELEASE_LOCKOWNER) are
// NFS4ERR_NOTSUPP in 4.1 (RFC 8881 §15.2); so are the pNFS, delegation, directory
// delegation, named attribute and SSV operations this server does not offer.

// fhState is a current or saved file handle of a COMPOUND: a handle of an export
// (srv set, and id what it names, its MAC checked) or of a pseudo directory (node
// set), or none (n == 0); with the stateid associated with it, the current or
// saved stateid (RFC 8881 §16.2.3.1.2), when hasSid.
type fhState struct {
	buf  [nfs4.FHSize]byte
	n    int
	srv  *Server
	id   handleID
	node *pseudoNode

	sid    nfs4.Stateid4
	hasSid bool
}

func (f *fhState) fh() []byte { return f.buf[:f.n] }

// set makes fh the file handle. Its stateid is then none: an operation that sets
// the current file handle without returning a stateid sets the current stateid to
// (0, 0) (RFC 8881 §16.2.3.1.2).
func (f *fhState) set(fh []byte, srv *Server, node *pseudoNode) {
	f.n = copy(f.buf[:], fh)
	f.srv, f.node, f.id = srv, node, handleID{}
	f.sid, f.hasSid = nfs4.Stateid4{}, false
}

func (f *fhState) clear() {
	f.n, f.srv, f.node, f.id = 0, nil, nil, handleID{}
	f.sid, f.hasSid = nfs4.Stateid4{}, false
}

// compound is the state of one COMPOUND. Compounds are pooled, with the argument and
// result values of every operation, so that a steady-state READ or WRITE COMPOUND
// allocates nothing.
type compound struct {
	v   *v4Server
	ctx context.Context
	req *oncrpc.Request
	res *xdr.Encoder
	set *v4Set

	r nfs4.CompoundArgsReader
	w nfs4.CompoundResWriter
	d *xdr.Decoder

	cur, saved fhState

	// start is the logical position of COMPOUND4res in res, after the RPC reply
	// header; maxReply and maxCached bound the reply's size from there, the
	// session's limits less that header (0: not in a session yet).
	start       int
	startInline int
	maxReply    int
	maxCached   int
	inSession   bool
	cacheThis   bool
	replay      bool
	clientID    uint64
	sessionID   nfs4.SessionID
	slot        nfs4state.Slot

	// abort, when set by an operation, ends the COMPOUND without a reply (the
	// call's context ended while it waited).
	abort error
	// readBufs is the size of the READ buffers the COMPOUND holds.
	readBufs int

	// credSrv is the export cred was computed for (credentials depend on the
	// export's client list), nil when none was.
	credSrv *Server
	cred    cred

	ops opValues
}

func newCompound(v *v4Server) *compound { return &compound{v: v} }

// reset drops the references a finished COMPOUND holds.
func (c *compound) reset() {
	c.ctx, c.req, c.res, c.set, c.d = nil, nil, nil, nil, nil
	c.r, c.w = nfs4.CompoundArgsReader{}, nfs4.CompoundResWriter{}
	c.cur.clear()
	c.saved.clear()
	c.maxReply, c.maxCached = 0, 0
	c.inSession, c.cacheThis, c.replay, c.clientID, c.slot = false, false, false, 0, nfs4state.Slot{}
	c.sessionID = nfs4.SessionID{}
	c.credSrv, c.cred = nil, cred{}
	c.abort, c.readBufs = nil, 0
	c.ops.reset()
}

// opHandler runs one operation: it decodes the arguments from c.d, acts, writes the
// result (after c.w.Op) and returns its status.
type opHandler func(c *compound, op nfs4.OpNum) nfs4.Status

// run executes the COMPOUND of req.
func (c *compound) run(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	c.ctx, c.req, c.res, c.set = ctx, req, res, c.v.set()
	if err := c.r.Reset(req.Args); err != nil {
		return garbage(err)
	}
	c.d = c.r.Decoder()
	c.start, c.startInline = res.Pos(), res.Len()
	c.w.Begin(res, c.r.Tag)
	if c.r.MinorVersion != nfs4.MinorVersion {
		c.w.Finish(nfs4.ErrMinorVersMismatch)
		return nil
	}
	status := nfs4.OK
	for c.r.More() {
		op, err := c.r.Next()
		if err != nil {
			// The operations before it consumed the bytes the count was checked
			// against: answer the operation that cannot be read as ILLEGAL with
			// NFS4ERR_BADXDR, so that the COMPOUND's status is its last result's.
			status = c.only(nfs4.OpIllegal, nfs4.ErrBadxdr)
			break
		}
		if st := c.admitOp(op); st != nfs4.OK {
			status = c.only(op, st)
			break
		}
		if op == nfs4.OpSequence {
			status = c.sequence(op)
			if c.replayed() {
				return nil
			}
		} else {
			status = c.dispatch(op)
		}
		if c.abort != nil {
			return c.abort // the slot is released by putCompound
		}
		if status == nfs4.OK {
			status = c.checkReplySize(op)
		}
		if status != nfs4.OK {
			if c.v.log.IsDebug() {
				c.v.log.Debug("COMPOUND operation failed", "client", req.RemoteAddr, "op", op.String(),
					"index", c.r.Index(), "ops", c.r.NumOps, "status", status.String())
			}
			break
		}
	}
	c.w.Finish(status)
	c.finishSlot()
	return nil
}

// admitOp applies the session rules to the operation about to run (see above).
func (c *compound) admitOp(op nfs4.OpNum) nfs4.Status {
	first := c.r.Index() == 0
	switch {
	case op == nfs4.OpSequence:
		if !first {
			return nfs4.ErrSequencePos
		}
	case first && sessionless(op):
		if c.r.NumOps > 1 {
			return nfs4.ErrNotOnlyOp
		}
	case first:
		if op == nfs4.OpIllegal {
			return nfs4.ErrOpIllegal
		}
		return nfs4.ErrOpNotInSession
	}
	return nfs4.OK
}

// sessionless reports whether op may form a COMPOUND without SEQUENCE.
func sessionless(op nfs4.OpNum) bool {
	switch op {
	case nfs4.OpExchangeID, nfs4.OpCreateSession, nfs4.OpDestroySession, nfs4.OpBindConnToSession, nfs4.OpDestroyClientID:
		return true
	}
	return false
}

// only writes op's result as the status alone and returns the status: the whole
// result of the operations whose result is a status (PUTFH, SAVEFH, ...), and the
// result of any operation failing with a status whose result has no body (for an
// error found before the operation runs, every status but NFS4_OK, NFS4ERR_DENIED
// and NFS4ERR_MINOR_VERS_MISMATCH). SETATTR4res always carries attrsset, which is
// written empty.
func (c *compound) only(op nfs4.OpNum, st nfs4.Status) nfs4.Status {
	c.w.Op(op)
	c.res.Uint32(uint32(st))
	if op == nfs4.OpSetattr {
		c.res.Uint32(0) // attrsset: an empty bitmap4
	}
	return st
}

// dispatch runs op.
func (c *compound) dispatch(op nfs4.OpNum) nfs4.Status {
	var h opHandler
	if int(op) < len(opTable) {
		h = opTable[op]
	}
	if op == nfs4.OpIllegal {
		return c.only(op, nfs4.ErrOpIllegal)
	}
	if h == nil {
		return c.only(op, nfs4.ErrNotsupp)
	}
	return h(c, op)
}

// checkReplySize undoes the result of op when it took the reply past the session's
// limits, and answers op with NFS4ERR_REP_TOO_BIG or NFS4ERR_REP_TOO_BIG_TO_CACHE
// instead (RFC 8881 §2.10.6.4, §18.46.3).
func (c *compound) checkReplySize(op nfs4.OpNum) nfs4.Status {
	if !c.inSession {
		return nfs4.OK
	}
	size := c.res.Pos() - c.start
	st := nfs4.OK
	switch {
	case c.maxReply > 0 && size > c.maxReply:
		st = nfs4.ErrRepTooBig
	case c.maxCached > 0 && size > c.maxCached:
		st = nfs4.ErrRepTooBigToCache
	default:
		return nfs4.OK
	}
	c.w.Undo()
	return c.only(op, st)
}

// decodeErr is the status answering arguments that did not decode.
func decodeErr(err error) nfs4.Status { return nfs4.StatusOf(err) }

// opTable maps each operation this server implements to its handler; nil entries are
// NFS4ERR_NOTSUPP.
var opTable [nfs4.OpReclaimComplete + 1]opHandler

func init() {
	for op, h := range map[nfs4.OpNum]opHandler{
		nfs4.OpPutfh:     (*compound).opPutfh,
		nfs4.OpPutrootfh: (*compound).opPutrootfh,
		nfs4.OpPutpubfh:  (*compound).opPutrootfh,
		nfs4.OpGetfh:     (*compound).opGetfh,
		nfs4.OpSavefh:    (*compound).opSavefh,
		nfs4.OpRestorefh: (*compound).opRestorefh,
		nfs4.OpLookup:    (*compound).opLookup,
		nfs4.OpLookupp:   (*compound).opLookupp,

		nfs4.OpExchangeID:        (*compound).opExchangeID,
		nfs4.OpCreateSession:     (*compound).opCreateSession,
		nfs4.OpDestroySession:    (*compound).opDestroySession,
		nfs4.OpDestroyClientID:   (*compound).opDestroyClientID,
		nfs4.OpBindConnToSession: (*compound).opBindConnToSession,
		nfs4.OpReclaimComplete:   (*compound).opReclaimComplete,
		nfs4.OpSecinfoNoName:     (*compound).opSecinfoNoName,
		nfs4.OpSecinfo:           (*compound).opSecinfo,
		nfs4.OpBackchannelCtl:    (*compound).opBackchannelCtl,

		nfs4.OpGetattr: (*compound).opGetattr,
		nfs4.OpSetattr: (*compound).opSetattr,
		nfs4.OpVerify:  (*compound).opVerify,
		nfs4.OpNverify: (*compound).opVerify,
		nfs4.OpAccess:  (*compound).opAccess,

		nfs4.OpCreate:   (*compound).opCreate,
		nfs4.OpRemove:   (*compound).opRemove,
		nfs4.OpRename:   (*compound).opRename,
		nfs4.OpLink:     (*compound).opLink,
		nfs4.OpReadlink: (*compound).opReadlink,
		nfs4.OpReaddir:  (*compound).opReaddir,

		nfs4.OpRead:   (*compound).opRead,
		nfs4.OpWrite:  (*compound).opWrite,
		nfs4.OpCommit: (*compound).opCommit,

		nfs4.OpOpen:          (*compound).opOpen,
		nfs4.OpOpenDowngrade: (*compound).opOpenDowngrade,
		nfs4.OpClose:         (*compound).opClose,
		nfs4.OpLock:          (*compound).opLock,
		nfs4.OpLockt:         (*compound).opLockt,
		nfs4.OpLocku:         (*compound).opLocku,
		nfs4.OpTestStateid:   (*compound).opTestStateid,
		nfs4.OpFreeStateid:   (*compound).opFreeStateid,
	} {
		opTable[op] = h
	}
}

// opValues holds the decoded arguments and the results of each operation, reused by
// the COMPOUNDs that use the pooled compound.
type opValues struct {
	putfh  nfs4.PutfhArgs
	getfh  nfs4.GetfhRes
	lookup nfs4.LookupArgs

	exchangeID       nfs4.ExchangeIDArgs
	exchangeIDRes    nfs4.ExchangeIDRes
	createSession    nfs4.CreateSessionArgs
	createSessionRes nfs4.CreateSessionRes
	destroySession   nfs4.DestroySessionArgs
	destroyClientID  nfs4.DestroyClientIDArgs
	bindConn         nfs4.BindConnToSessionArgs
	bindConnRes      nfs4.BindConnToSessionRes
	sequence         nfs4.SequenceArgs
	sequenceRes      nfs4.SequenceRes
	reclaimComplete  nfs4.ReclaimCompleteArgs
	secinfoNoName    nfs4.SecinfoNoNameArgs
	secinfo          nfs4.SecinfoArgs
	backchannelCtl   nfs4.BackchannelCtlArgs
	secinfoRes       nfs4.SecinfoRes

	getattr    nfs4.GetattrArgs
	getattrRes nfs4.GetattrRes
	setattr    nfs4.SetattrArgs
	setattrRes nfs4.SetattrRes
	verify     nfs4.VerifyArgs
	verifyMask nfs4.Bitmap4
	verifyBuf  []byte
	access     nfs4.AccessArgs
	accessRes  nfs4.AccessRes
	attrBuf    attrBuf

	create       nfs4.CreateArgs
	createRes    nfs4.CreateRes
	name         nfs4.NameArgs
	cinfoRes     nfs4.CinfoRes
	rename       nfs4.RenameArgs
	renameRes    nfs4.RenameRes
	readlinkRes  nfs4.ReadlinkRes
	readdir      nfs4.ReaddirArgs
	readdirMask  nfs4.Bitmap4
	readdirEnc   nfs4.ReaddirEncoder
	readdirAttrs nfs4.Fattr

	read      nfs4.ReadArgs
	readRes   nfs4.ReadRes
	write     nfs4.WriteArgs
	writeRes  nfs4.WriteRes
	commit    nfs4.CommitArgs
	commitRes nfs4.CommitRes

	open           nfs4.OpenArgs
	openRes        nfs4.OpenRes
	openDowngrade  nfs4.OpenDowngradeArgs
	close          nfs4.CloseArgs
	stateidRes     nfs4.StateidRes
	lock           nfs4.LockArgs
	lockt          nfs4.LocktArgs
	locku          nfs4.LockuArgs
	lockRes        nfs4.LockRes
	testStateid    nfs4.TestStateidArgs
	testStateidRes nfs4.TestStateidRes
	stateidArgs    nfs4.StateidArgs
}

// reset drops the references into a finished call's buffers.
func (o *opValues) reset() {
	o.putfh.Object = nil
	o.getfh.Object = nil
	o.lookup.ObjName = nil
	o.exchangeID.ClientOwner.OwnerID = nil
	o.exchangeID.ImplID = nfs4.NFSImplID4{}
	o.exchangeIDRes = nfs4.ExchangeIDRes{}
	o.secinfo.Name = nil
	o.createSession.SecParms, o.backchannelCtl.SecParms = nil, nil // they alias the call
	o.getattrRes.Attr.Filehandle = nil
	o.setattr.Attr.Owner, o.setattr.Attr.OwnerGroup, o.setattr.Attr.Filehandle = nil, nil, nil
	o.verify.Attrs.Vals = nil
	o.create.LinkData, o.create.ObjName = nil, nil
	o.create.Attrs.Owner, o.create.Attrs.OwnerGroup, o.create.Attrs.Filehandle = nil, nil, nil
	o.name.Name = nil
	o.rename = nfs4.RenameArgs{}
	o.readlinkRes.Link = nil
	o.readdirEnc = nfs4.ReaddirEncoder{}
	o.readdirAttrs.Filehandle = nil
	o.readRes.Data = nil
	o.write.Data = nil
	o.open.Owner.Owner, o.open.Claim.File = nil, nil
	o.open.How.Attrs.Owner, o.open.How.Attrs.OwnerGroup, o.open.How.Attrs.Filehandle = nil, nil, nil
	o.lock.Locker.LockOwner.Owner = nil
	o.lockt.Owner.Owner = nil
	o.lockRes.Denied.Owner.Owner = nil
}
