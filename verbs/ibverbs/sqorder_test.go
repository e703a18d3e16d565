//go:build ibverbs && linux && cgo

package ibverbs

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// postSlots fills q's send ring as postSendLocked does, without a device.
func postSlots(q *queuePair, ops []verbs.SendOp, signaled []bool) {
	for i, op := range ops {
		seq := q.sqTail
		q.sq[seq%uint64(len(q.sq))] = sendSlot{id: 100 + seq, op: op, signaled: signaled[i], live: true, seq: seq}
		q.sqTail++
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
