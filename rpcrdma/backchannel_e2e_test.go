package rpcrdma

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	tpCallback = 20         // args: opaque; makes a reverse call to bcProcCB with it and returns its result
	bcProg     = 0x40000001 // the callback program the test client hosts
	bcVers     = 1
	bcProcCB   = 1 // args: opaque; results: opaque "cb:" + args
)

// bcHandler serves bcProg for a client: bcProcCB answers "cb:"+arg (or, when big > 0, an
// opaque of big bytes). When gate is not nil each call reports on entered, then waits
// for gate; inflight tracks the calls running and peak the most at once.
type bcHandler struct {
	entered  chan struct{}
	gate     chan struct{}
	big      int
	inflight atomic.Int32
	peak     atomic.Int32
}

func (b *bcHandler) ServeRPC(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	if req.Header.Prog != bcProg || req.Header.Vers != bcVers {
		return &oncrpc.AcceptError{Stat: oncrpc.ProgUnavail}
	}
	if req.Header.Proc != bcProcCB {
		return oncrpc.ErrProcUnavail
	}
	arg, err := req.Args.Opaque(4096)
	if err != nil {
		return err
	}
	n := b.inflight.Add(1)
	defer b.inflight.Add(-1)
	for {
		p := b.peak.Load()
		if n <= p || b.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if b.entered != nil {
		b.entered <- struct{}{}
	}
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if b.big > 0 {
		res.Opaque(make([]byte, b.big))
		return nil
	}
	res.Opaque(append([]byte("cb:"), arg...))
	return nil
}

// bcOpaque decodes an opaque result, copying it.
type bcOpaque struct{ b []byte }

func (r *bcOpaque) DecodeXDR(d *xdr.Decoder) error {
	b, err := d.Opaque(-1)
	r.b = append(r.b[:0], b...)
	return err
}

// bcRelay is the server's tpCallback procedure: it calls back into the client over
// the connection's back channel and answers with the callback's result.
type bcRelay struct {
	cancelable atomic.Bool // the handler hands a cancel function for its reverse call to cancels
	cancels    chan context.CancelFunc
	rt         atomic.Pointer[serverBackchannel]
	errs       chan error // the reverse calls' outcomes, when not nil
}

func (r *bcRelay) procs() oncrpc.Procs {
	return oncrpc.Procs{tpCallback: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		arg, err := req.Args.Opaque(-1)
		if err != nil {
			return err
		}
		bc, ok := req.Conn.(oncrpc.BackchannelConn)
		if !ok {
			return errors.New("no back channel")
		}
		rt, err := bc.Backchannel()
		if err != nil {
			return err
		}
		r.rt.Store(rt.(*serverBackchannel))
		if r.cancelable.Load() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			r.cancels <- cancel
		}
		var out bcOpaque
		err = oncrpc.NewClient(rt, bcProg, bcVers).Call(ctx, bcProcCB, tpOpaque(arg), &out)
		if r.errs != nil {
			r.errs <- err
		}
		if err != nil {
			return fmt.Errorf("callback: %v", err) // not wrapped: never GARBAGE_ARGS
		}
		res.Opaque(out.b)
		return nil
	}}
}

// callback makes a forward tpCallback call with arg and returns its result.
func callback(ctx context.Context, c *oncrpc.Client, arg string) (string, error) {
	var out bcOpaque
	err := c.Call(ctx, tpCallback, tpOpaque(arg), &out)
	return string(out.b), err
}

