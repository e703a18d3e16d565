package rpcrdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const tpBlock = 10 // blocks until the test releases it

// blocker counts concurrent invocations of tpBlock and holds them until released.
type blocker struct {
	mu      sync.Mutex
	cur     int
	max     int
	calls   int
	release chan struct{}
	arrived chan struct{}
}

func newBlocker() *blocker {
	return &blocker{release: make(chan struct{}), arrived: make(chan struct{}, 1000)}
}

func (b *blocker) procs() oncrpc.Procs {
	return oncrpc.Procs{tpBlock: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		b.mu.Lock()
		b.cur++
		b.calls++
		b.max = max(b.max, b.cur)
		b.mu.Unlock()
		b.arrived <- struct{}{}
		<-b.release
		b.mu.Lock()
		b.cur--
		b.mu.Unlock()
		return nil
	}}
}

// TestCreditExhaustionAndRecovery: with a grant of 2, twenty concurrent calls never have
// more than 2 at the server; all complete when the server frees up.
func TestCreditExhaustionAndRecovery(t *testing.T) {
	b := newBlocker()
	cs := credits.NewServer(credits.Config{Total: 2, PerConn: 2})
	env := newTPEnv(t, &ServerOptions{Credits: cs}, nil, b.procs())
	ctx := tpCtx(t)
	// One call first so the grant (2) is known.
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- env.rpc.CallWithOptions(ctx, tpBlock, nil, nil, oncrpc.CallOptions{MaxReply: 100})
		}()
	}
	<-b.arrived
	<-b.arrived
	// The window is full: the client holds both credits and nobody else gets through.
	if w := env.tr.current().window; w.InUse() != 2 || w.Granted() != 2 {
		t.Fatalf("client window: %d in use of %d granted, want 2 of 2", w.InUse(), w.Granted())
	}
	close(b.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.max > 2 || b.calls != 20 {
		t.Fatalf("server saw %d calls, at most %d at once; want 20, at most 2", b.calls, b.max)
	}
	// Every call asked for the client's maximum and every reply granted 2.
	for _, h := range env.ctrace.headers(t, false) {
		if h.Credits != 2 {
			t.Fatalf("reply granted %d credits, want 2", h.Credits)
		}
	}
}

