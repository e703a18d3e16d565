package oncrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			<-done // never reads
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTCPTransport(c, nil)
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = NewClient(tr, testProg, testVers).Call(ctx, procEcho, payloadArg(make([]byte, 64<<20)), nil)
	if err == nil {
		t.Fatal("call to a server that never reads succeeded")
	}
	if tr.pending.Len() != 0 {
		t.Fatal("call left pending")
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
