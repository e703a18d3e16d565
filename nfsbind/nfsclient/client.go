// Package nfsclient is an NFS version 3 client library over any oncrpc.RoundTripper:
// the ONC RPC TCP transport today, RPC-over-RDMA through package rpcrdma, unchanged.
//
// READ passes the caller's buffer to the transport as a reply sink, so an RDMA
// transport places the file data there directly (a write chunk) and the data is never
// copied; over TCP it arrives inline and is copied once into the same buffer. WRITE
// passes the caller's data as an xdr.Payload, which an RDMA transport sends as a read
// chunk and TCP writes with one vectored write, again without a copy. Each call
// carries nfsbind.MaxReply as its reply size bound, which is what an RDMA transport
// sizes a reply chunk by (READDIR, READDIRPLUS, READLINK).
//
// Results are copied out of the transport's reply buffer before a method returns, so
// every handle, name and byte slice a method returns belongs to the caller. A non-OK
// nfsstat3 is returned as an error wrapping the nfs3.Status, so
// errors.Is(err, nfs3.StatusNoEnt) works.
package nfsclient

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/nfsbind"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Client calls one NFSv3 server. It is safe for concurrent use.
type Client struct {
	nfs    *oncrpc.Client
	root   nfs3.FH
	rtmax  uint32
	wtmax  uint32
	dtpref uint32
}

// decodeFunc adapts a function to xdr.DecoderFrom.
type decodeFunc func(d *xdr.Decoder) error

func (f decodeFunc) DecodeXDR(d *xdr.Decoder) error { return f(d) }

// Transports names the transports Mount uses, so that the transport carrying NFS
// (the one a benchmark or an RDMA user cares about) cannot be confused with the one
// carrying MOUNT. Both may be the same transport when one server connection answers
// both programs.
type Transports struct {
	// NFS carries the NFSv3 calls: READ, WRITE and every other procedure of the
	// returned Client. It is typically an rpcrdma transport, or a TCP one.
	NFS oncrpc.RoundTripper
	// Mount carries the MOUNT v3 MNT call, usually over TCP to the server's mountd
	// port. Nil means NFS carries it too.
	Mount oncrpc.RoundTripper
}

// Mount asks the server's MOUNT v3 service (over t.Mount) for the handle of path,
// then opens an NFSv3 client on it over t.NFS with New. opts apply to both programs'
// calls.
func Mount(ctx context.Context, t Transports, path string, opts ...oncrpc.ClientOption) (*Client, error) {
	if t.NFS == nil {
		return nil, fmt.Errorf("nfsclient: MNT %s: no NFS transport (Transports.NFS is nil)", path)
	}
	mountRT := t.Mount
	if mountRT == nil {
		mountRT = t.NFS
	}
	mc := oncrpc.NewClient(mountRT, nfs3.MountProgram, nfs3.MountVersion, opts...)
	var r nfs3.MntRes
	var fh nfs3.FH
	err := mc.Call(ctx, uint32(nfs3.MountProcMnt), &nfs3.MntArgs{Path: []byte(path)}, decodeFunc(func(d *xdr.Decoder) error {
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		fh = bytes.Clone(r.FH)
		return nil
	}))
	if err != nil {
		return nil, fmt.Errorf("nfsclient: MNT %s: %w", path, err)
	}
	if r.Status != nfs3.MountOK {
		return nil, fmt.Errorf("nfsclient: MNT %s: %w", path, r.Status)
	}
	return New(ctx, t.NFS, fh, opts...)
}

// Unmount tells the server's MOUNT service the client no longer uses path.
func Unmount(ctx context.Context, mountRT oncrpc.RoundTripper, path string, opts ...oncrpc.ClientOption) error {
	mc := oncrpc.NewClient(mountRT, nfs3.MountProgram, nfs3.MountVersion, opts...)
	if err := mc.Call(ctx, uint32(nfs3.MountProcUmnt), &nfs3.UmntArgs{Path: []byte(path)}, nil); err != nil {
		return fmt.Errorf("nfsclient: UMNT %s: %w", path, err)
	}
	return nil
}

