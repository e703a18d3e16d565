//go:build linux

package nfsserver

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"
)

// The NFSv4 pseudo file system.
//
// NFSv4 has no MOUNT protocol: a client starts at the root file handle (PUTROOTFH) and
// LOOKUPs its way to an export. The server answers PUTROOTFH with a synthetic,
// read-only directory tree made of the components of the export paths: for exports
// /srv/a and /srv/b the pseudo root holds "srv", which holds "a" and "b", and a
// LOOKUP of "a" there gives the root file handle of the export /srv/a (an ordinary
// handle of that export, the same bytes NFSv3's MNT returns). An export of "/" is
// the pseudo root itself. LOOKUPP from an export's root leads back into the pseudo
// tree, or, from a nested export's root, to the parent export's directory above it
// (exportRootParent).
//
// A pseudo directory's handle is pseudoHandleSize bytes: the byte pseudoVersion, three
// zero bytes and a 64-bit FNV-1a hash of its path. It grants nothing a LOOKUP from
// the root would not: pseudo directories hold no data and their entries are the
// export paths. A pseudo handle of a path no longer in the tree (the table was
// reloaded) is NFS4ERR_STALE. Pseudo directories report an fsid of their own
// (pseudoFSID), distinct from every export's, so that a client sees the crossing into
// an export as a new file system, and an export root's mounted_on_fileid is the
// fileid of the pseudo directory it hangs under.

// pseudoVersion is the first byte of a pseudo-directory handle; export handles start
// with handleVersion.
const pseudoVersion = 0x80

// pseudoHandleSize is the length of a pseudo-directory handle.
const pseudoHandleSize = 12

// pseudoFSIDMinor is the minor half of the pseudo file system's fsid4 (major 0);
// exports report minor 0.
const pseudoFSIDMinor = 1

// pseudoNode is one directory of the pseudo file system.
type pseudoNode struct {
	path   string // absolute, "/" for the root
	id     uint64 // fileid and handle hash
	parent *pseudoNode
	// names are the entries, sorted; kids[i] is names[i]'s node; byCookie lists
	// their indexes in READDIR cookie order (pseudoCookie, then name).
	names    []string
	kids     []*pseudoNode
	byCookie []int
	// export is the export whose path this is, nil for a directory on the way.
	export *Server
}

// pseudoFS is the pseudo file system of one export table.
type pseudoFS struct {
	root  *pseudoNode
	byID  map[uint64]*pseudoNode
	byExp map[*Server]*pseudoNode // the node of each export's path
}

func pathID(p string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(p); i++ {
		h ^= uint64(p[i])
		h *= 1099511628211
	}
	return h
}

// newPseudoFS builds the pseudo file system of the exports list.
func newPseudoFS(list []*Server) *pseudoFS {
	fs := &pseudoFS{byID: map[uint64]*pseudoNode{}, byExp: map[*Server]*pseudoNode{}}
	fs.root = &pseudoNode{path: "/", id: pathID("/")}
	fs.byID[fs.root.id] = fs.root
	for _, s := range list {
		n := fs.root
		for _, c := range strings.Split(strings.Trim(s.exportPath, "/"), "/") {
			if c == "" {
				continue
			}
			i, found := slices.BinarySearch(n.names, c)
			if found {
				n = n.kids[i]
				continue
			}
			p := n.path + "/" + c
			if n == fs.root {
				p = "/" + c
			}
			kid := &pseudoNode{path: p, id: pathID(p), parent: n}
			n.names = slices.Insert(n.names, i, c)
			n.kids = slices.Insert(n.kids, i, kid)
			fs.byID[kid.id] = kid
			n = kid
		}
		if n.export == nil {
			n.export = s
			fs.byExp[s] = n
		}
	}
	for _, n := range fs.byID {
		n.byCookie = make([]int, len(n.kids))
		for i := range n.byCookie {
			n.byCookie[i] = i
		}
		slices.SortFunc(n.byCookie, func(a, b int) int {
			return cmp.Or(cmp.Compare(pseudoCookie(n.names[a]), pseudoCookie(n.names[b])), cmp.Compare(n.names[a], n.names[b]))
		})
	}
	return fs
}

// handle appends the handle of n to dst.
func (n *pseudoNode) handle(dst []byte) []byte {
	dst = append(dst, pseudoVersion, 0, 0, 0)
	return binary.BigEndian.AppendUint64(dst, n.id)
}

// isPseudoHandle reports whether fh has the form of a pseudo-directory handle.
func isPseudoHandle(fh []byte) bool {
	return len(fh) == pseudoHandleSize && fh[0] == pseudoVersion && fh[1]|fh[2]|fh[3] == 0
}

// node returns the pseudo directory fh names, or nil when none of this tree does.
func (fs *pseudoFS) node(fh []byte) *pseudoNode {
	if !isPseudoHandle(fh) {
		return nil
	}
	return fs.byID[binary.BigEndian.Uint64(fh[4:])]
}

// lookup returns the entry name of n, or nil.
func (n *pseudoNode) lookup(name string) *pseudoNode {
	if i, ok := slices.BinarySearch(n.names, name); ok {
		return n.kids[i]
	}
	return nil
}

// visible reports whether n leads to an export the visible function admits: pseudo
// directories show a client only the way to the exports it may use.
func (n *pseudoNode) visible(admits func(*Server) bool) bool {
	if n.export != nil && admits(n.export) {
		return true
	}
	for _, k := range n.kids {
		if k.visible(admits) {
			return true
		}
	}
	return false
}
