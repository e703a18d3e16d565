package verbstest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// handlerCheck records what a verbs.CompletionHandler saw: overlapping calls
// (the contract says calls for one CQ never overlap) and the first failure.
type handlerCheck struct {
	in   atomic.Int32
	mu   sync.Mutex
	err  error
	fail chan struct{}
}

func newHandlerCheck() *handlerCheck { return &handlerCheck{fail: make(chan struct{})} }

// enter and exit bracket a handler call.
func (h *handlerCheck) enter() {
	if h.in.Add(1) != 1 {
		h.errorf("handler called while another call for the same CQ was running")
	}
}

func (h *handlerCheck) exit() { h.in.Add(-1) }

func (h *handlerCheck) errorf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = fmt.Errorf(format, args...)
		close(h.fail)
	}
}

// failed reports whether the handler has recorded a failure.
func (h *handlerCheck) failed() bool {
	select {
	case <-h.fail:
		return true
	default:
		return false
	}
}

func (h *handlerCheck) check(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		t.Fatal(h.err)
	}
}

// slotPair is a connected pair for the handler tests: slotDepth receive and
// send slots of slotMsg bytes on each side, every receive slot posted, and
// both CQs delivering to handlers. A message carries a sequence number; the
// server's handler (echo) answers each with the same number.
type slotPair struct {
	cli, srv                       *endpoint
	cliR, cliS, srvR, srvS         []byte
	cliRMR, cliSMR, srvRMR, srvSMR verbs.MR
	sh, ch                         *handlerCheck
	srvNext                        uint64 // the echo's next expected number (its calls never overlap)
}

const (
	slotDepth = 8
	slotMsg   = 8
)

// newSlotPair connects a slotPair whose client handler is cliHandler and whose
// server handler is echo.
func (s *suite) newSlotPair(t *testing.T, cliHandler func(p *slotPair, wc *verbs.Completion)) *slotPair {
	p := &slotPair{sh: newHandlerCheck(), ch: newHandlerCheck()}
	slots := func(e *endpoint, r, sd *[]byte, rmr, smr *verbs.MR) {
		*r, *sd = make([]byte, slotDepth*slotMsg), make([]byte, slotDepth*slotMsg)
		*rmr, *smr = e.reg(t, *r, verbs.AccessLocalWrite), e.reg(t, *sd, 0)
		for i := 0; i < slotDepth; i++ {
			e.recv(t, uint64(i), verbs.SGE{MR: *rmr, Offset: i * slotMsg, Length: slotMsg})
		}
	}
	p.cli, p.srv = s.connectPair(t, pairConfig{depth: slotDepth,
		clientCQ:     []verbs.CQOption{verbs.WithHandler(func(wc *verbs.Completion) { cliHandler(p, wc) })},
		serverCQ:     []verbs.CQOption{verbs.WithHandler(p.echo)},
		beforeAccept: func(e *endpoint) { slots(e, &p.srvR, &p.srvS, &p.srvRMR, &p.srvSMR) },
		beforeDial:   func(e *endpoint) { slots(e, &p.cliR, &p.cliS, &p.cliRMR, &p.cliSMR) },
	})
	return p
}

// send posts seq from its send slot on e (a side's endpoint, send buffer and MR).
func sendSeq(e *endpoint, buf []byte, mr verbs.MR, seq uint64) error {
	out := int(seq % slotDepth)
	binary.BigEndian.PutUint64(buf[out*slotMsg:], seq)
	return e.qp.PostSend(&verbs.SendWR{ID: seq, Op: verbs.OpSend, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: mr, Offset: out * slotMsg, Length: slotMsg}}})
}

// received returns the number in a receive completion's slot and posts the slot
// again.
func received(e *endpoint, buf []byte, mr verbs.MR, wc *verbs.Completion) (uint64, error) {
	slot := int(wc.ID)
	seq := binary.BigEndian.Uint64(buf[slot*slotMsg:])
	return seq, e.qp.PostRecv(&verbs.RecvWR{ID: wc.ID, SGL: []verbs.SGE{{MR: mr, Offset: slot * slotMsg, Length: slotMsg}}})
}

