package soft

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// txState is the writer goroutine's private state: buffers reused for every
// FPDU so that transmission does not allocate.
type txState struct {
	hdr    [iwarp.UntaggedHeaderLen + iwarp.ReadRequestLen + iwarp.CRCLen + 8]byte
	hdrs   [txBatch][iwarp.UntaggedHeaderLen]byte
	trails [txBatch][8]byte
	vec    [][]byte    // backing array for the vectored write
	nb     net.Buffers // consumed by WriteTo
	msn    [3]uint32   // last MSN sent per untagged QN
	// inline: sendMessage is called by postInline and only tries to write;
	// resume: the work request whose rest (in the raw iovec) the writer
	// must write next (guarded by mu).
	inline bool
	resume *sendWQE
	// writes counts socket writes (writev calls, or WriteTo calls where the
	// runtime does the writev): a message must go out in one, never split
	// into pieces the peer sees at different times (for tests).
	writes atomic.Uint64
	rawTxState
}

func (w *txState) init(q *queuePair) {
	w.vec = make([][]byte, 0, txBatch*(q.maxSendSGE+3))
}

// writeVec sends w.vec as one vectored write.
func (q *queuePair) writeVec() error {
	w := &q.w
	w.writes.Add(1)
	w.nb = w.vec
	_, err := w.nb.WriteTo(q.conn)
	w.nb = nil
	return err
}

// txBatch is the most FPDUs gathered into one vectored write. With small
// FPDUs (an Ethernet MSS) this saves most of the per-FPDU system calls.
const txBatch = 16

// sendMessage segments one RDMAP message into FPDUs of at most q.maxFPDU
// bytes and writes them, up to txBatch FPDUs per vectored write. h is the
// header template: for tagged opcodes TO advances, for untagged ones MO
// does. The payload is gathered from sgl without copying.
//
// With guard set (a Read Response), every write holds guard's lock and
// first checks that guardSTag is still valid; if it was invalidated
// meanwhile, the rest of the message is not sent and the peer gets a
// Terminate.
func (q *queuePair) sendMessage(h *iwarp.Header, sgl []lsge, total int, guard *memRegion, guardSTag uint32) error {
	w := &q.w
	tagged := h.Opcode.Tagged()
	maxPay := iwarp.MaxPayload(q.maxFPDU, tagged)
	if maxPay <= 0 {
		return fmt.Errorf("soft: max FPDU size %d leaves no room for payload", q.maxFPDU)
	}
	baseTO := h.TO
	si, so := 0, 0 // SGE index and offset within it
	vec := w.vec[:0]
	k := 0 // FPDUs in vec
	for off := 0; ; {
		if q.failed.Load() {
			return nil // the writer loop sees the error state next
		}
		n := min(maxPay, total-off)
		h.Last = off+n == total
		if tagged {
			h.TO = baseTO + uint64(off)
		} else {
			h.MO = uint32(off)
		}
		hdr, err := iwarp.AppendFPDUHeader(w.hdrs[k][:0], h, n)
		if err != nil {
			return err
		}
		vec = append(vec, hdr)
		var crc uint32
		if q.crc {
			crc = iwarp.UpdateCRC(0, hdr)
		}
		for rem := n; rem > 0; {
			s := &sgl[si]
			take := min(s.n-so, rem)
			if take > 0 {
				p := s.m.buf[s.off+so : s.off+so+take]
				vec = append(vec, p)
				if q.crc {
					crc = iwarp.UpdateCRC(crc, p)
				}
			}
			so += take
			rem -= take
			if so == s.n {
				si++
				so = 0
			}
		}
		vec = append(vec, iwarp.AppendTrailer(w.trails[k][:0], len(hdr)-iwarp.MPALenFieldLen+n, crc, q.crc))
		k++
		off += n
		if off == total || k == txBatch {
			w.vec = vec
			if w.inline {
				// PostSend's non-blocking attempt (the message is one
				// batch); what the socket did not take stays in w.iov
				// for the writer.
				return q.tryWriteVec()
			}
			if guard == nil {
				if err := q.writeVec(); err != nil {
					return err
				}
			} else {
				revoked, err := q.writeGuarded(guard, guardSTag)
				if err != nil {
					return err
				}
				if revoked {
					q.terminateLocal(iwarp.TermRDMAPInvalidSTag, fmt.Sprintf("Read Response source STag %#08x invalidated during transfer", guardSTag), nil)
					return nil
				}
			}
			vec, k = w.vec[:0], 0
		}
		if off == total {
			return nil
		}
	}
}

