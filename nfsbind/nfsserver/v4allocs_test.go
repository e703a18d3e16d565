//go:build linux

package nfsserver

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// v4MemRig is one NFSv4.1 COMPOUND (SEQUENCE, PUTFH, one operation) served by a
// Server behind a real oncrpc.Server over a memConn, in a session whose slot 0 the
// rig sequences by patching the call in place: what is allocated per call is the
// server's own doing.
type v4MemRig struct {
	h      *v4Harness
	conn   *memConn
	call   *oncrpc.ServerCall
	stream []byte
	seqAt  int // offset of the SEQUENCE's sequenceid in stream
}

// seqSentinel marks the sequenceid in the encoded call so the rig can find it.
const seqSentinel = 0xA5C3E1F7

// newV4MemRig serves the harness export (whose file "a" it fills to 1 MiB), opens
// "a" for reading and writing, and prepares SEQUENCE, PUTFH("a"), op(stateid).
func newV4MemRig(tb testing.TB, op func(nfs4.Stateid4) nfs4.OpArgs) *v4MemRig {
	h := newV4Harness(tb)
	if err := os.WriteFile(filepath.Join(h.srv.opts.Root, "a"), make([]byte, 1<<20), 0o666); err != nil {
		tb.Fatal(err)
	}
	h.cred = oncrpc.AuthSysParams{} // root: the rig measures, it does not test permissions
	h.seq++
	open := &nfs4.OpenArgs{ShareAccess: nfs4.ShareAccessBoth, Owner: nfs4.StateOwner4{Owner: []byte("rig")},
		Claim: nfs4.OpenClaim4{Claim: nfs4.ClaimNull, File: []byte("a")}}
	res, err := h.call(h.encode(nil, &nfs4.SequenceArgs{SessionID: h.sid, SequenceID: h.seq},
		&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}, open, &nfs4.NoArgs{OpNum: nfs4.OpGetfh}))
	if err != nil || res == nil || res.Status != nfs4.OK {
		tb.Fatalf("OPEN: %v %+v", err, res)
	}
	sid := res.Results[2].(*nfs4.OpenRes).Stateid
	fh := bytes.Clone(res.Results[3].(*nfs4.GetfhRes).Object)

	rs := oncrpc.NewServer(nil)
	h.srv.Register(rs)
	tb.Cleanup(func() { rs.Close() })
	conn := &memConn{calls: make(chan *oncrpc.ServerCall), replies: make(chan int), last: make([]byte, 0, 4096)}
	go rs.ServeConn(conn)
	tb.Cleanup(func() { close(conn.calls) })
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("bench")})
	var e xdr.Encoder
	hdr := oncrpc.CallHeader{XID: 1, Prog: nfs4.Program, Vers: nfs4.Version, Proc: nfs4.ProcCompound, Cred: auth, Verf: oncrpc.OpaqueAuth{Flavor: oncrpc.AuthNone}}
	hdr.EncodeXDR(&e)
	(&nfs4.CompoundArgs{MinorVersion: 1, Ops: []nfs4.OpArgs{
		&nfs4.SequenceArgs{SessionID: h.sid, SequenceID: seqSentinel},
		&nfs4.PutfhArgs{Object: fh}, op(sid)}}).EncodeXDR(&e)
	stream := xdr.Flatten(nil, e.Bytes(), e.Payloads())
	at := bytes.Index(stream, binary.BigEndian.AppendUint32(nil, seqSentinel))
	if at < 0 {
		tb.Fatal("sequenceid not found in the call")
	}
	return &v4MemRig{h: h, conn: conn, call: &oncrpc.ServerCall{}, stream: stream, seqAt: at}
}

// roundTrip sends the next request on the slot and returns the COMPOUND's status and
// the reply's length.
func (r *v4MemRig) roundTrip(tb testing.TB) (nfs4.Status, int) {
	r.h.seq++
	binary.BigEndian.PutUint32(r.stream[r.seqAt:], r.h.seq)
	r.call.Msg.Inline = r.stream
	r.conn.calls <- r.call
	n := <-r.conn.replies
	// xid, REPLY, MSG_ACCEPTED, verifier flavor and length, SUCCESS, then the status.
	if len(r.conn.last) < 28 || binary.BigEndian.Uint32(r.conn.last[20:]) != 0 {
		tb.Fatalf("reply not accepted: %x", r.conn.last)
	}
	return nfs4.Status(binary.BigEndian.Uint32(r.conn.last[24:])), n
}

var v4RigOps = []struct {
	name string
	op   func(nfs4.Stateid4) nfs4.OpArgs
}{
	{"READ 4KiB", func(s nfs4.Stateid4) nfs4.OpArgs { return &nfs4.ReadArgs{Stateid: s, Count: 4096} }},
	{"READ 64KiB", func(s nfs4.Stateid4) nfs4.OpArgs { return &nfs4.ReadArgs{Stateid: s, Count: 64 << 10} }},
	{"WRITE 4KiB", func(s nfs4.Stateid4) nfs4.OpArgs {
		return &nfs4.WriteArgs{Stateid: s, Data: make([]byte, 4096), Stable: nfs4.Unstable4}
	}},
	{"WRITE 64KiB", func(s nfs4.Stateid4) nfs4.OpArgs {
		return &nfs4.WriteArgs{Stateid: s, Data: make([]byte, 64<<10), Stable: nfs4.Unstable4}
	}},
	{"COMMIT", func(nfs4.Stateid4) nfs4.OpArgs { return &nfs4.CommitArgs{} }},
}

// TestV4ReadWriteAllocs: a steady-state SEQUENCE+PUTFH+READ, WRITE or COMMIT COMPOUND,
// through oncrpc.Server dispatch as a connection delivers it, allocates nothing on
// the server.
func TestV4ReadWriteAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	fakeClock(t) // no revalidation walk during the measurement
	for _, c := range v4RigOps {
		t.Run(c.name, func(t *testing.T) {
			r := newV4MemRig(t, c.op)
			for range 3 {
				if st, n := r.roundTrip(t); st != nfs4.OK {
					t.Fatalf("reply %v, %d bytes", st, n)
				}
			}
			if n := testing.AllocsPerRun(200, func() {
				if st, _ := r.roundTrip(t); st != nfs4.OK {
					t.Fatalf("reply %v", st)
				}
			}); n != 0 {
				t.Fatalf("%v allocations per COMPOUND, want 0", n)
			}
		})
	}
}

// BenchmarkV4Server measures SEQUENCE+PUTFH+op COMPOUNDs through oncrpc.Server and
// this package, without a network.
func BenchmarkV4Server(b *testing.B) {
	for _, c := range v4RigOps {
		b.Run(c.name, func(b *testing.B) {
			r := newV4MemRig(b, c.op)
			b.ReportAllocs()
			for b.Loop() {
				if st, n := r.roundTrip(b); st != nfs4.OK {
					b.Fatalf("reply %v, %d bytes", st, n)
				}
			}
		})
	}
}
