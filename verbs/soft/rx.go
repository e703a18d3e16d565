package soft

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// Receive buffering. The reader reads the stream through a read-ahead
// buffer of rxReadAhead bytes, so one read(2) brings in whatever has arrived
// (many small messages, the RDMA Write and the Send of an RPC reply) and
// small payloads are copied out of it. A payload remainder of rxDirectMin
// bytes or more is read straight into its destination (direct placement);
// after such a large FPDU the read-ahead is limited to rxLargeReadAhead
// bytes, so that the next large payload goes direct as well. On Linux the
// direct read is a readv that takes those rxLargeReadAhead bytes (the
// trailer, the next header) in the same syscall (see rawReadStep), and
// within a large Read Response the next FPDUs as well, up to rxMaxSpec of
// them once two in a row were of one size, their payloads straight into the
// sink where the response continues (each checked when its header has been
// parsed; copied back into the stream, in order, once one is something else).
//
// The buffer comes from rxPool while bytes are buffered and goes back when
// the reader has consumed everything and must wait for the socket (on Linux
// the wait needs no buffer, see rawFillStep): an idle connection holds none.
// Stream bytes read ahead into a sink that turn out not to be the payload
// predicted are copied back into the stream through a buffer of rxBigPool
// when they do not fit the read-ahead buffer (relinearize).
const (
	rxReadAhead      = 64 << 10
	rxDirectMin      = 16 << 10
	rxLargeReadAhead = 1 << 10
	// rxMaxSpec bounds the payloads one read places ahead in a Read
	// Response's sink, and rxMaxGap the trailer and header between two.
	rxMaxSpec = 8
	rxMaxGap  = 32
	// rxBig is the size of rxBigPool's buffers: what rxMaxSpec payloads
	// of the largest FPDU and their gaps take, with room for the
	// read-ahead behind them and what was buffered before them (a gap).
	rxBig = rxMaxSpec*(1<<16+rxMaxGap) + rxReadAhead
)

// rxPool holds the read-ahead buffers.
var rxPool = sync.Pool{New: func() any { return new([rxReadAhead]byte) }}

// rxBigPool holds the buffers that take stream bytes copied back out of a
// sink when they do not fit a read-ahead buffer.
var rxBigPool = sync.Pool{New: func() any { b := make([]byte, rxBig); return &b }}

// rxAhead is what a read ahead into a Read Response's sink leaves pending
// (rxState.nspec): the payloads read ahead (specs), the gaps between them
// (gapN[k] bytes after specs[k], kept at side[k*rxMaxGap:]) and the read's
// iovecs. A read that arms it takes it from rxAheadPool; it goes back once
// nothing is pending, so that an idle connection does not carry it.
type rxAhead struct {
	specs [rxMaxSpec][]byte
	gapN  [rxMaxSpec]int
	side  [rxMaxSpec * rxMaxGap]byte
	rawAhead
}

// rxAheadPool holds the rxAhead of connections with nothing read ahead.
var rxAheadPool = sync.Pool{New: func() any { return new(rxAhead) }}

// errStop ends the reader after a violation or a received Terminate.
var errStop = errors.New("soft: reader stopped")

// errNestedRead is an internal error: an FPDU processed inside receive's
// callback, where only whole buffered FPDUs are, needed the socket (waiting
// there would deadlock on the socket's read lock).
var errNestedRead = errors.New("soft: internal error: socket read while processing a buffered FPDU")

// rxState is the reader goroutine's private state.
type rxState struct {
	buf    []byte             // nil when nothing is buffered (r == w == 0)
	pooled *[rxReadAhead]byte // buf's array when it came from rxPool
	big    *[]byte            // buf's array when it came from rxBigPool
	held   atomic.Bool        // buf != nil, for tests
	r, w   int
	large  bool // the FPDU being read has rxDirectMin or more payload
	// rawFillStep (as a method value, so calling it does not allocate),
	// its argument and result.
	fillFn  func(uintptr) bool
	fillLim int
	fillErr error

	h       iwarp.Header
	hdr     [iwarp.UntaggedHeaderLen + iwarp.ReadRequestLen]byte // offending-header copy
	hdrLen  int
	crc     uint32
	scratch [64]byte
	spoke   bool

	msn [3]uint32 // next expected MSN per untagged QN

	// Untagged Send in progress. recvOp and recvInv are the RDMAP opcode
	// and Invalidate STag of its first segment: every segment must carry
	// that opcode, and the STag a Send with Invalidate invalidates is the
	// first segment's (as siw takes it).
	recvActive bool
	recvOp     iwarp.Opcode
	recvInv    uint32
	recv       *recvWQE
	recvPos    int
	recvSGE    int
	recvSGEOff int

	// Speculative placement of a Read Response's next payloads (see
	// rawReadStep). rxReadResponse sets specNext, where the rest of the
	// response goes, specPL, the payload of each FPDU as predicted (this
	// one's), and specGap, the trailer and header between two. Once a read
	// has put stream bytes there, ahead.specs[:nspec] hold them: the stream
	// continues from buf[r:w] into specs[0], then gapN[0] bytes kept at
	// side[0:], specs[1], and so on, and after the last spec into tailN
	// bytes kept at buf[w:w+tailN], until placeGuarded finds each in place
	// (claim) or they are copied back into the buffer (relinearize).
	specNext []byte
	specPL   int
	specGap  int
	rrPL     int      // the payload of the Read Response FPDU before this one
	ahead    *rxAhead // nil while nothing is read ahead (nspec == 0)
	nspec    int
	specMR   *memRegion
	specSTag uint32
	tailN    int

	// placeGuarded's state for rawReadStep.
	rawDst     []byte
	rawMR      *memRegion
	rawSTag    uint32
	rawRevoked bool
	rawErr     error
	rawRxState

	// pendErr: an error a caller receiving directly met, for the reader
	// to handle when it takes over.
	pendErr error

	// shortWait: the reader receives through receive, which waits for
	// the socket straight after a short read (a RawConn's, on Linux).
	// inRecv: receive's callback is running, inside which nothing may
	// wait for the socket; recvErr is its result.
	shortWait bool
	inRecv    bool
	recvErr   error
	// waitToken numbers the reader's unconfirmed waits (q.unconfirmed).
	waitToken uint64

	// reads counts the reader's read(2)/readv(2) calls on the socket
	// (the Linux readiness-based path), for benchmarks.
	reads atomic.Uint64

	// Tagged message in progress.
	tagActive bool
	tagOp     iwarp.Opcode
	tagSTag   uint32
	tagNextTO uint64
}

