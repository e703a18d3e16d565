// Package verbstest is the conformance suite of the verbs API: one set of
// tests that every provider (verbs/soft, verbs/ibverbs over rxe or siw, ...)
// runs unchanged. A provider's test file calls Run with a Provider that
// says how to open devices and which address to listen on:
//
//	func TestConformance(t *testing.T) {
//		verbstest.Run(t, verbstest.Provider{
//			Open:       func(t testing.TB) verbs.Device { return soft.New(soft.Config{}) },
//			ListenAddr: "127.0.0.1:0",
//		})
//	}
//
// It covers Send/Recv (receives posted before the connection, scatter over
// several SGEs), RDMA Write (gather) and RDMA Read at sizes from 0 bytes to
// over 1 MiB, local invalidation and re-registration (the old STag is
// refused, the new one works), Send with Invalidate, private data in
// request, reply and reject, IRD/ORD, flush of outstanding work when the
// peer goes away and on Close, posting errors, many queue pairs at once,
// CQ.Wait's context and Close, CQ overrun, and CQs with a
// completion handler (a ping-pong driven from the handlers, which repost and
// send from inside them; flushes delivered exactly once; none after CQ.Close).
// and chains of send requests (SendWR.Next) posted in order, all or none. A test that cannot run on a provider skips with the reason the
// Provider gives.
//
// The suite waits for completions with generous timeouts (slow emulated
// machines) and makes no timing assertions.
package verbstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// Provider describes the provider under test.
type Provider struct {
	// Open returns a device. It is called once per endpoint, so a test
	// pair may use two devices (or the same one, if Open returns it twice).
	// Open registers its own cleanup (t.Cleanup) if the device needs it.
	Open func(t testing.TB) verbs.Device
	// ListenAddr is where servers listen, e.g. "127.0.0.1:0" or
	// "10.0.2.15:0".
	ListenAddr string
	// DialAddr, if set, maps a listener's address to the address to dial.
	DialAddr func(listen net.Addr) string
	// Timeout bounds each wait for a completion or connection (default
	// 30 s).
	Timeout time.Duration

	// NoSolicitedFlag, when set, is why receive completions cannot report
	// verbs.SolicitedEvent (ibv_wc has no such flag).
	NoSolicitedFlag string
	// NoRemoteInvalidate, when set, is why Send with Invalidate of a
	// registered region cannot be tested.
	NoRemoteInvalidate string
	// PrivateDataPadded: received private data may be followed by zero
	// padding (the InfiniBand CM's fixed-size fields).
	PrivateDataPadded bool
	// MaxConnectPrivateData is the most private data a connection request
	// carries (default verbs.MaxPrivateData).
	MaxConnectPrivateData int
	// OverrunKeepsQP: a receive CQ that overruns leaves its QP up (soft), so
	// an RDMA Read posted behind Sends is still answered, once the responder
	// has handled every Send before it. CQOverrun then waits for such a Read
	// before it polls. Kernel providers (siw, rxe) fail the QP instead, and
	// the Read is flushed or retried until the connection times out.
	OverrunKeepsQP bool
	// NoDirectWaits, when set, is why ProcessDirect of a QP that implements
	// verbs.DirectProcessor may return without waiting for a completion
	// (ibverbs with CQ polling off): DirectProcessor then checks the
	// contract, not that waits end inside ProcessDirect.
	NoDirectWaits string
	// DirectWaitsBounded, when set, is why ProcessDirect waits for a
	// completion only for a while (ibverbs polls the CQ for Config.CQPoll,
	// shorter than a round trip under emulation): DirectProcessor then
	// requires some wait of the whole subtest, not of each of its parts, to
	// end inside ProcessDirect.
	DirectWaitsBounded string
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, p Provider) {
	if p.Open == nil || p.ListenAddr == "" {
		t.Fatal("verbstest: Provider.Open and Provider.ListenAddr are required")
	}
	if p.Timeout == 0 {
		p.Timeout = 30 * time.Second
	}
	if p.MaxConnectPrivateData == 0 {
		p.MaxConnectPrivateData = verbs.MaxPrivateData
	}
	s := &suite{p: p}
	t.Run("SendRecv", s.testSendRecv)
	t.Run("TransferSizes", s.testTransferSizes)
	t.Run("ReadAfterWrite", s.testReadAfterWrite)
	t.Run("Invalidate", s.testInvalidate)
	t.Run("Reregister", s.testReregister)
	t.Run("SendWithInvalidate", s.testSendWithInvalidate)
	t.Run("PrivateData", s.testPrivateData)
	t.Run("Reject", s.testReject)
	t.Run("FlushOnPeerClose", s.testFlushOnPeerClose)
	t.Run("FlushOnClose", s.testFlushOnClose)
	t.Run("PostErrors", s.testPostErrors)
	t.Run("ManyQPs", s.testManyQPs)
	t.Run("BatchOfSends", s.testBatchOfSends)
	t.Run("UnsignaledSends", s.testUnsignaledSends)
	t.Run("CQWait", s.testCQWait)
	t.Run("CQOverrun", s.testCQOverrun)
	t.Run("HandlerPingPong", s.testHandlerPingPong)
	t.Run("HandlerFlush", s.testHandlerFlush)
	t.Run("SendChain", s.testSendChain)
	t.Run("DirectProcessor", s.testDirectProcessor)
}