// reverseHeaders returns the transport headers of the reverse-direction messages in
// msgs with msg_type mt.
func reverseHeaders(t *testing.T, tr *tpTrace, sent bool, mt oncrpc.MsgType) []Header {
	t.Helper()
	tr.mu.Lock()
	src := tr.recv
	if sent {
		src = tr.sent
	}
	var msgs [][]byte
	for _, m := range src {
		if _, got, ok := reverseMessage(m); ok && got == mt {
			msgs = append(msgs, m)
		}
	}
	tr.mu.Unlock()
	var hs []Header
	for _, m := range msgs {
		var h Header
		if _, err := h.Decode(m); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return hs
}

// The server's handler calls back into the client during a forward call; the forward
// reply carries the callback's result. On the wire the reverse call and reply are
// RDMA_MSG without chunks, the call requesting the server's reverse credits and the
// reply granting the client's.
func TestBackchannelCallback(t *testing.T) {
	relay := &bcRelay{}
	h := &bcHandler{}
	env := newTPEnv(t, nil, &ClientOptions{Backchannel: &oncrpc.BackchannelOptions{Handler: h, MaxRequests: 5}}, relay.procs())
	ctx := tpCtx(t)
	for i := range 3 {
		got, err := callback(ctx, env.rpc, fmt.Sprint("hello ", i))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint("cb:hello ", i); got != want {
			t.Fatalf("result %q, want %q", got, want)
		}
	}
	if st := env.ln.Stats(); st.ReverseCalls != 3 || st.ReverseReplies != 3 || st.ReverseUnmatched != 0 {
		t.Errorf("server stats: %d reverse calls, %d replies, %d unmatched; want 3, 3, 0", st.ReverseCalls, st.ReverseReplies, st.ReverseUnmatched)
	}
	if st := env.tr.Stats(); st.ReverseCalls != 3 || st.ReverseDropped != 0 {
		t.Errorf("client stats %+v, want 3 reverse calls", st)
	}
	calls := reverseHeaders(t, env.strace, true, oncrpc.Call)
	replies := reverseHeaders(t, env.ctrace, true, oncrpc.Reply)
	if len(calls) != 3 || len(replies) != 3 {
		t.Fatalf("%d reverse calls and %d replies on the wire, want 3 each", len(calls), len(replies))
	}
	for i := range calls {
		if c := calls[i]; c.Proc != ProcMsg || c.HasChunks() || c.Credits != DefaultBackchannelCredits {
			t.Errorf("reverse call header %+v: want RDMA_MSG without chunks requesting %d credits", c, DefaultBackchannelCredits)
		}
		if r := replies[i]; r.Proc != ProcMsg || r.HasChunks() || r.Credits != 5 {
			t.Errorf("reverse reply header %+v: want RDMA_MSG without chunks granting 5 credits", r)
		}
	}
	// A program the client does not host is answered PROG_UNAVAIL by its handler.
	err := oncrpc.NewClient(relay.rt.Load(), bcProg+1, bcVers).Call(ctx, bcProcCB, tpOpaque("x"), nil)
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProgUnavail {
		t.Fatalf("call to an unhosted program: %v, want PROG_UNAVAIL", err)
	}
}

// Many reverse calls at once: the server keeps at most what the client grants in
// flight (here fewer than the server would take), and the client, which keeps that
// many receives posted, never has to drop one.
func TestBackchannelConcurrency(t *testing.T) {
	const grant, calls = 3, 12
	relay := &bcRelay{}
	h := &bcHandler{entered: make(chan struct{}, calls), gate: make(chan struct{})}
	env := newTPEnv(t, &ServerOptions{BackchannelCredits: 8}, &ClientOptions{Backchannel: &oncrpc.BackchannelOptions{Handler: h, MaxRequests: grant}}, relay.procs())
	ctx := tpCtx(t)
	// A first callback brings the client's grant (the server starts with one credit).
	done := make(chan error, calls+1)
	go func() {
		_, err := callback(ctx, env.rpc, "first")
		done <- err
	}()
	<-h.entered
	h.gate <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Reverse calls straight from the server, so that forward credits play no part.
	rt := relay.rt.Load()
	for i := range calls {
		go func() {
			var out bcOpaque
			err := oncrpc.NewClient(rt, bcProg, bcVers).Call(ctx, bcProcCB, tpOpaque(fmt.Sprint(i)), &out)
			if err == nil && string(out.b) != fmt.Sprint("cb:", i) {
				err = fmt.Errorf("call %d: result %q", i, out.b)
			}
			done <- err
		}()
	}
	for range grant { // the grant's worth run at once
		<-h.entered
	}
	waitFor(t, "the granted reverse credits to be in use", func() bool { return rt.window.InUse() == grant })
	if p := h.peak.Load(); p != grant {
		t.Errorf("%d reverse calls ran at once, want %d", p, grant)
	}
	close(h.gate)
	for range calls {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if p := h.peak.Load(); p > grant {
		t.Errorf("%d reverse calls ran at once, more than the %d granted", p, grant)
	}
	if st := env.tr.Stats(); st.ReverseCalls != calls+1 || st.ReverseDropped != 0 {
		t.Errorf("client stats %+v, want %d reverse calls and none dropped", st, calls+1)
	}
	if n := relay.rt.Load().pendingReverse(); n != 0 {
		t.Errorf("%d reverse calls still pending", n)
	}
}

// A client without a callback handler drops reverse calls (counted); the server's
// reverse call ends with its context.
func TestBackchannelNoHandler(t *testing.T) {
	relay := &bcRelay{cancels: make(chan context.CancelFunc, 1)}
	relay.cancelable.Store(true)
	env := newTPEnv(t, nil, nil, relay.procs())
	ctx := tpCtx(t)
	fwd := make(chan error, 1)
	go func() {
		_, err := callback(ctx, env.rpc, "x")
		fwd <- err
	}()
	cancel := <-relay.cancels
	waitFor(t, "the client to drop the reverse call", func() bool { return env.tr.Stats().ReverseDropped == 1 })
	cancel()
	err := <-fwd
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.SystemErr {
		t.Fatalf("forward call: %v, want SYSTEM_ERR (its reverse call was cancelled)", err)
	}
	if st := env.tr.Stats(); st.ReverseDropped != 1 || st.ReverseCalls != 0 {
		t.Errorf("client stats %+v, want one reverse call dropped", st)
	}
	// The forward direction is unaffected.
	if err := env.rpc.Call(ctx, tpNull, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// Reverse messages over the inline threshold: a call is refused before it is sent
// (ErrReverseTooLarge), and a client whose reply does not fit answers SYSTEM_ERR.
func TestBackchannelInlineThreshold(t *testing.T) {
	relay := &bcRelay{errs: make(chan error, 2)}
	h := &bcHandler{}
	env := newTPEnv(t, nil, &ClientOptions{Backchannel: &oncrpc.BackchannelOptions{Handler: h}}, relay.procs())
	ctx := tpCtx(t)
	big := strings.Repeat("x", 2*DefaultInline) // as a forward call it goes in a read chunk
	if _, err := callback(ctx, env.rpc, big); err == nil {
		t.Fatal("forward call succeeded although its reverse call cannot be sent")
	}
	if err := <-relay.errs; !errors.Is(err, ErrReverseTooLarge) {
		t.Fatalf("reverse call over the inline threshold: %v, want ErrReverseTooLarge", err)
	}
	if st := env.ln.Stats(); st.ReverseCalls != 0 {
		t.Errorf("%d reverse calls sent, want 0", st.ReverseCalls)
	}

	h.big = 2 * DefaultInline
	_, err := callback(ctx, env.rpc, "y")
	var ae *oncrpc.AcceptError
	if rerr := <-relay.errs; !errors.As(rerr, &ae) || ae.Stat != oncrpc.SystemErr {
		t.Fatalf("reverse call whose reply is over the inline threshold: %v, want SYSTEM_ERR", rerr)
	}
	if err == nil {
		t.Fatal("forward call succeeded although its callback failed")
	}
	if st := env.tr.Stats(); st.ReverseTooLarge != 1 {
		t.Errorf("client stats %+v, want one reply too large", st)
	}
}

// reverseReply returns a reverse-direction reply message: transport header granting
// credit, then rpc.
func reverseReply(xid, credit uint32, rpc []byte) []byte {
	return append(appendReverseHeader(nil, xid, credit), rpc...)
}

// tpCallbackCall returns an RDMA_MSG forward call of tpCallback with arg.
func tpCallbackCall(t *testing.T, xid uint32, arg string) []byte {
	t.Helper()
	h := Header{XID: xid, Vers: Version1, Credits: 8, Proc: ProcMsg}
	b, err := h.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, rpcCall(xid, tpCallback)...)
	return xdr.AppendOpaque(b, []byte(arg))
}

// A hostile client answers reverse calls with garbage, late or not at all: a reply to
// an unknown XID is counted, a malformed reply fails the reverse call, an unanswered
// one ends with its context and keeps its credit until its late reply, and closing the
// connection leaves nothing pending.
func TestBackchannelHostileClient(t *testing.T) {
	relay := &bcRelay{errs: make(chan error, 4), cancels: make(chan context.CancelFunc, 1)}
	env := newTPEnv(t, nil, nil, relay.procs())
	p := dialRaw(t, env.ln.Addr().String(), ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil))

	// recvReverse receives the next message, a reverse call, and returns its XID.
	recvReverse := func() uint32 {
		t.Helper()
		msg, _ := p.recv(t)
		body, mt, ok := reverseMessage(msg)
		var ch oncrpc.CallHeader
		if !ok || mt != oncrpc.Call {
			t.Fatalf("received % x, want a reverse call", msg)
		}
		if err := ch.DecodeXDR(xdr.NewDecoder(body)); err != nil || ch.Prog != bcProg || ch.Proc != bcProcCB {
			t.Fatalf("reverse call %+v: %v", ch, err)
		}
		return ch.XID
	}
	// recvForward receives the next message, the reply to forward call xid, which the
	// client waits for before its next call (it has the credit for one call at a time).
	recvForward := func(xid uint32) {
		t.Helper()
		msg, _ := p.recv(t)
		var h Header
		if _, err := h.Decode(msg); err != nil || h.XID != xid || h.Proc != ProcMsg {
			t.Fatalf("received %+v (%v), want the reply to forward call %d", h, err, xid)
		}
	}

	// 1: a reply to an unknown XID, then a malformed one to the right XID.
	p.send(t, tpCallbackCall(t, 1, "a"))
	xid := recvReverse()
	// A new back channel has one credit (RFC 8166 §3.3.3), in use now.
	if w := relay.rt.Load().window; w.Granted() != 1 || w.InUse() != 1 {
		t.Fatalf("reverse window: %d granted, %d in use; want 1 and 1", w.Granted(), w.InUse())
	}
	p.send(t, reverseReply(xid+1, 1, rpcReply(xid+1)))
	garbage := binary.BigEndian.AppendUint32(nil, xid)
	garbage = append(garbage, 0, 0, 0, 1, 0, 0, 0, 7) // REPLY, reply_stat 7
	p.send(t, reverseReply(xid, 1, garbage))
	var he *oncrpc.HeaderError
	if err := <-relay.errs; !errors.As(err, &he) {
		t.Fatalf("reverse call answered with garbage: %v, want a *HeaderError", err)
	}
	recvForward(1)

	// 2: no answer: the reverse call ends with its context (cancelled); the late reply frees its
	// credit (the window holds one), so the next reverse call goes out.
	relay.cancelable.Store(true)
	p.send(t, tpCallbackCall(t, 2, "b"))
	late := recvReverse()
	(<-relay.cancels)()
	if err := <-relay.errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("unanswered reverse call: %v, want Canceled", err)
	}
	recvForward(2)
	if n := relay.rt.Load().pendingReverse(); n != 1 {
		t.Fatalf("%d reverse calls pending, want the orphan", n)
	}
	p.send(t, reverseReply(late, 0, rpcReply(late))) // a grant of 0 counts as 1
	waitFor(t, "the late reply to free its credit", func() bool { return relay.rt.Load().window.InUse() == 0 })
	if g := relay.rt.Load().window.Granted(); g != 1 {
		t.Fatalf("reverse window after a grant of 0: %d, want 1", g)
	}
	relay.cancelable.Store(false)
	p.send(t, tpCallbackCall(t, 3, "c"))
	xid = recvReverse()
	p.send(t, reverseReply(xid, 100, rpcReply(xid))) // capped at BackchannelCredits
	if err := <-relay.errs; err == nil || !strings.Contains(err.Error(), "decoding results") {
		// rpcReply carries no results; the relay's decoder wants an opaque.
		t.Fatalf("reverse call answered without results: %v, want a results decoding error", err)
	}
	recvForward(3)
	if g := relay.rt.Load().window.Granted(); g != DefaultBackchannelCredits {
		t.Fatalf("reverse window after a grant of 100: %d, want %d", g, DefaultBackchannelCredits)
	}
	if st := env.ln.Stats(); st.ReverseUnmatched != 2 || st.ReverseReplies != 2 {
		t.Errorf("server stats: %d replies, %d unmatched; want 2 and 2", st.ReverseReplies, st.ReverseUnmatched)
	}

	// 3: the connection closes with a reverse call outstanding.
	p.send(t, tpCallbackCall(t, 4, "d"))
	recvReverse()
	p.qp.Close()
	if err := <-relay.errs; !errors.Is(err, oncrpc.ErrClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("reverse call on a closed connection: %v, want ErrClosed or Canceled", err)
	}
	bc := relay.rt.Load()
	// Closing fails every reverse call, orphans included (the handler's context may
	// end first, when reading from the connection fails).
	waitFor(t, "the closed connection to leave no reverse call pending", func() bool { return bc.pendingReverse() == 0 })
	if _, err := bc.sc.Backchannel(); err != nil {
		t.Fatalf("Backchannel after close: %v (want the closed one)", err)
	}
	if err := bc.RoundTrip(context.Background(), &oncrpc.ClientCall{XID: 9}, &oncrpc.ClientReply{}); !errors.Is(err, oncrpc.ErrClosed) {
		t.Fatalf("reverse call after close: %v, want ErrClosed", err)
	}
}

// A server that sends more reverse calls than the client grants: the client drops the
// excess (counted) and answers the rest, granting MaxRequests.
func TestBackchannelServerOverrun(t *testing.T) {
	h := &bcHandler{entered: make(chan struct{}, 4), gate: make(chan struct{})}
	addr, accept := listenRaw(t, ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil))
	ctx := tpCtx(t)
	cl, err := Dial(ctx, soft.New(soft.Config{}), addr, &ClientOptions{Backchannel: &oncrpc.BackchannelOptions{Handler: h, MaxRequests: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	p := accept()
	// A forward call first, as a server calls back only once a client has called.
	fwd := make(chan error, 1)
	go func() {
		fwd <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 7, Msg: oncrpc.Message{Inline: rpcCall(7, tpNull)}}, &oncrpc.ClientReply{})
	}()
	p.recvHeader(t)
	p.send(t, reverseReply(7, 4, rpcReply(7))) // a forward reply has the same form
	if err := <-fwd; err != nil {
		t.Fatal(err)
	}
	for xid := uint32(100); xid < 103; xid++ {
		var e xdr.Encoder
		(&oncrpc.CallHeader{XID: xid, Prog: bcProg, Vers: bcVers, Proc: bcProcCB}).EncodeXDR(&e)
		e.Opaque([]byte("z"))
		p.send(t, append(appendReverseHeader(nil, xid, 2), e.Bytes()...))
	}
	<-h.entered
	<-h.entered
	waitFor(t, "the third reverse call to be dropped", func() bool { return cl.Stats().ReverseDropped == 1 })
	close(h.gate)
	for range 2 {
		hdr, body := p.recvHeader(t)
		var rh oncrpc.ReplyHeader
		if err := rh.DecodeXDR(xdr.NewDecoder(body)); err != nil || rh.AcceptStat != oncrpc.Success {
			t.Fatalf("reverse reply %+v: %v", rh, err)
		}
		if hdr.Proc != ProcMsg || hdr.HasChunks() || hdr.Credits != 2 || hdr.XID != rh.XID {
			t.Fatalf("reverse reply header %+v: want RDMA_MSG granting 2, xid %#x", hdr, rh.XID)
		}
	}
	if st := cl.Stats(); st.ReverseCalls != 2 {
		t.Errorf("client stats %+v, want 2 reverse calls served", st)
	}
}

// A connection lost while the client serves a reverse call: the server's reverse call
// fails, the client's forward call is retransmitted on a new connection and calls back
// again there, and the reply to the first reverse call, which belongs to the lost
// connection, is dropped.
func TestBackchannelConnectionLoss(t *testing.T) {
	relay := &bcRelay{errs: make(chan error, 2)}
	h := &bcHandler{entered: make(chan struct{}, 2), gate: make(chan struct{})}
	env := newTPEnv(t, nil, &ClientOptions{Backchannel: &oncrpc.BackchannelOptions{Handler: h}}, relay.procs())
	ctx := tpCtx(t)
	fwd := make(chan error, 1)
	go func() {
		got, err := callback(ctx, env.rpc, "again")
		if err == nil && got != "cb:again" {
			err = fmt.Errorf("result %q", got)
		}
		fwd <- err
	}()
	<-h.entered
	env.tr.mu.Lock()
	old := env.tr.cc
	env.tr.mu.Unlock()
	old.ep.qp.Close() // the connection breaks while the callback runs
	if err := <-relay.errs; !errors.Is(err, oncrpc.ErrClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("reverse call on the lost connection: %v, want ErrClosed or Canceled", err)
	}
	<-h.entered // the retransmitted forward call calls back on the new connection
	close(h.gate)
	if err := <-fwd; err != nil {
		t.Fatal(err)
	}
	if err := <-relay.errs; err != nil {
		t.Fatalf("reverse call on the new connection: %v", err)
	}
	if st := env.tr.Stats(); st.ReverseCalls != 2 || st.ReverseDropped != 0 {
		t.Errorf("client stats %+v, want 2 reverse calls", st)
	}
	waitFor(t, "both callbacks to finish", func() bool { return h.inflight.Load() == 0 })
}
