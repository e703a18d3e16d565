//go:build ibverbs && linux && cgo

package ibverbs

/*
#include <stdlib.h>
#include <errno.h>
#include "shim.h"
*/
import "C"

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// sendBit marks send-queue wr_ids; receive wr_ids have it clear. Both carry
// the queue's sequence number, so completions map back to the caller's IDs
// (and opcodes) even when ibv_wc.opcode is undefined (error completions).
const sendBit = 1 << 63

// BatchPoster is implemented by this provider's queue pairs: it posts many
// work requests with one cgo call (one ibv_post_send / ibv_post_recv with a
// linked list of up to 64 requests per crossing). Type-assert a verbs.QP to
// use it.
type BatchPoster interface {
	// PostSendBatch posts wrs in order and returns how many were posted;
	// on error the rest were not.
	PostSendBatch(wrs []verbs.SendWR) (int, error)
	// PostRecvBatch posts wrs in order and returns how many were posted.
	PostRecvBatch(wrs []verbs.RecvWR) (int, error)
}

type sendSlot struct {
	id uint64
	op verbs.SendOp
	// hidden: the caller did not ask for a completion, but the provider
	// did (see postSendLocked); a successful one is not delivered.
	hidden bool
	// signaled: the device reports this request's completion.
	signaled bool
	// live: posted as request seq and not yet completed (retired). The
	// slot is in use exactly while live. Completions can come out of
	// order (siw completes a Send posted after an RDMA Read before the
	// Read's response arrives), so this, not sqHead, tells whether a
	// request has completed: the overtaken Read stays live, keeps its
	// slot, and is delivered when it completes.
	live bool
	seq  uint64
}

// pendingRecv is a receive posted before the device QP exists.
type pendingRecv struct {
	id  uint64
	sgl []verbs.SGE
}

// queuePair is the provider's verbs.QP. The device QP is created by
// rdma_create_qp when the connection is set up (rdma_cm binds a QP to its
// connection identifier, and the passive side's identifier only exists once
// a request arrives); receives posted before that are kept and posted to the
// device QP right after it is created, before the connection is accepted or
// requested.
type queuePair struct {
	dev     *Device
	pd      *protDomain
	scq     *compQueue
	rcq     *compQueue
	cfg     verbs.QPConfig
	userCtx any

	mu    sync.Mutex
	state verbs.QPState
	err   error
	done  chan struct{}
	// setup is non-nil while Dial or Accept runs; closed when it returns.
	setup chan struct{}
	id    *cmID
	qp    *C.struct_ibv_qp
	qpn   uint32
	ord   int

	// sq is the send ring: request seq is in sq[seq%len(sq)]. Every
	// request before sqHead has completed except signalled ones a later
	// completion overtook; sqTail is the next sequence number to try.
	// sqOut counts the live slots (requests outstanding): the queue is
	// full when it reaches len(sq) (MaxSendWR). A post skips the sequence
	// numbers whose slot an overtaken request still holds.
	sq             []sendSlot
	sqHead, sqTail uint64
	sqOut          int
	sqSinceSig     int // unsignalled requests posted since the last signalled one
	rq             []uint64
	rqHead, rqTail uint64
	pending        []pendingRecv
	discard        bool          // drop completions: a failed attempt's QP is being torn down
	reaper         chan struct{} // closed when reap, started by fail, is done

	// C staging for one batch, guarded by mu.
	cs   *C.struct_gsend
	cr   *C.struct_grecv
	csge *C.struct_ibv_sge
	cbad *C.int // the shims' "posted so far" out-parameter (C memory: a Go
	// variable whose address goes to C would escape to the heap per post)
	nsge int

	closeOnce sync.Once
}

var _ verbs.QP = (*queuePair)(nil)
var _ BatchPoster = (*queuePair)(nil)

