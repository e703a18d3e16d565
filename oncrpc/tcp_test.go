package oncrpc

import (
	"bytes"
	"context"
	"net"
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
