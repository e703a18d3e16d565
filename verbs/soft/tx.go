package soft

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// Transmit batching. The writer (or PostSend itself, see postInline) takes
// every queued message it can and gathers their FPDUs into one vectored
// write: an RDMA Write's FPDUs and the Send behind it leave in one writev(2).
// Messages keep their queue order; completions of a batch are delivered in
// order once it is written. A batch is bounded by txMaxIOV pieces and
// txMaxBytes bytes; a message that does not fit in the rest of a batch starts
// the next one, so that a message fitting one batch always leaves in one
// write (a peer never sees part of it and then waits for the rest behind a
// second system call, the stall a split write causes with Linux siw).
//
// FPDU headers and trailers are laid out back to back in the batch's slab,
// so the trailer of one FPDU and the header of the next take one piece of
// the vectored write; payload is referenced where it lies (the kernel reads
// it, as a NIC would: the provider never copies a local buffer). The
// buffers of a batch come from txPool and go back when it is written: an
// idle connection holds none.

const (
	// txMaxIOV bounds the pieces of one vectored write (Linux IOV_MAX).
	txMaxIOV = 1024
	// txMaxBytes bounds the bytes of one batch, headers and trailers
	// included: room for a 1 MiB RDMA Write, its FPDUs' overhead and the
	// Send behind it (an RPC reply with a 1 MiB write chunk), so that
	// they leave in one writev rather than three.
	txMaxBytes = 1<<20 + txSlabSize
	// txSlabSize is the room for headers and trailers.
	txSlabSize = 16 << 10
	// txFPDUOverhead bounds an FPDU's header (a Read Request's body
	// included) and trailer.
	txFPDUOverhead = iwarp.UntaggedHeaderLen + iwarp.ReadRequestLen + 3 + iwarp.CRCLen
)

// txBuf is the scratch of one batch.
type txBuf struct {
	vec   [][]byte    // the pieces of the vectored write
	nb    net.Buffers // vec as WriteTo consumes it (a field, so it does not escape per write)
	slab  []byte      // headers and trailers; never reallocated
	seg   int         // start in slab of the last piece if it is a slab piece, else -1
	bytes int         // bytes in vec
	rawTxBuf
}

var txPool = sync.Pool{New: func() any {
	return &txBuf{vec: make([][]byte, 0, txMaxIOV), slab: make([]byte, 0, txSlabSize), seg: -1, rawTxBuf: newRawTxBuf()}
}}

// reset empties b and drops its references to registered memory.
func (b *txBuf) reset() {
	clear(b.vec)
	b.vec, b.slab, b.seg, b.bytes = b.vec[:0], b.slab[:0], -1, 0
}

// room reports whether an FPDU of slab bytes in the slab and up to pieces
// other pieces fits in b.
func (b *txBuf) room(slab, pieces int) bool {
	return len(b.vec)+pieces+2 <= txMaxIOV && len(b.slab)+slab <= cap(b.slab)
}

// grew makes the slab bytes from start (just appended) part of the last
// piece, or a new one.
func (b *txBuf) grew(start int) {
	b.bytes += len(b.slab) - start
	if b.seg >= 0 {
		b.vec[len(b.vec)-1] = b.slab[b.seg:]
		return
	}
	b.seg = start
	b.vec = append(b.vec, b.slab[start:])
}

// ref adds p, referenced in place, as a piece of its own.
func (b *txBuf) ref(p []byte) {
	b.vec = append(b.vec, p)
	b.bytes += len(p)
	b.seg = -1
}

// msgCost bounds what a message of total bytes from an SGL of nsge entries
// takes of a batch: slab bytes and other pieces.
func msgCost(total, maxPay, nsge int) (slab, pieces int) {
	// Aligning FPDUs with TCP segments (fpduPayload) adds up to one FPDU
	// in the room a message starts in and txAlignSplits at its end.
	fpdus := max(1, (total+maxPay-1)/maxPay) + 1 + txAlignSplits
	// Per FPDU a slab piece and payload pieces; every FPDU boundary can
	// split an SGE into one more piece.
	return fpdus * txFPDUOverhead, 2*fpdus + nsge + 1
}