// testCQOverrun: more completions than a CQ holds make it fail with
// *verbs.CQOverrunError, after the completions it did hold.
func (s *suite) testCQOverrun(t *testing.T) {
	const msgs = 32
	ctx, cancel := context.WithTimeout(context.Background(), s.p.Timeout)
	defer cancel()
	sdev, cdev := s.p.Open(t), s.p.Open(t)
	ln, err := sdev.Listen(ctx, s.p.ListenAddr)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	pd, err := sdev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	small, err := sdev.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: small, RecvCQ: small, MaxSendWR: 4, MaxRecvWR: msgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qp.Close(); small.Close(); pd.Close() })
	for i := 0; i < msgs; i++ {
		if err := qp.PostRecv(&verbs.RecvWR{ID: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The client's RDMA Read of fence, posted after the Sends, completes
	// only once the responder has handled every Send before it.
	fence, err := pd.RegMR(make([]byte, 1), verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fence.Close() })
	errc := make(chan error, 1)
	go func() {
		cr, err := ln.Accept(ctx)
		if err == nil {
			_, err = cr.Accept(ctx, qp, verbs.ConnParams{})
		}
		errc <- err
	}()
	cli := s.newEndpoint(t, cdev, msgs+1)
	sink := cli.reg(t, make([]byte, 1), verbs.AccessLocalWrite)
	if _, err := cdev.Dial(ctx, s.dialAddr(ln), cli.qp, verbs.ConnParams{}); err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	for i := 0; i < msgs; i++ {
		cli.send(t, verbs.SendWR{ID: uint64(i), Op: verbs.OpSend})
	}
	// Poll only after all 32 Sends have arrived, so the depth-4 CQ has
	// certainly overrun (a poller keeping pace with arrivals would drain it
	// in time and the overrun would never come): where the QP survives the
	// overrun, a fence Read tells when (see Provider.OverrunKeepsQP); where it
	// does not, the kernel fills the CQ without waiting for this poller.
	if s.p.OverrunKeepsQP {
		cli.send(t, verbs.SendWR{ID: msgs, Op: verbs.OpRead, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: sink, Length: 1}}, RemoteSTag: fence.RKey(), RemoteTO: fence.Addr()})
		cli.expect(t, msgs, verbs.OpcodeRead, verbs.StatusSuccess)
	}
	got := 0
	var wc [8]verbs.Completion
	for {
		n, err := small.Poll(wc[:])
		got += n
		if err == nil && n == 0 {
			err = small.Wait(ctx)
		}
		if err != nil {
			var oe *verbs.CQOverrunError
			if !errors.As(err, &oe) {
				t.Fatalf("after %d completions: %v, want *verbs.CQOverrunError", got, err)
			}
			if got >= msgs {
				t.Fatalf("%d completions delivered by a CQ of depth 4 before the overrun", got)
			}
			return
		}
	}
}

// testUnsignaledSends: a send queue of unsignalled Sends drains although
// the caller never polls its send CQ, and the CQ delivers no completion for
// them.
func (s *suite) testUnsignaledSends(t *testing.T) {
	const msgs, depth = 40, 4
	ctx, cancel := context.WithTimeout(context.Background(), s.p.Timeout)
	defer cancel()
	sdev, cdev := s.p.Open(t), s.p.Open(t)
	ln, err := sdev.Listen(ctx, s.p.ListenAddr)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	srv := s.newEndpoint(t, sdev, msgs)
	buf := make([]byte, msgs)
	rmr := srv.reg(t, buf, verbs.AccessLocalWrite)
	for i := 0; i < msgs; i++ {
		srv.recv(t, uint64(i), verbs.SGE{MR: rmr, Offset: i, Length: 1})
	}
	pd, err := cdev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	scq, err := cdev.CreateCQ(4 * depth)
	if err != nil {
		t.Fatal(err)
	}
	rcq, err := cdev.CreateCQ(4 * depth)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: scq, RecvCQ: rcq, MaxSendWR: depth, MaxRecvWR: depth})
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, msgs)
	fill(src, 3)
	smr, err := pd.RegMR(src, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { smr.Close(); qp.Close(); scq.Close(); rcq.Close(); pd.Close() })
	errc := make(chan error, 1)
	go func() {
		cr, err := ln.Accept(ctx)
		if err == nil {
			_, err = cr.Accept(ctx, srv.qp, verbs.ConnParams{})
		}
		errc <- err
	}()
	if _, err := cdev.Dial(ctx, s.dialAddr(ln), qp, verbs.ConnParams{}); err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	for i := 0; i < msgs; i++ {
		wr := verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Offset: i, Length: 1}}}
		for {
			err := qp.PostSend(&wr)
			if err == nil {
				break
			}
			if !errors.Is(err, verbs.ErrQueueFull) || ctx.Err() != nil {
				t.Fatalf("PostSend %d (send CQ never polled): %v", i, err)
			}
			time.Sleep(time.Millisecond) // earlier Sends are still in flight
		}
	}
	for i := 0; i < msgs; i++ {
		srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
	}
	if !bytes.Equal(buf, src) {
		t.Fatal("received bytes differ")
	}
	var wc [8]verbs.Completion
	n, err := scq.Poll(wc[:])
	if err != nil {
		t.Fatalf("send CQ: %v", err)
	}
	for _, c := range wc[:n] {
		t.Errorf("send CQ delivered {ID %d %v %v} for an unsignalled Send", c.ID, c.Opcode, c.Status)
	}
}

// testCQWait: Wait honours its context, and Close wakes a waiter.
func (s *suite) testCQWait(t *testing.T) {
	dev := s.p.Open(t)
	cq, err := dev.CreateCQ(4)
	if err != nil {
		t.Fatalf("CreateCQ: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := cq.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an empty CQ: %v, want context.DeadlineExceeded", err)
	}
	var wc [1]verbs.Completion
	if n, err := cq.Poll(wc[:]); n != 0 || err != nil {
		t.Fatalf("Poll on an empty CQ: %d, %v", n, err)
	}
	woken := make(chan error, 1)
	go func() { woken <- cq.Wait(context.Background()) }()
	time.Sleep(10 * time.Millisecond) // let it block (not required for correctness)
	if err := cq.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-woken:
		if !errors.Is(err, verbs.ErrClosed) {
			t.Fatalf("Wait across Close: %v, want ErrClosed", err)
		}
	case <-time.After(s.p.Timeout):
		t.Fatal("Close did not wake Wait")
	}
	if _, err := cq.Poll(wc[:]); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("Poll after Close: %v, want ErrClosed", err)
	}
}

type suite struct{ p Provider }

// Endpoint is one side of a test connection.
type endpoint struct {
	s    *suite
	dev  verbs.Device
	pd   verbs.PD
	cq   verbs.CQ
	qp   verbs.QP
	info *verbs.ConnInfo
}

