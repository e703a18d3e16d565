package rpcrdma

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// newDirectEnv is newTPEnv on a device whose readers, once they handed receiving to a
// caller, take it back only when asked (Config.TakeBack of an hour): a wait that
// forgets to ask (verbs.DirectProcessor.Resume) hangs and the watchdog reports it,
// where with the default it would only be 2 ms late.
func newDirectEnv(t *testing.T, so *ServerOptions, extra ...oncrpc.Procs) *tpEnv {
	return newTPEnvOn(t, soft.New(soft.Config{TakeBack: time.Hour}), so, nil, extra...)
}

// noDeadline is the context of calls whose wait nothing bounds: no deadline, no
// cancellation.
var noDeadline = context.Background()

// watchdog fails the test with every goroutine's stack if f does not return
// within d: the calls below wait without a deadline, so a lost wake-up would
// otherwise hang the test binary.
func watchdog(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		t.Fatalf("still running after %v:\n%s", d, buf[:runtime.Stack(buf, true)])
	}
}

// TestCallerReceivesItsReply: a caller without a deadline, alone on its
// connection, receives its reply on its own goroutine (the soft device counts
// FPDUs processed that way), and every reply is right.
func TestCallerReceivesItsReply(t *testing.T) {
	env := newDirectEnv(t, nil)
	before := env.dev.Stats().DirectFPDUs
	watchdog(t, 60*time.Second, func() {
		for i := 0; i < 300; i++ {
			args := tpMakePayloads(16 + i%200)
			var res tpPayloads
			if err := env.rpc.Call(noDeadline, tpEcho, args, &res); err != nil {
				t.Error(err)
				return
			}
			if len(res) != 1 || !bytes.Equal(res[0], args[0]) {
				t.Errorf("call %d: wrong echo", i)
				return
			}
		}
	})
	if n := env.dev.Stats().DirectFPDUs - before; n == 0 {
		t.Error("no FPDU was received by a waiting caller")
	}
}

// TestDirectReceiveMixed: calls without a deadline from several goroutines at once,
// so that callers that receive their own replies, callers waiting for the reader and
// callers asking it back mix, with replies small and large (a 256 KiB write chunk,
// which the reader places) and calls with deadlines or cancellable contexts among them
// (bounded direct receives): every call completes with the right result.
func TestDirectReceiveMixed(t *testing.T) {
	env := newDirectEnv(t, nil)
	watchdog(t, 120*time.Second, func() {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sink := make([]byte, 256<<10)
				for i := 0; i < 60; i++ {
					ctx := noDeadline
					switch {
					case (g+i)%7 == 0:
						c, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						ctx = c
					case (g+i)%5 == 0:
						c, cancel := context.WithCancel(context.Background())
						defer cancel()
						ctx = c
					}
					var err error
					switch (g + i) % 3 {
					case 0:
						err = env.rpc.Call(ctx, tpNull, nil, nil)
					case 1:
						args := tpMakePayloads(1 + (g*61+i*17)%3000)
						var res tpPayloads
						if err = env.rpc.Call(ctx, tpEcho, args, &res); err == nil && (len(res) != 1 || !bytes.Equal(res[0], args[0])) {
							err = fmt.Errorf("wrong echo")
						}
					case 2:
						args := tpMakePayloads(len(sink))
						var res tpPayloads
						err = env.rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: 1024})
						if err == nil && !bytes.Equal(sink, args[0]) {
							err = fmt.Errorf("write chunk data differs")
						}
					}
					if err != nil {
						errs <- fmt.Errorf("goroutine %d call %d: %w", g, i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestDirectReceiveReplyReadChunks: a reply the server sends in read chunks, which the
// caller pulls by RDMA Read after it received the reply itself, completes: the wait for
// the Read Responses asks the reader to receive again.
func TestDirectReceiveReplyReadChunks(t *testing.T) {
	env := newDirectEnv(t, &ServerOptions{ReplyReadChunks: true})
	watchdog(t, 60*time.Second, func() {
		for i := 0; i < 20; i++ {
			var res tpOpaque
			// MaxReply 512: no reply chunk, so the long reply comes as a read chunk.
			err := env.rpc.CallWithOptions(noDeadline, tpBig, tpUint32(20000+i), &res, oncrpc.CallOptions{MaxReply: 512})
			if err != nil {
				t.Error(err)
				return
			}
			want := make([]byte, 20000+i)
			tpFill(want, byte(20000+i))
			if !bytes.Equal(res, want) {
				t.Errorf("call %d: wrong reply", i)
				return
			}
		}
	})
}

// widenCancelCheck makes a caller with a cancellable context receive directly for a
// minute rather than cancelCheck, so that a test counting direct receipts does not
// depend on how soon replies come on a loaded machine. It returns the restore.
func widenCancelCheck() (restore func()) {
	old := cancelCheck
	cancelCheck = time.Minute
	return func() { cancelCheck = old }
}

// TestDirectReceiveBoundedWaits: calls whose wait is bounded (a per-try Timeout, a
// context deadline, a context that can be cancelled) receive their own replies as
// well, and each bound still ends a wait whose reply does not come: the try's
// timeout with oncrpc.ErrTimeout, the deadline with context.DeadlineExceeded, the
// cancellation (as the caller receives, or after cancelCheck) with context.Canceled.
// Calls on the same Client go on afterwards (the caller that gave up handed
// receiving back; with TakeBack of an hour, a caller that did not would hang the next
// call), and on the same connection when the bound was the context's (no deadline of
// the caller's is left for the reader).
func TestDirectReceiveBoundedWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		try  time.Duration // the blocked call's per-try Timeout
		// wait returns the context of the calls that are answered, bounded
		// the same way.
		wait func() (context.Context, context.CancelFunc)
		// bound returns the context of a call that must end early, and
		// starts what ends it.
		bound func(b *blocker) (context.Context, context.CancelFunc)
		want  error
	}{
		{"timeo", 100 * time.Millisecond, func() (context.Context, context.CancelFunc) {
			return context.Background(), func() {}
		}, func(*blocker) (context.Context, context.CancelFunc) {
			return context.Background(), func() {}
		}, oncrpc.ErrTimeout},
		{"ctx-deadline", 0, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		}, func(*blocker) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"ctx-cancel", 0, func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, func(b *blocker) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				// The call is at the server; its caller receives
				// directly (for at most cancelCheck) or waits.
				<-b.arrived
				cancel()
			}()
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBlocker()
			defer close(b.release)
			env := newDirectEnv(t, nil, b.procs())
			// The answered calls' tries are bounded too, but by a timeout no
			// reply on a loaded machine takes: only the blocked call is meant
			// to time out.
			rpc, blocked := env.rpc, env.rpc
			if tc.try > 0 {
				rpc = oncrpc.NewClient(rpc.Transport(), tpProg, tpVers, oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: time.Minute, MaxTries: 1}))
				blocked = oncrpc.NewClient(rpc.Transport(), tpProg, tpVers, oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: tc.try, MaxTries: 1}))
			}
			long, cancel := tc.wait()
			defer cancel()
			echo := func(n int) {
				t.Helper()
				for i := 0; i < n; i++ {
					args := tpMakePayloads(16 + i%300)
					var res tpPayloads
					if err := rpc.Call(long, tpEcho, args, &res); err != nil {
						t.Fatal(err)
					}
					if len(res) != 1 || !bytes.Equal(res[0], args[0]) {
						t.Fatalf("call %d: wrong echo", i)
					}
				}
			}
			watchdog(t, 60*time.Second, func() {
				before := env.dev.Stats().DirectFPDUs
				restore := widenCancelCheck()
				echo(200)
				restore() // the blocked calls' cancellation must be seen within cancelCheck
				if n := env.dev.Stats().DirectFPDUs - before; n == 0 {
					t.Error("no FPDU was received by a caller whose wait is bounded")
				}
				cc := rpc.Transport().(*Client).current()
				for i := 0; i < 3; i++ {
					ctx, cancel := tc.bound(b)
					err := blocked.Call(ctx, tpBlock, nil, nil)
					cancel()
					if !errors.Is(err, tc.want) {
						t.Fatalf("blocked call %d: %v, want %v", i, err, tc.want)
					}
					echo(20)
				}
				if tc.try == 0 && rpc.Transport().(*Client).current() != cc {
					t.Error("the connection was replaced")
				}
			})
		})
	}
}

