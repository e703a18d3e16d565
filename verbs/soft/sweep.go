package soft

import (
	"sync"
	"time"
)

// qpSweep looks at every QP registered with it, every period, from a timer
// function that is scheduled only while some QP is registered: an idle device
// has nothing scheduled and no goroutine for it. A Device has two: the
// take-back sweep (takeback.go) and the sweep that confirms the waits of
// readers that stopped reading after a short read (confirmwait.go).
type qpSweep struct {
	mu     sync.Mutex
	qps    map[*queuePair]struct{}
	timer  *time.Timer // runs tick; nil until first needed
	armed  bool        // timer is scheduled (qps is not empty)
	period time.Duration
	look   func(*queuePair) // called with mu held
}

// add registers q and schedules the sweep if it was not.
func (s *qpSweep) add(q *queuePair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.qps == nil {
		s.qps = make(map[*queuePair]struct{})
	}
	s.qps[q] = struct{}{}
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

// remove unregisters q and unschedules the sweep when no QP is left.
func (s *qpSweep) remove(q *queuePair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.qps, q)
	if len(s.qps) == 0 && s.armed {
		s.armed = false
		s.timer.Stop()
	}
}

// tick is one sweep.
func (s *qpSweep) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return // remove stopped the timer as this run began
	}
	for q := range s.qps {
		s.look(q)
	}
	s.timer.Reset(s.period)
}