func (r *rxState) init(q *queuePair) {
	r.msn = [3]uint32{1, 1, 1}
	r.fillFn = q.rawFillStep
}

// buffered returns the bytes read ahead and not yet consumed.
func (r *rxState) buffered() []byte {
	if r.buf == nil {
		return nil
	}
	return r.buf[r.r:r.w]
}

// consume takes n buffered bytes.
func (r *rxState) consume(n int) {
	r.r += n
	if r.r == r.w && r.nspec == 0 {
		r.r, r.w = 0, 0
	}
}

// empty reports whether every byte read from the socket has been consumed.
func (r *rxState) empty() bool { return r.r == r.w && r.nspec == 0 }

// claimed moves the stream on past specs[0], all of which the caller found
// in place: the gap behind it becomes buffered bytes (the tail moves up to
// make room), or, for the last spec, the tail does. The caller holds the lock
// of the region the specs lie in.
func (q *queuePair) claimed() {
	r, a := &q.r, q.r.ahead
	q.dev.aheadPlaced.Add(uint64(len(a.specs[0])))
	if r.nspec == 1 {
		r.w += r.tailN
		r.tailN = 0
		r.dropAhead()
		return
	}
	g := a.gapN[0]
	copy(r.buf[r.w+g:], r.buf[r.w:r.w+r.tailN])
	copy(r.buf[r.w:], a.side[:g])
	r.w += g
	copy(a.side[:], a.side[rxMaxGap:])
	copy(a.specs[:], a.specs[1:r.nspec])
	copy(a.gapN[:], a.gapN[1:r.nspec])
	r.nspec--
	a.specs[r.nspec] = nil
}

// dropAhead ends what was read ahead (nothing of it is pending any more):
// the rxAhead goes back to its pool, without pointers into the sink.
func (r *rxState) dropAhead() {
	if a := r.ahead; a != nil {
		clear(a.specs[:])
		rxAheadPool.Put(a)
		r.ahead = nil
	}
	r.nspec, r.specMR = 0, nil
}

// relinearize makes the stream from specs[0][from:] on ordinary buffered
// bytes: the specs, the gaps between them and the tail are copied, in stream
// order, into the buffer behind what it holds, or into a buffer of rxBigPool
// when they do not fit. The caller holds the lock of the region the specs
// lie in.
func (q *queuePair) relinearize(from int) {
	r, a := &q.r, q.r.ahead
	if from > 0 {
		q.dev.aheadPlaced.Add(uint64(from))
	}
	n := len(a.specs[0]) - from + r.tailN
	for k := 1; k < r.nspec; k++ {
		n += a.gapN[k-1] + len(a.specs[k])
	}
	q.dev.aheadSpliced.Add(uint64(n - r.tailN))
	held := r.w - r.r
	dst := r.buf
	var big *[]byte
	if held+n > len(r.buf) {
		big = rxBigPool.Get().(*[]byte)
		dst = *big
	}
	// What is buffered moves to the start, then the tail to the end (both
	// are in buf, which dst may be: the buffered bytes lie before the tail,
	// and their new place before its new one), then the specs and gaps go
	// between them.
	end := held + n
	copy(dst, r.buf[r.r:r.w])
	copy(dst[end-r.tailN:end], r.buf[r.w:r.w+r.tailN])
	at := held
	at += copy(dst[at:], a.specs[0][from:])
	for k := 1; k < r.nspec; k++ {
		at += copy(dst[at:], a.side[(k-1)*rxMaxGap:(k-1)*rxMaxGap+a.gapN[k-1]])
		at += copy(dst[at:], a.specs[k])
	}
	if big != nil {
		r.release() // drops the rxAhead too
		r.buf, r.big = dst, big
		r.held.Store(true)
	}
	r.r, r.w = 0, end
	r.tailN = 0
	r.dropAhead()
}

