package soft

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// lsge is a resolved local SGE.
type lsge struct {
	m   *memRegion
	off int
	n   int
}

type wqeState uint8

const (
	wqeQueued      wqeState = iota // posted, not yet transmitted
	wqeReadPending                 // Read Request sent, awaiting Read Response
	wqeDone                        // finished (status set), awaiting retirement
)

// sendWQE is one send-queue entry. sgl aliases qp.sgeStore.
type sendWQE struct {
	id     uint64
	op     verbs.SendOp
	flags  verbs.SendFlags
	sgl    []lsge
	length int
	rstag  uint32
	rto    uint64
	inv    uint32
	state  wqeState
	status verbs.Status
	err    error
	// Read progress (reader goroutine only while wqeReadPending).
	placed int
}

type recvWQE struct {
	id     uint64
	sgl    []lsge
	length int
}

// inboundRead is an accepted peer Read Request awaiting its Read Response.
type inboundRead struct {
	req iwarp.ReadRequest
	msn uint32
}

// handoff orders application memory accesses before a Post call with the
// provider's later accesses to that memory on behalf of the peer. Posting a
// work request is when an application hands memory to RDMA (it writes the
// buffer, then advertises it or posts a receive); the connection goroutines
// load handoff before touching registered memory, so the Go memory model
// (and the race detector) sees the hand-over even when the peer's access
// arrives through the network rather than through this QP's locks.
var handoff atomic.Uint64

// rtrORQ marks the ORQ slot of an RTR zero-length Read (no work request).
const rtrORQ = ^uint64(0)

// queuePair is the software provider's verbs.QP.
type queuePair struct {
	dev            *Device
	pd             *protDomain
	sendCQ, recvCQ *compQueue
	userCtx        any
	maxSendSGE     int
	maxRecvSGE     int

	mu    sync.Mutex
	cond  sync.Cond // the writer waits on it (L = &mu)
	state verbs.QPState
	err   error // *verbs.QPError once in StateError
	done  chan struct{}

	// Send queue: absolute counters; slot = counter % len(sq).
	sq                     []sendWQE
	sqHead, sqSent, sqTail uint64 // retired, transmitted/started, posted

	// Receive queue.
	rq             []recvWQE
	rqHead, rqTail uint64

	// Outbound reads in flight (sq counters or rtrORQ), bounded by ord.
	orq              []uint64
	orqHead, orqTail uint64

	// Inbound reads awaiting a response, bounded by ird.
	irq              []inboundRead
	irqHead, irqTail uint64

	// Connection (set by connect, read-only afterwards).
	conn      net.Conn
	crc       bool
	ird, ord  int
	maxFPDU   int
	responder bool
	rtrSend   RTRType // RTR frame the writer sends first (initiator, P2P)
	peerSpoke bool    // first FPDU received (guarded by mu)
	sentMsgs  uint64  // messages the writer has sent (guarded by mu)
	kickDue   bool    // SiwKick timer fired (guarded by mu)
	kickTimer *time.Timer
	// writerIdle: the writer is parked with nothing to do; txBusy: a
	// PostSend caller owns the transmit side (postInline). inlined and
	// resumed count messages PostSend wrote itself and those whose rest
	// it left to the writer (for tests). All guarded by mu.
	writerIdle, txBusy bool
	inlined, resumed   uint64
	// undelivered: a completion was pushed under mu to a CQ with a
	// handler; the writer delivers it at the top of its loop (guarded by
	// mu). See deliver.
	undelivered bool

	pendingTerm []byte      // Terminate frame the writer sends before closing
	failed      atomic.Bool // set with StateError; polled by the writer per FPDU
	live        atomic.Int32
	exited      chan struct{}
	closeOnce   sync.Once

	// Readiness-based I/O for peer accesses (nil RawConn: not available).
	rawConn     syscall.RawConn
	rawReadFn   func(uintptr) bool
	rawWriteFn  func(uintptr) bool
	rawTryFn    func(uintptr) bool
	rawFinishFn func(uintptr) bool

	w txState
	r rxState
}

var _ verbs.QP = (*queuePair)(nil)

