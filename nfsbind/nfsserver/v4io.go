//go:build linux

package nfsserver

import (
	"math"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
)

// READ, WRITE and COMMIT.
//
// They run on NFSv3's open-file cache and code: READ data leaves as an xdr.Payload
// (over RDMA, RDMA-Written into the write chunk that belongs to this READ's position in
// the COMPOUND, RFC 8267 §4), from a buffer reserved against the connection's memory
// budget and held until the reply is sent; WRITE data arrives however the transport
// carried it (a read chunk over RDMA) and is written as NFSv3 writes it, synced for
// DATA_SYNC4 and FILE_SYNC4; COMMIT fsyncs. Before any I/O the stateid is checked
// (nfs4state CheckIO: bad, old, stale, expired, share reservations, open mode), then
// the caller's permission on the file as in NFSv3. A steady-state READ or WRITE
// COMPOUND allocates nothing.

// curFile returns the export and the state key of the current file handle, taken
// from the handle itself (its device, inode and generation), so that CLOSE and LOCKU
// work on a file removed meanwhile. A pseudo directory is NFS4ERR_ISDIR.
func (c *compound) curFile() (*Server, nfs4state.FileKey, nfs4.Status) {
	switch {
	case c.cur.n == 0:
		return nil, nfs4state.FileKey{}, nfs4.ErrNofilehandle
	case c.cur.node != nil:
		return nil, nfs4state.FileKey{}, nfs4.ErrIsdir
	}
	id := c.cur.id // decoded, its MAC checked, when it became current
	return c.cur.srv, nfs4state.FileKey{Dev: id.key.dev, Ino: id.key.ino, Gen: id.gen}, nfs4.OK
}

// currentStateid is the special stateid that means the COMPOUND's current stateid
// (RFC 8881 §16.2.3.1.2): seqid 1, other all zeros.
var currentStateid = nfs4.Stateid4{Seqid: 1}

// stateid resolves the special "current stateid" to the stateid associated with the
// current file handle: the one the OPEN, LOCK, OPEN_DOWNGRADE, CLOSE or LOCKU that
// last returned a stateid set, unless an operation set the current file handle since
// (RESTOREFH brings back the saved one's). Without one it stays the special stateid,
// which the state manager refuses as NFS4ERR_BAD_STATEID (RFC 8881 §16.2.3.1.2,
// Figure 6).
func (c *compound) stateid(sid nfs4.Stateid4) nfs4.Stateid4 {
	if sid == currentStateid && c.cur.hasSid {
		return c.cur.sid
	}
	return sid
}

// setStateid makes sid the COMPOUND's current stateid.
func (c *compound) setStateid(sid nfs4.Stateid4) { c.cur.sid, c.cur.hasSid = sid, true }

func (c *compound) opRead(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.read
	r := &c.ops.readRes
	*r = nfs4.ReadRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.read(a, r)
	}
	c.w.Add(r)
	return r.Status
}

// maxReadBufsPerCompound bounds the READ buffers one COMPOUND holds, in MaxIO units.
// The session's reply size bounds the data its READs return, but each READ takes a
// whole buffer (64 KiB, or MaxIO past that), so many small READs in one COMPOUND could
// otherwise reserve more of the connection's memory budget than it has and wait for
// themselves. A READ past the bound is NFS4ERR_REP_TOO_BIG.
const maxReadBufsPerCompound = 2

