//go:build linux

package nfsserver

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

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
	if reply != nil {
		n = reply.Len()
	}
	c.replies <- n
	return nil
}

func (c *memConn) Close() error         { return nil }
func (c *memConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// benchServer measures one procedure through oncrpc.Server and this package, without
// a network: what is allocated per call is the server's own doing.
func benchServer(b *testing.B, proc nfs3.Proc, args interface{ withFH(nfs3.FH) xdr.EncoderTo }) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f"), make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Root: dir, HandleKey: fuzzKey})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fh := lookupPath(b, s, s.NFSHandler(), "a", "b", "f")
	rs := oncrpc.NewServer(nil)
	s.Register(rs)
	defer rs.Close()
	conn := &memConn{calls: make(chan *oncrpc.ServerCall), replies: make(chan int)}
	go rs.ServeConn(conn)
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("bench")})
	var e xdr.Encoder
	hdr := oncrpc.CallHeader{XID: 1, Prog: nfs3.Program, Vers: nfs3.Version, Proc: uint32(proc), Cred: auth, Verf: oncrpc.OpaqueAuth{Flavor: oncrpc.AuthNone}}
	hdr.EncodeXDR(&e)
	args.withFH(fh).EncodeXDR(&e)
	stream := xdr.Flatten(nil, e.Bytes(), e.Payloads())
	call := &oncrpc.ServerCall{}
	b.ReportAllocs()
	for b.Loop() {
		call.Msg.Inline = stream
		conn.calls <- call
		if n := <-conn.replies; n < 24 {
			b.Fatalf("reply of %d bytes", n)
		}
	}
	close(conn.calls)
}

func lookupPath(b *testing.B, s *Server, h oncrpc.Handler, names ...string) nfs3.FH {
	fh := s.RootHandle()
	for _, n := range names {
		var r nfs3.LookupRes
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: uint32(nfs3.ProcLookup)}, AuthSys: &oncrpc.AuthSysParams{},
			Args: xdr.NewDecoder(encodeMsg(&nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: fh, Name: []byte(n)}}))}
		var e xdr.Encoder
		if err := h.ServeRPC(context.Background(), req, &e); err != nil {
			b.Fatal(err)
		}
		if err := r.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil || r.Status != nfs3.StatusOK {
			b.Fatalf("LOOKUP %s: %v %v", n, err, r.Status)
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
func BenchmarkServerRead4K(b *testing.B)  { benchServer(b, nfs3.ProcRead, readBench{4096}) }
func BenchmarkServerRead1M(b *testing.B)  { benchServer(b, nfs3.ProcRead, readBench{1 << 20}) }
func BenchmarkServerWrite4K(b *testing.B) { benchServer(b, nfs3.ProcWrite, writeBench{4096}) }
