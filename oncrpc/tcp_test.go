package oncrpc

import (
	"bytes"
	"context"
	"testing"
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
