package rpcrdma

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestConnectionLossRetransmits: calls outstanding when the connection breaks are sent
// again, with the same XID, on a new connection, and complete. Calls whose context
// has no deadline wait for their reply on one channel (roundTrip), which the
// connection's failure must signal too.
func TestConnectionLossRetransmits(t *testing.T) {
	t.Run("deadline", func(t *testing.T) { testConnectionLossRetransmits(t, tpCtx(t)) })
	t.Run("no-deadline", func(t *testing.T) { testConnectionLossRetransmits(t, context.Background()) })
}

func testConnectionLossRetransmits(t *testing.T, ctx context.Context) {
	b := newBlocker()
	env := newTPEnv(t, nil, nil, b.procs())
	// The connection's first grant: all n calls are outstanding at once (no reply can
	// carry a larger grant while they block).
	const n = initialCallRecvs
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { errs <- env.rpc.CallWithOptions(ctx, tpBlock, nil, nil, oncrpc.CallOptions{MaxReply: 100}) }()
	}
	for i := 0; i < n; i++ {
		<-b.arrived
	}
	env.tr.mu.Lock()
	old := env.tr.cc
	env.tr.mu.Unlock()
	old.ep.qp.Close()                // the connection breaks
	guard := time.After(time.Minute) // a hang guard, not a timing assertion
	// The new connection starts with one credit (RFC 8166 §3.3.3): the first
	// retransmission arrives alone; the others follow once it is answered.
	select {
	case <-b.arrived:
	case <-guard:
		t.Fatal("no call was retransmitted after the connection broke")
	}
	close(b.release)
	for i := 0; i < n; i++ {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-guard:
			t.Fatalf("%d of %d calls never returned after the connection broke", n-i, n)
		}
	}
	env.tr.mu.Lock()
	cur := env.tr.cc
	env.tr.mu.Unlock()
	if cur == old {
		t.Fatal("no new connection")
	}
	seen := map[uint32]int{}
	for _, h := range env.strace.headers(t, false) {
		if h.Proc == ProcMsg {
			seen[h.XID]++
		}
	}
	twice := 0
	for _, c := range seen {
		if c == 2 {
			twice++
		}
	}
	if twice != n {
		t.Fatalf("%d XIDs arrived twice, want %d (%v)", twice, n, seen)
	}
}

// TestTimeoutRetransmitsOnNewConnection: a try that times out drops the connection, so
// the oncrpc.Client's retransmission (same XID) goes out on a fresh one.
func TestTimeoutRetransmitsOnNewConnection(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	release := make(chan struct{})
	env := newTPEnv(t, nil, nil, oncrpc.Procs{tpBlock: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			<-release
		}
		return nil
	}})
	defer close(release)
	ctx := tpCtx(t)
	env.tr.mu.Lock()
	first := env.tr.cc
	env.tr.mu.Unlock()
	rpc := oncrpc.NewClient(env.tr, tpProg, tpVers, oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: 200e6, MaxTries: 50}))
	if err := rpc.CallWithOptions(ctx, tpBlock, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	env.tr.mu.Lock()
	cur := env.tr.cc
	env.tr.mu.Unlock()
	if cur == first {
		t.Fatal("the retransmission used the connection of the timed-out try")
	}
	var xids []uint32
	for _, h := range env.strace.headers(t, false) {
		xids = append(xids, h.XID)
	}
	if len(xids) < 2 || xids[0] != xids[len(xids)-1] {
		t.Fatalf("server saw XIDs %x, want the same XID retransmitted", xids)
	}
}

// TestLateReplyLeavesNewWindow: a reply that reached its caller before the connection
// broke, but that the caller decodes only after the Client has reconnected (a caller
// descheduled between its wake-up and complete), must not grow the new connection's
// window: its grant was the lost connection's (RFC 8166 §3.3.3). With one window shared
// by all connections, the late grant let the new connection send more calls than the
// one credit it had, and the server answered the excess with ERR_CHUNK (an nfsrdma get
// that reconnected after a stall failed that way in CI).
func TestLateReplyLeavesNewWindow(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	cl := env.tr
	old := cl.current()
	if g := old.window.Granted(); g <= 1 {
		t.Fatalf("window %d after the first reply, want the server's first grant", g)
	}

	// One call, received but not yet decoded.
	const xid = 0x51
	call := &oncrpc.ClientCall{XID: xid, Msg: oncrpc.Message{Inline: rpcCall(xid, tpNull)}, MaxReply: 100}
	var reply oncrpc.ClientReply
	if err := old.window.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	r := cl.getRequest()
	r.xid = xid
	if err := old.send(ctx, r, call, &reply); err != nil {
		t.Fatal(err)
	}
	old.receive(ctx, r, time.Time{})
	if r.block() {
		select {
		case <-r.done:
		case <-ctx.Done():
			t.Fatal("no reply")
		}
	}

	old.fail(errConnLost)
	cc, err := cl.conn(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cc == old {
		t.Fatal("no new connection")
	}
	if err := old.complete(ctx, r, call, &reply); err != nil {
		t.Fatalf("decoding the late reply: %v", err)
	}
	old.release(r)
	old.window.Release()
	cl.putRequest(r)
	if g := cc.window.Granted(); g != 1 {
		t.Fatalf("new connection's window %d after a late reply from the lost one, want 1 (no grant on it yet)", g)
	}
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	if g := cc.window.Granted(); g <= 1 {
		t.Fatalf("new connection's window %d after its first reply, want the server's grant", g)
	}
}
