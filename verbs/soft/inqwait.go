package soft

import "time"

// Confirming the reader's waits that a read did not confirm.
//
// With TCP_INQ the reader waits for the socket straight after the read that
// the kernel said emptied it (receive, rawio_linux.go), saving the read that
// would find it empty. The kernel's word covers the peer's FIN (tcp_inq_hint
// counts it) but not a reset: a peer that aborts right behind its last bytes
// (SO_LINGER 0, or closing with our bytes unread, as siw and Linux sockets
// do) makes the read that returns those bytes report nothing left, and the
// reset's readiness is spent with theirs, so that wait would never end.
//
// The device's confirm sweep (Device.inqConfirm, a qpSweep) bounds it. Every
// inqConfirmPeriod it looks at the QPs whose reader receives that way; one
// that has been in the same unconfirmed wait since the previous look is woken
// through the socket's read deadline and reads once more: EAGAIN (the wait
// that follows is an ordinary one, which any later readiness ends), data, or
// the reset. Under load a wait lasts far less than a period and no reader is
// ever woken; an idle connection is woken once, between one and two periods
// after its last message.

// inqConfirmPeriod is the confirm sweep's period: a reset right behind the
// peer's last bytes is seen within two of them.
const inqConfirmPeriod = 50 * time.Millisecond

// confirmINQWait is the confirm sweep's look at q: it wakes q's reader when it
// has been in the same unconfirmed wait since the previous look (q.inqSeen,
// the sweep's own). The wake-up is a read deadline in the past, set under
// leadMu while the reader still waits there and receives for q; the reader
// clears it as it leaves receive (leaveReceive).
func (q *queuePair) confirmINQWait() {
	v := q.inqWait.Load()
	if v == 0 || v != q.inqSeen {
		q.inqSeen = v
		return
	}
	q.leadMu.Lock()
	if q.inqWait.Load() == v && q.lead.Load() == leadReader && !q.failed.Load() && !q.poked {
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
	q.inqWait.Store(0)
	if poked = q.poked; poked {
		q.poked = false
		if !q.failed.Load() {
			q.conn.SetReadDeadline(time.Time{})
		}
	}
	q.leadMu.Unlock()
	return poked
}