// writeSmall writes one small prebuilt FPDU held in w.hdr.
func (q *queuePair) writeSmall(b []byte) error {
	q.w.vec = append(q.w.vec[:0], b)
	return q.writeVec()
}

// sendReadRequest sends the Read Request for an RDMA Read (or an RTR read
// when sgl is nil).
func (q *queuePair) sendReadRequest(sinkSTag uint32, sinkTO uint64, size uint32, srcSTag uint32, srcTO uint64) error {
	w := &q.w
	w.msn[iwarp.QNReadRequest]++
	rr := iwarp.ReadRequest{SinkSTag: sinkSTag, SinkTO: sinkTO, Size: size, SrcSTag: srcSTag, SrcTO: srcTO}
	var body [iwarp.ReadRequestLen]byte
	h := iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: w.msn[iwarp.QNReadRequest]}
	b, err := iwarp.AppendFPDU(w.hdr[:0], &h, rr.Append(body[:0]), q.crc)
	if err != nil {
		return err
	}
	return q.writeSmall(b)
}

// sendWQE transmits one send-queue entry (not a Read: see writer).
func (q *queuePair) transmit(wq *sendWQE) error {
	var h iwarp.Header
	switch wq.op {
	case verbs.OpWrite:
		h = iwarp.Header{Opcode: iwarp.OpWrite, STag: wq.rstag, TO: wq.rto}
	case verbs.OpSend, verbs.OpSendInv:
		op := iwarp.OpSend
		se := wq.flags&verbs.Solicited != 0
		switch {
		case wq.op == verbs.OpSendInv && se:
			op = iwarp.OpSendSEInvalidate
		case wq.op == verbs.OpSendInv:
			op = iwarp.OpSendInvalidate
		case se:
			op = iwarp.OpSendSE
		}
		q.w.msn[iwarp.QNSend]++
		h = iwarp.Header{Opcode: op, QN: iwarp.QNSend, MSN: q.w.msn[iwarp.QNSend]}
		if op.Invalidates() {
			h.InvalidateSTag = wq.inv
		}
	case verbs.OpRead:
		s := wq.sgl[0]
		return q.sendReadRequest(s.m.RKey(), s.m.base+uint64(s.off), uint32(wq.length), wq.rstag, wq.rto)
	}
	return q.sendMessage(&h, wq.sgl, wq.length, nil, 0)
}

// sendReadResponse answers an accepted inbound Read Request. The source
// region is re-validated and held read-locked while its bytes are sent, so a
// concurrent invalidation waits for it (or wins, and the peer gets a
// Terminate instead of the data).
func (q *queuePair) sendReadResponse(ir *inboundRead) error {
	h := iwarp.Header{Opcode: iwarp.OpReadResponse, STag: ir.req.SinkSTag, TO: ir.req.SinkTO}
	if ir.req.Size == 0 {
		return q.sendMessage(&h, nil, 0, nil, 0)
	}
	m, off, code, reason := q.dev.stags.remoteCheck(q.pd, ir.req.SrcSTag, ir.req.SrcTO, int(ir.req.Size), verbs.AccessRemoteRead, false)
	if m == nil {
		q.terminateLocal(code, reason, q.readRequestHeader(ir))
		return nil
	}
	m.mu.RUnlock() // writeGuarded re-checks the STag for every write
	sgl := [1]lsge{{m: m, off: off, n: int(ir.req.Size)}}
	return q.sendMessage(&h, sgl[:], int(ir.req.Size), m, ir.req.SrcSTag)
}

// readRequestHeader rebuilds the 48-byte Read Request FPDU header + body for
// a Terminate copy.
func (q *queuePair) readRequestHeader(ir *inboundRead) []byte {
	h := iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: ir.msn}
	b, _ := iwarp.AppendFPDUHeader(nil, &h, iwarp.ReadRequestLen)
	return ir.req.Append(b)
}

