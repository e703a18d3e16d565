package rpcrdma

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// howRun tells, from the calling goroutine's stack, whether a handler runs inline in
// the server's delivery of a pushed call ((*pushQueue).deliver, called from the
// transport's completion context) or on a worker that drains the connection's backlog.
// The goroutine itself says nothing: the soft provider runs completion handlers on
// whichever goroutine drains the CQ (its receive goroutine, or a worker whose post
// found completions waiting), so a non-blocking call may run on a worker's goroutine,
// but always inside deliver.
func howRun() (inDeliver, inDrain bool) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		switch {
		case strings.HasSuffix(f.Function, "oncrpc.(*pushQueue).deliver"):
			// The innermost of the two decides: a worker's post can deliver a
			// completion inline, and that call then runs inside drain too.
			if !inDrain {
				inDeliver = true
			}
		case strings.HasSuffix(f.Function, "oncrpc.(*pushQueue).drain"):
			if !inDeliver {
				inDrain = true
			}
		}
		if !more {
			return inDeliver, inDrain
		}
	}
}

// TestInlineCallsRunWhereTheyArrive: a procedure declared non-blocking (newTPEnv
// declares NULL) runs in the completion context, inside the server's delivery of the
// call, while the server's other procedures are handed to worker goroutines.
func TestInlineCallsRunWhereTheyArrive(t *testing.T) {
	type run struct{ deliver, drain bool }
	var mu sync.Mutex
	var null, echo []run
	rec := func(to *[]run) oncrpc.HandlerFunc {
		return func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			d, w := howRun()
			mu.Lock()
			*to = append(*to, run{d, w})
			mu.Unlock()
			return nil
		}
	}
	env := newTPEnv(t, nil, nil, oncrpc.Procs{tpNull: rec(&null), tpEcho: rec(&echo)})
	ctx := tpCtx(t)
	opts := oncrpc.CallOptions{MaxReply: 128}
	sc := onlyConn(t, env.ln)
	// Calls that arrive before the server's ServeCalls has begun are delivered by it
	// once it does, from its own goroutine: wait for it, so the first call below is
	// delivered from the completion context like the others.
	waitFor(t, "the server to serve the connection", func() bool {
		sc.pushMu.Lock()
		defer sc.pushMu.Unlock()
		return sc.push != nil
	})
	for i := 0; i < 5; i++ {
		// A call runs inline only if its reply's send buffer and send-queue slot
		// can be reserved on arrival; the client may have the previous reply
		// before the server has handled that reply's Send completion (which
		// gives back the slot and the buffer). Wait for it, so the call below
		// meets the condition the test is about.
		waitFor(t, "the previous reply's Send to complete", func() bool {
			return sc.ep.sq.free.Load() == int64(sc.ep.sq.depth)
		})
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); err != nil {
			t.Fatalf("NULL: %v", err)
		}
		if err := env.rpc.CallWithOptions(ctx, tpEcho, nil, nil, opts); err != nil {
			t.Fatalf("echo: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(null) != 5 || len(echo) != 5 {
		t.Fatalf("%d NULL and %d echo calls ran, want 5 each", len(null), len(echo))
	}
	for i, r := range null {
		if !r.deliver {
			t.Errorf("NULL call %d ran %+v, want inline in the delivery of the call", i, r)
		}
	}
	for i, r := range echo {
		if r.deliver || !r.drain {
			t.Errorf("echo call %d (not declared non-blocking) ran %+v, want on a worker draining the backlog", i, r)
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