// TestCreditsStartAtOne: a fresh connection has one credit until the first reply
// (as ClientStats reports it).
func TestCreditsStartAtOne(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	if g := env.tr.Stats().Credits; g != 1 {
		t.Fatalf("initial window %d, want 1", g)
	}
	if err := env.rpc.CallWithOptions(tpCtx(t), tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	if g := env.tr.Stats().Credits; g != initialCallRecvs {
		t.Fatalf("window after the first reply %d, want the server's first grant, %d", g, initialCallRecvs)
	}
}

// TestCreditsGrowWithReceives: a connection starts with few receives posted and grants
// no more; when its client keeps its whole grant outstanding the server posts more
// receives and grants them, doubling up to PerConn (64), and never grants more than it
// has posted.
func TestCreditsGrowWithReceives(t *testing.T) {
	arrived := make(chan struct{}, 128)
	var gate atomic.Pointer[chan struct{}]
	hold := oncrpc.Procs{tpBlock: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		g := *gate.Load()
		arrived <- struct{}{}
		<-g
		return nil
	}}
	env := newTPEnv(t, nil, nil, hold)
	ctx := tpCtx(t)
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	sc := onlyConn(t, env.ln)
	extra := env.ln.opts.ExtraRecvs
	want := initialCallRecvs
	for round := 0; ; round++ {
		g := env.tr.current().window.Granted()
		if g != want {
			t.Fatalf("round %d: window %d, want %d", round, g, want)
		}
		if g == 64 {
			break
		}
		release := make(chan struct{})
		gate.Store(&release)
		errs := make(chan error, g)
		for i := 0; i < g; i++ {
			go func() { errs <- env.rpc.CallWithOptions(ctx, tpBlock, nil, nil, oncrpc.CallOptions{MaxReply: 100}) }()
		}
		for i := 0; i < g; i++ {
			<-arrived
		}
		// Every granted call is outstanding: the receives have grown (ReadCall did it
		// before handing the calls up), and the next grant may use them.
		sc.ep.bufMu.Lock()
		posted := sc.ep.nRecv
		sc.ep.bufMu.Unlock()
		want = min(2*g, 64)
		if posted != want+extra {
			t.Fatalf("round %d: %d receives posted with %d calls outstanding, want %d", round, posted, g, want+extra)
		}
		close(release)
		for i := 0; i < g; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	// No reply ever granted more than the receives posted for calls at the time: grants
	// only ever rose to what the previous round had posted.
	prev := uint32(0)
	for _, h := range env.ctrace.headers(t, false) {
		if h.Credits < prev || h.Credits > 64 {
			t.Fatalf("grants went %d -> %d", prev, h.Credits)
		}
		prev = h.Credits
	}
}

// TestOverrunningClientBesideWellBehaved: a raw client that sends far more calls than it
// was granted gets ERR_CHUNK for the excess and is finally disconnected, while a
// well-behaved client on the same listener keeps being served.
func TestOverrunningClientBesideWellBehaved(t *testing.T) {
	b := newBlocker()
	cs := credits.NewServer(credits.Config{Total: 8, PerConn: 4, MaxOverruns: 6})
	env := newTPEnv(t, &ServerOptions{Credits: cs, ExtraRecvs: 16}, nil, b.procs())
	ctx := tpCtx(t)
	bad := dialRaw(t, env.ln.Addr().String(), linuxClientPrivate)
	// The bad client has one credit (no reply yet) and sends 8 calls that block without
	// waiting for answers. The connection starts with 2 receives for calls: the first
	// call is accepted; the second overruns and its ERR_CHUNK grants 2; the third is
	// accepted, and with 2 of 2 outstanding the connection posts 4; the fourth overruns
	// and its ERR_CHUNK grants 4, so two more are accepted; the rest overrun.
	blockCall := func(xid uint32) []byte {
		h := Header{XID: xid, Vers: 1, Credits: 100, Proc: ProcMsg}
		m, _ := h.Append(nil)
		return append(m, rpcCall(xid, tpBlock)...)
	}
	for i := uint32(0); i < 8; i++ {
		bad.send(t, blockCall(0x5000+i))
	}
	for i := 0; i < 4; i++ {
		<-b.arrived
	}
	for i, want := range []uint32{2, 4, 4, 4} {
		h, _ := bad.recvHeader(t)
		if h.Proc != ProcError || h.ErrCode != ErrCodeChunk {
			t.Fatalf("overrun call answered %+v, want ERR_CHUNK", h)
		}
		if h.Credits != want {
			t.Fatalf("ERR_CHUNK %d grants %d, want %d", i, h.Credits, want)
		}
	}
	// Meanwhile the good client works (its calls do not block).
	for i := 0; i < 10; i++ {
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
			t.Fatal(err)
		}
	}
	b.mu.Lock()
	calls := b.calls
	b.mu.Unlock()
	if calls != 4 {
		t.Fatalf("server handler ran %d of the bad client's calls, want its grant, 4", calls)
	}
	// Keep overrunning: the connection is dropped.
	for i := uint32(0); i < 4; i++ {
		if wc := bad.trySend(t, blockCall(0x6000+i)); wc.Status != verbs.StatusSuccess {
			break // already disconnected
		}
	}
	<-bad.qp.Done()
	close(b.release)
	for i := 0; i < 10; i++ {
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
			t.Fatal(err)
		}
	}
	// The ERR_CHUNK answers' grants were reported sent too.
	waitFor(t, "every grant taken to be reported sent", func() bool { return cs.Stats().Unsent == 0 })
}