// unspec relinearizes all the specs, for an FPDU that is not the predicted
// continuation. A sink invalidated meanwhile (locally: the peer cannot) may
// hold the owner's bytes by now, not the stream's: that ends the stream.
func (q *queuePair) unspec() error {
	r := &q.r
	m, stag := r.specMR, r.specSTag
	m.mu.RLock()
	revoked := m.closed || !m.valid || m.stag != stag
	if !revoked {
		q.relinearize(0)
	}
	m.mu.RUnlock()
	if revoked {
		return q.violation(iwarp.TermDDPTaggedInvalidSTag, "Read Response sink STag %#08x was invalidated locally during placement", stag)
	}
	return nil
}

// take gets a read-ahead buffer.
func (r *rxState) take() {
	r.pooled = rxPool.Get().(*[rxReadAhead]byte)
	r.buf = r.pooled[:]
	r.held.Store(true)
}

// release returns the buffer, which holds nothing unconsumed.
func (r *rxState) release() {
	if r.buf != nil {
		if r.big != nil {
			rxBigPool.Put(r.big)
		} else {
			rxPool.Put(r.pooled)
		}
		r.buf, r.pooled, r.big = nil, nil, nil
		r.held.Store(false)
	}
	r.r, r.w = 0, 0
	r.tailN = 0
	r.dropAhead()
}

// fill makes at least need bytes (need < rxReadAhead-rxLargeReadAhead)
// available in buf, reading as much as has arrived, up to the read-ahead
// limit: rxReadAhead bytes, or need+rxLargeReadAhead within or just after a
// large FPDU.
func (q *queuePair) fill(need int) error {
	r := &q.r
	if r.w-r.r >= need {
		return nil
	}
	if r.nspec > 0 {
		if err := q.unspec(); err != nil {
			return err
		}
		if r.w-r.r >= need {
			return nil
		}
	}
	if r.buf == nil {
		r.take()
	}
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	lim := rxReadAhead
	if r.large {
		// Within or just after a large FPDU: read what is needed and
		// rxLargeReadAhead more (the trailer, the next header), not the
		// next payload, so that it too can be placed directly.
		lim = min(rxReadAhead, need+rxLargeReadAhead)
	}
	if r.inRecv {
		return errNestedRead
	}
	for r.w < need {
		if q.rawConn != nil {
			// Wait for the socket without holding the buffer.
			r.fillLim, r.fillErr = lim, nil
			err := q.rawConn.Read(r.fillFn)
			if err == nil {
				err = r.fillErr
			}
			if err != nil {
				return err
			}
			continue
		}
		n, err := q.conn.Read(r.buf[r.w:lim])
		r.w += n
		if err != nil {
			if r.w >= need {
				return nil
			}
			return err
		}
	}
	return nil
}

// readInto fills dst from the stream: from the read-ahead buffer, or
// straight from the socket for a remainder of rxDirectMin bytes or more.
func (q *queuePair) readInto(dst []byte) error {
	r := &q.r
	for {
		n := copy(dst, r.buffered())
		r.consume(n)
		dst = dst[n:]
		if len(dst) == 0 {
			return nil
		}
		if len(dst) >= rxDirectMin {
			r.release() // empty: a direct read needs no buffer
			_, err := io.ReadFull(q.conn, dst)
			return err
		}
		if err := q.fill(len(dst)); err != nil {
			return err
		}
	}
}

// readPayload reads payload into dst, adding it to the running CRC.
func (q *queuePair) readPayload(dst []byte) error {
	takeOver()
	if err := q.readInto(dst); err != nil {
		return err
	}
	if q.crc {
		q.r.crc = iwarp.UpdateCRC(q.r.crc, dst)
	}
	return nil
}