func (s *suite) newEndpoint(t testing.TB, dev verbs.Device, depth int, cqOpts ...verbs.CQOption) *endpoint {
	t.Helper()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatalf("AllocPD: %v", err)
	}
	cq, err := dev.CreateCQ(4*depth, cqOpts...)
	if err != nil {
		t.Fatalf("CreateCQ: %v", err)
	}
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: depth, MaxRecvWR: depth, MaxSendSGE: 2, MaxRecvSGE: 2})
	if err != nil {
		t.Fatalf("CreateQP: %v", err)
	}
	e := &endpoint{s: s, dev: dev, pd: pd, cq: cq, qp: qp}
	// Cleanups run last-in first-out: MRs (registered later) close
	// before this.
	t.Cleanup(func() {
		qp.Close()
		cq.Close()
		pd.Close()
	})
	return e
}

func (e *endpoint) reg(t testing.TB, buf []byte, acc verbs.Access) verbs.MR {
	t.Helper()
	mr, err := e.pd.RegMR(buf, acc)
	if err != nil {
		t.Fatalf("RegMR(%d bytes, %v): %v", len(buf), acc, err)
	}
	t.Cleanup(func() { mr.Close() })
	return mr
}

func (e *endpoint) recv(t testing.TB, id uint64, sgl ...verbs.SGE) {
	t.Helper()
	if err := e.qp.PostRecv(&verbs.RecvWR{ID: id, SGL: sgl}); err != nil {
		t.Fatalf("PostRecv %d: %v", id, err)
	}
}

func (e *endpoint) send(t testing.TB, wr verbs.SendWR) {
	t.Helper()
	if err := e.qp.PostSend(&wr); err != nil {
		t.Fatalf("PostSend %d (%v): %v", wr.ID, wr.Op, err)
	}
}

// wait returns the next completion.
func (e *endpoint) wait(t testing.TB) verbs.Completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.s.p.Timeout)
	defer cancel()
	wc, err := verbs.NextCompletion(ctx, e.cq)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

func (e *endpoint) expect(t testing.TB, id uint64, op verbs.Opcode, st verbs.Status) verbs.Completion {
	t.Helper()
	wc := e.wait(t)
	if wc.ID != id || wc.Opcode != op || wc.Status != st {
		t.Fatalf("completion = {ID %d %v %v err %v}, want {ID %d %v %v}", wc.ID, wc.Opcode, wc.Status, wc.Err, id, op, st)
	}
	if wc.QP != e.qp {
		t.Fatalf("completion %d names QP %v, want %v", id, wc.QP, e.qp)
	}
	return wc
}

// waitDone waits until the QP leaves RTS.
func (e *endpoint) waitDone(t testing.TB) {
	t.Helper()
	select {
	case <-e.qp.Done():
	case <-time.After(e.s.p.Timeout):
		t.Fatalf("QP still %v after %v", e.qp.State(), e.s.p.Timeout)
	}
}

type pairConfig struct {
	depth          int
	clientPD       []byte
	serverPD       []byte
	client, server verbs.ConnParams
	beforeAccept   func(*endpoint)
	beforeDial     func(*endpoint)
	// clientCQ and serverCQ are the CreateCQ options of each side.
	clientCQ, serverCQ []verbs.CQOption
}

func (s *suite) dialAddr(ln verbs.Listener) string {
	if s.p.DialAddr != nil {
		return s.p.DialAddr(ln.Addr())
	}
	return ln.Addr().String()
}

// pdEqual compares received private data with what was sent.
func (s *suite) pdEqual(got, want []byte) bool {
	if !s.p.PrivateDataPadded {
		return bytes.Equal(got, want)
	}
	if len(want) > 0 && !bytes.HasPrefix(got, want) {
		return false
	}
	for _, b := range got[min(len(want), len(got)):] {
		if b != 0 {
			return false
		}
	}
	return true
}

// connectPair connects two endpoints.
func (s *suite) connectPair(t testing.TB, pc pairConfig) (cli, srv *endpoint) {
	t.Helper()
	if pc.depth == 0 {
		pc.depth = 16
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.p.Timeout)
	defer cancel()
	sdev, cdev := s.p.Open(t), s.p.Open(t)
	ln, err := sdev.Listen(ctx, s.p.ListenAddr)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	srv, cli = s.newEndpoint(t, sdev, pc.depth, pc.serverCQ...), s.newEndpoint(t, cdev, pc.depth, pc.clientCQ...)
	if pc.beforeAccept != nil {
		pc.beforeAccept(srv)
	}
	if pc.beforeDial != nil {
		pc.beforeDial(cli)
	}
	type res struct {
		info *verbs.ConnInfo
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		cr, err := ln.Accept(ctx)
		if err != nil {
			ch <- res{nil, err}
			return
		}
		if !s.pdEqual(cr.PrivateData(), pc.clientPD) {
			cr.Reject(nil)
			ch <- res{nil, fmt.Errorf("server saw private data %q, want %q", cr.PrivateData(), pc.clientPD)}
			return
		}
		p := pc.server
		p.PrivateData = pc.serverPD
		info, err := cr.Accept(ctx, srv.qp, p)
		ch <- res{info, err}
	}()
	p := pc.client
	p.PrivateData = pc.clientPD
	info, err := cdev.Dial(ctx, s.dialAddr(ln), cli.qp, p)
	r := <-ch
	if r.err != nil {
		t.Fatalf("Accept: %v (Dial: %v)", r.err, err)
	}
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	cli.info, srv.info = info, r.info
	if !s.pdEqual(info.PrivateData, pc.serverPD) {
		t.Errorf("client saw private data %q, want %q", info.PrivateData, pc.serverPD)
	}
	for _, e := range []*endpoint{cli, srv} {
		if st := e.qp.State(); st != verbs.StateRTS {
			t.Fatalf("QP state after connection setup %v, want RTS", st)
		}
	}
	return cli, srv
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) + seed
	}
}

