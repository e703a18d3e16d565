package verbstest

import (
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
	const total = 200
	var replies atomic.Uint64 // the client handler's count of in-order replies
	cliHandler := func(p *slotPair, wc *verbs.Completion) {
		p.ch.enter()
		defer p.ch.exit()
		switch {
		case wc.Status == verbs.StatusFlushed || wc.Opcode == verbs.OpcodeSend && wc.Status == verbs.StatusSuccess:
		case wc.Status != verbs.StatusSuccess:
			p.ch.errorf("client completion %d %v: %v %v", wc.ID, wc.Opcode, wc.Status, wc.Err)
		default:
			seq, err := received(p.cli, p.cliR, p.cliRMR, wc)
			if seq != replies.Load() {
				p.ch.errorf("reply seq %d, want %d", seq, replies.Load())
				return
			}
			if err != nil {
				p.ch.errorf("PostRecv: %v", err)
				return
			}
			replies.Add(1)
		}
	}
	p := s.newSlotPair(t, cliHandler)
	d, ok := p.cli.qp.(verbs.DirectProcessor)
	if !ok {
		t.Skip("the provider's QPs do not implement verbs.DirectProcessor")
	}
	direct := 0
	for seq := uint64(0); seq < total; seq++ {
		if err := sendSeq(p.cli, p.cliS, p.cliSMR, seq); err != nil {
			t.Fatalf("PostSend %d: %v", seq, err)
		}
		want := seq + 1
		// A handler that fails ends the wait too (its reply will never count).
		ready := func() bool { return replies.Load() >= want || p.ch.failed() || p.sh.failed() }
		if d.ProcessDirect(ready) {
			p.sh.check(t)
			p.ch.check(t)
			direct++
			if replies.Load() < want {
				t.Fatalf("ProcessDirect returned true before reply %d", seq)
			}
			continue
		}
		d.Resume()
		deadline := time.Now().Add(s.p.Timeout)
		for !ready() {
			if time.Now().After(deadline) {
				t.Fatalf("reply %d never came after ProcessDirect returned false and Resume", seq)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	p.sh.check(t)
	p.ch.check(t)
	if direct == 0 {
		t.Errorf("no wait of %d was satisfied by ProcessDirect", total)
	}
}