// placeGuarded places peer data into dst, part of region m (STag stag),
// which the caller has read-locked. Bytes already read ahead are copied under
// that lock; the rest is read with the lock held only during each read(2),
// re-checking the STag each time (see rawio_linux.go). The lock is released
// on return. revoked reports that the STag was invalidated meanwhile.
func (q *queuePair) placeGuarded(m *memRegion, stag uint32, dst []byte) (revoked bool, err error) {
	takeOver()
	r := &q.r
	for {
		if r.nspec > 0 && r.r == r.w {
			// The stream continues in specs[0]: the payload is in place if
			// it starts where the read put that spec. The specs lie in m:
			// they are armed only for a Read Response that has more to
			// come, into the same sink, and readFPDU relinearizes them for
			// any other FPDU. A spec taken whole moves the stream on to
			// the next; anything else copies all of them back.
			c := 0
			head := r.ahead.specs[0]
			if len(dst) > 0 && &dst[0] == &head[0] {
				c = min(len(dst), len(head))
				if q.crc {
					r.crc = iwarp.UpdateCRC(r.crc, dst[:c])
				}
				dst = dst[c:]
			}
			if c == len(head) && (len(dst) == 0 || r.nspec == 1) {
				q.claimed()
			} else {
				q.relinearize(c)
			}
		}
		n := copy(dst, r.buffered())
		r.consume(n)
		if q.crc {
			r.crc = iwarp.UpdateCRC(r.crc, dst[:n])
		}
		dst = dst[n:]
		if len(dst) == 0 || q.rawConn == nil {
			if len(dst) > 0 {
				err = q.readPayload(dst)
			}
			m.mu.RUnlock()
			return false, err
		}
		if len(dst) >= rxDirectMin {
			break
		}
		// A small remainder comes through the read-ahead buffer (with
		// the trailer and what follows: up to rxLargeReadAhead bytes of
		// it after a large FPDU, so that a large payload behind it is
		// placed directly too); the region is unlocked while the socket
		// is waited for, and re-checked before the copy.
		m.mu.RUnlock()
		if err := q.fill(len(dst)); err != nil {
			return false, err
		}
		m.mu.RLock()
		if m.closed || !m.valid || m.stag != stag {
			m.mu.RUnlock()
			return true, nil
		}
	}
	m.mu.RUnlock()
	if r.inRecv {
		return false, errNestedRead
	}
	r.release() // empty: a direct read needs no buffer
	r.rawDst, r.rawMR, r.rawSTag, r.rawRevoked, r.rawErr = dst, m, stag, false, nil
	err = q.rawConn.Read(q.rawReadFn)
	r.rawDst, r.rawMR = nil, nil
	if err == nil {
		err = r.rawErr
	}
	return r.rawRevoked, err
}

// readTrailer reads and checks the pad and CRC of the current FPDU.
func (q *queuePair) readTrailer(pl int) error {
	ulpdu := q.r.hdrLen - iwarp.MPALenFieldLen + pl
	tl := iwarp.TrailerLen(ulpdu)
	if err := q.fill(tl); err != nil {
		return err
	}
	r := &q.r
	err := iwarp.CheckTrailer(r.buf[r.r:r.r+tl], ulpdu, r.crc, q.crc)
	r.consume(tl)
	return err
}

// violation sends the Terminate for code and stops the reader.
func (q *queuePair) violation(code iwarp.TermCode, format string, args ...any) error {
	q.terminateLocal(code, fmt.Sprintf(format, args...), q.r.hdr[:q.r.hdrLen])
	return errStop
}

// reader is the connection's receive goroutine.
func (q *queuePair) reader() {
	defer q.exitOne()
	defer q.r.release()
	if q.r.shortWait {
		q.dev.confirmSweep.add(q)
		defer q.dev.confirmSweep.remove(q)
	}
	for {
		err := q.r.pendErr
		if err != nil {
			q.r.pendErr = nil
			if q.failed.Load() {
				err = errStop // e.g. failLocked's deadline, which woke a receiving caller
			}
		} else {
			if q.r.shortWait && q.r.empty() && !q.r.large {
				err = q.receive() // delivers as it goes
			} else {
				err = q.readFPDU()
				q.deliver() // completions this FPDU produced, with no lock held
			}
			if err == nil {
				if q.r.empty() && q.wantLead.Load() && q.wantLead.CompareAndSwap(true, false) {
					q.handOver() // returns when the reader receives again
				}
				continue
			}
		}
		q.lead.Store(leadGone)
		var pe *iwarp.ProtocolError
		switch {
		case errors.Is(err, errStop):
		case errors.As(err, &pe):
			t := pe.Terminate()
			frame, _ := iwarp.AppendTerminateFPDU(nil, &t, 1, q.crc)
			q.fail(&verbs.TerminateError{Layer: uint8(pe.Code.Layer()), EType: pe.Code.EType(), ECode: pe.Code.ECode(),
				Reason: pe.Error()}, frame)
		default:
			q.fail(fmt.Errorf("%w: %w", verbs.ErrConnectionLost, err), nil)
			return
		}
		// After a Terminate, drain (and ignore) whatever the peer still
		// sends until it closes, briefly, so our Terminate is read before
		// the socket closes.
		q.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		q.r.release()
		buf := rxPool.Get().(*[rxReadAhead]byte)
		defer rxPool.Put(buf)
		for {
			if _, err := q.conn.Read(buf[:]); err != nil {
				return
			}
		}
	}
}

