//go:build linux

package nfsserver

import (
	"os"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// TestMknodBlockDevice checks that MKNOD of NF3BLK makes a block device with the
// device number asked for (RFC 1813 §3.3.11), as knfsd does for root.
func TestMknodBlockDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making device nodes needs root")
	}
	e := newEnv(t, Options{})
	var r nfs3.CreateRes
	e.c.must(nfs3.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: []byte("blk")}, Type: nfs3.TypeBlk,
		Spec: nfs3.SpecData{Major: 7, Minor: 0}, Attr: nfs3.Sattr{SetMode: true, Mode: 0o600}}, &r)
	wantStatus(t, "MKNOD blk", r.Status, nfs3.StatusOK)
	if a := r.ObjAttr.Attr; a.Type != nfs3.TypeBlk || a.Rdev != (nfs3.SpecData{Major: 7, Minor: 0}) || a.Mode != 0o600 {
		t.Fatalf("MKNOD blk: type %v rdev %v mode %o", a.Type, a.Rdev, a.Mode)
	}
}
