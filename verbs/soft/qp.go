package soft

import (
	"errors"
	"fmt"
	"io"
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

// sendWQE is one send-queue entry. sgl aliases the SGE storage allocated with
// its ring (see growSQLocked), or its own for an entry of sqOver.
type sendWQE struct {
	id     uint64
	op     verbs.SendOp
	flags  verbs.SendFlags
	sgl    []lsge
	length int
	rstag  uint32
	rto    uint64
	inv    uint32
	// sink is a Read's sink STag as its Read Request names it (claimLocked):
	// the one STag its Read Response may target.
	sink   uint32
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

	// Send queue: absolute counters; slot = counter % len(sq). The queue
	// holds sqDepth (MaxSendWR) work requests; its ring starts small and
	// grows (growSQLocked) as they pile up, so an idle QP holds little
	// memory. Entries in [sqHead, sqSent) may be referenced outside mu by
	// the writer, a PostSend writing inline or the reader (a pending RDMA
	// Read), so the ring moves only when that range is empty; requests
	// posted while it must grow but cannot yet wait, in order, in sqOver,
	// invisible to the writer until the ring grows (retireLocked). The
	// writer may also still look at entry sqSent-1 after it was retired (an
	// RDMA Read whose response came back before the writer's transmit
	// returned), so that entry's slot is not reused until sqSent moves on
	// (sqLowLocked): the ring holds up to sqDepth+1 entries.
	sq                     []sendWQE
	sqHead, sqSent, sqTail uint64 // retired, transmitted/started, posted
	sqDepth                int
	sqOver                 []sendWQE

	// Receive queue: absolute counters; slot = counter % len(rq). It holds
	// rqDepth (MaxRecvWR) receives; its ring starts small and doubles when a
	// PostRecv finds it full (growRQLocked). The reader only reads the entry
	// it is filling (rqHead), so the ring may move under it: the old ring is
	// never written again, and the reader finds rqHead in the new one for the
	// next message.
	rq             []recvWQE
	rqHead, rqTail uint64
	rqDepth        int

	// Outbound reads in flight (sq counters or rtrORQ), bounded by ord.
	orq              []uint64
	orqHead, orqTail uint64

	// Inbound reads awaiting a response, bounded by ird.
	irq              []inboundRead
	irqHead, irqTail uint64

	// Connection (set by connect, read-only afterwards but for maxFPDU).
	conn     net.Conn
	crc      bool
	ird, ord int
	maxFPDU  int
	// mssFPDU: maxFPDU follows the TCP MSS (Config.MaxFPDU unset): the
	// writer, alone, changes it under mu before large messages
	// (refreshMaxFPDULocked); mss is mssStep's result, mssFn mssStep as a
	// method value (no allocation).
	mssFPDU bool
	mss     int
	mssFn   func(uintptr)
	// txSeg: the TCP MSS FPDUs are aligned with (fpduPayload), read with
	// maxFPDU when it follows the MSS; 0 when it does not (Config.MaxFPDU)
	// or the MSS is not one to align with (alignSeg).
	txSeg     int
	responder bool
	rtrSend   RTRType // RTR frame the writer sends first (initiator, P2P)
	peerSpoke bool    // first FPDU received (guarded by mu)
	sentMsgs  uint64  // messages the writer has sent (guarded by mu)
	kickDue   bool    // SiwKick timer fired (guarded by mu)
	kickTimer *time.Timer
	// writerIdle: the writer is parked with nothing to do; txBusy: a
	// PostSend caller owns the transmit side (postInline). inlined and
	// resumed count messages PostSend wrote itself and those whose rest
	// it left to the writer, fused those of inlined that were fused posts
	// (postFusedLocked), for tests. All guarded by mu.
	writerIdle, txBusy      bool
	inlined, resumed, fused uint64
	// spinWakes counts the writer wake-ups postInline made only to keep a
	// thread spinning (for tests; guarded by mu).
	spinWakes uint64
	// undelivered: a completion was pushed under mu to a CQ with a
	// handler; the writer delivers it at the top of its loop (guarded by
	// mu). See deliver.
	undelivered bool
	// crowdEpoch: the last epoch the device's crowd counted this QP in
	// (guarded by mu).
	crowdEpoch int64

	pendingTerm []byte // Terminate frame the writer sends before closing
	// termSent is closed once the writer has written pendingTerm (or
	// failed to): Close waits for it, so that a consumer closing a QP as
	// soon as it failed does not cut its Terminate off (set with
	// pendingTerm, under mu; nil when there is none).
	termSent  chan struct{}
	failed    atomic.Bool // set with StateError; polled by the writer per FPDU
	live      atomic.Int32
	exited    chan struct{}
	closeOnce sync.Once

	// Readiness-based I/O for peer accesses (nil RawConn: not available).
	rawConn     syscall.RawConn
	rawReadFn   func(uintptr) bool
	rawWriteFn  func(uintptr) bool
	rawTryFn    func(uintptr) bool
	rawRecvFn   func(uintptr) bool
	rawFinishFn func(uintptr) bool

	// Who receives (direct.go): lead is one of leadNone..leadGone;
	// leadWaiter: a caller waits for the reader to hand over, on leadCh;
	// wantLead: the reader should hand over after its next delivery;
	// wantReader: a consumer asked for the reader to take over (Resume);
	// rxKick wakes a reader that handed over; unreceived: the device's
	// take-back sweep found nobody receiving (takeback.go); leadTimer
	// times a caller's wait for a hand-over (leadWaiter's holder only).
	lead       atomic.Int32
	leadWaiter atomic.Bool
	wantLead   atomic.Bool
	wantReader atomic.Bool
	leadCh     chan struct{}
	rxKick     chan struct{}
	unreceived atomic.Bool
	leadTimer  *time.Timer
	// leadMu orders moves of the socket's read deadline (a receiving
	// caller's, failLocked's) against the end of a caller's turn;
	// deadlineSet: the turn set its own (guarded by leadMu).
	leadMu      sync.Mutex
	deadlineSet bool
	// unconfirmed: the reader waits for the socket after a read that
	// came back short, unconfirmed (nonzero, a token; confirmwait.go);
	// unconfirmedSeen: the token the confirm sweep saw last (guarded by
	// the sweep's mu); poked: the sweep set the read deadline to wake the
	// reader (guarded by leadMu).
	unconfirmed     atomic.Uint64
	unconfirmedSeen uint64
	poked           bool

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
		state:   verbs.StateInit,
		done:    make(chan struct{}),
		sqDepth: cfg.MaxSendWR,
		rqDepth: cfg.MaxRecvWR,
	}
	q.cond.L = &q.mu
	q.sq = q.newSQRing(min(cfg.MaxSendWR, sqInitRing))
	q.rq = q.newRQRing(min(cfg.MaxRecvWR, sqInitRing))
	return q, nil
}

