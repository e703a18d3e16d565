package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// An endpoint is one RPC-over-RDMA connection's verbs resources, shared by the client
// and server transports (Linux verbs.c / svc_rdma_transport.c): a queue pair, one
// completion queue for both of its queues, and two pools of registered buffers that are
// registered once and reused for every message:
//
//   - receive buffers (inline receive size each) that stay posted on the receive queue;
//   - send buffers (inline send size each) for transport headers and inline messages.
//
// Both pools start small and grow in registered slabs up to their configured maximum, so
// that an idle connection holds little memory: send buffers when every registered one is
// in use (getSendBuf), receive buffers when the transport asks (growRecv: the server
// when a client's calls use most of the credits its posted receives allow).
//
// The completion queue delivers inline (verbs.WithHandler): the provider calls dispatch
// from its completion context, which routes each completion by its work request ID: a
// receive goes straight to the transport's onRecv handler; a send buffer's completion
// returns the buffer to its pool; RDMA Read/Write and waited-for Sends complete a waiter.
// No goroutine stands between the provider and the transport. Every send-queue work
// request is signalled, so the endpoint always knows how many are outstanding, never
// posts more than the send queue holds, and knows when a failed queue pair has flushed
// all of them; one idle goroutine (watch) waits for the queue pair to fail or close and
// then for those flushed completions, and only then reports the endpoint stopped, so
// that no memory is released while the peer or the provider may still touch it.
type endpoint struct {
	pd verbs.PD
	qp verbs.QP
	cq verbs.CQ
	// direct is qp as a verbs.DirectProcessor, nil when the provider has none.
	direct verbs.DirectProcessor
	// grants, on a server connection, takes the credit grants its replies carry and
	// learns when they are sent (takeGrant); nil on a client.
	grants grantTracker
	info   *verbs.ConnInfo
	peer   ConnPrivate

	// Buffer i of a pool lives at recv[i] / send[i] (its slab's MR and offset), set
	// once when its slab is registered, before index i is first used; the slots are
	// allocated with their slab, so an idle connection holds only the pointers.
	recvSize int
	recv     []*recvSlot // len: the pool's maximum; nil beyond nRecv

	sendSize int
	sendFree sendFreeList
	send     []*sendSlot // len: the pool's maximum; nil beyond nSend

	bufMu sync.Mutex // serialises pool growth
	nRecv int        // receive buffers registered (and posted once)
	nSend int        // send buffers registered
	slabs []verbs.MR // every registered slab of both pools

	sq      sqSlots    // the free send-queue slots
	chainMu sync.Mutex // serialises takers of several slots (acquireSQN)
	// chainHook, when set (by tests, before the connection carries traffic), sees
	// every chain postChain is about to post: its length and whether it ends with a
	// Send.
	chainHook func(k int, send bool)

	// onRecv is the transport's receive handler, set by start. Receives that
	// complete before start (a client may send as soon as the connection is up) wait
	// in early until start hands them over.
	onRecv  atomic.Pointer[recvHandler]
	startMu sync.Mutex
	early   []verbs.Completion

	wmu     sync.Mutex
	waiters []*waiter
	freeW   []*waiter

	posted    atomic.Int64  // work requests posted and not completed
	sqOut     atomic.Int64  // of which on the send queue
	sqDone    atomic.Uint64 // send-queue completions so far (progress, for the stall watch)
	readDone  atomic.Uint64 // of which RDMA Reads
	flushing  atomic.Bool   // the queue pair is done: stop when posted reaches 0
	stopped   chan struct{} // closed when no completion can arrive any more
	stopOnce  sync.Once
	closing   chan struct{} // closed by close
	closeMu   sync.Once
	lastErr   atomic.Pointer[error]
	watchOnce sync.Once
}

// recvHandler is the transport's receive handler: receive buffer idx holds n bytes. It
// runs in the provider's completion context (see verbs.CompletionHandler): it must not
// block or close the queue pair itself; it may post.
type recvHandler func(idx, n int, wc *verbs.Completion)