// txState is the transmit side's state: owned by the writer goroutine, or by
// PostSend while txBusy is set (postInline).
type txState struct {
	buf  *txBuf      // the batch being built or written; nil when idle
	held atomic.Bool // buf != nil, for tests
	msn  [3]uint32   // last MSN sent per untagged QN
	// inline: the batch is PostSend's (postInline) and may only be
	// written without blocking.
	inline bool
	// resumeFrom..resumeTo: send-queue entries whose batch PostSend could
	// only partly write; the writer writes the rest (still in w.iov)
	// before anything else (guarded by mu).
	resume               bool
	resumeFrom, resumeTo uint64
	// guard, guardSTag: the batch is a Read Response from this region;
	// every write re-checks the STag (writeGuarded).
	guard     *memRegion
	guardSTag uint32
	// writes counts socket writes (writev calls, or WriteTo calls where the
	// runtime does the writev): a message must go out in one, never split
	// into pieces the peer sees at different times (for tests).
	writes atomic.Uint64
	rawTxState
}

// errTxStopped ends a batch when the queue pair failed meanwhile (the
// writer loop sees the error state next) or a Read Response's source was
// invalidated (a Terminate is on its way).
var errTxStopped = errors.New("soft: transmission stopped")

// txBegin takes a batch buffer.
func (q *queuePair) txBegin() {
	q.w.buf = txPool.Get().(*txBuf)
	q.w.held.Store(true)
}

// txEnd returns the batch buffer.
func (q *queuePair) txEnd() {
	w := &q.w
	w.dropIOV()
	if w.buf == nil {
		return // a fused post's rest (postFusedLocked) took none
	}
	w.buf.reset()
	txPool.Put(w.buf)
	w.buf = nil
	w.held.Store(false)
}

// flush writes the batch built so far and empties it.
func (q *queuePair) flush() error {
	w := &q.w
	if len(w.buf.vec) == 0 {
		return nil
	}
	if w.inline {
		// canInlineLocked admits only batches that fit one buffer.
		return errors.New("soft: internal error: PostSend's batch overflowed")
	}
	if w.guard != nil {
		revoked, err := q.writeGuarded(w.guard, w.guardSTag)
		if err != nil {
			return err
		}
		if revoked {
			q.terminateLocal(iwarp.TermRDMAPInvalidSTag, fmt.Sprintf("Read Response source STag %#08x invalidated during transfer", w.guardSTag), nil)
			return errTxStopped
		}
	} else if err := q.writeVec(); err != nil {
		return err
	}
	w.buf.reset()
	return nil
}

// writeVec sends the batch as one vectored write, blocking until done: one
// sendmsg(MSG_EOR) where the connection is a TCP socket (writeRaw), else
// net.Buffers' write.
func (q *queuePair) writeVec() error {
	if raw, err := q.writeRaw(); raw {
		return err
	}
	b := q.w.buf
	q.w.writes.Add(1)
	b.nb = b.vec
	_, err := b.nb.WriteTo(q.conn)
	b.nb = nil
	return err
}

