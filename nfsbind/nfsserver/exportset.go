//go:build linux

package nfsserver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Exports serves every export of an exports(5) table (package exports) from one
// oncrpc.Server: one Server per export, all under one handle key, and handlers that
// route each NFS call to the export named by the export id in its (first) file handle
// and each MOUNT call to the export its path names. Every export checks the caller
// against its own client list on every call (see Server.SetClients).
//
// Load replaces the table while calls run: new client lists apply to the calls that
// start after it returns; an export whose path, fsid and async option are unchanged
// keeps its Server (and its handles, caches and mounts); a removed export stops being
// routed, so its handles are NFS3ERR_STALE, but its Server stays open until Close so
// that calls still running on it finish. It is safe for concurrent use.
type Exports struct {
	base     Options
	resolver exports.Resolver
	log      hclog.Logger

	loadMu   sync.Mutex
	servers  map[exportKey]*Server // every Server opened, routed or not
	handlers map[*Server]oncrpc.Handler
	cur      atomic.Pointer[exportState]
	v4       *v4Server
	// verf is the write verifier of every export (Server.verf): one, as knfsd has
	// one, so that a writeback error one export's fsync meets changes the verifier
	// the clients of every export that reaches the file compare. Set once, by
	// NewExports: Load, opening the Server of a new export, keeps it.
	verf atomic.Uint64
}

// exportKey identifies the Server of an export: what cannot change without changing
// its handles or its durability.
type exportKey struct {
	root, mountPath string
	id              uint32
	async           bool
}

// exportState is one loaded table.
type exportState struct {
	table    *exports.Table
	list     []*Server        // in table order
	handlers []oncrpc.Handler // list[i]'s NFS handler
	byID     map[uint32]int   // export id -> index in list
	v4       *v4Set           // the exports as the NFSv4.1 service sees them
}

// NewExports opens every export of t. base gives what the table does not: StateDir
// or HandleKey (one key for all exports), MaxIO, MaxDirReply, MaxIndex, MaxSearch,
// MaxOpenFiles, Logger; the table's entries override Root, ExportPath, ExportID,
// FSID, ReadOnly, RootSquash, AnonUID, AnonGID and CrossMount (each client entry's
// crossmnt applies to its callers), and an export is Async (durable metadata
// skipped) only when every one of its client entries says async. An export
// without fsid= gets the export id a Server of the same directory gets by default, so
// handles issued before a table was used stay valid. r resolves callers' host names
// for host-name and wildcard clients (nil: such clients match nobody).
func NewExports(base Options, t *exports.Table, r exports.Resolver) (*Exports, error) {
	if base.Logger == nil {
		base.Logger = hclog.NewNullLogger()
	}
	switch {
	case base.HandleKey != nil:
		if len(base.HandleKey) != KeySize {
			return nil, fmt.Errorf("nfsserver: HandleKey is %d bytes, want %d", len(base.HandleKey), KeySize)
		}
	case base.StateDir != "":
		key, created, err := loadOrCreateKey(base.StateDir)
		if err != nil {
			return nil, err
		}
		if created {
			base.Logger.Info("created file handle key", "dir", base.StateDir)
		}
		base.HandleKey = key
	default:
		base.HandleKey = make([]byte, KeySize)
		if _, err := rand.Read(base.HandleKey); err != nil {
			return nil, fmt.Errorf("nfsserver: handle key: %w", err)
		}
		base.Logger.Warn("no StateDir: file handles will not survive a restart")
	}
	if base.NFS4.State.StateDir == "" {
		base.NFS4.State.StateDir = base.StateDir
	}
	base.StateDir = ""
	base.member = true
	x := &Exports{base: base, resolver: r, log: base.Logger, servers: map[exportKey]*Server{},
		handlers: map[*Server]oncrpc.Handler{}}
	x.verf.Store(newVerifier(0))
	if err := x.Load(t); err != nil {
		x.Close()
		return nil, err
	}
	v4, err := newV4Server(base.Logger, func() *v4Set { return x.cur.Load().v4 }, newHandleCodec(base.HandleKey, 0), base.NFS4)
	if err != nil {
		x.Close()
		return nil, err
	}
	x.v4 = v4
	return x, nil
}

// keyOfExport returns the Server identity of e and its options.
func keyOfExport(e *exports.Export) exportKey {
	k := exportKey{root: e.Path, mountPath: e.MountPath, async: len(e.Clients) > 0}
	if k.mountPath == "" {
		k.mountPath = e.Path
	}
	// The export is async only when every client entry says async: one sync client
	// is enough to make the data it writes durable before the reply.
	for _, c := range e.Clients {
		k.async = k.async && c.Options.Async
	}
	if e.HasFSID {
		k.id = e.FSID
	} else {
		k.id = defaultExportID(e.Path)
	}
	return k
}