// CreateQP creates a queue pair in StateInit. Limits are checked against the
// device attributes here; the device QP itself is created when the QP is
// connected.
func (pd *protDomain) CreateQP(cfg verbs.QPConfig) (verbs.QP, error) {
	d := pd.dev
	scq, ok1 := cfg.SendCQ.(*compQueue)
	rcq, ok2 := cfg.RecvCQ.(*compQueue)
	if !ok1 || !ok2 || scq == nil || rcq == nil {
		return nil, errors.New("ibverbs: CreateQP: SendCQ and RecvCQ must be CQs of this provider")
	}
	if scq.dev != d || rcq.dev != d {
		return nil, errors.New("ibverbs: CreateQP: SendCQ and RecvCQ belong to another device")
	}
	if cfg.MaxSendSGE == 0 {
		cfg.MaxSendSGE = 1
	}
	if cfg.MaxRecvSGE == 0 {
		cfg.MaxRecvSGE = 1
	}
	a := d.attr
	switch {
	case cfg.MaxSendWR <= 0 || cfg.MaxSendWR > a.MaxQPWR:
		return nil, fmt.Errorf("ibverbs: CreateQP: %w: MaxSendWR %d out of range [1, %d] (device max_qp_wr)", ErrLimit, cfg.MaxSendWR, a.MaxQPWR)
	case cfg.MaxRecvWR <= 0 || cfg.MaxRecvWR > a.MaxQPWR:
		return nil, fmt.Errorf("ibverbs: CreateQP: %w: MaxRecvWR %d out of range [1, %d] (device max_qp_wr)", ErrLimit, cfg.MaxRecvWR, a.MaxQPWR)
	case cfg.MaxSendSGE < 0 || cfg.MaxSendSGE > a.MaxSGE:
		return nil, fmt.Errorf("ibverbs: CreateQP: %w: MaxSendSGE %d out of range [1, %d] (device max_sge)", ErrLimit, cfg.MaxSendSGE, a.MaxSGE)
	case cfg.MaxRecvSGE < 0 || cfg.MaxRecvSGE > a.MaxSGE:
		return nil, fmt.Errorf("ibverbs: CreateQP: %w: MaxRecvSGE %d out of range [1, %d] (device max_sge)", ErrLimit, cfg.MaxRecvSGE, a.MaxSGE)
	}
	if err := d.checkFork("CreateQP"); err != nil {
		return nil, err
	}
	pd.mu.Lock()
	if pd.closed {
		pd.mu.Unlock()
		return nil, fmt.Errorf("ibverbs: CreateQP: %w", verbs.ErrClosed)
	}
	pd.nqp++
	pd.mu.Unlock()
	for _, c := range []*compQueue{scq, rcq} {
		c.mu.Lock()
		c.nqp++
		c.mu.Unlock()
	}
	nsge := C.GSHIM_BATCH * max(cfg.MaxSendSGE, cfg.MaxRecvSGE)
	q := &queuePair{dev: d, pd: pd, scq: scq, rcq: rcq, cfg: cfg, userCtx: cfg.Context,
		state: verbs.StateInit, done: make(chan struct{}),
		sq: make([]sendSlot, cfg.MaxSendWR), rq: make([]uint64, cfg.MaxRecvWR),
		cs:   (*C.struct_gsend)(C.calloc(C.GSHIM_BATCH, C.sizeof_struct_gsend)),
		cr:   (*C.struct_grecv)(C.calloc(C.GSHIM_BATCH, C.sizeof_struct_grecv)),
		csge: (*C.struct_ibv_sge)(C.calloc(C.size_t(nsge), C.sizeof_struct_ibv_sge)),
		cbad: (*C.int)(C.calloc(1, C.sizeof_int)),
		nsge: nsge,
	}
	return q, nil
}

func (q *queuePair) Context() any          { return q.userCtx }
func (q *queuePair) Done() <-chan struct{} { return q.done }
func (q *queuePair) State() verbs.QPState  { q.mu.Lock(); defer q.mu.Unlock(); return q.state }
func (q *queuePair) Err() error            { q.mu.Lock(); defer q.mu.Unlock(); return q.err }
func (q *queuePair) String() string        { return fmt.Sprintf("ibverbs QP %d on %s", q.qpn, q.dev.name) }

func sendOpcode(op verbs.SendOp) verbs.Opcode {
	switch op {
	case verbs.OpWrite:
		return verbs.OpcodeWrite
	case verbs.OpRead:
		return verbs.OpcodeRead
	}
	return verbs.OpcodeSend
}

