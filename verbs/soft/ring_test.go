package soft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TestCQRingGrowsOnDemand pins the memory an idle CQ holds: its ring starts at
// cqInitRing entries whatever its depth, doubles only as completions pile up,
// keeps them in order across growth, and never holds more than depth (the
// completion beyond it overruns the CQ as before).
func TestCQRingGrowsOnDemand(t *testing.T) {
	const depth = 254
	cq, err := New(Config{}).CreateCQ(depth)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	c := cq.(*compQueue)
	if len(c.ring) != cqInitRing {
		t.Fatalf("new CQ of depth %d holds a ring of %d entries, want %d", depth, len(c.ring), cqInitRing)
	}
	// Leave one completion in the middle of the ring (an emptied ring starts
	// again at its first entry), so that the ring wraps and growth has to
	// unwrap it.
	var wc [depth]verbs.Completion
	const left = 1000 + cqInitRing/2 - 1
	for i := 0; i < cqInitRing/2; i++ {
		c.push(&verbs.Completion{ID: uint64(1000 + i)})
	}
	if n, err := c.Poll(wc[:cqInitRing/2-1]); n != cqInitRing/2-1 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	for i := 0; i < depth-1; i++ {
		c.push(&verbs.Completion{ID: uint64(i)})
		if want := min(max(cqInitRing, 1<<bits.Len(uint(i+1))), depth); len(c.ring) > want {
			t.Fatalf("holding %d completions the ring has %d entries, want at most %d", i+2, len(c.ring), want)
		}
	}
	if len(c.ring) != depth {
		t.Fatalf("full CQ ring holds %d entries, want depth %d", len(c.ring), depth)
	}
	c.push(&verbs.Completion{ID: depth})
	if len(c.ring) != depth {
		t.Fatalf("overrun grew the ring to %d entries beyond depth %d", len(c.ring), depth)
	}
	n, err := c.Poll(wc[:])
	if n != depth || err != nil {
		t.Fatalf("Poll = %d, %v; want %d completions", n, err, depth)
	}
	if wc[0].ID != left {
		t.Fatalf("first completion has ID %d, want %d: order lost across growth", wc[0].ID, left)
	}
	for i := 1; i < n; i++ {
		if wc[i].ID != uint64(i-1) {
			t.Fatalf("completion %d has ID %d: order lost across growth", i, wc[i].ID)
		}
	}
	var oe *verbs.CQOverrunError
	if _, err := c.Poll(wc[:]); !errors.As(err, &oe) || oe.Depth != depth {
		t.Fatalf("Poll after overrun = %v, want CQOverrunError{Depth: %d}", err, depth)
	}
}

// TestCQReusesFirstEntry: a CQ that holds one completion at a time, polled or
// delivered to a handler, keeps it in the ring's first entry every time: a
// ring that went round would touch a different line of memory for each
// completion, a cache miss each at many connections.
func TestCQReusesFirstEntry(t *testing.T) {
	var got []uint64
	for _, handler := range []bool{false, true} {
		var opts []verbs.CQOption
		if handler {
			opts = append(opts, verbs.WithHandler(func(wc *verbs.Completion) { got = append(got, wc.ID) }))
		}
		cq, err := New(Config{}).CreateCQ(64, opts...)
		if err != nil {
			t.Fatal(err)
		}
		c := cq.(*compQueue)
		var wc [1]verbs.Completion
		for i := range 3 * cqInitRing {
			c.push(&verbs.Completion{ID: uint64(i)})
			if c.ring[0].ID != uint64(i) {
				t.Fatalf("handler %v: completion %d was not put in the ring's first entry", handler, i)
			}
			if handler {
				c.deliver()
			} else if n, err := c.Poll(wc[:]); n != 1 || err != nil || wc[0].ID != uint64(i) {
				t.Fatalf("Poll = %d, %v, ID %d; want completion %d", n, err, wc[0].ID, i)
			}
		}
		if handler && len(got) != 3*cqInitRing {
			t.Fatalf("the handler got %d completions, want %d", len(got), 3*cqInitRing)
		}
		cq.Close()
	}
}