// readFPDU reads and processes one FPDU.
func (q *queuePair) readFPDU() error {
	r := &q.r
	if err := q.fill(4); err != nil {
		return err
	}
	hl, pl, err := iwarp.ParseFPDUHeader(r.buf[r.r:r.w], &r.h)
	if errors.Is(err, iwarp.ErrIncomplete) {
		if err := q.fill(hl); err != nil {
			return err
		}
		hl, pl, err = iwarp.ParseFPDUHeader(r.buf[r.r:r.w], &r.h)
	}
	if err != nil {
		if terminateRejected(r.buf[r.r:r.w], err) {
			return q.peerTerminated(unreadTerminate(err))
		}
		return err
	}
	r.hdrLen = copy(r.hdr[:], r.buf[r.r:r.r+hl])
	r.crc = 0
	if q.crc {
		r.crc = iwarp.UpdateCRC(0, r.buf[r.r:r.r+hl])
	}
	r.consume(hl)
	r.large = pl >= rxDirectMin
	if r.nspec > 0 && r.h.Opcode != iwarp.OpReadResponse {
		if err := q.unspec(); err != nil {
			return err
		}
	}
	if !r.spoke {
		r.spoke = true
		q.mu.Lock()
		q.peerSpoke = true
		q.cond.Broadcast()
		q.mu.Unlock()
	}
	if q.failed.Load() {
		// In the error state nothing more is placed or answered: the
		// reader only drains until the peer closes.
		return errStop
	}
	h := &r.h
	switch h.Opcode {
	case iwarp.OpWrite:
		return q.rxWrite(pl)
	case iwarp.OpReadResponse:
		return q.rxReadResponse(pl)
	case iwarp.OpSend, iwarp.OpSendInvalidate, iwarp.OpSendSE, iwarp.OpSendSEInvalidate:
		return q.rxSend(pl)
	case iwarp.OpReadRequest:
		return q.rxReadRequest(pl)
	case iwarp.OpTerminate:
		return q.rxTerminate(pl)
	}
	return q.violation(iwarp.TermRDMAPUnexpectedOpcode, "opcode %v", h.Opcode)
}

// tagStart checks tagged-message continuity (one tagged message at a time:
// opcode and STag constant, TO contiguous). rxSend checks the same of
// untagged Sends (opcode constant, MO contiguous).
func (q *queuePair) tagStart() error {
	r := &q.r
	h := &r.h
	if !r.tagActive {
		r.tagActive, r.tagOp, r.tagSTag, r.tagNextTO = true, h.Opcode, h.STag, h.TO
		return nil
	}
	switch {
	case r.tagOp != h.Opcode:
		return q.violation(iwarp.TermRDMAPCatastrophicStream, "%v segment inside an unfinished %v", h.Opcode, r.tagOp)
	case h.STag != r.tagSTag:
		return q.violation(iwarp.TermDDPTaggedInvalidSTag, "STag %#08x changed to %#08x within a message", r.tagSTag, h.STag)
	case h.TO != r.tagNextTO:
		return q.violation(iwarp.TermDDPTaggedBaseBounds, "TO %#x, expected %#x", h.TO, r.tagNextTO)
	}
	return nil
}

func (q *queuePair) tagEnd(pl int) {
	r := &q.r
	r.tagNextTO = r.h.TO + uint64(pl)
	if r.h.Last {
		r.tagActive = false
	}
}

func (q *queuePair) rxWrite(pl int) error {
	h := &q.r.h
	if err := q.tagStart(); err != nil {
		return err
	}
	if pl > 0 { // zero-length Writes (RTR) are not checked, as in siw
		m, off, code, reason := q.dev.stags.remoteCheck(q.pd, h.STag, h.TO, pl, verbs.AccessRemoteWrite, true)
		if m == nil {
			return q.violation(code, "RDMA Write: %s", reason)
		}
		revoked, err := q.placeGuarded(m, h.STag, m.buf[off:off+pl])
		if err != nil {
			return err
		}
		if revoked {
			return q.violation(iwarp.TermDDPTaggedInvalidSTag, "RDMA Write: STag %#08x invalidated during placement", h.STag)
		}
	}
	if err := q.readTrailer(pl); err != nil {
		return err
	}
	q.tagEnd(pl)
	return nil
}