// Work request ID layout: kind in the top 8 bits, then a 24-bit index a; in the low 32
// bits, how many unsignalled requests before this one its completion retires (8 bits,
// chainID; a chain is at most verbs.MaxChain long) and a 24-bit index b (buffer and
// waiter indexes stay far below 2^24: there are at most a send queue's worth of each).
const (
	kindRecv       = 1
	kindSend       = 2 // a send buffer: a = buffer index, b = waiter index + 1 (0: none)
	kindWaiter     = 3 // b = waiter index + 1
	kindUnsignaled = 4 // b = waiter index + 1; completes only when it fails or is flushed
)

func wrID(kind, a, b int) uint64 { return uint64(kind)<<56 | uint64(a)<<32 | uint64(uint32(b)) }

// chainID marks id as the signalled end of a chain whose n requests before it are
// unsignalled: its completion retires them too (see postChain).
func chainID(id uint64, n int) uint64 { return id | uint64(n)<<24 }

// splitID returns the parts of a work request ID.
func splitID(id uint64) (kind, a, b, retired int) {
	return int(id >> 56), int(id >> 32 & 0xffffff), int(id & 0xffffff), int(id >> 24 & 0xff)
}

// endpointConfig sizes an endpoint. nrecv and nsend are the pools' maximums; initRecv
// receive buffers (at least 1, at most nrecv) are registered and posted at creation,
// and send buffers are registered on first use.
type endpointConfig struct {
	recvSize, nrecv int
	initRecv        int
	sendSize, nsend int
	sqDepth         int // send queue depth: sends + reads + writes in flight
	maxSendSGE      int
}

// newEndpoint creates the CQ, QP and registered pools and posts every receive buffer, so
// the endpoint is ready to connect (receives must be posted before the peer can send).
func newEndpoint(pd verbs.PD, dev verbs.Device, cfg endpointConfig) (*endpoint, error) {
	e := &endpoint{
		recvSize: cfg.recvSize,
		sendSize: cfg.sendSize,
		stopped:  make(chan struct{}),
		closing:  make(chan struct{}),
	}
	var err error
	cqDepth := cfg.nrecv + cfg.sqDepth + 16
	if e.cq, err = dev.CreateCQ(cqDepth, verbs.WithHandler(e.dispatch)); err != nil {
		return nil, fmt.Errorf("rpcrdma: create CQ of depth %d: %w", cqDepth, err)
	}
	e.qp, err = pd.CreateQP(verbs.QPConfig{
		SendCQ: e.cq, RecvCQ: e.cq,
		MaxSendWR: cfg.sqDepth, MaxRecvWR: cfg.nrecv,
		MaxSendSGE: max(cfg.maxSendSGE, 2), MaxRecvSGE: 1,
	})
	if err != nil {
		e.cq.Close()
		return nil, fmt.Errorf("rpcrdma: create QP: %w", err)
	}
	e.pd = pd
	e.direct, _ = e.qp.(verbs.DirectProcessor)
	e.sq.init(cfg.sqDepth)
	e.sendFree.init(cfg.nsend)
	e.send = make([]*sendSlot, cfg.nsend)
	e.recv = make([]*recvSlot, cfg.nrecv)
	if _, err := e.growRecv(min(max(cfg.initRecv, 1), cfg.nrecv)); err != nil {
		e.destroy()
		return nil, err
	}
	return e, nil
}

// registerSlab registers n buffers of size bytes as one memory region.
func (e *endpoint) registerSlab(n, size int, access verbs.Access) (verbs.MR, error) {
	mr, err := e.pd.RegMR(make([]byte, n*size), access)
	if err != nil {
		return nil, err
	}
	e.slabs = append(e.slabs, mr)
	return mr, nil
}

