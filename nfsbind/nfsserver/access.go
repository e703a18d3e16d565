//go:build linux

package nfsserver

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// clientList is the client list a Server checks every call against.
type clientList struct {
	exp   *exports.Export
	names exports.NameSource // nil when exp has no host-name clients or no resolver
}

// SetClients makes e's client entries decide, for every call from now on, whether the
// caller may use the export and with which options (ro/rw, squashing, anonymous
// identity, secure port, crossmnt); names gives callers' host names for host-name and wildcard
// entries (nil: those entries match nobody). Only e.Clients is used: the Server keeps
// its own root and paths. A nil e admits everyone with the Options' own settings
// (ReadOnly, RootSquash, AnonUID, AnonGID), as a Server without SetClients does.
//
// Refusals follow knfsd. An NFS call from a caller no entry admits is answered
// NFS3ERR_STALE, what knfsd answers when the caller's client has no such export (its
// export lookup fails with ENOENT), so a refused client learns nothing about the
// handle; MOUNT refuses it with MNT3ERR_ACCES. With "secure" (the exports(5)
// default), a call over TCP or UDP from a source port of 1024 or more is answered
// NFS3ERR_PERM (MOUNT: MNT3ERR_ACCES), as knfsd's port check does; calls over RDMA
// are never refused for their port, since knfsd counts every RPC-over-RDMA request as
// coming from a privileged port (the port of an RDMA connection says nothing about
// the peer's privileges).
func (s *Server) SetClients(e *exports.Export, names exports.NameSource) {
	if e == nil {
		s.clients.Store(nil)
		return
	}
	s.clients.Store(&clientList{exp: e, names: names})
}

// staticGrant is what every caller gets when no client list is set.
func staticGrant(o *Options) exports.Options {
	return exports.Options{ReadOnly: o.ReadOnly, NoRootSquash: !o.RootSquash,
		AnonUID: o.AnonUID, AnonGID: o.AnonGID, Async: o.Async, Insecure: true, CrossMount: o.CrossMount}
}

// grant returns the options req's caller is granted, or nil when the client list
// admits it nowhere. Over an address-only list it allocates nothing.
func (s *Server) grant(ctx context.Context, req *oncrpc.Request) *exports.Options {
	l := s.clients.Load()
	if l == nil {
		return &s.static
	}
	ap, ok := addrPortOf(req.RemoteAddr)
	if !ok {
		return nil
	}
	c := l.exp.Match(ctx, ap.Addr(), l.names)
	if c == nil {
		return nil
	}
	return &c.Options
}

// crossInto returns the export of s's Exports whose root is st, a mount point an
// NFSv3 LOOKUP in s met, when that export lists the caller and the caller may cross
// into it: with crossmnt (from its entry in s, crossmnt) or with nohide in its entry
// in that export. nil otherwise. LOOKUP then answers with that export's handle, so
// that its options and fsid apply below, as knfsd's nfsd_cross_mnt does; a caller
// with crossmnt whom the nested export does not list crosses with s's handles and
// options, as with knfsd.
func (s *Server) crossInto(ctx context.Context, req *oncrpc.Request, st *unix.Statx_t, crossmnt bool) *Server {
	if s.opts.set == nil {
		return nil
	}
	for _, n := range s.opts.set.cur.Load().list {
		if n == s || n.rootKey != keyOf(st) ||
			(n.hasRootMnt && st.Mask&unix.STATX_MNT_ID != 0 && n.rootMnt != st.Mnt_id) {
			continue
		}
		if g := n.grant(ctx, req); g != nil && (crossmnt || g.NoHide) {
			return n
		}
	}
	return nil
}

// addrPortOf returns the IP address and port of a caller's address without
// allocating for the transports' own address types.
func addrPortOf(a net.Addr) (netip.AddrPort, bool) {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort(), true
	case *net.UDPAddr:
		return a.AddrPort(), true
	case interface{ AddrPort() netip.AddrPort }:
		ap := a.AddrPort()
		return ap, ap.IsValid()
	case nil:
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	return ap, err == nil
}