func (q *queuePair) rxReadResponse(pl int) error {
	r := &q.r
	h := &r.h
	if err := q.tagStart(); err != nil {
		return err
	}
	q.mu.Lock()
	if q.orqHead == q.orqTail || q.state != verbs.StateRTS {
		q.mu.Unlock()
		return q.violation(iwarp.TermRDMAPCatastrophicStream, "Read Response with no outstanding Read Request")
	}
	slot := q.orq[q.orqHead%uint64(len(q.orq))]
	var wq *sendWQE
	if slot != rtrORQ {
		wq = &q.sq[slot%uint64(len(q.sq))]
	}
	q.mu.Unlock()

	if wq == nil { // RTR read: zero length
		if pl != 0 || !h.Last {
			return q.violation(iwarp.TermDDPTaggedBaseBounds, "Read Response to the RTR Read carries %d bytes", pl)
		}
		if err := q.readTrailer(pl); err != nil {
			return err
		}
	} else {
		sink := &wq.sgl[0]
		m := sink.m
		m.mu.RLock()
		// The sink must still take local writes: it may have been
		// re-registered without them since the Read was posted (siw
		// checks IB_ACCESS_LOCAL_WRITE as the response arrives,
		// siw_proc_rresp).
		// The response answers the Read Request: it targets the STag
		// that request named, which must still be the region's, valid
		// (not invalidated, nor re-registered under a new key since).
		stag := wq.sink
		valid := m.stag == stag && m.valid && !m.closed && m.access&verbs.AccessLocalWrite != 0
		if h.STag != stag {
			m.mu.RUnlock()
			return q.violation(iwarp.TermDDPTaggedInvalidSTag, "Read Response to STag %#08x, the Read Request named %#08x", h.STag, stag)
		}
		want := m.base + uint64(sink.off+wq.placed)
		if h.TO != want || wq.placed+pl > wq.length || (h.Last && wq.placed+pl != wq.length) {
			m.mu.RUnlock()
			return q.violation(iwarp.TermDDPTaggedBaseBounds, "Read Response TO %#x length %d (last %v), expected TO %#x, %d of %d bytes placed",
				h.TO, pl, h.Last, want, wq.placed, wq.length)
		}
		if !valid {
			m.mu.RUnlock()
			return q.violation(iwarp.TermDDPTaggedInvalidSTag, "Read Response sink STag %#08x was invalidated locally or lacks local write access", stag)
		}
		at := sink.off + wq.placed + pl
		// A peer cuts a response into FPDUs of one size, but the first
		// may differ (our own writer aligns FPDUs to TCP segments, siw
		// follows its GSO size): the rest is predicted to come in FPDUs
		// of this one's size once two in a row had it, else only the
		// next FPDU, no longer than the buffer takes back.
		stable := wq.placed > 0 && r.rrPL == pl
		r.rrPL = pl
		if rest := wq.length - wq.placed - pl; !h.Last && rest > 0 && pl >= rxDirectMin {
			// The response goes on: its next payloads may come in the same read.
			r.specGap = iwarp.TrailerLen(r.hdrLen-iwarp.MPALenFieldLen+pl) + r.hdrLen
			if stable {
				r.specPL, r.specNext = pl, m.buf[at:at+rest]
			} else {
				r.specPL = min(rest, pl, rxReadAhead-r.specGap-rxLargeReadAhead)
				r.specNext = m.buf[at : at+r.specPL]
			}
		}
		revoked, err := q.placeGuarded(m, stag, m.buf[at-pl:at])
		r.specNext = nil
		if err != nil {
			return err
		}
		if revoked {
			return q.violation(iwarp.TermDDPTaggedInvalidSTag, "Read Response sink STag %#08x was invalidated locally during placement", stag)
		}
		if err := q.readTrailer(pl); err != nil {
			return err
		}
		wq.placed += pl
	}
	q.tagEnd(pl)
	if h.Last {
		// Retiring the Read frees its send-queue slot for reuse. The writer
		// read the slot without mu before it sent the Read Request, and may
		// not have taken mu since: its count of socket writes, bumped before
		// each write, orders that read before the reuse. (The socket's own
		// lock did, when every read went through a RawConn.Read of its own;
		// receive stays in one.)
		q.w.writes.Load()
		q.mu.Lock()
		if q.state == verbs.StateRTS {
			q.orqHead++
			if wq != nil {
				wq.state, wq.status = wqeDone, verbs.StatusSuccess
				q.retireLocked()
			}
			q.cond.Signal()
		}
		q.mu.Unlock()
	}
	return nil
}

func (q *queuePair) rxSend(pl int) error {
	r := &q.r
	h := &r.h
	if h.MSN != r.msn[iwarp.QNSend] {
		return q.violation(iwarp.TermDDPUntaggedMSNRange, "Send MSN %d, expected %d", h.MSN, r.msn[iwarp.QNSend])
	}
	if !r.recvActive {
		if h.MO != 0 {
			return q.violation(iwarp.TermDDPUntaggedInvalidMO, "first Send segment has MO %d", h.MO)
		}
		q.mu.Lock()
		if q.rqHead == q.rqTail || q.state != verbs.StateRTS {
			q.mu.Unlock()
			return q.violation(iwarp.TermDDPUntaggedMSNNoBuffer, "no receive posted for Send MSN %d", h.MSN)
		}
		r.recv = &q.rq[q.rqHead%uint64(len(q.rq))]
		q.mu.Unlock()
		r.recvActive, r.recvOp, r.recvInv = true, h.Opcode, h.InvalidateSTag
		r.recvPos, r.recvSGE, r.recvSGEOff = 0, 0, 0
	} else if h.Opcode != r.recvOp {
		// Every DDP segment of an RDMAP message carries the message's
		// RDMAP header (RFC 5040 §4): a Send may not end as a Send with
		// Invalidate (or SE). Answered as a change within a tagged
		// message is (tagStart); siw ends the stream too ("packet
		// intersection").
		return q.violation(iwarp.TermRDMAPCatastrophicStream, "%v segment inside an unfinished %v", h.Opcode, r.recvOp)
	} else if int(h.MO) != r.recvPos {
		return q.violation(iwarp.TermDDPUntaggedInvalidMO, "Send MO %d, expected %d", h.MO, r.recvPos)
	}
	rw := r.recv
	if r.recvPos+pl > rw.length {
		q.completeRecv(verbs.StatusLocalLength, 0, 0, &verbs.TerminateError{Layer: 1, EType: iwarp.ETypeDDPUntaggedBuffer,
			ECode: iwarp.TermDDPUntaggedMessageTooLong.ECode(), Reason: "receive buffer too small"})
		return q.violation(iwarp.TermDDPUntaggedMessageTooLong, "Send of at least %d bytes, receive buffer holds %d", r.recvPos+pl, rw.length)
	}
	for rem := pl; rem > 0; {
		s := &rw.sgl[r.recvSGE]
		take := min(s.n-r.recvSGEOff, rem)
		if take > 0 {
			// The region is checked as it is written, not only when the
			// receive was posted: it may have been invalidated (by the
			// peer's own Send with Invalidate too), deregistered or
			// re-registered without local write access since. siw checks
			// every SGE as it places (siw_proc_send, siw_check_sge).
			m := s.m
			m.mu.RLock()
			if m.closed || !m.valid || m.access&verbs.AccessLocalWrite == 0 {
				m.mu.RUnlock()
				return q.recvRevoked("is invalid or lacks local write access")
			}
			revoked, err := q.placeGuarded(m, m.stag, m.buf[s.off+r.recvSGEOff:s.off+r.recvSGEOff+take])
			if err != nil {
				return err
			}
			if revoked {
				return q.recvRevoked("was invalidated during placement")
			}
		}
		r.recvSGEOff += take
		rem -= take
		if r.recvSGEOff == s.n {
			r.recvSGE++
			r.recvSGEOff = 0
		}
	}
	if err := q.readTrailer(pl); err != nil {
		return err
	}
	r.recvPos += pl
	if !h.Last {
		return nil
	}
	r.msn[iwarp.QNSend]++
	var flags verbs.CompletionFlags
	if r.recvOp == iwarp.OpSendSE || r.recvOp == iwarp.OpSendSEInvalidate {
		flags |= verbs.SolicitedEvent
	}
	if r.recvOp.Invalidates() {
		inv := r.recvInv
		code, ok := iwarp.TermRDMAPOpCannotInvalidate, false
		if m := q.dev.stags.lookup(inv); m != nil {
			code, ok = m.invalidateRemote(q.pd, inv)
		}
		if !ok {
			q.completeRecv(verbs.StatusRemoteInvalidate, r.recvPos, 0, &verbs.TerminateError{Layer: uint8(code.Layer()), EType: code.EType(),
				ECode: code.ECode(), Reason: fmt.Sprintf("STag %#08x cannot be invalidated", inv)})
			return q.violation(code, "Send with Invalidate names STag %#08x, which is not a valid STag of this stream", inv)
		}
		flags |= verbs.WithInvalidate
	}
	q.completeRecv(verbs.StatusSuccess, r.recvPos, flags, nil)
	return nil
}

