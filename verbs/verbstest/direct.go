package verbstest

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// testDirectProcessor: on a QP that implements verbs.DirectProcessor, a caller
// that waits for each reply with ProcessDirect gets every reply, in order, with
// the handler contract kept (calls never overlap, no completion delivered twice);
// when ProcessDirect returns false the caller waits after Resume, as the contract
// says, and the reply still comes. Skipped for providers without it.
func (s *suite) testDirectProcessor(t *testing.T) {
	const (
		depth = 8
		total = 200
		msg   = 8
	)
	var srv, cli *endpoint
	var srvRbuf, srvSbuf, cliRbuf, cliSbuf []byte
	var srvRMR, srvSMR, cliRMR, cliSMR verbs.MR
	sh, ch := newHandlerCheck(), newHandlerCheck()
	srvHandler := func(wc *verbs.Completion) { // echo each message's sequence number
		sh.enter()
		defer sh.exit()
		switch {
		case wc.Status == verbs.StatusFlushed || wc.Opcode == verbs.OpcodeSend:
		case wc.Status != verbs.StatusSuccess:
			sh.errorf("server completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
		default:
			slot := int(wc.ID)
			seq := binary.BigEndian.Uint64(srvRbuf[slot*msg:])
			if err := srv.qp.PostRecv(&verbs.RecvWR{ID: wc.ID, SGL: []verbs.SGE{{MR: srvRMR, Offset: slot * msg, Length: msg}}}); err != nil {
				sh.errorf("PostRecv: %v", err)
				return
			}
			out := int(seq % depth)
			binary.BigEndian.PutUint64(srvSbuf[out*msg:], seq)
			if err := srv.qp.PostSend(&verbs.SendWR{ID: seq, Op: verbs.OpSend, Flags: verbs.Signaled,
				SGL: []verbs.SGE{{MR: srvSMR, Offset: out * msg, Length: msg}}}); err != nil {
				sh.errorf("PostSend: %v", err)
			}
		}
	}
	var replies atomic.Uint64 // the client handler's count of in-order replies
	cliHandler := func(wc *verbs.Completion) {
		ch.enter()
		defer ch.exit()
		switch {
		case wc.Status == verbs.StatusFlushed || wc.Opcode == verbs.OpcodeSend:
		case wc.Status != verbs.StatusSuccess:
			ch.errorf("client completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
		default:
			slot := int(wc.ID)
			seq := binary.BigEndian.Uint64(cliRbuf[slot*msg:])
			if seq != replies.Load() {
				ch.errorf("reply seq %d, want %d", seq, replies.Load())
				return
			}
			if err := cli.qp.PostRecv(&verbs.RecvWR{ID: wc.ID, SGL: []verbs.SGE{{MR: cliRMR, Offset: slot * msg, Length: msg}}}); err != nil {
				ch.errorf("PostRecv: %v", err)
				return
			}
			replies.Add(1)
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
	d, ok := cli.qp.(verbs.DirectProcessor)
	if !ok {
		t.Skip("the provider's QPs do not implement verbs.DirectProcessor")
	}
	direct := 0
	for seq := uint64(0); seq < total; seq++ {
		out := int(seq % depth)
		binary.BigEndian.PutUint64(cliSbuf[out*msg:], seq)
		if err := cli.qp.PostSend(&verbs.SendWR{ID: seq, Op: verbs.OpSend, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: cliSMR, Offset: out * msg, Length: msg}}}); err != nil {
			t.Fatalf("PostSend %d: %v", seq, err)
		}
		want := seq + 1
		if d.ProcessDirect(func() bool { return replies.Load() >= want }) {
			direct++
			if replies.Load() < want {
				t.Fatalf("ProcessDirect returned true before reply %d", seq)
			}
			continue
		}
		d.Resume()
		deadline := time.Now().Add(s.p.Timeout)
		for replies.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("reply %d never came after ProcessDirect returned false and Resume", seq)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	sh.check(t)
	ch.check(t)
	if direct == 0 {
		t.Errorf("no wait of %d was satisfied by ProcessDirect", total)
	}
}