// growRecv registers and posts receive buffers until there are total (never beyond
// the pool's maximum). It returns the number of receive buffers now registered, all
// posted when err is nil.
func (e *endpoint) growRecv(total int) (int, error) {
	e.bufMu.Lock()
	first := e.nRecv
	n := min(total, len(e.recv)) - first
	if n <= 0 {
		e.bufMu.Unlock()
		return first, nil
	}
	mr, err := e.registerSlab(n, e.recvSize, verbs.AccessLocalWrite)
	if err != nil {
		e.bufMu.Unlock()
		return first, fmt.Errorf("rpcrdma: register %d receive buffers: %w", n, err)
	}
	slots, slab := make([]recvSlot, n), mr.Buf()
	for j := range slots {
		i, sl := first+j, &slots[j]
		sl.sge[0] = verbs.SGE{MR: mr, Offset: j * e.recvSize, Length: e.recvSize}
		// Capacity ends with the buffer: nothing appended to it reaches the next.
		sl.buf = slab[j*e.recvSize : (j+1)*e.recvSize : (j+1)*e.recvSize]
		sl.wr = verbs.RecvWR{ID: wrID(kindRecv, i, 0), SGL: sl.sge[:]}
		e.recv[i] = sl
	}
	e.nRecv += n
	e.bufMu.Unlock()
	// Posted without bufMu held: a post may run the completion handler (see
	// verbs.CompletionHandler), which may grow the pools itself.
	for j := 0; j < n; j++ {
		if err := e.postRecv(first + j); err != nil {
			return first + j, err
		}
	}
	return first + n, nil
}

// growSend registers more send buffers (as many as are registered already, at least
// minSendSlab, never beyond the pool's maximum) and frees them. It reports whether it
// added any.
func (e *endpoint) growSend() bool {
	e.bufMu.Lock()
	defer e.bufMu.Unlock()
	n := min(max(e.nSend, minSendSlab), len(e.send)-e.nSend)
	if n <= 0 {
		return false
	}
	mr, err := e.registerSlab(n, e.sendSize, 0)
	if err != nil {
		return false // wait for a buffer in use instead
	}
	slots, slab := make([]sendSlot, n), mr.Buf()
	for j := range slots {
		slots[j].base = verbs.SGE{MR: mr, Offset: j * e.sendSize}
		// Capacity ends with the buffer: a message encoded past its end (append
		// reallocates) can never write into the next one, a Send of another reply.
		slots[j].buf = slab[j*e.sendSize : (j+1)*e.sendSize : (j+1)*e.sendSize]
		e.send[e.nSend] = &slots[j]
		e.sendFree.put(e.nSend)
		e.nSend++
	}
	return true
}

// minSendSlab is the fewest send buffers registered at once.
const minSendSlab = 1

// recvSlot is one receive buffer and the work request that posts it. sge's Length is
// the buffer size while posted, the received length until the message is taken.
type recvSlot struct {
	wr  verbs.RecvWR
	sge [1]verbs.SGE
	buf []byte // the buffer, sliced from the slab once (not through MR.Buf per use)
}

// sendSlot is one send buffer and the work request that sends it.
type sendSlot struct {
	base  verbs.SGE    // the buffer: its slab's MR and offset
	sge   [1]verbs.SGE // base with the length being sent
	wr    verbs.SendWR
	buf   []byte // the buffer, sliced from the slab once (not through MR.Buf per use)
	grant uint32 // the credit grant the message carries (takeGrant), 0: none
}

// start hands receives to onRecv from now on (first those that completed before) and
// starts watching for the end of the connection, once it is established.
func (e *endpoint) start(info *verbs.ConnInfo, peer ConnPrivate, onRecv recvHandler) {
	e.info, e.peer = info, peer
	e.startMu.Lock()
	e.onRecv.Store(&onRecv)
	early := e.early
	e.early = nil
	e.startMu.Unlock()
	for i := range early {
		wc := &early[i]
		_, idx, _, _ := splitID(wc.ID)
		onRecv(idx, wc.ByteLen, wc)
	}
	e.watchOnce.Do(func() { go e.watch() })
}