// TestBoundedCallsDoNotAllocate: a call whose wait is bounded (a per-try Timeout, a
// context deadline, a context that can be cancelled) and that receives its own reply
// allocates nothing, as an unbounded one does.
func TestBoundedCallsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	noTrace := func(bool, []byte) {} // the test env's tracer keeps every message
	env := newTPEnvOn(t, soft.New(soft.Config{TakeBack: time.Hour}), &ServerOptions{Trace: noTrace}, &ClientOptions{Trace: noTrace})
	opts := oncrpc.CallOptions{MaxReply: 256}
	defer widenCancelCheck()()
	for _, bd := range waitBounds {
		rpc, ctx, cancel := boundClient(env.rpc, bd.try, bd.ctx)
		defer cancel()
		var err error
		call := func() {
			if e := rpc.CallWithOptions(ctx, tpNull, nil, nil, opts); e != nil {
				err = e
			}
		}
		call() // warm up
		// Receiving directly is an opportunity, not a promise (a busy reader
		// delivers instead): measure again, a few times at most, until some call
		// took it, so that the path measured includes it.
		direct := false
		for round := 0; round < 5 && !direct; round++ {
			before := env.dev.Stats().DirectFPDUs
			if n := testing.AllocsPerRun(200, call); n != 0 {
				t.Errorf("%s: %v allocations per call, want 0", bd.name, n)
			}
			if err != nil {
				t.Fatalf("%s: %v", bd.name, err)
			}
			direct = env.dev.Stats().DirectFPDUs != before
		}
		if !direct {
			t.Errorf("%s: no reply was received by its caller", bd.name)
		}
	}
}

// TestDirectReceiveFirstCalls: the first call on each of many fresh connections
// receives its reply. On a new connection the reply often reaches the CQ while
// another goroutine (the one posting the call, or the writer) is delivering, which
// then delivers the reply too: a caller that took over receiving, or waited for the
// reader to hand over, without waiting for that delivery to end missed its reply and
// waited for the socket forever (2 runs in 12 hung before the fix, 0 in 30 after).
func TestDirectReceiveFirstCalls(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	dev := soft.New(soft.Config{TakeBack: time.Hour})
	opts := oncrpc.CallOptions{MaxReply: 256}
	watchdog(t, 120*time.Second, func() {
		for i := 0; i < 3000; i++ {
			tr, err := Dial(context.Background(), dev, env.ln.Addr().String(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			err = oncrpc.NewClient(tr, tpProg, tpVers).CallWithOptions(noDeadline, tpNull, nil, nil, opts)
			tr.Close()
			if err != nil {
				t.Errorf("connection %d: %v", i, err)
				return
			}
		}
	})
}