// TestSQRingGrowsOnDemand pins the memory an idle QP's send queue holds and the
// send queue's semantics while its ring grows: the ring starts at sqInitRing
// entries; while a work request is in flight (referenced by the writer) the ring
// cannot move, so requests beyond it wait in order in sqOver, invisible to the
// writer; MaxSendWR still bounds everything queued (ErrQueueFull beyond it); the
// ring grows, never beyond MaxSendWR+1 (see queuePair.sq), once nothing is in
// flight, with the order kept. No connection: the test plays the writer's part
// on the QP's state.
func TestSQRingGrowsOnDemand(t *testing.T) {
	const depth = 40
	dev := New(Config{})
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(4 * depth)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	vqp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: depth, MaxRecvWR: 1, MaxSendSGE: 2})
	if err != nil {
		t.Fatal(err)
	}
	q := vqp.(*queuePair)
	if len(q.sq) != sqInitRing {
		t.Fatalf("new QP with MaxSendWR %d holds a send ring of %d entries, want %d", depth, len(q.sq), sqInitRing)
	}
	mr, err := pd.RegMR(make([]byte, 64), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	send := func(id uint64) *verbs.SendWR {
		return &verbs.SendWR{ID: id, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: mr, Offset: int(id), Length: 2}}}
	}
	q.mu.Lock()
	q.state = verbs.StateRTS
	q.mu.Unlock()
	next := uint64(0)
	post := func(k int) {
		t.Helper()
		for i := 0; i < k; i++ {
			if err := q.PostSend(send(next)); err != nil {
				t.Fatalf("PostSend %d: %v", next, err)
			}
			next++
		}
	}
	post(sqInitRing)
	q.mu.Lock()
	q.sqSent++ // the writer took request 0
	q.mu.Unlock()
	post(5)
	if len(q.sq) != sqInitRing || len(q.sqOver) != 5 || q.sqTail != sqInitRing {
		t.Fatalf("with a request in flight: ring %d, waiting %d, tail %d; want %d, 5, %d", len(q.sq), len(q.sqOver), q.sqTail, sqInitRing, sqInitRing)
	}
	// A chain with a bad request posts none of it.
	bad := send(100)
	bad.Next = &verbs.SendWR{ID: 101, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: mr, Length: 65}}}
	if err := q.PostSend(bad); !errors.Is(err, verbs.ErrInvalidWR) || len(q.sqOver) != 5 {
		t.Fatalf("bad chain: %v, %d waiting; want ErrInvalidWR, 5", err, len(q.sqOver))
	}
	post(depth - int(next))
	if err := q.PostSend(send(next)); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("request %d beyond MaxSendWR %d: %v, want ErrQueueFull", next, depth, err)
	}
	// Request 0 completes: nothing is in flight, the ring grows and takes the rest.
	q.mu.Lock()
	q.sq[0].state, q.sq[0].status = wqeDone, verbs.StatusSuccess
	q.retireLocked()
	ring, waiting, queued := len(q.sq), len(q.sqOver), q.sqTail-q.sqHead
	var order []uint64
	for i := q.sqHead; i < q.sqTail; i++ {
		order = append(order, q.sq[i%uint64(len(q.sq))].id)
	}
	q.mu.Unlock()
	q.deliver()
	if ring > depth+1 || waiting != 0 || queued != depth-1 {
		t.Fatalf("after growth: ring %d, waiting %d, queued %d; want at most %d, 0, %d", ring, waiting, queued, depth+1, depth-1)
	}
	for i, id := range order {
		if id != uint64(i+1) {
			t.Fatalf("queue order after growth %v", order)
		}
	}
	post(1)
	if err := q.PostSend(send(next)); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("request %d beyond MaxSendWR %d: %v, want ErrQueueFull", next, depth, err)
	}
	var wc [4 * depth]verbs.Completion
	if n, err := cq.Poll(wc[:]); n != 1 || err != nil || wc[0].ID != 0 || wc[0].Status != verbs.StatusSuccess {
		t.Fatalf("Poll = %d, %v, %+v; want request 0's success", n, err, wc[0])
	}
	q.Close()
}

// TestSQFlushesWaitingRequests: when the QP fails while requests wait for the
// send ring to grow (sqOver), they are flushed too, after those in the ring, in
// posting order.
func TestSQFlushesWaitingRequests(t *testing.T) {
	const depth = 20
	dev := New(Config{})
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(4 * depth)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	vqp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: depth, MaxRecvWR: 1})
	if err != nil {
		t.Fatal(err)
	}
	q := vqp.(*queuePair)
	mr, err := pd.RegMR(make([]byte, 64), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	q.mu.Lock()
	q.state = verbs.StateRTS
	q.mu.Unlock()
	for id := uint64(0); id < depth; id++ {
		if err := q.PostSend(&verbs.SendWR{ID: id, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: mr, Length: 1}}}); err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			q.mu.Lock()
			q.sqSent++ // the writer took request 0
			q.mu.Unlock()
		}
	}
	q.mu.Lock()
	waiting := len(q.sqOver)
	q.mu.Unlock()
	if waiting != depth-sqInitRing {
		t.Fatalf("%d requests wait for the ring, want %d", waiting, depth-sqInitRing)
	}
	q.Close()
	var wc [4 * depth]verbs.Completion
	n, err := cq.Poll(wc[:])
	if n != depth || err != nil {
		t.Fatalf("Poll after Close = %d, %v; want %d flushed", n, err, depth)
	}
	for i := 0; i < n; i++ {
		if wc[i].ID != uint64(i) || wc[i].Status != verbs.StatusFlushed {
			t.Fatalf("flushed completion %d: ID %d %v, want ID %d flushed", i, wc[i].ID, wc[i].Status, i)
		}
	}
}

