//go:build linux

package nfsserver

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// The open-file cache keeps the regular files READ, WRITE and COMMIT work on open,
// keyed by file handle, so that a call costs a statx to revalidate the descriptor
// rather than a path walk, a reopen through /proc/self/fd and two closes.
//
// A cached descriptor is trusted only as far as it is checked:
//   - it refers to the inode its handle names (device, inode, generation), since it
//     was opened from a descriptor verified against the handle, and an open inode is
//     never reused;
//   - every call fstats it first: a link count of 0 means the file was removed or
//     renamed over, and the handle is NFS3ERR_STALE (it never reaches the file that
//     took its name, which is another inode);
//   - at most every openFileRecheck, a call verifies again that the inode is reachable
//     inside the export (as an uncached call does), so a file moved out of the export
//     behind the server's back stops being served within that time;
//   - a file on another mount than the export root's (reached by a caller with
//     crossmnt) is served from the cache only to callers with crossmnt: for the
//     others it is not in the cache, and their handle resolution (Server.open) judges
//     it. A descriptor's mount never changes, so this costs no system call.
//
// Access is checked on every call against the fresh attributes and the caller's
// credentials, exactly as without the cache; the descriptor's own open mode only
// reflects the server process's rights. A file is opened read-only for READ and
// COMMIT and read-write for WRITE (write-only where the server may not read it), and
// for WRITE only when the caller may write it (a refused WRITE opens it read-only): a
// file that clients only read, or that no caller may write, is never held open for
// writing, which would make executing it on the server fail with ETXTBSY.
//
// The cache holds at most Options.MaxOpenFiles entries, least recently used first out.
// An evicted descriptor is closed when the last call using it finishes, so the
// process holds at most MaxOpenFiles plus one per call in progress. While the cache
// holds files, a timer sweeps it every openFileSweep, closing files no call used for
// openFileIdle and files removed behind the server's back, so that neither an idle
// server nor a local rm keeps descriptors (and a removed file's blocks) for long.

// DefaultMaxOpenFiles is the default of Options.MaxOpenFiles.
const DefaultMaxOpenFiles = 512

// openFileRecheck is how long a cached descriptor is used before its inode's place in
// the export is verified again.
const openFileRecheck = time.Second

// openFileIdle is how long a cached file may go unused before the sweep closes it;
// openFileSweep is the sweep period.
const (
	openFileIdle  = 30 * time.Second
	openFileSweep = 5 * time.Second
)

// Access an open file allows.
const (
	accRead uint8 = 1 << iota
	accWrite
)

// openFile is a regular file held open for I/O.
type openFile struct {
	fh  [HandleSize]byte
	id  handleID
	fd  int
	acc uint8 // accRead, accWrite or both
	// foreign: the file is not on the export root's mount (see Server.onExportMount),
	// so only callers with crossmnt may use the descriptor.
	foreign bool
	// refs counts the calls using the file, plus one while it is in the cache; the
	// descriptor is closed when it drops to zero.
	refs atomic.Int32
	// checked is the clock reading when the file was last found inside the export.
	checked atomic.Int64
	// used is the clock reading when a call last used the file.
	used atomic.Int64

	prev, next *openFile // LRU list, guarded by fileCache.mu
}

// fileCache is the open-file cache: a map from handle to openFile and a list from most
// to least recently used.
type fileCache struct {
	mu  sync.Mutex
	m   map[[HandleSize]byte]*openFile
	lru openFile // sentinel: lru.next is the most recently used entry
	max int
	// closed is set by closeAll: files opened afterwards are not cached, so that
	// none outlives the Server.
	closed bool
	// sweeper is the armed sweep timer, nil when none is (the cache is empty).
	sweeper *time.Timer
	// clock reads a monotonic clock in nanoseconds; tests replace it.
	clock func() int64
	// opens counts descriptors opened for the cache, evictions entries dropped.
	opens, evictions atomic.Uint64
}

var clockBase = time.Now()

func monotonic() int64 { return int64(time.Since(clockBase)) }

// newClock is the clock a new Server's cache reads; tests replace it before New.
var newClock = monotonic

// maxOpenFiles is the cache size for the option n: DefaultMaxOpenFiles for 0, none for
// a negative n, and never more than a quarter of the process's descriptor limit, so
// that connections and uncached calls still find descriptors.
func maxOpenFiles(n int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		n = DefaultMaxOpenFiles
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil && lim.Cur != unix.RLIM_INFINITY {
		n = min(n, int(lim.Cur/4))
	}
	return n
}

func (c *fileCache) init(max int) {
	c.m = make(map[[HandleSize]byte]*openFile, max)
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	c.max = max
	c.clock = newClock
}

func (c *fileCache) unlink(f *openFile) {
	f.prev.next, f.next.prev = f.next, f.prev
	f.prev, f.next = nil, nil
}

func (c *fileCache) pushFront(f *openFile) {
	f.prev, f.next = &c.lru, c.lru.next
	c.lru.next.prev = f
	c.lru.next = f
}