func (pd *protDomain) CreateQP(cfg verbs.QPConfig) (verbs.QP, error) {
	scq, ok1 := cfg.SendCQ.(*compQueue)
	rcq, ok2 := cfg.RecvCQ.(*compQueue)
	if !ok1 || !ok2 {
		return nil, errors.New("soft: CreateQP: SendCQ and RecvCQ must be CQs of this provider")
	}
	if cfg.MaxSendWR <= 0 || cfg.MaxSendWR > 1<<16 {
		return nil, fmt.Errorf("soft: CreateQP: MaxSendWR %d out of range [1, 65536]", cfg.MaxSendWR)
	}
	if cfg.MaxRecvWR <= 0 || cfg.MaxRecvWR > 1<<16 {
		return nil, fmt.Errorf("soft: CreateQP: MaxRecvWR %d out of range [1, 65536]", cfg.MaxRecvWR)
	}
	if cfg.MaxSendSGE == 0 {
		cfg.MaxSendSGE = 1
	}
	if cfg.MaxRecvSGE == 0 {
		cfg.MaxRecvSGE = 1
	}
	if cfg.MaxSendSGE < 0 || cfg.MaxSendSGE > 64 || cfg.MaxRecvSGE < 0 || cfg.MaxRecvSGE > 64 {
		return nil, fmt.Errorf("soft: CreateQP: MaxSendSGE %d / MaxRecvSGE %d out of range [1, 64]", cfg.MaxSendSGE, cfg.MaxRecvSGE)
	}
	pd.mu.Lock()
	if pd.closed {
		pd.mu.Unlock()
		return nil, fmt.Errorf("soft: CreateQP: %w", verbs.ErrClosed)
	}
	pd.nqp++
	pd.mu.Unlock()

	q := &queuePair{
		dev: pd.dev, pd: pd, sendCQ: scq, recvCQ: rcq, userCtx: cfg.Context,
		maxSendSGE: cfg.MaxSendSGE, maxRecvSGE: cfg.MaxRecvSGE,
		state: verbs.StateInit,
		done:  make(chan struct{}),
		sq:    make([]sendWQE, cfg.MaxSendWR),
		rq:    make([]recvWQE, cfg.MaxRecvWR),
	}
	q.cond.L = &q.mu
	ss := make([]lsge, cfg.MaxSendWR*cfg.MaxSendSGE)
	for i := range q.sq {
		q.sq[i].sgl = ss[i*cfg.MaxSendSGE : i*cfg.MaxSendSGE : (i+1)*cfg.MaxSendSGE]
	}
	rs := make([]lsge, cfg.MaxRecvWR*cfg.MaxRecvSGE)
	for i := range q.rq {
		q.rq[i].sgl = rs[i*cfg.MaxRecvSGE : i*cfg.MaxRecvSGE : (i+1)*cfg.MaxRecvSGE]
	}
	return q, nil
}

func (q *queuePair) Context() any          { return q.userCtx }
func (q *queuePair) Done() <-chan struct{} { return q.done }
func (q *queuePair) State() verbs.QPState  { q.mu.Lock(); defer q.mu.Unlock(); return q.state }
func (q *queuePair) Err() error            { q.mu.Lock(); defer q.mu.Unlock(); return q.err }
func (q *queuePair) String() string        { return fmt.Sprintf("soft QP %p", q) }