// New returns a client for the export whose root handle is root, after asking the
// server for its transfer sizes (FSINFO).
func New(ctx context.Context, nfsRT oncrpc.RoundTripper, root nfs3.FH, opts ...oncrpc.ClientOption) (*Client, error) {
	c := &Client{nfs: oncrpc.NewClient(nfsRT, nfs3.Program, nfs3.Version, opts...), root: bytes.Clone(root)}
	var r nfs3.FsinfoRes
	if err := c.call(ctx, nfs3.ProcFsinfo, &nfs3.FsinfoArgs{Object: root}, &r, 0); err != nil {
		return nil, err
	}
	if r.Status != nfs3.StatusOK {
		return nil, fmt.Errorf("nfsclient: FSINFO: %w", r.Status)
	}
	c.rtmax, c.wtmax, c.dtpref = max(r.Rtmax, 512), max(r.Wtmax, 512), max(r.Dtpref, 4096)
	c.rtmax, c.wtmax = min(c.rtmax, nfs3.MaxData), min(c.wtmax, nfs3.MaxData)
	// dtpref sizes every READDIR reply (8 times it for READDIRPLUS): bound it by the
	// read size, as the Linux client bounds its dtsize by rsize.
	c.dtpref = min(c.dtpref, max(c.rtmax, 4096))
	return c, nil
}

// Root returns the export's root handle.
func (c *Client) Root() nfs3.FH { return c.root }

// MaxRead returns the largest single READ (the server's rtmax).
func (c *Client) MaxRead() int { return int(c.rtmax) }

// MaxWrite returns the largest single WRITE (the server's wtmax).
func (c *Client) MaxWrite() int { return int(c.wtmax) }

func (c *Client) call(ctx context.Context, p nfs3.Proc, args xdr.EncoderTo, res xdr.DecoderFrom, maxReply int) error {
	return c.callSinks(ctx, p, args, res, maxReply, nil)
}

func (c *Client) callSinks(ctx context.Context, p nfs3.Proc, args xdr.EncoderTo, res xdr.DecoderFrom, maxReply int, sinks [][]byte) error {
	if maxReply == 0 {
		if n, err := nfsbind.MaxReply(p, nil); err == nil {
			maxReply = n // procedures whose bound does not depend on the arguments
		}
	}
	if err := c.nfs.CallWithOptions(ctx, uint32(p), args, res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: maxReply}); err != nil {
		return fmt.Errorf("nfsclient: %v: %w", p, err)
	}
	return nil
}

func opErr(p nfs3.Proc, name string, st nfs3.Status) error {
	if st == nfs3.StatusOK {
		return nil
	}
	if name != "" {
		return fmt.Errorf("nfsclient: %v %q: %w", p, name, st)
	}
	return fmt.Errorf("nfsclient: %v: %w", p, st)
}

// Getattr returns the attributes of fh.
func (c *Client) Getattr(ctx context.Context, fh nfs3.FH) (nfs3.Fattr, error) {
	var r nfs3.GetattrRes
	if err := c.call(ctx, nfs3.ProcGetattr, &nfs3.GetattrArgs{Object: fh}, &r, 0); err != nil {
		return nfs3.Fattr{}, err
	}
	return r.Attr, opErr(nfs3.ProcGetattr, "", r.Status)
}

// Setattr changes the attributes of fh.
func (c *Client) Setattr(ctx context.Context, fh nfs3.FH, attr nfs3.Sattr) error {
	var r nfs3.SetattrRes
	if err := c.call(ctx, nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: fh, Attr: attr}, &r, 0); err != nil {
		return err
	}
	return opErr(nfs3.ProcSetattr, "", r.Status)
}

// Lookup returns the handle and attributes of name in dir.
func (c *Client) Lookup(ctx context.Context, dir nfs3.FH, name string) (nfs3.FH, nfs3.Fattr, error) {
	var r nfs3.LookupRes
	var fh nfs3.FH
	err := c.call(ctx, nfs3.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}}, decodeFunc(func(d *xdr.Decoder) error {
		err := r.DecodeXDR(d)
		fh = bytes.Clone(r.Object)
		return err
	}), 0)
	if err != nil {
		return nil, nfs3.Fattr{}, err
	}
	if err := opErr(nfs3.ProcLookup, name, r.Status); err != nil {
		return nil, nfs3.Fattr{}, err
	}
	if !r.ObjAttr.Present {
		attr, err := c.Getattr(ctx, fh)
		return fh, attr, err
	}
	return fh, r.ObjAttr.Attr, nil
}

// LookupPath resolves a slash-separated path below the export root, one LOOKUP per
// component.
func (c *Client) LookupPath(ctx context.Context, path string) (nfs3.FH, nfs3.Fattr, error) {
	fh := c.root
	attr, err := c.Getattr(ctx, fh)
	if err != nil {
		return nil, nfs3.Fattr{}, err
	}
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		if fh, attr, err = c.Lookup(ctx, fh, name); err != nil {
			return nil, nfs3.Fattr{}, err
		}
	}
	return fh, attr, nil
}