// PostSend posts one send work request, or a chain of them (wr.Next) with one
// ibv_post_send call: all of them or none.
func (q *queuePair) PostSend(wr *verbs.SendWR) error {
	if wr == nil {
		return fmt.Errorf("ibverbs: PostSend: %w: nil work request", verbs.ErrInvalidWR)
	}
	if wr.Next == nil {
		_, err := q.PostSendBatch(unsafe.Slice(wr, 1))
		return err
	}
	n := 0
	for w := wr; w != nil; w = w.Next {
		if n == verbs.MaxChain {
			return fmt.Errorf("ibverbs: PostSend: %w: chain longer than %d requests", verbs.ErrInvalidWR, verbs.MaxChain)
		}
		if err := q.checkSend(w); err != nil {
			return fmt.Errorf("ibverbs: PostSend: request %d: %w", n, err)
		}
		n++
	}
	_, err := q.postSends(nil, wr, n)
	return err
}

// PostRecv posts one receive work request.
func (q *queuePair) PostRecv(wr *verbs.RecvWR) error {
	if wr == nil {
		return fmt.Errorf("ibverbs: PostRecv: %w: nil work request", verbs.ErrInvalidWR)
	}
	_, err := q.PostRecvBatch(unsafe.Slice(wr, 1))
	return err
}

func (q *queuePair) checkSend(wr *verbs.SendWR) error {
	if len(wr.SGL) > q.cfg.MaxSendSGE {
		return fmt.Errorf("%w: %d SGEs, MaxSendSGE is %d", verbs.ErrInvalidWR, len(wr.SGL), q.cfg.MaxSendSGE)
	}
	switch wr.Op {
	case verbs.OpSend, verbs.OpSendInv, verbs.OpWrite:
	case verbs.OpRead:
		if len(wr.SGL) != 1 {
			return fmt.Errorf("%w: RDMA Read needs exactly 1 sink SGE, have %d", verbs.ErrInvalidWR, len(wr.SGL))
		}
	default:
		return fmt.Errorf("%w: unknown op %v", verbs.ErrInvalidWR, wr.Op)
	}
	if wr.Flags&verbs.Solicited != 0 && wr.Op != verbs.OpSend && wr.Op != verbs.OpSendInv {
		return fmt.Errorf("%w: Solicited is only valid on Send and SendInv", verbs.ErrInvalidWR)
	}
	return nil
}

// PostSendBatch implements BatchPoster.
func (q *queuePair) PostSendBatch(wrs []verbs.SendWR) (int, error) {
	for i := range wrs {
		if err := q.checkSend(&wrs[i]); err != nil {
			return 0, fmt.Errorf("ibverbs: PostSend: request %d: %w", i, err)
		}
	}
	return q.postSends(wrs, nil, len(wrs))
}

// postSends posts n checked requests: the slice wrs (in batches of
// GSHIM_BATCH, as many as fit), or, when wrs is nil, the chain that starts at
// chain (at most GSHIM_BATCH, all or none).
func (q *queuePair) postSends(wrs []verbs.SendWR, chain *verbs.SendWR, n int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	// A send's completion, and usually the peer's answer, follow: the
	// next waiter on either CQ polls before it blocks.
	q.scq.touch()
	q.rcq.touch()
	q.mu.Lock()
	switch q.state {
	case verbs.StateClosed:
		q.mu.Unlock()
		return 0, fmt.Errorf("ibverbs: PostSend: %w", verbs.ErrClosed)
	case verbs.StateInit, verbs.StateConnecting:
		st := q.state
		q.mu.Unlock()
		return 0, fmt.Errorf("ibverbs: PostSend: %w: QP is %v", verbs.ErrBadState, st)
	case verbs.StateError:
		qerr := q.err
		q.mu.Unlock()
		for i := range wrs {
			q.scq.pushSoft(verbs.Completion{ID: wrs[i].ID, QP: q, Opcode: sendOpcode(wrs[i].Op), Status: verbs.StatusFlushed, Err: qerr})
		}
		for w := chain; wrs == nil && w != nil; w = w.Next {
			q.scq.pushSoft(verbs.Completion{ID: w.ID, QP: q, Opcode: sendOpcode(w.Op), Status: verbs.StatusFlushed, Err: qerr})
		}
		return n, nil
	}
	if len(q.sq)-q.sqOut < n {
		// Completions not polled yet may hold slots (an unsignalled
		// request retires with a later completion, possibly one the
		// provider asked for): move them to the CQ's queue, which
		// retires them, so the queue drains even when the caller polls
		// its send CQ rarely.
		q.mu.Unlock()
		q.scq.mu.Lock()
		if !q.scq.closed {
			q.scq.drainLocked()
		}
		q.scq.mu.Unlock()
		q.scq.deliver()
		q.mu.Lock()
		if q.state != verbs.StateRTS {
			q.mu.Unlock()
			return q.postSends(wrs, chain, n) // answered for the new state
		}
	}
	defer q.mu.Unlock()
	if wrs == nil {
		if free := len(q.sq) - q.sqOut; n > free {
			return 0, fmt.Errorf("ibverbs: PostSend: %w (%d outstanding, %d requests posted)", verbs.ErrQueueFull, len(q.sq), n)
		}
		return q.postSendLocked(nil, chain, n)
	}
	posted := 0
	for posted < len(wrs) {
		k, err := q.postSendLocked(wrs[posted:min(len(wrs), posted+C.GSHIM_BATCH)], nil, 0)
		posted += k
		if err != nil {
			return posted, err
		}
	}
	return posted, nil
}

