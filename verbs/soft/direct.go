package soft

import (
	"encoding/binary"
	"errors"
	"os"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// Direct receive processing (verbs.DirectProcessor).
//
// One goroutine at a time receives for a QP: it owns rxState, reads the
// socket and delivers the completions. Normally that is the QP's reader
// goroutine; a caller waiting for one completion may take over (ProcessDirect)
// so that the completion it waits for is delivered on its own goroutine and
// nothing has to wake it. This is the leader/follower pattern, with the
// reader as the leader of last resort. lead says who receives; it moves
//
//   - from the reader to a caller only by hand-over: a caller that finds the
//     reader receiving registers (leadWaiter, wantLead) and sleeps on leadCh;
//     the reader, after the next FPDU it delivers, when nothing is left
//     buffered (a caller never resumes a half-read FPDU, whose progress lives
//     on the reader's stack), makes the caller the receiver and wakes it. That
//     wake-up replaces the one that would have delivered the caller's
//     completion, and from then on the reader is out of the way;
//   - from a caller to nobody when its completion has been delivered; it
//     kicks the reader (rxKick) when it leaves anything behind: buffered
//     bytes, an error, a large FPDU whose payload is placed directly, or a
//     consumer's request for the reader (wantReader, from Resume);
//   - from nobody to a caller (ProcessDirect) or to the reader: when kicked,
//     when the QP fails, or when the device's take-back sweep finds nobody
//     receiving for a while (takeback.go), so bytes never wait longer than
//     Config.TakeBack for a receiver even when no caller comes.
//
// lead's atomic operations order the receivers' accesses to rxState: each
// hand-over's Store happens before the next receiver's CompareAndSwap (or,
// for the reader's hand-over, before the send on leadCh).
const (
	leadNone   = iota // nobody receives: the next ProcessDirect or the reader takes over
	leadReader        // the reader goroutine receives
	leadCaller        // a goroutine in ProcessDirect receives
	leadGone          // the reader handles a failure or has ended: nobody takes over
)

// DefaultTakeBack is Config.TakeBack's default.
const DefaultTakeBack = 2 * time.Millisecond

var _ verbs.DirectProcessor = (*queuePair)(nil)

// ProcessDirect implements verbs.DirectProcessor.
//
// The deadline and failLocked both end a wait for the socket the same way:
// through the socket's read deadline, which only the receiving caller's turn
// may move (leadMu orders the moves against the turn's end, so the reader
// never meets a deadline meant for a caller).
func (q *queuePair) ProcessDirect(done func() bool, deadline time.Time) bool {
	if q.rawConn == nil {
		return false // a stream without readiness I/O: only the reader receives
	}
	if q.lead.Load() == leadReader && q.dev.crowd.crowded() {
		// The reader receives, and the device's busy QPs outnumber the
		// processors (crowd): the reader delivers. A caller receiving
		// directly starts with a read(2) that finds the socket empty (a
		// RawConn.Read forgets the readiness the reader's wait keeps,
		// rawio_linux.go), one system call per call; the goroutine
		// wake-up it saves costs no thread wake-up while every processor
		// is busy. At 64 connections of one call in flight each on this
		// 2-vCPU VM, leaving it to the reader makes 4.1 system calls per
		// call instead of 5.0 and spends 18.36 us of CPU per call instead
		// of 18.51 (PERFORMANCE.md, "On a crowded device the reader
		// delivers").
		return false
	}
	if !q.takeLead(done, deadline) {
		return done()
	}
	// leadDirect checks failed before every wait for the socket: failLocked
	// wakes only a caller it saw receiving.
	ok, handBack := q.leadDirect(done, deadline)
	q.releaseLead(handBack)
	return ok
}

// takeLead makes the caller the receiver and reports whether it did: at once
// when nobody receives, after the reader hands over when it does. It does not
// wait when another caller receives (the caller's Resume then has the reader
// take over after that one).
func (q *queuePair) takeLead(done func() bool, deadline time.Time) bool {
	for {
		if q.lead.CompareAndSwap(leadNone, leadCaller) {
			if q.unreceived.Load() {
				q.unreceived.Store(false) // the take-back sweep must look again
			}
			return true
		}
		switch q.lead.Load() {
		case leadNone:
			// The last receiver just left: try again.
		case leadReader:
			return q.awaitHandOver(done, deadline)
		default:
			return false
		}
	}
}

// awaitHandOver waits for the reader, found receiving, to make the caller the
// receiver and reports whether it did. It does not wait when another caller
// waits for that already (the reader delivers to both and hands over to that
// one) or when done reports true already, and stops waiting when the QP
// fails or the deadline passes.
func (q *queuePair) awaitHandOver(done func() bool, deadline time.Time) bool {
	if !q.leadWaiter.CompareAndSwap(false, true) {
		return false
	}
	defer q.leadWaiter.Store(false)
	var expired <-chan time.Time // leadTimer belongs to the waiter
	if !deadline.IsZero() {
		if q.leadTimer == nil {
			q.leadTimer = time.NewTimer(time.Until(deadline))
		} else {
			q.leadTimer.Reset(time.Until(deadline))
		}
		defer q.leadTimer.Stop()
		expired = q.leadTimer.C
	}
	// Only the reader moves lead away from leadReader: to us (it sees
	// wantLead) or to leadGone (the QP failed, and done is closed). It looks
	// at wantLead after each delivery, so a completion delivered after the
	// Store below is followed by a hand-over, and one delivered before it is
	// seen by done.
	//
	// The reader takes the request with a CompareAndSwap of wantLead before
	// it hands over, and a waiter that gives up withdraws it the same way:
	// exactly one of them clears it, so a hand-over never goes to nobody.
	q.wantLead.Store(true)
	// A completion the reader staged before it looked at wantLead may be
	// on its way to the handler on another goroutine (see settle): done
	// sees it only once that delivery has ended.
	q.settle()
	if !done() {
		select {
		case <-q.leadCh:
			return true
		case <-q.done:
		case <-expired:
		}
	}
	// Done, failed or out of time: withdraw the request, unless the reader
	// has taken it already; then receive the hand-over, and leadDirect
	// returns at once (done, failed) or on its first wait (the deadline).
	if q.wantLead.CompareAndSwap(true, false) {
		return false
	}
	<-q.leadCh
	return true
}

// leadDirect is ProcessDirect's receive loop. It reports whether done became
// true and whether the reader must take over at once.
func (q *queuePair) leadDirect(done func() bool, deadline time.Time) (ok, handBack bool) {
	r := &q.r
	n := uint64(0) // FPDUs processed, counted into the device's Stats once
	defer func() { q.dev.directFPDUs.Add(n) }()
	if !deadline.IsZero() && !q.setDirectDeadline(deadline) {
		return done(), true // failed
	}
	for {
		if done() {
			// A failed QP's reader, woken by done before we left, waits
			// for our kick (handOver): hand back then too.
			return true, !r.empty() || q.failed.Load()
		}
		if q.failed.Load() {
			return false, true
		}
		whole, large := r.nextFPDU()
		switch {
		case large:
			return false, true
		case whole:
			err := q.readFPDU() // reads nothing from the socket: it is all buffered
			n++
			q.deliver()
			if err != nil {
				r.pendErr = err
				return done(), true
			}
		default:
			if q.settle() {
				continue // a delivery elsewhere may have made done true
			}
			r.large = false // the next FPDU is small: read ahead as far as possible
			if err := q.fill(r.w - r.r + 1); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) && !q.failed.Load() {
					return done(), !r.empty() // ours passed (failLocked's comes with failed)
				}
				r.pendErr = err
				return done(), true
			}
		}
	}
}

