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

func (h *handlerCheck) check(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		t.Fatal(h.err)
	}
}

// testHandlerPingPong: with CQs created WithHandler on both sides, a
// ping-pong runs entirely from the handlers: the server's handler reposts
// each receive and sends the reply from inside the handler; the client's
// handler reposts its receive and posts the next request. Completions arrive
// in order, calls never overlap, Poll returns nothing.
func (s *suite) testHandlerPingPong(t *testing.T) {
	const (
		depth  = 8
		window = 4
		total  = 300
		msg    = 8
	)
	var srv, cli *endpoint
	var srvRbuf, srvSbuf, cliRbuf, cliSbuf []byte
	var srvRMR, srvSMR, cliRMR, cliSMR verbs.MR
	sh, ch := newHandlerCheck(), newHandlerCheck()
	done := make(chan struct{})

	var srvNext, srvSends uint64 // server handler's state (calls never overlap)
	srvHandler := func(wc *verbs.Completion) {
		sh.enter()
		defer sh.exit()
		if wc.QP != srv.qp {
			sh.errorf("server completion names QP %v", wc.QP)
			return
		}
		switch {
		case wc.Status == verbs.StatusFlushed:
			return // teardown
		case wc.Status != verbs.StatusSuccess:
			sh.errorf("server completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
		case wc.Opcode == verbs.OpcodeSend:
			srvSends++
		case wc.Opcode == verbs.OpcodeRecv:
			slot := int(wc.ID)
			seq := binary.BigEndian.Uint64(srvRbuf[slot*msg:])
			if wc.ByteLen != msg || seq != srvNext {
				sh.errorf("server receive in slot %d: %d bytes, seq %d, want seq %d", slot, wc.ByteLen, seq, srvNext)
				return
			}
			srvNext++
			if err := srv.qp.PostRecv(&verbs.RecvWR{ID: wc.ID, SGL: []verbs.SGE{{MR: srvRMR, Offset: slot * msg, Length: msg}}}); err != nil {
				sh.errorf("PostRecv from the handler: %v", err)
				return
			}
			out := int(seq % depth)
			binary.BigEndian.PutUint64(srvSbuf[out*msg:], seq)
			if err := srv.qp.PostSend(&verbs.SendWR{ID: seq, Op: verbs.OpSend, Flags: verbs.Signaled,
				SGL: []verbs.SGE{{MR: srvSMR, Offset: out * msg, Length: msg}}}); err != nil {
				sh.errorf("PostSend from the handler: %v", err)
			}
		default:
			sh.errorf("server completion with opcode %v", wc.Opcode)
		}
	}
	var cliNext, cliSent uint64
	post := func(seq uint64) error {
		out := int(seq % depth)
		binary.BigEndian.PutUint64(cliSbuf[out*msg:], seq)
		return cli.qp.PostSend(&verbs.SendWR{ID: seq, Op: verbs.OpSend, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: cliSMR, Offset: out * msg, Length: msg}}})
	}
	cliHandler := func(wc *verbs.Completion) {
		ch.enter()
		defer ch.exit()
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
			slot := int(wc.ID)
			seq := binary.BigEndian.Uint64(cliRbuf[slot*msg:])
			if seq != cliNext {
				ch.errorf("client reply seq %d, want %d", seq, cliNext)
				return
			}
			cliNext++
			if err := cli.qp.PostRecv(&verbs.RecvWR{ID: wc.ID, SGL: []verbs.SGE{{MR: cliRMR, Offset: slot * msg, Length: msg}}}); err != nil {
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
	cli, srv = s.connectPair(t, pairConfig{depth: depth,
		clientCQ: []verbs.CQOption{verbs.WithHandler(cliHandler)},
		serverCQ: []verbs.CQOption{verbs.WithHandler(srvHandler)},
		beforeAccept: func(e *endpoint) {
			srvRbuf, srvSbuf = make([]byte, depth*msg), make([]byte, depth*msg)
			srvRMR, srvSMR = e.reg(t, srvRbuf, verbs.AccessLocalWrite), e.reg(t, srvSbuf, 0)
			for i := 0; i < depth; i++ {
				e.recv(t, uint64(i), verbs.SGE{MR: srvRMR, Offset: i * msg, Length: msg})
			}
		},
		beforeDial: func(e *endpoint) {
			cliRbuf, cliSbuf = make([]byte, depth*msg), make([]byte, depth*msg)
			cliRMR, cliSMR = e.reg(t, cliRbuf, verbs.AccessLocalWrite), e.reg(t, cliSbuf, 0)
			for i := 0; i < depth; i++ {
				e.recv(t, uint64(i), verbs.SGE{MR: cliRMR, Offset: i * msg, Length: msg})
			}
		},
	})
	// The first request is posted from here, outside the handler; cliSent
	// is the handler's once it runs, so it is counted before the post.
	cliSent = 1
	if err := post(0); err != nil {
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
