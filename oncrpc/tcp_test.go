package oncrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTCPEcho(t *testing.T) {
	_, addr := startTCPServer(t, nil, echoHandler())
	c := NewClient(dialTCP(t, addr, nil), testProg, testVers)
	ctx := context.Background()
	if err := c.Call(ctx, procNull, nil, nil); err != nil {
		t.Fatalf("NULL: %v", err)
	}
	for _, n := range []int{0, 1, 3, 4, 5, 1000, 100000} {
		in := bytes.Repeat([]byte{byte(n)}, n)
		var out bytesRes
		if err := c.Call(ctx, procEcho, payloadArg(in), &out); err != nil {
			t.Fatalf("echo %d: %v", n, err)
		}
		if !bytes.Equal(in, out.b) {
			t.Fatalf("echo %d: got %d bytes back", n, len(out.b))
		}
	}
}

// Small fragments in both directions through the real Client and Server.
func TestTCPMultiFragmentBothWays(t *testing.T) {
	s := NewServer(nil)
	s.Register(testProg, testVers, echoHandler())
	l, err := ListenTCP("127.0.0.1:0", &TCPOptions{MaxFragment: 5, MaxRecord: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	c := NewClient(dialTCP(t, l.Addr().String(), &TCPOptions{MaxFragment: 3}), testProg, testVers)
	in := bytes.Repeat([]byte("0123456789"), 1000)
	var out bytesRes
	if err := c.Call(context.Background(), procEcho, payloadArg(in), &out); err != nil || !bytes.Equal(in, out.b) {
		t.Fatalf("%d bytes back, %v", len(out.b), err)
	}
}

// A server that never reads cannot hold a call past its context's deadline.
func TestTCPWriteBlockedByPeerHonoursDeadline(t *testing.T) {
	tr, _ := stalledTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := NewClient(tr, testProg, testVers).Call(ctx, procEcho, payloadArg(make([]byte, bigCall)), nil)
	if err == nil {
		t.Fatal("call to a server that never reads succeeded")
	}
	if tr.pending.Len() != 0 {
		t.Fatal("call left pending")
	}
}

// stallAfter is how much of its first connection stallingPeer reads before it stops
// reading; bigCall is the size of a call whose write then blocks (more than the
// socket buffers of both sides hold).
const (
	stallAfter = 64 << 10
	bigCall    = 64 << 20
)

// stallingPeer listens on 127.0.0.1. It reads the first stallAfter bytes of the first
// connection, closes stalled, and then reads nothing more from it: a peer that stops
// taking data in the middle of a call. Later connections are relayed to next (when it
// is not ""), a server that works. release (also a cleanup) closes the connections
// it holds; a test defers it after deferring the transport's Close, so that it runs
// first: a test that fails with a write still blocked does not then hang in Close.
func stallingPeer(t *testing.T, next string) (addr string, stalled <-chan struct{}, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st := make(chan struct{})
	done := make(chan struct{})
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(done)
			ln.Close()
		})
	}
	t.Cleanup(release)
	go func() {
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !first && next != "" {
				go relay(c, next)
				continue
			}
			go func() {
				defer c.Close()
				if first {
					if _, err := io.ReadFull(c, make([]byte, stallAfter)); err == nil {
						close(st)
					}
				}
				<-done
			}()
		}
	}()
	return ln.Addr().String(), st, release
}

// relay copies between c and a new connection to addr until either side closes.
func relay(c net.Conn, addr string) {
	defer c.Close()
	s, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer s.Close()
	go func() {
		io.Copy(s, c)
		s.Close()
	}()
	io.Copy(c, s)
}

// await waits (generously) for ch to close.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("still waiting for %s after 20s", what)
	}
}

// returns runs f in a goroutine and returns its error, failing the test if f has
// not returned after a generous wait.
func returns(t *testing.T, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s still blocked after 20s", what)
		return nil
	}
}

// stalledTransport is a transport that does not redial, connected to a stallingPeer
// (which stops reading in the middle of a large call); both end with t.
func stalledTransport(t *testing.T) (*TCPTransport, <-chan struct{}) {
	t.Helper()
	addr, stalled, release := stallingPeer(t, "")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTCPTransport(c, nil)
	t.Cleanup(func() { tr.Close() })
	t.Cleanup(release) // before Close: the peer stops holding the connection
	return tr, stalled
}