// sqInitRing is how many work requests a new QP's send and receive rings hold
// before they first grow.
const sqInitRing = 8

// newSQRing allocates a send-queue ring of n entries with their SGE storage.
func (q *queuePair) newSQRing(n int) []sendWQE {
	sq := make([]sendWQE, n)
	k := q.maxSendSGE
	ss := make([]lsge, n*k)
	for i := range sq {
		sq[i].sgl = ss[i*k : i*k : (i+1)*k]
	}
	return sq
}

// newRQRing allocates a receive-queue ring of n entries with their SGE storage.
func (q *queuePair) newRQRing(n int) []recvWQE {
	rq := make([]recvWQE, n)
	k := q.maxRecvSGE
	rs := make([]lsge, n*k)
	for i := range rq {
		rq[i].sgl = rs[i*k : i*k : (i+1)*k]
	}
	return rq
}

// growRQLocked moves the receive queue to a ring twice as large (at most
// rqDepth). Caller holds mu.
func (q *queuePair) growRQLocked() {
	rq := q.newRQRing(min(2*len(q.rq), q.rqDepth))
	old, on, nn := q.rq, uint64(len(q.rq)), uint64(len(rq))
	for i := q.rqHead; i < q.rqTail; i++ {
		d, o := &rq[i%nn], &old[i%on]
		sgl := append(d.sgl[:0], o.sgl...)
		*d = *o
		d.sgl = sgl
	}
	q.rq = rq
}

// growSQLocked moves the send queue to a ring that holds its entries, those
// waiting in sqOver and extra more (doubling at least, at most sqDepth), then
// appends sqOver's entries behind the others and wakes the writer for them.
// Caller holds mu; sqHead == sqSent, so nothing references the old ring.
func (q *queuePair) growSQLocked(extra int) {
	used := int(q.sqTail - q.sqLowLocked())
	need := used + len(q.sqOver) + extra
	if need > len(q.sq) {
		sq := q.newSQRing(min(max(2*len(q.sq), need), q.sqDepth+1))
		old, on, nn := q.sq, uint64(len(q.sq)), uint64(len(sq))
		for i := q.sqHead; i < q.sqTail; i++ {
			copyWQE(&sq[i%nn], &old[i%on])
		}
		q.sq = sq
	}
	if len(q.sqOver) == 0 {
		return
	}
	n := uint64(len(q.sq))
	for i := range q.sqOver {
		o := &q.sqOver[i]
		copyWQE(&q.sq[q.sqTail%n], o)
		q.sqTail++
		clear(o.sgl[:cap(o.sgl)])
		*o = sendWQE{sgl: o.sgl[:0]} // keeps its SGE storage for the next time
	}
	q.sqOver = q.sqOver[:0]
	q.cond.Signal()
}