// settle waits until no other goroutine is delivering the QP's completions
// and reports whether it had to wait. One goroutine delivers a CQ at a time;
// a receiver whose deliver finds another one delivering (the writer, a
// PostSend, another QP's reader on a shared CQ) leaves its completions to it,
// so a completion it staged may reach the handler, and done turn true, only
// after it returned. A caller must not wait for the socket, nor for a
// hand-over, before that delivery has ended: nothing would wake it.
func (q *queuePair) settle() bool {
	waited := q.recvCQ.awaitIdle()
	if q.sendCQ != q.recvCQ && q.sendCQ.awaitIdle() {
		waited = true
	}
	return waited
}

// releaseLead ends a caller's turn at receiving and kicks the reader when it
// must take over: handBack, or a consumer asked for it (Resume). The Store
// comes before the wantReader check, and Resume sets wantReader before it
// kicks, so one of the two kicks after the caller has left.
func (q *queuePair) releaseLead(handBack bool) {
	q.leadMu.Lock()
	if q.deadlineSet && !q.failed.Load() { // failLocked's deadline stays, for the reader
		q.conn.SetReadDeadline(time.Time{})
	}
	q.deadlineSet = false
	q.lead.Store(leadNone)
	q.leadMu.Unlock()
	if handBack || q.wantReader.Load() {
		q.kickReader()
	}
}