// ioCall is the state of one READ or WRITE. It is pooled, so that the arguments, the
// results and the decoder the transport is handed do not cost an allocation per call.
type ioCall struct {
	readArgs  nfs3.ReadArgs
	readRes   nfs3.ReadRes
	writeArgs nfs3.WriteArgs
	writeRes  nfs3.WriteRes
	sinks     [1][]byte // the READ's reply sink: the caller's buffer
}

var ioCalls = sync.Pool{New: func() any { return new(ioCall) }}

func getIOCall() *ioCall { return ioCalls.Get().(*ioCall) }

// put returns ic to the pool, dropping its references to the caller's handle and
// data and to the transport's reply buffer.
func (ic *ioCall) put() {
	*ic = ioCall{}
	ioCalls.Put(ic)
}

// DecodeXDR decodes READ3res into ic.readRes, leaving the data in ic.sinks[0]: a
// transport that placed it there is done, and inline data is copied there.
func (ic *ioCall) DecodeXDR(d *xdr.Decoder) error {
	r, sink := &ic.readRes, ic.sinks[0]
	if err := r.DecodeXDR(d); err != nil {
		return err
	}
	if len(r.Data) > len(sink) {
		return fmt.Errorf("nfsclient: READ returned %d bytes for count %d", len(r.Data), len(sink))
	}
	if len(r.Data) > 0 && &r.Data[0] != &sink[0] {
		copy(sink, r.Data)
	}
	return nil
}

// Read reads up to len(p) bytes (at most MaxRead) at off into p with one READ. The
// transport may place the data straight into p. It returns the byte count and whether
// the server reported end of file.
func (c *Client) Read(ctx context.Context, fh nfs3.FH, off uint64, p []byte) (int, bool, error) {
	ic := getIOCall()
	defer ic.put()
	count := min(len(p), int(c.rtmax))
	ic.readArgs = nfs3.ReadArgs{File: fh, Offset: off, Count: uint32(count)}
	maxReply, err := nfsbind.MaxReply(nfs3.ProcRead, &ic.readArgs)
	if err != nil {
		return 0, false, err
	}
	ic.sinks[0] = p[:count]
	if err := c.callSinks(ctx, nfs3.ProcRead, &ic.readArgs, ic, maxReply, ic.sinks[:]); err != nil {
		return 0, false, err
	}
	r := &ic.readRes
	return len(r.Data), r.EOF, opErr(nfs3.ProcRead, "", r.Status)
}

// ReadAll reads the whole file fh into a new buffer, MaxRead bytes per READ. It reads
// at most one READ past the size the file had when it began: a file that grows
// meanwhile, or a server that never reports the end, gets an error, and so does a
// READ that returns no data without reporting the end.
func (c *Client) ReadAll(ctx context.Context, fh nfs3.FH) ([]byte, error) {
	attr, err := c.Getattr(ctx, fh)
	if err != nil {
		return nil, err
	}
	// The size is a hint; do not let a server's claim allocate without bound.
	buf := make([]byte, 0, min(attr.Size, 64<<20))
	for {
		if uint64(len(buf)) > attr.Size {
			return nil, fmt.Errorf("nfsclient: READ: more than the file's %d bytes without its end (did it grow?)", attr.Size)
		}
		if cap(buf)-len(buf) < int(c.rtmax) {
			buf = append(buf, make([]byte, c.rtmax)...)[:len(buf)]
		}
		n, eof, err := c.Read(ctx, fh, uint64(len(buf)), buf[len(buf):len(buf)+int(c.rtmax)])
		if err != nil {
			return nil, err
		}
		buf = buf[:len(buf)+n]
		if eof {
			return buf, nil
		}
		if n == 0 {
			// Not the end (eof says where it is), and no progress: the Linux
			// client fails such a READ with EIO rather than end the file here.
			return nil, fmt.Errorf("nfsclient: READ at %d: no data and no end of file", len(buf))
		}
	}
}

// WriteResult reports what a WRITE achieved.
type WriteResult struct {
	Count     int
	Committed nfs3.StableHow
	Verf      [nfs3.WriteVerfSize]byte
}

