//go:build linux

package nfsserver

import (
	"context"
	"net"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// MountHandler returns the oncrpc handler of MOUNT version 3.
func (s *Server) MountHandler() oncrpc.Handler {
	return oncrpc.NonBlocking(oncrpc.Procs{
		uint32(nfs3.MountProcNull):    null,
		uint32(nfs3.MountProcMnt):     s.mnt,
		uint32(nfs3.MountProcDump):    s.dump,
		uint32(nfs3.MountProcUmnt):    s.umnt,
		uint32(nfs3.MountProcUmntall): s.umntall,
		uint32(nfs3.MountProcExport):  s.export,
	}, uint32(nfs3.MountProcNull))
}

func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}

// cleanMountPath returns a MOUNT dirpath with repeated slashes collapsed and trailing
// ones dropped ("/export//sub/" is "/export/sub"), as knfsd's mountd normalises it
// (auth_fixpath) before matching it against the exports. "." and ".." components are
// kept: mountPath refuses them.
func cleanMountPath(p string) string {
	if !strings.Contains(p, "//") && (len(p) <= 1 || p[len(p)-1] != '/') {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i+1 < len(p) && p[i+1] == '/' {
			continue
		}
		b = append(b, p[i])
	}
	for len(b) > 1 && b[len(b)-1] == '/' {
		b = b[:len(b)-1]
	}
	return string(b)
}

// mountPath maps a MOUNT dirpath (cleaned by cleanMountPath) to a path relative to
// the export root: the export path itself or a directory below it, with no ".", ".."
// or empty components (MNT3ERR_INVAL) and none longer than NAME_MAX
// (MNT3ERR_NAMETOOLONG, what a walk of the path would find).
func (s *Server) mountPath(dirpath string) (string, nfs3.MountStat) {
	var rel string
	switch {
	case dirpath == s.exportPath:
	case s.exportPath == "/" && strings.HasPrefix(dirpath, "/"):
		rel = dirpath[1:]
	case strings.HasPrefix(dirpath, s.exportPath+"/"):
		rel = dirpath[len(s.exportPath)+1:]
	default:
		return "", nfs3.MountErrNoEnt
	}
	rel = strings.TrimSuffix(rel, "/")
	if rel == "" {
		return "", nfs3.MountOK
	}
	for _, c := range strings.Split(rel, "/") {
		switch {
		case c == "" || c == "." || c == ".." || strings.IndexByte(c, 0) >= 0:
			return "", nfs3.MountErrInval
		case len(c) > nfs3.MaxNameLen:
			return "", nfs3.MountErrNameTooLong
		}
	}
	return rel, nfs3.MountOK
}

// Bounds on the walk of one MNT path by openMountPath: the symbolic links it follows
// (the kernel's own path walk gives up after 40) and the components it visits, those
// the links' targets add included.
const (
	maxMountLinks = 40
	maxMountSteps = 4096
)

// openMountPath opens rel (a path from mountPath) for MNT, following the symbolic
// links on the way as knfsd's mountd does (it resolves the MNT path with realpath
// before matching it against the exports), but only within the export: a link whose
// target is absolute or climbs above the export root refuses the mount (EACCES).
// It returns an O_PATH descriptor of what rel names and that object's path relative
// to the root, with no symbolic link and no empty, "." or ".." component. Each
// component is opened with O_NOFOLLOW from the directory reached before it, and ".."
// reopens the directory above through openPath (no symbolic links), so a link swapped
// in meanwhile is read as a link, never followed by the kernel. Too many links or
// components give ELOOP.
func (s *Server) openMountPath(rel string) (int, string, error) {
	fd, err := s.openPath("")
	if err != nil {
		return -1, "", err
	}
	fail := func(err error) (int, string, error) {
		unix.Close(fd)
		return -1, "", err
	}
	var done []string // the components reached, none a link
	todo := strings.Split(rel, "/")
	links, steps := 0, 0
	var buf []byte
	for len(todo) > 0 {
		comp := todo[0]
		todo = todo[1:]
		if steps++; steps > maxMountSteps {
			return fail(unix.ELOOP)
		}
		switch comp {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return fail(unix.EACCES) // above the export root
			}
			done = done[:len(done)-1]
			up, err := s.openPath(strings.Join(done, "/"))
			if err != nil {
				return fail(err)
			}
			unix.Close(fd)
			fd = up
			continue
		}
		next, err := unix.Openat(fd, comp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(err)
		}
		var st unix.Statx_t
		if err := statFD(next, &st); err != nil {
			unix.Close(next)
			return fail(err)
		}
		if !isLnk(&st) {
			unix.Close(fd)
			fd = next
			done = append(done, comp)
			continue
		}
		if links++; links > maxMountLinks {
			unix.Close(next)
			return fail(unix.ELOOP)
		}
		if buf == nil {
			buf = make([]byte, unix.PathMax)
		}
		n, err := unix.Readlinkat(next, "", buf)
		unix.Close(next)
		switch {
		case err != nil:
			return fail(err)
		case n == 0:
			return fail(unix.ENOENT) // as the kernel resolves an empty link
		case buf[0] == '/':
			return fail(unix.EACCES) // absolute: read from the server's root, not the export's
		}
		todo = append(strings.Split(string(buf[:n]), "/"), todo...)
	}
	return fd, strings.Join(done, "/"), nil
}

