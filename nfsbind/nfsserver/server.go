//go:build linux

package nfsserver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Options configure a Server.
type Options struct {
	// Root is the directory to export (required).
	Root string
	// ExportPath is the path MOUNT clients name (default: Root made absolute).
	// Subdirectories of it may be mounted too.
	ExportPath string
	// StateDir holds the file-handle key (created on first use). Handles survive a
	// restart only if the key does: with neither StateDir nor HandleKey, a random key
	// is used and handles go stale when the server restarts.
	StateDir string
	// HandleKey, if set, is the KeySize-byte handle key, overriding StateDir.
	HandleKey []byte
	// ExportID is put in every handle (default: a hash of the absolute Root).
	ExportID uint32
	// MaxIO is rtmax and wtmax, the largest READ and WRITE (default 1 MiB, at most
	// nfs3.MaxData).
	MaxIO int
	// MaxDirReply bounds READDIR and READDIRPLUS replies whatever the client asks
	// (default 1 MiB).
	MaxDirReply int
	// ReadOnly makes every modifying procedure fail with NFS3ERR_ROFS.
	ReadOnly bool
	// Async is the "async" export option of exports(5): CREATE, MKDIR, SYMLINK,
	// MKNOD, LINK, RENAME, REMOVE, RMDIR and SETATTR reply before their changes are
	// on stable storage, instead of fsyncing the changed directories and objects
	// first. It makes those procedures much faster, but a server crash can then lose
	// changes clients were told were done (a file whose data was COMMITted can lose
	// its name), silently: the clients are not told, so their caches and the data
	// on disk disagree. WRITE with DATA_SYNC or FILE_SYNC and COMMIT stay durable.
	Async bool
	// AnonUID and AnonGID are the identity of calls without AUTH_SYS credentials
	// (default 65534, "nobody").
	AnonUID, AnonGID uint32
	// RootSquash maps AUTH_SYS uid 0 to AnonUID/AnonGID, as knfsd's root_squash does.
	RootSquash bool
	// MaxIndex bounds the inode-to-path index (default 1<<20 entries); MaxSearch
	// bounds the entries one handle search visits (default 1<<22).
	MaxIndex, MaxSearch int
	// MaxOpenFiles bounds the open-file cache, the regular files READ, WRITE and
	// COMMIT keep open between calls (default DefaultMaxOpenFiles; negative: no cache,
	// every call opens and closes its file). It is capped at a quarter of the
	// process's RLIMIT_NOFILE.
	MaxOpenFiles int
	// FSID, when HasFSID, is the export's file system id (exports(5) fsid=N; fsid=root
	// is 0): the export id in handles, overriding ExportID, so that several exports of
	// one file system, or an export moved to another disk, keep distinct, stable
	// handles, and the fsid attribute of the objects on the export root's file system
	// (those of a file system mounted below it report their device, as without FSID).
	FSID    uint32
	HasFSID bool
	// CrossMount is the "crossmnt" export option of exports(5): serve the file systems
	// mounted below Root too (each reports its own fsid). Without it the server serves
	// only the objects on Root's own mount, as knfsd does not cross a mount point
	// without crossmnt: LOOKUP of a mount point is NFS3ERR_ACCES (NFSv4:
	// NFS4ERR_ACCESS), READDIRPLUS lists it without attributes or handle, a handle of
	// an object on another mount is NFS3ERR_STALE and MNT of a directory on another
	// mount or device is MNT3ERR_ACCES (see the package documentation). With
	// SetClients, each client entry's own crossmnt decides instead.
	CrossMount bool
	// Logger receives control-path events (default: none).
	Logger hclog.Logger
	// NFS4 configures the NFSv4.1 service (lease and grace times, state bounds).
	NFS4 NFS4Options

	// member: the Server is one export of an Exports, whose NFSv4.1 service covers
	// it; it runs none of its own.
	member bool
	// set is that Exports (nil otherwise): an NFSv3 LOOKUP crossing a mount point
	// looks there for an export the mount is the root of (Server.crossInto).
	set *Exports
}