// postSendLocked posts one batch: the requests of wrs that fit (at most
// GSHIM_BATCH), or, when wrs is nil, the n requests of the chain that starts
// at chain (n at most GSHIM_BATCH, and the caller checked they fit). Caller
// holds mu.
func (q *queuePair) postSendLocked(wrs []verbs.SendWR, chain *verbs.SendWR, n int) (int, error) {
	free := len(q.sq) - q.sqOut
	full := false
	if wrs != nil {
		n = len(wrs)
		if n > free {
			n, full = free, true
		}
	}
	ring := uint64(len(q.sq))
	seq := q.sqTail // the next request's sequence number
	cs := unsafe.Slice(q.cs, C.GSHIM_BATCH)
	sges := unsafe.Slice(q.csge, q.nsge)
	k := 0
	// since counts as if the device takes all n; sqSinceSig is set
	// below from what it took.
	since, sigEvery := q.sqSinceSig, max(1, len(q.sq)/2)
	wr := chain
	for i := 0; i < n; i, wr = i+1, wr.Next {
		if wrs != nil {
			wr = &wrs[i]
		}
		if wr.Op == verbs.OpRead && q.ord == 0 {
			return 0, fmt.Errorf("ibverbs: PostSend: request %d: %w: RDMA Read on a connection with ORD 0", i, verbs.ErrInvalidWR)
		}
		need := verbs.Access(0)
		if wr.Op == verbs.OpRead {
			need = verbs.AccessLocalWrite
		}
		g := &cs[i]
		g.sge_off = C.uint32_t(k)
		g.nsge = C.uint16_t(len(wr.SGL))
		for j := range wr.SGL {
			s := &wr.SGL[j]
			m, ok := s.MR.(*memRegion)
			if !ok || m == nil {
				return 0, fmt.Errorf("ibverbs: PostSend: request %d SGE %d: %w: MR is nil or not from this provider", i, j, verbs.ErrInvalidWR)
			}
			if m.pd != q.pd {
				return 0, fmt.Errorf("ibverbs: PostSend: request %d SGE %d: %w: MR belongs to another protection domain", i, j, verbs.ErrInvalidWR)
			}
			if err := m.sge(s, need, &sges[k]); err != nil {
				return 0, fmt.Errorf("ibverbs: PostSend: request %d SGE %d: %w", i, j, err)
			}
			if s.Length > 0 { // empty SGEs carry nothing; siw mishandles them
				k++
			}
		}
		g.nsge = C.uint16_t(k - int(g.sge_off))
		for q.sq[seq%ring].live {
			// An overtaken request still holds this slot. The batch
			// finds its n free slots within len(sq) sequence numbers,
			// so it never comes round to a slot it took itself.
			seq++
		}
		g.wr_id = C.uint64_t(seq | sendBit)
		g.remote_addr = C.uint64_t(wr.RemoteTO)
		g.rkey = C.uint32_t(wr.RemoteSTag)
		g.invalidate_rkey = C.uint32_t(wr.InvalidateSTag)
		var fl C.int
		hidden := false
		if wr.Flags&verbs.Signaled != 0 {
			fl |= C.IBV_SEND_SIGNALED
			since = 0
		} else if since+1 >= sigEvery {
			// A device retires unsignalled requests only with a later
			// signalled completion; signal one in every half queue
			// ourselves so the queue drains even when the caller
			// never asks (as verbs/soft, which retires on transmit).
			fl |= C.IBV_SEND_SIGNALED
			since, hidden = 0, true
		} else {
			since++
		}
		if wr.Flags&verbs.Solicited != 0 {
			fl |= C.IBV_SEND_SOLICITED
		}
		g.send_flags = C.uint8_t(fl)
		switch wr.Op {
		case verbs.OpSend:
			g.opcode = C.IBV_WR_SEND
		case verbs.OpSendInv:
			g.opcode = C.IBV_WR_SEND_WITH_INV
		case verbs.OpWrite:
			g.opcode = C.IBV_WR_RDMA_WRITE
		case verbs.OpRead:
			g.opcode = C.IBV_WR_RDMA_READ
		}
		// Live only once posted (below): a request refused here or
		// by the device leaves its slot free.
		q.sq[seq%ring] = sendSlot{id: wr.ID, op: wr.Op, hidden: hidden, signaled: fl&C.IBV_SEND_SIGNALED != 0, seq: seq}
		seq++
	}
	if n == 0 {
		return 0, fmt.Errorf("ibverbs: PostSend: %w (%d outstanding)", verbs.ErrQueueFull, len(q.sq))
	}
	rc := C.gshim_post_send(q.qp, q.cs, C.int(n), q.csge, q.cbad)
	bad := int(*q.cbad)
	// The device took the first bad requests (all n unless it failed):
	// they are outstanding, and the unsignalled ones among them count
	// towards the next provider signal even when the post failed part
	// way, or unsignalled runs could outgrow the queue, which then never
	// drains.
	for i := range bad {
		posted := uint64(cs[i].wr_id) &^ sendBit
		s := &q.sq[posted%ring]
		s.live = true
		q.sqTail = posted + 1
		if s.signaled {
			q.sqSinceSig = 0
		} else {
			q.sqSinceSig++
		}
	}
	q.sqOut += bad
	if rc != 0 {
		return bad, postError("ibv_post_send", rc, len(q.sq))
	}
	if full {
		return n, fmt.Errorf("ibverbs: PostSend: %w (%d outstanding)", verbs.ErrQueueFull, len(q.sq))
	}
	return n, nil
}