// TestManyConcurrentCalls runs hundreds of concurrent calls of every chunk type.
func TestManyConcurrentCalls(t *testing.T) {
	noTrace := func(bool, []byte) {}
	env := newTPEnv(t, &ServerOptions{Trace: noTrace}, &ClientOptions{Trace: noTrace})
	ctx := tpCtx(t)
	var wg sync.WaitGroup
	var failures atomic.Int64
	for g := 0; g < 300; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				if err := tpMixedCall(ctx, env.rpc, g*4+i); err != nil {
					if failures.Add(1) < 5 {
						t.Error(err)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if env.tr.current().window.InUse() != 0 {
		t.Fatalf("%d credits still held", env.tr.current().window.InUse())
	}
	// Every RDMA Read token of the server connection is back (ORD budget intact), and
	// no call is still counted against the client's grant.
	sc := onlyConn(t, env.ln)
	if sc.reads.InUse() != 0 || sc.reads.Granted() != sc.ord {
		t.Fatalf("%d Read credits in use of %d, ORD %d", sc.reads.InUse(), sc.reads.Granted(), sc.ord)
	}
	if n := sc.cred.Outstanding(); n != 0 {
		t.Fatalf("%d calls still outstanding at the server", n)
	}
	// Every reply's grant was reported sent, from its Send's completion, so that the
	// credit limit can follow the grant the client received last.
	waitFor(t, "every grant taken to be reported sent", func() bool { return env.ln.Stats().Credits.Unsent == 0 })
}

// tpMixedCall makes call number i, cycling through the chunk types, and checks it.
func tpMixedCall(ctx context.Context, rpc *oncrpc.Client, i int) error {
	switch i % 5 {
	case 0:
		return rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100})
	case 1:
		args := tpMakePayloads(100+i%7, 3000)
		sinks := [][]byte{make([]byte, 200), make([]byte, 4000)}
		var res tpPayloads
		if err := rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 1024}); err != nil {
			return err
		}
		for k := range args {
			if !bytes.Equal(res[k], args[k]) {
				return fmt.Errorf("call %d: echo payload %d corrupted", i, k)
			}
		}
	case 2:
		var res tpOpaque
		n := 5000 + i
		if err := rpc.CallWithOptions(ctx, tpBig, tpUint32(n), &res, oncrpc.CallOptions{MaxReply: 16384}); err != nil {
			return err
		}
		want := make([]byte, n)
		tpFill(want, byte(n))
		if !bytes.Equal(res, want) {
			return fmt.Errorf("call %d: reply chunk corrupted", i)
		}
	case 3:
		var res tpPair
		if err := rpc.Call(ctx, tpSum, tpMakePayloads(8000, 3, 12000), &res); err != nil {
			return err
		}
		if res != (tpPair{3, 20003}) {
			return fmt.Errorf("call %d: sum %v", i, res)
		}
	case 4:
		blob := make([]byte, 6000+i)
		tpFill(blob, 7)
		var res tpUint32
		if err := rpc.Call(ctx, tpBigInline, tpOpaque(blob), &res); err != nil {
			return err
		}
		if int(res) != len(blob) {
			return fmt.Errorf("call %d: long call length %d", i, res)
		}
	}
	return nil
}

var _ = binary.BigEndian

