// Per-procedure server statistics: the Outcome of a call, the ServerOptions.Observe hook
// and ProcStats, an allocation-free table of counts and latency histograms that a
// Server feeds through that hook (what `nfsstat -s` counts, with latencies).

package oncrpc

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is how a Server answered a call, as ServerOptions.Observe sees it. The
// first six values are the accept_stat values of RFC 5531 (Success through
// SystemErr); OutcomeDenied is MSG_DENIED (RPC_MISMATCH or AUTH_ERROR) and
// OutcomeDropped a call answered with nothing (ErrNoReply).
type Outcome uint8

// Outcomes.
const (
	OutcomeSuccess              = Outcome(Success)
	OutcomeProgUnavail          = Outcome(ProgUnavail)
	OutcomeProgMismatch         = Outcome(ProgMismatch)
	OutcomeProcUnavail          = Outcome(ProcUnavail)
	OutcomeGarbageArgs          = Outcome(GarbageArgs)
	OutcomeSystemErr            = Outcome(SystemErr)
	OutcomeDenied       Outcome = 6
	OutcomeDropped      Outcome = 7
	// NumOutcomes is the number of Outcome values.
	NumOutcomes = 8
)

var outcomeNames = [NumOutcomes]string{"success", "prog_unavail", "prog_mismatch", "proc_unavail", "garbage_args", "system_err", "denied", "dropped"}

// String returns the outcome's name in lower case ("success", "garbage_args",
// "denied", ...), as used for metric labels.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// replyOutcome is the Outcome of a reply with header rh (send false: none sent).
func replyOutcome(send bool, rh *ReplyHeader) Outcome {
	switch {
	case !send:
		return OutcomeDropped
	case rh.Stat == MsgDenied:
		return OutcomeDenied
	case rh.AcceptStat <= SystemErr:
		return Outcome(rh.AcceptStat)
	}
	return OutcomeSystemErr
}

// LatencyBuckets are the upper bounds of ProcStats' latency histogram buckets; a last
// bucket (+Inf) holds the rest.
var LatencyBuckets = [...]time.Duration{
	25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2500 * time.Millisecond,
}

// NumLatencyBuckets is the number of histogram buckets: len(LatencyBuckets) + 1 (+Inf).
const NumLatencyBuckets = len(LatencyBuckets) + 1

// CallInfo is what ServerOptions.Observe learns of a call the Server answered (or
// dropped).
type CallInfo struct {
	Prog, Vers, Proc uint32
	// Netid is the transport's netid, Request.Netid ("tcp", "rdma", "tcp6", ...).
	Netid string
	// Outcome is how the call was answered.
	Outcome Outcome
	// Duration is the time from the Server receiving the call to its reply handed
	// to the transport.
	Duration time.Duration
}

// MaxProcKeys bounds the procedures a ProcStats keeps apart: calls to further
// (program, version, procedure, netid) keys, which a client can make up at will,
// are counted under OtherProc.
const MaxProcKeys = 512

// OtherProc is the key under which a ProcStats counts the calls to programs,
// versions and procedures the server does not serve (outcome PROG_UNAVAIL,
// PROG_MISMATCH or PROC_UNAVAIL, whatever their numbers and netid), and, once full,
// the calls to procedures it has no room for.
var OtherProc = ProcKey{Prog: ^uint32(0), Vers: ^uint32(0), Proc: ^uint32(0)}

// unserved reports whether o says the server does not serve the call's program,
// version or procedure: such calls are counted under OtherProc.
func unserved(o Outcome) bool {
	return o == OutcomeProgUnavail || o == OutcomeProgMismatch || o == OutcomeProcUnavail
}

// ProcKey names one procedure of one program version, called over one netid.
type ProcKey struct {
	Prog, Vers, Proc uint32
	Netid            string
}

// ProcCounters are one procedure's cumulative counters.
type ProcCounters struct {
	// Outcomes counts the calls by how they were answered.
	Outcomes [NumOutcomes]uint64
	// Buckets counts the calls by latency (from the call's arrival at the Server to
	// its reply handed to the transport): Buckets[i] those of at most
	// LatencyBuckets[i] and more than the bound before; the last, the rest. Not
	// cumulative.
	Buckets [NumLatencyBuckets]uint64
	// Sum is the total latency of the calls counted.
	Sum time.Duration
}