// Load makes t the table: see Exports. On error (a directory that cannot be opened,
// two exports with one fsid, an empty table) the previous table stays in force.
func (x *Exports) Load(t *exports.Table) error {
	if t == nil || len(t.Exports) == 0 {
		return errors.New("nfsserver: the exports table is empty")
	}
	x.loadMu.Lock()
	defer x.loadMu.Unlock()
	st := &exportState{table: t, byID: map[uint32]int{}}
	var opened []*Server
	fail := func(err error) error {
		for _, s := range opened {
			for k, v := range x.servers {
				if v == s {
					delete(x.servers, k)
				}
			}
			delete(x.handlers, s)
			s.Close()
		}
		return err
	}
	for i := range t.Exports {
		e := &t.Exports[i]
		k := keyOfExport(e)
		if j, dup := st.byID[k.id]; dup {
			return fail(fmt.Errorf("nfsserver: exports %s and %s have the same fsid %d", st.list[j].exportPath, k.mountPath, k.id))
		}
		s := x.servers[k]
		if s == nil {
			o := x.base
			// Handles always carry the export's id (fsid=, else a hash of the path);
			// attributes carry fsid= when given (on the export root's file
			// system), else the device, as knfsd's do.
			o.Root, o.ExportPath, o.ExportID, o.FSID, o.HasFSID = k.root, k.mountPath, k.id, e.FSID, e.HasFSID
			o.Async = k.async
			o.set = x
			var err error
			if s, err = New(o); err != nil {
				return fail(fmt.Errorf("nfsserver: export %s (%s:%d): %w", e.Path, e.File, e.Line, err))
			}
			x.servers[k] = s
			x.handlers[s] = s.NFSHandler()
			opened = append(opened, s)
		}
		st.byID[k.id] = len(st.list)
		st.list = append(st.list, s)
		st.handlers = append(st.handlers, x.handlers[s])
	}
	var names *exports.Names
	if x.resolver != nil {
		names = exports.NewNames(x.resolver, 0)
	}
	for i, s := range st.list {
		s.SetClients(&t.Exports[i], names)
		var nested []*Server
		for j, n := range st.list {
			if j != i && n.rootIsMount && n.rootDev != s.rootDev && below(t.Exports[j].Path, t.Exports[i].Path) {
				nested = append(nested, n)
			}
		}
		if nested == nil {
			s.nested.Store(nil)
		} else {
			s.nested.Store(&nested)
		}
	}
	st.v4 = newV4Set(st.list)
	x.cur.Store(st)
	x.log.Info("exports loaded", "exports", len(st.list), "opened", len(opened))
	return nil
}

// below reports whether path p lies below directory dir (both absolute and clean).
func below(p, dir string) bool {
	return dir == "/" && p != "/" || strings.HasPrefix(p, dir+"/")
}

// Table returns the table in force.
func (x *Exports) Table() *exports.Table { return x.cur.Load().table }

// Servers returns the Server of every export in force, in table order.
func (x *Exports) Servers() []*Server { return append([]*Server(nil), x.cur.Load().list...) }

// Close closes every Server the Exports opened, routed or not.
func (x *Exports) Close() error {
	x.loadMu.Lock()
	defer x.loadMu.Unlock()
	if x.v4 != nil {
		x.v4.close()
	}
	var errs []error
	for k, s := range x.servers {
		errs = append(errs, s.Close())
		delete(x.servers, k)
		delete(x.handlers, s)
	}
	return errors.Join(errs...)
}

// Register makes rs serve NFS version 3, MOUNT version 3 and NFS version 4 (minor
// version 1) for every export.
func (x *Exports) Register(rs *oncrpc.Server) {
	rs.Register(nfs3.Program, nfs3.Version, x.NFSHandler())
	rs.Register(nfs3.MountProgram, nfs3.MountVersion, x.MountHandler())
	rs.Register(nfs4.Program, nfs4.Version, x.NFS4Handler())
}

// NFS4Handler returns the NFS version 4 handler of every export: one pseudo file
// system leads to all of them, and each file handle names its export. Load changes
// what new COMPOUNDs see.
func (x *Exports) NFS4Handler() oncrpc.Handler { return x.v4.handler() }