// get returns the cached file for fh with a reference the caller releases, or nil.
func (c *fileCache) get(fh nfs3.FH) *openFile {
	if len(fh) != HandleSize {
		return nil
	}
	k := [HandleSize]byte(fh)
	c.mu.Lock()
	f := c.m[k]
	if f != nil {
		if c.lru.next != f {
			c.unlink(f)
			c.pushFront(f)
		}
		f.refs.Add(1)
	}
	c.mu.Unlock()
	return f
}

// add caches f, just opened with one reference for the caller, and returns the file
// the caller is to use. If another call cached the same handle with at least f's
// access meanwhile, that one is returned (referenced) and f closed, unless one of the
// two is on the export root's mount and the other not (the inode reached through a
// bind mount, and then again without crossing it): f, which its caller may use,
// replaces it.
func (c *fileCache) add(f *openFile) *openFile {
	if c.max <= 0 {
		return f
	}
	var drop [2]*openFile
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return f
	}
	if old := c.m[f.fh]; old != nil {
		if old.acc&f.acc == f.acc && old.foreign == f.foreign {
			old.refs.Add(1)
			c.mu.Unlock()
			c.release(f)
			return old
		}
		c.unlink(old)
		drop[0] = old
	} else if len(c.m) >= c.max {
		victim := c.lru.prev
		c.unlink(victim)
		delete(c.m, victim.fh)
		drop[1] = victim
	}
	f.refs.Add(1)
	c.m[f.fh] = f
	c.pushFront(f)
	if c.sweeper == nil {
		c.sweeper = time.AfterFunc(openFileSweep, c.sweep)
	}
	c.mu.Unlock()
	for _, d := range drop {
		if d != nil {
			c.evictions.Add(1)
			c.release(d)
		}
	}
	return f
}

// remove drops f from the cache if it is still there.
func (c *fileCache) remove(f *openFile) {
	c.mu.Lock()
	cached := f.prev != nil && c.m[f.fh] == f
	if cached {
		c.unlink(f)
		delete(c.m, f.fh)
	}
	c.mu.Unlock()
	if cached {
		c.evictions.Add(1)
		c.release(f)
	}
}

// forget drops the cached file of inode k, if any: its last name is gone, so its
// descriptor should not keep its blocks allocated.
func (c *fileCache) forget(k fileKey) {
	var victim *openFile
	c.mu.Lock()
	for f := c.lru.next; f != &c.lru; f = f.next {
		if f.id.key == k {
			victim = f
			break
		}
	}
	c.mu.Unlock()
	if victim != nil {
		c.remove(victim)
	}
}

// release drops a reference to f, closing its descriptor with the last one.
func (c *fileCache) release(f *openFile) {
	if f.refs.Add(-1) == 0 {
		unix.Close(f.fd)
	}
}

// closeAll empties the cache; descriptors in use are closed when their calls end.
func (c *fileCache) closeAll() {
	c.mu.Lock()
	c.closed = true
	if c.sweeper != nil {
		c.sweeper.Stop()
		c.sweeper = nil
	}
	var all []*openFile
	for f := c.lru.next; f != &c.lru; {
		next := f.next
		c.unlink(f)
		delete(c.m, f.fh)
		all = append(all, f)
		f = next
	}
	c.mu.Unlock()
	for _, f := range all {
		c.release(f)
	}
}

// sweep closes the cached files no call used for openFileIdle and those with no links
// left, and arms the next sweep while files remain. The descriptors are fstat'ed
// outside the lock, so calls are not held up.
func (c *fileCache) sweep() {
	now := c.clock()
	c.mu.Lock()
	c.sweeper = nil
	if c.closed {
		c.mu.Unlock()
		return
	}
	files := make([]*openFile, 0, len(c.m))
	for f := c.lru.next; f != &c.lru; f = f.next {
		f.refs.Add(1)
		files = append(files, f)
	}
	c.mu.Unlock()
	var st unix.Statx_t
	for _, f := range files {
		if now-f.used.Load() > int64(openFileIdle) || statFD(f.fd, &st) != nil || st.Nlink == 0 {
			c.remove(f)
		}
		c.release(f)
	}
	c.mu.Lock()
	if len(c.m) > 0 && !c.closed && c.sweeper == nil {
		c.sweeper = time.AfterFunc(openFileSweep, c.sweep)
	}
	c.mu.Unlock()
}

