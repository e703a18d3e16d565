//go:build linux

package nfsserver

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// fsyncs4 is the sorted list of "fsync" records of the objects with NFSv4 attributes
// as (fsid major and fileid).
func fsyncs4(as ...*nfs4.Fattr) []string {
	var w []string
	for _, a := range as {
		w = append(w, fmt.Sprintf("fsync %v", fileKey{dev: a.FSID.Major, ino: a.Fileid}))
	}
	slices.Sort(w)
	return w
}

// TestV4SyncExportMakesMetadataStable: the NFSv4.1 operations that change the
// namespace or attributes fsync exactly what NFSv3's do before replying on a sync
// export, and nothing on an async one; stable WRITEs and COMMIT sync on both.
func TestV4SyncExportMakesMetadataStable(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			rec := &syncRecorder{}
			e := newEnvPrepared(t, Options{Async: async}, rec.install)
			c := e.v4(rootCred())
			c.mount()
			check := func(what string, want []string, data bool) {
				t.Helper()
				if async && !data {
					want = nil
				}
				if got := rec.take(); !slices.Equal(got, want) {
					t.Errorf("%s: synced %q, want %q", what, got, want)
				}
			}
			attrs := func(fh nfs4.FH) *nfs4.Fattr {
				t.Helper()
				a := *c.getattr(fh, nfs4.AttrFSID, nfs4.AttrFileid)
				return &a
			}
			dir := c.lookupFH(e.exportComponents()...)
			root := attrs(dir)
			rec.take()

			f, sid := c.openFile(dir, openArgs4("o", "f", nfs4.ShareAccessBoth, true))
			fa := attrs(f)
			check("OPEN create", fsyncs4(fa, root), false)

			res := c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.CreateArgs{ObjType: nfs4.NF4Dir, ObjName: []byte("d")}, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
			d := getfh(t, res)
			da := attrs(d)
			check("CREATE directory", fsyncs4(da, root), false)

			c.must(&nfs4.PutfhArgs{Object: d}, &nfs4.CreateArgs{ObjType: nfs4.NF4Lnk, LinkData: []byte("f"), ObjName: []byte("l")})
			check("CREATE symlink", fsyncs4(da), false)

			c.must(&nfs4.PutfhArgs{Object: f}, &nfs4.NoArgs{OpNum: nfs4.OpSavefh}, &nfs4.PutfhArgs{Object: d}, &nfs4.NameArgs{OpNum: nfs4.OpLink, Name: []byte("f2")})
			check("LINK", fsyncs4(fa, da), false)

			c.must(&nfs4.PutfhArgs{Object: d}, &nfs4.NoArgs{OpNum: nfs4.OpSavefh}, &nfs4.PutfhArgs{Object: dir}, &nfs4.RenameArgs{OldName: []byte("f2"), NewName: []byte("f3")})
			check("RENAME across directories", fsyncs4(da, root), false)

			c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("f3")})
			check("REMOVE", fsyncs4(root), false)

			c.must(&nfs4.PutfhArgs{Object: f}, &nfs4.SetattrArgs{Stateid: sid, Mask: nfs4.NewBitmap(nfs4.AttrSize), Attr: nfs4.Fattr{Size: 10}})
			check("SETATTR size", fsyncs4(fa), false)

			wantStatus4(t, "REMOVE missing", c.call(&nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("missing")}), nfs4.ErrNoent)
			check("REMOVE missing", nil, true)

			write := func(how nfs4.StableHow) {
				c.must(&nfs4.PutfhArgs{Object: f}, &nfs4.WriteArgs{Stateid: sid, Stable: how, Data: []byte("data")})
			}
			write(nfs4.Unstable4)
			check("WRITE UNSTABLE4", nil, true)
			write(nfs4.DataSync4)
			check("WRITE DATA_SYNC4", []string{fmt.Sprintf("fdatasync %v", fileKey{dev: fa.FSID.Major, ino: fa.Fileid})}, true)
			write(nfs4.FileSync4)
			check("WRITE FILE_SYNC4", fsyncs4(fa), true)
			c.must(&nfs4.PutfhArgs{Object: f}, &nfs4.CommitArgs{})
			check("COMMIT", fsyncs4(fa), true)
		})
	}
}

// On a read-only export an NFSv4.1 SETATTR changes nothing and syncs nothing, even one
// that sets nothing, as NFSv3's (TestReadOnlyExportSyncsNothing): a caller that may
// not write cannot make the server fsync a file on every call.
func TestV4ReadOnlyExportSyncsNothing(t *testing.T) {
	rec := &syncRecorder{}
	e := newEnvPrepared(t, Options{ReadOnly: true}, rec.install)
	c := e.v4(rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	rec.take()
	c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.SetattrArgs{})
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("read-only export synced %q", got)
	}
}
