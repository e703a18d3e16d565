//go:build linux

package nfsserver

import (
	"cmp"
	"context"
	"encoding/binary"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Directory cookies are a 64-bit FNV-1a hash of the entry's name, and a listing is
// returned in cookie order. A cookie therefore names a position that stays valid when
// the directory changes and across server restarts: the next call resumes after it,
// with entries added or removed meanwhile appearing or not, but none repeated or
// skipped among those that stayed. That is why the cookie verifier (the directory's
// mtime, returned for the client's information) is never cause to reject a cookie.
func cookieOf(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	if h == 0 {
		h = 1 // 0 means "from the beginning"
	}
	return h
}

type dirent struct {
	cookie uint64
	name   string
}

// A dirListing is a directory's entries in cookie order, "." and ".." included.
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

type dirCache struct {
	mu sync.Mutex
	m  map[fileKey]*dirListing
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

// listDir returns the entries of dir after cookie, in cookie order.
func (s *Server) listDir(dir *object, cookie uint64) ([]dirent, error) {
	l := s.dirs.get(keyOf(&dir.st), &dir.st)
	if l == nil {
		fd, err := openDirFD(dir)
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fd), "dir")
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return nil, err
		}
		names = append(names, ".", "..")
		l = &dirListing{mtime: dir.st.Mtime, ctime: dir.st.Ctime, ents: make([]dirent, len(names))}
		for i, n := range names {
			l.ents[i] = dirent{cookieOf(n), n}
		}
		slices.SortFunc(l.ents, func(a, b dirent) int { return cmp.Compare(a.cookie, b.cookie) })
		s.dirs.put(keyOf(&dir.st), l)
	}
	i, _ := slices.BinarySearchFunc(l.ents, cookie+1, func(e dirent, c uint64) int { return cmp.Compare(e.cookie, c) })
	if cookie == ^uint64(0) {
		i = len(l.ents)
	}
	return l.ents[i:], nil
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
		r.Status = s.doReaddir(&dir, &a, &r)
	}
	r.DirAttr = s.attr(&dir)
	r.EncodeXDR(res)
	return nil
}

func (s *Server) doReaddir(dir *object, a *nfs3.ReaddirArgs, r *nfs3.ReaddirRes) nfs3.Status {
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
		if _, status := s.child(dir, []byte(e.name), &st); status != nfs3.StatusOK {
			continue // removed since it was listed
		}
		r.Entries = append(r.Entries, nfs3.DirEntry{FileID: st.Ino, Name: []byte(e.name), Cookie: e.cookie})
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
	r.Status = s.openDir(a.Dir, &dir, &c, permR|permX)
	defer dir.close()
	if r.Status == nfs3.StatusOK {
		r.Status = s.doReaddirplus(&dir, &a, &r)
	}
	r.DirAttr = s.attr(&dir)
	r.EncodeXDR(res)
	return nil
}

// doReaddirplus honours both limits of RFC 1813 §3.3.17: maxcount bounds the whole
// READDIRPLUS3resok, dircount the directory information (fileid, name, cookie) alone.
func (s *Server) doReaddirplus(dir *object, a *nfs3.ReaddirplusArgs, r *nfs3.ReaddirplusRes) nfs3.Status {
	ents, err := s.listDir(dir, a.Cookie)
	if err != nil {
		return statusOf(err)
	}
	limit := min(int(a.MaxCount), s.opts.MaxDirReply)
	dirLimit := int(a.DirCount)
	used, dirUsed := nfs3.ReaddirResOverhead-4, 0
	r.CookieVerf = cookieVerf(&dir.st)
	r.EOF = true
	handles := make([]byte, 0, min(len(ents), limit/(nfs3.DirEntrySize(1)+8+HandleSize))*HandleSize)
	var st unix.Statx_t
	for _, e := range ents {
		p, status := s.child(dir, []byte(e.name), &st)
		if status != nfs3.StatusOK {
			continue
		}
		en := nfs3.DirEntryPlus{FileID: st.Ino, Name: []byte(e.name), Cookie: e.cookie, Attr: s.postOp(&st)}
		en.Handle = nfs3.PostOpFH{Present: true, FH: sizingFH[:]} // for Size(); replaced below
		dn := nfs3.DirEntrySize(len(e.name))
		if used+en.Size() > limit || (dirLimit > 0 && dirUsed+dn > dirLimit && len(r.Entries) > 0) {
			r.EOF = false
			break
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
