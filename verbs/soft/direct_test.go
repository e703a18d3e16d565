package soft

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// directPair is a connected pair whose client CQ hands its completions to a
// handler that counts successful receives and failed ones. The server sends
// only when the test says (serverSend), so a test can wait until the client
// waits before its message leaves.
type directPair struct {
	cli, srv *endpoint
	recvs    atomic.Int64 // client receives completed successfully
	flushed  atomic.Int64 // client receives completed with an error
	cliBufs  [][]byte
	reply    []byte
	replyMR  verbs.MR
}

const directMsg = 64

func newDirectPair(t *testing.T, n int) *directPair {
	// Only kicks bring the reader back: a missing one hangs the test.
	return newDirectPairTakeBack(t, n, time.Hour)
}

// newDirectPairTakeBack is newDirectPair with the client device's
// Config.TakeBack.
func newDirectPairTakeBack(t *testing.T, n int, takeBack time.Duration) *directPair {
	p := &directPair{}
	handler := func(wc *verbs.Completion) {
		if wc.Opcode != verbs.OpcodeRecv {
			return
		}
		if wc.Status == verbs.StatusSuccess {
			p.recvs.Add(1)
		} else {
			p.flushed.Add(1)
		}
	}
	post := func(e *endpoint, bufs *[][]byte) {
		for i := 0; i < n; i++ {
			b := make([]byte, directMsg)
			*bufs = append(*bufs, b)
			mr := e.reg(t, b, verbs.AccessLocalWrite)
			if err := e.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: mr, Length: directMsg}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var srvBufs [][]byte
	p.cli, p.srv = connectPair(t, pairConfig{
		client:       Config{TakeBack: takeBack},
		depth:        n + 4,
		clientCQ:     []verbs.CQOption{verbs.WithHandler(handler)},
		beforeAccept: func(e *endpoint) { post(e, &srvBufs) },
		beforeDial:   func(e *endpoint) { post(e, &p.cliBufs) },
	})
	p.reply = make([]byte, directMsg)
	p.replyMR = p.srv.reg(t, p.reply, 0)
	// The initiator speaks first (MPA); then the server may send.
	first := p.cli.reg(t, make([]byte, directMsg), 0)
	if err := p.cli.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend, SGL: []verbs.SGE{{MR: first, Length: directMsg}}}); err != nil {
		t.Fatal(err)
	}
	return p
}

// serverSend sends one message, filled with seed's pattern, to the client.
func (p *directPair) serverSend(t *testing.T, seed byte) {
	fillPattern(p.reply, seed)
	if err := p.srv.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend, SGL: []verbs.SGE{{MR: p.replyMR, Length: directMsg}}}); err != nil {
		t.Error(err)
	}
}