// resolveSGL validates sgl against the QP's PD and appends the resolved
// entries to dst. need is the access local processing needs.
func (q *queuePair) resolveSGL(dst []lsge, sgl []verbs.SGE, need verbs.Access, what string) ([]lsge, int, error) {
	total := 0
	for i := range sgl {
		s := &sgl[i]
		m, ok := s.MR.(*memRegion)
		if !ok || m == nil {
			return dst, 0, fmt.Errorf("soft: %s: SGE %d: %w: MR is nil or not from this provider", what, i, verbs.ErrInvalidWR)
		}
		if m.pd != q.pd {
			return dst, 0, fmt.Errorf("soft: %s: SGE %d: %w: MR belongs to another protection domain", what, i, verbs.ErrInvalidWR)
		}
		if s.Offset < 0 || s.Length < 0 || s.Offset > len(m.buf) || s.Length > len(m.buf)-s.Offset {
			return dst, 0, fmt.Errorf("soft: %s: SGE %d: %w: offset %d length %d outside MR of %d bytes", what, i, verbs.ErrInvalidWR, s.Offset, s.Length, len(m.buf))
		}
		m.mu.RLock()
		valid, acc := m.valid && !m.closed, m.access
		m.mu.RUnlock()
		if !valid {
			return dst, 0, fmt.Errorf("soft: %s: SGE %d: %w: MR is invalidated or deregistered", what, i, verbs.ErrInvalidWR)
		}
		if need != 0 && acc&need == 0 {
			return dst, 0, fmt.Errorf("soft: %s: SGE %d: %w: MR lacks %v access", what, i, verbs.ErrInvalidWR, need)
		}
		total += s.Length
		dst = append(dst, lsge{m: m, off: s.Offset, n: s.Length})
	}
	if total > 1<<31-1 {
		return dst, 0, fmt.Errorf("soft: %s: %w: total length %d exceeds 2 GiB", what, verbs.ErrInvalidWR, total)
	}
	return dst, total, nil
}

// PostSend queues a send work request, or a chain of them (wr.Next) as one
// batch.
func (q *queuePair) PostSend(wr *verbs.SendWR) error {
	if wr == nil {
		return fmt.Errorf("soft: PostSend: %w: nil work request", verbs.ErrInvalidWR)
	}
	n := 0
	for w := wr; w != nil; w = w.Next {
		if n == verbs.MaxChain {
			return fmt.Errorf("soft: PostSend: %w: chain longer than %d requests", verbs.ErrInvalidWR, verbs.MaxChain)
		}
		if err := q.checkSend(w); err != nil {
			return fmt.Errorf("soft: PostSend: request %d: %w", n, err)
		}
		n++
	}
	q.mu.Lock()
	err := q.postSendLocked(wr, n)
	q.unlockDeliver()
	return err
}