func mountStatOf(st nfs3.Status) nfs3.MountStat {
	switch st {
	case nfs3.StatusNoEnt, nfs3.StatusStale:
		return nfs3.MountErrNoEnt
	case nfs3.StatusAcces, nfs3.StatusPerm:
		return nfs3.MountErrAcces
	case nfs3.StatusNotDir, nfs3.StatusInval:
		return nfs3.MountErrNotDir
	case nfs3.StatusNameTooLong:
		return nfs3.MountErrNameTooLong
	}
	return nfs3.MountErrIO
}

func (s *Server) mnt(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.MntArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	s.mount(ctx, req, cleanMountPath(string(a.Path)), res)
	return nil
}

// mount answers MNT for dirpath (cleaned by cleanMountPath): MNT3ERR_ACCES for a
// caller the client list refuses (or a TCP source port "secure" refuses), else the
// handle of dirpath. Without crossmnt, a directory below the export root on another
// mount or device is MNT3ERR_ACCES, as mountd refuses a directory "below nearest
// filesystem" (get_rootfh compares the devices; the mount is compared too, as for
// every other call, see Server.visible).
func (s *Server) mount(ctx context.Context, req *oncrpc.Request, dirpath string, res *xdr.Encoder) {
	s.mountAt(ctx, req, dirpath, res, true)
}

// mountAt is mount. With reroute, a dirpath whose symbolic links lead into another
// export of s's Exports is mounted as that export's path (without links) would be:
// mountd resolves the links (realpath) before it matches the path against the
// exports, so a link into a nested export gives that export's handle and options.
func (s *Server) mountAt(ctx context.Context, req *oncrpc.Request, dirpath string, res *xdr.Encoder, reroute bool) {
	var r nfs3.MntRes
	var rel string
	rel, r.Status = s.mountPath(dirpath)
	var g *exports.Options
	if r.Status == nfs3.MountOK {
		if g = s.grant(ctx, req); g == nil || !portOK(g, req) {
			r.Status = nfs3.MountErrAcces
		}
	}
	var fhbuf [HandleSize]byte
	if r.Status == nfs3.MountOK {
		fd, real, err := s.openMountPath(rel)
		if err != nil {
			r.Status = mountStatOf(statusOf(err))
			if err == unix.ELOOP {
				// Too many links: mountd's stat fails, and anything but ENOENT
				// is MNT3ERR_ACCES there.
				r.Status = nfs3.MountErrAcces
			}
		} else {
			linked := real != rel
			rel = real
			var st unix.Statx_t
			if err := statFD(fd, &st); err != nil {
				r.Status = mountStatOf(statusOf(err))
			} else if !isDir(&st) {
				r.Status = nfs3.MountErrNotDir
			} else if n, resolved := s.mountedElsewhere(ctx, req, real, reroute && linked); n != nil {
				unix.Close(fd)
				n.mountAt(ctx, req, resolved, res, false)
				return
			} else if !g.CrossMount && (!s.onExportMount(&st) || keyOf(&st).dev != s.rootDev) {
				r.Status = nfs3.MountErrAcces
				s.log.Warn("request to mount a directory below the export's file system, without crossmnt",
					"client", hostOf(req.RemoteAddr), "path", dirpath, "export", s.exportPath)
			} else {
				s.idx.put(keyOf(&st), rel)
				r.FH = s.handles.encode(fhbuf[:0], idOf(&st))
				r.AuthFlavors = []uint32{uint32(oncrpc.AuthSys), uint32(oncrpc.AuthNone)}
			}
			unix.Close(fd)
		}
	}
	host := hostOf(req.RemoteAddr)
	if r.Status == nfs3.MountOK {
		s.mountMu.Lock()
		found := false
		for _, m := range s.mounts {
			found = found || (m.host == host && m.path == dirpath)
		}
		if !found {
			s.mounts = append(s.mounts, mountEntry{host, dirpath})
		}
		s.mountMu.Unlock()
		s.log.Info("mount", "client", host, "path", dirpath)
	} else {
		s.log.Info("mount refused", "client", host, "path", dirpath, "status", r.Status.String())
	}
	r.EncodeXDR(res)
}

