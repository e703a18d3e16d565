package nfsserver

import (
	"context"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// StatusStats counts the status word each result begins with, per procedure, keeps
// the wrapped handler's non-blocking declaration, and counts nothing for errors.
func TestStatusStatsCounts(t *testing.T) {
	var st StatusStats
	status := nfs3.StatusOK
	var fail error
	inner := oncrpc.NonBlocking(oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		res.Uint32(uint32(status))
		res.Uint32(7) // more results
		return fail
	}), uint32(nfs3.ProcNull))
	h := st.Handler(inner)
	ih, ok := h.(oncrpc.InlineHandler)
	if !ok || !ih.Inline(3, uint32(nfs3.ProcNull)) || ih.Inline(3, uint32(nfs3.ProcRead)) {
		t.Fatal("the wrapper lost the non-blocking declaration")
	}
	call := func(proc nfs3.Proc) {
		var res xdr.Encoder
		res.Uint32(0xdeadbeef) // the reply header before the results
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Prog: nfs3.Program, Vers: 3, Proc: uint32(proc)}}
		h.ServeRPC(context.Background(), req, &res)
	}
	call(nfs3.ProcRead)
	call(nfs3.ProcRead)
	status = nfs3.StatusNoEnt
	call(nfs3.ProcLookup)
	status = nfs3.Status(12345)
	call(nfs3.ProcLookup)
	call(nfs3.ProcNull) // NULL has no status
	fail = oncrpc.ErrGarbageArgs
	call(nfs3.ProcGetattr)
	if st.Get(nfs3.ProcRead, nfs3.StatusOK) != 2 || st.Get(nfs3.ProcLookup, nfs3.StatusNoEnt) != 1 {
		t.Errorf("READ OK %d, LOOKUP NOENT %d; want 2, 1", st.Get(nfs3.ProcRead, nfs3.StatusOK), st.Get(nfs3.ProcLookup, nfs3.StatusNoEnt))
	}
	got := map[string]uint64{}
	st.Each(func(p nfs3.Proc, s nfs3.Status, n uint64) { got[p.String()+" "+s.String()] = n })
	want := map[string]uint64{"READ NFS3_OK": 2, "LOOKUP NFS3ERR_NOENT": 1, "LOOKUP nfsstat3(4294967295)": 1}
	if len(got) != len(want) {
		t.Fatalf("Each: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Each: %q = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// Counting a reply does not allocate.
func TestStatusStatsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	var st StatusStats
	h := st.Handler(oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		res.Uint32(uint32(nfs3.StatusOK))
		return nil
	}))
	req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: uint32(nfs3.ProcRead)}}
	var res xdr.Encoder
	ctx := context.Background()
	if a := testing.AllocsPerRun(1000, func() {
		res.Reset(res.Bytes()[:0])
		h.ServeRPC(ctx, req, &res)
	}); a > 0 {
		t.Fatalf("%.1f allocs per counted reply", a)
	}
}