func (c *compound) read(a *nfs4.ReadArgs, r *nfs4.ReadRes) nfs4.Status {
	srv, key, st := c.curFile()
	if st != nfs4.OK {
		return st
	}
	var stx unix.Statx_t
	f, st3 := srv.openIO(c.cur.fh(), accRead, c.credFor(srv), &stx)
	if f == nil {
		return ioStatus4(st3, &stx)
	}
	defer srv.files.release(f)
	if st := c.v.state.CheckIO(c.clientID, c.stateid(a.Stateid), key, false); st != nfs4.OK {
		return st
	}
	if !mayIO(c.credFor(srv), &stx, permR) {
		return nfs4.ErrAccess
	}
	count := min(int(a.Count), srv.opts.MaxIO)
	if c.maxReply > 0 {
		// Leave room for the rest of READ4res and the results after it.
		count = max(min(count, c.maxReply-(c.res.Pos()-c.start)-64), 0)
	}
	if a.Offset >= math.MaxInt64 || count == 0 {
		r.EOF = a.Offset >= stx.Size
		return nfs4.OK
	}
	size := srv.readBufSize(count)
	if c.readBufs+size > maxReadBufsPerCompound*srv.opts.MaxIO {
		return nfs4.ErrRepTooBig
	}
	c.readBufs += size
	if err := c.req.Reserve(c.ctx, size); err != nil {
		// The call's connection ended while the budget was spent: abandon the
		// COMPOUND (run returns the error).
		c.abort = err
		return nfs4.ErrDelay
	}
	rb := srv.getReadBuf(size)
	buf := rb.b[:count]
	n, err := preadFull(f.fd, buf, a.Offset)
	if err != nil {
		rb.release()
		return errStatus4(err)
	}
	c.req.AfterReply(rb.release)
	end := a.Offset + uint64(n)
	if n == count && end >= stx.Size {
		_ = statFD(f.fd, &stx)
	}
	r.Data, r.EOF = buf[:n], n < count || end >= stx.Size
	return nfs4.OK
}

func (c *compound) opWrite(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.write
	r := &c.ops.writeRes
	*r = nfs4.WriteRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.write(a, r)
	}
	c.w.Add(r)
	return r.Status
}

func (c *compound) write(a *nfs4.WriteArgs, r *nfs4.WriteRes) nfs4.Status {
	srv, key, st := c.curFile()
	if st != nfs4.OK {
		return st
	}
	cr := c.credFor(srv)
	var stx unix.Statx_t
	f, st3 := srv.openWrite(c.cur.fh(), cr, &stx) // writable only if cr may write it
	if f == nil {
		return ioStatus4(st3, &stx)
	}
	defer srv.files.release(f)
	if st := c.v.state.CheckIO(c.clientID, c.stateid(a.Stateid), key, true); st != nfs4.OK {
		return st
	}
	a3 := nfs3.WriteArgs{Offset: a.Offset, Stable: nfs3.StableHow(a.Stable), Data: a.Data}
	var r3 nfs3.WriteRes
	if st3 := srv.doWrite(f, &stx, &a3, cr, &r3); st3 != nfs3.StatusOK {
		return st4(st3)
	}
	r.Count, r.Committed, r.WriteVerf = r3.Count, nfs4.StableHow(r3.Committed), nfs4.Verifier(r3.Verf)
	return nfs4.OK
}

func (c *compound) opCommit(op nfs4.OpNum) nfs4.Status {
	a := &c.ops.commit
	r := &c.ops.commitRes
	*r = nfs4.CommitRes{}
	if err := a.DecodeXDR(c.d); err != nil {
		r.Status = decodeErr(err)
	} else {
		r.Status = c.commit(r)
	}
	c.w.Add(r)
	return r.Status
}

// commit fsyncs the whole file, whatever range COMMIT names (RFC 8881 §18.3.3 allows
// more than asked).
func (c *compound) commit(r *nfs4.CommitRes) nfs4.Status {
	srv, _, st := c.curFile()
	if st != nfs4.OK {
		return st
	}
	var stx unix.Statx_t
	cr := c.credFor(srv)
	f, st3 := srv.openIO(c.cur.fh(), 0, cr, &stx)
	if f == nil {
		return ioStatus4(st3, &stx)
	}
	defer srv.files.release(f)
	if st3 := mayCommit(cr, &stx); st3 != nfs3.StatusOK {
		return st4(st3)
	}
	if err := srv.sys.fsync(f.fd); err != nil {
		srv.resetVerifier(err)
		return errStatus4(err)
	}
	r.WriteVerf = nfs4.Verifier(srv.writeVerf()) // after the fsync, as NFSv3's COMMIT
	return nfs4.OK
}