// postError explains a failed post. Providers return errno values with
// either sign (libsiw returns them negated).
func postError(what string, rc C.int, depth int) error {
	errno := syscall.Errno(rc)
	if rc < 0 {
		errno = syscall.Errno(-rc)
	}
	switch errno {
	case syscall.ENOMEM:
		return fmt.Errorf("ibverbs: %s: %w (%d outstanding): %w", what, verbs.ErrQueueFull, depth, errno)
	case syscall.EINVAL:
		return fmt.Errorf("ibverbs: %s: %w: %w", what, verbs.ErrInvalidWR, errno)
	}
	return fmt.Errorf("ibverbs: %s: %w", what, errno)
}

// PostRecvBatch implements BatchPoster.
func (q *queuePair) PostRecvBatch(wrs []verbs.RecvWR) (int, error) {
	for i := range wrs {
		if len(wrs[i].SGL) > q.cfg.MaxRecvSGE {
			return 0, fmt.Errorf("ibverbs: PostRecv: request %d: %w: %d SGEs, MaxRecvSGE is %d", i, verbs.ErrInvalidWR, len(wrs[i].SGL), q.cfg.MaxRecvSGE)
		}
	}
	q.rcq.touch()
	q.mu.Lock()
	switch q.state {
	case verbs.StateClosed:
		q.mu.Unlock()
		return 0, fmt.Errorf("ibverbs: PostRecv: %w", verbs.ErrClosed)
	case verbs.StateError:
		qerr := q.err
		q.mu.Unlock()
		for i := range wrs {
			q.rcq.pushSoft(verbs.Completion{ID: wrs[i].ID, QP: q, Opcode: verbs.OpcodeRecv, Status: verbs.StatusFlushed, Err: qerr})
		}
		return len(wrs), nil
	}
	defer q.mu.Unlock()
	if q.qp == nil || q.state != verbs.StateRTS {
		// Before the connection: validate and keep (copies; a control
		// path). They are posted to the device QP when it is created.
		for i := range wrs {
			if len(q.pending) >= len(q.rq) {
				return i, fmt.Errorf("ibverbs: PostRecv: %w (%d outstanding)", verbs.ErrQueueFull, len(q.rq))
			}
			var tmp C.struct_ibv_sge
			for j := range wrs[i].SGL {
				s := &wrs[i].SGL[j]
				m, ok := s.MR.(*memRegion)
				if !ok || m == nil || m.pd != q.pd {
					return i, fmt.Errorf("ibverbs: PostRecv: request %d SGE %d: %w: MR is nil, not from this provider or of another PD", i, j, verbs.ErrInvalidWR)
				}
				if err := m.sge(s, verbs.AccessLocalWrite, &tmp); err != nil {
					return i, fmt.Errorf("ibverbs: PostRecv: request %d SGE %d: %w", i, j, err)
				}
			}
			q.pending = append(q.pending, pendingRecv{id: wrs[i].ID, sgl: append([]verbs.SGE(nil), wrs[i].SGL...)})
			if q.qp != nil {
				if _, err := q.postRecvLocked(wrs[i : i+1]); err != nil {
					q.pending = q.pending[:len(q.pending)-1]
					return i, err
				}
			}
		}
		return len(wrs), nil
	}
	posted := 0
	for posted < len(wrs) {
		n, err := q.postRecvLocked(wrs[posted:min(len(wrs), posted+C.GSHIM_BATCH)])
		posted += n
		if err != nil {
			return posted, err
		}
	}
	return posted, nil
}