// sqLowLocked returns the oldest send-queue entry whose slot may still be
// referenced: sqHead, or the retired entry sqSent-1 the writer may still be
// looking at (see sq). Caller holds mu.
func (q *queuePair) sqLowLocked() uint64 {
	if q.sqHead == q.sqSent && q.sqSent > 0 {
		return q.sqSent - 1
	}
	return q.sqHead
}

// copyWQE copies src to dst, the SGEs into dst's own storage.
func copyWQE(dst, src *sendWQE) {
	sgl := append(dst.sgl[:0], src.sgl...)
	*dst = *src
	dst.sgl = sgl
}

// overSlot appends an entry to sqOver (reusing the SGE storage of one used
// before) and returns it; the pointer is good until the next append.
func (q *queuePair) overSlot() *sendWQE {
	if len(q.sqOver) < cap(q.sqOver) {
		q.sqOver = q.sqOver[:len(q.sqOver)+1]
	} else {
		q.sqOver = append(q.sqOver, sendWQE{})
	}
	return &q.sqOver[len(q.sqOver)-1]
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
		acc, valid := m.localState()
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
	queued := int(q.sqTail-q.sqHead) + len(q.sqOver)
	if n > q.sqDepth-queued {
		return fmt.Errorf("soft: PostSend: %w (%d outstanding, %d requests posted)", verbs.ErrQueueFull, queued, n)
	}
	if fused, err := q.postFusedLocked(wr, n); fused {
		return err
	}
	over := len(q.sqOver) > 0 || int(q.sqTail-q.sqLowLocked())+n > len(q.sq)
	if over && len(q.sqOver) == 0 && q.sqHead == q.sqSent {
		q.growSQLocked(n)
		over = false
	}
	// Fill the free slots from sqTail on (or sqOver's, see sq); sqTail moves
	// past them only when every request of the chain resolved, so a bad one
	// posts none.
	var last *sendWQE
	i := 0
	mark := len(q.sqOver)
	for w := wr; w != nil; w, i = w.Next, i+1 {
		need := verbs.Access(0)
		if w.Op == verbs.OpRead {
			if q.ord == 0 {
				return fmt.Errorf("soft: PostSend: request %d: %w: RDMA Read on a connection with ORD 0", i, verbs.ErrInvalidWR)
			}
			need = verbs.AccessLocalWrite
		}
		if over {
			last = q.overSlot()
		} else {
			last = &q.sq[(q.sqTail+uint64(i))%uint64(len(q.sq))]
		}
		sgl, total, err := q.resolveSGL(last.sgl[:0], w.SGL, need, "PostSend")
		if err != nil {
			q.dropOverLocked(mark)
			return fmt.Errorf("request %d: %w", i, err)
		}
		if w.Op == verbs.OpRead && uint64(total) > 1<<32-1 {
			q.dropOverLocked(mark)
			return fmt.Errorf("soft: PostSend: request %d: %w: RDMA Read of %d bytes", i, verbs.ErrInvalidWR, total)
		}
		*last = sendWQE{id: w.ID, op: w.Op, flags: w.Flags, sgl: sgl, length: total,
			rstag: w.RemoteSTag, rto: w.RemoteTO, inv: w.InvalidateSTag}
	}
	handOff()
	if over {
		return nil // the writer gets them when the ring has grown
	}
	q.sqTail += uint64(n)
	if q.canInlineLocked(last.op, last.length) {
		q.postInline(last)
		return nil
	}
	q.cond.Signal()
	return nil
}

// dropOverLocked removes the entries of sqOver from index mark on (a chain
// that failed to post). Caller holds mu.
func (q *queuePair) dropOverLocked(mark int) {
	for i := mark; i < len(q.sqOver); i++ {
		o := &q.sqOver[i]
		clear(o.sgl[:cap(o.sgl)])
		*o = sendWQE{sgl: o.sgl[:0]}
	}
	q.sqOver = q.sqOver[:mark]
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
		if len(q.rq) == q.rqDepth {
			return fmt.Errorf("soft: PostRecv: %w (%d outstanding)", verbs.ErrQueueFull, len(q.rq))
		}
		q.growRQLocked()
	}
	r := &q.rq[q.rqTail%uint64(len(q.rq))]
	sgl, total, err := q.resolveSGL(r.sgl[:0], wr.SGL, verbs.AccessLocalWrite, "PostRecv")
	if err != nil {
		return err
	}
	r.id, r.sgl, r.length = wr.ID, sgl, total
	q.rqTail++
	// No handOff here: the reader takes this entry under mu, which orders
	// the application's writes before PostRecv with its placement, and a
	// global counter bumped by every receive of every connection costs
	// them all a shared cache line.
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