func (s *suite) testSendRecv(t *testing.T) {
	var srvBuf []byte
	var srvMR verbs.MR
	cli, srv := s.connectPair(t, pairConfig{
		beforeAccept: func(e *endpoint) {
			// Receives posted before the connection exists, one split
			// over two SGEs.
			srvBuf = make([]byte, 4096)
			srvMR = e.reg(t, srvBuf, verbs.AccessLocalWrite)
			e.recv(t, 7, verbs.SGE{MR: srvMR, Length: 5}, verbs.SGE{MR: srvMR, Offset: 100, Length: 4096 - 100})
			e.recv(t, 8, verbs.SGE{MR: srvMR, Offset: 2048, Length: 1024})
		},
	})
	msg := []byte("ping over the verbs API")
	cmr := cli.reg(t, append([]byte(nil), msg...), 0)
	cli.send(t, verbs.SendWR{ID: 1, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Length: len(msg)}}})
	cli.expect(t, 1, verbs.OpcodeSend, verbs.StatusSuccess)
	wc := srv.expect(t, 7, verbs.OpcodeRecv, verbs.StatusSuccess)
	got := append(append([]byte(nil), srvBuf[:5]...), srvBuf[100:100+len(msg)-5]...)
	if wc.ByteLen != len(msg) || !bytes.Equal(got, msg) {
		t.Fatalf("received %q (%d bytes), want %q", got, wc.ByteLen, msg)
	}
	if wc.Flags != 0 {
		t.Errorf("receive flags %v, want none", wc.Flags)
	}
	// A zero-length Send consumes the next receive.
	cli.send(t, verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled})
	cli.expect(t, 2, verbs.OpcodeSend, verbs.StatusSuccess)
	if wc := srv.expect(t, 8, verbs.OpcodeRecv, verbs.StatusSuccess); wc.ByteLen != 0 {
		t.Fatalf("zero-length Send received as %d bytes", wc.ByteLen)
	}
	// And back, with the Solicited Event bit.
	crecv := make([]byte, 64)
	crmr := cli.reg(t, crecv, verbs.AccessLocalWrite)
	cli.recv(t, 9, verbs.SGE{MR: crmr, Length: 64})
	reply := []byte("pong")
	smr := srv.reg(t, append([]byte(nil), reply...), 0)
	srv.send(t, verbs.SendWR{ID: 3, Op: verbs.OpSend, Flags: verbs.Signaled | verbs.Solicited, SGL: []verbs.SGE{{MR: smr, Length: 4}}})
	srv.expect(t, 3, verbs.OpcodeSend, verbs.StatusSuccess)
	wc = cli.expect(t, 9, verbs.OpcodeRecv, verbs.StatusSuccess)
	if !bytes.Equal(crecv[:wc.ByteLen], reply) {
		t.Fatalf("client received %q, want %q", crecv[:wc.ByteLen], reply)
	}
	if s.p.NoSolicitedFlag != "" {
		t.Logf("SolicitedEvent flag not checked: %s", s.p.NoSolicitedFlag)
	} else if wc.Flags != verbs.SolicitedEvent {
		t.Fatalf("receive flags %v, want SolicitedEvent", wc.Flags)
	}
}

// testTransferSizes moves odd sizes by Send, RDMA Write (gathered from two
// SGEs, to an unaligned offset) and RDMA Read.
func (s *suite) testTransferSizes(t *testing.T) {
	sizes := []int{0, 1, 3, 4095, 65537, 1<<20 + 5}
	cli, srv := s.connectPair(t, pairConfig{})
	max := sizes[len(sizes)-1]
	src := make([]byte, max)
	fill(src, 1)
	srcMR := cli.reg(t, src, 0)
	dst := make([]byte, max+8)
	dstMR := srv.reg(t, dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	back := make([]byte, max)
	backMR := cli.reg(t, back, verbs.AccessLocalWrite)
	for i, n := range sizes {
		clear(dst)
		half := (n + 1) / 2
		srv.recv(t, uint64(i), verbs.SGE{MR: dstMR, Length: half}, verbs.SGE{MR: dstMR, Offset: half, Length: max + 8 - half})
		cli.send(t, verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, SGL: []verbs.SGE{{MR: srcMR, Length: n}}})
		wc := srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
		if wc.ByteLen != n || !bytes.Equal(dst[:n], src[:n]) {
			t.Fatalf("Send of %d bytes: received %d bytes, equal %v", n, wc.ByteLen, bytes.Equal(dst[:n], src[:n]))
		}
		clear(dst)
		a := n / 3
		cli.send(t, verbs.SendWR{ID: 100 + uint64(i), Op: verbs.OpWrite, Flags: verbs.Signaled,
			SGL:        []verbs.SGE{{MR: srcMR, Length: a}, {MR: srcMR, Offset: a, Length: n - a}},
			RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr() + 3})
		cli.expect(t, 100+uint64(i), verbs.OpcodeWrite, verbs.StatusSuccess)
		clear(back)
		cli.send(t, verbs.SendWR{ID: 200 + uint64(i), Op: verbs.OpRead, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: backMR, Length: n}}, RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr() + 3})
		wc = cli.expect(t, 200+uint64(i), verbs.OpcodeRead, verbs.StatusSuccess)
		if wc.ByteLen != n || !bytes.Equal(back[:n], src[:n]) {
			t.Fatalf("Write then Read of %d bytes: read %d bytes back, equal %v", n, wc.ByteLen, bytes.Equal(back[:n], src[:n]))
		}
		// A Send after the Write tells the target the data is there.
		srv.recv(t, 300)
		cli.send(t, verbs.SendWR{ID: 300, Op: verbs.OpSend})
		srv.expect(t, 300, verbs.OpcodeRecv, verbs.StatusSuccess)
		if !bytes.Equal(dst[3:3+n], src[:n]) {
			t.Fatalf("Write of %d bytes: target memory differs", n)
		}
	}
}

// testReadAfterWrite checks IRD/ORD reporting and several Reads in flight.
func (s *suite) testReadAfterWrite(t *testing.T) {
	cli, srv := s.connectPair(t, pairConfig{client: verbs.ConnParams{IRD: 4, ORD: 4}, server: verbs.ConnParams{IRD: 4, ORD: 4}})
	if cli.info.ORD < 1 || cli.info.ORD > 4 {
		t.Errorf("client ORD %d, want 1..4", cli.info.ORD)
	}
	if srv.info.IRD < 1 || srv.info.IRD > 4 {
		t.Errorf("server IRD %d, want 1..4", srv.info.IRD)
	}
	const chunk = 8192
	exposed := make([]byte, 8*chunk)
	fill(exposed, 9)
	emr := srv.reg(t, exposed, verbs.AccessRemoteRead)
	sink := make([]byte, 8*chunk)
	smr := cli.reg(t, sink, verbs.AccessLocalWrite)
	// Eight Reads posted at once: more than ORD, so the provider or the
	// device must hold the rest back.
	for i := 0; i < 8; i++ {
		cli.send(t, verbs.SendWR{ID: uint64(i), Op: verbs.OpRead, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: smr, Offset: i * chunk, Length: chunk}}, RemoteSTag: emr.RKey(), RemoteTO: emr.Addr() + uint64(i*chunk)})
	}
	for i := 0; i < 8; i++ {
		cli.expect(t, uint64(i), verbs.OpcodeRead, verbs.StatusSuccess)
	}
	if !bytes.Equal(sink, exposed) {
		t.Fatal("Reads returned different bytes")
	}
}