// startBigCall starts, on another goroutine, a bigCall-byte call through tr with ctx,
// and waits until the peer made by stallingPeer has stopped reading in the middle of
// it: the call's write is blocked. The call's error arrives on the channel returned.
func startBigCall(t *testing.T, ctx context.Context, cl *Client, stalled <-chan struct{}) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- cl.Call(ctx, procEcho, payloadArg(make([]byte, bigCall)), nil) }()
	await(t, stalled, "the peer to receive the start of the call")
	return errc
}

// cancelMidRecord starts a call too big for the stalled peer to take and cancels its
// context while the record is half written; the call must return context.Canceled.
func cancelMidRecord(t *testing.T, cl *Client, stalled <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := startBigCall(t, ctx, cl, stalled)
	cancel()
	err := returns(t, "call whose context was cancelled", func() error { return <-errc })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
}

// A call whose write is blocked (the peer stopped reading) returns when its context
// is cancelled, though the context has no deadline (RoundTripper: RoundTrip returns
// when ctx is done). The call was cut in the middle of its record, so the
// connection is dropped: a transport that does not redial then fails its later
// calls instead of writing them after the partial record.
func TestTCPBlockedWriteHonoursCancel(t *testing.T) {
	tr, stalled := stalledTransport(t)
	cl := NewClient(tr, testProg, testVers)
	cancelMidRecord(t, cl, stalled)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	err := cl.Call(ctx2, procNull, nil, nil)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call after a partial record: %v, want the connection's loss", err)
	}
	if st := tr.Stats(); st.SendErrors != 1 {
		t.Errorf("SendErrors = %d, want 1", st.SendErrors)
	}
}

// A call whose write is blocked returns ErrTimeout when its try's Timeout expires
// (ClientCall.Timeout bounds the try, sending included).
func TestTCPBlockedWriteHonoursTryTimeout(t *testing.T) {
	tr, _ := stalledTransport(t)
	cl := NewClient(tr, testProg, testVers, WithRetry(RetryPolicy{Timeout: 200 * time.Millisecond, MaxTries: 1}))
	err := returns(t, "call with a 200ms per-try Timeout", func() error {
		return cl.Call(context.Background(), procEcho, payloadArg(make([]byte, bigCall)), nil)
	})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("call: %v, want ErrTimeout", err)
	}
}

// A call waiting for its turn to write, behind another call's blocked write, gives up
// when its context ends or its try times out.
func TestTCPCallNotStuckBehindBlockedWrite(t *testing.T) {
	tr, stalled := stalledTransport(t)
	bigCtx, bigCancel := context.WithCancel(context.Background())
	defer bigCancel()
	startBigCall(t, bigCtx, NewClient(tr, testProg, testVers), stalled)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := returns(t, "NULL call with a 200ms deadline behind a blocked write", func() error {
		return NewClient(tr, testProg, testVers).Call(ctx, procNull, nil, nil)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("NULL call with a deadline: %v, want context.DeadlineExceeded", err)
	}
	cl := NewClient(tr, testProg, testVers, WithRetry(RetryPolicy{Timeout: 200 * time.Millisecond, MaxTries: 2}))
	err = returns(t, "NULL call with a 200ms per-try Timeout behind a blocked write", func() error {
		return cl.Call(context.Background(), procNull, nil, nil)
	})
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("NULL call with a per-try Timeout: %v, want ErrTimeout", err)
	}
}

// Close returns, and fails the outstanding calls with ErrClosed, while a call's write
// is blocked (it closes the connection rather than wait for the writer).
func TestTCPCloseDuringBlockedWrite(t *testing.T) {
	tr, stalled := stalledTransport(t)
	errc := startBigCall(t, context.Background(), NewClient(tr, testProg, testVers), stalled)
	returns(t, "Close", tr.Close)
	err := returns(t, "call whose transport was closed", func() error { return <-errc })
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("call: %v, want ErrClosed", err)
	}
}

// A redialing transport whose call is cut in the middle of its record (cancelled
// while its write was blocked) drops that connection and redials: later calls go out
// on the new connection, never after the partial record.
func TestTCPCallCutMidRecordRedials(t *testing.T) {
	_, server := startTCPServer(t, nil, echoHandler())
	addr, stalled, release := stallingPeer(t, server)
	tr := dialTCP(t, addr, nil)
	defer release()
	cl := NewClient(tr, testProg, testVers)
	cancelMidRecord(t, cl, stalled)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	var out bytesRes
	if err := cl.Call(ctx2, procEcho, bytesArg("after"), &out); err != nil || string(out.b) != "after" {
		t.Fatalf("call after the cut: %q %v", out.b, err)
	}
	if st := tr.Stats(); st.SendErrors != 1 || st.Reconnects != 1 {
		t.Errorf("stats %+v, want 1 send error and 1 reconnection", st)
	}
}

