//go:build linux

package nfsserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Directory cookies are a keyed hash of the entry's name, and a listing is returned
// in cookie order. A cookie therefore names a position that stays valid when the
// directory changes and across server restarts that keep the handle key: the next
// call resumes after it, with entries added or removed meanwhile appearing or not,
// but none repeated or skipped among those that stayed. That is why the cookie
// verifier (the directory's mtime, returned for the client's information) is never
// cause to reject a cookie.
//
// Resuming "after cookie c" skips every entry whose cookie is c, so of two names
// with one cookie (a collision) the second is missing from the listing whenever a
// reply ends between them. Hence the key: with an unkeyed hash (this server used
// FNV-1a) anyone who may create names in a shared directory can compute one that
// collides with another user's file, and add entries until a reply ends between the
// two, making the victim's file disappear from listings; ext4's htree has a secret
// per-file-system hash seed against the same attack. Under a secret key collisions
// cannot be crafted, only happen by chance (2^-64 for a pair of names); the listing
// puts equal cookies in name order so that it stays deterministic even then, and a
// reply ending inside such a collision still skips the rest of it.
//
// The hash is SipHash-2-4 (sipHash24), a pseudorandom function made for short
// inputs, several times cheaper than a SHA-256 compression even with SHA
// instructions and an order of magnitude cheaper than HMAC-SHA256; cost matters
// because a listing that is not cached (dirCache keeps only settled directories) is
// read and hashed whole on every READDIR. Its 128-bit key is the first half of
// HMAC-SHA256(handle key, cookieKeyLabel): no state of its own, as persistent as
// the handle key, and revealing nothing of it. With Options.StateDir or HandleKey,
// cookies survive a restart as handles do; with a random handle key per run they
// change on every restart, as handles do, and a client's old cookies go with its
// old, now stale, directory handles.
//
// A cookie is never 0, 1 or 2: NFSv3 reserves 0 for "from the beginning" (RFC 1813
// §3.3.16), and NFSv4 reserves 0, 1 and 2, which READDIR results are not to carry
// (RFC 8881 §18.23.3). Hash values below firstCookie become firstCookie, the only
// remapping: it keeps the order, and the few names concerned (a chance of 2^-62
// each) sort by name among themselves like any other equal cookies.

// cookieKeyLabel separates the cookie key from the handle key it is derived from and
// from any other key derived from it.
const cookieKeyLabel = "nfsrdma readdir cookie key"

// firstCookie is the least cookie an entry gets (see above).
const firstCookie = 3

// A cookieKey is the SipHash key of a Server's directory cookies.
type cookieKey struct{ k0, k1 uint64 }

// newCookieKey derives the cookie key from the handle key.
func newCookieKey(handleKey []byte) cookieKey {
	m := hmac.New(sha256.New, handleKey)
	m.Write([]byte(cookieKeyLabel))
	sum := m.Sum(nil)
	return cookieKey{binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])}
}

// cookie returns the cookie of the entry name.
func (k cookieKey) cookie(name string) uint64 {
	return cookieOfHash(sipHash24(k.k0, k.k1, name))
}

// cookieOfHash is the cookie of an entry whose name hashes to h: h, kept clear of
// the reserved values.
func cookieOfHash(h uint64) uint64 { return max(h, firstCookie) }

type dirent struct {
	cookie uint64
	name   string
	// ino is the inode number the directory holds for name (d_ino): for a mount point,
	// that of the directory the mount covers. 0 for "." and "..".
	ino uint64
}

// compareDirents orders a listing: by cookie, then, for equal cookies, by name.
func compareDirents(a, b dirent) int {
	if c := cmp.Compare(a.cookie, b.cookie); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

// A dirListing is a directory's entries in cookie order (compareDirents), "." and
// ".." included.
type dirListing struct {
	mtime, ctime unix.StatxTimestamp
	ents         []dirent
}

// dirCacheSettle is how old a directory's mtime and ctime must be before its listing
// is cached. Any later change sets them to the current time, which is then newer than
// the cached values, so the cache cannot serve a listing that misses a change even on
// file systems with coarse timestamps.
const dirCacheSettle = 2 * time.Second

const dirCacheMax = 64

// A dirCache holds a Server's cookie key and its settled directories' listings.
type dirCache struct {
	key cookieKey // set by New, then read-only
	mu  sync.Mutex
	m   map[fileKey]*dirListing
}

func (c *dirCache) get(k fileKey, st *unix.Statx_t) *dirListing {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m[k]
	if l == nil || l.mtime != st.Mtime || l.ctime != st.Ctime {
		return nil
	}
	return l
}

func (c *dirCache) put(k fileKey, l *dirListing) {
	settled := time.Now().Add(-dirCacheSettle).Unix()
	if l.mtime.Sec >= settled || l.ctime.Sec >= settled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[fileKey]*dirListing)
	}
	if len(c.m) >= dirCacheMax {
		for victim := range c.m {
			delete(c.m, victim)
			break
		}
	}
	c.m[k] = l
}