// TestSQGrowthBehindPendingRead: on a live connection, Sends posted behind an
// RDMA Read the peer has not answered fill the send queue to MaxSendWR: those
// beyond the initial ring wait (the pending Read pins the ring in place) and go
// out, in order, once the Read completes and the ring grows; every request
// completes in posting order. The raw peer decides when the Read completes, so
// the waiting is deterministic.
func TestSQGrowthBehindPendingRead(t *testing.T) {
	const depth = 32
	dev := New(Config{})
	ln, err := dev.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &serverUnderTest{endpoint: newEndpoint(t, dev, depth), ln: ln}
	t.Cleanup(func() { s.qp.Close(); s.cq.Close(); ln.Close() })
	rmr := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
	if err := s.qp.PostRecv(&verbs.RecvWR{ID: 500, SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
		t.Fatal(err)
	}
	p := s.connectRaw(t, false, verbs.ConnParams{IRD: 4, ORD: 4})
	p.sendMsg(iwarp.OpSend, []byte("hello"), 0) // the responder's writer waits for the peer's first FPDU
	s.expect(t, 500, verbs.OpcodeRecv, verbs.StatusSuccess)

	sink := s.reg(t, make([]byte, 8), verbs.AccessLocalWrite)
	if err := s.qp.PostSend(&verbs.SendWR{ID: 999, Op: verbs.OpRead, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: sink, Length: 8}}, RemoteSTag: 0x1234, RemoteTO: 0}); err != nil {
		t.Fatal(err)
	}
	f := p.next()
	var rr iwarp.ReadRequest
	if f == nil || f.Header.Opcode != iwarp.OpReadRequest || rr.Decode(f.Payload) != nil {
		t.Fatalf("peer got %+v, want a Read Request", f)
	}
	sbuf := make([]byte, depth)
	for i := range sbuf {
		sbuf[i] = byte(i)
	}
	smr := s.reg(t, sbuf, 0)
	for i := 0; i < depth-1; i++ {
		if err := s.qp.PostSend(&verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Offset: i, Length: 1}}}); err != nil {
			t.Fatalf("PostSend %d: %v", i, err)
		}
	}
	if err := s.qp.PostSend(&verbs.SendWR{ID: depth, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Length: 1}}}); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("request beyond MaxSendWR %d: %v, want ErrQueueFull", depth, err)
	}
	q := s.qp.(*queuePair)
	q.mu.Lock()
	ring, waiting := len(q.sq), len(q.sqOver)
	q.mu.Unlock()
	if ring != sqInitRing || waiting != depth-sqInitRing {
		t.Fatalf("behind the pending Read: ring %d, waiting %d; want %d, %d", ring, waiting, sqInitRing, depth-sqInitRing)
	}
	next := 0
	recvSend := func() {
		t.Helper()
		f := p.next()
		if f == nil || f.Header.Opcode != iwarp.OpSend || len(f.Payload) != 1 || f.Payload[0] != byte(next) {
			t.Fatalf("peer got %+v, want Send %d", f, next)
		}
		next++
	}
	for next < sqInitRing-1 {
		recvSend()
	}
	p.send(iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: rr.SinkSTag, TO: rr.SinkTO}, []byte("12345678"))
	for next < depth-1 {
		recvSend()
	}
	s.expect(t, 999, verbs.OpcodeRead, verbs.StatusSuccess)
	for i := 0; i < depth-1; i++ {
		s.expect(t, uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
	}
	q.mu.Lock()
	ring, waiting = len(q.sq), len(q.sqOver)
	q.mu.Unlock()
	if ring > depth+1 || waiting != 0 {
		t.Fatalf("after the Read: ring %d, waiting %d; want at most %d, 0", ring, waiting, depth+1)
	}
}