// retireLocked completes finished send WQEs in posting order; once none is in
// flight, requests waiting in sqOver move to a grown ring. Caller holds mu.
func (q *queuePair) retireLocked() {
	n := uint64(len(q.sq))
	for q.sqHead < q.sqTail {
		w := &q.sq[q.sqHead%n]
		if w.state != wqeDone {
			break
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
	if len(q.sqOver) > 0 && q.sqHead == q.sqSent && q.state == verbs.StateRTS {
		q.growSQLocked(0)
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
	q.dev.terms.noteFailure(cause, term)
	qerr := &verbs.QPError{Cause: cause}
	if cause != verbs.ErrClosed {
		var remote net.Addr
		if q.conn != nil {
			remote = q.conn.RemoteAddr()
		}
		if peerClosed(cause) { // a normal disconnect, not a fault
			q.dev.cfg.Logger.Debug("queue pair closed by the peer", "remote", remote, "error", cause)
		} else {
			q.dev.cfg.Logger.Warn("queue pair failed", "remote", remote, "error", cause)
		}
	}
	q.err = qerr
	q.pendingTerm = term
	if term != nil {
		q.termSent = make(chan struct{})
	}
	close(q.done)
	if q.rawConn != nil {
		// A caller receiving directly may be waiting for the socket, which
		// stays open after a Terminate until the peer closes it: wake the
		// caller (the reader, which takes over from it, sets its own
		// deadline for draining).
		q.wakeCaller()
	}
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
	for i := range q.sqOver {
		o := &q.sqOver[i]
		q.pushLocked(q.sendCQ, &verbs.Completion{ID: o.id, QP: q, Opcode: sendOpcode(o.op), Status: verbs.StatusFlushed, Err: qerr})
	}
	q.dropOverLocked(0)
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

// peerClosed reports whether cause is the peer ending the connection between FPDUs
// (EOF, a reset, a broken pipe): how a peer that is done disconnects.
func peerClosed(cause error) bool {
	return errors.Is(cause, io.EOF) || errors.Is(cause, syscall.ECONNRESET) || errors.Is(cause, syscall.EPIPE)
}

// Close disconnects and destroys the QP.
func (q *queuePair) Close() error {
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.failLocked(verbs.ErrClosed, nil)
		conn, exited, termSent := q.conn, q.exited, q.termSent
		q.unlockDeliver()
		if termSent != nil && exited != nil {
			// A Terminate is on its way (the QP failed on a protocol
			// violation): let the writer put it on the wire first. Its
			// write deadline bounds the wait.
			t := time.NewTimer(termWriteTimeout + time.Second)
			select {
			case <-termSent:
			case <-t.C:
			}
			t.Stop()
		}
		if conn != nil {
			closeConn(conn)
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
	q.rawTryFn, q.rawFinishFn, q.rawRecvFn = q.rawTryStep, q.rawFinishStep, q.rawRecvStep
	q.mssFPDU, q.mssFn = q.dev.cfg.MaxFPDU == 0, q.mssStep
	if q.mssFPDU {
		q.txSeg = alignSeg(tcpMSS(conn))
	}
	q.state = verbs.StateRTS
	q.r.init(q)
	q.r.shortWait = q.rawConn != nil
	q.rxKick, q.leadCh = make(chan struct{}, 1), make(chan struct{}, 1)
	q.lead.Store(leadReader)
	q.live.Store(2)
	q.mu.Unlock()
	go q.writer()
	go q.reader()
	return nil
}

// closeConn closes the QP's socket, its read side first. Shutting the read
// side down wakes a reader blocked in read(2) on a socket in blocking mode
// (served through the net.Conn, see rawConnOf), which closing the descriptor
// does not; and once one goroutine has begun to close the socket (Close, or
// the writer when the QP leaves RTS), the other can no longer shut it down,
// so each does so before it closes.
func closeConn(c net.Conn) {
	if cr, ok := c.(interface{ CloseRead() error }); ok {
		cr.CloseRead()
	}
	c.Close()
}

// exitOne is called by each connection goroutine as it ends; the last one
// closes the socket.
func (q *queuePair) exitOne() {
	if q.live.Add(-1) == 0 {
		q.conn.Close()
		close(q.exited)
	}
}