// One Server serves several listeners at once.
func TestServerManyListeners(t *testing.T) {
	s := NewServer(nil)
	s.Register(testProg, testVers, echoHandler())
	defer s.Close()
	for i := 0; i < 3; i++ {
		l, err := ListenTCP("127.0.0.1:0", nil)
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(l)
		c := NewClient(dialTCP(t, l.Addr().String(), nil), testProg, testVers)
		var out bytesRes
		if err := c.Call(context.Background(), procEcho, bytesArg("hi"), &out); err != nil || string(out.b) != "hi" {
			t.Fatalf("listener %d: %q %v", i, out.b, err)
		}
	}
}

// killingConn closes its connection after reading n calls.
type killingConn struct {
	ServerConn
	n atomic.Int32
}

func (k *killingConn) ReadCall(ctx context.Context) (*ServerCall, error) {
	call, err := k.ServerConn.ReadCall(ctx)
	if err == nil && k.n.Add(-1) == 0 {
		k.ServerConn.Close()
	}
	return call, err
}

// Connections die with many calls in flight; every call completes through
// reconnection and retransmission.
func TestTCPReconnectUnderLoad(t *testing.T) {
	s := NewServer(nil)
	s.Register(testProg, testVers, echoHandler())
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			sc := NewTCPServerConn(c, nil)
			if conns.Add(1) <= 3 {
				k := &killingConn{ServerConn: sc}
				k.n.Store(25)
				sc = k
			}
			go s.ServeConn(sc)
		}
	}()
	tr := dialTCP(t, ln.Addr().String(), &TCPOptions{ReconnectBackoff: time.Millisecond})
	c := NewClient(tr, testProg, testVers)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := fmt.Appendf(nil, "call %d", i)
			var out bytesRes
			if err := c.Call(ctx, procEcho, payloadArg(in), &out); err != nil || !bytes.Equal(in, out.b) {
				t.Errorf("call %d: %q, %v", i, out.b, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d connections, transport stats %+v", conns.Load(), tr.Stats())
	if conns.Load() < 2 || tr.Stats().Reconnects != uint64(conns.Load()-1) {
		t.Fatalf("%d connections, stats %+v", conns.Load(), tr.Stats())
	}
}

// A server that closes in the middle of a reply record fails the call with a clear error.
func TestTCPServerClosesMidReply(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		call, err := NewRecordReader(c, 0).ReadRecord(nil)
		if err != nil || len(call) < 4 {
			return
		}
		reply := writeRecord(&Message{Inline: (&ReplyHeader{XID: binary.BigEndian.Uint32(call)}).Append(nil)}, 0)
		c.Write(reply[:len(reply)-5]) // all but the last 5 bytes
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTCPTransport(c, nil)
	defer tr.Close()
	err = NewClient(tr, testProg, testVers).Call(context.Background(), procNull, nil, nil)
	if !errors.Is(err, ErrRecordTruncated) {
		t.Fatalf("err = %v, want ErrRecordTruncated", err)
	}
}

// Accept with a context that ends leaves the listener usable.
func TestTCPListenerAcceptContext(t *testing.T) {
	l, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := l.Accept(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Accept: %v", err)
	}
	go func() {
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			defer c.Close()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	sc, err := l.Accept(ctx2)
	if err != nil {
		t.Fatalf("Accept after a cancelled Accept: %v", err)
	}
	sc.Close()
	l.Close()
	if _, err := l.Accept(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}

// A server and clients that are shut down and closed leave no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		s := NewServer(nil)
		s.Register(testProg, testVers, echoHandler())
		l, err := ListenTCP("127.0.0.1:0", nil)
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(l) }()
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			tr, err := DialTCP(context.Background(), l.Addr().String(), nil)
			if err != nil {
				t.Fatal(err)
			}
			c := NewClient(tr, testProg, testVers, WithRetry(RetryPolicy{Timeout: time.Minute}))
			for j := 0; j < 20; j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.Call(context.Background(), procEcho, bytesArg("x"), nil)
				}()
			}
			wg.Wait()
			tr.Close()
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-served
	}()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