// NFSHandler returns the NFS version 3 handler: each call goes to the export whose id
// its first file handle carries (every NFSv3 procedure but NULL starts with one).
// A handle of no export in force goes to the first export, which answers
// NFS3ERR_BADHANDLE or NFS3ERR_STALE. A second handle of RENAME or LINK in another
// export is NFS3ERR_XDEV.
func (x *Exports) NFSHandler() oncrpc.Handler {
	route := oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		st := x.cur.Load()
		i := 0
		if args := req.Args.Rest(); len(args) >= 12 && binary.BigEndian.Uint32(args) == HandleSize {
			if j, ok := st.byID[binary.BigEndian.Uint32(args[8:])]; ok {
				i = j
			}
		}
		return st.handlers[i].ServeRPC(ctx, req, res)
	})
	return oncrpc.NonBlocking(route, uint32(nfs3.ProcNull))
}

// MountHandler returns the MOUNT version 3 handler for every export: MNT (its dirpath
// without repeated or trailing slashes, as mountd reads it) goes to the export with
// the longest path that is dirpath or a parent of it and whose client list admits the
// caller, as knfsd's mountd tries the longest exported path and then its parents
// (auth_authenticate): a client of /srv not listed for /srv/inner mounts /srv/inner
// through /srv's export, with /srv's options, as it could LOOKUP it from /srv's root.
// A path of no export is MNT3ERR_NOENT, a caller no such export admits
// MNT3ERR_ACCES. DUMP, UMNT and UMNTALL cover every export; EXPORT lists each export
// with its client entries.
func (x *Exports) MountHandler() oncrpc.Handler {
	return oncrpc.NonBlocking(oncrpc.Procs{
		uint32(nfs3.MountProcNull):    null,
		uint32(nfs3.MountProcMnt):     x.mnt,
		uint32(nfs3.MountProcDump):    x.dump,
		uint32(nfs3.MountProcUmnt):    x.umnt,
		uint32(nfs3.MountProcUmntall): x.umntall,
		uint32(nfs3.MountProcExport):  x.export,
	}, uint32(nfs3.MountProcNull))
}

func (x *Exports) mnt(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.MntArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	dirpath := cleanMountPath(string(a.Path))
	s := x.mountServer(ctx, req, dirpath)
	if s == nil {
		r := nfs3.MntRes{Status: nfs3.MountErrNoEnt}
		r.EncodeXDR(res)
		x.log.Info("mount refused", "client", hostOf(req.RemoteAddr), "path", dirpath, "status", r.Status.String())
		return nil
	}
	s.mount(ctx, req, dirpath, res)
	return nil
}

// mountServer returns the export that answers req's MNT of dirpath (see
// MountHandler), nil when no export's path is dirpath or a parent of it.
func (x *Exports) mountServer(ctx context.Context, req *oncrpc.Request, dirpath string) *Server {
	st := x.cur.Load()
	// The exports whose path is dirpath or a parent of it, longest path first.
	var under []*Server
	for _, s := range st.list {
		p := s.exportPath
		if dirpath == p || p == "/" || strings.HasPrefix(dirpath, p+"/") {
			under = append(under, s)
		}
	}
	if len(under) == 0 {
		return nil
	}
	slices.SortStableFunc(under, func(a, b *Server) int { return len(b.exportPath) - len(a.exportPath) })
	// The first export that lists the caller answers, as mountd stops at the first
	// export found for its client (its "secure" port check included); when none
	// does, the longest answers MNT3ERR_ACCES.
	for _, s := range under {
		if s.grant(ctx, req) != nil {
			return s
		}
	}
	return under[0]
}

func (x *Exports) dump(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var r nfs3.DumpRes
	for _, s := range x.cur.Load().list {
		s.appendMounts(&r)
	}
	r.EncodeXDR(res)
	return nil
}

func (x *Exports) umnt(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.UmntArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	host, path := hostOf(req.RemoteAddr), cleanMountPath(string(a.Path))
	for _, s := range x.cur.Load().list {
		s.forgetMounts(host, path, false)
	}
	x.log.Info("unmount", "client", host, "path", path)
	return nil
}

func (x *Exports) umntall(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	host := hostOf(req.RemoteAddr)
	for _, s := range x.cur.Load().list {
		s.forgetMounts(host, "", true)
	}
	x.log.Info("unmount all", "client", host)
	return nil
}

func (x *Exports) export(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var r nfs3.ExportRes
	for _, s := range x.cur.Load().list {
		r.Exports = append(r.Exports, s.exportNode())
	}
	r.EncodeXDR(res)
	return nil
}