// setDirectDeadline sets the socket's read deadline for the receiving caller
// to t, unless the QP has failed (failLocked's deadline must stand), and
// reports whether it did.
func (q *queuePair) setDirectDeadline(t time.Time) bool {
	q.leadMu.Lock()
	defer q.leadMu.Unlock()
	if q.failed.Load() {
		return false
	}
	q.conn.SetReadDeadline(t)
	q.deadlineSet = true
	return true
}

// wakeCaller wakes the caller receiving directly, if one is, from its wait
// for the socket by moving the read deadline into the past. Called by
// failLocked, which sets failed first (so the turn's end leaves the deadline
// for the reader).
func (q *queuePair) wakeCaller() {
	q.leadMu.Lock()
	if q.lead.Load() == leadCaller {
		q.conn.SetReadDeadline(time.Unix(1, 0))
	}
	q.leadMu.Unlock()
}

// Resume implements verbs.DirectProcessor. wantReader stays set until the
// reader takes over after a hand-over, so a caller that the reader hands over
// to later still kicks it when it leaves: the Store comes before the Load of
// lead, and the hand-over's Store of lead after that Load when it saw the
// reader receiving.
func (q *queuePair) Resume() {
	if !q.wantReader.Load() {
		q.wantReader.Store(true)
	}
	if q.lead.Load() != leadReader {
		q.kickReader()
	}
}

// kickReader wakes a reader that stepped aside.
func (q *queuePair) kickReader() {
	select {
	case q.rxKick <- struct{}{}:
	default:
	}
}

// nextFPDU reports whether the read-ahead buffer holds the whole next FPDU,
// so that processing it reads nothing from the socket, and whether the next
// FPDU is large: rxDirectMin or more of ULPDU, whose payload the reader places
// directly.
func (r *rxState) nextFPDU() (whole, large bool) {
	b := r.buffered()
	if len(b) < iwarp.MPALenFieldLen {
		return false, false
	}
	ulpdu := int(binary.BigEndian.Uint16(b))
	if ulpdu >= rxDirectMin {
		return false, true
	}
	return len(b) >= iwarp.FPDULen(ulpdu), false
}

// handOver makes the caller waiting in awaitHandOver the receiver and waits
// until the reader should receive again: until it is kicked (by a caller that
// leaves, Resume, or the device's take-back sweep) and nobody receives.
// Called by the reader between FPDUs with nothing buffered, once it has taken
// the caller's request (wantLead).
func (q *queuePair) handOver() {
	q.r.release()
	// With the sweep before the caller can leave: a caller that has received
	// and left finds the reader registered (the sweep's look at a QP whose
	// lead is still the reader's only clears its mark).
	q.stepAside()
	defer q.dev.takeBack.remove(q)
	q.lead.Store(leadCaller)
	q.leadCh <- struct{}{} // never blocks: one waiter, one hand-over
	done := q.done
	for {
		select {
		case <-q.rxKick:
		case <-done:
			done = nil // failed: a receiving caller kicks when it leaves
		}
		if q.lead.CompareAndSwap(leadNone, leadReader) {
			q.wantReader.Store(false)
			return
		}
	}
}
