package oncrpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	cbProg   = 0x40000001 // the callback program the test client hosts
	cbVers   = 1
	cbProcCB = 1 // returns "cb:" + its argument
)

// callbackHandler serves cbProg: procedure cbProcCB answers "cb:"+arg; other programs
// get PROG_UNAVAIL. When gate is not nil each call first reports on entered and waits
// for gate to be closed.
func callbackHandler(entered chan<- struct{}, gate <-chan struct{}) Handler {
	return HandlerFunc(func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		if req.Header.Prog != cbProg || req.Header.Vers != cbVers {
			return &AcceptError{Stat: ProgUnavail}
		}
		if req.Header.Proc != cbProcCB {
			return ErrProcUnavail
		}
		arg, err := req.Args.Opaque(1024)
		if err != nil {
			return err
		}
		if entered != nil {
			entered <- struct{}{}
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		res.Opaque(append([]byte("cb:"), arg...))
		return nil
	})
}

// opaqueRes decodes an opaque result, copying it.
type opaqueRes struct{ b []byte }

func (r *opaqueRes) DecodeXDR(d *xdr.Decoder) error {
	b, err := d.Opaque(-1)
	r.b = append(r.b[:0], b...)
	return err
}

// reverseRelay is a forward handler: procEcho makes a reverse call to cbProcCB with its
// argument and answers with the callback's result. rts receives the RoundTripper.
type reverseRelay struct {
	cancelable atomic.Bool // the handler hands a cancel function for its reverse call to cancels
	cancels    chan context.CancelFunc
	rt         atomic.Value // RoundTripper
	errs       chan error   // the reverse calls' errors, when not nil
}

func (r *reverseRelay) handler() Procs {
	return Procs{procEcho: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		arg, err := req.Args.Opaque(1024)
		if err != nil {
			return err
		}
		bc, ok := req.Conn.(BackchannelConn)
		if !ok {
			return errors.New("connection has no back channel")
		}
		rt, err := bc.Backchannel()
		if err != nil {
			return err
		}
		r.rt.Store(rt)
		if r.cancelable.Load() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			r.cancels <- cancel
		}
		var out opaqueRes
		err = NewClient(rt, cbProg, cbVers).Call(ctx, cbProcCB, bytesArg(arg), &out)
		if r.errs != nil {
			r.errs <- err
		}
		if err != nil {
			// Not wrapped: a reverse reply's decoding error is not GARBAGE_ARGS.
			return fmt.Errorf("callback: %v", err)
		}
		res.Opaque(out.b)
		return nil
	}}
}

func (r *reverseRelay) stats(t *testing.T) TCPBackchannelStats {
	t.Helper()
	rt, _ := r.rt.Load().(*tcpBackchannel)
	if rt == nil {
		t.Fatal("no back channel was created")
	}
	return rt.Stats()
}

// A forward call whose handler calls back into the client: the reply carries the
// callback's result, and both sides count the reverse call.
func TestTCPBackchannelCallback(t *testing.T) {
	relay := &reverseRelay{}
	_, l := startTCPListener(t, nil, relay.handler())
	addr := l.Addr().String()
	tr := dialTCP(t, addr, &TCPOptions{Backchannel: &BackchannelOptions{Handler: callbackHandler(nil, nil)}})
	c := NewClient(tr, testProg, testVers)
	for i := range 3 {
		var out opaqueRes
		if err := c.Call(context.Background(), procEcho, bytesArg("hello"), &out); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if string(out.b) != "cb:hello" {
			t.Fatalf("call %d: result %q, want %q", i, out.b, "cb:hello")
		}
	}
	if st := tr.Stats(); st.ReverseCalls != 3 || st.ReverseDropped != 0 {
		t.Errorf("client stats %+v, want 3 reverse calls, none dropped", st)
	}
	if st := relay.stats(t); st.Calls != 3 || st.Replies != 3 || st.Unmatched != 0 {
		t.Errorf("server back channel stats %+v, want 3 calls and replies", st)
	}
	if st := l.BackchannelStats(); st.Calls != 3 || st.Replies != 3 || st.Unmatched != 0 {
		t.Errorf("listener back channel stats %+v, want 3 calls and replies", st)
	}
	// A program the client does not host is answered PROG_UNAVAIL by its handler.
	rt := relay.rt.Load().(RoundTripper)
	err := NewClient(rt, cbProg+1, cbVers).Call(context.Background(), cbProcCB, bytesArg("x"), nil)
	var ae *AcceptError
	if !errors.As(err, &ae) || ae.Stat != ProgUnavail {
		t.Fatalf("call to an unhosted program: %v, want PROG_UNAVAIL", err)
	}
}

