//go:build linux

package nfsserver

import (
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
)

// LOCK, LOCKT, LOCKU, TEST_STATEID and FREE_STATEID: byte-range locks and stateid
// housekeeping, decided by the state manager. The locks are advisory, POSIX-style
// and held by the server's state only (local processes on the server do not see
// them); READ and WRITE do not check them. The blocking lock types are answered as
// the non-blocking ones: NFS4ERR_DENIED at once, the client polls.

// lockFile returns the state key of the current file handle for LOCK, LOCKT or
// LOCKU, which need a regular file: NFS4ERR_ISDIR for a directory, NFS4ERR_SYMLINK for
// a symbolic link, NFS4ERR_WRONG_TYPE for anything else (RFC 8881 §18.10.3, §18.11.3,
// §18.12.3), before any stateid is looked at, as knfsd checks. An object that can no
// longer be found (a file removed while locked) is left to the state manager, which
// knows it by the handle's identity (curFile), so that LOCKU still releases its locks.
func (c *compound) lockFile() (nfs4state.FileKey, nfs4.Status) {
	srv, key, st := c.curFile()
	if st != nfs4.OK {
		return key, st
	}
	cr := c.credFor(srv)
	var stx unix.Statx_t
	if !srv.statCached(c.cur.fh(), &stx, cr) {
		var o object
		st3 := srv.open(c.cur.fh(), &o, cr)
		stx = o.st
		o.close()
		if st3 != nfs3.StatusOK {
			return key, nfs4.OK
		}
	}
	if !isReg(&stx) {
		return key, regTypeStatus(&stx)
	}
	return key, nfs4.OK
}

// denied4 converts the state manager's conflicting lock to LOCK4denied.
func denied4(d *nfs4state.LockDenied, out *nfs4.LockDenied4) {
	if d == nil {
		return
	}
	*out = nfs4.LockDenied4{Offset: d.Offset, Length: d.Length, LockType: d.Type,
		Owner: nfs4.StateOwner4{ClientID: d.ClientID, Owner: d.Owner}}
}

func (c *compound) opLock(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.lock
	r := &c.ops.lockRes
	*r = nfs4.LockRes{OpNum: op}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if key, st := c.lockFile(); st != nfs4.OK {
		r.Status = st
	} else {
		l := &a.Locker
		sid, d, st := c.v.state.Lock(&nfs4state.LockArgs{
			ClientID: c.clientID, File: key, Type: a.LockType, Reclaim: a.Reclaim,
			Offset: a.Offset, Length: a.Length, NewLockOwner: l.NewLockOwner,
			OpenStateid: c.stateid(l.OpenStateid), Owner: l.LockOwner.Owner, LockStateid: c.stateid(l.LockStateid),
		})
		r.Status, r.LockStateid = st, sid
		denied4(d, &r.Denied)
		if st == nfs4.OK {
			c.setStateid(sid)
		}
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) opLockt(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.lockt
	r := &c.ops.lockRes
	*r = nfs4.LockRes{OpNum: op}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if key, st := c.lockFile(); st != nfs4.OK {
		r.Status = st
	} else {
		d, st := c.v.state.LockT(c.clientID, key, a.LockType, a.Offset, a.Length, a.Owner.Owner)
		r.Status = st
		denied4(d, &r.Denied)
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) opLocku(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.locku
	r := &c.ops.stateidRes
	*r = nfs4.StateidRes{OpNum: op}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else if key, st := c.lockFile(); st != nfs4.OK {
		r.Status = st
	} else {
		r.Stateid, r.Status = c.v.state.LockU(c.clientID, c.stateid(a.LockStateid), key, a.LockType, a.Offset, a.Length)
		if r.Status == nfs4.OK {
			c.setStateid(r.Stateid)
		}
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) opTestStateid(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.testStateid
	r := &c.ops.testStateidRes
	r.Status, r.StatusCodes = nfs4.OK, r.StatusCodes[:0]
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		for range a.Stateids {
			r.StatusCodes = append(r.StatusCodes, nfs4.OK)
		}
		r.Status = c.v.state.TestStateid(c.clientID, a.Stateids, r.StatusCodes)
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) opFreeStateid(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.stateidArgs
	a.OpNum = op
	if err := a.DecodeXDR(c.d); err != nil {
		return c.only(op, decodeErr(err))
	}
	return c.only(op, c.v.state.FreeStateid(c.clientID, c.stateid(a.Stateid)))
}