// TestSQGrowthUnderTraffic: on a connected pair, a burst of Sends (single posts
// and chains) behind a large RDMA Read fills the send queue to MaxSendWR and
// grows the send ring from sqInitRing entries; every message arrives once, in
// order, with its data, and every request completes in order.
func TestSQGrowthUnderTraffic(t *testing.T) {
	const depth = 64
	rbuf := make([]byte, depth*8)
	cli, srv := connectPair(t, pairConfig{depth: depth, beforeAccept: func(e *endpoint) {
		mr := e.reg(t, rbuf, verbs.AccessLocalWrite)
		for i := 0; i < depth; i++ {
			if err := e.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: mr, Offset: 8 * i, Length: 8}}}); err != nil {
				t.Fatal(err)
			}
		}
	}})
	sbuf := make([]byte, depth*8)
	for i := 0; i < depth; i++ {
		binary.BigEndian.PutUint64(sbuf[8*i:], uint64(i)+1000)
	}
	smr := cli.reg(t, sbuf, 0)
	// A large RDMA Read first: while it is pending (in flight, referenced by the
	// reader) the ring cannot move, so the Sends behind it wait for it.
	const big = 4 << 20
	src := srv.reg(t, make([]byte, big), verbs.AccessRemoteRead)
	sink := cli.reg(t, make([]byte, big), verbs.AccessLocalWrite)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 999, Op: verbs.OpRead, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: sink, Length: big}}, RemoteSTag: src.RKey(), RemoteTO: src.Addr()}); err != nil {
		t.Fatal(err)
	}
	wrs := make([]verbs.SendWR, depth)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Offset: 8 * i, Length: 8}}}
	}
	for i := 0; i < depth-1; { // the Read takes one slot
		k := 1 + i%4 // chains of 1..4
		k = min(k, depth-1-i)
		for j := i; j < i+k-1; j++ {
			wrs[j].Next = &wrs[j+1]
		}
		if err := cli.qp.PostSend(&wrs[i]); err != nil {
			t.Fatalf("PostSend %d (+%d): %v", i, k-1, err)
		}
		i += k
	}
	cli.expect(t, 999, verbs.OpcodeRead, verbs.StatusSuccess)
	for i := 0; i < depth-1; i++ {
		cli.expect(t, uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
	}
	for i := 0; i < depth-1; i++ {
		wc := srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
		if got := binary.BigEndian.Uint64(rbuf[8*i:]); wc.ByteLen != 8 || got != uint64(i)+1000 {
			t.Fatalf("receive %d holds %d (%d bytes), want %d", i, got, wc.ByteLen, i+1000)
		}
	}
	q := cli.qp.(*queuePair)
	q.mu.Lock()
	ring := len(q.sq)
	q.mu.Unlock()
	if ring > depth+1 {
		t.Fatalf("send ring grew to %d entries, beyond MaxSendWR+1 = %d", ring, depth+1)
	}
}

// TestRQRingGrowsOnDemand: a QP's receive ring starts at sqInitRing entries,
// grows when PostRecv finds it full, up to MaxRecvWR (ErrQueueFull beyond), and
// may move while the reader is in the middle of a message: that message and the
// ones after it land in the receives they were posted for, in order.
func TestRQRingGrowsOnDemand(t *testing.T) {
	const depth = 32
	dev := New(Config{})
	ln, err := dev.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &serverUnderTest{endpoint: newEndpoint(t, dev, depth), ln: ln}
	t.Cleanup(func() { s.qp.Close(); s.cq.Close(); ln.Close() })
	q := s.qp.(*queuePair)
	if len(q.rq) != sqInitRing {
		t.Fatalf("new QP with MaxRecvWR %d holds a receive ring of %d entries, want %d", depth, len(q.rq), sqInitRing)
	}
	buf := make([]byte, depth*16)
	mr := s.reg(t, buf, verbs.AccessLocalWrite)
	postRecv := func(i int) error {
		return s.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: mr, Offset: 16 * i, Length: 16}}})
	}
	if err := postRecv(0); err != nil {
		t.Fatal(err)
	}
	p := s.connectRaw(t, false, verbs.ConnParams{})
	// The first half of message 0, then the ring grows (and moves), then the rest.
	p.send(iwarp.Header{Opcode: iwarp.OpSend, QN: 0, MSN: 1, MO: 0}, []byte("message "))
	for i := 1; i < depth; i++ {
		if err := postRecv(i); err != nil {
			t.Fatalf("PostRecv %d: %v", i, err)
		}
	}
	if err := postRecv(depth); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("receive beyond MaxRecvWR %d: %v, want ErrQueueFull", depth, err)
	}
	q.mu.Lock()
	ring := len(q.rq)
	q.mu.Unlock()
	if ring != depth {
		t.Fatalf("full receive queue: ring of %d entries, want %d", ring, depth)
	}
	p.send(iwarp.Header{Opcode: iwarp.OpSend, Last: true, QN: 0, MSN: 1, MO: 8}, []byte("00"))
	p.msn[0] = 2
	for i := 1; i < depth; i++ {
		p.sendMsg(iwarp.OpSend, []byte(fmt.Sprintf("message %02d", i)), 0)
	}
	for i := 0; i < depth; i++ {
		wc := s.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
		if got, want := string(buf[16*i:16*i+wc.ByteLen]), fmt.Sprintf("message %02d", i); got != want {
			t.Fatalf("receive %d holds %q, want %q", i, got, want)
		}
	}
}