// checkSend validates what a send work request says about itself.
func (q *queuePair) checkSend(wr *verbs.SendWR) error {
	if len(wr.SGL) > q.maxSendSGE {
		return fmt.Errorf("%w: %d SGEs, MaxSendSGE is %d", verbs.ErrInvalidWR, len(wr.SGL), q.maxSendSGE)
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

// postSendLocked queues the chain wr of n requests (or transmits it, see
// postInline): all of them, back to back, or none. Caller holds mu.
func (q *queuePair) postSendLocked(wr *verbs.SendWR, n int) error {
	switch q.state {
	case verbs.StateClosed:
		return fmt.Errorf("soft: PostSend: %w", verbs.ErrClosed)
	case verbs.StateInit, verbs.StateConnecting:
		return fmt.Errorf("soft: PostSend: %w: QP is %v", verbs.ErrBadState, q.state)
	case verbs.StateError:
		for w := wr; w != nil; w = w.Next {
			q.pushLocked(q.sendCQ, &verbs.Completion{ID: w.ID, QP: q, Opcode: sendOpcode(w.Op), Status: verbs.StatusFlushed, Err: q.err})
		}
		return nil
	}
	if free := uint64(len(q.sq)) - (q.sqTail - q.sqHead); uint64(n) > free {
		return fmt.Errorf("soft: PostSend: %w (%d outstanding, %d requests posted)", verbs.ErrQueueFull, len(q.sq), n)
	}
	// Fill the free slots from sqTail on; sqTail moves past them only when
	// every request of the chain resolved, so a bad one posts none.
	var last *sendWQE
	i := 0
	for w := wr; w != nil; w, i = w.Next, i+1 {
		need := verbs.Access(0)
		if w.Op == verbs.OpRead {
			if q.ord == 0 {
				return fmt.Errorf("soft: PostSend: request %d: %w: RDMA Read on a connection with ORD 0", i, verbs.ErrInvalidWR)
			}
			need = verbs.AccessLocalWrite
		}
		last = &q.sq[(q.sqTail+uint64(i))%uint64(len(q.sq))]
		sgl, total, err := q.resolveSGL(last.sgl[:0], w.SGL, need, "PostSend")
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if w.Op == verbs.OpRead && uint64(total) > 1<<32-1 {
			return fmt.Errorf("soft: PostSend: request %d: %w: RDMA Read of %d bytes", i, verbs.ErrInvalidWR, total)
		}
		*last = sendWQE{id: w.ID, op: w.Op, flags: w.Flags, sgl: sgl, length: total,
			rstag: w.RemoteSTag, rto: w.RemoteTO, inv: w.InvalidateSTag}
	}
	q.sqTail += uint64(n)
	handoff.Add(1)
	if q.canInlineLocked(last.op, last.length) {
		q.postInline(last)
		return nil
	}
	q.cond.Signal()
	return nil
}

// PostRecv queues a receive buffer.
func (q *queuePair) PostRecv(wr *verbs.RecvWR) error {
	if wr == nil {
		return fmt.Errorf("soft: PostRecv: %w: nil work request", verbs.ErrInvalidWR)
	}
	if len(wr.SGL) > q.maxRecvSGE {
		return fmt.Errorf("soft: PostRecv: %w: %d SGEs, MaxRecvSGE is %d", verbs.ErrInvalidWR, len(wr.SGL), q.maxRecvSGE)
	}
	q.mu.Lock()
	err := q.postRecvLocked(wr)
	q.unlockDeliver()
	return err
}

// postRecvLocked queues wr. Caller holds mu.
func (q *queuePair) postRecvLocked(wr *verbs.RecvWR) error {
	switch q.state {
	case verbs.StateClosed:
		return fmt.Errorf("soft: PostRecv: %w", verbs.ErrClosed)
	case verbs.StateError:
		q.pushLocked(q.recvCQ, &verbs.Completion{ID: wr.ID, QP: q, Opcode: verbs.OpcodeRecv, Status: verbs.StatusFlushed, Err: q.err})
		return nil
	}
	if q.rqTail-q.rqHead == uint64(len(q.rq)) {
		return fmt.Errorf("soft: PostRecv: %w (%d outstanding)", verbs.ErrQueueFull, len(q.rq))
	}
	r := &q.rq[q.rqTail%uint64(len(q.rq))]
	sgl, total, err := q.resolveSGL(r.sgl[:0], wr.SGL, verbs.AccessLocalWrite, "PostRecv")
	if err != nil {
		return err
	}
	r.id, r.sgl, r.length = wr.ID, sgl, total
	q.rqTail++
	handoff.Add(1)
	return nil
}

func sendOpcode(op verbs.SendOp) verbs.Opcode {
	switch op {
	case verbs.OpWrite:
		return verbs.OpcodeWrite
	case verbs.OpRead:
		return verbs.OpcodeRead
	}
	return verbs.OpcodeSend
}

// retireLocked completes finished send WQEs in posting order. Caller holds mu.
func (q *queuePair) retireLocked() {
	n := uint64(len(q.sq))
	for q.sqHead < q.sqTail {
		w := &q.sq[q.sqHead%n]
		if w.state != wqeDone {
			return
		}
		if w.flags&verbs.Signaled != 0 || w.status != verbs.StatusSuccess {
			wc := verbs.Completion{ID: w.id, QP: q, Opcode: sendOpcode(w.op), Status: w.status, Err: w.err}
			if w.op == verbs.OpRead && w.status == verbs.StatusSuccess {
				wc.ByteLen = w.length
			}
			q.pushLocked(q.sendCQ, &wc)
		}
		q.sqHead++
	}
}

// fail moves the QP to StateError (once): it records cause, flushes every
// outstanding work request and wakes the writer, which sends term (if not
// nil) and closes the connection.
func (q *queuePair) fail(cause error, term []byte) {
	q.mu.Lock()
	q.failLocked(cause, term)
	q.unlockDeliver()
}

// pushLocked pushes wc to cq (one of the QP's CQs) and notes that it may
// need delivering to a handler. Caller holds mu.
func (q *queuePair) pushLocked(cq *compQueue, wc *verbs.Completion) {
	cq.push(wc)
	q.undelivered = true
}

// unlockDeliver releases mu and delivers what is staged (which makes the
// writer's own delivery unnecessary). Caller holds mu.
func (q *queuePair) unlockDeliver() {
	q.undelivered = false
	q.mu.Unlock()
	q.deliver()
}

// deliver hands the completions staged in the QP's CQs to their handlers
// (verbs.CompletionHandler). Every goroutine that pushes completions calls
// it once it has released every provider lock: PostSend, PostRecv, Close
// and fail after unlocking, the reader after each FPDU, the writer at the
// top of its loop (when undelivered is set).
func (q *queuePair) deliver() {
	q.sendCQ.deliver()
	if q.recvCQ != q.sendCQ {
		q.recvCQ.deliver()
	}
}

func (q *queuePair) failLocked(cause error, term []byte) {
	if q.state == verbs.StateError || q.state == verbs.StateClosed {
		return
	}
	q.state = verbs.StateError
	q.failed.Store(true)
	qerr := &verbs.QPError{Cause: cause}
	if cause != verbs.ErrClosed {
		var remote net.Addr
		if q.conn != nil {
			remote = q.conn.RemoteAddr()
		}
		q.dev.cfg.Logger.Warn("queue pair failed", "remote", remote, "error", cause)
	}
	q.err = qerr
	q.pendingTerm = term
	close(q.done)
	// Flush the send queue: everything not yet done, in order.
	n := uint64(len(q.sq))
	for i := q.sqHead; i < q.sqTail; i++ {
		w := &q.sq[i%n]
		if w.state != wqeDone {
			w.state, w.status, w.err = wqeDone, verbs.StatusFlushed, qerr
		}
	}
	q.retireLocked()
	q.sqSent = q.sqTail
	q.orqHead, q.orqTail = 0, 0
	q.irqHead, q.irqTail = 0, 0
	// Flush the receive queue.
	m := uint64(len(q.rq))
	for ; q.rqHead < q.rqTail; q.rqHead++ {
		r := &q.rq[q.rqHead%m]
		q.pushLocked(q.recvCQ, &verbs.Completion{ID: r.id, QP: q, Opcode: verbs.OpcodeRecv, Status: verbs.StatusFlushed, Err: qerr})
	}
	q.cond.Broadcast()
}

// Close disconnects and destroys the QP.
func (q *queuePair) Close() error {
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.failLocked(verbs.ErrClosed, nil)
		conn, exited := q.conn, q.exited
		q.unlockDeliver()
		if conn != nil {
			conn.Close()
		}
		if exited != nil {
			<-exited
		}
		q.mu.Lock()
		q.state = verbs.StateClosed
		q.mu.Unlock()
		q.pd.mu.Lock()
		q.pd.nqp--
		q.pd.mu.Unlock()
	})
	return nil
}

