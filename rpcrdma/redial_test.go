package rpcrdma

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// blackHole listens on addr and accepts connections it never answers: a server whose
// TCP port is up and whose RDMA side (here, the MPA exchange) is not. Its cleanup
// closes what it accepted, which ends any dial still waiting on it.
func blackHole(t *testing.T, addr string) {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 100; i++ { // the port was the server's a moment ago
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen on the server's address %s: %v", addr, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
}

// TestRedialEndsWithTheTryAndClose: a reconnection to a server that accepts the
// TCP connection and never answers the connection request ends when the try's
// Timeout fires (ErrTimeout, as the wait of a call queued behind the dial does), and
// Close does not wait for it. Before, the dial waited on the call's context alone: a
// call with a Timeout and no deadline waited for good, and Close, which waits for
// the dial in progress, with it.
func TestRedialEndsWithTheTryAndClose(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	addr := env.ln.Addr().String()
	ctx := tpCtx(t)
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	env.srv.Close() // closes the listener and the connection
	blackHole(t, addr)

	done := make(chan error, 1)
	go func() {
		done <- env.tr.RoundTrip(context.Background(), &oncrpc.ClientCall{XID: 61,
			Msg: oncrpc.Message{Inline: rpcCall(61, tpNull)}, MaxReply: 100, Timeout: 200 * time.Millisecond},
			&oncrpc.ClientReply{})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, oncrpc.ErrTimeout) {
			t.Fatalf("call while redialling a server that does not answer: %v, want ErrTimeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call with a 200 ms Timeout still waits for the dial 5 s later")
	}

	// A dial in progress when the Client closes, for a call with no Timeout.
	go func() {
		done <- env.tr.RoundTrip(context.Background(), &oncrpc.ClientCall{XID: 62,
			Msg: oncrpc.Message{Inline: rpcCall(62, tpNull)}, MaxReply: 100}, &oncrpc.ClientReply{})
	}()
	time.Sleep(50 * time.Millisecond) // let it dial
	closed := make(chan struct{})
	go func() {
		env.tr.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close still waits for the dial 5 s later")
	}
	if err := <-done; err == nil {
		t.Fatal("a call on a closed Client succeeded")
	}
}
