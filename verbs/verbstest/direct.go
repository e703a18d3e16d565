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
// says, and the reply still comes. A deadline ends a wait without disturbing the
// receiving that follows. Skipped for providers without it.
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
	// process is d.ProcessDirect, failing the test if it does not return
	// within the provider's Timeout (a wait that nothing ends would hang the
	// test otherwise).
	process := func(done func() bool, deadline time.Time) bool {
		t.Helper()
		ret := make(chan bool, 1)
		go func() { ret <- d.ProcessDirect(done, deadline) }()
		select {
		case ok := <-ret:
			return ok
		case <-time.After(s.p.Timeout):
			t.Fatal("ProcessDirect did not return")
			return false
		}
	}
	// exchange sends seq and waits for its reply through ProcessDirect
	// (bounded by deadline, zero: none), falling back to Resume and polling
	// as the contract says; it reports whether ProcessDirect got the reply.
	exchange := func(seq uint64, deadline time.Time) bool {
		t.Helper()
		if err := sendSeq(p.cli, p.cliS, p.cliSMR, seq); err != nil {
			t.Fatalf("PostSend %d: %v", seq, err)
		}
		want := seq + 1
		// A handler that fails ends the wait too (its reply will never count).
		ready := func() bool { return replies.Load() >= want || p.ch.failed() || p.sh.failed() }
		if process(ready, deadline) {
			p.sh.check(t)
			p.ch.check(t)
			if replies.Load() < want {
				t.Fatalf("ProcessDirect returned true before reply %d", seq)
			}
			return true
		}
		d.Resume()
		limit := time.Now().Add(s.p.Timeout)
		for !ready() {
			if time.Now().After(limit) {
				t.Fatalf("reply %d never came after ProcessDirect returned false and Resume", seq)
			}
			time.Sleep(50 * time.Microsecond)
		}
		return false
	}
	direct, seq := 0, uint64(0)
	for ; seq < total; seq++ {
		if exchange(seq, time.Time{}) {
			direct++
		}
	}
	each := s.p.NoDirectWaits == "" && s.p.DirectWaitsBounded == ""
	if direct == 0 && each {
		t.Errorf("no wait of %d was satisfied by ProcessDirect", total)
	}
	unbounded := direct
	// Bounded waits. A wait for nothing ends at its deadline, reporting
	// false, whether the caller found the provider's goroutine receiving or
	// took over from the caller before it; a far deadline does not stop a
	// reply from being received directly.
	direct = 0
	for i := 0; i < 20; i++ {
		if process(func() bool { return false }, time.Now().Add(time.Millisecond)) {
			t.Fatal("ProcessDirect with done never true returned true")
		}
		d.Resume()
		if exchange(seq, time.Now().Add(time.Hour)) {
			direct++
		}
		seq++
	}
	if direct == 0 && each {
		t.Error("no wait with a deadline was satisfied by ProcessDirect")
	}
	switch {
	case s.p.NoDirectWaits != "":
		t.Logf("waits ended in ProcessDirect not required: %s", s.p.NoDirectWaits)
	case s.p.DirectWaitsBounded != "":
		if unbounded+direct == 0 {
			t.Errorf("no wait of %d was satisfied by ProcessDirect", total+20)
		}
		t.Logf("%d of %d waits without a deadline and %d of 20 with one ended in ProcessDirect (%s)", unbounded, total, direct, s.p.DirectWaitsBounded)
	}
	p.sh.check(t)
	p.ch.check(t)
}