// Many reverse calls in flight at once, up to the client's MaxRequests; one more is
// dropped (counted) and its RoundTrip ends with its context.
func TestTCPBackchannelConcurrency(t *testing.T) {
	const max = 6
	relay := &reverseRelay{errs: make(chan error, max+1)}
	_, addr := startTCPServer(t, nil, relay.handler())
	entered := make(chan struct{}, max)
	gate := make(chan struct{})
	tr := dialTCP(t, addr, &TCPOptions{Backchannel: &BackchannelOptions{Handler: callbackHandler(entered, gate), MaxRequests: max}})
	c := NewClient(tr, testProg, testVers)
	var wg sync.WaitGroup
	results := make(chan error, max)
	for range max {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out opaqueRes
			err := c.Call(context.Background(), procEcho, bytesArg("n"), &out)
			if err == nil && string(out.b) != "cb:n" {
				err = errors.New("wrong result " + string(out.b))
			}
			results <- err
		}()
	}
	for range max { // all max callbacks run at once
		<-entered
	}
	// One more is over the bound: the client drops it.
	ctx, cancel := context.WithCancel(context.Background())
	over := make(chan error, 1)
	go func() {
		over <- NewClient(relay.rt.Load().(RoundTripper), cbProg, cbVers).Call(ctx, cbProcCB, bytesArg("over"), nil)
	}()
	waitFor(t, "the reverse call over the bound to be dropped", func() bool { return tr.Stats().ReverseDropped == 1 })
	cancel()
	if err := <-over; !errors.Is(err, context.Canceled) {
		t.Fatalf("reverse call over the bound: %v, want context.Canceled", err)
	}
	close(gate)
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := tr.Stats(); st.ReverseCalls != max {
		t.Errorf("client stats %+v, want %d reverse calls", st, max)
	}
	if n := relay.rt.Load().(*tcpBackchannel).pending.Len(); n != 0 {
		t.Errorf("%d reverse calls still pending", n)
	}
}

// A client without a back channel handler drops reverse calls and counts them; the
// server's reverse call ends with its context.
func TestTCPBackchannelNoHandler(t *testing.T) {
	relay := &reverseRelay{cancels: make(chan context.CancelFunc, 1)}
	relay.cancelable.Store(true)
	_, addr := startTCPServer(t, nil, relay.handler())
	tr := dialTCP(t, addr, nil)
	c := NewClient(tr, testProg, testVers)
	fwd := make(chan error, 1)
	go func() { fwd <- c.Call(context.Background(), procEcho, bytesArg("x"), nil) }()
	cancel := <-relay.cancels
	waitFor(t, "the client to drop the reverse call", func() bool { return tr.Stats().ReverseDropped == 1 })
	cancel()
	err := <-fwd
	var ae *AcceptError
	if !errors.As(err, &ae) || ae.Stat != SystemErr {
		t.Fatalf("forward call: %v, want SYSTEM_ERR (the handler's reverse call was cancelled)", err)
	}
	if st := tr.Stats(); st.ReverseDropped != 1 || st.ReverseCalls != 0 {
		t.Errorf("client stats %+v, want one reverse call dropped", st)
	}
	if n := relay.rt.Load().(*tcpBackchannel).pending.Len(); n != 0 {
		t.Errorf("%d reverse calls still pending", n)
	}
}

// rawClient is a hand-driven TCP client: it sends records and reads them.
type rawClient struct {
	c  net.Conn
	rr *RecordReader
}

func dialRawRecords(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{c: c, rr: NewRecordReader(bufio.NewReader(c), 0)}
}

func (r *rawClient) send(t *testing.T, msg []byte) {
	t.Helper()
	if _, err := r.c.Write(writeRecord(&Message{Inline: msg}, 0)); err != nil {
		t.Fatal(err)
	}
}

