package oncrpc

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A dialed transport that loses its connection reconnects from the same source port
// and retransmits the outstanding call with the same XID, as the Linux client does
// (xprtsock keeps its srcport), so that the server's duplicate request cache, keyed
// by the caller's address and port like knfsd's, recognizes the retransmission.
func TestTCPReconnectKeepsSourcePort(t *testing.T) {
	var mu sync.Mutex
	from := map[uint32][]string{} // XID → the caller's address of each try
	h := echoHandler()
	h[procNull] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		mu.Lock()
		from[req.Header.XID] = append(from[req.Header.XID], req.RemoteAddr.String())
		first := len(from[req.Header.XID]) == 1
		mu.Unlock()
		if first {
			// The call was executed, but its reply is lost with the connection.
			req.Conn.Close()
		}
		return nil
	}
	_, addr := startTCPServer(t, nil, h)
	tr := dialTCP(t, addr, &TCPOptions{ReconnectBackoff: time.Millisecond})
	c := NewClient(tr, testProg, testVers)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := c.Call(ctx, procNull, nil, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := tr.Stats().Reconnects; n != 3 {
		t.Fatalf("%d reconnections, want 3", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(from) != 3 {
		t.Fatalf("server saw %d XIDs, want 3: %v", len(from), from)
	}
	for xid, addrs := range from {
		if len(addrs) != 2 || addrs[0] != addrs[1] {
			t.Fatalf("xid %#x: tries came from %v, want twice the same address and port", xid, addrs)
		}
	}
}

// When the source port cannot be reused (here another socket holds it), the dialer
// connects from a new port and keeps that one for the next reconnection.
func TestTCPDialerFallsBackToNewPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	d := &tcpDialer{addr: ln.Addr().String(), local: taken.Addr().(*net.TCPAddr)}
	c, err := d.dial(context.Background())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if got := c.LocalAddr().String(); got == taken.Addr().String() || d.local.String() != got {
		t.Fatalf("connected from %s, dialer keeps %v; want a new port, kept", got, d.local)
	}
}

// The dialer's own earlier connection lingering in TIME_WAIT (closed in order, by this
// side first) does not keep it from connecting again from that port: its sockets
// carry SO_REUSEADDR, as the Linux client's do (xs_create_sock), and bind(2) then
// allows the port over the TIME_WAIT (connect(2) checks the whole address
// quadruple). Without it the reconnection came from a new port, and the server's
// duplicate request cache no longer recognized the retransmitted calls.
func TestTCPDialerReusesPortInTimeWait(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c, err := other.Accept()
		if err != nil {
			return
		}
		var b [1]byte
		c.Read(b[:]) // until the client's FIN
		c.Close()
	}()
	d := &tcpDialer{addr: other.Addr().String()}
	c, err := d.dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	port := d.local.String()
	c.Close() // this side closes first: its socket ends in TIME_WAIT
	<-closed

	_, addr := startTCPServer(t, nil, echoHandler())
	d.addr = addr
	rc, err := d.dial(context.Background())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer rc.Close()
	if got := rc.LocalAddr().String(); got != port {
		t.Fatalf("connected again from %s with %s in TIME_WAIT, want from %s", got, port, port)
	}
}