func (q *queuePair) postRecvLocked(wrs []verbs.RecvWR) (int, error) {
	free := uint64(len(q.rq)) - (q.rqTail - q.rqHead)
	full := false
	if uint64(len(wrs)) > free {
		wrs, full = wrs[:free], true
	}
	if len(wrs) == 0 {
		return 0, fmt.Errorf("ibverbs: PostRecv: %w (%d outstanding)", verbs.ErrQueueFull, len(q.rq))
	}
	cr := unsafe.Slice(q.cr, C.GSHIM_BATCH)
	sges := unsafe.Slice(q.csge, q.nsge)
	k := 0
	for i := range wrs {
		wr := &wrs[i]
		g := &cr[i]
		g.sge_off = C.uint32_t(k)
		g.nsge = C.uint32_t(len(wr.SGL))
		for j := range wr.SGL {
			s := &wr.SGL[j]
			m, ok := s.MR.(*memRegion)
			if !ok || m == nil || m.pd != q.pd {
				return 0, fmt.Errorf("ibverbs: PostRecv: request %d SGE %d: %w: MR is nil, not from this provider or of another PD", i, j, verbs.ErrInvalidWR)
			}
			if err := m.sge(s, verbs.AccessLocalWrite, &sges[k]); err != nil {
				return 0, fmt.Errorf("ibverbs: PostRecv: request %d SGE %d: %w", i, j, err)
			}
			if s.Length > 0 {
				k++
			}
		}
		g.nsge = C.uint32_t(k - int(g.sge_off))
		if g.nsge == 0 && q.dev.IWARP() {
			// libsiw refuses receives without SGEs: one empty SGE on
			// the PD's small internal region takes a zero-length
			// message just the same (and a longer one fails with
			// LocalLength, as with no SGE).
			z, err := q.pd.zeroSGE()
			if err != nil {
				return 0, fmt.Errorf("ibverbs: PostRecv: request %d: %w", i, err)
			}
			sges[k] = z
			g.nsge = 1
			k++
		}
		seq := q.rqTail + uint64(i)
		g.wr_id = C.uint64_t(seq)
		q.rq[seq%uint64(len(q.rq))] = wr.ID
	}
	rc := C.gshim_post_recv(q.qp, q.cr, C.int(len(wrs)), q.csge, q.cbad)
	bad := *q.cbad
	q.rqTail += uint64(bad)
	if rc != 0 {
		return int(bad), postError("ibv_post_recv", rc, len(q.rq))
	}
	if full {
		return len(wrs), fmt.Errorf("ibverbs: PostRecv: %w (%d outstanding)", verbs.ErrQueueFull, len(q.rq))
	}
	return len(wrs), nil
}

