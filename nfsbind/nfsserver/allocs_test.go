//go:build linux

package nfsserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A steady-state READ, WRITE, COMMIT or GETATTR, through oncrpc.Server dispatch as a
// connection delivers it, allocates nothing on the server.
func TestReadWriteAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	fakeClock(t) // no revalidation walk during the measurement
	for _, c := range []struct {
		name     string
		proc     nfs3.Proc
		args     interface{ withFH(nfs3.FH) xdr.EncoderTo }
		uncached bool
	}{
		{"READ 4KiB", nfs3.ProcRead, readBench{4096}, false},
		{"READ 1MiB", nfs3.ProcRead, readBench{1 << 20}, false},
		{"WRITE 4KiB", nfs3.ProcWrite, writeBench{4096}, false},
		{"WRITE 64KiB", nfs3.ProcWrite, writeBench{64 << 10}, false},
		{"COMMIT", nfs3.ProcCommit, commitBench{}, false},
		{"GETATTR of an open file", nfs3.ProcGetattr, getattrBench{}, false},
		{"GETATTR resolving the handle", nfs3.ProcGetattr, getattrBench{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newMemRig(t, Options{}, c.proc, c.args)
			if !c.uncached {
				r.cache(t)
			}
			if st, n := r.roundTrip(t); st != nfs3.StatusOK {
				t.Fatalf("reply %v, %d bytes", st, n)
			}
			if n := testing.AllocsPerRun(200, func() {
				if st, _ := r.roundTrip(t); st != nfs3.StatusOK {
					t.Fatalf("reply %v", st)
				}
			}); n != 0 {
				t.Fatalf("%v allocations per call, want 0", n)
			}
		})
	}
}

// READ and WRITE over TCP loopback, oncrpc client and server in this process,
// allocate nothing per round trip on either side.
func TestReadWriteAllocsOverTCP(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	fakeClock(t)
	e := newEnv(t, Options{})
	os.WriteFile(filepath.Join(e.dir, "f"), make([]byte, 1<<20), 0o644)
	fh, _ := e.c.lookup(e.root, "f")
	ctx := context.Background()
	data := make([]byte, 4096)
	for _, c := range []struct {
		name string
		args xdr.EncoderTo
		proc nfs3.Proc
		res  interface {
			nfs3.Message
			status() nfs3.Status
		}
	}{
		{"READ 4KiB", &nfs3.ReadArgs{File: fh, Count: 4096}, nfs3.ProcRead, &readRes{}},
		{"WRITE 4KiB", &nfs3.WriteArgs{File: fh, Offset: 8192, Count: 4096, Data: data}, nfs3.ProcWrite, &writeRes{}},
	} {
		call := func() {
			if err := e.c.nfs.Call(ctx, uint32(c.proc), c.args, c.res); err != nil || c.res.status() != nfs3.StatusOK {
				t.Fatalf("%s: %v %v", c.name, err, c.res.status())
			}
		}
		for i := 0; i < 10; i++ {
			call()
		}
		if n := testing.AllocsPerRun(500, call); n != 0 {
			t.Errorf("%s: %v allocations per round trip, want 0", c.name, n)
		}
	}
}

type readRes struct{ nfs3.ReadRes }

func (r *readRes) status() nfs3.Status { return r.Status }

type writeRes struct{ nfs3.WriteRes }

func (r *writeRes) status() nfs3.Status { return r.Status }