// Server is an NFSv3 and MOUNT v3 server for one exported directory. Register it with
// an oncrpc.Server; it is safe for concurrent use.
type Server struct {
	opts    Options
	log     hclog.Logger
	rootFD  int
	rootDev uint64 // the device of the export root (see fsid)
	// nested: the exports of the same Exports table whose roots are below this
	// one's and are mounts of file systems of their own (nil: none); see
	// cred.barred.
	nested     atomic.Pointer[[]*Server]
	rootKey    fileKey
	rootMnt    uint64 // the id of the export root's mount, when hasRootMnt (see onExportMount)
	hasRootMnt bool
	// rootIsMount: the export root is the root of a mount (statx says so, Linux 5.8
	// and later), so every object on its device below a parent export is its own
	// (see nested).
	rootIsMount bool
	exportPath  string
	handles     *handleCodec
	idx         index
	searchMu    sync.Mutex
	searches    atomic.Uint64
	missing     missingSet
	dirs        dirCache
	files       fileCache
	drc         drc
	verf        *atomic.Uint64 // the write verifier, big-endian (writeVerf, resetVerifier); shared in an Exports
	asRoot      bool
	bufs        chan *readBuf // idle READ buffers of MaxIO bytes, at most maxIdleReadBufs
	smallBufs   chan *readBuf // idle READ buffers of smallReadBuf bytes
	sys         syncCalls

	mountMu sync.Mutex
	mounts  []mountEntry

	static  exports.Options            // the grant when clients is nil (from Options)
	clients atomic.Pointer[clientList] // see SetClients

	v4 *v4Server // the NFSv4.1 service of a Server that is not an Exports member
}

type mountEntry struct{ host, path string }

// readBuf holds READ data until the reply carrying it has been sent.
type readBuf struct {
	b       []byte
	release func()
}

// maxIdleReadBufs bounds the idle READ buffers kept for reuse (16 MiB with the
// default MaxIO); beyond it a released buffer is dropped for the garbage collector.
// A fixed free list rather than a sync.Pool: the transports cache the registration
// of each buffer they send from (rpcrdma's per-connection regCache), and buffers a
// sync.Pool drops at every collection would be replaced by new ones while the caches
// kept the dropped ones reachable.
const maxIdleReadBufs = 16

// READs of at most smallReadBuf bytes take buffers of that size (at most
// maxIdleSmallReadBufs idle, 4 MiB), so that small READs reserve and hold 64 KiB
// of the memory budget, not MaxIO.
const (
	smallReadBuf         = 64 << 10
	maxIdleSmallReadBufs = 64
)

// readBufSize returns the size of the buffer a READ of count bytes takes.
func (s *Server) readBufSize(count int) int {
	if count <= smallReadBuf && smallReadBuf < s.opts.MaxIO {
		return smallReadBuf
	}
	return s.opts.MaxIO
}

// getReadBuf returns an idle READ buffer of size bytes (readBufSize) or a new one.
func (s *Server) getReadBuf(size int) *readBuf {
	free := s.bufs
	if size != s.opts.MaxIO {
		free = s.smallBufs
	}
	select {
	case rb := <-free:
		return rb
	default:
	}
	rb := &readBuf{b: make([]byte, size)}
	rb.release = func() { // bound once, so AfterReply does not allocate
		select {
		case free <- rb:
		default:
		}
	}
	return rb
}

// preadFull reads into buf from offset off of fd until buf is full, the file ends or a
// read fails (Linux may return less than asked of a regular file, e.g. when
// interrupted), and returns the bytes read. An off beyond what buf's last byte could
// be read at without overflowing reads nothing (READ answers it as at end of file).
func preadFull(fd int, buf []byte, off uint64) (int, error) {
	n := 0
	for n < len(buf) && off <= math.MaxInt64-uint64(len(buf)) {
		m, err := unix.Pread(fd, buf[n:], int64(off)+int64(n))
		if err != nil {
			return n, err
		}
		if m <= 0 {
			break
		}
		n += m
	}
	return n, nil
}

// defaultExportID is the export id of an export of the absolute path root without
// Options.ExportID or FSID: a hash of root.
func defaultExportID(root string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(root))
	return h.Sum32()
}

