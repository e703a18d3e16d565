package soft

import (
	"sync"
	"time"
)

// Taking receiving back (see direct.go). A QP's reader that handed receiving
// over to a caller sleeps until it is kicked: by a caller that leaves
// something behind, by Resume, by the QP's failure, or by its device's
// take-back sweep, which kicks it when nobody has received for the QP for a
// while, so that bytes arriving with no caller waiting (a reverse-direction
// call, the reply to a call whose caller gave up, the peer's Terminate) are
// still received.
//
// One sweep per device serves every reader that stepped aside. Each tick
// (every Config.TakeBack/2) marks the QPs nobody receives for and kicks
// those it had marked at the previous tick, unless a caller took receiving
// in between (takeLead clears the mark): a QP whose callers come and go keeps
// its reader asleep, and one nobody receives for is taken back between
// TakeBack/2 and TakeBack later. A timer per QP instead woke each reader
// every TakeBack to look, even while callers received: with many busy
// connections, one wake-up for every few calls.
//
// The sweep is a timer function, not a goroutine: it runs only while some
// reader is aside, and an idle device has nothing scheduled.

// takeBackSweep is a Device's take-back sweep.
type takeBackSweep struct {
	mu     sync.Mutex
	aside  map[*queuePair]struct{} // readers that handed over
	timer  *time.Timer             // runs tick; nil until first needed
	armed  bool                    // timer is scheduled (aside is not empty)
	period time.Duration
}

// add registers q, whose reader has just handed over, and schedules the
// sweep if it was not.
func (s *takeBackSweep) add(q *queuePair) {
	q.unreceived.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aside == nil {
		s.aside = make(map[*queuePair]struct{})
	}
	s.aside[q] = struct{}{}
	if s.armed {
		return
	}
	s.armed = true
	if s.timer == nil {
		s.timer = time.AfterFunc(s.period, s.tick)
	} else {
		s.timer.Reset(s.period)
	}
}

// remove unregisters q, whose reader receives again or has ended, and
// unschedules the sweep when no reader is left aside.
func (s *takeBackSweep) remove(q *queuePair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.aside, q)
	if len(s.aside) == 0 && s.armed {
		s.armed = false
		s.timer.Stop()
	}
}

// tick is one sweep.
func (s *takeBackSweep) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return // remove stopped the timer as this run began
	}
	for q := range s.aside {
		q.sweepAside()
	}
	s.timer.Reset(s.period)
}

// sweepAside is the sweep's look at q: it kicks q's reader when nobody has
// received for q since the previous look (when it set q.unreceived), and
// otherwise marks q when nobody receives now.
func (q *queuePair) sweepAside() {
	if q.lead.Load() != leadNone {
		q.unreceived.Store(false)
		return
	}
	if q.unreceived.Swap(true) {
		q.kickReader()
	}
}