// testInvalidate: after a local Invalidate the peer cannot read the
// region; the failure moves the connection to the error state.
func (s *suite) testInvalidate(t *testing.T) {
	cli, srv := s.connectPair(t, pairConfig{})
	secret := make([]byte, 256)
	fill(secret, 5)
	mr := srv.reg(t, secret, verbs.AccessRemoteRead|verbs.AccessRemoteWrite|verbs.AccessLocalWrite)
	stag, to := mr.RKey(), mr.Addr()
	sink := make([]byte, 256)
	smr := cli.reg(t, sink, verbs.AccessLocalWrite)
	// Valid first.
	cli.send(t, verbs.SendWR{ID: 1, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: 256}}, RemoteSTag: stag, RemoteTO: to})
	cli.expect(t, 1, verbs.OpcodeRead, verbs.StatusSuccess)
	if err := mr.Invalidate(); err != nil {
		t.Fatalf("Invalidate: %v", err)
	}
	if mr.Valid() {
		t.Fatal("Valid after Invalidate")
	}
	if err := mr.Invalidate(); err != nil {
		t.Fatalf("second Invalidate: %v", err)
	}
	clear(sink)
	cli.send(t, verbs.SendWR{ID: 2, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: 256}}, RemoteSTag: stag, RemoteTO: to})
	cli.recv(t, 3)
	wc := cli.wait(t)
	if wc.ID != 2 || wc.Status == verbs.StatusSuccess {
		t.Fatalf("Read of an invalidated STag: completion {ID %d %v %v}, want a failed Read", wc.ID, wc.Opcode, wc.Status)
	}
	if wc.Err == nil {
		t.Error("failed Read completion has no Err")
	}
	if !bytes.Equal(sink, make([]byte, 256)) {
		t.Fatal("Read of an invalidated STag placed data")
	}
	// The failure takes the connection down: the outstanding receive is
	// flushed, and both QPs leave RTS.
	cli.expect(t, 3, verbs.OpcodeRecv, verbs.StatusFlushed)
	cli.waitDone(t)
	var qe *verbs.QPError
	if !errors.As(cli.qp.Err(), &qe) || !errors.Is(cli.qp.Err(), verbs.ErrFlushed) {
		t.Fatalf("client QP Err %v, want a *verbs.QPError", cli.qp.Err())
	}
	// Whether the target's QP fails too differs (iWARP terminates the
	// connection, an InfiniBand responder only NAKs); once the initiator
	// closes, it is down, and posts complete Flushed.
	cli.qp.Close()
	srv.waitDone(t)
	srv.recv(t, 4)
	if st := srv.wait(t); st.ID != 4 || st.Status != verbs.StatusFlushed {
		t.Fatalf("server receive after the error: {ID %d %v}, want Flushed", st.ID, st.Status)
	}
}

// testReregister: Reregister gives a new STag; the old one is refused, the
// new one works (each on its own connection, since a refusal ends one).
func (s *suite) testReregister(t *testing.T) {
	mem := make([]byte, 4096)
	fill(mem, 3)
	var mr verbs.MR
	var oldSTag uint32
	cli, _ := s.connectPair(t, pairConfig{beforeAccept: func(e *endpoint) {
		mr = e.reg(t, mem, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		oldSTag = mr.RKey()
		if err := mr.Invalidate(); err != nil {
			t.Fatalf("Invalidate: %v", err)
		}
		if err := mr.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteRead); err != nil {
			t.Fatalf("Reregister: %v", err)
		}
	}})
	if mr.RKey() == oldSTag {
		t.Fatalf("Reregister kept STag %#x", oldSTag)
	}
	if !mr.Valid() || mr.Access() != verbs.AccessLocalWrite|verbs.AccessRemoteRead {
		t.Fatalf("after Reregister: valid %v access %v", mr.Valid(), mr.Access())
	}
	// Reregister without Invalidate changes the STag too.
	prev := mr.RKey()
	if err := mr.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteRead); err != nil {
		t.Fatalf("Reregister: %v", err)
	}
	if mr.RKey() == prev || mr.RKey() == oldSTag {
		t.Fatalf("second Reregister: STag %#x (before %#x, first %#x)", mr.RKey(), prev, oldSTag)
	}
	sink := make([]byte, 4096)
	smr := cli.reg(t, sink, verbs.AccessLocalWrite)
	cli.send(t, verbs.SendWR{ID: 1, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: 4096}}, RemoteSTag: mr.RKey(), RemoteTO: mr.Addr()})
	cli.expect(t, 1, verbs.OpcodeRead, verbs.StatusSuccess)
	if !bytes.Equal(sink, mem) {
		t.Fatal("Read through the new STag returned different bytes")
	}
	// The old STags are refused.
	clear(sink)
	cli.send(t, verbs.SendWR{ID: 2, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: 4096}}, RemoteSTag: prev, RemoteTO: mr.Addr()})
	if wc := cli.wait(t); wc.ID != 2 || wc.Status == verbs.StatusSuccess {
		t.Fatalf("Read through the previous STag: {ID %d %v}, want a failure", wc.ID, wc.Status)
	}
	if !bytes.Equal(sink, make([]byte, 4096)) {
		t.Fatal("Read through the previous STag placed data")
	}
	cli.waitDone(t)
}

