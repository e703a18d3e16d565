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