// waitRecvs waits (without processing directly) until n receives completed.
func (p *directPair) waitRecvs(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.recvs.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d receives completed, want %d", p.recvs.Load(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// waitRegistered waits until a caller receives for qp or waits for its reader
// to hand over.
func waitRegistered(t *testing.T, qp verbs.QP) {
	t.Helper()
	q := qp.(*queuePair)
	deadline := time.Now().Add(10 * time.Second)
	for q.lead.Load() != leadCaller && !q.wantLead.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no caller receives or waits for the reader")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// waitLead waits until qp's receiver is who.
func waitLead(t *testing.T, qp verbs.QP, who int32) {
	t.Helper()
	q := qp.(*queuePair)
	deadline := time.Now().Add(10 * time.Second)
	for q.lead.Load() != who {
		if time.Now().After(deadline) {
			t.Fatalf("receiver is %d, want %d", q.lead.Load(), who)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// roundDirect waits for the next message with ProcessDirect, sending it once
// the caller is registered, and returns ProcessDirect's result.
func (p *directPair) roundDirect(t *testing.T, seed byte) bool {
	t.Helper()
	n := p.recvs.Load() + 1
	ret := make(chan bool, 1)
	go func() {
		ret <- p.cli.qp.(verbs.DirectProcessor).ProcessDirect(func() bool { return p.recvs.Load() >= n }, time.Time{})
	}()
	waitRegistered(t, p.cli.qp)
	p.serverSend(t, seed)
	return awaitRet(t, ret)
}

// awaitRet returns ProcessDirect's result from ret, failing the test if it has
// not returned within 10 s (a lost hand-over or wake-up).
func awaitRet(t *testing.T, ret <-chan bool) bool {
	t.Helper()
	select {
	case ok := <-ret:
		return ok
	case <-time.After(10 * time.Second):
		t.Fatal("ProcessDirect did not return")
		return false
	}
}

// TestProcessDirectPingPong: a caller waiting for each message in turn
// receives it on its own goroutine. The first finds the reader receiving and
// is handed the receiving over once the reader delivered its message; every
// later one processes its message itself, so the reader never wakes the
// caller. Every message arrives intact.
func TestProcessDirectPingPong(t *testing.T) {
	checkGoroutines(t)
	const rounds = 40
	p := newDirectPair(t, rounds)
	before := p.cli.dev.Stats().DirectFPDUs
	for i := 1; i <= rounds; i++ {
		if !p.roundDirect(t, byte(i)) {
			t.Fatalf("round %d: ProcessDirect returned false", i)
		}
		fillPattern(p.reply, byte(i))
		if got := p.cliBufs[i-1]; !bytes.Equal(got, p.reply) {
			t.Fatalf("message %d = %x..., want %x...", i, got[:8], p.reply[:8])
		}
		if i == 1 {
			waitLead(t, p.cli.qp, leadNone)
		}
	}
	if n := p.cli.dev.Stats().DirectFPDUs - before; n != rounds-1 {
		t.Errorf("callers processed %d FPDUs, want %d (all but the first)", n, rounds-1)
	}
}

// TestTakeBackSweep: once a caller has received directly and left, nobody
// receives for the QP; the device's take-back sweep finds that and kicks the
// reader, which takes receiving back unasked, so a message that then arrives
// with no caller waiting is received. (With the hour-long TakeBack of the
// other tests here the reader would never come back.) Callers still receive
// directly after that, and once no reader is aside the sweep is unscheduled.
func TestTakeBackSweep(t *testing.T) {
	checkGoroutines(t)
	p := newDirectPairTakeBack(t, 8, time.Millisecond)
	for i := 1; i <= 3; i++ {
		if !p.roundDirect(t, byte(i)) {
			t.Fatalf("round %d: ProcessDirect returned false", i)
		}
		waitLead(t, p.cli.qp, leadReader) // taken back: nobody asked
	}
	k := p.recvs.Load()
	p.serverSend(t, 9)
	p.waitRecvs(t, k+1)
	fillPattern(p.reply, 9)
	if got := p.cliBufs[k]; !bytes.Equal(got, p.reply) {
		t.Fatalf("message %d = %x..., want %x...", k+1, got[:8], p.reply[:8])
	}
	if armed, aside := p.cli.dev.takeBack.state(); armed || aside != 0 {
		t.Errorf("sweep armed %v with %d readers aside, want unscheduled with none", armed, aside)
	}
}

// TestTakeBackSweepQPCloses: a QP closed while its reader stands aside (the
// hour-long TakeBack keeps it there) leaves the device's sweep with no reader
// and no timer scheduled.
func TestTakeBackSweepQPCloses(t *testing.T) {
	checkGoroutines(t)
	p := newDirectPair(t, 8)
	if !p.roundDirect(t, 1) {
		t.Fatal("ProcessDirect returned false")
	}
	waitLead(t, p.cli.qp, leadNone)
	state := p.cli.dev.takeBack.state
	if armed, aside := state(); !armed || aside != 1 {
		t.Fatalf("reader aside: sweep armed %v with %d readers, want armed with 1", armed, aside)
	}
	p.cli.qp.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		armed, aside := state()
		if !armed && aside == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("QP closed: sweep armed %v with %d readers, want unscheduled with none", armed, aside)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProcessDirectLargeToReader: a caller processing directly leaves an FPDU
// with a large payload (placed directly into registered memory) to the reader,
// which takes over at once; the caller's completion still arrives, with the
// data, and later waits go direct again.
func TestProcessDirectLargeToReader(t *testing.T) {
	checkGoroutines(t)
	p := newDirectPair(t, 8)
	d := p.cli.qp.(verbs.DirectProcessor)
	if !p.roundDirect(t, 1) {
		t.Fatal("ProcessDirect returned false")
	}
	waitLead(t, p.cli.qp, leadNone)
	const big = 256 << 10
	sink := make([]byte, big)
	sinkMR := p.cli.reg(t, sink, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	src := make([]byte, big)
	fillPattern(src, 7)
	srcMR := p.srv.reg(t, src, 0)
	k := p.recvs.Load()
	ret := make(chan bool, 1)
	go func() { ret <- d.ProcessDirect(func() bool { return p.recvs.Load() >= k+1 }, time.Time{}) }()
	waitLead(t, p.cli.qp, leadCaller)
	if err := p.srv.qp.PostSend(&verbs.SendWR{Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: srcMR, Length: big}},
		RemoteSTag: sinkMR.RKey(), RemoteTO: sinkMR.Addr(), Next: &verbs.SendWR{Op: verbs.OpSend,
			SGL: []verbs.SGE{{MR: p.replyMR, Length: directMsg}}}}); err != nil {
		t.Fatal(err)
	}
	if awaitRet(t, ret) {
		t.Error("ProcessDirect returned true over a 256 KiB RDMA Write, want false (the reader places it)")
	}
	p.waitRecvs(t, k+1)
	if !bytes.Equal(sink, src) {
		t.Fatal("the RDMA Write's data differs")
	}
	// The reader receives again; the next wait is handed over.
	waitLead(t, p.cli.qp, leadReader)
	if !p.roundDirect(t, 2) {
		t.Error("ProcessDirect returned false after the large message")
	}
	waitLead(t, p.cli.qp, leadNone)
}

// handOverNow makes p's client reader hand over: one round.
func (p *directPair) handOverNow(t *testing.T) {
	t.Helper()
	if !p.roundDirect(t, 1) {
		t.Fatal("ProcessDirect returned false")
	}
	waitLead(t, p.cli.qp, leadNone)
}

// TestProcessDirectConnectionEnds: closing the QP, or the peer closing the
// connection, ends a caller that is processing directly and waiting for the
// socket; the QP fails, its receives are flushed, and every goroutine ends.
func TestProcessDirectConnectionEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(p *directPair)
	}{
		{"Close", func(p *directPair) { p.cli.qp.Close() }},
		{"PeerCloses", func(p *directPair) { p.srv.qp.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			p := newDirectPair(t, 8)
			p.handOverNow(t)
			d := p.cli.qp.(verbs.DirectProcessor)
			ret := make(chan bool, 1)
			go func() { ret <- d.ProcessDirect(func() bool { return p.flushed.Load() > 0 }, time.Time{}) }()
			waitLead(t, p.cli.qp, leadCaller)
			tc.end(p)
			awaitRet(t, ret)
			select {
			case <-p.cli.qp.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the client QP did not fail")
			}
			deadline := time.Now().Add(10 * time.Second)
			for p.flushed.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no receive was flushed")
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestProcessDirectResume: a consumer that waits without processing directly
// while another caller does calls Resume; when that caller leaves, the reader
// takes over at once (not after Config.TakeBack) and delivers the next message.
func TestProcessDirectResume(t *testing.T) {
	checkGoroutines(t)
	p := newDirectPair(t, 8)
	p.handOverNow(t)
	d := p.cli.qp.(verbs.DirectProcessor)
	k := p.recvs.Load()
	ret := make(chan bool, 1)
	go func() { ret <- d.ProcessDirect(func() bool { return p.recvs.Load() >= k+1 }, time.Time{}) }()
	waitLead(t, p.cli.qp, leadCaller)
	d.Resume() // a second waiter
	p.serverSend(t, 2)
	if !awaitRet(t, ret) {
		t.Error("the caller processing directly did not get its completion")
	}
	waitLead(t, p.cli.qp, leadReader)
	p.serverSend(t, 3)
	p.waitRecvs(t, k+2)
}

// TestProcessDirectDoneBeforeRegistering: a caller whose completion the reader
// delivers before the caller asks for a hand-over returns true at once rather
// than wait for a hand-over that would come only after the next message.
func TestProcessDirectDoneBeforeRegistering(t *testing.T) {
	checkGoroutines(t)
	p := newDirectPair(t, 8)
	k := p.recvs.Load()
	p.serverSend(t, 1)
	p.waitRecvs(t, k+1)
	if !p.cli.qp.(verbs.DirectProcessor).ProcessDirect(func() bool { return p.recvs.Load() >= k+1 }, time.Time{}) {
		t.Fatal("ProcessDirect returned false with its completion delivered")
	}
	if p.cli.qp.(*queuePair).wantLead.Load() {
		t.Error("the request for a hand-over was left behind")
	}
}

// TestProcessDirectTerminateSilentPeer: a QP that fails with a Terminate keeps
// its socket open for the peer to read the Terminate and close; a caller
// processing directly and waiting for that socket is woken at once, even when
// the peer (here a raw one) never closes.
func TestProcessDirectTerminateSilentPeer(t *testing.T) {
	s := newServerUnderTest(t, Config{TakeBack: time.Hour})
	p := s.connectRaw(t, false, verbs.ConnParams{})
	d := s.qp.(verbs.DirectProcessor)
	failed := func() bool {
		select {
		case <-s.qp.Done():
			return true
		default:
			return false
		}
	}
	// The reader receives; a caller waits for it to hand over, which it does
	// after the next FPDU it delivers.
	ret := make(chan bool, 1)
	go func() { ret <- d.ProcessDirect(failed, time.Time{}) }()
	waitRegistered(t, s.qp)
	p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr()}, []byte("data"))
	waitLead(t, s.qp, leadCaller)
	s.qp.(*queuePair).terminateLocal(iwarp.TermRDMAPCatastrophicStream, "test", nil)
	awaitRet(t, ret)
	p.expectTerminate(iwarp.TermRDMAPCatastrophicStream)
}

// TestProcessDirectCloseWhileAwaiting: a caller waiting for the reader to hand
// over gives up when the QP is closed, and the reader still ends (Close
// returns): the request is withdrawn, not left for a hand-over to nobody.
func TestProcessDirectCloseWhileAwaiting(t *testing.T) {
	checkGoroutines(t)
	p := newDirectPair(t, 8)
	ret := make(chan bool, 1)
	go func() {
		ret <- p.cli.qp.(verbs.DirectProcessor).ProcessDirect(func() bool { return p.flushed.Load() > 0 }, time.Time{})
	}()
	waitRegistered(t, p.cli.qp)
	closed := make(chan struct{})
	go func() { p.cli.qp.Close(); close(closed) }()
	awaitRet(t, ret)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestProcessDirectBoundedStalledPeer: a peer that stops in the middle of an
// FPDU holds up neither a caller whose wait is bounded nor the QP. With the
// caller receiving, its wait for the rest of the FPDU ends at its deadline;
// with the reader stuck in the FPDU, so does the caller's wait for a
// hand-over. Each time the reader receives again afterwards: the rest of the
// FPDU, once the peer sends it, is placed.
func TestProcessDirectBoundedStalledPeer(t *testing.T) {
	s := newServerUnderTest(t, Config{TakeBack: time.Hour})
	p := s.connectRaw(t, false, verbs.ConnParams{})
	d := s.qp.(verbs.DirectProcessor)
	n := 0
	// write sends an RDMA Write of a fresh pattern to a fresh part of s.mr
	// (the race detector does not see the socket order the writes after the
	// checks of earlier ones), all but its last 5 bytes when stall is set, and
	// returns the rest and the pattern.
	write := func(stall bool) (rest, data []byte) {
		t.Helper()
		n++
		data = bytes.Repeat([]byte{byte(n)}, 64)
		h := iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr() + uint64(64*n)}
		b, err := iwarp.AppendFPDU(nil, &h, data, false)
		if err != nil {
			t.Fatal(err)
		}
		if !stall {
			p.write(b)
			return nil, data
		}
		p.write(b[:len(b)-5])
		return b[len(b)-5:], data
	}
	// placed checks that data was placed: a Send behind it completes (so
	// the Write before it has been placed, and the completion orders the
	// placement before the check).
	rmr := s.reg(t, make([]byte, 8), verbs.AccessLocalWrite)
	sends := uint64(0)
	placed := func(data []byte) {
		t.Helper()
		sends++
		if err := s.qp.PostRecv(&verbs.RecvWR{ID: sends, SGL: []verbs.SGE{{MR: rmr, Length: 8}}}); err != nil {
			t.Fatal(err)
		}
		p.sendMsg(iwarp.OpSend, []byte("ok"), 0)
		s.expect(t, sends, verbs.OpcodeRecv, verbs.StatusSuccess)
		if at := 64 * int(data[0]); !bytes.Equal(s.buf[at:at+len(data)], data) {
			t.Fatalf("write %d was not placed", data[0])
		}
	}
	// start runs ProcessDirect and returns where its result comes.
	start := func(done func() bool, deadline time.Time) <-chan bool {
		ret := make(chan bool, 1)
		go func() { ret <- d.ProcessDirect(done, deadline) }()
		return ret
	}
	never := func() bool { return false }
	// lead makes a caller the receiver (the reader hands over after the next
	// FPDU), then stalls the peer in the FPDU after that.
	lead := func(deadline time.Time) (<-chan bool, []byte, []byte) {
		t.Helper()
		ret := start(never, deadline)
		waitRegistered(t, s.qp)
		_, data := write(false)
		placed(data)
		waitLead(t, s.qp, leadCaller)
		rest, data := write(true)
		return ret, rest, data
	}

	// The caller receives; its deadline passes.
	ret, rest, data := lead(time.Now().Add(100 * time.Millisecond))
	if awaitRet(t, ret) {
		t.Fatal("ProcessDirect returned true at its deadline")
	}
	d.Resume()
	p.write(rest)
	placed(data)

	// The reader is stuck in an FPDU; a caller's wait for it to hand over
	// ends at the deadline.
	waitLead(t, s.qp, leadReader)
	rest, data = write(true)
	if awaitRet(t, start(never, time.Now().Add(50*time.Millisecond))) {
		t.Fatal("ProcessDirect returned true at its deadline")
	}
	d.Resume()
	p.write(rest)
	placed(data)
	if q := s.qp.(*queuePair); q.wantLead.Load() || q.failed.Load() {
		t.Errorf("after the waits: hand-over requested %v, QP failed %v", q.wantLead.Load(), q.failed.Load())
	}
}

// TestProcessDirectCrowded: while the device's busy QPs outnumber the
// processors (crowd) and the reader receives, a caller does not take receiving
// over: ProcessDirect returns false at once and the reader delivers the
// message. Once the device is not crowded, the next caller receives directly
// again.
func TestProcessDirectCrowded(t *testing.T) {
	checkGoroutines(t)
	p := newDirectPair(t, 8)
	c := &p.cli.dev.crowd // the client posts nothing more: the counts stay as set
	c.procs.Store(1)
	c.n.Store(2)
	d := p.cli.qp.(verbs.DirectProcessor)
	before := p.cli.dev.Stats().DirectFPDUs
	waitLead(t, p.cli.qp, leadReader)
	ret := make(chan bool, 1)
	go func() { ret <- d.ProcessDirect(func() bool { return p.recvs.Load() >= 1 }, time.Time{}) }()
	p.serverSend(t, 1)
	if awaitRet(t, ret) {
		t.Fatal("ProcessDirect received on a crowded device")
	}
	p.waitRecvs(t, 1)
	fillPattern(p.reply, 1)
	if !bytes.Equal(p.cliBufs[0], p.reply) {
		t.Fatalf("message 1 = %x..., want %x...", p.cliBufs[0][:8], p.reply[:8])
	}
	if n := p.cli.dev.Stats().DirectFPDUs - before; n != 0 {
		t.Errorf("callers processed %d FPDUs on a crowded device, want 0", n)
	}
	c.n.Store(1)
	if !p.roundDirect(t, 2) {
		t.Fatal("ProcessDirect returned false once the device was not crowded")
	}
	if n := p.cli.dev.Stats().DirectFPDUs - before; n != 0 {
		t.Errorf("the first caller after the crowd processed %d FPDUs, want 0 (the reader hands over after delivering)", n)
	}
	if !p.roundDirect(t, 3) {
		t.Fatal("ProcessDirect returned false")
	}
	if n := p.cli.dev.Stats().DirectFPDUs - before; n != 1 {
		t.Errorf("callers processed %d FPDUs, want 1", n)
	}
}