// New opens the export and returns a Server for it.
func New(opts Options) (*Server, error) {
	if opts.Root == "" {
		return nil, fmt.Errorf("nfsserver: Options.Root is empty")
	}
	abs, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("nfsserver: export root: %w", err)
	}
	if opts.ExportPath == "" {
		opts.ExportPath = abs
	}
	if opts.ExportPath != "/" {
		opts.ExportPath = filepath.Clean(opts.ExportPath)
	}
	if opts.MaxIO <= 0 || opts.MaxIO > nfs3.MaxData {
		opts.MaxIO = 1 << 20
	}
	if opts.MaxDirReply <= 0 {
		opts.MaxDirReply = 1 << 20
	}
	if opts.AnonUID == 0 && opts.AnonGID == 0 {
		opts.AnonUID, opts.AnonGID = 65534, 65534
	}
	if opts.MaxIndex <= 0 {
		opts.MaxIndex = 1 << 20
	}
	if opts.MaxSearch <= 0 {
		opts.MaxSearch = 1 << 22
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.HasFSID {
		opts.ExportID = opts.FSID
	} else if opts.ExportID == 0 {
		opts.ExportID = defaultExportID(abs)
	}
	s := &Server{opts: opts, log: opts.Logger, exportPath: opts.ExportPath, asRoot: os.Geteuid() == 0, sys: osSync}
	s.static = staticGrant(&opts)
	key := opts.HandleKey
	switch {
	case key != nil:
		if len(key) != KeySize {
			return nil, fmt.Errorf("nfsserver: HandleKey is %d bytes, want %d", len(key), KeySize)
		}
	case opts.StateDir != "":
		var created bool
		key, created, err = loadOrCreateKey(opts.StateDir)
		if err != nil {
			return nil, err
		}
		if created {
			s.log.Info("created file handle key", "dir", opts.StateDir)
		}
	default:
		key = make([]byte, KeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("nfsserver: handle key: %w", err)
		}
		s.log.Warn("no StateDir: file handles will not survive a restart")
	}
	if opts.set != nil {
		s.verf = &opts.set.verf
	} else {
		s.verf = new(atomic.Uint64)
		s.verf.Store(newVerifier(0))
	}
	s.handles = newHandleCodec(key, opts.ExportID)
	s.dirs.key = newCookieKey(key)
	s.drc.entries = make(map[drcKey]*drcEntry, drcSize)
	s.idx.paths = make(map[fileKey]string)
	s.idx.max = opts.MaxIndex
	s.files.init(maxOpenFiles(opts.MaxOpenFiles))
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("nfsserver: opening export %s: %w", abs, err)
	}
	s.rootFD = fd
	var st unix.Statx_t
	if err := statFD(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nfsserver: stat export %s: %w", abs, err)
	}
	s.idx.put(keyOf(&st), "")
	s.rootKey = keyOf(&st)
	s.rootDev = s.rootKey.dev
	s.rootMnt, s.hasRootMnt = st.Mnt_id, st.Mask&unix.STATX_MNT_ID != 0
	s.rootIsMount = st.Attributes_mask&st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	s.bufs = make(chan *readBuf, maxIdleReadBufs)
	s.smallBufs = make(chan *readBuf, maxIdleSmallReadBufs)
	if !opts.member {
		if opts.NFS4.State.StateDir == "" {
			opts.NFS4.State.StateDir = opts.StateDir
		}
		set := newV4Set([]*Server{s})
		if s.v4, err = newV4Server(s.log, func() *v4Set { return set }, s.handles, opts.NFS4); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	s.log.Info("exporting", "root", abs, "path", opts.ExportPath, "read_only", opts.ReadOnly, "async", opts.Async,
		"crossmnt", opts.CrossMount, "max_io", opts.MaxIO)
	return s, nil
}

// Close releases the export root and the cached open files. Calls in progress may
// fail.
func (s *Server) Close() error {
	if s.v4 != nil {
		s.v4.close()
	}
	s.files.closeAll()
	return unix.Close(s.rootFD)
}

// WriteVerifier returns the verifier WRITE and COMMIT report now. It differs on every
// Server, so a restart tells clients to resend uncommitted writes, and it changes
// whenever writing or syncing a file's data fails (see resetVerifier). The exports of
// an Exports share one, as knfsd's share one: a file reached through two exports
// has its writeback error reported to one fsync only, whichever export's.
func (s *Server) WriteVerifier() [nfs3.WriteVerfSize]byte { return s.writeVerf() }

// writeVerf returns the current write verifier.
func (s *Server) writeVerf() [nfs3.WriteVerfSize]byte {
	var v [nfs3.WriteVerfSize]byte
	binary.BigEndian.PutUint64(v[:], s.verf.Load())
	return v
}

