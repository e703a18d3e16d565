package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// TestIdleServerConnRegistersLittle pins what an idle server connection holds in
// registered buffers after a few calls one at a time (a qd1 client): the 2 receives
// for calls it starts with plus ExtraRecvs (a client that keeps one call in flight
// never has more than half of 2 outstanding, so no growth; its credit is returned
// before the reply is sent), and that the per-buffer bookkeeping exists only for the
// buffers registered. (Send buffers are not pinned: one returns to the pool when its
// Send completes, which may come after the client's next call.)
func TestIdleServerConnRegistersLittle(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	for i := 0; i < 10; i++ {
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
			t.Fatal(err)
		}
	}
	sc := onlyConn(t, env.ln)
	ep := sc.ep
	ep.bufMu.Lock()
	nRecv, nSend := ep.nRecv, ep.nSend
	var bytes int
	for _, mr := range ep.slabs {
		bytes += len(mr.Buf())
	}
	var recvSlots int
	for _, s := range ep.recv {
		if s != nil {
			recvSlots++
		}
	}
	ep.bufMu.Unlock()
	if want := 2 + env.ln.opts.ExtraRecvs; nRecv != want || recvSlots != want {
		t.Errorf("%d receive buffers (%d slots) after calls one at a time, want %d", nRecv, recvSlots, want)
	}
	if want := nRecv*ep.recvSize + nSend*ep.sendSize; bytes != want {
		t.Errorf("%d bytes registered for %d receive and %d send buffers, want %d", bytes, nRecv, nSend, want)
	}
}
