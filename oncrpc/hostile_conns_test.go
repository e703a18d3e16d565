package oncrpc

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const procHold = 2 // waits until the test releases it

// holdServer serves echoHandler plus procHold on a TCP listener with opts.
type holdServer struct {
	s       *Server
	l       *TCPListener
	addr    string
	arrived chan struct{}
	release chan struct{}
	served  chan struct{}
}

func startHoldServer(t *testing.T, opts *TCPOptions) *holdServer {
	t.Helper()
	h := &holdServer{arrived: make(chan struct{}, 16), release: make(chan struct{}), served: make(chan struct{})}
	procs := echoHandler()
	procs[procHold] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		h.arrived <- struct{}{}
		<-h.release
		return nil
	}
	h.s = NewServer(nil)
	h.s.Register(testProg, testVers, procs)
	var err error
	if h.l, err = ListenTCP("127.0.0.1:0", opts); err != nil {
		t.Fatal(err)
	}
	h.addr = h.l.Addr().String()
	go func() {
		defer close(h.served)
		h.s.Serve(h.l)
	}()
	return h
}

func (h *holdServer) stop() {
	h.s.Close()
	<-h.served
}

// client connects a non-reconnecting client transport to the server.
func (h *holdServer) client(t *testing.T) (*TCPTransport, *Client) {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTCPTransport(c, nil)
	return tr, NewClient(tr, testProg, testVers)
}

func countFDs(t *testing.T) int {
	t.Helper()
	// The runtime opens its poller's descriptors with the first network use, for
	// good: make sure that has happened before a baseline is taken.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitFDsBack waits until no more descriptors are open than before.
func waitFDsBack(t *testing.T, before int) {
	t.Helper()
	waitUntil(t, "the descriptors to be closed", func() bool { return countFDs(t) <= before })
}

// TestHostileIdleTCPConnClosedBusyConnKept: with a short idle timeout, a TCP connection
// that never sends is closed by the server, while one whose call the server is still
// serving is kept however many sweeps pass, and its call completes. (Nothing here
// depends on timing: if the busy client's connection is closed before its call is read,
// the client reconnects and resends it.)
func TestHostileIdleTCPConnClosedBusyConnKept(t *testing.T) {
	before := countFDs(t)
	func() {
		h := startHoldServer(t, &TCPOptions{IdleTimeout: 20 * time.Millisecond})
		defer h.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		busyTr, err := DialTCP(ctx, h.addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer busyTr.Close()
		busy := NewClient(busyTr, testProg, testVers)
		done := make(chan error, 1)
		go func() { done <- busy.Call(ctx, procHold, nil, nil) }()
		<-h.arrived
		g := h.l.guard
		reaped := g.Stats().Reaped

		quiet, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer quiet.Close()
		quiet.SetReadDeadline(time.Now().Add(20 * time.Second))
		var b [1]byte
		_, err = quiet.Read(b[:])
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("read from the idle connection: %v, want it closed by the server", err)
		}
		waitUntil(t, "the sweeper to count the idle close", func() bool { return g.Stats().Reaped == reaped+1 })
		sweeps := g.Stats().Sweeps
		waitUntil(t, "20 more sweeps", func() bool { return g.Stats().Sweeps >= sweeps+20 })
		if r := g.Stats().Reaped; r != reaped+1 {
			t.Fatalf("reaped %d, want %d: the busy connection was closed", r, reaped+1)
		}
		select {
		case err := <-done:
			t.Fatalf("busy call ended before release: %v", err)
		default:
		}
		close(h.release)
		if err := <-done; err != nil {
			t.Fatalf("busy call: %v", err)
		}
	}()
	waitFDsBack(t, before)
}

// TestHostileIdleTCPStalledRecordClosed: a peer that sends part of a record and stops
// has no call in progress as far as the server knows (none was read): it is closed
// like any idle connection rather than holding a descriptor and a reader forever.
func TestHostileIdleTCPStalledRecordClosed(t *testing.T) {
	before := countFDs(t)
	func() {
		h := startHoldServer(t, &TCPOptions{IdleTimeout: 20 * time.Millisecond})
		defer h.stop()
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte{0x80, 0, 0, 100, 1, 2, 3}); err != nil { // 7 of 104 bytes
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		var b [1]byte
		_, err = c.Read(b[:])
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("read from the stalled connection: %v, want it closed by the server", err)
		}
	}()
	waitFDsBack(t, before)
}

// TestHostileConnLimitTCP: past MaxConns the listener closes new connections at once and
// counts them, while the connections it has keep being served; once one closes, a new
// one is served.
func TestHostileConnLimitTCP(t *testing.T) {
	before := countFDs(t)
	func() {
		h := startHoldServer(t, &TCPOptions{MaxConns: 3})
		defer h.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var trs []*TCPTransport
		var clients []*Client
		for i := 0; i < 3; i++ {
			tr, c := h.client(t)
			defer tr.Close()
			if err := c.Call(ctx, procNull, nil, nil); err != nil {
				t.Fatalf("connection %d: %v", i+1, err)
			}
			trs, clients = append(trs, tr), append(clients, c)
		}
		for i := 0; i < 4; i++ {
			c, err := net.Dial("tcp", h.addr)
			if err == nil { // else the reset came before connect returned
				c.SetReadDeadline(time.Now().Add(20 * time.Second))
				var b [1]byte
				_, err = c.Read(b[:])
				c.Close()
			}
			var ne net.Error
			if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
				t.Fatalf("connection %d past the limit: read %v, want it closed", 4+i, err)
			}
		}
		if n := h.l.Stats().Refused; n != 4 {
			t.Fatalf("Refused = %d, want 4", n)
		}
		for _, c := range clients {
			if err := c.Call(ctx, procNull, nil, nil); err != nil {
				t.Fatalf("existing connection: %v", err)
			}
		}
		trs[0].Close()
		waitUntil(t, "the server to see the close", func() bool { return h.l.guard.Open() == 2 })
		tr, c := h.client(t)
		defer tr.Close()
		if err := c.Call(ctx, procNull, nil, nil); err != nil {
			t.Fatalf("connection after another closed: %v", err)
		}
	}()
	waitFDsBack(t, before)
}