// resetVerifier gives the Server a new write verifier after err, an error from
// writing or syncing a file's data in WRITE or COMMIT, or from the fsync of a regular
// file a procedure makes to have a metadata change stable (stableFD), which writes
// back the file's data too. Data a client wrote UNSTABLE
// may have been lost with it: Linux reports a writeback error to fsync once per open
// file and then counts the pages clean, so a COMMIT retried after NFS3ERR_IO would
// succeed though the data is gone. RFC 1813 (§3.3.7, §3.3.21) and RFC 8881 (§18.32.3,
// §18.3.3) have the verifier change whenever uncommitted data may have been lost, so
// that clients compare it, find it changed and write their uncommitted data again, as
// knfsd resets its verifier (commit_reset_write_verifier). As there, EAGAIN and ESTALE
// leave it: they are no failure of stable storage.
func (s *Server) resetVerifier(err error) {
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ESTALE) {
		return
	}
	s.verf.Store(newVerifier(s.verf.Load()))
}

// newVerifier returns a random write verifier other than old.
func newVerifier(old uint64) uint64 {
	for {
		var b [8]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		if v := binary.BigEndian.Uint64(b[:]); v != old {
			return v
		}
	}
}

// RootHandle returns the file handle of the export root.
func (s *Server) RootHandle() nfs3.FH {
	var st unix.Statx_t
	if err := statFD(s.rootFD, &st); err != nil {
		return nil
	}
	return s.handles.encode(nil, idOf(&st))
}

// ExportPath returns the path MOUNT clients name.
func (s *Server) ExportPath() string { return s.exportPath }

// Register makes rs serve NFS version 3, MOUNT version 3 and NFS version 4 (minor
// version 1) with s.
func (s *Server) Register(rs *oncrpc.Server) {
	rs.Register(nfs3.Program, nfs3.Version, s.NFSHandler())
	rs.Register(nfs3.MountProgram, nfs3.MountVersion, s.MountHandler())
	rs.Register(nfs4.Program, nfs4.Version, s.NFS4Handler())
}

// NFSHandler returns the oncrpc handler of NFS version 3, with a duplicate request
// cache in front of the non-idempotent procedures and the client list's check (see
// SetClients) in front of that. Call it once per Server. NULL is
// declared non-blocking (oncrpc.NonBlocking), so over RDMA it is answered in the receive
// context without a worker hand-off.
func (s *Server) NFSHandler() oncrpc.Handler {
	return oncrpc.NonBlocking(s.withAccess(s.withDRC(s.procs())), uint32(nfs3.ProcNull))
}

func (s *Server) procs() oncrpc.Procs {
	return oncrpc.Procs{
		uint32(nfs3.ProcNull):        null,
		uint32(nfs3.ProcGetattr):     s.getattr,
		uint32(nfs3.ProcSetattr):     s.setattr,
		uint32(nfs3.ProcLookup):      s.lookup,
		uint32(nfs3.ProcAccess):      s.access,
		uint32(nfs3.ProcReadlink):    s.readlink,
		uint32(nfs3.ProcRead):        s.read,
		uint32(nfs3.ProcWrite):       s.write,
		uint32(nfs3.ProcCreate):      s.create,
		uint32(nfs3.ProcMkdir):       s.mkdir,
		uint32(nfs3.ProcSymlink):     s.symlink,
		uint32(nfs3.ProcMknod):       s.mknod,
		uint32(nfs3.ProcRemove):      s.remove,
		uint32(nfs3.ProcRmdir):       s.rmdir,
		uint32(nfs3.ProcRename):      s.rename,
		uint32(nfs3.ProcLink):        s.link,
		uint32(nfs3.ProcReaddir):     s.readdir,
		uint32(nfs3.ProcReaddirplus): s.readdirplus,
		uint32(nfs3.ProcFsstat):      s.fsstat,
		uint32(nfs3.ProcFsinfo):      s.fsinfo,
		uint32(nfs3.ProcPathconf):    s.pathconf,
		uint32(nfs3.ProcCommit):      s.commit,
	}
}

// null is NFSPROC3_NULL and MOUNTPROC3_NULL: no arguments, no results.
func null(context.Context, *oncrpc.Request, *xdr.Encoder) error { return nil }

// garbage makes an argument decoding error answer GARBAGE_ARGS.
func garbage(err error) error { return fmt.Errorf("%w: %w", oncrpc.ErrGarbageArgs, err) }