// portOK reports whether g's secure option lets req's caller in: insecure, a call
// over RDMA, or a TCP/UDP source port below 1024.
func portOK(g *exports.Options, req *oncrpc.Request) bool {
	if g.Insecure {
		return true
	}
	switch req.RemoteAddr.(type) {
	case *net.TCPAddr, *net.UDPAddr:
		ap, _ := addrPortOf(req.RemoteAddr)
		return ap.Port() < 1024
	}
	return req.Netid == "rdma" || req.Netid == "rdma6"
}

// admit checks req's caller against the client list: NFS3ERR_STALE when no entry
// admits it, NFS3ERR_PERM when it calls from a port "secure" refuses.
func (s *Server) admit(ctx context.Context, req *oncrpc.Request) nfs3.Status {
	g := s.grant(ctx, req)
	switch {
	case g == nil:
		return nfs3.StatusStale
	case !portOK(g, req):
		return nfs3.StatusPerm
	}
	return nfs3.StatusOK
}

// withAccess answers the NFS calls of callers the client list refuses before they
// reach h (the duplicate request cache and the procedures).
func (s *Server) withAccess(h oncrpc.Handler) oncrpc.Handler {
	return oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		p := nfs3.Proc(req.Header.Proc)
		if p == nfs3.ProcNull || int(p) >= len(failWords) || s.clients.Load() == nil {
			return h.ServeRPC(ctx, req, res)
		}
		if st := s.admit(ctx, req); st != nfs3.StatusOK {
			s.log.Debug("call refused", "client", req.RemoteAddr, "proc", p.String(), "status", st.String())
			refuse(p, st, res)
			return nil
		}
		return h.ServeRPC(ctx, req, res)
	})
}

// failWords is, per NFSv3 procedure, the number of XDR words of its failure result
// after the status when every attribute in it is absent: post_op_attr is one word
// (FALSE), wcc_data two (pre_op_attr FALSE, post_op_attr FALSE) (RFC 1813 §3.3).
var failWords = [...]int{
	nfs3.ProcNull:        0,
	nfs3.ProcGetattr:     0,
	nfs3.ProcSetattr:     2,
	nfs3.ProcLookup:      1,
	nfs3.ProcAccess:      1,
	nfs3.ProcReadlink:    1,
	nfs3.ProcRead:        1,
	nfs3.ProcWrite:       2,
	nfs3.ProcCreate:      2,
	nfs3.ProcMkdir:       2,
	nfs3.ProcSymlink:     2,
	nfs3.ProcMknod:       2,
	nfs3.ProcRemove:      2,
	nfs3.ProcRmdir:       2,
	nfs3.ProcRename:      4,
	nfs3.ProcLink:        3,
	nfs3.ProcReaddir:     1,
	nfs3.ProcReaddirplus: 1,
	nfs3.ProcFsstat:      1,
	nfs3.ProcFsinfo:      1,
	nfs3.ProcPathconf:    1,
	nfs3.ProcCommit:      2,
}

// refuse encodes procedure p's failure result with status st and no attributes.
func refuse(p nfs3.Proc, st nfs3.Status, res *xdr.Encoder) {
	res.Uint32(uint32(st))
	for range failWords[p] {
		res.Uint32(0)
	}
}

// crossExport turns the NFS3ERR_STALE of RENAME's target or LINK's directory into
// NFS3ERR_XDEV when fh is a genuine handle of another export of this server (the
// handle key is shared, so its MAC holds but its export id differs), as knfsd
// answers a rename or link across exports.
func (s *Server) crossExport(st nfs3.Status, fh nfs3.FH) nfs3.Status {
	if st != nfs3.StatusStale || len(fh) != HandleSize {
		return st
	}
	if s.handles.signed(fh) && binary.BigEndian.Uint32(fh[4:]) != s.handles.exportID {
		return nfs3.StatusXDev
	}
	return st
}