// terminateLocal reports a locally detected violation: it builds the
// Terminate (with the offending header copy hdr), moves the QP to the error
// state and lets the writer send it.
func (q *queuePair) terminateLocal(code iwarp.TermCode, reason string, hdr []byte) {
	t := iwarp.NewTerminate(code, hdr)
	frame, err := iwarp.AppendTerminateFPDU(nil, &t, 1, q.crc)
	if err != nil {
		frame = nil
	}
	q.fail(&verbs.TerminateError{Layer: uint8(code.Layer()), EType: code.EType(), ECode: code.ECode(),
		Reason: fmt.Sprintf("%v: %s", code, reason)}, frame)
}

// noteSentLocked counts a sent message and, after an initiator's first,
// arms the SiwKick timer. Caller holds mu.
func (q *queuePair) noteSentLocked() {
	q.sentMsgs++
	if q.sentMsgs != 1 || q.responder || q.dev.cfg.SiwKick < 0 {
		return
	}
	q.kickTimer = time.AfterFunc(q.dev.cfg.SiwKick, func() {
		q.mu.Lock()
		if q.state == verbs.StateRTS && !q.peerSpoke && q.sentMsgs == 1 {
			q.kickDue = true
			q.cond.Signal()
		}
		q.mu.Unlock()
	})
}

// writer is the connection's transmit goroutine. It sends the RTR frame (P2P
// initiator), then Read Responses and send-queue work in order, and on error
// the pending Terminate.
func (q *queuePair) writer() {
	defer q.exitOne()
	if d := q.dev.cfg.FirstFPDUDelay; d > 0 && !q.responder {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-q.done:
			t.Stop()
		}
	}
	var err error
	switch q.rtrSend {
	case RTRWrite:
		// siw sends STag 1, TO 0; a zero-length Write is not checked.
		h := iwarp.Header{Opcode: iwarp.OpWrite, STag: 1}
		err = q.sendMessage(&h, nil, 0, nil, 0)
	case RTRRead:
		q.mu.Lock()
		q.orq[q.orqTail%uint64(len(q.orq))] = rtrORQ
		q.orqTail++
		q.mu.Unlock()
		err = q.sendReadRequest(1, 0, 0, 1, 0)
	}
	if err != nil {
		q.fail(fmt.Errorf("%w: sending RTR: %w", verbs.ErrConnectionLost, err), nil)
	}
	q.mu.Lock()
	if q.rtrSend != RTRNone {
		q.noteSentLocked()
	}
	for {
		if q.undelivered {
			// Completions pushed under mu (by this goroutine or
			// another) go to a CQ handler with no lock held.
			q.undelivered = false
			q.mu.Unlock()
			q.deliver()
			q.mu.Lock()
			continue
		}
		if q.txBusy {
			q.cond.Wait() // PostSend is writing a message itself
			continue
		}
		if q.state != verbs.StateRTS {
			if q.w.resume != nil {
				q.w.resume = nil
				q.w.dropIOV() // flushed: its rest is never sent
			}
			term := q.pendingTerm
			q.pendingTerm = nil
			if q.kickTimer != nil {
				q.kickTimer.Stop()
			}
			q.mu.Unlock()
			if term != nil {
				q.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
				q.writeSmall(term)
				if tc, ok := q.conn.(*net.TCPConn); ok {
					tc.CloseWrite()
					return // the reader drains, then the socket closes
				}
			}
			q.conn.Close()
			return
		}
		if q.responder && !q.peerSpoke {
			q.cond.Wait()
			continue
		}
		if wq := q.w.resume; wq != nil {
			// The rest of a message PostSend could only partly write
			// goes first: nothing may come between its bytes.
			q.w.resume = nil
			q.mu.Unlock()
			err = q.finishVec()
			q.mu.Lock()
			q.finishSendLocked(wq, err)
			continue
		}
		if q.kickDue {
			q.kickDue = false
			q.sentMsgs++
			q.mu.Unlock()
			h := iwarp.Header{Opcode: iwarp.OpWrite, STag: 1}
			err = q.sendMessage(&h, nil, 0, nil, 0)
			q.mu.Lock()
			if err != nil {
				q.failLocked(fmt.Errorf("%w: %w", verbs.ErrConnectionLost, err), nil)
			}
			continue
		}
		if q.irqHead < q.irqTail {
			// The slot is freed as the response starts: the peer may
			// count the response as complete as soon as its last segment
			// arrives, and its next Read Request must find room.
			ir := q.irq[q.irqHead%uint64(len(q.irq))]
			q.irqHead++
			q.mu.Unlock()
			err = q.sendReadResponse(&ir)
			q.mu.Lock()
			q.noteSentLocked()
			if err != nil {
				q.failLocked(fmt.Errorf("%w: %w", verbs.ErrConnectionLost, err), nil)
			}
			continue
		}
		if q.sqSent < q.sqTail {
			n := uint64(len(q.sq))
			idx := q.sqSent % n
			wq := &q.sq[idx]
			if wq.op == verbs.OpRead {
				if q.orqTail-q.orqHead >= uint64(q.ord) {
					q.cond.Wait() // ORD reached: wait for a Read Response
					continue
				}
				wq.state = wqeReadPending
				wq.placed = 0
				q.orq[q.orqTail%uint64(len(q.orq))] = q.sqSent
				q.orqTail++
			}
			q.sqSent++
			q.mu.Unlock()
			err = q.transmit(wq)
			q.mu.Lock()
			q.noteSentLocked()
			if wq.op == verbs.OpRead {
				if err != nil {
					q.failLocked(fmt.Errorf("%w: %w", verbs.ErrConnectionLost, err), nil)
				}
				continue
			}
			q.finishSendLocked(wq, err)
			continue
		}
		q.writerIdle = true
		q.cond.Wait()
		q.writerIdle = false
	}
}

