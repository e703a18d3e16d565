package oncrpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// goroutineID returns the calling goroutine's number (from its stack header), to tell
// which goroutine ran a handler.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// pushConn is a PushServerConn whose calls a test delivers by hand.
type pushConn struct {
	deliverc chan func(*ServerCall, bool) // ServeCalls hands its deliver here
	stop     chan struct{}                // ends ServeCalls
	mu       sync.Mutex
	replies  map[uint32]bool // xid -> answered (true) / dropped (false)
	closed   bool
}

func newPushConn() *pushConn {
	return &pushConn{deliverc: make(chan func(*ServerCall, bool), 1), stop: make(chan struct{}), replies: map[uint32]bool{}}
}

func (p *pushConn) ServeCalls(ctx context.Context, deliver func(*ServerCall, bool)) error {
	p.deliverc <- deliver
	select {
	case <-p.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pushConn) ReadCall(ctx context.Context) (*ServerCall, error) {
	return nil, errors.New("pushConn: ReadCall called on a PushServerConn")
}

func (p *pushConn) WriteReply(call *ServerCall, reply *Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replies[call.Cookie.(uint32)] = reply != nil
	return nil
}

func (p *pushConn) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return nil
}

func (p *pushConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func pushCall(xid, proc uint32) *ServerCall {
	var e xdr.Encoder
	h := CallHeader{XID: xid, Prog: testProg, Vers: testVers, Proc: proc}
	h.EncodeXDR(&e)
	return &ServerCall{Msg: Message{Inline: e.Bytes()}, Cookie: xid}
}

// TestPushServerConn: a Server serves a PushServerConn through ServeCalls, never
// ReadCall; deliver never blocks, even with every worker busy (the rest wait in a
// backlog); non-blocking procedures run inside deliver when the transport allows it;
// every delivered call is answered before the connection is closed.
func TestPushServerConn(t *testing.T) {
	release := make(chan struct{})
	var g struct {
		mu   sync.Mutex
		null []uint64
	}
	procs := Procs{
		procNull: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
			g.mu.Lock()
			g.null = append(g.null, goroutineID())
			g.mu.Unlock()
			return nil
		},
		procEcho: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
			<-release
			return nil
		},
	}
	s := NewServer(&ServerOptions{MaxConcurrent: 2})
	s.Register(testProg, testVers, NonBlocking(procs, procNull))
	p := newPushConn()
	served := make(chan struct{})
	go func() {
		s.ServeConn(p)
		close(served)
	}()
	deliver := <-p.deliverc
	// Five blocking calls with two workers: deliver returns for every one.
	for xid := uint32(1); xid <= 5; xid++ {
		deliver(pushCall(xid, procEcho), true)
	}
	// A non-blocking call the transport allows inline runs in deliver, on this
	// goroutine; one it does not allow goes to a worker (and waits behind the rest).
	deliver(pushCall(6, procNull), true)
	deliver(pushCall(7, procNull), false)
	g.mu.Lock()
	if len(g.null) != 1 || g.null[0] != goroutineID() {
		t.Errorf("NULL delivered inline ran on goroutines %v, want [%d] (the deliverer)", g.null, goroutineID())
	}
	g.mu.Unlock()
	p.mu.Lock()
	if !p.replies[6] || len(p.replies) != 1 {
		t.Errorf("replies before the workers were released: %v, want only xid 6", p.replies)
	}
	p.mu.Unlock()
	close(release)
	close(p.stop)
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("ServeConn did not return")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for xid := uint32(1); xid <= 7; xid++ {
		if !p.replies[xid] {
			t.Errorf("call %d was not answered (replies %v)", xid, p.replies)
		}
	}
	if !p.closed {
		t.Error("connection not closed after ServeCalls returned")
	}
	if st := s.Stats(); st.Calls != 7 {
		t.Errorf("Stats().Calls = %d, want 7", st.Calls)
	}
}

// TestPushWorkersShared: a push worker goes back to the Server's pool when its
// connection has no call waiting, so an idle connection holds no goroutine, and the
// next blocking call, on any connection, runs on that parked worker; Close ends it.
func TestPushWorkersShared(t *testing.T) {
	ran := make(chan uint64)
	procs := Procs{procEcho: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		ran <- goroutineID()
		return nil
	}}
	s := NewServer(nil)
	s.Register(testProg, testVers, procs)
	var delivers []func(*ServerCall, bool)
	var conns []*pushConn
	var served sync.WaitGroup
	for i := 0; i < 2; i++ {
		p := newPushConn()
		served.Add(1)
		go func() {
			defer served.Done()
			s.ServeConn(p)
		}()
		conns = append(conns, p)
		delivers = append(delivers, <-p.deliverc)
	}
	idleWorkers := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			s.workers.mu.Lock()
			n := len(s.workers.idle)
			s.workers.mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d idle push workers, want %d", n, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	delivers[0](pushCall(1, procEcho), true)
	first := <-ran
	idleWorkers(1) // connection 0 is idle and holds no worker
	delivers[1](pushCall(2, procEcho), true)
	if second := <-ran; second != first {
		t.Errorf("call on connection 1 ran on goroutine %d, want the parked worker %d", second, first)
	}
	idleWorkers(1)
	for _, p := range conns {
		close(p.stop)
	}
	served.Wait()
	s.Close()
	idleWorkers(0)
	for i, p := range conns {
		p.mu.Lock()
		if !p.replies[uint32(i+1)] {
			t.Errorf("call %d not answered: %v", i+1, p.replies)
		}
		p.mu.Unlock()
	}
}