// listDir returns the entries of dir after cookie, in cookie order: those whose
// cookie is greater.
func (s *Server) listDir(dir *object, cookie uint64) ([]dirent, error) {
	l := s.dirs.get(keyOf(&dir.st), &dir.st)
	if l == nil {
		fd, err := openDirFD(dir)
		if err != nil {
			return nil, err
		}
		ents, err := readDirents(fd)
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		ents = append(ents, dirent{name: "."}, dirent{name: ".."})
		for i := range ents {
			ents[i].cookie = s.dirs.key.cookie(ents[i].name)
		}
		l = &dirListing{mtime: dir.st.Mtime, ctime: dir.st.Ctime, ents: ents}
		slices.SortFunc(l.ents, compareDirents)
		s.dirs.put(keyOf(&dir.st), l)
	}
	i, _ := slices.BinarySearchFunc(l.ents, cookie+1, func(e dirent, c uint64) int { return cmp.Compare(e.cookie, c) })
	if cookie == ^uint64(0) {
		i = len(l.ents)
	}
	return l.ents[i:], nil
}

// readDirents reads every entry of the open directory fd but "." and "..", with the
// inode number it holds for each (getdents64), as os.File.Readdirnames would list
// them (entries with inode 0 skipped), without the cookies.
func readDirents(fd int) ([]dirent, error) {
	buf := make([]byte, 32<<10)
	var ents []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("nfsserver: reading a directory: %w", err)
		}
		if n <= 0 {
			return ents, nil
		}
		// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1),
		// d_name (NUL-terminated), in the machine's byte order.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < 19 || reclen > len(b) {
				return nil, fmt.Errorf("nfsserver: reading a directory: bad record length %d", reclen)
			}
			ino := binary.NativeEndian.Uint64(b)
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			ents = append(ents, dirent{name: string(name), ino: ino})
		}
	}
}

func cookieVerf(st *unix.Statx_t) [nfs3.CookieVerfSize]byte {
	var v [nfs3.CookieVerfSize]byte
	binary.BigEndian.PutUint32(v[:], uint32(st.Mtime.Sec))
	binary.BigEndian.PutUint32(v[4:], st.Mtime.Nsec)
	return v
}

func (s *Server) readdir(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.ReaddirArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var dir object
	var r nfs3.ReaddirRes
	c := s.credOf(ctx, req)
	r.Status = s.openDir(a.Dir, &dir, &c, permR)
	defer dir.close()
	if r.Status == nfs3.StatusOK {
		r.Status = s.doReaddir(&dir, &a, &r, &c)
	}
	r.DirAttr = s.attr(&dir)
	r.EncodeXDR(res)
	return nil
}

// doReaddir fills READDIR's entries for the caller c. A mount point c may not cross
// (see visible) is listed with the fileid of the directory it covers, as knfsd lists
// it.
func (s *Server) doReaddir(dir *object, a *nfs3.ReaddirArgs, r *nfs3.ReaddirRes, c *cred) nfs3.Status {
	ents, err := s.listDir(dir, a.Cookie)
	if err != nil {
		return statusOf(err)
	}
	limit := min(int(a.Count), s.opts.MaxDirReply)
	used := nfs3.ReaddirResOverhead - 4 // count bounds READDIR3resok, without the status
	r.CookieVerf = cookieVerf(&dir.st)
	r.EOF = true
	var st unix.Statx_t
	for _, e := range ents {
		n := nfs3.DirEntrySize(len(e.name))
		if used+n > limit {
			r.EOF = false
			break
		}
		if _, status := s.childStat(dir, []byte(e.name), &st); status != nfs3.StatusOK {
			continue // removed since it was listed
		}
		fileid := st.Ino
		if !s.visible(c, &st) {
			fileid = e.ino
		}
		r.Entries = append(r.Entries, nfs3.DirEntry{FileID: fileid, Name: []byte(e.name), Cookie: e.cookie})
		used += n
	}
	if len(r.Entries) == 0 && !r.EOF {
		return nfs3.StatusTooSmall
	}
	return nfs3.StatusOK
}