// recvBuf returns receive buffer idx.
func (e *endpoint) recvBuf(idx int) []byte { return e.recv[idx].buf }

// recvLen returns the length recorded for receive buffer idx (setRecvLen).
func (e *endpoint) recvLen(idx int) int { return e.recv[idx].sge[0].Length }

// setRecvLen records the length of the message received in buffer idx until it is
// taken; repost restores the buffer size.
func (e *endpoint) setRecvLen(idx, n int) { e.recv[idx].sge[0].Length = n }

// sendBuf returns send buffer idx.
func (e *endpoint) sendBuf(idx int) []byte { return e.send[idx].buf }

// postRecv (re)posts receive buffer idx.
func (e *endpoint) postRecv(idx int) error {
	e.posted.Add(1)
	if err := e.qp.PostRecv(&e.recv[idx].wr); err != nil {
		e.posted.Add(-1)
		return fmt.Errorf("rpcrdma: post receive: %w", err)
	}
	return nil
}

// errEndpointClosed is returned by operations on an endpoint whose connection is gone.
var errEndpointClosed = errors.New("rpcrdma: connection closed")

// err returns why the endpoint stopped: the QP's error or errEndpointClosed.
func (e *endpoint) err() error {
	if p := e.lastErr.Load(); p != nil {
		return *p
	}
	if err := e.qp.Err(); err != nil {
		return err
	}
	return errEndpointClosed
}

// getSendBuf takes a free send buffer, registering more when every one is in use and
// the pool may grow, or else waiting for one (sends complete quickly).
func (e *endpoint) getSendBuf(ctx context.Context) (int, []byte, error) {
	for {
		if i, ok := e.sendFree.tryGet(); ok {
			return i, e.sendBuf(i), nil
		}
		if !e.growSend() {
			break
		}
	}
	i, err := e.sendFree.get(ctx, e.qp.Done(), e.closing)
	switch {
	case err == errSendFreeStopped:
		return 0, nil, e.err()
	case err != nil:
		return 0, nil, err
	}
	return i, e.sendBuf(i), nil
}

// putSendBuf returns an unused send buffer. A grant taken for it (takeGrant) was
// never sent.
func (e *endpoint) putSendBuf(i int) {
	if sl := e.send[i]; sl.grant != 0 {
		e.grants.Dropped(sl.grant)
		sl.grant = 0
	}
	e.sendFree.put(i)
}

// grantTracker learns what became of the credit grants the messages in send buffers
// carry (credits.Conn on a server connection): Sent from the Send's completion, in the
// order the peer receives them, or Dropped when the buffer returns unsent.
type grantTracker interface {
	Grant() uint32
	Sent(g uint32)
	Dropped(g uint32)
}

// takeGrant takes a credit grant from e.grants for the message being built in send
// buffer i and returns it; the buffer reports it Sent or Dropped.
func (e *endpoint) takeGrant(i int) uint32 {
	g := e.grants.Grant()
	e.send[i].grant = g
	return g
}

// acquireSQ takes one send-queue slot.
func (e *endpoint) acquireSQ(ctx context.Context) error {
	if err := e.sq.take(ctx, e.stopped); err != nil {
		if err == errSQStopped {
			return e.err()
		}
		return err
	}
	return nil
}

// postSendBuf sends n bytes of send buffer idx with op (OpSend or OpSendInv invalidating
// inv). The buffer returns to the pool when the Send completes; if w is not nil, w is
// completed too (the caller has counted it with w.add).
func (e *endpoint) postSendBuf(ctx context.Context, idx, n int, op verbs.SendOp, inv uint32, w *waiter) error {
	if err := e.acquireSQ(ctx); err != nil {
		e.putSendBuf(idx)
		return err
	}
	return e.postSendBufHeld(idx, n, op, inv, w)
}

