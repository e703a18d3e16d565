//go:build linux

package nfsserver

import (
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// cred is the identity a call acts as.
type cred struct {
	uid, gid uint32
	gids     []uint32
}

func (s *Server) credOf(req *oncrpc.Request) cred {
	if a := req.AuthSys; a != nil && !(s.opts.RootSquash && a.UID == 0) {
		return cred{uid: a.UID, gid: a.GID, gids: a.GIDs}
	}
	return cred{uid: s.opts.AnonUID, gid: s.opts.AnonGID}
}

func (c *cred) inGroup(g uint32) bool {
	if c.gid == g {
		return true
	}
	for _, x := range c.gids {
		if x == g {
			return true
		}
	}
	return false
}

// Permission bits in the "other" position.
const (
	permR = 4
	permW = 2
	permX = 1
)

// allowed applies the POSIX permission rules to st for c: root may read and write
// anything and execute what has some execute bit (or is a directory); others are
// judged by the owner, group or other class of the mode.
func allowed(c *cred, st *unix.Statx_t, want uint32) bool {
	mode := uint32(st.Mode)
	if c.uid == 0 {
		if want&permX != 0 && mode&unix.S_IFMT != unix.S_IFDIR && mode&0o111 == 0 {
			return false
		}
		return true
	}
	var bits uint32
	switch {
	case c.uid == st.Uid:
		bits = mode >> 6 & 7
	case c.inGroup(st.Gid):
		bits = mode >> 3 & 7
	default:
		bits = mode & 7
	}
	return bits&want == want
}

// isOwner reports whether c owns st or is root.
func isOwner(c *cred, st *unix.Statx_t) bool { return c.uid == 0 || c.uid == st.Uid }

// mayDelete applies the sticky-bit rule: in a sticky directory only the owner of the
// entry, the owner of the directory or root may remove or rename it.
func mayDelete(c *cred, dir, child *unix.Statx_t) bool {
	if dir.Mode&unix.S_ISVTX == 0 || c.uid == 0 {
		return true
	}
	return c.uid == dir.Uid || c.uid == child.Uid
}