// appendMessage adds one RDMAP message to the batch: segmented into FPDUs of
// at most q.maxFPDU bytes, h the header template (for tagged opcodes TO
// advances, for untagged ones MO does), the payload gathered from sgl. A
// message that does not fit in the rest of the batch starts a new one; one
// larger than a batch is split at FPDU boundaries.
//
// need is what the next message of the batch needs of a TCP segment to
// leave in one FPDU (fpduNeed), 0 for none.
func (q *queuePair) appendMessage(h *iwarp.Header, sgl []lsge, total, need int) error {
	b := q.w.buf
	tagged := h.Opcode.Tagged()
	maxPay := iwarp.MaxPayload(q.maxFPDU, tagged)
	if maxPay <= 0 {
		return fmt.Errorf("soft: max FPDU size %d leaves no room for payload", q.maxFPDU)
	}
	if slab, pieces := msgCost(total, maxPay, len(sgl)); !b.room(slab, pieces) || b.bytes+total > txMaxBytes {
		if err := q.flush(); err != nil {
			return err
		}
	}
	baseTO := h.TO
	hl, seg := h.Opcode.HeaderLen(), q.txSeg
	if !tagged && seg != 0 && b.bytes > 0 && !q.w.inline && fpduLen(hl, total) <= txNeedMax &&
		q.nextPayload(b.bytes, hl, total, maxPay, need) < total {
		// A short Send the rest of its segment would cut starts a write of
		// its own, which starts a segment (txalign.go).
		if err := q.flush(); err != nil {
			return err
		}
	}
	si, so := 0, 0 // SGE index and offset within it
	for off := 0; ; {
		if q.failed.Load() {
			return errTxStopped
		}
		// FPDUs end on TCP segment boundaries of the write (txalign.go);
		// the test keeps a connection that does not align from paying a
		// call per FPDU.
		n := q.nextPayload(b.bytes, hl, total-off, maxPay, need)
		if !b.room(txFPDUOverhead, len(sgl)-si+1) || (b.bytes > 0 && b.bytes+n > txMaxBytes) {
			if err := q.flush(); err != nil {
				return err
			}
			if seg != 0 && n > 0 {
				n = fpduPayload(b.bytes, seg, hl, total-off, maxPay, need)
			}
		}
		h.Last = off+n == total
		if tagged {
			h.TO = baseTO + uint64(off)
		} else {
			h.MO = uint32(off)
		}
		start := len(b.slab)
		var err error
		if b.slab, err = iwarp.AppendFPDUHeader(b.slab, h, n); err != nil {
			b.slab = b.slab[:start]
			return err
		}
		var crc uint32
		if q.crc {
			crc = iwarp.UpdateCRC(0, b.slab[start:])
		}
		b.grew(start)
		for rem := n; rem > 0; {
			s := &sgl[si]
			take := min(s.n-so, rem)
			if take > 0 {
				p := s.m.buf[s.off+so : s.off+so+take]
				if q.crc {
					crc = iwarp.UpdateCRC(crc, p)
				}
				b.ref(p)
			}
			so += take
			rem -= take
			if so == s.n {
				si++
				so = 0
			}
		}
		start = len(b.slab)
		b.slab = iwarp.AppendTrailer(b.slab, hl-iwarp.MPALenFieldLen+n, crc, q.crc)
		b.grew(start)
		off += n
		if off == total {
			return nil
		}
	}
}

// nextPayload returns the payload of the next FPDU of a message that starts at
// pos in the vectored write, with rest bytes of payload still to send (see
// fpduPayload for hl, maxPay and need).
func (q *queuePair) nextPayload(pos, hl, rest, maxPay, need int) int {
	n := min(maxPay, rest)
	if seg := q.txSeg; seg != 0 && n > 0 && (need != 0 || n < rest || fpduLen(hl, n)+txMinRoom > seg-pos%seg) {
		// (Decided here without the call: the rest of a message that
		// fits its segment with room to spare, the common case, is one
		// FPDU.)
		n = fpduPayload(pos, seg, hl, rest, maxPay, need)
	}
	return n
}

// appendReadRequest adds the Read Request for an RDMA Read (or the RTR
// read) to the batch.
func (q *queuePair) appendReadRequest(sinkSTag uint32, sinkTO uint64, size uint32, srcSTag uint32, srcTO uint64) error {
	w := &q.w
	b := w.buf
	if !b.room(txFPDUOverhead, 0) {
		if err := q.flush(); err != nil {
			return err
		}
	}
	w.msn[iwarp.QNReadRequest]++
	rr := iwarp.ReadRequest{SinkSTag: sinkSTag, SinkTO: sinkTO, Size: size, SrcSTag: srcSTag, SrcTO: srcTO}
	var body [iwarp.ReadRequestLen]byte
	h := iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: w.msn[iwarp.QNReadRequest]}
	start := len(b.slab)
	var err error
	if b.slab, err = iwarp.AppendFPDU(b.slab, &h, rr.Append(body[:0]), q.crc); err != nil {
		b.slab = b.slab[:start]
		return err
	}
	b.grew(start)
	return nil
}