// postSendBufHeld is postSendBuf for a caller that holds a send-queue slot already; it
// never blocks.
func (e *endpoint) postSendBufHeld(idx, n int, op verbs.SendOp, inv uint32, w *waiter) error {
	if err := e.post(e.sendBufWR(idx, n, op, inv, w)); err != nil {
		e.putSendBuf(idx)
		return err
	}
	return nil
}

// sendBufWR fills send buffer idx's work request: n bytes with op (OpSend or OpSendInv
// invalidating inv), signalled, completing w too when w is not nil.
func (e *endpoint) sendBufWR(idx, n int, op verbs.SendOp, inv uint32, w *waiter) *verbs.SendWR {
	wb := 0
	if w != nil {
		wb = w.idx + 1
	}
	sl := e.send[idx]
	sl.sge[0] = sl.base
	sl.sge[0].Length = n
	sl.wr = verbs.SendWR{ID: wrID(kindSend, idx, wb), Op: op, Flags: verbs.Signaled,
		SGL: sl.sge[:], InvalidateSTag: inv}
	return &sl.wr
}

// postWR posts an RDMA Read or Write (or a Send of caller memory) that completes w.
func (e *endpoint) postWR(ctx context.Context, wr *verbs.SendWR, w *waiter) error {
	if err := e.acquireSQ(ctx); err != nil {
		return err
	}
	wr.ID = wrID(kindWaiter, 0, w.idx+1)
	wr.Flags |= verbs.Signaled
	w.add(1)
	if err := e.post(wr); err != nil {
		w.complete(nil)
		return err
	}
	return nil
}

// postChain posts wrs (RDMA Writes or Reads) and then, when idx >= 0, n bytes of send
// buffer idx with op (OpSend or OpSendInv invalidating inv), as one chain: one PostSend,
// so the provider can put them on the wire together, the Send behind the data it
// announces.
//
// Only the chain's last request is signalled, as Linux svcrdma signals only the last of
// a chunk's Writes or Reads. A chain is Writes (and the Send behind them) or Reads alone
// (never a Send behind a Read, which may overtake it on iWARP), and those complete in
// posting order on every provider: Writes and Sends as they are transmitted, Reads as
// their responses return. So the last completion retires the others (their send-queue
// slots, their share of w); one that fails or is flushed completes anyway, recording its
// error on w first. The chain completes w once (counted here); a lone Send may have no
// waiter (w nil: nobody waits for it, its buffer returns to the pool on completion).
//
// The caller already holds held of the send-queue slots the chain needs (a
// reservation), and postChain takes the rest; with all of them held it never blocks. On
// failure nothing was posted, the send buffer is back in the pool and the held slots are
// given back. The chain must not be longer than maxChain().
func (e *endpoint) postChain(ctx context.Context, wrs []rdmaWR, idx, n int, op verbs.SendOp, inv uint32, held int, w *waiter) error {
	k := len(wrs)
	var send *verbs.SendWR
	if idx >= 0 {
		k++
		send = e.sendBufWR(idx, n, op, inv, w)
	}
	if k == 0 {
		return nil
	}
	if k > held {
		if err := e.acquireSQN(ctx, k-held); err != nil {
			e.sq.give(held)
			if idx >= 0 {
				e.putSendBuf(idx)
			}
			return err
		}
	}
	for i := range wrs {
		wr := &wrs[i].wr
		wr.ID = wrID(kindUnsignaled, 0, w.idx+1)
		wr.Flags &^= verbs.Signaled
		wr.SGL = wrs[i].sge[:]
		if i+1 < len(wrs) {
			wr.Next = &wrs[i+1].wr
		} else {
			wr.Next = send
		}
	}
	first, last := send, send
	if len(wrs) > 0 {
		first = &wrs[0].wr
		if send == nil {
			last = &wrs[len(wrs)-1].wr
			last.ID = wrID(kindWaiter, 0, w.idx+1)
			last.Flags |= verbs.Signaled
		}
	}
	last.ID = chainID(last.ID, k-1)
	if h := e.chainHook; h != nil {
		h(k, idx >= 0)
	}
	if w != nil {
		w.add(1)
	}
	e.posted.Add(1)
	e.sqOut.Add(int64(k))
	if err := e.qp.PostSend(first); err != nil {
		e.posted.Add(-1)
		e.sqOut.Add(-int64(k))
		e.sq.give(k)
		if w != nil {
			w.add(-1)
		}
		if idx >= 0 {
			e.putSendBuf(idx)
		}
		return fmt.Errorf("rpcrdma: post %d work requests: %w", k, err)
	}
	return nil
}