// recvRevoked fails the active receive, whose region is no longer writable
// (why says how), with StatusLocalProtection, and answers the Send with a DDP
// catastrophic Terminate, as siw does (siw_proc_send).
func (q *queuePair) recvRevoked(why string) error {
	code := iwarp.TermDDPLocalCatastrophic
	reason := fmt.Sprintf("Send MSN %d: receive buffer region %s", q.r.h.MSN, why)
	q.completeRecv(verbs.StatusLocalProtection, 0, 0, &verbs.TerminateError{Layer: uint8(code.Layer()), EType: code.EType(),
		ECode: code.ECode(), Reason: reason})
	return q.violation(code, "%s", reason)
}

// completeRecv completes the active receive.
func (q *queuePair) completeRecv(st verbs.Status, n int, flags verbs.CompletionFlags, err error) {
	r := &q.r
	wc := verbs.Completion{ID: r.recv.id, QP: q, Opcode: verbs.OpcodeRecv, Status: st, ByteLen: n, Flags: flags, Err: err}
	if flags&verbs.WithInvalidate != 0 {
		wc.InvalidatedSTag = r.recvInv
	}
	r.recvActive, r.recv = false, nil
	q.mu.Lock()
	if q.state == verbs.StateRTS {
		q.rqHead++
		q.recvCQ.push(&wc)
	}
	q.mu.Unlock()
}

func (q *queuePair) rxReadRequest(pl int) error {
	r := &q.r
	h := &r.h
	body := r.scratch[:iwarp.ReadRequestLen]
	if err := q.readPayload(body); err != nil {
		return err
	}
	r.hdrLen += copy(r.hdr[r.hdrLen:], body)
	if err := q.readTrailer(pl); err != nil {
		return err
	}
	if h.MSN != r.msn[iwarp.QNReadRequest] {
		return q.violation(iwarp.TermDDPUntaggedMSNRange, "Read Request MSN %d, expected %d", h.MSN, r.msn[iwarp.QNReadRequest])
	}
	if h.MO != 0 {
		return q.violation(iwarp.TermDDPUntaggedInvalidMO, "Read Request MO %d", h.MO)
	}
	r.msn[iwarp.QNReadRequest]++
	var ir inboundRead
	if err := ir.req.Decode(body); err != nil {
		return err
	}
	ir.msn = h.MSN
	if ir.req.Size > 0 {
		m, _, code, reason := q.dev.stags.remoteCheck(q.pd, ir.req.SrcSTag, ir.req.SrcTO, int(ir.req.Size), verbs.AccessRemoteRead, false)
		if m == nil {
			return q.violation(code, "RDMA Read Request: %s", reason)
		}
		m.mu.RUnlock()
	}
	q.mu.Lock()
	if q.irqTail-q.irqHead >= uint64(q.ird) {
		ird := q.ird
		q.mu.Unlock()
		return q.violation(iwarp.TermRDMAPCatastrophicStream, "Read Request exceeds IRD %d", ird)
	}
	if len(q.irq) > 0 && q.state == verbs.StateRTS {
		q.irq[q.irqTail%uint64(len(q.irq))] = ir
		q.irqTail++
		q.cond.Signal()
	}
	q.mu.Unlock()
	return nil
}