// appendWQE adds one send-queue entry to the batch.
func (q *queuePair) appendWQE(wq *sendWQE, need int) error {
	var h iwarp.Header
	switch wq.op {
	case verbs.OpWrite:
		h = iwarp.Header{Opcode: iwarp.OpWrite, STag: wq.rstag, TO: wq.rto}
	case verbs.OpSend, verbs.OpSendInv:
		h = q.sendHeader(wq.op, wq.flags, wq.inv)
	case verbs.OpRead:
		s := wq.sgl[0]
		return q.appendReadRequest(wq.sink, s.m.base+uint64(s.off), uint32(wq.length), wq.rstag, wq.rto)
	}
	return q.appendMessage(&h, wq.sgl, wq.length, need)
}

// sendHeader returns the header template of a Send (op OpSend or OpSendInv)
// and takes its MSN.
func (q *queuePair) sendHeader(op verbs.SendOp, flags verbs.SendFlags, inv uint32) iwarp.Header {
	rop := iwarp.OpSend
	se := flags&verbs.Solicited != 0
	switch {
	case op == verbs.OpSendInv && se:
		rop = iwarp.OpSendSEInvalidate
	case op == verbs.OpSendInv:
		rop = iwarp.OpSendInvalidate
	case se:
		rop = iwarp.OpSendSE
	}
	q.w.msn[iwarp.QNSend]++
	h := iwarp.Header{Opcode: rop, QN: iwarp.QNSend, MSN: q.w.msn[iwarp.QNSend]}
	if rop.Invalidates() {
		h.InvalidateSTag = inv
	}
	return h
}

// claimLocked takes the send-queue entries from sqSent on for one batch:
// while they fit in one batch buffer (the first always does; a larger
// message is split) and Reads stay within ORD; with inline, Reads end the
// batch. It returns the first entry taken (q.sqSent is then past the last).
// Caller holds mu.
func (q *queuePair) claimLocked(inline bool) (from uint64) {
	from = q.sqSent
	n := uint64(len(q.sq))
	var slab, pieces, bytes int
	for q.sqSent < q.sqTail {
		wq := &q.sq[q.sqSent%n]
		if wq.op == verbs.OpRead {
			if inline || q.orqTail-q.orqHead >= uint64(q.ord) {
				break
			}
			slab += txFPDUOverhead
		} else {
			s, p := msgCost(wq.length, iwarp.MaxPayload(q.maxFPDU, wq.op == verbs.OpWrite), len(wq.sgl))
			if q.sqSent > from && (slab+s > txSlabSize || pieces+p+2 > txMaxIOV || bytes+wq.length > txMaxBytes) {
				break
			}
			slab, pieces, bytes = slab+s, pieces+p, bytes+wq.length
		}
		if wq.op == verbs.OpRead {
			wq.state = wqeReadPending
			wq.placed = 0
			wq.sink = wq.sgl[0].m.RKey()
			q.orq[q.orqTail%uint64(len(q.orq))] = q.sqSent
			q.orqTail++
		}
		q.sqSent++
	}
	return from
}

// transmitBatch writes the claimed send-queue entries [from, to) of sq, the
// ring as claimLocked saw it (the ring field itself is read under mu only).
func (q *queuePair) transmitBatch(sq []sendWQE, from, to uint64) error {
	n := uint64(len(sq))
	for i := from; i < to; i++ {
		need := 0
		if q.txSeg != 0 && i+1 < to && sq[i%n].op == verbs.OpWrite {
			need = q.batchNeed(sq, i, to)
		}
		if err := q.appendWQE(&sq[i%n], need); err != nil {
			return err
		}
	}
	if q.w.inline {
		// PostSend's non-blocking attempt; what the socket does not
		// take stays in w.iov for the writer.
		return q.tryWriteVec()
	}
	return q.flush()
}

