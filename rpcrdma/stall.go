// Stall watch: a connection whose peer takes no data (Sends and RDMA Writes not
// completing) or never answers the server's RDMA Reads is closed after a timeout, so
// that it frees what its calls hold.

package rpcrdma

import (
	"time"
)

// stallWatch checks a server connection's send queue for progress every period,
// from a timer (no goroutine while it waits, so an idle connection holds none).
type stallWatch struct {
	sc                       *ServerConn
	sendTimeout, readTimeout time.Duration // <= 0: not watched
	period                   time.Duration
	timer                    *time.Timer // guarded by sc.mu

	// Progress seen at the last check, and since when none has been made while
	// work was outstanding (zero: not stalled).
	sqDone, readDone     uint64
	sendSince, readSince time.Time
}

// stallChecks is how many checks a timeout spans: a stall is noticed between the
// timeout and a quarter of it later.
const stallChecks = 4

// startStallWatch starts watching sc, unless both timeouts are off.
func (sc *ServerConn) startStallWatch(sendTimeout, readTimeout time.Duration) {
	shortest := time.Duration(0)
	for _, d := range []time.Duration{sendTimeout, readTimeout} {
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest == 0 {
		return
	}
	w := &stallWatch{sc: sc, sendTimeout: sendTimeout, readTimeout: readTimeout,
		period: max(shortest/stallChecks, time.Millisecond)}
	sc.mu.Lock()
	sc.stall = w
	w.timer = time.AfterFunc(w.period, w.check)
	sc.mu.Unlock()
}

// stop ends the watch.
func (w *stallWatch) stop() { w.timer.Stop() }

// check runs from the timer: it closes the connection if its Sends/Writes or its
// RDMA Reads have made no progress for their timeout while some were outstanding,
// and otherwise checks again a period later.
func (w *stallWatch) check() {
	sc, e := w.sc, w.sc.ep
	select {
	case <-sc.closed:
		return
	default:
	}
	now := time.Now()
	done, reads := e.sqDone.Load(), e.readDone.Load()
	// Sends and Writes: anything on the send queue and nothing completed since the
	// last check.
	if overdue(&w.sendSince, now, w.sendTimeout, e.sqOut.Load() > 0 && done == w.sqDone) {
		w.close("peer took no data within the send timeout; closing", w.sendTimeout)
		return
	}
	// RDMA Reads: some in flight (their ORD credits held) and none completed.
	if overdue(&w.readSince, now, w.readTimeout, sc.reads.InUse() > 0 && reads == w.readDone) {
		w.close("RDMA Reads not answered within the read timeout; closing", w.readTimeout)
		return
	}
	w.sqDone, w.readDone = done, reads
	// startStallWatch stores the timer under sc.mu after starting it, so a first
	// check that comes sooner must not read it unlocked.
	sc.mu.Lock()
	t := w.timer
	sc.mu.Unlock()
	t.Reset(w.period)
}

// overdue tracks one kind of progress: while stuck (work outstanding and none
// completed since the last check) it remembers when that began in *since, and reports
// whether that was at least timeout ago; progress, or a timeout of 0, resets it.
func overdue(since *time.Time, now time.Time, timeout time.Duration, stuck bool) bool {
	if timeout <= 0 || !stuck {
		*since = time.Time{}
		return false
	}
	if since.IsZero() {
		*since = now
		return false
	}
	return now.Sub(*since) >= timeout
}

// close counts and logs a stalled connection and closes it on a goroutine of its own
// (Close stops this watch).
func (w *stallWatch) close(msg string, timeout time.Duration) {
	w.sc.l.opts.Logger.Warn(msg, "remote", w.sc.remote, "timeout", timeout)
	w.sc.l.stalled.Add(1)
	go w.sc.Close()
}
