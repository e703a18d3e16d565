//go:build linux

package nfsserver

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// statxMask is what every statx asks for: the basic attributes, the birth time (the
// handle generation, genOf) and the id of the mount the object is on (onExportMount).
const statxMask = unix.STATX_BASIC_STATS | unix.STATX_BTIME | unix.STATX_MNT_ID

func keyOf(st *unix.Statx_t) fileKey {
	return fileKey{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino}
}

// genOf is the handle generation: the birth time, when the file system records one.
func genOf(st *unix.Statx_t) uint64 {
	if st.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return uint64(st.Btime.Sec)*1e9 + uint64(st.Btime.Nsec)
}

func idOf(st *unix.Statx_t) handleID { return handleID{key: keyOf(st), gen: genOf(st)} }

// emptyPath is the "" that statx(AT_EMPTY_PATH) takes: unix.Statx would copy the Go
// string "" to the heap on every call, and statFD runs on every READ and WRITE.
var emptyPath = [1]byte{0}

// statFD reads the attributes of the object fd refers to (statx(fd, "",
// AT_EMPTY_PATH)), without allocating.
func statFD(fd int, st *unix.Statx_t) error {
	_, _, errno := unix.Syscall6(unix.SYS_STATX, uintptr(fd), uintptr(unsafe.Pointer(&emptyPath[0])),
		unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, statxMask, uintptr(unsafe.Pointer(st)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func statAt(dirfd int, name string, st *unix.Statx_t) error {
	return unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, statxMask, st)
}

func isDir(st *unix.Statx_t) bool { return uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR }
func isReg(st *unix.Statx_t) bool { return uint32(st.Mode)&unix.S_IFMT == unix.S_IFREG }
func isLnk(st *unix.Statx_t) bool { return uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK }

// index maps inodes to a path (relative to the export root, "" for the root) where
// the server last saw them. Paths are hints: every use is verified.
type index struct {
	mu    sync.RWMutex
	paths map[fileKey]string
	max   int
}

func (x *index) get(k fileKey) (string, bool) {
	x.mu.RLock()
	p, ok := x.paths[k]
	x.mu.RUnlock()
	return p, ok
}

func (x *index) put(k fileKey, p string) {
	x.mu.Lock()
	if old, ok := x.paths[k]; !ok || old != p {
		if !ok && len(x.paths) >= x.max {
			// Forget an arbitrary entry; a later miss searches for it again.
			for victim := range x.paths {
				delete(x.paths, victim)
				break
			}
		}
		x.paths[k] = p
	}
	x.mu.Unlock()
}

func (x *index) del(k fileKey, p string) {
	x.mu.Lock()
	if x.paths[k] == p {
		delete(x.paths, k)
	}
	x.mu.Unlock()
}

// renameDir rewrites the paths under a renamed directory.
func (x *index) renameDir(from, to string) {
	prefix := from + "/"
	x.mu.Lock()
	for k, p := range x.paths {
		if strings.HasPrefix(p, prefix) {
			x.paths[k] = to + p[len(from):]
		}
	}
	x.mu.Unlock()
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// object is a file system object opened for one call: an O_PATH descriptor that does
// not follow symbolic links, the path it was reached by and its attributes.
type object struct {
	fd   int
	path string
	st   unix.Statx_t
}

func (o *object) close() {
	if o.fd >= 0 {
		unix.Close(o.fd)
		o.fd = -1
	}
}

// attr is the post_op_attr of o when it was opened, "no attributes" when not.
func (s *Server) attr(o *object) nfs3.PostOpAttr {
	if o.fd < 0 {
		return nfs3.PostOpAttr{}
	}
	return s.postOp(&o.st)
}

// refresh re-reads the object's attributes.
func (o *object) refresh() error { return statFD(o.fd, &o.st) }

// openPath opens p (relative to the root, components already validated) with
// O_PATH|O_NOFOLLOW so that no symbolic link is followed anywhere on the way: with one
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) where the kernel has it (Linux 5.6+),
// else (or for paths longer than PATH_MAX) by walking one component at a time with
// openat(O_NOFOLLOW).
func (s *Server) openPath(p string) (int, error) {
	if !noOpenat2.Load() && len(p) < unix.PathMax {
		if p == "" {
			p = "."
		}
		how := unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		fd, err := openat2(s.rootFD, p, &how)
		for try := 0; err == unix.EAGAIN && try < 3; try++ {
			// A rename or mount raced with the lookup; the kernel asks us to retry.
			fd, err = openat2(s.rootFD, p, &how)
		}
		switch err {
		case unix.ENOSYS, unix.E2BIG, unix.EPERM:
			// No openat2 (or a seccomp filter refusing it): walk from now on.
			noOpenat2.Store(true)
		case unix.EAGAIN:
			// Still racing: walk this once.
		default:
			return fd, err
		}
		if p == "." {
			p = ""
		}
	}
	return s.walkPath(p)
}

// openat2 is unix.Openat2 without copying a short path to the heap: paths of up to
// shortPath bytes are NUL-terminated in an array on the stack.
func openat2(dirfd int, p string, how *unix.OpenHow) (int, error) {
	if len(p) >= shortPath {
		return unix.Openat2(dirfd, p, how)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return -1, unix.EINVAL // as unix.Openat2 answers
	}
	var buf [shortPath]byte
	copy(buf[:], p)
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(unsafe.Pointer(how)), unsafe.Sizeof(*how), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// shortPath bounds the paths openat2 passes from the stack.
const shortPath = 256

// noOpenat2 records that openat2 is unavailable.
var noOpenat2 atomic.Bool

func (s *Server) walkPath(p string) (int, error) {
	fd, err := unix.Openat(s.rootFD, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || p == "" {
		return fd, err
	}
	for rest := p; rest != ""; {
		comp := rest
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
			flags |= unix.O_DIRECTORY
		} else {
			rest = ""
		}
		nfd, err := unix.Openat(fd, comp, flags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}

// openVerified opens p and checks that it is the object id names.
func (s *Server) openVerified(p string, id handleID, o *object) bool {
	fd, err := s.openPath(p)
	if err != nil {
		return false
	}
	if err := statFD(fd, &o.st); err != nil || idOf(&o.st) != id {
		unix.Close(fd)
		return false
	}
	o.fd, o.path = fd, p
	return true
}

// onExportMount reports whether st, the attributes of an object reached from the
// export root, are those of an object on the export root's own mount: one reached
// without crossing a mount point, as knfsd's lookups stay within an export that does
// not say crossmnt (nfsd_cross_mnt). It compares the mount ids statx reports (Linux
// 5.8 and later), which tell a bind mount or a file system mounted below the export
// from the export's own directories whatever their devices (a btrfs subvolume, which
// is no mount, has a device of its own and is served, as by knfsd), and falls back to
// comparing devices where the kernel reports no mount id. A path from the root only
// ever goes down the mount tree, so an object on the root's mount was reached without
// leaving it: one comparison, on the statx every resolution already makes, covers the
// whole path.
func (s *Server) onExportMount(st *unix.Statx_t) bool {
	if s.hasRootMnt && st.Mask&unix.STATX_MNT_ID != 0 {
		return st.Mnt_id == s.rootMnt
	}
	return unix.Mkdev(st.Dev_major, st.Dev_minor) == s.rootDev
}

// reachable reports whether the caller c may be served st, an object reached through
// a handle of s: visible, and not on the file system of a nested export that lists c
// (cred.barred), whose objects c reaches through that export's handles, with its
// options, as knfsd picks the export of a file system per client.
func (s *Server) reachable(c *cred, st *unix.Statx_t) bool {
	return s.visible(c, st) && (c.nbarred == 0 || s.onExportMount(st) || !c.isBarred(keyOf(st).dev))
}

// visible reports whether the caller c may be served the object st reached from the
// export root: with crossmnt (cred.crossmnt) any, else only one on the export root's
// own mount (onExportMount).
func (s *Server) visible(c *cred, st *unix.Statx_t) bool {
	return c.crossmnt || s.onExportMount(st)
}

// open resolves a file handle to an opened object for the caller c. The caller closes
// it. An object c may not see (see visible) is NFS3ERR_STALE, as knfsd answers a
// handle of a file system the client has no export of: the server looks for it on
// the export's own mount (it may be reachable there too, through another path than
// the one it was last seen by) and, not finding it there, takes the handle for stale.
func (s *Server) open(fh nfs3.FH, o *object, c *cred) nfs3.Status {
	o.fd = -1
	id, st := s.handles.decode(fh)
	if st != nfs3.StatusOK {
		return st
	}
	var hidden string // a path to id that crosses a mount point c may not cross
	if p, ok := s.idx.get(id.key); ok {
		if s.openVerified(p, id, o) {
			if s.reachable(c, &o.st) {
				return nfs3.StatusOK
			}
			o.close()
			hidden = p
		} else {
			s.idx.del(id.key, p)
		}
	}
	if s.missing.recent(id, c.crossmnt) {
		return nfs3.StatusStale
	}
	p, ok := s.search(id, c.crossmnt, hidden)
	if !ok || !s.openVerified(p, id, o) {
		s.missing.add(id, c.crossmnt)
		return nfs3.StatusStale
	}
	if !s.reachable(c, &o.st) { // moved across a mount point since the search saw it
		o.close()
		return nfs3.StatusStale
	}
	return nfs3.StatusOK
}

// missingTTL is how long a handle that a full search did not find is answered
// NFS3ERR_STALE without searching again, so that a client retrying a stale handle
// cannot make the server walk the whole export on every call. A file moved into the
// export from outside becomes reachable by an old handle after at most this long.
const missingTTL = 30 * time.Second

const missingMax = 4096

// missingSet remembers handles recently searched for in vain, apart for the searches
// that crossed mount points (crossmnt) and those that did not, which see different
// parts of the export.
type missingSet struct {
	mu sync.Mutex
	m  map[missingKey]time.Time
}

// missingKey is a handle searched for, and whether the search crossed mount points.
type missingKey struct {
	id    handleID
	cross bool
}

func (x *missingSet) recent(id handleID, cross bool) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := missingKey{id, cross}
	t, ok := x.m[k]
	if ok && time.Since(t) > missingTTL {
		delete(x.m, k)
		ok = false
	}
	return ok
}

func (x *missingSet) add(id handleID, cross bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = make(map[missingKey]time.Time)
	}
	if len(x.m) >= missingMax {
		for k := range x.m {
			delete(x.m, k)
			break
		}
	}
	x.m[missingKey{id, cross}] = time.Now()
}

// search walks the export breadth-first looking for id, filling the index with what
// it sees on the way; unless cross (crossmnt), it neither looks at nor descends into
// what is mounted below the export root (see onExportMount). hidden, when not "", is
// a path to id the caller found crossing a mount point it may not cross. Searches are
// serialized so that many misses after a restart share the work.
func (s *Server) search(id handleID, cross bool, hidden string) (string, bool) {
	s.searchMu.Lock()
	defer s.searchMu.Unlock()
	if p, ok := s.idx.get(id.key); ok && (hidden == "" || p != hidden) {
		return p, true // found by a search that ran while this one waited
	}
	var root unix.Statx_t
	if err := statFD(s.rootFD, &root); err == nil && idOf(&root) == id {
		return "", true
	}
	s.searches.Add(1)
	s.log.Debug("searching export for file handle", "dev", id.key.dev, "ino", id.key.ino)
	queue := []string{""}
	seen := 0
	for len(queue) > 0 && seen < s.opts.MaxSearch {
		dir := queue[0]
		queue = queue[1:]
		pfd, err := s.openPath(dir)
		if err != nil {
			continue
		}
		dfd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(pfd)
			continue
		}
		f := os.NewFile(uintptr(dfd), "dir")
		names, _ := f.Readdirnames(-1)
		f.Close()
		var st unix.Statx_t
		for _, name := range names {
			seen++
			if statAt(pfd, name, &st) != nil || (!cross && !s.onExportMount(&st)) {
				continue
			}
			p := joinPath(dir, name)
			s.idx.put(keyOf(&st), p)
			if idOf(&st) == id {
				unix.Close(pfd)
				s.log.Debug("file handle found", "path", p, "entries", seen)
				return p, true
			}
			if isDir(&st) {
				queue = append(queue, p)
			}
		}
		unix.Close(pfd)
	}
	s.log.Debug("file handle not found", "dev", id.key.dev, "ino", id.key.ino, "entries", seen)
	return "", false
}

// openDirFD opens the directory object o for reading its entries.
func openDirFD(o *object) (int, error) {
	return unix.Openat(o.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// validName checks a name a client wants to create, remove or look up: not empty, no
// "/" and no NUL. Each is NFS3ERR_ACCES (RFC 1813 §3.2: the empty name, and a name
// with characters the server cannot handle). "." and ".." are the callers' business.
func validName(name []byte) nfs3.Status {
	if len(name) == 0 {
		return nfs3.StatusAcces
	}
	for _, c := range name {
		if c == '/' || c == 0 {
			return nfs3.StatusAcces
		}
	}
	return nfs3.StatusOK
}

func isDot(name []byte) bool {
	return (len(name) == 1 && name[0] == '.') || (len(name) == 2 && name[0] == '.' && name[1] == '.')
}

// fsid is the file system id attributes report for the object st: the export's fsid=
// (Options.FSID) for an object on the export root's file system, else (without the
// option, or for a file system mounted below the export root, which the server
// crosses into with crossmnt) its device number. Two file systems never share an
// fsid, so that two objects never share (fsid, fileid), the identity NFS clients go
// by.
func (s *Server) fsid(st *unix.Statx_t) uint64 {
	dev := unix.Mkdev(st.Dev_major, st.Dev_minor)
	if s.opts.HasFSID && dev == s.rootDev {
		return uint64(s.opts.FSID)
	}
	return dev
}

// fattr fills a from st, with the fsid of its file system (see fsid).
func (s *Server) fattr(st *unix.Statx_t, a *nfs3.Fattr) {
	mode := uint32(st.Mode)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		a.Type = nfs3.TypeDir
	case unix.S_IFLNK:
		a.Type = nfs3.TypeLnk
	case unix.S_IFBLK:
		a.Type = nfs3.TypeBlk
	case unix.S_IFCHR:
		a.Type = nfs3.TypeChr
	case unix.S_IFSOCK:
		a.Type = nfs3.TypeSock
	case unix.S_IFIFO:
		a.Type = nfs3.TypeFifo
	default:
		a.Type = nfs3.TypeReg
	}
	a.Mode = mode & 0o7777
	a.Nlink = st.Nlink
	a.UID, a.GID = st.Uid, st.Gid
	a.Size = st.Size
	a.Used = st.Blocks * 512
	a.Rdev = nfs3.SpecData{Major: st.Rdev_major, Minor: st.Rdev_minor}
	a.FSID = s.fsid(st)
	a.FileID = st.Ino
	a.Atime = nfs3.Time{Seconds: uint32(st.Atime.Sec), Nseconds: st.Atime.Nsec}
	a.Mtime = nfs3.Time{Seconds: uint32(st.Mtime.Sec), Nseconds: st.Mtime.Nsec}
	a.Ctime = nfs3.Time{Seconds: uint32(st.Ctime.Sec), Nseconds: st.Ctime.Nsec}
}

func (s *Server) postOp(st *unix.Statx_t) nfs3.PostOpAttr {
	var p nfs3.PostOpAttr
	p.Present = true
	s.fattr(st, &p.Attr)
	return p
}

func preOp(st *unix.Statx_t) nfs3.PreOpAttr {
	return nfs3.PreOpAttr{Present: true, Attr: nfs3.WccAttr{
		Size:  st.Size,
		Mtime: nfs3.Time{Seconds: uint32(st.Mtime.Sec), Nseconds: st.Mtime.Nsec},
		Ctime: nfs3.Time{Seconds: uint32(st.Ctime.Sec), Nseconds: st.Ctime.Nsec},
	}}
}

// wcc returns the weak cache consistency data of o: the attributes it had when opened
// and its attributes now.
func (s *Server) wcc(o *object) nfs3.WccData {
	if o.fd < 0 {
		return nfs3.WccData{}
	}
	return s.wccOf(o.fd, &o.st)
}

// wccOf returns the weak cache consistency data of the object fd refers to, which
// had the attributes before.
func (s *Server) wccOf(fd int, before *unix.Statx_t) nfs3.WccData {
	w := nfs3.WccData{Before: preOp(before)}
	var now unix.Statx_t
	if statFD(fd, &now) == nil {
		w.After = s.postOp(&now)
	}
	return w
}