// finishBatchLocked completes the transmitted Sends and Writes among
// [from, to) in order (err: the socket failed). Caller holds mu.
func (q *queuePair) finishBatchLocked(from, to uint64, err error) {
	q.noteSentNLocked(int(to - from))
	if err != nil && err != errTxStopped {
		q.failLocked(fmt.Errorf("%w: %w", verbs.ErrConnectionLost, err), nil)
		return
	}
	if q.state != verbs.StateRTS {
		return
	}
	// An RDMA Read at the start of the batch may have been answered and
	// retired meanwhile, and its slot reused: only entries from sqHead on
	// are still the batch's.
	n := uint64(len(q.sq))
	for i := max(from, q.sqHead); i < to; i++ {
		if wq := &q.sq[i%n]; wq.op != verbs.OpRead {
			wq.state, wq.status = wqeDone, verbs.StatusSuccess
		}
	}
	q.retireLocked()
}

// txFinish flushes a batch of its own (an RTR frame, the SiwKick Write, a
// Read Response) built after txBegin, unless building it failed with err,
// and returns the buffer.
func (q *queuePair) txFinish(err error) error {
	if err == nil {
		err = q.flush()
	}
	q.txEnd()
	if err == errTxStopped {
		err = nil
	}
	return err
}

// emptyWrite adds a zero-length RDMA Write (STag 1, TO 0, as siw sends its
// RTR; receivers do not check the STag of an empty Write).
func (q *queuePair) emptyWrite() error {
	h := iwarp.Header{Opcode: iwarp.OpWrite, STag: 1}
	return q.appendMessage(&h, nil, 0, 0)
}

// sendReadResponse answers an accepted inbound Read Request. The source
// region is re-validated and held read-locked while its bytes are sent, so a
// concurrent invalidation waits for it (or wins, and the peer gets a
// Terminate instead of the data).
func (q *queuePair) sendReadResponse(ir *inboundRead) error {
	w := &q.w
	h := iwarp.Header{Opcode: iwarp.OpReadResponse, STag: ir.req.SinkSTag, TO: ir.req.SinkTO}
	if ir.req.Size == 0 {
		q.txBegin()
		return q.txFinish(q.appendMessage(&h, nil, 0, 0))
	}
	m, off, code, reason := q.dev.stags.remoteCheck(q.pd, ir.req.SrcSTag, ir.req.SrcTO, int(ir.req.Size), verbs.AccessRemoteRead, false)
	if m == nil {
		q.terminateLocal(code, reason, q.readRequestHeader(ir))
		return nil
	}
	m.mu.RUnlock() // writeGuarded re-checks the STag for every write
	sgl := [1]lsge{{m: m, off: off, n: int(ir.req.Size)}}
	w.guard, w.guardSTag = m, ir.req.SrcSTag
	q.txBegin()
	err := q.txFinish(q.appendMessage(&h, sgl[:], int(ir.req.Size), 0))
	w.guard = nil
	return err
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

// noteSentLocked counts one sent message; see noteSentNLocked.
func (q *queuePair) noteSentLocked() { q.noteSentNLocked(1) }

// noteSentNLocked counts k sent messages and, after an initiator's first
// batch, arms the SiwKick timer. Caller holds mu.
func (q *queuePair) noteSentNLocked(k int) {
	first := q.sentMsgs == 0
	q.sentMsgs += uint64(k)
	if !first || k == 0 || q.responder || q.dev.cfg.SiwKick < 0 {
		return
	}
	sent := q.sentMsgs
	q.kickTimer = time.AfterFunc(q.dev.cfg.SiwKick, func() {
		q.mu.Lock()
		if q.state == verbs.StateRTS && !q.peerSpoke && q.sentMsgs == sent {
			q.kickDue = true
			q.cond.Signal()
		}
		q.mu.Unlock()
	})
}

// termWriteTimeout bounds the writing of a Terminate: a peer that does not
// read does not keep the connection (or Close) waiting.
const termWriteTimeout = 2 * time.Second

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
		q.txBegin()
		err = q.txFinish(q.emptyWrite())
	case RTRRead:
		q.mu.Lock()
		q.orq[q.orqTail%uint64(len(q.orq))] = rtrORQ
		q.orqTail++
		q.mu.Unlock()
		q.txBegin()
		err = q.txFinish(q.appendReadRequest(1, 0, 0, 1, 0))
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
			if q.w.resume {
				q.w.resume = false
				q.txEnd() // flushed: its rest is never sent
			}
			term, sent := q.pendingTerm, q.termSent
			q.pendingTerm = nil
			if q.kickTimer != nil {
				q.kickTimer.Stop()
			}
			q.mu.Unlock()
			if term != nil {
				q.conn.SetWriteDeadline(time.Now().Add(termWriteTimeout))
				q.txBegin()
				q.w.buf.ref(term)
				q.txFinish(nil)
				close(sent)
				if tc, ok := q.conn.(*net.TCPConn); ok {
					tc.CloseWrite()
					return // the reader drains, then the socket closes
				}
			}
			closeConn(q.conn)
			return
		}
		if q.responder && !q.peerSpoke {
			q.cond.Wait()
			continue
		}
		if q.w.resume {
			// The rest of a batch PostSend could only partly write goes
			// first: nothing may come between its bytes.
			q.w.resume = false
			from, to := q.w.resumeFrom, q.w.resumeTo
			q.mu.Unlock()
			err = q.finishVec()
			q.txEnd()
			q.mu.Lock()
			q.finishBatchLocked(from, to, err)
			continue
		}
		if q.kickDue {
			q.kickDue = false
			q.mu.Unlock()
			q.txBegin()
			err = q.txFinish(q.emptyWrite())
			q.mu.Lock()
			q.noteSentLocked()
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
			q.refreshMaxFPDULocked(int(ir.req.Size))
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
			if wq := &q.sq[q.sqSent%uint64(len(q.sq))]; wq.op != verbs.OpRead {
				q.refreshMaxFPDULocked(wq.length)
			}
			from, sq := q.claimLocked(false), q.sq
			to := q.sqSent
			if from == to {
				q.cond.Wait() // ORD reached: wait for a Read Response
				continue
			}
			q.mu.Unlock()
			q.txBegin()
			err = q.transmitBatch(sq, from, to)
			q.txEnd()
			q.mu.Lock()
			q.finishBatchLocked(from, to, err)
			continue
		}
		q.writerIdle = true
		q.cond.Wait()
		q.writerIdle = false
	}
}