// mountedElsewhere returns the export of s's Exports other than s that answers MNT of
// rel (a path from s's root without symbolic links), and rel as a MNT path; nil when
// s answers it, s belongs to no Exports, or not asked to look (look false).
func (s *Server) mountedElsewhere(ctx context.Context, req *oncrpc.Request, rel string, look bool) (*Server, string) {
	if !look || s.opts.set == nil {
		return nil, ""
	}
	p := s.exportPath
	switch {
	case rel == "":
	case p == "/":
		p += rel
	default:
		p += "/" + rel
	}
	if n := s.opts.set.mountServer(ctx, req, p); n != nil && n != s {
		return n, p
	}
	return nil, ""
}

func (s *Server) dump(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var r nfs3.DumpRes
	s.appendMounts(&r)
	r.EncodeXDR(res)
	return nil
}

// appendMounts appends s's table of mounts (what DUMP lists) to r.
func (s *Server) appendMounts(r *nfs3.DumpRes) {
	s.mountMu.Lock()
	defer s.mountMu.Unlock()
	for _, m := range s.mounts {
		r.Mounts = append(r.Mounts, nfs3.MountBody{Hostname: []byte(m.host), Directory: []byte(m.path)})
	}
}

// forgetMounts removes host's mount of path from s's table (UMNT), or every mount of
// host when all is set (UMNTALL).
func (s *Server) forgetMounts(host, path string, all bool) {
	s.mountMu.Lock()
	defer s.mountMu.Unlock()
	s.mounts = deleteMounts(s.mounts, func(m mountEntry) bool { return m.host == host && (all || m.path == path) })
}

func (s *Server) umnt(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	var a nfs3.UmntArgs
	if err := a.DecodeXDR(req.Args); err != nil {
		return garbage(err)
	}
	host, path := hostOf(req.RemoteAddr), cleanMountPath(string(a.Path))
	s.forgetMounts(host, path, false)
	s.log.Info("unmount", "client", host, "path", path)
	return nil
}

func (s *Server) umntall(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	host := hostOf(req.RemoteAddr)
	s.forgetMounts(host, "", true)
	s.log.Info("unmount all", "client", host)
	return nil
}

func deleteMounts(ms []mountEntry, del func(mountEntry) bool) []mountEntry {
	out := ms[:0]
	for _, m := range ms {
		if !del(m) {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) export(_ context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	r := nfs3.ExportRes{Exports: []nfs3.ExportNode{s.exportNode()}}
	r.EncodeXDR(res)
	return nil
}

// exportNode is the EXPORT entry of s: its path and its client list's entries as
// written ("*" without one).
func (s *Server) exportNode() nfs3.ExportNode {
	n := nfs3.ExportNode{Dir: []byte(s.exportPath)}
	l := s.clients.Load()
	if l == nil {
		n.Groups = [][]byte{[]byte("*")}
		return n
	}
	for _, g := range l.exp.Groups() {
		n.Groups = append(n.Groups, []byte(g))
	}
	return n
}
