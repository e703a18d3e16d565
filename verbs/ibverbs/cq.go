//go:build ibverbs && linux && cgo

package ibverbs

/*
#include <stdlib.h>
#include <errno.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// compQueue is the provider's verbs.CQ: an ibv_cq with its own completion
// channel, plus a small Go-side queue for completions the provider makes
// itself (work posted to a QP in the error state, work still outstanding
// when a QP is destroyed) and for completions drained from the device while
// a QP is being closed.
//
// Completions are found by adaptive polling. After activity (a completion
// found, or work posted to a QP using the CQ) a waiter polls the device
// (ibv_poll_cq, no system call) for up to Config.CQPoll before it blocks; a
// poll that finds nothing in that time ends the spinning until the next
// activity, so an idle CQ costs no CPU. To block, a waiter arms the CQ
// (ibv_req_notify_cq) itself and polls once more; one goroutine per CQ waits
// for the channel's file descriptor to become readable in the Go runtime's
// poller, and each event wakes the CQ's waiters, which poll. The CQ is armed
// only when a waiter is about to block, so completions found by polling
// raise no events.
//
// A CQ with a handler (verbs.WithHandler) has no waiters: the event goroutine
// itself polls the device and calls the handler (deliver), and so does any
// goroutine that queues provider-made completions, once it holds no lock.
// After each event the event goroutine keeps delivering for as long as
// completions keep coming and then for up to Config.CQPoll more, before it
// re-arms the CQ and blocks. One goroutine delivers at a time; another that
// finds delivery in progress leaves its completions to it.
type compQueue struct {
	dev   *Device
	depth int
	cq    *C.struct_ibv_cq
	ch    *C.struct_ibv_comp_channel
	chFD  *pollFD
	loop  chan struct{}

	// pollFor is how long to poll the device after activity before
	// blocking (Config.CQPoll; 0: never poll without an event).
	pollFor time.Duration
	// hot says there was activity since a waiter last polled in vain for
	// pollFor: the next waiter polls before it blocks.
	hot atomic.Bool

	mu      sync.Mutex
	wc      *C.struct_gwc // C array of GSHIM_BATCH entries, guarded by mu
	soft    []verbs.Completion
	qps     map[uint32]*queuePair
	nqp     int
	err     error
	closed  bool
	armed   bool // the CQ is armed and no event was read since (guarded by mu)
	notify  chan struct{}
	closedC chan struct{}

	handler    verbs.CompletionHandler
	delivering bool               // a goroutine is in deliver (guarded by mu)
	spare      []verbs.Completion // the batch being delivered (deliverer only)
	idle       sync.Cond          // Close waits on it for the deliverer (L = &mu)
}

var _ verbs.CQ = (*compQueue)(nil)

// CreateCQ creates a completion queue of at least depth entries
// (ibv_create_cq) with a completion channel.
func (d *Device) CreateCQ(depth int, opts ...verbs.CQOption) (verbs.CQ, error) {
	if err := d.checkFork("CreateCQ"); err != nil {
		return nil, err
	}
	if depth <= 0 || (d.attr.MaxCQE > 0 && depth > d.attr.MaxCQE) {
		return nil, fmt.Errorf("ibverbs: CreateCQ: %w: depth %d out of range [1, %d] (device max_cqe)", ErrLimit, depth, d.attr.MaxCQE)
	}
	ch, errno := C.ibv_create_comp_channel(d.ctx)
	if ch == nil {
		return nil, fmt.Errorf("ibverbs: %s: ibv_create_comp_channel: %w", d.name, errnoErr(errno))
	}
	cq, errno := C.ibv_create_cq(d.ctx, C.int(depth), nil, ch, 0)
	if cq == nil {
		C.ibv_destroy_comp_channel(ch)
		err := errnoErr(errno)
		if err == syscall.ENOMEM || err == syscall.EINVAL {
			return nil, fmt.Errorf("ibverbs: %s: ibv_create_cq(%d): %w (max_cq %d, max_cqe %d): %w", d.name, depth, ErrLimit, d.attr.MaxCQ, d.attr.MaxCQE, err)
		}
		return nil, fmt.Errorf("ibverbs: %s: ibv_create_cq(%d): %w", d.name, depth, err)
	}
	fd, err := newPollFD(int(ch.fd), "ibv_comp_channel")
	if err != nil {
		C.ibv_destroy_cq(cq)
		C.ibv_destroy_comp_channel(ch)
		return nil, err
	}
	c := &compQueue{dev: d, depth: depth, cq: cq, ch: ch, chFD: fd, loop: make(chan struct{}),
		pollFor: d.cqPoll(),
		wc:      (*C.struct_gwc)(C.calloc(C.GSHIM_BATCH, C.sizeof_struct_gwc)),
		qps:     make(map[uint32]*queuePair), notify: make(chan struct{}, 1), closedC: make(chan struct{}),
		handler: verbs.ApplyCQOptions(opts).Handler}
	c.idle.L = &c.mu
	d.async.addCQ(cq, c)
	go c.eventLoop()
	return c, nil
}

// eventLoop waits for completion events and wakes waiters, which poll.
// With a handler it arms the CQ itself, delivers (completions that arrived
// before the arming too), waits for the next event, and then delivers while
// completions keep coming (spinDeliver) before it arms again; without, a
// waiter arms the CQ when it is about to block (armLocked).
func (c *compQueue) eventLoop() {
	defer close(c.loop)
	var rc C.int
	read := func(uintptr) bool {
		rc = C.gshim_get_cq_event(c.ch)
		return rc != C.EAGAIN
	}
	for {
		if c.handler != nil {
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				return
			}
			ok := c.armLocked()
			c.mu.Unlock()
			if !ok {
				c.signal()
				return
			}
			c.deliver() // completions that arrived before the arming
		}
		if err := c.chFD.rc.Read(read); err != nil {
			return
		}
		c.mu.Lock()
		c.armed = false
		c.mu.Unlock()
		c.signal()
		if c.handler != nil {
			c.spinDeliver()
		}
	}
}

// spinDeliver delivers completions until none has come for pollFor (the
// CQ is not armed meanwhile, so the device raises no events for them).
func (c *compQueue) spinDeliver() {
	if c.pollFor <= 0 {
		return
	}
	start := time.Now()
	for i := 1; ; i++ {
		n, open := c.deliver()
		if !open {
			return
		}
		if n > 0 {
			i = 0
			start = time.Time{} // read the clock at the next check
		} else if i%pollClockEvery == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= c.pollFor {
				return
			}
		}
	}
}

// pollClockEvery is how many empty polls pass between two readings of the
// clock while a CQ is polled: reading it can cost more than a poll (under
// emulation, a clock source without a vDSO fast path is a system call).
const pollClockEvery = 16

// armLocked arms the CQ for the next completion (ibv_req_notify_cq); false
// when that fails (recorded in c.err). Caller holds mu.
func (c *compQueue) armLocked() bool {
	if rc := C.gshim_req_notify_cq(c.cq); rc != 0 {
		if c.err == nil {
			c.err = fmt.Errorf("ibverbs: ibv_req_notify_cq: %w", syscall.Errno(rc))
		}
		return false
	}
	c.armed = true
	return true
}

// touch records activity: the next waiter polls before it blocks.
func (c *compQueue) touch() {
	if c.pollFor > 0 && !c.hot.Load() {
		c.hot.Store(true)
	}
}

// spin polls the device for up to pollFor while the CQ is hot, and reports
// whether completions are queued. A spin that finds nothing cools the CQ.
func (c *compQueue) spin(ctx context.Context) bool {
	if c.pollFor <= 0 || !c.hot.Load() {
		return false
	}
	start := time.Now()
	for i := 1; ; i++ {
		c.mu.Lock()
		if c.closed || c.err != nil {
			c.mu.Unlock()
			return false // Wait's own loop reports it
		}
		if len(c.soft) == 0 {
			c.drainOneLocked()
		}
		n := len(c.soft)
		c.mu.Unlock()
		if n > 0 {
			return true
		}
		if i%pollClockEvery == 0 && (time.Since(start) >= c.pollFor || ctx.Err() != nil) {
			c.hot.Store(false)
			return false
		}
	}
}

func (c *compQueue) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.signal()
}

func (c *compQueue) signal() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// pushSoft queues a provider-made completion (and, with a handler, delivers
// it). The caller must hold no lock.
func (c *compQueue) pushSoft(wc verbs.Completion) {
	c.mu.Lock()
	if !c.closed {
		c.soft = append(c.soft, wc)
	}
	c.mu.Unlock()
	c.signal()
	c.deliver()
}

// deliver hands queued and device completions to the handler until both are
// empty, unless another goroutine is doing so already (it will find these
// too before it stops). It returns how many it handed over and false once
// the CQ is closed. The caller must hold no lock.
func (c *compQueue) deliver() (int, bool) {
	if c.handler == nil {
		return 0, true
	}
	c.mu.Lock()
	if c.delivering {
		open := !c.closed
		c.mu.Unlock()
		return 0, open
	}
	c.delivering = true
	total := 0
	for !c.closed {
		if len(c.soft) == 0 && c.err == nil {
			c.drainOneLocked()
		}
		if len(c.soft) == 0 {
			break
		}
		batch := c.soft
		c.soft = c.spare[:0]
		c.mu.Unlock()
		for i := range batch {
			c.handler(&batch[i])
		}
		total += len(batch)
		clear(batch)
		c.mu.Lock()
		c.spare = batch
	}
	c.delivering = false
	open := !c.closed && c.err == nil
	c.idle.Broadcast()
	c.mu.Unlock()
	return total, open
}

// Poll moves up to len(wc) completions into wc: provider-made and drained
// ones if there are any, else straight from the device, GSHIM_BATCH per cgo
// call (completions still in the device are found by the next Poll).
func (c *compQueue) Poll(wc []verbs.Completion) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, fmt.Errorf("ibverbs: Poll: %w", verbs.ErrClosed)
	}
	if c.handler != nil {
		return 0, c.err
	}
	k := copy(wc, c.soft)
	if k > 0 {
		n := copy(c.soft, c.soft[k:])
		clear(c.soft[n:])
		c.soft = c.soft[:n]
	}
	if k == 0 && len(wc) > 0 {
		k = max(c.pollLocked(wc), 0)
	}
	if k == 0 && c.err != nil {
		return 0, c.err
	}
	if k > 0 {
		c.touch()
	}
	return k, nil
}

// pollLocked polls the device once into dst (at most GSHIM_BATCH) and
// returns how many completions it stored; -1 on a device error (recorded in
// c.err). Caller holds mu.
func (c *compQueue) pollLocked(dst []verbs.Completion) int {
	n := min(len(dst), C.GSHIM_BATCH)
	got := int(C.gshim_poll_cq(c.cq, C.int(n), c.wc))
	if got < 0 {
		if c.err == nil {
			c.err = &verbs.CQOverrunError{Depth: c.depth}
		}
		return -1
	}
	raw := unsafe.Slice(c.wc, C.GSHIM_BATCH)
	k := 0
	for i := 0; i < got; i++ {
		if c.convert(&raw[i], &dst[k]) {
			k++
		}
	}
	return k
}

// drainLocked moves every completion in the device CQ to the Go-side
// queue. Caller holds mu.
func (c *compQueue) drainLocked() {
	var buf [C.GSHIM_BATCH]verbs.Completion
	for {
		got := c.pollLocked(buf[:])
		if got <= 0 {
			return
		}
		c.soft = append(c.soft, buf[:got]...)
		clear(buf[:got])
		c.signal() // a waiter may have taken the event for these already
	}
}

// convert turns a device completion into a verbs.Completion; false when it
// belongs to no known QP (a QP destroyed during connection setup).
func (c *compQueue) convert(w *C.struct_gwc, out *verbs.Completion) bool {
	q := c.qps[uint32(w.qp_num)]
	if q == nil {
		return false
	}
	*out = verbs.Completion{QP: q}
	st := int(w.status)
	out.Status = mapStatus(st)
	// ibv_wc.opcode is undefined in error completions: the wr_id says
	// which queue the request was on.
	switch wrID := uint64(w.wr_id); {
	case wrID&sendBit == 0:
		out.Opcode = verbs.OpcodeRecv
		var keep bool
		if out.ID, keep = q.recvDone(wrID); !keep {
			return false
		}
		if out.Status == verbs.StatusSuccess {
			out.ByteLen = int(w.byte_len)
			if w.wc_flags&C.IBV_WC_WITH_INV != 0 {
				out.Flags |= verbs.WithInvalidate
				out.InvalidatedSTag = uint32(w.invalidated_rkey)
				c.dev.remoteInvalidated(out.InvalidatedSTag)
			}
		}
	default:
		var op verbs.SendOp
		var keep bool
		if out.ID, op, keep = q.sendDone(wrID&^sendBit, st == C.IBV_WC_SUCCESS); !keep {
			return false
		}
		out.Opcode = sendOpcode(op)
		if out.Opcode == verbs.OpcodeRead && out.Status == verbs.StatusSuccess {
			out.ByteLen = int(w.byte_len)
		}
	}
	if out.Status != verbs.StatusSuccess {
		out.Err = q.completionFailed(st, uint32(w.vendor_err))
	}
	return true
}

// mapStatus maps ibv_wc_status onto verbs.Status.
func mapStatus(st int) verbs.Status {
	switch st {
	case C.IBV_WC_SUCCESS:
		return verbs.StatusSuccess
	case C.IBV_WC_WR_FLUSH_ERR:
		return verbs.StatusFlushed
	case C.IBV_WC_LOC_LEN_ERR:
		return verbs.StatusLocalLength
	case C.IBV_WC_LOC_PROT_ERR, C.IBV_WC_LOC_ACCESS_ERR, C.IBV_WC_MW_BIND_ERR:
		return verbs.StatusLocalProtection
	case C.IBV_WC_REM_ACCESS_ERR:
		return verbs.StatusRemoteAccess
	case C.IBV_WC_REM_INV_RD_REQ_ERR:
		return verbs.StatusRemoteInvalidate
	}
	return verbs.StatusFatal
}

// Wait blocks until a completion is available, the CQ fails or closes, or
// ctx ends. After activity it first polls the device for up to
// Config.CQPoll (spin); then it has the CQ armed and blocks.
func (c *compQueue) Wait(ctx context.Context) error {
	if c.handler == nil && c.spin(ctx) {
		c.signal() // pass the wake-up on to another waiter
		return nil
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return fmt.Errorf("ibverbs: Wait: %w", verbs.ErrClosed)
		}
		if len(c.soft) == 0 && c.handler == nil {
			c.drainOneLocked()
			if len(c.soft) == 0 && c.err == nil && !c.armed && c.armLocked() {
				// A completion that came before the arming raises no
				// event: poll once more.
				c.drainOneLocked()
			}
		}
		n, err := len(c.soft), c.err
		if c.handler != nil {
			n = 0 // the handler takes them
		}
		c.mu.Unlock()
		switch {
		case n > 0:
			c.touch()
			c.signal() // pass the wake-up on to another waiter
			return nil
		case err != nil:
			c.signal() // other waiters see it too
			return err
		}
		select {
		case <-c.notify:
		case <-c.closedC:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// drainOneLocked polls one batch from the device into the Go-side queue
// (so Wait can tell whether anything is there).
func (c *compQueue) drainOneLocked() {
	var buf [C.GSHIM_BATCH]verbs.Completion
	if got := c.pollLocked(buf[:]); got > 0 {
		c.soft = append(c.soft, buf[:got]...)
	}
}

func (c *compQueue) addQP(q *queuePair) {
	c.mu.Lock()
	c.qps[q.qpn] = q
	c.mu.Unlock()
}

// removeQP forgets q, first draining the device so q's completions are
// kept. Caller must have moved q to the error state and waited for its
// flushes as far as it wants to.
func (c *compQueue) removeQP(q *queuePair) {
	c.mu.Lock()
	if !c.closed {
		c.drainLocked()
	}
	if c.qps[q.qpn] == q {
		delete(c.qps, q.qpn)
	}
	c.mu.Unlock()
	c.deliver()
}

// Close destroys the CQ (ibv_destroy_cq). QPs using it must be closed first.
func (c *compQueue) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	if c.nqp > 0 {
		n := c.nqp
		c.mu.Unlock()
		return fmt.Errorf("ibverbs: CQ.Close: %d queue pairs still use it", n)
	}
	c.closed = true
	close(c.closedC)
	for c.delivering {
		c.idle.Wait()
	}
	c.mu.Unlock()
	c.chFD.close()
	<-c.loop
	c.dev.async.removeCQ(c.cq)
	rc := C.ibv_destroy_cq(c.cq)
	C.ibv_destroy_comp_channel(c.ch)
	C.free(unsafe.Pointer(c.wc))
	if rc != 0 {
		return fmt.Errorf("ibverbs: ibv_destroy_cq: %w", syscall.Errno(rc))
	}
	return nil
}
