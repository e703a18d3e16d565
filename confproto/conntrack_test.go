package confproto

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fakeListener hands out the queued connections.
type fakeListener struct {
	conns chan oncrpc.ServerConn
}

func (l *fakeListener) Accept(ctx context.Context) (oncrpc.ServerConn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (l *fakeListener) Close() error   { return nil }
func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{} }

// plainConn is a ServerConn that is not Configurable (as a TCP connection).
type plainConn struct {
	remote net.Addr
	mu     sync.Mutex
	closed int
}

func (c *plainConn) ReadCall(context.Context) (*oncrpc.ServerCall, error) {
	return nil, oncrpc.ErrClosed
}
func (c *plainConn) WriteReply(*oncrpc.ServerCall, *oncrpc.Message) error { return nil }
func (c *plainConn) RemoteAddr() net.Addr                                 { return c.remote }
func (c *plainConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed++
	return nil
}

// rdmaLikeConn is a Configurable ServerConn.
type rdmaLikeConn struct {
	plainConn
	fakeConn
}

type rdmaAddr string

func (a rdmaAddr) Network() string { return "rdma" }
func (a rdmaAddr) String() string  { return string(a) }

func TestConnTracker(t *testing.T) {
	ctx := context.Background()
	var tr ConnTracker
	fl := &fakeListener{conns: make(chan oncrpc.ServerConn, 3)}
	l := tr.Wrap(fl)
	a := &rdmaLikeConn{plainConn: plainConn{remote: rdmaAddr("192.0.2.1:40000")}}
	b := &rdmaLikeConn{plainConn: plainConn{remote: rdmaAddr("192.0.2.1:40001")}}
	p := &plainConn{remote: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 40000}}
	fl.conns <- a
	fl.conns <- b
	fl.conns <- p
	var got []oncrpc.ServerConn
	for range 3 {
		c, err := l.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if tr.Len() != 2 {
		t.Fatalf("tracking %d connections, want 2 (TCP is not Configurable)", tr.Len())
	}
	if got[2] != oncrpc.ServerConn(p) {
		t.Error("a connection that is not Configurable was wrapped")
	}
	req := &oncrpc.Request{RemoteAddr: rdmaAddr("192.0.2.1:40001")}
	if c := tr.ConnOf(req); c != Configurable(b) {
		t.Errorf("ConnOf(%v) = %v, want the second connection", req.RemoteAddr, c)
	}
	// Same host and port over TCP is another connection.
	if c := tr.ConnOf(&oncrpc.Request{RemoteAddr: p.remote}); c != nil {
		t.Errorf("ConnOf(tcp address) = %v, want nil", c)
	}
	if c := tr.ConnOf(&oncrpc.Request{}); c != nil {
		t.Errorf("ConnOf(no address) = %v", c)
	}
	got[1].Close()
	got[1].Close()
	if tr.ConnOf(req) != nil || tr.Len() != 1 || b.closed != 2 {
		t.Errorf("after Close: ConnOf %v, %d tracked, underlying closed %d times", tr.ConnOf(req), tr.Len(), b.closed)
	}
	if c := tr.ConnOf(&oncrpc.Request{RemoteAddr: a.remote}); c != Configurable(a) {
		t.Errorf("first connection lost: %v", c)
	}
}

// TestServiceAppliesToConn: a valid CONF_RDMA call applies ServerSettings to the
// connection ConnOf returns; an invalid one applies nothing.
func TestServiceAppliesToConn(t *testing.T) {
	var conn fakeConn
	limits := Limits{MaxCallSendSize: 8192, MaxReplySendSize: 8192, Align: 4, MaxRDMARead: 8}
	svc, err := NewService(&ServiceOptions{Limits: &limits, ConnOf: func(*oncrpc.Request) Configurable { return &conn }})
	if err != nil {
		t.Fatal(err)
	}
	call := func(args []byte) error {
		var e xdr.Encoder
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: ProcConfRDMA}, Args: xdr.NewDecoder(args)}
		return svc.ServeRPC(context.Background(), req, &e)
	}
	// maxcall_sendsize 256: refused, nothing applied.
	if err := call([]byte{0, 0, 0x01, 0, 0, 0, 0x08, 0, 0, 0, 0, 3}); err == nil || conn.calls != 0 {
		t.Errorf("invalid call: err %v, applied %d times", err, conn.calls)
	}
	// maxcall 4096, maxreply 2048, maxrdmaread 3.
	if err := call([]byte{0, 0, 0x10, 0, 0, 0, 0x08, 0, 0, 0, 0, 3}); err != nil {
		t.Fatal(err)
	}
	if conn.send != 2048 || conn.recv != 8192 || conn.maxReads != 3 || conn.calls != 2 {
		t.Errorf("applied send %d recv %d reads %d (%d calls), want 2048 8192 3", conn.send, conn.recv, conn.maxReads, conn.calls)
	}
}