func (s *suite) testSendWithInvalidate(t *testing.T) {
	if s.p.NoRemoteInvalidate != "" {
		t.Skip(s.p.NoRemoteInvalidate)
	}
	cli, srv := s.connectPair(t, pairConfig{beforeAccept: func(e *endpoint) { e.recv(t, 100) }})
	// The client speaks first (an iWARP responder may not send before its
	// initiator has), as an RPC-over-RDMA client sends its call.
	cli.send(t, verbs.SendWR{ID: 100, Op: verbs.OpSend})
	srv.expect(t, 100, verbs.OpcodeRecv, verbs.StatusSuccess)
	chunk := make([]byte, 128)
	chunkMR := cli.reg(t, chunk, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	rbuf := make([]byte, 64)
	rmr := cli.reg(t, rbuf, verbs.AccessLocalWrite)
	cli.recv(t, 1, verbs.SGE{MR: rmr, Length: 64})
	cli.recv(t, 2, verbs.SGE{MR: rmr, Length: 64})
	payload := []byte("reply")
	smr := srv.reg(t, append([]byte(nil), payload...), 0)
	// The server writes into the client's chunk, then invalidates it with
	// its reply, as an RPC-over-RDMA responder does.
	src := srv.reg(t, []byte("chunk data"), 0)
	stag := chunkMR.RKey()
	srv.send(t, verbs.SendWR{ID: 1, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: src, Length: 10}}, RemoteSTag: stag, RemoteTO: chunkMR.Addr()})
	srv.send(t, verbs.SendWR{ID: 2, Op: verbs.OpSendInv, InvalidateSTag: stag, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: len(payload)}}})
	srv.expect(t, 2, verbs.OpcodeSend, verbs.StatusSuccess)
	wc := cli.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
	if wc.Flags&verbs.WithInvalidate == 0 || wc.InvalidatedSTag != stag {
		t.Fatalf("completion flags %v STag %#x, want WithInvalidate %#x", wc.Flags, wc.InvalidatedSTag, stag)
	}
	if string(chunk[:10]) != "chunk data" || string(rbuf[:wc.ByteLen]) != "reply" {
		t.Fatalf("chunk %q reply %q", chunk[:10], rbuf[:wc.ByteLen])
	}
	if chunkMR.Valid() {
		t.Fatal("STag still valid after Send with Invalidate completed")
	}
	if err := chunkMR.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteWrite); err != nil {
		t.Fatalf("Reregister: %v", err)
	}
	if chunkMR.RKey() == stag || !chunkMR.Valid() {
		t.Fatalf("Reregister: STag %#x (old %#x) valid %v", chunkMR.RKey(), stag, chunkMR.Valid())
	}
	// The new STag works and can be invalidated again.
	stag = chunkMR.RKey()
	srv.send(t, verbs.SendWR{ID: 3, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: src, Length: 5}}, RemoteSTag: stag, RemoteTO: chunkMR.Addr() + 20})
	srv.send(t, verbs.SendWR{ID: 4, Op: verbs.OpSendInv, InvalidateSTag: stag, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: len(payload)}}})
	srv.expect(t, 4, verbs.OpcodeSend, verbs.StatusSuccess)
	wc = cli.expect(t, 2, verbs.OpcodeRecv, verbs.StatusSuccess)
	if wc.Flags&verbs.WithInvalidate == 0 || wc.InvalidatedSTag != stag || chunkMR.Valid() || string(chunk[20:25]) != "chunk" {
		t.Fatalf("second Send with Invalidate: flags %v STag %#x valid %v data %q", wc.Flags, wc.InvalidatedSTag, chunkMR.Valid(), chunk[20:25])
	}
}

func (s *suite) testPrivateData(t *testing.T) {
	cpd := make([]byte, s.p.MaxConnectPrivateData)
	fill(cpd, 0x41)
	spd := []byte("server private data")
	cli, srv := s.connectPair(t, pairConfig{clientPD: cpd, serverPD: spd})
	if !s.pdEqual(srv.info.PrivateData, cpd) {
		t.Errorf("server ConnInfo.PrivateData %q, want the request's", srv.info.PrivateData)
	}
	if cli.info.RemoteAddr == nil || srv.info.RemoteAddr == nil || cli.info.LocalAddr == nil {
		t.Errorf("ConnInfo addresses: client local %v remote %v, server remote %v", cli.info.LocalAddr, cli.info.RemoteAddr, srv.info.RemoteAddr)
	}
	// Too long is refused before anything is sent.
	dev := s.p.Open(t)
	e := s.newEndpoint(t, dev, 2)
	ctx, cancel := context.WithTimeout(context.Background(), s.p.Timeout)
	defer cancel()
	_, err := dev.Dial(ctx, "127.0.0.1:1", e.qp, verbs.ConnParams{PrivateData: make([]byte, verbs.MaxPrivateData+1)})
	if !errors.Is(err, verbs.ErrPrivateDataTooLong) {
		t.Fatalf("Dial with %d bytes of private data: %v, want ErrPrivateDataTooLong", verbs.MaxPrivateData+1, err)
	}
	if e.qp.State() != verbs.StateInit {
		t.Fatalf("QP state after refused Dial: %v", e.qp.State())
	}
}

func (s *suite) testReject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), s.p.Timeout)
	defer cancel()
	sdev, cdev := s.p.Open(t), s.p.Open(t)
	ln, err := sdev.Listen(ctx, s.p.ListenAddr)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	srv := s.newEndpoint(t, sdev, 4)
	srv.recv(t, 100)
	accepted := make(chan error, 1)
	go func() {
		cr, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		if err := cr.Reject([]byte("go away")); err != nil {
			accepted <- err
			return
		}
		// The second request is accepted.
		cr, err = ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		_, err = cr.Accept(ctx, srv.qp, verbs.ConnParams{})
		accepted <- err
	}()
	e := s.newEndpoint(t, cdev, 4)
	buf := make([]byte, 16)
	mr := e.reg(t, buf, verbs.AccessLocalWrite)
	e.recv(t, 1, verbs.SGE{MR: mr, Length: 16})
	_, err = cdev.Dial(ctx, s.dialAddr(ln), e.qp, verbs.ConnParams{PrivateData: []byte("please")})
	var re *verbs.RejectedError
	if !errors.As(err, &re) || !s.pdEqual(re.PrivateData, []byte("go away")) {
		t.Fatalf("Dial error %v, want *verbs.RejectedError with private data %q", err, "go away")
	}
	if e.qp.State() != verbs.StateInit {
		t.Fatalf("QP state after reject %v, want Init", e.qp.State())
	}
	// The QP, with its receive still posted, connects on a second try.
	if _, err := cdev.Dial(ctx, s.dialAddr(ln), e.qp, verbs.ConnParams{}); err != nil {
		t.Fatalf("second Dial: %v", err)
	}
	if err := <-accepted; err != nil {
		t.Fatalf("server: %v", err)
	}
	// The client speaks first (iWARP), then the server answers into the
	// receive posted before the rejected attempt.
	e.send(t, verbs.SendWR{ID: 100, Op: verbs.OpSend})
	srv.expect(t, 100, verbs.OpcodeRecv, verbs.StatusSuccess)
	src := srv.reg(t, []byte("after reject"), 0)
	srv.send(t, verbs.SendWR{ID: 9, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: src, Length: 12}}})
	if wc := e.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess); string(buf[:wc.ByteLen]) != "after reject" {
		t.Fatalf("received %q", buf[:wc.ByteLen])
	}
}