// Received Terminates. A Terminate from the peer ends the stream: the queue
// pair fails with a *verbs.TerminateError with Received set, and nothing is
// sent back, not even for a malformed Terminate: a Terminate (RFC 5040 §7)
// is the last message on a failed stream, and answering one could only
// start an exchange of Terminates. siw answers none either
// (siw_proc_terminate).
//
// A Terminate whose header copy is truncated still reports the layer, error
// type and code of its Terminate Control. One that DDP delivers whole on the
// Terminate queue but whose Terminate Control cannot be read (a body under 4
// bytes, or L clear: a Terminate is a single-segment message) reports
// termUnread as all three. A segment whose DDP header is itself malformed
// (ULPDU_Length shorter than the header, QN not 2, sent tagged) is a DDP or
// RDMAP violation like any other and is answered, whatever its opcode.

// termUnread is the Layer, EType and ECode of the TerminateError for a
// received Terminate whose Terminate Control could not be read. No 4-bit
// Layer field holds it; the device counts it under TerminateCounts.Other.
const termUnread = 0xff

// terminateRejected reports whether err, ParseFPDUHeader's rejection of the
// header at b, rejects a Terminate that DDP delivered on the Terminate queue:
// a valid untagged header on QN 2 with opcode Terminate (ParseFPDUHeader
// checks those first), refused for a body too short for the Terminate
// Control or for L clear.
func terminateRejected(b []byte, err error) bool {
	return len(b) >= 4 && iwarp.Opcode(b[3]&0x0f) == iwarp.OpTerminate &&
		(errors.Is(err, iwarp.ErrMessageLength) || errors.Is(err, iwarp.ErrNotLast))
}

// unreadTerminate is the error of a received Terminate whose Terminate
// Control could not be read; cause says why.
func unreadTerminate(cause error) *verbs.TerminateError {
	return &verbs.TerminateError{Received: true, Layer: termUnread, EType: termUnread, ECode: termUnread,
		Reason: fmt.Sprintf("malformed Terminate, Terminate Control not read: %v", cause)}
}

// peerTerminated fails the queue pair with te, a received Terminate, sending
// nothing, and stops the reader.
func (q *queuePair) peerTerminated(te *verbs.TerminateError) error {
	q.mu.Lock()
	q.failLocked(te, nil)
	q.mu.Unlock()
	return errStop
}

// rxTerminate reads a Terminate's body and fails the queue pair with the
// peer's error (see Received Terminates above).
func (q *queuePair) rxTerminate(pl int) error {
	r := &q.r
	var body [iwarp.UntaggedHeaderLen + iwarp.ReadRequestLen + 8]byte
	keep := min(pl, len(body))
	if err := q.readPayload(body[:keep]); err != nil {
		return err
	}
	for rest := pl - keep; rest > 0; {
		n := min(rest, len(r.scratch))
		if err := q.readPayload(r.scratch[:n]); err != nil {
			return err
		}
		rest -= n
	}
	if err := q.readTrailer(pl); err != nil {
		return err
	}
	var t iwarp.Terminate
	var te *verbs.TerminateError
	switch err := t.Decode(body[:keep]); {
	case err == nil:
		te = &verbs.TerminateError{Received: true, Layer: uint8(t.Code.Layer()), EType: t.Code.EType(), ECode: t.Code.ECode(),
			Reason: fmt.Sprintf("%v (%v order)", t.Code, t.Order)}
	case keep >= 4:
		// The header copy is truncated, but the Terminate Control was
		// read (iwarp.Terminate.DecodeAs); t.DDPHeader() is nil.
		te = &verbs.TerminateError{Received: true, Layer: uint8(t.Code.Layer()), EType: t.Code.EType(), ECode: t.Code.ECode(),
			Reason: fmt.Sprintf("malformed Terminate %v (%v order): %v", t.Code, t.Order, err)}
	default: // not reached: ParseFPDUHeader refuses a Terminate body under 4 bytes
		te = unreadTerminate(err)
	}
	q.mu.Lock()
	// A Terminate that answers one of our Read Requests (its header copy is
	// a Read Request) fails the oldest outstanding read with
	// StatusRemoteAccess; everything else is flushed.
	if dh := t.DDPHeader(); len(dh) >= 4 && iwarp.Opcode(dh[3]&0x0f) == iwarp.OpReadRequest && q.orqHead < q.orqTail {
		if slot := q.orq[q.orqHead%uint64(len(q.orq))]; slot != rtrORQ {
			wq := &q.sq[slot%uint64(len(q.sq))]
			wq.state, wq.status, wq.err = wqeDone, verbs.StatusRemoteAccess, &verbs.QPError{Cause: te}
		}
	}
	q.failLocked(te, nil)
	q.mu.Unlock()
	return errStop
}