// TestSmallORDConcurrentPulls: with ORD 1 many calls with several read chunks each are
// pulled concurrently without more than one Read in flight and without deadlock.
func TestSmallORDConcurrentPulls(t *testing.T) {
	noTrace := func(bool, []byte) {}
	env := newTPEnv(t, &ServerOptions{ORD: 1, Trace: noTrace}, &ClientOptions{Trace: noTrace})
	ctx := tpCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res tpPair
			err := env.rpc.Call(ctx, tpSum, tpMakePayloads(5000, 7, 9000, 4100), &res)
			if err == nil && res != (tpPair{4, 18107}) {
				err = fmt.Errorf("sum %v", res)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if sc := onlyConn(t, env.ln); sc.ord != 1 || sc.reads.InUse() != 0 {
		t.Fatalf("ORD %d, %d Read credits in use", sc.ord, sc.reads.InUse())
	}
}

// TestReadChunksPulledInline: calls whose read chunks fit the connection's free Read
// credits are pulled from the receive loop and handed up by the completion handler:
// such calls arrive whole, concurrently too, and a lone caller's never start a puller
// goroutine.
func TestReadChunksPulledInline(t *testing.T) {
	noTrace := func(bool, []byte) {}
	env := newTPEnv(t, &ServerOptions{ORD: 16, Trace: noTrace}, &ClientOptions{Trace: noTrace})
	ctx := tpCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8*20)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				var res tpPair
				err := env.rpc.Call(ctx, tpSum, tpMakePayloads(5000, 7, 9000+i), &res)
				if err == nil && res != (tpPair{3, uint32(14007 + i)}) {
					err = fmt.Errorf("sum %v", res)
				}
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Eight callers with three Reads each may find the 16 credits taken and go to
	// a puller; either way every credit comes back.
	if sc := onlyConn(t, env.ln); sc.reads.InUse() != 0 {
		t.Fatalf("%d Read credits in use", sc.reads.InUse())
	}

	// A lone caller's calls always find their credits free: no puller ever starts.
	env2 := newTPEnv(t, &ServerOptions{ORD: 16, Trace: noTrace}, &ClientOptions{Trace: noTrace})
	for i := 0; i < 50; i++ {
		var res tpPair
		if err := env2.rpc.Call(ctx, tpSum, tpMakePayloads(5000, 7, 9000+i), &res); err != nil {
			t.Fatal(err)
		}
		if res != (tpPair{3, uint32(14007 + i)}) {
			t.Fatalf("call %d: sum %v", i, res)
		}
	}
	sc2 := onlyConn(t, env2.ln)
	sc2.mu.Lock()
	pullers := sc2.pullers
	sc2.mu.Unlock()
	if pullers != 0 {
		t.Fatalf("%d puller goroutines started for calls whose Reads fit the free credits", pullers)
	}
	if sc2.reads.InUse() != 0 {
		t.Fatalf("%d Read credits in use", sc2.reads.InUse())
	}
}

// TestClientReceivesGrowWithCalls: a client connection starts with few receives and
// registers more before sending calls beyond them, so every call in flight has a
// receive posted for its reply: many calls at once all complete on the first
// connection (a reply finding no receive would have broken it).
func TestClientReceivesGrowWithCalls(t *testing.T) {
	// NULL runs inline where it arrives (newTPEnv), one call at a time, so calls never
	// pile up at the server; a do-nothing procedure run by workers lets them.
	const workerNull = tpSum
	env := newTPEnv(t, nil, nil, oncrpc.Procs{workerNull: func(context.Context, *oncrpc.Request, *xdr.Encoder) error { return nil }})
	ctx := tpCtx(t)
	conn := func() *clientConn {
		env.tr.mu.Lock()
		defer env.tr.mu.Unlock()
		return env.tr.cc
	}
	posted := func(cc *clientConn) int {
		cc.ep.bufMu.Lock()
		defer cc.ep.bufMu.Unlock()
		return cc.ep.nRecv
	}
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	first := conn()
	if n := posted(first); n != initialCallRecvs+clientExtraRecvs {
		t.Fatalf("%d receives after one call, want %d", n, initialCallRecvs+clientExtraRecvs)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := 0; g < 96; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				if err := env.rpc.CallWithOptions(ctx, workerNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d calls failed", failed.Load())
	}
	if conn() != first {
		t.Fatal("the connection was lost under load")
	}
	calls := int(first.callRecvs.Load())
	if got := posted(first); got != calls+clientExtraRecvs || calls <= initialCallRecvs {
		t.Fatalf("%d receives for %d calls after 96 callers", got, calls)
	}
}