// refreshMaxFPDULocked re-reads the TCP MSS, when the FPDU size follows it,
// before the writer sends a message of size bytes that spans more than one
// FPDU, so that the FPDU size follows the connection's MSS as it changes
// (RFC 5044 derives MULPDU from the current EMSS; siw re-reads it per work
// request). On loopback the MSS starts at half the initial window (32741)
// and grows to 65483 once the window opens: a 1 MiB message then takes 17
// FPDUs instead of 33, and the receiver one readv per FPDU. Small messages
// cost no syscall. Caller holds mu and is the writer (the only goroutine
// that changes maxFPDU; the transmit side reads it as its owner).
func (q *queuePair) refreshMaxFPDULocked(size int) {
	if !q.mssFPDU || q.rawConn == nil || size <= iwarp.MaxPayload(q.maxFPDU, true) {
		return
	}
	if q.rawConn.Control(q.mssFn) != nil {
		return
	}
	if f := fpduFromMSS(q.mss); f > 0 {
		q.maxFPDU, q.txSeg = f, alignSeg(q.mss)
	}
}

// canInlineLocked reports whether PostSend may write the send queue's
// unsent work itself: the writer is parked with nothing to do and nothing
// else waits, so the caller's goroutine owns the transmit side for one
// non-blocking write of one batch: no Reads, all fitting one batch buffer
// (up to a 1 MiB RDMA Write and the Send behind it), not ending in an RDMA
// Write. Large messages too: the caller copies into the socket what it
// takes, as a TCP server's worker writes its reply, and the writer is woken
// only for the rest; handing every large reply to the writer cost a
// goroutine wake-up per reply (PERFORMANCE.md, "large replies written by
// the worker"). Caller holds mu.
func (q *queuePair) canInlineLocked(op verbs.SendOp, total int) bool {
	if !q.writerIdle || q.txBusy || q.w.resume || q.kickDue || q.rawConn == nil || q.irqHead != q.irqTail {
		return false
	}
	n := uint64(len(q.sq))
	if q.sq[(q.sqTail-1)%n].op == verbs.OpWrite {
		// An RDMA Write is (almost always) followed by the Send that
		// tells the peer about it, as in an RPC reply: the writer, once
		// woken, takes both into one write, or PostSend of the Send
		// does if it comes first.
		return false
	}
	var slab, pieces, bytes int
	for i := q.sqSent; i < q.sqTail; i++ {
		wq := &q.sq[i%n]
		if wq.op == verbs.OpRead {
			return false
		}
		s, p := msgCost(wq.length, iwarp.MaxPayload(q.maxFPDU, wq.op == verbs.OpWrite), len(wq.sgl))
		slab, pieces, bytes = slab+s, pieces+p, bytes+wq.length
	}
	return slab <= txSlabSize && pieces+2 <= txMaxIOV && bytes <= txMaxBytes
}

