package soft

import (
	"runtime"
	"sync/atomic"
	"time"
)

// crowd counts the device's busy QPs: those that wrote a message themselves
// (postInline) in the current or the previous epoch of about a millisecond.
// postInline asks it whether to wake the writer to keep a thread spinning
// (see there): that pays only while the busy QPs do not outnumber the
// processors. With more of them the processors rarely go idle, the wake-up
// finds no idle processor to spin on, and it is pure cost: the writer
// goroutine runs, finds nothing to do and parks again. ProcessDirect asks
// it too (see there): a caller that receives its own reply saves a
// goroutine wake-up, which costs little while no processor is idle, and
// pays a read(2) that finds the socket empty.
//
// Counting costs one monotonic clock read per inline post and, once per
// epoch per QP, one shared atomic add. The count is a heuristic for a
// scheduling choice only; a race that miscounts a QP for an epoch changes
// nothing else.
type crowd struct {
	epoch atomic.Int64 // the current epoch number
	n     atomic.Int32 // QPs that posted in the current epoch
	prev  atomic.Int32 // QPs that posted in the previous epoch
	procs atomic.Int32 // GOMAXPROCS, read again at each new epoch
	// clock is the monotonic clock epochs count on, in nanoseconds; nil:
	// the time since the process started (tests set their own before the
	// device has QPs).
	clock func() int64
}

// crowdEpochShift makes an epoch 2^20 ns, about a millisecond.
const crowdEpochShift = 20

// crowdStart is where the default clock of a crowd starts.
var crowdStart = time.Now()

// note counts a post by the QP whose last counted epoch is *last (guarded
// by the QP's mu), and reports whether the device is crowded: more QPs
// posted in the current or the previous epoch than there are processors.
func (c *crowd) note(last *int64) bool {
	var now int64
	if c.clock != nil {
		now = c.clock()
	} else {
		now = int64(time.Since(crowdStart))
	}
	e := now>>crowdEpochShift + 1 // never 0: a new QP's last is 0
	if cur := c.epoch.Load(); e > cur && c.epoch.CompareAndSwap(cur, e) {
		// The first to see the new epoch moves the count on (a post
		// counted meanwhile may land in the older epoch's count).
		n := c.n.Swap(0)
		if e != cur+1 {
			n = 0 // the previous epoch saw no post
		}
		c.prev.Store(n)
		c.procs.Store(int32(runtime.GOMAXPROCS(0)))
	}
	if *last != e {
		*last = e
		c.n.Add(1)
	}
	return c.crowded()
}

// crowded reports whether more QPs posted in the current or the previous
// epoch, as note last counted them, than there are processors.
func (c *crowd) crowded() bool {
	return max(c.n.Load(), c.prev.Load()) > c.procs.Load()
}