// Write writes data (at most MaxWrite bytes) at off with one WRITE. The transport may
// send data without copying it; data must not change until Write returns. A reply
// whose count exceeds len(data) is an error; a smaller count (a short write) is
// returned, and the rest is the caller's to send again.
func (c *Client) Write(ctx context.Context, fh nfs3.FH, off uint64, data []byte, stable nfs3.StableHow) (WriteResult, error) {
	if len(data) > int(c.wtmax) {
		return WriteResult{}, fmt.Errorf("nfsclient: WRITE of %d bytes exceeds wtmax %d", len(data), c.wtmax)
	}
	ic := getIOCall()
	defer ic.put()
	ic.writeArgs = nfs3.WriteArgs{File: fh, Offset: off, Count: uint32(len(data)), Stable: stable, Data: data}
	if err := c.call(ctx, nfs3.ProcWrite, &ic.writeArgs, &ic.writeRes, 0); err != nil {
		return WriteResult{}, err
	}
	r := &ic.writeRes
	if err := opErr(nfs3.ProcWrite, "", r.Status); err != nil {
		return WriteResult{}, err
	}
	if int64(r.Count) > int64(len(data)) {
		// RFC 1813 §3.3.7: count is the bytes written, which may be fewer than sent
		// but never more; believing more would skip data never sent.
		return WriteResult{}, fmt.Errorf("nfsclient: WRITE at %d: the server reports count %d for %d bytes sent", off, r.Count, len(data))
	}
	return WriteResult{Count: int(r.Count), Committed: r.Committed, Verf: r.Verf}, nil
}

// WriteAll writes data at offset 0 in MaxWrite pieces with UNSTABLE writes, then
// COMMITs; if the server's write verifier changed meanwhile (it restarted), it writes
// everything again, as RFC 1813 §3.3.21 requires.
func (c *Client) WriteAll(ctx context.Context, fh nfs3.FH, data []byte) error {
	for attempt := 0; attempt < 3; attempt++ {
		var verf [nfs3.WriteVerfSize]byte
		changed := false // a WRITE's verifier differed from the first's
		for off := 0; off < len(data) || (off == 0 && len(data) == 0); {
			end := min(off+int(c.wtmax), len(data))
			w, err := c.Write(ctx, fh, uint64(off), data[off:end], nfs3.Unstable)
			if err != nil {
				return err
			}
			if off == 0 {
				verf = w.Verf
			} else if w.Verf != verf {
				// Any value, zero included, is a verifier: a flag, not a
				// sentinel verifier, records the change.
				changed = true
			}
			if w.Count == 0 && end > off {
				return fmt.Errorf("nfsclient: WRITE at %d made no progress", off)
			}
			off += w.Count
			if len(data) == 0 {
				break
			}
		}
		cv, err := c.Commit(ctx, fh)
		if err != nil {
			return err
		}
		if !changed && cv == verf {
			return nil
		}
	}
	return fmt.Errorf("nfsclient: write verifier kept changing; server restarting?")
}

// Commit flushes fh's unstable writes to stable storage and returns the server's
// write verifier.
func (c *Client) Commit(ctx context.Context, fh nfs3.FH) ([nfs3.WriteVerfSize]byte, error) {
	var r nfs3.CommitRes
	if err := c.call(ctx, nfs3.ProcCommit, &nfs3.CommitArgs{File: fh}, &r, 0); err != nil {
		return r.Verf, err
	}
	return r.Verf, opErr(nfs3.ProcCommit, "", r.Status)
}

// createLike makes name in dir with procedure p (CREATE, MKDIR or SYMLINK) and
// returns the new object's handle and attributes.
func (c *Client) createLike(ctx context.Context, p nfs3.Proc, dir nfs3.FH, name string, args xdr.EncoderTo) (nfs3.FH, nfs3.Fattr, error) {
	var r nfs3.CreateRes
	var fh nfs3.FH
	err := c.call(ctx, p, args, decodeFunc(func(d *xdr.Decoder) error {
		err := r.DecodeXDR(d)
		fh = bytes.Clone(r.Obj.FH)
		return err
	}), 0)
	if err != nil {
		return nil, nfs3.Fattr{}, err
	}
	if err := opErr(p, name, r.Status); err != nil {
		return nil, nfs3.Fattr{}, err
	}
	if !r.Obj.Present {
		// The handle is a post_op_fh3, which the server may leave out (RFC 1813
		// §3.3.8): the object exists, so look it up, as Linux's client does.
		fh, attr, err := c.Lookup(ctx, dir, name)
		if err != nil {
			return nil, nfs3.Fattr{}, fmt.Errorf("nfsclient: %v %q: no handle in the reply, and looking it up: %w", p, name, err)
		}
		return fh, attr, nil
	}
	if !r.ObjAttr.Present {
		attr, err := c.Getattr(ctx, fh)
		return fh, attr, err
	}
	return fh, r.ObjAttr.Attr, nil
}