// postInline writes the send queue's unsent work (wq is the entry just
// posted) from PostSend's goroutine, which saves the hand-off to the writer
// goroutine and back that otherwise costs two goroutine wake-ups per
// message. The write never blocks: a socket that takes only part of the
// batch (or nothing) leaves the rest to the writer, which finishes it before
// anything else. Caller holds mu; it is released during the write.
func (q *queuePair) postInline(wq *sendWQE) {
	q.txBusy = true
	from, sq := q.claimLocked(true), q.sq
	to := q.sqSent
	q.mu.Unlock()
	q.w.inline = true
	q.txBegin()
	err := q.transmitBatch(sq, from, to)
	q.w.inline = false
	partial := err == nil && q.w.unsent()
	q.mu.Lock()
	q.txBusy = false
	q.inlined += to - from
	if partial && q.state == verbs.StateRTS {
		q.w.resume, q.w.resumeFrom, q.w.resumeTo = true, from, to
		q.resumed += to - from
	} else {
		q.txEnd()
		q.finishBatchLocked(from, to, err)
	}
	q.wakeAfterInlineLocked()
}

// wakeAfterInlineLocked ends a post that PostSend wrote itself (postInline,
// postFusedLocked): it wakes the writer when it has something to do (the rest of the batch,
// work queued meanwhile, a state change) or is not parked idle (it waits
// for txBusy to clear); otherwise only when this post does not come from
// the QP's receive context. The wake-up is a goroutine and often a
// thread wake-up per message, which on its own costs (1.7 futex calls per
// NULL RPC), but the thread it wakes spins and catches the next
// readiness (the reply's, a worker's hand-off) before a sleeping one
// would: on this 2-vCPU VM a 4 KiB READ at one call in flight, answered
// by a worker goroutine, took 23 us with it and 27-47 us without.
// Where the receive context posts (the reader answering a call inline,
// or a caller that receives its own reply, ProcessDirect), nothing is
// handed between goroutines and the wake-up is pure cost: NULL RPC 16.6
// us without it, 21 us with it. And where the device's busy QPs
// outnumber the processors (crowd), no processor idles for the woken
// thread to spin on: at 2 to 64 connections of one call in flight each
// on this VM, a build without the wake-up was no slower and in most
// rounds spent 0.2-1.9 us less CPU per call.
func (q *queuePair) wakeAfterInlineLocked() {
	crowded := q.dev.crowd.note(&q.crowdEpoch)
	switch {
	case !q.writerIdle || q.w.resume || q.sqSent < q.sqTail || q.irqHead < q.irqTail || q.kickDue || q.state != verbs.StateRTS:
		q.cond.Signal()
	case q.lead.Load() == leadReader && !q.recvCQ.inDelivery() && !crowded:
		q.spinWakes++
		q.cond.Signal()
	}
}
