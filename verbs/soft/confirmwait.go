package soft

import "time"

// Confirming the reader's waits that a read did not confirm.
//
// The reader waits for the socket straight after a read that came back short
// (receive, rawio_linux.go), saving the read that would find it empty. But
// the stream's end may have come in with the last bytes: a peer that closes
// right behind them puts its FIN into the read that returns them, and one
// that aborts (SO_LINGER 0, or closing with our bytes unread, as siw and
// Linux sockets do) puts its reset right behind them; either's readiness is
// spent with the bytes', so that wait would never end.
//
// The device's confirm sweep (Device.confirmSweep, a qpSweep) bounds it.
// Every confirmPeriod it looks at the QPs whose reader receives that way; one
// that has been in the same unconfirmed wait since the previous look is woken
// through the socket's read deadline and reads once more: EAGAIN (the wait
// that follows is an ordinary one, which any later readiness ends), data, or
// the stream's end. Under load a wait lasts far less than a period and no
// reader is ever woken; an idle connection is woken once, between one and two
// periods after its last message.

// confirmPeriod is the confirm sweep's period: a FIN or reset right behind
// the peer's last bytes is seen within two of them.
const confirmPeriod = 50 * time.Millisecond

// confirmWait is the confirm sweep's look at q: it wakes q's reader when it
// has been in the same unconfirmed wait since the previous look
// (q.unconfirmedSeen, the sweep's own). The wake-up is a read deadline in the
// past, set under leadMu while the reader still waits there and receives for
// q; the reader clears it as it leaves receive (leaveReceive).
func (q *queuePair) confirmWait() {
	v := q.unconfirmed.Load()
	if v == 0 || v != q.unconfirmedSeen {
		q.unconfirmedSeen = v
		return
	}
	q.leadMu.Lock()
	if q.unconfirmed.Load() == v && q.lead.Load() == leadReader && !q.failed.Load() && !q.poked {
		q.poked = true
		q.conn.SetReadDeadline(time.Unix(1, 0))
	}
	q.leadMu.Unlock()
}

// leaveReceive ends a turn of receive: the reader is no longer in an
// unconfirmed wait, and a read deadline the confirm sweep set is cleared (on
// a failed QP it stays: failLocked may have set it). It reports whether the
// sweep had set one.
func (q *queuePair) leaveReceive() (poked bool) {
	q.leadMu.Lock()
	q.unconfirmed.Store(0)
	if poked = q.poked; poked {
		q.poked = false
		if !q.failed.Load() {
			q.conn.SetReadDeadline(time.Time{})
		}
	}
	q.leadMu.Unlock()
	return poked
}
