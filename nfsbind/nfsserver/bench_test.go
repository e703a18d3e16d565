//go:build linux

package nfsserver

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// memConn is an in-memory oncrpc.ServerConn: the benchmark hands it one call at a
// time and waits for the reply, so the oncrpc Server runs the handler exactly as it
// does for a network connection (pooled call state, AfterReply hooks).
type memConn struct {
	calls   chan *oncrpc.ServerCall
	replies chan int
	last    []byte // the inline part of the last reply, capacity kept
}

func (c *memConn) ReadCall(ctx context.Context) (*oncrpc.ServerCall, error) {
	select {
	case call, ok := <-c.calls:
		if !ok {
			return nil, io.EOF
		}
		return call, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) WriteReply(call *oncrpc.ServerCall, reply *oncrpc.Message) error {
	n := 0
	c.last = c.last[:0]
	if reply != nil {
		n = reply.Len()
		c.last = append(c.last, reply.Inline...)
	}
	c.replies <- n
	return nil
}

func (c *memConn) Close() error         { return nil }
func (c *memConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// memRig is one NFS call served by a Server behind a real oncrpc.Server over a
// memConn: what is allocated per call is the server's own doing.
type memRig struct {
	srv    *Server
	fh     nfs3.FH
	conn   *memConn
	call   *oncrpc.ServerCall
	stream []byte
}

// newMemRig serves an export holding the 1 MiB file a/b/f and prepares a call of proc
// on that file's handle.
func newMemRig(tb testing.TB, opts Options, proc nfs3.Proc, args interface{ withFH(nfs3.FH) xdr.EncoderTo }) *memRig {
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f"), make([]byte, 1<<20), 0o644); err != nil {
		tb.Fatal(err)
	}
	opts.Root, opts.HandleKey = dir, fuzzKey
	s, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	fh := lookupPath(tb, s, s.NFSHandler(), "a", "b", "f")
	rs := oncrpc.NewServer(nil)
	s.Register(rs)
	tb.Cleanup(func() { rs.Close() })
	conn := &memConn{calls: make(chan *oncrpc.ServerCall), replies: make(chan int), last: make([]byte, 0, 4096)}
	go rs.ServeConn(conn)
	tb.Cleanup(func() { close(conn.calls) })
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("bench")})
	var e xdr.Encoder
	hdr := oncrpc.CallHeader{XID: 1, Prog: nfs3.Program, Vers: nfs3.Version, Proc: uint32(proc), Cred: auth, Verf: oncrpc.OpaqueAuth{Flavor: oncrpc.AuthNone}}
	hdr.EncodeXDR(&e)
	args.withFH(fh).EncodeXDR(&e)
	return &memRig{srv: s, fh: fh, conn: conn, call: &oncrpc.ServerCall{}, stream: xdr.Flatten(nil, e.Bytes(), e.Payloads())}
}

// roundTrip sends the call and returns the NFS status of its reply and the reply's
// length.
func (r *memRig) roundTrip(tb testing.TB) (nfs3.Status, int) {
	r.call.Msg.Inline = r.stream
	r.conn.calls <- r.call
	n := <-r.conn.replies
	// xid, REPLY, MSG_ACCEPTED, verifier flavor and length, SUCCESS, then the status.
	if len(r.conn.last) < 28 || binary.BigEndian.Uint32(r.conn.last[20:]) != 0 {
		tb.Fatalf("reply not accepted: %x", r.conn.last)
	}
	return nfs3.Status(binary.BigEndian.Uint32(r.conn.last[24:])), n
}

// benchServer measures one procedure through oncrpc.Server and this package, without
// a network.
func benchServer(b *testing.B, proc nfs3.Proc, args interface{ withFH(nfs3.FH) xdr.EncoderTo }) {
	r := newMemRig(b, Options{}, proc, args)
	b.ReportAllocs()
	for b.Loop() {
		if st, n := r.roundTrip(b); st != nfs3.StatusOK {
			b.Fatalf("reply %v, %d bytes", st, n)
		}
	}
}

// cache puts the rig's file in the open-file cache, as a READ would.
func (r *memRig) cache(tb testing.TB) {
	var st unix.Statx_t
	f, status := r.srv.openIO(r.fh, accRead, &cred{}, &st)
	if status != nfs3.StatusOK {
		tb.Fatalf("opening the file: %v", status)
	}
	r.srv.files.release(f)
}

func lookupPath(tb testing.TB, s *Server, h oncrpc.Handler, names ...string) nfs3.FH {
	fh := s.RootHandle()
	for _, n := range names {
		var r nfs3.LookupRes
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: uint32(nfs3.ProcLookup)}, AuthSys: &oncrpc.AuthSysParams{},
			Args: xdr.NewDecoder(encodeMsg(&nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: fh, Name: []byte(n)}}))}
		var e xdr.Encoder
		if err := h.ServeRPC(context.Background(), req, &e); err != nil {
			tb.Fatal(err)
		}
		if err := r.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil || r.Status != nfs3.StatusOK {
			tb.Fatalf("LOOKUP %s: %v %v", n, err, r.Status)
		}
		fh = append(nfs3.FH(nil), r.Object...)
	}
	return fh
}

type getattrBench struct{}

func (getattrBench) withFH(fh nfs3.FH) xdr.EncoderTo { return &nfs3.GetattrArgs{Object: fh} }

type readBench struct{ n uint32 }

func (r readBench) withFH(fh nfs3.FH) xdr.EncoderTo { return &nfs3.ReadArgs{File: fh, Count: r.n} }

type writeBench struct{ n int }

func (w writeBench) withFH(fh nfs3.FH) xdr.EncoderTo {
	return &nfs3.WriteArgs{File: fh, Count: uint32(w.n), Data: make([]byte, w.n), Stable: nfs3.Unstable}
}

func BenchmarkServerGetattr(b *testing.B) { benchServer(b, nfs3.ProcGetattr, getattrBench{}) }

// BenchmarkServerGetattrOpen is GETATTR of a file the open-file cache holds, as after
// a READ or WRITE of it.
func BenchmarkServerGetattrOpen(b *testing.B) {
	r := newMemRig(b, Options{}, nfs3.ProcGetattr, getattrBench{})
	r.cache(b)
	b.ReportAllocs()
	for b.Loop() {
		if st, n := r.roundTrip(b); st != nfs3.StatusOK {
			b.Fatalf("reply %v, %d bytes", st, n)
		}
	}
}
func BenchmarkServerRead4K(b *testing.B)  { benchServer(b, nfs3.ProcRead, readBench{4096}) }
func BenchmarkServerRead1M(b *testing.B)  { benchServer(b, nfs3.ProcRead, readBench{1 << 20}) }
func BenchmarkServerWrite4K(b *testing.B) { benchServer(b, nfs3.ProcWrite, writeBench{4096}) }

type commitBench struct{}

func (commitBench) withFH(fh nfs3.FH) xdr.EncoderTo { return &nfs3.CommitArgs{File: fh} }
