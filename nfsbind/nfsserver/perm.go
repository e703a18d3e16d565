//go:build linux

package nfsserver

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// cred is the identity a call acts as, and whether it may modify the export.
type cred struct {
	uid, gid uint32
	gids     []uint32
	// group0 is what a supplementary gid 0 counts as (the anonymous gid under
	// root_squash, 0 otherwise).
	group0 uint32
	// ro: the caller's client entry (or Options.ReadOnly) makes the export read-only.
	ro bool
	// crossmnt: the caller's client entry (or Options.CrossMount) lets it reach the
	// file systems mounted below the export root (see Server.visible).
	crossmnt bool
	// barred holds the devices of the file systems below the export that are
	// exports of their own listing the caller (nbarred of them; barredMore past
	// len(barred)): with crossmnt the caller reaches their objects through those
	// exports' handles (crossInto), never through this export's (Server.reachable).
	barred     [4]uint64
	nbarred    int
	barredMore []uint64
}

// bar adds dev to the devices barred to c.
func (c *cred) bar(dev uint64) {
	if c.nbarred < len(c.barred) {
		c.barred[c.nbarred] = dev
	} else {
		c.barredMore = append(c.barredMore, dev)
	}
	c.nbarred++
}

// isBarred reports whether objects on device dev are barred to c.
func (c *cred) isBarred(dev uint64) bool {
	for i := range min(c.nbarred, len(c.barred)) {
		if c.barred[i] == dev {
			return true
		}
	}
	for _, d := range c.barredMore {
		if d == dev {
			return true
		}
	}
	return false
}

// credOf returns the identity req acts as under the options its client entry grants
// (see grant): AUTH_NONE and all_squash (even with no_root_squash, as in knfsd) act
// as the anonymous uid and gid; root_squash replaces uid 0 and gid 0, primary or
// supplementary, by the anonymous ones. A caller the client list no longer admits
// (the table was reloaded during the call) acts as the anonymous identity on a
// read-only export. A host-name lookup it needs gives up when ctx (the call's) ends.
func (s *Server) credOf(ctx context.Context, req *oncrpc.Request) cred {
	g := s.grant(ctx, req)
	if g == nil {
		return cred{uid: s.static.AnonUID, gid: s.static.AnonGID, group0: s.static.AnonGID, ro: true}
	}
	c := cred{uid: g.AnonUID, gid: g.AnonGID, group0: g.AnonGID, ro: g.ReadOnly, crossmnt: g.CrossMount}
	if c.crossmnt {
		if ns := s.nested.Load(); ns != nil {
			for _, n := range *ns {
				if n.grant(ctx, req) != nil {
					c.bar(n.rootDev)
				}
			}
		}
	}
	a := req.AuthSys
	if a == nil || g.AllSquash {
		// all_squash wins over no_root_squash, as in knfsd.
		return c
	}
	c.uid, c.gid, c.gids = a.UID, a.GID, a.GIDs
	// (uid_t)-1 and (gid_t)-1 name nobody: chown(2) reads them as "leave unchanged",
	// so a file created for such a caller would keep the server's own owner, root. A
	// caller claiming one acts as the anonymous identity, as with knfsd
	// (nfsd_setuser maps an invalid fsuid or fsgid to the export's anonymous one).
	if c.uid == noID {
		c.uid = g.AnonUID
	}
	if c.gid == noID {
		c.gid = g.AnonGID
	}
	if !g.NoRootSquash {
		if c.uid == 0 {
			c.uid = g.AnonUID
		}
		if c.gid == 0 {
			c.gid = g.AnonGID
		}
	} else {
		c.group0 = 0
	}
	return c
}

// noID is (uid_t)-1 and (gid_t)-1, which names no user or group: chown(2) takes it as
// "leave unchanged".
const noID = 1<<32 - 1

func (c *cred) inGroup(g uint32) bool {
	if c.gid == g {
		return true
	}
	for _, x := range c.gids {
		if x == 0 {
			x = c.group0
		}
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

// keepSGID returns mode without the setgid bit when c may not set it on an object of
// group gid: as chmod(2) does for a caller without CAP_FSETID outside the group. The
// server runs as root, so the kernel would not clear it on the caller's behalf.
func (c *cred) keepSGID(mode, gid uint32) uint32 {
	if c.uid != 0 && !c.inGroup(gid) {
		mode &^= unix.S_ISGID
	}
	return mode
}

// killSUID returns the bits of st's mode that a write or truncate by c must clear, as
// Linux clears them for a caller without CAP_FSETID (setattr_should_drop_suidgid):
// S_ISUID, and S_ISGID when the file is group-executable or c is outside its group
// (the rule of current kernels; older ones cleared S_ISGID only from a
// group-executable file). Root keeps both. knfsd drops CAP_FSETID for every caller but root, so the kernel
// clears these bits for them; this server writes as root, with CAP_FSETID, so it
// clears them itself (Server.dropSUID).
func killSUID(c *cred, st *unix.Statx_t) uint32 {
	mode := uint32(st.Mode)
	if c.uid == 0 || mode&(unix.S_ISUID|unix.S_ISGID) == 0 {
		return 0
	}
	kill := mode & unix.S_ISUID
	if mode&unix.S_ISGID != 0 && (mode&unix.S_IXGRP != 0 || !c.inGroup(st.Gid)) {
		kill |= unix.S_ISGID
	}
	return kill
}

// mayHardlink applies Linux's protected_hardlinks rule (the default on current
// distributions), which the kernel would apply to the caller itself: a caller may
// link a file it owns, or a regular file that is neither setuid nor setgid-executable
// and that it may read and write. The server links as root, so it checks for the
// caller: a squashed root cannot give a root-owned setuid program a new name.
func mayHardlink(c *cred, st *unix.Statx_t) bool {
	if c.uid == 0 || c.uid == st.Uid {
		return true
	}
	mode := uint32(st.Mode)
	if !isReg(st) || mode&unix.S_ISUID != 0 || mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP {
		return false
	}
	return allowed(c, st, permR|permW)
}