// Calls returns the number of calls counted, whatever their outcome.
func (c *ProcCounters) Calls() uint64 {
	var n uint64
	for _, v := range c.Outcomes {
		n += v
	}
	return n
}

// procCell is the live, atomically updated form of ProcCounters.
type procCell struct {
	outcomes [NumOutcomes]atomic.Uint64
	buckets  [NumLatencyBuckets]atomic.Uint64
	sum      atomic.Int64
}

// ProcStats counts calls per procedure, by outcome, with a latency histogram. Its
// Observe method is a ServerOptions.Observe: after the first call to a procedure it
// takes no lock and does not allocate (a lookup in a table replaced whole when a
// key is first seen, and three atomic additions). The zero value is ready to use.
//
// Only the procedures the server serves get a key of their own: calls answered
// PROG_UNAVAIL, PROG_MISMATCH or PROC_UNAVAIL, whose numbers a client makes up at
// will, are counted under OtherProc, so that a peer calling made-up programs cannot
// fill the table and push the real procedures into OtherProc. The table still holds
// at most MaxProcKeys keys, and counts the calls to further procedures under
// OtherProc: calls with other outcomes may carry made-up numbers too (those denied
// before the program is looked up, or answered by a handler with something other
// than PROC_UNAVAIL).
type ProcStats struct {
	mu    sync.Mutex // serialises adding procedures
	table atomic.Pointer[map[ProcKey]*procCell]
}

// Observe counts one call: under its procedure's key, or under OtherProc (calls to
// procedures the server does not serve, and those past MaxProcKeys procedures).
func (p *ProcStats) Observe(ci CallInfo) {
	o, d := ci.Outcome, ci.Duration
	k := ProcKey{ci.Prog, ci.Vers, ci.Proc, ci.Netid}
	if unserved(o) {
		k = OtherProc
	}
	var c *procCell
	if t := p.table.Load(); t != nil {
		c = (*t)[k]
	}
	if c == nil {
		c = p.add(k)
	}
	if o >= NumOutcomes {
		o = OutcomeSystemErr
	}
	// The outcome, which counts the call, moves last, and load reads the outcomes
	// first: a snapshot that shows a call shows its latency too.
	i := 0
	for i < len(LatencyBuckets) && d > LatencyBuckets[i] {
		i++
	}
	c.sum.Add(int64(d))
	c.buckets[i].Add(1)
	c.outcomes[o].Add(1)
}

// add returns k's cell, adding it (or, when the table is full, OtherProc's).
func (p *ProcStats) add(k ProcKey) *procCell {
	p.mu.Lock()
	defer p.mu.Unlock()
	var old map[ProcKey]*procCell
	if t := p.table.Load(); t != nil {
		old = *t
	}
	if c := old[k]; c != nil {
		return c
	}
	if len(old) >= MaxProcKeys-1 {
		k = OtherProc
		if c := old[k]; c != nil {
			return c
		}
	}
	t := make(map[ProcKey]*procCell, len(old)+1)
	maps.Copy(t, old)
	c := new(procCell)
	t[k] = c
	p.table.Store(&t)
	return c
}

// Each calls fn with a snapshot of every procedure's counters, in no particular order.
// fn must not retain c.
func (p *ProcStats) Each(fn func(k ProcKey, c *ProcCounters)) {
	t := p.table.Load()
	if t == nil {
		return
	}
	var s ProcCounters
	for k, c := range *t {
		c.load(&s)
		fn(k, &s)
	}
}

// Get returns a snapshot of the counters of k (zero if never observed).
func (p *ProcStats) Get(k ProcKey) ProcCounters {
	var s ProcCounters
	t := p.table.Load()
	if t == nil {
		return s
	}
	c := (*t)[k]
	if c == nil {
		return s
	}
	c.load(&s)
	return s
}

// load copies the cell's counters into s, the outcomes first (see Observe).
func (c *procCell) load(s *ProcCounters) {
	for i := range c.outcomes {
		s.Outcomes[i] = c.outcomes[i].Load()
	}
	for i := range c.buckets {
		s.Buckets[i] = c.buckets[i].Load()
	}
	s.Sum = time.Duration(c.sum.Load())
}