// maxChain is the longest chain postChain takes: verbs.MaxChain, at most the send
// queue's depth.
func (e *endpoint) maxChain() int { return min(verbs.MaxChain, e.sq.depth) }

// acquireSQN takes k send-queue slots. Takers of several slots go one at a time, so
// that two of them never each hold part of what the other waits for.
func (e *endpoint) acquireSQN(ctx context.Context, k int) error {
	if k == 1 {
		return e.acquireSQ(ctx)
	}
	e.chainMu.Lock()
	defer e.chainMu.Unlock()
	for i := 0; i < k; i++ {
		if err := e.acquireSQ(ctx); err != nil {
			e.sq.give(i)
			return err
		}
	}
	return nil
}

// post posts wr, which holds a send-queue slot (acquireSQ) and is Signaled: its
// completion is counted in posted. If posting fails, the slot is given back.
func (e *endpoint) post(wr *verbs.SendWR) error {
	e.posted.Add(1)
	e.sqOut.Add(1)
	if err := e.qp.PostSend(wr); err != nil {
		e.posted.Add(-1)
		e.sqOut.Add(-1)
		e.sq.give(1)
		return fmt.Errorf("rpcrdma: post %v: %w", wr.Op, err)
	}
	return nil
}

// A waiter collects the completions of a group of work requests (the RDMA Reads of a
// chunk, the Writes and Send of a reply).
type waiter struct {
	e       *endpoint
	idx     int
	mu      sync.Mutex
	pending int
	err     error
	// waiting: wait is blocked on done, or was (guarded by mu). Only then does
	// complete send the token: a waiter whose requests all completed before wait
	// looked (a chain PostSend wrote and completed itself) costs no channel
	// operation.
	waiting bool
	done    chan struct{} // receives one token when pending drops to 0 while waiting
	// fn, when set (newWaiterFunc), is called instead, in the completion context,
	// with the first failure when pending drops to 0; the waiter is recycled first.
	fn func(err error)
}

func (w *waiter) add(n int) {
	w.mu.Lock()
	w.pending += n
	w.mu.Unlock()
}

// fail records the failure of an unsignalled request, which the completion of its
// chain's signalled end (still to come) counts.
func (w *waiter) fail(wc *verbs.Completion) {
	w.mu.Lock()
	if w.err == nil {
		w.err = completionError(wc)
	}
	w.mu.Unlock()
}

// complete records one completion (wc nil: a work request that was never posted). It
// never blocks: dispatch calls it in the completion context.
func (w *waiter) complete(wc *verbs.Completion) {
	w.mu.Lock()
	if wc != nil && wc.Status != verbs.StatusSuccess && w.err == nil {
		w.err = completionError(wc)
	}
	w.pending--
	if w.pending == 0 && w.fn != nil {
		fn, err := w.fn, w.err
		w.fn, w.err = nil, nil
		w.mu.Unlock()
		w.e.freeWaiter(w)
		fn(err)
		return
	}
	if w.pending == 0 && w.waiting {
		select {
		case w.done <- struct{}{}:
		default: // a token is already there; wait re-checks pending anyway
		}
	}
	w.mu.Unlock()
}