// len is the number of cached files.
func (c *fileCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// openIO resolves fh, for the caller c, to a regular file open with at least the
// access need (0: any), for READ, WRITE or COMMIT, and fills st with its current
// attributes. The caller releases the file with s.files.release. When the handle
// resolves to something other than a regular file, the status says so
// (NFS3ERR_ISDIR or NFS3ERR_INVAL) and st holds its attributes; st.Mask is 0 when
// there are none.
func (s *Server) openIO(fh nfs3.FH, need uint8, c *cred, st *unix.Statx_t) (*openFile, nfs3.Status) {
	return s.openIOFor(fh, need, c, false, st)
}

// openWrite is openIO for a WRITE by c: the file is opened for writing only when c
// may write it (mayWrite), and otherwise only looked at, as with need 0, for the
// caller to refuse the WRITE (doWrite) with the file's attributes. A descriptor
// opened for writing on behalf of a caller that may not write would stay in the
// cache, and a file held open for writing cannot be executed on the server
// (ETXTBSY).
func (s *Server) openWrite(fh nfs3.FH, c *cred, st *unix.Statx_t) (*openFile, nfs3.Status) {
	return s.openIOFor(fh, accWrite, c, true, st)
}

// cached returns the open-file cache's file for fh if c may use it (see openFile's
// foreign), with a reference the caller releases, or nil.
func (s *Server) cached(fh nfs3.FH, c *cred) *openFile {
	f := s.files.get(fh)
	if f != nil && f.foreign && (!c.crossmnt || c.isBarred(f.id.key.dev)) {
		s.files.release(f)
		return nil
	}
	return f
}

// openIOFor is openIO, and with write openWrite.
func (s *Server) openIOFor(fh nfs3.FH, need uint8, c *cred, write bool, st *unix.Statx_t) (*openFile, nfs3.Status) {
	if f := s.cached(fh, c); f != nil {
		status := s.revalidate(f, st, c)
		if status == nfs3.StatusOK && write && !mayWrite(c, st) {
			need = 0
		}
		if status == nfs3.StatusOK && f.acc&need == need {
			return f, nfs3.StatusOK
		}
		if status != nfs3.StatusOK {
			s.files.remove(f)
			s.files.release(f)
			*st = unix.Statx_t{}
			return nil, status
		}
		// Cached with less access than this call needs: open again with both.
		nf, err := s.openFileFrom(f.fd, f.acc|need, need, st)
		if err != nil {
			s.files.release(f)
			return nil, statusOf(err)
		}
		copy(nf.fh[:], fh)
		nf.id, nf.foreign = f.id, f.foreign
		nf.checked.Store(f.checked.Load())
		nf.used.Store(f.used.Load())
		s.files.release(f)
		if nf.acc&f.acc == f.acc {
			return s.files.add(nf), nfs3.StatusOK
		}
		return nf, nfs3.StatusOK // less than the cached one had: use it for this call only
	}
	var o object
	status := s.open(fh, &o, c)
	defer o.close()
	if status != nfs3.StatusOK {
		return nil, status
	}
	*st = o.st
	switch {
	case isDir(&o.st):
		return nil, nfs3.StatusIsDir
	case !isReg(&o.st):
		return nil, nfs3.StatusInval
	}
	if write && !mayWrite(c, &o.st) {
		need = 0
	}
	want := need
	if want == 0 {
		want = accRead
	}
	f, err := s.openFileFrom(o.fd, want, need, st)
	if err != nil {
		return nil, statusOf(err)
	}
	copy(f.fh[:], fh)
	f.id, f.foreign = idOf(&o.st), !s.onExportMount(&o.st)
	now := s.files.clock()
	f.checked.Store(now)
	f.used.Store(now)
	return s.files.add(f), nfs3.StatusOK
}

// openFileFrom opens the file fd refers to (an O_PATH or open descriptor, through
// /proc/self/fd) for the access want, or failing that for need alone, and fills st with
// its attributes. The file has one reference.
func (s *Server) openFileFrom(fd int, want, need uint8, st *unix.Statx_t) (*openFile, error) {
	nfd, acc, err := reopenFor(fd, want)
	if err != nil && want != need && need != 0 {
		nfd, acc, err = reopenFor(fd, need)
	}
	if err != nil {
		return nil, err
	}
	if err := statFD(nfd, st); err != nil {
		unix.Close(nfd)
		return nil, err
	}
	s.files.opens.Add(1)
	f := &openFile{fd: nfd, acc: acc}
	f.refs.Store(1)
	return f, nil
}

// reopenFor opens the regular file fd refers to for acc, through /proc/self/fd, which
// reaches the very inode fd holds (an O_PATH descriptor cannot be read or written).
func reopenFor(fd int, acc uint8) (int, uint8, error) {
	flags := unix.O_RDONLY
	switch acc {
	case accRead | accWrite:
		flags = unix.O_RDWR
	case accWrite:
		flags = unix.O_WRONLY
	}
	nfd, err := unix.Open(procPath(fd), flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	return nfd, acc, nil
}

// revalidate checks a cached file before a call by c uses it and fills st with its
// attributes: removed (no links left) is NFS3ERR_STALE, and once per openFileRecheck
// its handle is resolved inside the export again as an uncached call by c would.
func (s *Server) revalidate(f *openFile, st *unix.Statx_t, c *cred) nfs3.Status {
	if err := statFD(f.fd, st); err != nil {
		return statusOf(err)
	}
	if st.Nlink == 0 || idOf(st) != f.id {
		return nfs3.StatusStale
	}
	now := s.files.clock()
	f.used.Store(now)
	last := f.checked.Load()
	if now-last < int64(openFileRecheck) || !f.checked.CompareAndSwap(last, now) {
		return nfs3.StatusOK
	}
	var o object
	status := s.open(f.fh[:], &o, c)
	o.close()
	return status
}
