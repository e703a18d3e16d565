package nfs3

import (
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// MountMaxList bounds the number of entries this package decodes from a DUMP or EXPORT
// reply, and the groups of an EXPORT reply's exports together, so a hostile reply
// cannot make a client allocate without limit.
const MountMaxList = 4096

// DirPathArgs is the dirpath argument of MNT and UMNT.
//
//	typedef string dirpath<MNTPATHLEN>;
type DirPathArgs struct {
	Path []byte
}

// Argument types of MOUNT procedures that take a dirpath.
type (
	MntArgs  = DirPathArgs // MOUNTPROC3_MNT
	UmntArgs = DirPathArgs // MOUNTPROC3_UMNT
)

// EncodeXDR encodes the dirpath.
func (a *DirPathArgs) EncodeXDR(e *xdr.Encoder) { e.Opaque(a.Path) }

// DecodeXDR decodes the dirpath (at most MaxPathLen bytes).
func (a *DirPathArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	a.Path, err = decodePath(d, "mount dirpath")
	return err
}

// MntRes is mountres3.
//
//	struct mountres3_ok { fhandle3 fhandle; int auth_flavors<>; };
//	union mountres3 switch (mountstat3 fhs_status) { case MNT3_OK: mountres3_ok mountinfo; default: void; };
type MntRes struct {
	Status      MountStat
	FH          FH       // MNT3_OK only
	AuthFlavors []uint32 // MNT3_OK only; decoding reuses the storage
}

// EncodeXDR encodes mountres3.
func (r *MntRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != MountOK {
		return
	}
	encodeFH(e, r.FH)
	e.ArrayLen(len(r.AuthFlavors))
	for _, f := range r.AuthFlavors {
		e.Uint32(f)
	}
}

// DecodeXDR decodes mountres3.
func (r *MntRes) DecodeXDR(d *xdr.Decoder) error {
	s, err := decodeU32(d, "mountres3.fhs_status")
	if err != nil {
		return err
	}
	r.Status, r.FH, r.AuthFlavors = MountStat(s), nil, r.AuthFlavors[:0]
	if r.Status != MountOK {
		return nil
	}
	if r.FH, err = decodeFH(d, "mountres3.fhandle"); err != nil {
		return err
	}
	n, err := d.ArrayLen(MaxAuthFlavors, 4)
	if err != nil {
		return field("mountres3.auth_flavors", err)
	}
	for i := 0; i < n; i++ {
		f, _ := d.Uint32() // ArrayLen checked the bytes remain
		r.AuthFlavors = append(r.AuthFlavors, f)
	}
	return nil
}

// MountBody is mountbody, one entry of the DUMP list.
//
//	struct mountbody { name ml_hostname; dirpath ml_directory; mountlist ml_next; };
type MountBody struct {
	Hostname  []byte
	Directory []byte
}

// DumpRes is the result of MOUNTPROC3_DUMP, the list of mounts a server remembers.
//
//	typedef struct mountbody *mountlist;
type DumpRes struct {
	Mounts []MountBody
}

// EncodeXDR encodes the mountlist.
func (r *DumpRes) EncodeXDR(e *xdr.Encoder) {
	for i := range r.Mounts {
		e.Optional(true)
		e.Opaque(r.Mounts[i].Hostname)
		e.Opaque(r.Mounts[i].Directory)
	}
	e.Optional(false)
}

// DecodeXDR decodes the mountlist, at most MountMaxList entries.
func (r *DumpRes) DecodeXDR(d *xdr.Decoder) error {
	r.Mounts = r.Mounts[:0]
	for {
		more, err := decodeBool(d, "mountlist")
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if len(r.Mounts) == MountMaxList {
			return listTooLong(d, "mountlist")
		}
		var m MountBody
		if m.Hostname, err = decodeName(d, "mountbody.ml_hostname"); err != nil {
			return err
		}
		if m.Directory, err = decodePath(d, "mountbody.ml_directory"); err != nil {
			return err
		}
		r.Mounts = append(r.Mounts, m)
	}
}

// listTooLong is the error for a MOUNT list (what) longer than MountMaxList.
func listTooLong(d *xdr.Decoder, what string) error {
	return field(what, &xdr.DecodeError{What: what, Pos: d.Pos(), Err: xdr.ErrTooLong, Claimed: MountMaxList + 1, Limit: MountMaxList})
}

// ExportNode is exportnode, one exported directory and the groups allowed to mount it.
//
//	struct exportnode { dirpath ex_dir; groups ex_groups; exports ex_next; };
//	struct groupnode { name gr_name; groups gr_next; };
type ExportNode struct {
	Dir    []byte
	Groups [][]byte
}

// ExportRes is the result of MOUNTPROC3_EXPORT.
//
//	typedef struct exportnode *exports; typedef struct groupnode *groups;
type ExportRes struct {
	Exports []ExportNode
}

// EncodeXDR encodes the export list.
func (r *ExportRes) EncodeXDR(e *xdr.Encoder) {
	for i := range r.Exports {
		e.Optional(true)
		e.Opaque(r.Exports[i].Dir)
		for _, g := range r.Exports[i].Groups {
			e.Optional(true)
			e.Opaque(g)
		}
		e.Optional(false)
	}
	e.Optional(false)
}

// DecodeXDR decodes the export list, at most MountMaxList exports and as many groups in
// total.
func (r *ExportRes) DecodeXDR(d *xdr.Decoder) error {
	r.Exports = r.Exports[:0]
	exports, groups := 0, 0
	for {
		more, err := decodeBool(d, "exports")
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if exports++; exports > MountMaxList {
			return listTooLong(d, "exports")
		}
		var x ExportNode
		if x.Dir, err = decodePath(d, "exportnode.ex_dir"); err != nil {
			return err
		}
		for {
			more, err := decodeBool(d, "exportnode.ex_groups")
			if err != nil {
				return err
			}
			if !more {
				break
			}
			if groups++; groups > MountMaxList {
				return listTooLong(d, "groups")
			}
			g, err := decodeName(d, "groupnode.gr_name")
			if err != nil {
				return err
			}
			x.Groups = append(x.Groups, g)
		}
		r.Exports = append(r.Exports, x)
	}
}