// completionError describes a failed completion.
func completionError(wc *verbs.Completion) error {
	if wc.Err != nil {
		return fmt.Errorf("rpcrdma: %v completion %v: %w", wc.Opcode, wc.Status, wc.Err)
	}
	return fmt.Errorf("rpcrdma: %v completion %v", wc.Opcode, wc.Status)
}

// newWaiter returns an idle waiter.
func (e *endpoint) newWaiter() *waiter {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if n := len(e.freeW); n > 0 {
		w := e.freeW[n-1]
		e.freeW = e.freeW[:n-1]
		return w
	}
	w := &waiter{e: e, idx: len(e.waiters), done: make(chan struct{}, 1)}
	e.waiters = append(e.waiters, w)
	return w
}

// newWaiterFunc returns an idle waiter that calls fn, in the completion context, once
// every work request counted on it has completed (nobody waits for it). A caller whose
// posting failed with nothing left pending gives it back with freeWaiter.
func (e *endpoint) newWaiterFunc(fn func(err error)) *waiter {
	w := e.newWaiter()
	w.fn = fn
	return w
}

// freeWaiter recycles an idle waiter.
func (e *endpoint) freeWaiter(w *waiter) {
	w.fn, w.err = nil, nil
	e.wmu.Lock()
	e.freeW = append(e.freeW, w)
	e.wmu.Unlock()
}

// wait waits until every work request counted on w has completed and returns the first
// failure. If ctx ends first the connection is torn down (an RDMA operation cannot be
// cancelled otherwise), which flushes the rest; wait still returns only when none of them
// can touch memory any more. The waiter is recycled.
func (e *endpoint) wait(ctx context.Context, w *waiter) error {
	var ctxErr error
	stopped := false
	if e.direct != nil {
		// The completions may arrive by receive (RDMA Read Responses): make sure the
		// provider's goroutine receives if the last caller to receive directly left.
		e.direct.Resume()
	}
	w.mu.Lock()
	for w.pending != 0 && !stopped {
		w.waiting = true
		w.mu.Unlock()
		select {
		case <-w.done:
		case <-ctx.Done():
			if ctxErr == nil {
				ctxErr = ctx.Err()
				e.qp.Close()
			}
			ctx = context.Background()
		case <-e.stopped:
			// No completion can arrive any more: whatever is still pending never will.
			stopped = true
		}
		w.mu.Lock()
	}
	if w.waiting {
		w.waiting = false
		select {
		case <-w.done: // drop a stale token
		default:
		}
	}
	err := w.err
	if w.pending != 0 && err == nil {
		err = e.err()
	}
	stuck := w.pending != 0
	w.err = nil
	w.mu.Unlock()
	if !stuck {
		e.wmu.Lock()
		e.freeW = append(e.freeW, w)
		e.wmu.Unlock()
	}
	if ctxErr != nil {
		return ctxErr
	}
	return err
}

// flushGrace bounds how long the endpoint waits, after the queue pair failed, for the
// flushed completions of work requests still outstanding.
const flushGrace = 2 * time.Second

// watch waits until the queue pair has failed or closed (or the CQ failed), then until
// every posted work request has completed, and then closes stopped.
func (e *endpoint) watch() {
	// close closes the queue pair, so its Done covers both ends.
	ctx := doneCtx{e.qp.Done()}
	// A CQ with a handler holds nothing: Wait returns only when it fails or ctx ends.
	if err := e.cq.Wait(ctx); ctx.Err() == nil {
		// The CQ failed: completions were lost, so the count cannot be trusted.
		// Closing the queue pair stops the provider touching our memory.
		e.setErr(err)
		e.qp.Close()
		e.stop()
		return
	}
	// The QP is done: wait for its flushed completions (dispatch stops the endpoint
	// when the last one arrives). Close makes sure the provider flushes everything.
	e.flushing.Store(true)
	if e.posted.Load() <= 0 {
		e.stop()
	}
	e.qp.Close()
	t := time.NewTimer(flushGrace)
	defer t.Stop()
	select {
	case <-e.stopped:
	case <-t.C:
		e.stop()
	}
}

