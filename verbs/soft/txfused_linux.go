package soft

import (
	"fmt"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// The fused post: the common case of PostSend without the general pipeline.
//
// Most posts are a lone Send, or an RDMA Write and the Send behind it (an RPC
// call; an RPC reply, with or without a write chunk), each one FPDU, posted
// while the send queue is empty and the writer idle. postInline writes those
// from PostSend's goroutine already, but through the general pipeline: the
// work requests are copied into send-queue entries with their SGEs, the
// batch is claimed and costed, a batch buffer is taken from txPool, the
// messages are segmented into it and the iovecs are loaded from it. Each
// step handles batches of any size; for one or two single-FPDU messages they
// cost more instructions than the write they prepare (PERFORMANCE.md, "the
// fused post"), and at many connections the SGE storage of the ring slots is
// memory no other step of a call touches.
//
// postFusedLocked builds the FPDUs of such a post straight into the transmit
// side's own scratch (fusedTx: a header and trailer slab, the resolved SGEs,
// the iovecs) and writes them with one non-blocking sendmsg. It reserves the
// send-queue entries all the same, with the fields the bookkeeping reads
// (the work request ID, op, flags and length; not the SGEs), so that what
// follows the write is the general path's: finishBatchLocked completes them
// in order, failLocked flushes them, and a write the socket takes only part
// of leaves the rest to the writer (w.resume), as postInline's does. The
// bytes on the wire are the general path's: the FPDU sizes come from the
// same nextPayload, and a post that would not leave as one FPDU per message
// goes the general way.

// fusedMaxSGE bounds the SGEs of a work request the fused post takes (an RPC
// message: its header buffer and up to three payloads).
const fusedMaxSGE = 4

// fusedTx is the fused post's scratch, owned like the rest of txState.
type fusedTx struct {
	sgl  [2][fusedMaxSGE]lsge
	slab [2 * txFPDUOverhead]byte // headers and trailers, never reallocated
	iov  [2 * (fusedMaxSGE + 2)]syscall.Iovec
}

// postFusedLocked posts the chain wr of n requests the fused way, when it is
// one: a Send (or Send with Invalidate), or an RDMA Write followed by one,
// each of at most fusedMaxSGE SGEs and one FPDU, with the send queue empty
// and the transmit side free (canInlineLocked's conditions). It reports
// whether it did (err: a request did not resolve, and nothing was posted);
// otherwise the caller posts the general way. Caller holds mu, in StateRTS;
// it is released during the write.
func (q *queuePair) postFusedLocked(wr *verbs.SendWR, n int) (bool, error) {
	if n > 2 || q.sqHead != q.sqTail || len(q.sqOver) > 0 || !q.writerIdle || q.txBusy || q.w.resume ||
		q.kickDue || q.rawConn == nil || q.irqHead != q.irqTail || int(q.sqTail-q.sqLowLocked())+n > len(q.sq) {
		return false, nil
	}
	var reqs [2]*verbs.SendWR
	for i, w := 0, wr; w != nil; i, w = i+1, w.Next {
		isSend := w.Op == verbs.OpSend || w.Op == verbs.OpSendInv
		if len(w.SGL) > fusedMaxSGE || (i == n-1) != isSend || (!isSend && w.Op != verbs.OpWrite) {
			return false, nil
		}
		reqs[i] = w
	}
	f := &q.w.fused
	var totals [2]int
	for i, w := range reqs[:n] {
		var err error
		if _, totals[i], err = q.resolveSGL(f.sgl[i][:0], w.SGL, 0, "PostSend"); err != nil {
			clear(f.sgl[:])
			return true, fmt.Errorf("request %d: %w", i, err)
		}
	}
	pos := 0
	for i, w := range reqs[:n] {
		tagged := w.Op == verbs.OpWrite
		hl, need := iwarp.UntaggedHeaderLen, 0
		if tagged {
			hl = iwarp.TaggedHeaderLen
			if q.txSeg != 0 {
				// The Send behind the Write, as batchNeed grants it (a
				// two-message batch always has the room).
				if s := fpduLen(iwarp.UntaggedHeaderLen, totals[1]); s <= txNeedMax {
					need = s
				}
			}
		}
		maxPay, total := iwarp.MaxPayload(q.maxFPDU, tagged), totals[i]
		if maxPay <= 0 || total > maxPay || (total > 0 && q.txSeg != 0 && q.nextPayload(pos, hl, total, maxPay, need) != total) {
			clear(f.sgl[:])
			return false, nil // more than one FPDU: the general path
		}
		pos += fpduLen(hl, total)
	}

	q.rewindSQLocked()
	// Reserve the entries (for the bookkeeping; the SGEs stay in f.sgl).
	from := q.sqTail
	m := uint64(len(q.sq))
	for i, w := range reqs[:n] {
		s := &q.sq[(from+uint64(i))%m]
		*s = sendWQE{id: w.ID, op: w.Op, flags: w.Flags, sgl: s.sgl[:0], length: totals[i]}
	}
	q.sqTail += uint64(n)
	q.sqSent = q.sqTail
	to := q.sqTail
	q.txBusy = true
	handOff()
	q.mu.Unlock()

	err := q.writeFused(reqs[:n], totals[:n])
	w := &q.w
	partial := err == nil && w.unsent()
	for i, wr := range reqs[:n] {
		clear(f.sgl[i][:len(wr.SGL)])
	}
	q.mu.Lock()
	q.txBusy = false
	q.inlined += to - from
	q.fused += to - from
	if partial && q.state == verbs.StateRTS {
		// The writer writes the rest (w.iov, into f.slab and the
		// payloads) before anything else: nothing else uses f meanwhile,
		// since no post is fused while w.resume is set.
		w.resume, w.resumeFrom, w.resumeTo = true, from, to
		q.resumed += to - from
	} else {
		w.dropIOV()
		q.finishBatchLocked(from, to, err)
	}
	q.wakeAfterInlineLocked()
	return true, nil
}

// rewindSQLocked starts the send queue's counters again at 0, so that a post
// to an empty queue goes into the ring's first entry every time rather than
// the next one round the ring, a line of memory that is cold at many
// connections. Caller holds mu and has checked postFusedLocked's conditions,
// under which no entry is referenced outside mu: the queue is empty (so no
// RDMA Read is pending for the reader), the writer is parked with nothing to
// do (so it is not looking at entry sqSent-1, see queuePair.sq) and nothing
// is being written inline or waiting to be resumed.
func (q *queuePair) rewindSQLocked() {
	if q.sqHead == q.sqSent && q.sqSent == q.sqTail {
		q.sqHead, q.sqSent, q.sqTail = 0, 0, 0
	}
}

// writeFused builds the FPDUs of the fused post reqs (payload lengths totals,
// SGEs resolved in q.w.fused.sgl) and writes what the socket takes now.
func (q *queuePair) writeFused(reqs []*verbs.SendWR, totals []int) error {
	w := &q.w
	f := &w.fused
	slab := f.slab[:0]
	k := 0   // iovecs in f.iov
	run := 0 // start in slab of the bytes not yet in f.iov
	for i, wr := range reqs {
		var h iwarp.Header
		if wr.Op == verbs.OpWrite {
			h = iwarp.Header{Opcode: iwarp.OpWrite, STag: wr.RemoteSTag, TO: wr.RemoteTO}
		} else {
			h = q.sendHeader(wr.Op, wr.Flags, wr.InvalidateSTag)
		}
		h.Last = true
		start := len(slab)
		var err error
		if slab, err = iwarp.AppendFPDUHeader(slab, &h, totals[i]); err != nil {
			return err
		}
		var crc uint32
		if q.crc {
			crc = iwarp.UpdateCRC(0, slab[start:])
		}
		sgl := f.sgl[i][:len(wr.SGL)]
		for j := range sgl {
			s := &sgl[j]
			if s.n == 0 {
				continue
			}
			p := s.m.buf[s.off : s.off+s.n]
			if q.crc {
				crc = iwarp.UpdateCRC(crc, p)
			}
			// The trailer of the previous FPDU and this header are one
			// piece, as in a batch buffer.
			if run < len(slab) {
				f.iov[k] = iovecOf(slab[run:])
				k++
			}
			f.iov[k] = iovecOf(p)
			k++
			run = len(slab)
		}
		slab = iwarp.AppendTrailer(slab, h.Opcode.HeaderLen()-iwarp.MPALenFieldLen+totals[i], crc, q.crc)
	}
	f.iov[k] = iovecOf(slab[run:])
	w.iov = f.iov[:k+1]
	w.rawErr = nil
	err := q.rawConn.Write(q.rawTryFn)
	if err == nil {
		err = w.rawErr
	}
	return err
}

// iovecOf returns the iovec of p (not empty).
func iovecOf(p []byte) syscall.Iovec {
	v := syscall.Iovec{Base: &p[0]}
	v.SetLen(len(p))
	return v
}
