//go:build ibverbs && linux && cgo

package ibverbs

import (
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// postSlots fills q's send ring as postSendLocked does, without a device.
func postSlots(q *queuePair, ops []verbs.SendOp, signaled []bool) {
	for i, op := range ops {
		seq := q.sqTail
		q.sq[seq%uint64(len(q.sq))] = sendSlot{id: 100 + seq, op: op, signaled: signaled[i], live: true, seq: seq}
		q.sqTail++
		q.sqOut++
	}
}

// TestSendDoneOutOfOrder: siw completes a Send posted after an RDMA Read before
// the Read's response arrives. The Read's completion must still be delivered
// (nfsrdmad -provider ibverbs over siw0 hung with pullers waiting for Reads whose
// completions were dropped as "already reaped"), and only once.
func TestSendDoneOutOfOrder(t *testing.T) {
	q := &queuePair{sq: make([]sendSlot, 8)}
	postSlots(q, []verbs.SendOp{verbs.OpRead, verbs.OpSend}, []bool{true, true})
	if id, op, keep := q.sendDone(1, true); !keep || id != 101 || op != verbs.OpSend {
		t.Fatalf("Send completion: id %d op %v keep %v, want 101 Send true", id, op, keep)
	}
	id, op, keep := q.sendDone(0, true)
	if !keep || id != 100 || op != verbs.OpRead {
		t.Fatalf("Read completing after a later Send: id %d op %v keep %v, want 100 Read true", id, op, keep)
	}
	if _, _, keep := q.sendDone(0, true); keep {
		t.Fatal("a second completion of the same request was delivered")
	}
	if got := q.sqTail - q.sqHead; got != 0 {
		t.Fatalf("outstanding after both completed: %d, want 0", got)
	}
}

// TestFlushRestOverTaken: after a failure the provider flushes what the device did
// not, including a signalled Read overtaken by a later completion, but not an
// unsignalled request retired by a later signalled one, and nothing twice.
func TestFlushRestOvertaken(t *testing.T) {
	scq := &compQueue{notify: make(chan struct{}, 1)}
	q := &queuePair{sq: make([]sendSlot, 8), scq: scq, rcq: scq}
	// 0 unsignalled Write, 1 signalled Read, 2 signalled Send (completes first), 3 unsignalled Send.
	postSlots(q, []verbs.SendOp{verbs.OpWrite, verbs.OpRead, verbs.OpSend, verbs.OpSend}, []bool{false, true, true, false})
	if _, _, keep := q.sendDone(2, true); !keep {
		t.Fatal("Send completion dropped")
	}
	q.flushRest()
	var ids []uint64
	for _, wc := range scq.soft {
		if wc.Status != verbs.StatusFlushed {
			t.Errorf("request %d: status %v, want flushed", wc.ID, wc.Status)
		}
		ids = append(ids, wc.ID)
	}
	if len(ids) != 2 || ids[0] != 101 || ids[1] != 103 {
		t.Fatalf("flushed %v, want [101 103] (the overtaken Read and the unsignalled request after the last completion)", ids)
	}
	if _, _, keep := q.sendDone(1, false); keep {
		t.Fatal("the device's own flush of a request the provider flushed was delivered again")
	}
}

// TestOvertakenReadHoldsSlot: a signalled RDMA Read overtaken by a later
// Send's completion (siw) is still outstanding and keeps its send-queue slot.
// A queue of MaxSendWR 4 then takes three more requests, not four (a fourth
// used to reuse the Read's slot, and the Read's completion was then dropped
// as already reaped). The Read completes exactly once, and its slot is then
// free for one more request.
func TestOvertakenReadHoldsSlot(t *testing.T) {
	r := newFakeRig(t, 4)
	read, send := r.read(100), r.send(101)
	if err := r.q.PostSend(&read); err != nil {
		t.Fatal(err)
	}
	if err := r.q.PostSend(&send); err != nil {
		t.Fatal(err)
	}
	r.complete(t, 1, false) // the Send completes first
	if wcs := r.poll(t); len(wcs) != 1 || wcs[0].ID != 101 {
		t.Fatalf("after the Send completed: %+v, want the Send's completion", wcs)
	}
	posted := 0
	for i := range 4 {
		w := r.send(uint64(200 + i))
		err := r.q.PostSend(&w)
		if errors.Is(err, verbs.ErrQueueFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		posted++
	}
	if posted != 3 {
		t.Errorf("posted %d sends while the Read was outstanding, want 3 (MaxSendWR 4, then ErrQueueFull)", posted)
	}
	r.complete(t, 0, false) // the Read's response arrives
	wcs := r.poll(t)
	if n := countID(wcs, 100); n != 1 {
		t.Fatalf("the Read completed %d times, want once: %+v", n, wcs)
	}
	for _, wc := range wcs {
		if wc.ID == 100 && (wc.Opcode != verbs.OpcodeRead || wc.Status != verbs.StatusSuccess) {
			t.Errorf("the Read's completion: %v %v, want a successful Read", wc.Opcode, wc.Status)
		}
	}
	w := r.send(300)
	if err := r.q.PostSend(&w); err != nil {
		t.Errorf("post after the Read completed: %v", err)
	}
	w = r.send(301)
	if err := r.q.PostSend(&w); !errors.Is(err, verbs.ErrQueueFull) {
		t.Errorf("fifth outstanding request on MaxSendWR 4: %v, want ErrQueueFull", err)
	}
}

// TestOvertakenReadFlushedOnce: when the queue pair fails while an
// overtaken Read is outstanding, the provider's flush (flushRest) completes
// the Read and every later request once, and the device's own flushes of
// them afterwards are not delivered again. Close waits for the device to
// flush the Read (outstanding counts it).
func TestOvertakenReadFlushedOnce(t *testing.T) {
	r := newFakeRig(t, 4)
	read, send := r.read(100), r.send(101)
	if err := r.q.PostSend(&read); err != nil {
		t.Fatal(err)
	}
	if err := r.q.PostSend(&send); err != nil {
		t.Fatal(err)
	}
	r.complete(t, 1, false)
	r.poll(t)
	if n := r.q.outstanding(); n != 1 {
		t.Errorf("outstanding with the overtaken Read: %d, want 1", n)
	}
	var later []uint64
	for i := range 4 {
		w := r.send(uint64(200 + i))
		if err := r.q.PostSend(&w); err != nil {
			break
		}
		later = append(later, w.ID)
	}
	r.q.flushRest()
	wcs := r.poll(t)
	for _, id := range append([]uint64{100}, later...) {
		if n := countID(wcs, id); n != 1 {
			t.Errorf("request %d: %d flushed completions, want 1 (%+v)", id, n, wcs)
		}
	}
	for _, wc := range wcs {
		if wc.Status != verbs.StatusFlushed {
			t.Errorf("request %d: %v, want flushed", wc.ID, wc.Status)
		}
	}
	for seq := range uint64(2 + len(later)) {
		r.complete(t, seq, true) // the device flushes too
	}
	if wcs := r.poll(t); len(wcs) != 0 {
		t.Errorf("the device's flushes after the provider's were delivered: %+v", wcs)
	}
}

// TestPartialPostKeepsSignalling: the provider signals one send request in
// every half queue of unsignalled ones, or a send queue the caller never
// signals would never drain. When the device takes only part of a batch
// (ibv_post_send fails at bad_wr in the middle), the unsignalled requests it
// took count towards that, so no run of unsignalled requests on the device
// reaches half the queue.
func TestPartialPostKeepsSignalling(t *testing.T) {
	const depth = 8 // the provider signals every depth/2 = 4th request
	r := newFakeRig(t, depth)
	batch := make([]verbs.SendWR, 4)
	for i := range batch {
		batch[i] = verbs.SendWR{ID: uint64(100 + i), Op: verbs.OpSend}
	}
	r.dev.failPostAfter(3)
	n, err := r.q.PostSendBatch(batch)
	if n != 3 || !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("batch the device took 3 of: posted %d, %v; want 3, ErrQueueFull", n, err)
	}
	for i := range 4 {
		w := verbs.SendWR{ID: uint64(200 + i), Op: verbs.OpSend}
		if err := r.q.PostSend(&w); err != nil {
			t.Fatal(err)
		}
	}
	run, longest, pattern := 0, 0, ""
	for _, p := range r.dev.posted() {
		if p.signaled {
			run, pattern = 0, pattern+"S"
			continue
		}
		run, pattern = run+1, pattern+"u"
		longest = max(longest, run)
	}
	if longest >= depth/2 {
		t.Errorf("%d unsignalled requests in a row on the device (%s; S signalled), want fewer than %d", longest, pattern, depth/2)
	}
}