// finishSendLocked completes a transmitted Send or Write (err: the socket
// failed). Caller holds mu.
func (q *queuePair) finishSendLocked(wq *sendWQE, err error) {
	if err != nil {
		q.failLocked(fmt.Errorf("%w: %w", verbs.ErrConnectionLost, err), nil)
		return
	}
	if q.state == verbs.StateRTS {
		wq.state, wq.status = wqeDone, verbs.StatusSuccess
		q.retireLocked()
	}
}

// inlineMax is the largest message PostSend writes from the caller's
// goroutine (see postInline).
const inlineMax = 64 << 10

// canInlineLocked reports whether PostSend may write the message it has just
// queued (op, total bytes) itself: the writer is parked with nothing to do
// and nothing else waits, so the caller's goroutine owns the transmit side
// for one non-blocking write. Caller holds mu.
func (q *queuePair) canInlineLocked(op verbs.SendOp, total int) bool {
	return q.writerIdle && !q.txBusy && q.w.resume == nil && !q.kickDue &&
		q.rawConn != nil && op != verbs.OpRead && total <= inlineMax &&
		total <= iwarp.MaxPayload(q.maxFPDU, op == verbs.OpWrite)*txBatch &&
		q.sqSent == q.sqTail-1 && q.irqHead == q.irqTail
}

// postInline writes wq, the only queued work request, from PostSend's
// goroutine, which saves the hand-off to the writer goroutine and back that
// otherwise costs two goroutine wake-ups per message. The write never
// blocks: a socket that takes only part of the message (or nothing) leaves
// the rest to the writer, which finishes it before anything else. Caller
// holds mu; it is released during the write.
func (q *queuePair) postInline(wq *sendWQE) {
	q.txBusy = true
	q.sqSent++
	q.mu.Unlock()
	q.w.inline = true
	err := q.transmit(wq)
	q.w.inline = false
	partial := err == nil && q.w.unsent()
	q.mu.Lock()
	q.txBusy = false
	q.inlined++
	q.noteSentLocked()
	if partial && q.state == verbs.StateRTS {
		q.w.resume = wq
		q.resumed++
	} else {
		if partial {
			q.w.dropIOV()
		}
		q.finishSendLocked(wq, err)
	}
	// Wake the writer only if it has something to do: a parked writer with
	// nothing to do stays parked, so the next post can go inline too.
	q.cond.Signal()
}