// sendDone retires send request seq, and the unsignalled requests posted
// before it, and returns the request's ID and operation. Called by the CQ
// with its lock held.
// keep is false while a failed connection attempt's device QP is being
// torn down: its flushes are dropped (its receives stay pending).
func (q *queuePair) sendDone(seq uint64, success bool) (id uint64, op verbs.SendOp, keep bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ring := uint64(len(q.sq))
	s := &q.sq[seq%ring]
	if !s.live || s.seq != seq {
		return 0, 0, false // completed by the provider already (reap)
	}
	s.live = false
	q.sqOut--
	// A completion retires the unsignalled requests before it; an
	// earlier signalled one still outstanding (a Read overtaken by a
	// later Send) stays live and is delivered when it completes.
	for ; q.sqHead < seq; q.sqHead++ {
		if u := &q.sq[q.sqHead%ring]; u.live && u.seq == q.sqHead && !u.signaled {
			u.live = false
			q.sqOut--
		}
	}
	q.sqHead = max(q.sqHead, seq+1)
	return s.id, s.op, !q.discard && !(s.hidden && success)
}

// recvDone retires receive seq and returns its ID.
func (q *queuePair) recvDone(seq uint64) (id uint64, keep bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if seq < q.rqHead {
		return 0, false // completed by the provider already (reap)
	}
	id = q.rq[seq%uint64(len(q.rq))]
	q.rqHead = seq + 1
	return id, !q.discard
}

// completionFailed records a failed completion: the device has moved the
// QP to the error state. It returns the completion's Err.
func (q *queuePair) completionFailed(st int, vendor uint32) error {
	if st == C.IBV_WC_WR_FLUSH_ERR {
		q.fail(fmt.Errorf("ibverbs: %w: the device flushed the queue pair", verbs.ErrConnectionLost))
		return q.Err()
	}
	cause := &CompletionError{Status: st, VendorErr: vendor, Text: C.GoString(C.ibv_wc_status_str(uint32(st)))}
	q.fail(cause)
	return &verbs.QPError{Cause: cause}
}

// CompletionError is the detail of a failed work completion: the
// ibv_wc_status, its text and the device's vendor error.
type CompletionError struct {
	Status    int
	VendorErr uint32
	Text      string
}

// Error implements error.
func (e *CompletionError) Error() string {
	return fmt.Sprintf("ibverbs: work completion status %d (%s), vendor error %#x", e.Status, e.Text, e.VendorErr)
}

// fail moves the QP to StateError (once) and the device QP to IBV_QPS_ERR,
// so the device flushes all outstanding work.
func (q *queuePair) fail(cause error) {
	q.mu.Lock()
	if q.state != verbs.StateRTS {
		q.mu.Unlock()
		return
	}
	q.state = verbs.StateError
	q.err = &verbs.QPError{Cause: cause}
	close(q.done)
	qp := q.qp
	if qp != nil {
		q.reaper = make(chan struct{})
	}
	q.mu.Unlock()
	if qp != nil {
		C.gshim_qp_to_error(qp)
		go q.reap()
	}
}

// reap completes, after flushWait at most, whatever the device does not
// flush after the QP failed: siw, for one, flushes its receive queue once,
// when the QP enters the error state, and never sees a receive the
// application wrote to the queue just after that.
func (q *queuePair) reap() {
	defer close(q.reaper)
	q.awaitFlush()
	q.flushRest()
}

// onCMEvent handles connection events of an established QP (called by the
// device's event loop; must not block).
func (q *queuePair) onCMEvent(ev cmEvent) {
	switch ev.typ {
	case C.RDMA_CM_EVENT_DISCONNECTED:
		q.fail(fmt.Errorf("ibverbs: %w: peer disconnected", verbs.ErrConnectionLost))
	case C.RDMA_CM_EVENT_DEVICE_REMOVAL:
		q.fail(fmt.Errorf("ibverbs: %w: device removed", verbs.ErrConnectionLost))
	}
}

// outstanding reports the requests posted to the device and not completed.
func (q *queuePair) outstanding() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return uint64(q.sqOut) + (q.rqTail - q.rqHead)
}

// flushWait bounds how long Close waits for the device to flush
// outstanding work before it completes the rest itself.
const flushWait = 2 * time.Second