var sizingFH [HandleSize]byte

func (s *Server) readdirplus(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.ReaddirplusArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	var dir object
	var r nfs3.ReaddirplusRes
	c := s.credOf(ctx, req)
	// Read permission alone lets the caller list the names, as knfsd does (see
	// doReaddirplus).
	r.Status = s.openDir(a.Dir, &dir, &c, permR)
	defer dir.close()
	if r.Status == nfs3.StatusOK {
		r.Status = s.doReaddirplus(ctx, req, &dir, &a, &r, &c)
	}
	r.DirAttr = s.attr(&dir)
	r.EncodeXDR(res)
	return nil
}

// doReaddirplus fills READDIRPLUS's entries for the caller c. It honours both limits
// of RFC 1813 §3.3.17: maxcount bounds the whole READDIRPLUS3resok, dircount the
// directory information (fileid, name, cookie) alone. A mount point c may not cross
// (see visible) is listed as knfsd lists every mount point (compose_entry_fh): with
// the fileid of the directory it covers and neither attributes nor handle, so that
// the client learns the name exists and that LOOKUP (NFS3ERR_ACCES) is the way to it.
// The root of a nested export c crosses into (crossInto) is listed the same way: its
// handle is that export's, which LOOKUP gives. In a directory c may read but not
// search, every entry but "." and ".." is listed with neither attributes nor handle,
// with the fileid READDIR gives: knfsd's lookup of the entry (compose_entry_fh) is
// made with the caller's credentials and fails there, and the caller could not get
// them by LOOKUP either (NFS3ERR_ACCES).
func (s *Server) doReaddirplus(ctx context.Context, req *oncrpc.Request, dir *object, a *nfs3.ReaddirplusArgs, r *nfs3.ReaddirplusRes, c *cred) nfs3.Status {
	ents, err := s.listDir(dir, a.Cookie)
	if err != nil {
		return statusOf(err)
	}
	search := allowed(c, &dir.st, permX)
	limit := min(int(a.MaxCount), s.opts.MaxDirReply)
	dirLimit := int(a.DirCount)
	used, dirUsed := nfs3.ReaddirResOverhead-4, 0
	r.CookieVerf = cookieVerf(&dir.st)
	r.EOF = true
	handles := make([]byte, 0, min(len(ents), limit/(nfs3.DirEntrySize(1)+8+HandleSize))*HandleSize)
	var st unix.Statx_t
	for _, e := range ents {
		p, status := s.childStat(dir, []byte(e.name), &st)
		if status != nfs3.StatusOK {
			continue
		}
		// bare: listed with neither attributes nor handle. A mount point c may not
		// cross (see visible), or the root of a nested export, with the fileid of
		// the directory it covers; an entry c may not look up, with its own.
		en := nfs3.DirEntryPlus{FileID: st.Ino, Name: []byte(e.name), Cookie: e.cookie, Attr: s.postOp(&st)}
		en.Handle = nfs3.PostOpFH{Present: true, FH: sizingFH[:]} // for Size(); replaced below
		bare := true
		switch {
		case !s.onExportMount(&st) && (!c.crossmnt || s.crossInto(ctx, req, &st, c.crossmnt) != nil):
			en = nfs3.DirEntryPlus{FileID: e.ino, Name: []byte(e.name), Cookie: e.cookie}
		case !search && e.name != "." && e.name != "..":
			en = nfs3.DirEntryPlus{FileID: st.Ino, Name: []byte(e.name), Cookie: e.cookie}
		default:
			bare = false
		}
		dn := nfs3.DirEntrySize(len(e.name))
		if used+en.Size() > limit || (dirLimit > 0 && dirUsed+dn > dirLimit && len(r.Entries) > 0) {
			r.EOF = false
			break
		}
		if bare {
			r.Entries = append(r.Entries, en)
			used += en.Size()
			dirUsed += dn
			continue
		}
		if len(handles)+HandleSize > cap(handles) {
			handles = make([]byte, 0, 64*HandleSize)
		}
		start := len(handles)
		handles = s.handles.encode(handles, idOf(&st))
		en.Handle.FH = handles[start:len(handles):len(handles)]
		if e.name != "." && e.name != ".." {
			s.idx.put(keyOf(&st), p)
		}
		r.Entries = append(r.Entries, en)
		used += en.Size()
		dirUsed += dn
	}
	if len(r.Entries) == 0 && !r.EOF {
		return nfs3.StatusTooSmall
	}
	return nfs3.StatusOK
}