// echo is the server's handler: it checks each message (its QP, length and
// number, in order), reposts the receive and sends the number back, all from
// inside the handler.
func (p *slotPair) echo(wc *verbs.Completion) {
	p.sh.enter()
	defer p.sh.exit()
	if wc.QP != p.srv.qp {
		p.sh.errorf("server completion names QP %v", wc.QP)
		return
	}
	switch {
	case wc.Status == verbs.StatusFlushed || wc.Opcode == verbs.OpcodeSend && wc.Status == verbs.StatusSuccess:
	case wc.Status != verbs.StatusSuccess:
		p.sh.errorf("server completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
	case wc.Opcode == verbs.OpcodeRecv:
		seq, err := received(p.srv, p.srvR, p.srvRMR, wc)
		if wc.ByteLen != slotMsg || seq != p.srvNext {
			p.sh.errorf("server receive in slot %d: %d bytes, seq %d, want seq %d", wc.ID, wc.ByteLen, seq, p.srvNext)
			return
		}
		if err != nil {
			p.sh.errorf("PostRecv from the handler: %v", err)
			return
		}
		p.srvNext++
		if err := sendSeq(p.srv, p.srvS, p.srvSMR, seq); err != nil {
			p.sh.errorf("PostSend from the handler: %v", err)
		}
	default:
		p.sh.errorf("server completion with opcode %v", wc.Opcode)
	}
}

// testHandlerPingPong: with CQs created WithHandler on both sides, a
// ping-pong runs entirely from the handlers: the server's handler reposts
// each receive and sends the reply from inside the handler; the client's
// handler reposts its receive and posts the next request. Completions arrive
// in order, calls never overlap, Poll returns nothing.
func (s *suite) testHandlerPingPong(t *testing.T) {
	const (
		window = 4
		total  = 300
	)
	done := make(chan struct{})
	var cliNext, cliSent uint64
	cliHandler := func(p *slotPair, wc *verbs.Completion) {
		ch := p.ch
		ch.enter()
		defer ch.exit()
		post := func(seq uint64) error { return sendSeq(p.cli, p.cliS, p.cliSMR, seq) }
		switch {
		case wc.Status == verbs.StatusFlushed:
			return
		case wc.Status != verbs.StatusSuccess:
			ch.errorf("client completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
		case wc.Opcode == verbs.OpcodeSend:
			// Open the window one request at a time, from the handler,
			// so every post after the first is made here, in order.
			if wc.ID+1 < window && cliSent == wc.ID+1 {
				if err := post(cliSent); err != nil {
					ch.errorf("PostSend from the handler: %v", err)
					return
				}
				cliSent++
			}
		case wc.Opcode == verbs.OpcodeRecv:
			seq, err := received(p.cli, p.cliR, p.cliRMR, wc)
			if seq != cliNext {
				ch.errorf("client reply seq %d, want %d", seq, cliNext)
				return
			}
			cliNext++
			if err != nil {
				ch.errorf("PostRecv from the handler: %v", err)
				return
			}
			if cliNext == total {
				close(done)
				return
			}
			if cliSent < total {
				if err := post(cliSent); err != nil {
					ch.errorf("PostSend from the handler: %v", err)
					return
				}
				cliSent++
			}
		}
	}
	p := s.newSlotPair(t, cliHandler)
	cli, srv, sh, ch := p.cli, p.srv, p.sh, p.ch
	// The first request is posted from here, outside the handler; cliSent
	// is the handler's once it runs, so it is counted before the post.
	cliSent = 1
	if err := sendSeq(cli, p.cliS, p.cliSMR, 0); err != nil {
		t.Fatalf("PostSend 0: %v", err)
	}
	select {
	case <-done:
	case <-sh.fail:
	case <-ch.fail:
	case <-time.After(s.p.Timeout):
		t.Fatalf("ping-pong of %d messages stalled", total)
	}
	sh.check(t)
	ch.check(t)
	var wcs [4]verbs.Completion
	for _, e := range []*endpoint{cli, srv} {
		if n, err := e.cq.Poll(wcs[:]); n != 0 || err != nil {
			t.Errorf("Poll of a handler CQ = %d, %v; want 0, nil", n, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		err := e.cq.Wait(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait of a healthy handler CQ = %v, want the context's error", err)
		}
	}
}

// testHandlerFlush: a QP's Close delivers every outstanding request to the
// handler, flushed, exactly once; a post to a failed QP is delivered flushed
// too; after CQ.Close the handler is not called again.
func (s *suite) testHandlerFlush(t *testing.T) {
	type seen struct {
		mu  sync.Mutex
		ids map[uint64]verbs.Status
		ch  chan struct{} // a token per completion
	}
	newSeen := func() *seen { return &seen{ids: map[uint64]verbs.Status{}, ch: make(chan struct{}, 64)} }
	hc := newHandlerCheck()
	var closed atomic.Bool
	handler := func(sn *seen) verbs.CompletionHandler {
		return func(wc *verbs.Completion) {
			hc.enter()
			defer hc.exit()
			if closed.Load() {
				hc.errorf("handler called after CQ.Close returned (ID %d)", wc.ID)
			}
			sn.mu.Lock()
			if _, dup := sn.ids[wc.ID]; dup {
				hc.errorf("completion %d delivered twice", wc.ID)
			}
			sn.ids[wc.ID] = wc.Status
			sn.mu.Unlock()
			sn.ch <- struct{}{}
		}
	}
	await := func(sn *seen, n int, what string) map[uint64]verbs.Status {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-sn.ch:
			case <-time.After(s.p.Timeout):
				t.Fatalf("%s: %d of %d completions delivered", what, i, n)
			}
		}
		hc.check(t)
		sn.mu.Lock()
		defer sn.mu.Unlock()
		for id, st := range sn.ids {
			if st != verbs.StatusFlushed {
				t.Fatalf("%s: completion %d is %v, want Flushed", what, id, st)
			}
		}
		return sn.ids
	}

	// Not connected: receives posted in Init are flushed by Close.
	s1 := newSeen()
	e := s.newEndpoint(t, s.p.Open(t), 4, verbs.WithHandler(handler(s1)))
	mr := e.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
	e.recv(t, 1, verbs.SGE{MR: mr, Length: 64})
	e.recv(t, 2, verbs.SGE{MR: mr, Length: 64})
	e.qp.Close()
	if ids := await(s1, 2, "Close before connecting"); len(ids) != 2 {
		t.Fatalf("Close before connecting delivered %v, want IDs 1 and 2", ids)
	}

	// Connected: the server closes; the client's receives are flushed, and
	// a Send posted to the failed QP is delivered flushed.
	s2 := newSeen()
	cli, srv := s.connectPair(t, pairConfig{depth: 8, clientCQ: []verbs.CQOption{verbs.WithHandler(handler(s2))}})
	cmr := cli.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
	for i := uint64(1); i <= 3; i++ {
		cli.recv(t, i, verbs.SGE{MR: cmr, Length: 64})
	}
	srv.qp.Close()
	cli.waitDone(t)
	await(s2, 3, "peer close")
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 4, Op: verbs.OpSend, Flags: verbs.Signaled}); err != nil {
		t.Fatalf("PostSend on a failed QP: %v", err)
	}
	if ids := await(s2, 1, "post after failure"); ids[4] != verbs.StatusFlushed {
		t.Fatalf("post after failure delivered %v, want ID 4 flushed", ids)
	}
	cli.qp.Close()
	if err := cli.cq.Close(); err != nil {
		t.Fatalf("CQ.Close: %v", err)
	}
	closed.Store(true)
	select {
	case <-s2.ch:
		t.Fatal("completion delivered after CQ.Close")
	default:
	}
	hc.check(t)
}
