package rpcrdma

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/stallproxy"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// TestHostileStallReadChunks: a client whose read chunks the server cannot pull (its
// RDMA Reads go unanswered: the client's side stopped reading its socket) has its
// connection closed by the stall watch after ReadTimeout (Listener.Stalled counts
// it), and the reassembly buffer goes back to the budget; other connections are
// served meanwhile and after.
func TestHostileStallReadChunks(t *testing.T) {
	budget := oncrpc.NewBudget(0)
	env := newTPEnv(t, &ServerOptions{ReadTimeout: 100 * time.Millisecond, SendTimeout: -1, Budget: budget}, nil)
	p, err := stallproxy.New(env.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := tpCtx(t)
	tr, err := Dial(ctx, env.dev, p.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	rpc := oncrpc.NewClient(tr, tpProg, tpVers)
	if err := rpc.Call(ctx, tpNull, nil, nil); err != nil {
		t.Fatalf("NULL through the proxy: %v", err)
	}
	p.Freeze()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var res tpUint32
		done <- rpc.Call(cctx, tpSum, tpMakePayloads(256<<10), &res)
	}()
	// Only the stall watch can end this: the Reads are never answered.
	for env.ln.Stalled() == 0 {
		if err := env.rpc.Call(ctx, tpNull, nil, nil); err != nil {
			t.Fatalf("NULL on another connection during the stall: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for budget.InUse() != 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the stalled call succeeded")
	}
	if err := env.rpc.Call(ctx, tpNull, nil, nil); err != nil {
		t.Fatalf("NULL after the stall: %v", err)
	}
}