// stop reports that no more completions will arrive.
func (e *endpoint) stop() { e.stopOnce.Do(func() { close(e.stopped) }) }

// setErr records why the endpoint stopped.
func (e *endpoint) setErr(err error) { e.lastErr.Store(&err) }

// dispatch routes one completion (the CQ's verbs.CompletionHandler).
func (e *endpoint) dispatch(wc *verbs.Completion) {
	kind, a, b, retired := splitID(wc.ID)
	switch kind {
	case kindRecv:
		if h := e.onRecv.Load(); h != nil {
			(*h)(a, wc.ByteLen, wc)
		} else {
			e.earlyRecv(wc)
		}
	case kindSend:
		e.sqCompleted(wc, 1+retired)
		if sl := e.send[a]; sl.grant != 0 {
			e.grants.Sent(sl.grant)
			sl.grant = 0
		}
		e.sendFree.put(a)
		if b > 0 {
			e.waiterAt(b - 1).complete(wc)
		}
	case kindWaiter:
		e.sqCompleted(wc, 1+retired)
		e.waiterAt(b - 1).complete(wc)
	case kindUnsignaled:
		// Failed or flushed: the chain's signalled end completes (and is counted)
		// after it, and reports this error.
		e.waiterAt(b - 1).fail(wc)
		return
	}
	if e.posted.Add(-1) <= 0 && e.flushing.Load() {
		e.stop()
	}
}

// sqCompleted counts n send-queue requests retired by one completion: their slots
// return, and the stall watch sees progress.
func (e *endpoint) sqCompleted(wc *verbs.Completion, n int) {
	e.sq.give(n)
	e.sqOut.Add(-int64(n))
	e.sqDone.Add(uint64(n))
	if wc.Opcode == verbs.OpcodeRead {
		e.readDone.Add(uint64(n))
	}
}

// earlyRecv keeps a receive that completed before start for start to hand over.
func (e *endpoint) earlyRecv(wc *verbs.Completion) {
	e.startMu.Lock()
	if h := e.onRecv.Load(); h != nil {
		e.startMu.Unlock()
		_, idx, _, _ := splitID(wc.ID)
		(*h)(idx, wc.ByteLen, wc)
		return
	}
	e.early = append(e.early, *wc)
	e.startMu.Unlock()
}

func (e *endpoint) waiterAt(i int) *waiter {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	return e.waiters[i]
}

// close starts disconnecting: it closes the queue pair (on a goroutine of its own:
// closing may wait for the provider) and the watcher waits for the flushed
// completions. It never blocks, so a receive handler may call it.
func (e *endpoint) close() {
	e.closeMu.Do(func() {
		close(e.closing)
		go e.qp.Close()
	})
}

// doneCtx is a context that ends when done is closed: watch waits on the CQ until the
// queue pair is done without a goroutine of its own to cancel a context (an idle
// connection's memory is mostly goroutine stacks and buffers).
type doneCtx struct{ done <-chan struct{} }

func (c doneCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c doneCtx) Done() <-chan struct{}       { return c.done }
func (c doneCtx) Value(any) any               { return nil }
func (c doneCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// teardown closes the connection, waits until no completion can arrive (when the
// endpoint was started) and releases every verbs resource.
func (e *endpoint) teardown() {
	e.close()
	started := true
	e.watchOnce.Do(func() { started = false })
	if started {
		<-e.stopped
	}
	e.destroy()
}

// destroy releases the verbs resources that exist.
func (e *endpoint) destroy() {
	if e.qp != nil {
		e.qp.Close()
	}
	e.bufMu.Lock()
	for _, mr := range e.slabs {
		mr.Close()
	}
	e.slabs = nil
	e.bufMu.Unlock()
	if e.cq != nil {
		e.cq.Close()
	}
}