// testFlushOnPeerClose: when the peer closes, every outstanding request
// completes Flushed, the QP reports a *verbs.QPError, and later posts
// complete Flushed at once.
func (s *suite) testFlushOnPeerClose(t *testing.T) {
	cli, srv := s.connectPair(t, pairConfig{depth: 8})
	buf := make([]byte, 64)
	mr := srv.reg(t, buf, verbs.AccessLocalWrite)
	for i := uint64(1); i <= 5; i++ {
		srv.recv(t, i, verbs.SGE{MR: mr, Length: 64})
	}
	// One Send gets through first, so the connection is surely up.
	cmr := cli.reg(t, []byte("x"), 0)
	cli.send(t, verbs.SendWR{ID: 1, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Length: 1}}})
	cli.expect(t, 1, verbs.OpcodeSend, verbs.StatusSuccess)
	srv.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
	if err := cli.qp.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := cli.qp.State(); st != verbs.StateClosed {
		t.Fatalf("state after Close %v", st)
	}
	if err := cli.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend}); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("PostSend after Close: %v, want ErrClosed", err)
	}
	got := map[uint64]verbs.Status{}
	for len(got) < 4 {
		wc := srv.wait(t)
		if wc.Opcode != verbs.OpcodeRecv {
			t.Fatalf("unexpected completion {ID %d %v %v}", wc.ID, wc.Opcode, wc.Status)
		}
		got[wc.ID] = wc.Status
		if !errors.Is(wc.Err, verbs.ErrFlushed) {
			t.Errorf("flushed completion %d: Err %v does not wrap ErrFlushed", wc.ID, wc.Err)
		}
	}
	for i := uint64(2); i <= 5; i++ {
		if got[i] != verbs.StatusFlushed {
			t.Errorf("receive %d: %v, want Flushed", i, got[i])
		}
	}
	srv.waitDone(t)
	if st := srv.qp.State(); st != verbs.StateError {
		t.Fatalf("server QP state %v, want Error", st)
	}
	var qe *verbs.QPError
	if !errors.As(srv.qp.Err(), &qe) {
		t.Fatalf("server QP Err %v, want *verbs.QPError", srv.qp.Err())
	}
	// Posting to a QP in the error state completes Flushed at once.
	srv.recv(t, 10)
	srv.send(t, verbs.SendWR{ID: 11, Op: verbs.OpSend, Flags: verbs.Signaled})
	got = map[uint64]verbs.Status{}
	for len(got) < 2 {
		wc := srv.wait(t)
		got[wc.ID] = wc.Status
	}
	if got[10] != verbs.StatusFlushed || got[11] != verbs.StatusFlushed {
		t.Fatalf("posts in the error state: %v, want both Flushed", got)
	}
}

// testFlushOnClose: a QP's own Close flushes its outstanding work,
// including receives posted before any connection.
func (s *suite) testFlushOnClose(t *testing.T) {
	dev := s.p.Open(t)
	e := s.newEndpoint(t, dev, 4)
	mr := e.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
	e.recv(t, 1, verbs.SGE{MR: mr, Length: 64})
	e.recv(t, 2, verbs.SGE{MR: mr, Length: 64})
	if err := e.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpSend}); !errors.Is(err, verbs.ErrBadState) {
		t.Fatalf("PostSend before connecting: %v, want ErrBadState", err)
	}
	e.qp.Close()
	e.qp.Close() // twice is fine
	select {
	case <-e.qp.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	for _, id := range []uint64{1, 2} {
		e.expect(t, id, verbs.OpcodeRecv, verbs.StatusFlushed)
	}
	// Connected, with receives and sends outstanding.
	cli, srv := s.connectPair(t, pairConfig{})
	cmr := cli.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
	for i := uint64(1); i <= 3; i++ {
		cli.recv(t, i, verbs.SGE{MR: cmr, Length: 64})
	}
	cli.qp.Close()
	got := map[uint64]bool{}
	for len(got) < 3 {
		wc := cli.wait(t)
		if wc.Status != verbs.StatusFlushed || wc.Opcode != verbs.OpcodeRecv {
			t.Fatalf("after Close: {ID %d %v %v}, want flushed receives", wc.ID, wc.Opcode, wc.Status)
		}
		got[wc.ID] = true
	}
	srv.waitDone(t)
}

func (s *suite) testPostErrors(t *testing.T) {
	dev := s.p.Open(t)
	e := s.newEndpoint(t, dev, 2)
	ro := e.reg(t, make([]byte, 16), 0)
	rw := e.reg(t, make([]byte, 16), verbs.AccessLocalWrite)
	other, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	omr, err := other.RegMR(make([]byte, 16), verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"send before connect", e.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend}), verbs.ErrBadState},
		{"recv without LocalWrite", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{MR: ro, Length: 16}}}), verbs.ErrInvalidWR},
		{"recv out of bounds", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{MR: rw, Offset: 8, Length: 9}}}), verbs.ErrInvalidWR},
		{"recv negative offset", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{MR: rw, Offset: -1, Length: 1}}}), verbs.ErrInvalidWR},
		{"recv too many SGEs", e.qp.PostRecv(&verbs.RecvWR{SGL: make([]verbs.SGE, 3)}), verbs.ErrInvalidWR},
		{"recv nil MR", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{Length: 1}}}), verbs.ErrInvalidWR},
		{"recv other PD", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{MR: omr, Length: 16}}}), verbs.ErrInvalidWR},
		{"nil send", e.qp.PostSend(nil), verbs.ErrInvalidWR},
		{"nil recv", e.qp.PostRecv(nil), verbs.ErrInvalidWR},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	e.recv(t, 1)
	e.recv(t, 2)
	if err := e.qp.PostRecv(&verbs.RecvWR{ID: 3}); !errors.Is(err, verbs.ErrQueueFull) {
		t.Errorf("third receive on depth 2: %v, want ErrQueueFull", err)
	}
	if _, err := dev.CreateCQ(0); err == nil {
		t.Error("CreateCQ(0): no error")
	}
	if _, err := e.pd.RegMR(nil, 0); err == nil {
		t.Error("RegMR(nil): no error")
	}
	if _, err := e.pd.RegMR(make([]byte, 8), 0x80); err == nil {
		t.Error("RegMR with unknown access flags: no error")
	}
	if err := other.Close(); err == nil {
		t.Error("PD.Close with an open MR: no error")
	}
	omr.Close()
	if err := other.Close(); err != nil {
		t.Errorf("PD.Close: %v", err)
	}
}

