package soft

// Taking receiving back (see direct.go). A QP's reader that handed receiving
// over to a caller sleeps until it is kicked: by a caller that leaves
// something behind, by Resume, by the QP's failure, or by its device's
// take-back sweep, which kicks it when nobody has received for the QP for a
// while, so that bytes arriving with no caller waiting (a reverse-direction
// call, the reply to a call whose caller gave up, the peer's Terminate) are
// still received.
//
// One sweep per device (Device.takeBack, a qpSweep) serves every reader that
// stepped aside. Each tick (every Config.TakeBack/2) marks the QPs nobody
// receives for and kicks those it had marked at the previous tick, unless a
// caller took receiving in between (takeLead clears the mark): a QP whose
// callers come and go keeps its reader asleep, and one nobody receives for is
// taken back between TakeBack/2 and TakeBack later. A timer per QP instead
// woke each reader every TakeBack to look, even while callers received: with
// many busy connections, one wake-up for every few calls.

// sweepAside is the take-back sweep's look at q, whose reader stands aside:
// it kicks the reader when nobody has received for q since the previous look
// (when it set q.unreceived), and otherwise marks q when nobody receives now.
func (q *queuePair) sweepAside() {
	if q.lead.Load() != leadNone {
		q.unreceived.Store(false)
		return
	}
	if q.unreceived.Swap(true) {
		q.kickReader()
	}
}

// stepAside registers q's reader, which has just handed over, with the
// take-back sweep.
func (q *queuePair) stepAside() {
	q.unreceived.Store(false)
	q.dev.takeBack.add(q)
}