// Close disconnects (rdma_disconnect), moves the QP to the error state,
// delivers a flushed completion for every outstanding request, and destroys
// the device QP and connection identifier.
func (q *queuePair) Close() error {
	q.closeOnce.Do(q.close)
	return nil
}

func (q *queuePair) close() {
	q.mu.Lock()
	prev := q.state
	if q.state != verbs.StateError {
		q.err = &verbs.QPError{Cause: verbs.ErrClosed}
		close(q.done)
	}
	q.state = verbs.StateClosed
	setup := q.setup
	q.mu.Unlock()
	if setup != nil {
		<-setup // Dial/Accept notice q.done, tear down and return
	}
	q.mu.Lock()
	id, qp, reaper := q.id, q.qp, q.reaper
	q.mu.Unlock()
	if reaper != nil {
		<-reaper
	}
	if id != nil && qp != nil {
		if prev == verbs.StateRTS {
			C.rdma_disconnect(id.id)
		}
		C.gshim_qp_to_error(qp)
		q.awaitFlush()
		q.scq.removeQP(q)
		q.rcq.removeQP(q)
		q.flushRest()
		q.dev.async.removeQP(qp)
		C.rdma_destroy_qp(id.id)
		id.destroy()
	}
	q.mu.Lock()
	q.id, q.qp = nil, nil
	q.mu.Unlock()
	// Receives still waiting for a device QP complete flushed too.
	q.mu.Lock()
	pend, qerr := q.pending, q.err
	q.pending = nil
	q.mu.Unlock()
	for _, p := range pend {
		q.rcq.pushSoft(verbs.Completion{ID: p.id, QP: q, Opcode: verbs.OpcodeRecv, Status: verbs.StatusFlushed, Err: qerr})
	}
	for _, c := range []*compQueue{q.scq, q.rcq} {
		c.mu.Lock()
		c.nqp--
		c.mu.Unlock()
	}
	q.pd.mu.Lock()
	q.pd.nqp--
	q.pd.mu.Unlock()
	C.free(unsafe.Pointer(q.cs))
	C.free(unsafe.Pointer(q.cr))
	C.free(unsafe.Pointer(q.csge))
	C.free(unsafe.Pointer(q.cbad))
	q.cs, q.cr, q.csge, q.cbad = nil, nil, nil, nil
}

// awaitFlush lets the device flush what is outstanding on the QP (moved to
// the error state) into the CQs, for at most flushWait. The drained
// completions stay queued in the CQs for their owners.
func (q *queuePair) awaitFlush() {
	deadline := time.Now().Add(flushWait)
	for sleep := time.Millisecond; q.outstanding() > 0 && time.Now().Before(deadline); sleep = min(2*sleep, 50*time.Millisecond) {
		for _, c := range []*compQueue{q.scq, q.rcq} {
			c.mu.Lock()
			if !c.closed {
				c.drainLocked()
			}
			c.mu.Unlock()
			c.deliver()
		}
		if q.outstanding() > 0 {
			time.Sleep(sleep)
		}
	}
}

// flushRest completes, as flushed, every request the device did not.
func (q *queuePair) flushRest() {
	q.mu.Lock()
	var wcs []verbs.Completion
	var rwcs []verbs.Completion
	// The outstanding requests are the live slots: flush them in the
	// order they were posted.
	var live []*sendSlot
	for i := range q.sq {
		if s := &q.sq[i]; s.live {
			live = append(live, s)
		}
	}
	slices.SortFunc(live, func(a, b *sendSlot) int { return cmp.Compare(a.seq, b.seq) })
	for _, s := range live {
		wcs = append(wcs, verbs.Completion{ID: s.id, QP: q, Opcode: sendOpcode(s.op), Status: verbs.StatusFlushed, Err: q.err})
	}
	clear(q.sq)
	q.sqHead, q.sqOut = q.sqTail, 0
	for ; q.rqHead < q.rqTail; q.rqHead++ {
		rwcs = append(rwcs, verbs.Completion{ID: q.rq[q.rqHead%uint64(len(q.rq))], QP: q, Opcode: verbs.OpcodeRecv, Status: verbs.StatusFlushed, Err: q.err})
	}
	q.pending = nil
	q.mu.Unlock()
	for _, wc := range wcs {
		q.scq.pushSoft(wc)
	}
	for _, wc := range rwcs {
		q.rcq.pushSoft(wc)
	}
}
