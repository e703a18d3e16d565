//go:build linux

package nfsserver

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// TestNullRunsInline pins that NFS and MOUNT NULL, and only NULL, are declared
// non-blocking, so an RDMA connection answers them in its receive context.
func TestNullRunsInline(t *testing.T) {
	s, err := New(Options{Root: t.TempDir(), HandleKey: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name       string
		h          oncrpc.Handler
		vers, null uint32
		others     []uint32
	}{
		{"NFS", s.NFSHandler(), nfs3.Version, uint32(nfs3.ProcNull), []uint32{uint32(nfs3.ProcRead), uint32(nfs3.ProcWrite), uint32(nfs3.ProcCommit), uint32(nfs3.ProcGetattr)}},
		{"MOUNT", s.MountHandler(), nfs3.MountVersion, uint32(nfs3.MountProcNull), []uint32{uint32(nfs3.MountProcMnt), uint32(nfs3.MountProcExport)}},
	} {
		ih, ok := tc.h.(oncrpc.InlineHandler)
		if !ok {
			t.Fatalf("%s handler %T is not an oncrpc.InlineHandler", tc.name, tc.h)
		}
		if !ih.Inline(tc.vers, tc.null) {
			t.Errorf("%s NULL not declared non-blocking", tc.name)
		}
		for _, p := range tc.others {
			if ih.Inline(tc.vers, p) {
				t.Errorf("%s procedure %d declared non-blocking; it does I/O", tc.name, p)
			}
		}
	}
}