// testManyQPs runs n connections at once, each echoing a Send.
func (s *suite) testManyQPs(t *testing.T) {
	const n = 12
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.p.Timeout)
	defer cancel()
	sdev, cdev := s.p.Open(t), s.p.Open(t)
	ln, err := sdev.Listen(ctx, s.p.ListenAddr)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	srvs := make([]*endpoint, n)
	clis := make([]*endpoint, n)
	for i := range srvs {
		srvs[i] = s.newEndpoint(t, sdev, 4)
		clis[i] = s.newEndpoint(t, cdev, 4)
	}
	errc := make(chan error, 2*n)
	wg.Add(1)
	go func() { // server: accept n, echo one message on each
		defer wg.Done()
		for i := 0; i < n; i++ {
			cr, err := ln.Accept(ctx)
			if err != nil {
				errc <- fmt.Errorf("accept %d: %w", i, err)
				return
			}
			e := srvs[i]
			buf := make([]byte, 256)
			mr, err := e.pd.RegMR(buf, verbs.AccessLocalWrite)
			if err != nil {
				errc <- err
				return
			}
			if err := e.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: mr, Length: len(buf)}}}); err != nil {
				errc <- err
				return
			}
			if _, err := cr.Accept(ctx, e.qp, verbs.ConnParams{PrivateData: cr.PrivateData()[:1]}); err != nil {
				errc <- fmt.Errorf("accept %d: %w", i, err)
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer mr.Close()
				wc, err := waitCtx(ctx, e.cq)
				if err != nil || wc.Status != verbs.StatusSuccess {
					errc <- fmt.Errorf("server receive: %v %v", wc.Status, err)
					return
				}
				if err := e.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: mr, Length: wc.ByteLen}}}); err != nil {
					errc <- err
					return
				}
				if wc, err := waitCtx(ctx, e.cq); err != nil || wc.Status != verbs.StatusSuccess {
					errc <- fmt.Errorf("server send: %v %v", wc.Status, err)
				}
			}()
		}
	}()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := clis[i]
			msg := fmt.Sprintf("message from connection %d", i)
			out, err := e.pd.RegMR([]byte(msg), 0)
			if err != nil {
				errc <- err
				return
			}
			defer out.Close()
			in := make([]byte, 256)
			inMR, err := e.pd.RegMR(in, verbs.AccessLocalWrite)
			if err != nil {
				errc <- err
				return
			}
			defer inMR.Close()
			if err := e.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: inMR, Length: len(in)}}}); err != nil {
				errc <- err
				return
			}
			info, err := cdev.Dial(ctx, s.dialAddr(ln), e.qp, verbs.ConnParams{PrivateData: []byte{byte(i)}})
			if err != nil {
				errc <- fmt.Errorf("dial %d: %w", i, err)
				return
			}
			if len(info.PrivateData) == 0 || info.PrivateData[0] != byte(i) {
				errc <- fmt.Errorf("connection %d: reply private data %v", i, info.PrivateData)
				return
			}
			if err := e.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: out, Length: len(msg)}}}); err != nil {
				errc <- err
				return
			}
			wc, err := waitCtx(ctx, e.cq)
			if err != nil || wc.Status != verbs.StatusSuccess || wc.ID != 1 || string(in[:wc.ByteLen]) != msg {
				errc <- fmt.Errorf("connection %d: echo {ID %d %v} %q, err %v", i, wc.ID, wc.Status, in[:wc.ByteLen], err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func waitCtx(ctx context.Context, cq verbs.CQ) (verbs.Completion, error) {
	var wc [1]verbs.Completion
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return verbs.Completion{}, err
		}
		if n == 1 {
			return wc[0], nil
		}
		if err := cq.Wait(ctx); err != nil {
			return verbs.Completion{}, err
		}
	}
}

// testBatchOfSends fills the send queue with unsignalled Sends and one
// signalled one, three times: the unsignalled requests must retire with the
// signalled one, or the next round finds the queue full.
func (s *suite) testBatchOfSends(t *testing.T) {
	const depth = 8
	cli, srv := s.connectPair(t, pairConfig{depth: depth})
	rbuf := make([]byte, 64*depth)
	rmr := srv.reg(t, rbuf, verbs.AccessLocalWrite)
	src := cli.reg(t, []byte("0123456789abcdef"), 0)
	for round := 0; round < 3; round++ {
		for i := 0; i < depth; i++ {
			srv.recv(t, uint64(i), verbs.SGE{MR: rmr, Offset: 64 * i, Length: 64})
		}
		for i := 0; i < depth; i++ {
			fl := verbs.SendFlags(0)
			if i == depth-1 {
				fl = verbs.Signaled
			}
			cli.send(t, verbs.SendWR{ID: uint64(100 + i), Op: verbs.OpSend, Flags: fl, SGL: []verbs.SGE{{MR: src, Offset: i, Length: 1}}})
		}
		cli.expect(t, 100+depth-1, verbs.OpcodeSend, verbs.StatusSuccess)
		for i := 0; i < depth; i++ {
			wc := srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
			if wc.ByteLen != 1 || rbuf[64*i] != "0123456789abcdef"[i] {
				t.Fatalf("round %d receive %d: %d bytes %q", round, i, wc.ByteLen, rbuf[64*i])
			}
		}
	}
}