// start launches the connection goroutines once the MPA exchange (and, for
// a P2P responder, nothing else) is done. Caller must not hold mu.
// It fails if the QP was closed while the connection was being set up.
func (q *queuePair) start(conn net.Conn, crc bool, ird, ord, maxFPDU int, responder bool, rtr RTRType) error {
	q.mu.Lock()
	if q.state != verbs.StateConnecting {
		st := q.state
		q.mu.Unlock()
		return fmt.Errorf("%w: QP became %v during connection setup", verbs.ErrClosed, st)
	}
	q.conn, q.crc, q.ird, q.ord, q.maxFPDU, q.responder, q.rtrSend = conn, crc, ird, ord, maxFPDU, responder, rtr
	q.orq = make([]uint64, max(ord, 1))
	q.irq = make([]inboundRead, max(ird, 1))
	q.exited = make(chan struct{})
	q.rawConn, q.rawReadFn, q.rawWriteFn = rawConnOf(conn), q.rawReadStep, q.rawWriteStep
	q.rawTryFn, q.rawFinishFn = q.rawTryStep, q.rawFinishStep
	q.state = verbs.StateRTS
	q.w.init(q)
	q.r.init(q)
	q.live.Store(2)
	q.mu.Unlock()
	go q.writer()
	go q.reader()
	return nil
}

// exitOne is called by each connection goroutine as it ends; the last one
// closes the socket.
func (q *queuePair) exitOne() {
	if q.live.Add(-1) == 0 {
		q.conn.Close()
		close(q.exited)
	}
}
