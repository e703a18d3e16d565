package rpcrdma

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// goroutineID returns the calling goroutine's number (from its stack header).
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// TestInlineCallsRunWhereTheyArrive: a procedure declared non-blocking (newTPEnv
// declares NULL) runs in the completion context, on the goroutine that received the
// call (the soft provider's receive goroutine: the same one for every call of the
// connection), while the server's other procedures run on worker goroutines.
func TestInlineCallsRunWhereTheyArrive(t *testing.T) {
	var mu sync.Mutex
	var null, echo []uint64
	rec := func(to *[]uint64) oncrpc.HandlerFunc {
		return func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			mu.Lock()
			*to = append(*to, goroutineID())
			mu.Unlock()
			return nil
		}
	}
	env := newTPEnv(t, nil, nil, oncrpc.Procs{tpNull: rec(&null), tpEcho: rec(&echo)})
	ctx := tpCtx(t)
	opts := oncrpc.CallOptions{MaxReply: 128}
	for i := 0; i < 5; i++ {
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); err != nil {
			t.Fatalf("NULL: %v", err)
		}
		if err := env.rpc.CallWithOptions(ctx, tpEcho, nil, nil, opts); err != nil {
			t.Fatalf("echo: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range null {
		if id != null[0] {
			t.Fatalf("NULL ran on goroutines %v, want one (the connection's receive goroutine)", null)
		}
	}
	for _, id := range echo {
		if id == null[0] {
			t.Fatalf("echo (not declared non-blocking) ran on the receive goroutine %d", id)
		}
	}
}

// TestInlineCallReplyTooLarge: a call run in the completion context whose reply fits
// neither inline nor a reply chunk is answered ERR_CHUNK without blocking the
// completion context (the connection keeps serving).
func TestInlineCallReplyTooLarge(t *testing.T) {
	big := make([]byte, 8<<10)
	env := newTPEnv(t, nil, nil, oncrpc.Procs{tpNull: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		res.Opaque(big)
		return nil
	}})
	ctx := tpCtx(t)
	for i := 0; i < 3; i++ {
		err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 128})
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != ErrCodeChunk {
			t.Fatalf("call %d: err = %v, want *RemoteError ERR_CHUNK", i, err)
		}
	}
	var out tpPayloads
	if err := env.rpc.CallWithOptions(ctx, tpEcho, tpPayloads{[]byte("still serving")}, &out, oncrpc.CallOptions{MaxReply: 1024}); err != nil {
		t.Fatalf("echo after the refused replies: %v", err)
	}
}