func (r *rawClient) read(t *testing.T) []byte {
	t.Helper()
	rec, err := r.rr.ReadRecord(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// forwardCall returns an echo call with arg.
func forwardCall(xid uint32, arg string) []byte {
	h := CallHeader{XID: xid, Prog: testProg, Vers: testVers, Proc: procEcho}
	return xdr.AppendOpaque(h.Append(nil), []byte(arg))
}

// A hostile client answers reverse calls with garbage or not at all: replies with
// unknown XIDs are counted and dropped, a malformed reply fails the reverse call with a
// decoding error, a reverse call never answered ends with its context, and closing the
// connection fails the ones outstanding; nothing stays pending.
func TestTCPBackchannelHostileClient(t *testing.T) {
	relay := &reverseRelay{errs: make(chan error, 4), cancels: make(chan context.CancelFunc, 1)}
	_, addr := startTCPServer(t, nil, relay.handler())
	rc := dialRawRecords(t, addr)

	// 1: a reply to an unknown XID, then a malformed reply to the right one.
	rc.send(t, forwardCall(1, "a"))
	call := rc.read(t)
	var hdr CallHeader
	if err := hdr.DecodeXDR(xdr.NewDecoder(call)); err != nil || hdr.Prog != cbProg || hdr.Proc != cbProcCB {
		t.Fatalf("reverse call %+v: %v", hdr, err)
	}
	rc.send(t, (&ReplyHeader{XID: hdr.XID + 1, Verf: noneVerf}).Append(nil))
	rc.send(t, []byte{byte(hdr.XID >> 24), byte(hdr.XID >> 16), byte(hdr.XID >> 8), byte(hdr.XID), 0, 0, 0, 1, 0, 0})
	var he *HeaderError
	if err := <-relay.errs; !errors.As(err, &he) {
		t.Fatalf("reverse call answered with garbage: %v, want a *HeaderError", err)
	}
	fwd := rc.read(t) // the forward call's reply: SYSTEM_ERR
	var rh ReplyHeader
	if err := rh.DecodeXDR(xdr.NewDecoder(fwd)); err != nil || rh.XID != 1 || rh.AcceptStat != SystemErr {
		t.Fatalf("forward reply %+v: %v", rh, err)
	}
	if st := relay.stats(t); st.Unmatched != 1 || st.Replies != 1 {
		t.Errorf("stats %+v, want one unmatched reply and one matched", st)
	}

	// 2: a reverse call never answered ends with its context.
	relay.cancelable.Store(true)
	rc.send(t, forwardCall(2, "b"))
	rc.read(t) // the reverse call, ignored
	(<-relay.cancels)()
	if err := <-relay.errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("unanswered reverse call: %v, want Canceled", err)
	}
	rc.read(t) // the forward reply

	// 3: closing the connection ends the reverse call outstanding (the Server
	// cancels the handler's context as the connection fails, and closing it fails
	// the reverse calls still pending).
	relay.cancelable.Store(false)
	rc.send(t, forwardCall(3, "c"))
	rc.read(t)
	rc.c.Close()
	if err := <-relay.errs; !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("reverse call on a closed connection: %v, want ErrClosed or Canceled", err)
	}
	waitFor(t, "the server to close the connection", func() bool { return relay.rt.Load().(*tcpBackchannel).sc.closed.Load() })
	if n := relay.rt.Load().(*tcpBackchannel).pending.Len(); n != 0 {
		t.Errorf("%d reverse calls still pending", n)
	}
	// Later reverse calls fail at once.
	if err := relay.rt.Load().(RoundTripper).RoundTrip(context.Background(), &ClientCall{XID: 9}, &ClientReply{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("reverse call after the connection closed: %v, want ErrClosed", err)
	}
}

// waitFor polls cond (the events it waits for happen on other goroutines and leave no
// other trace).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A connection lost while the client serves a reverse call: the client reconnects and
// retransmits the forward call, which calls back again on the new connection; the
// reply to the first reverse call, which belongs to the lost connection, is not sent
// on the new one.
func TestTCPBackchannelConnectionLoss(t *testing.T) {
	relay := &reverseRelay{errs: make(chan error, 2)}
	_, addr := startTCPServer(t, nil, relay.handler())
	entered := make(chan struct{}, 2)
	gate := make(chan struct{})
	tr := dialTCP(t, addr, &TCPOptions{Backchannel: &BackchannelOptions{Handler: callbackHandler(entered, gate)}})
	c := NewClient(tr, testProg, testVers)
	fwd := make(chan error, 1)
	go func() {
		var out opaqueRes
		err := c.Call(context.Background(), procEcho, bytesArg("again"), &out)
		if err == nil && string(out.b) != "cb:again" {
			err = fmt.Errorf("result %q", out.b)
		}
		fwd <- err
	}()
	<-entered
	first := relay.rt.Load().(*tcpBackchannel)
	first.sc.Close() // the server drops the connection while the callback runs
	if err := <-relay.errs; !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("reverse call on the lost connection: %v, want ErrClosed or Canceled", err)
	}
	<-entered // the retransmitted call calls back on the new connection
	close(gate)
	if err := <-fwd; err != nil {
		t.Fatal(err)
	}
	if err := <-relay.errs; err != nil {
		t.Fatalf("reverse call on the new connection: %v", err)
	}
	second := relay.rt.Load().(*tcpBackchannel)
	if second == first {
		t.Fatal("no new connection")
	}
	// One reply reached the new connection's back channel, none was unmatched there.
	waitFor(t, "the reply on the new connection", func() bool { return second.Stats().Replies == 1 })
	if st := second.Stats(); st.Unmatched != 0 {
		t.Errorf("new connection's back channel stats %+v: the old reply leaked onto it", st)
	}
	if st := tr.Stats(); st.ReverseCalls != 2 || st.Reconnects != 1 {
		t.Errorf("client stats %+v, want 2 reverse calls and a reconnection", st)
	}
}
