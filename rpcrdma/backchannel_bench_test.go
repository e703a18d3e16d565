package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// BenchmarkBackchannelRoundTrip measures one reverse call from the server to a client's
// callback handler and back, over verbs/soft.
func BenchmarkBackchannelRoundTrip(b *testing.B) {
	relay := &bcRelay{}
	noTrace := func(bool, []byte) {}
	env := newTPEnv(b, &ServerOptions{Trace: noTrace}, &ClientOptions{Trace: noTrace, Backchannel: &oncrpc.BackchannelOptions{Handler: &bcHandler{}}}, relay.procs())
	ctx := tpCtx(b)
	if _, err := callback(ctx, env.rpc, "warm"); err != nil {
		b.Fatal(err)
	}
	c := oncrpc.NewClient(relay.rt.Load(), bcProg, bcVers)
	var out bcOpaque
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.Call(ctx, bcProcCB, tpOpaque("x"), &out); err != nil {
			b.Fatal(err)
		}
	}
}