// Create creates a regular file name in dir with permission bits perm. With
// exclusive, the create is EXCLUSIVE with a random verifier (safe to retransmit) and
// perm is applied afterwards with SETATTR; otherwise it is GUARDED.
func (c *Client) Create(ctx context.Context, dir nfs3.FH, name string, perm uint32, exclusive bool) (nfs3.FH, nfs3.Fattr, error) {
	args := nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}, Mode: nfs3.Guarded, Attr: nfs3.Sattr{SetMode: true, Mode: perm}}
	if exclusive {
		args.Mode = nfs3.Exclusive
		args.Verf = newVerf()
	}
	fh, attr, err := c.createLike(ctx, nfs3.ProcCreate, dir, name, &args)
	if err == nil && exclusive {
		if err = c.Setattr(ctx, fh, nfs3.Sattr{SetMode: true, Mode: perm, Atime: nfs3.SetTime{How: nfs3.SetToServerTime}, Mtime: nfs3.SetTime{How: nfs3.SetToServerTime}}); err == nil {
			attr, err = c.Getattr(ctx, fh)
		}
	}
	return fh, attr, err
}

// Mkdir creates directory name in dir.
func (c *Client) Mkdir(ctx context.Context, dir nfs3.FH, name string, perm uint32) (nfs3.FH, nfs3.Fattr, error) {
	return c.createLike(ctx, nfs3.ProcMkdir, dir, name, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}, Attr: nfs3.Sattr{SetMode: true, Mode: perm}})
}

// Symlink creates a symbolic link name in dir pointing at target.
func (c *Client) Symlink(ctx context.Context, dir nfs3.FH, name, target string) (nfs3.FH, error) {
	fh, _, err := c.createLike(ctx, nfs3.ProcSymlink, dir, name, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}, Data: []byte(target)})
	return fh, err
}

// Readlink returns the target of symbolic link fh.
func (c *Client) Readlink(ctx context.Context, fh nfs3.FH) (string, error) {
	var r nfs3.ReadlinkRes
	var target string
	err := c.call(ctx, nfs3.ProcReadlink, &nfs3.ReadlinkArgs{Object: fh}, decodeFunc(func(d *xdr.Decoder) error {
		err := r.DecodeXDR(d)
		target = string(r.Data)
		return err
	}), 0)
	if err != nil {
		return "", err
	}
	return target, opErr(nfs3.ProcReadlink, "", r.Status)
}

// Remove removes the non-directory name from dir.
func (c *Client) Remove(ctx context.Context, dir nfs3.FH, name string) error {
	var r nfs3.RemoveRes
	if err := c.call(ctx, nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}}, &r, 0); err != nil {
		return err
	}
	return opErr(nfs3.ProcRemove, name, r.Status)
}

// Rmdir removes the empty directory name from dir.
func (c *Client) Rmdir(ctx context.Context, dir nfs3.FH, name string) error {
	var r nfs3.RmdirRes
	if err := c.call(ctx, nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}}, &r, 0); err != nil {
		return err
	}
	return opErr(nfs3.ProcRmdir, name, r.Status)
}

// Rename moves fromName in fromDir to toName in toDir.
func (c *Client) Rename(ctx context.Context, fromDir nfs3.FH, fromName string, toDir nfs3.FH, toName string) error {
	var r nfs3.RenameRes
	args := nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: fromDir, Name: []byte(fromName)}, To: nfs3.DirOpArgs{Dir: toDir, Name: []byte(toName)}}
	if err := c.call(ctx, nfs3.ProcRename, &args, &r, 0); err != nil {
		return err
	}
	return opErr(nfs3.ProcRename, fromName, r.Status)
}

// Link makes name in dir another name of file.
func (c *Client) Link(ctx context.Context, file, dir nfs3.FH, name string) error {
	var r nfs3.LinkRes
	if err := c.call(ctx, nfs3.ProcLink, &nfs3.LinkArgs{File: file, Link: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}}, &r, 0); err != nil {
		return err
	}
	return opErr(nfs3.ProcLink, name, r.Status)
}

// Fsstat returns the file system's space and file counts.
func (c *Client) Fsstat(ctx context.Context) (nfs3.FsstatRes, error) {
	var r nfs3.FsstatRes
	if err := c.call(ctx, nfs3.ProcFsstat, &nfs3.FsstatArgs{Object: c.root}, &r, 0); err != nil {
		return r, err
	}
	return r, opErr(nfs3.ProcFsstat, "", r.Status)
}
