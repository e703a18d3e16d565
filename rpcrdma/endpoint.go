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
// registered once when the connection is set up and reused for every message:
//
//   - receive buffers (inline receive size each) that stay posted on the receive queue;
//   - send buffers (inline send size each) for transport headers and inline messages.
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
	qp   verbs.QP
	cq   verbs.CQ
	info *verbs.ConnInfo
	peer ConnPrivate

	recvMR   verbs.MR
	recvSize int
	recvWR   []verbs.RecvWR
	recvSGE  []verbs.SGE

	sendMR   verbs.MR
	sendSize int
	sendFree chan int
	sendWR   []verbs.SendWR
	sendSGE  []verbs.SGE

	sq chan struct{} // one token per free send-queue slot

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

// Work request ID layout: kind in the top 8 bits, then a 24-bit index and a 32-bit index.
const (
	kindRecv   = 1
	kindSend   = 2 // a send buffer: a = buffer index, b = waiter index + 1 (0: none)
	kindWaiter = 3 // b = waiter index + 1
)

func wrID(kind, a, b int) uint64 { return uint64(kind)<<56 | uint64(a)<<32 | uint64(uint32(b)) }

// endpointConfig sizes an endpoint.
type endpointConfig struct {
	recvSize, nrecv int
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
	if e.recvMR, err = pd.RegMR(make([]byte, cfg.recvSize*cfg.nrecv), verbs.AccessLocalWrite); err != nil {
		e.destroy()
		return nil, fmt.Errorf("rpcrdma: register %d receive buffers: %w", cfg.nrecv, err)
	}
	if e.sendMR, err = pd.RegMR(make([]byte, cfg.sendSize*cfg.nsend), 0); err != nil {
		e.destroy()
		return nil, fmt.Errorf("rpcrdma: register %d send buffers: %w", cfg.nsend, err)
	}
	e.sq = make(chan struct{}, cfg.sqDepth)
	for i := 0; i < cfg.sqDepth; i++ {
		e.sq <- struct{}{}
	}
	e.sendFree = make(chan int, cfg.nsend)
	e.sendWR = make([]verbs.SendWR, cfg.nsend)
	e.sendSGE = make([]verbs.SGE, cfg.nsend)
	for i := 0; i < cfg.nsend; i++ {
		e.sendFree <- i
	}
	e.recvWR = make([]verbs.RecvWR, cfg.nrecv)
	e.recvSGE = make([]verbs.SGE, cfg.nrecv)
	for i := range e.recvWR {
		e.recvSGE[i] = verbs.SGE{MR: e.recvMR, Offset: i * cfg.recvSize, Length: cfg.recvSize}
		e.recvWR[i] = verbs.RecvWR{ID: wrID(kindRecv, i, 0), SGL: e.recvSGE[i : i+1 : i+1]}
		if err := e.postRecv(i); err != nil {
			e.destroy()
			return nil, err
		}
	}
	return e, nil
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
		onRecv(int(wc.ID>>32&0xffffff), wc.ByteLen, wc)
	}
	e.watchOnce.Do(func() { go e.watch() })
}

// recvBuf returns receive buffer idx.
func (e *endpoint) recvBuf(idx int) []byte {
	return e.recvMR.Buf()[idx*e.recvSize : (idx+1)*e.recvSize]
}

// postRecv (re)posts receive buffer idx.
func (e *endpoint) postRecv(idx int) error {
	e.posted.Add(1)
	if err := e.qp.PostRecv(&e.recvWR[idx]); err != nil {
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

// sendBufAt returns send buffer i.
func (e *endpoint) sendBufAt(i int) []byte { return e.sendMR.Buf()[i*e.sendSize : (i+1)*e.sendSize] }

// getSendBuf takes a free send buffer, waiting for one (sends complete quickly).
func (e *endpoint) getSendBuf(ctx context.Context) (int, []byte, error) {
	select {
	case i := <-e.sendFree:
		return i, e.sendBufAt(i), nil
	default:
	}
	select {
	case i := <-e.sendFree:
		return i, e.sendBufAt(i), nil
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-e.qp.Done():
		return 0, nil, e.err()
	case <-e.closing:
		return 0, nil, e.err()
	}
}

// putSendBuf returns an unused send buffer.
func (e *endpoint) putSendBuf(i int) { e.sendFree <- i }

// acquireSQ takes one send-queue slot.
func (e *endpoint) acquireSQ(ctx context.Context) error {
	select {
	case <-e.sq:
		return nil
	default:
	}
	select {
	case <-e.sq:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.stopped:
		return e.err()
	}
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
	wb := 0
	if w != nil {
		wb = w.idx + 1
	}
	e.sendSGE[idx] = verbs.SGE{MR: e.sendMR, Offset: idx * e.sendSize, Length: n}
	wr := &e.sendWR[idx]
	*wr = verbs.SendWR{ID: wrID(kindSend, idx, wb), Op: op, Flags: verbs.Signaled,
		SGL: e.sendSGE[idx : idx+1 : idx+1], InvalidateSTag: inv}
	if err := e.post(wr); err != nil {
		e.putSendBuf(idx)
		return err
	}
	return nil
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

// post posts wr, which holds a send-queue slot (acquireSQ) and is Signaled: its
// completion is counted in posted. If posting fails, the slot is given back.
func (e *endpoint) post(wr *verbs.SendWR) error {
	e.posted.Add(1)
	if err := e.qp.PostSend(wr); err != nil {
		e.posted.Add(-1)
		e.sq <- struct{}{}
		return fmt.Errorf("rpcrdma: post %v: %w", wr.Op, err)
	}
	return nil
}

// A waiter collects the completions of a group of work requests (the RDMA Reads of a
// chunk, the Writes and Send of a reply).
type waiter struct {
	idx     int
	mu      sync.Mutex
	pending int
	err     error
	done    chan struct{} // receives one token when pending drops to 0
}

func (w *waiter) add(n int) {
	w.mu.Lock()
	w.pending += n
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
	if w.pending == 0 {
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
	w := &waiter{idx: len(e.waiters), done: make(chan struct{}, 1)}
	e.waiters = append(e.waiters, w)
	return w
}

// wait waits until every work request counted on w has completed and returns the first
// failure. If ctx ends first the connection is torn down (an RDMA operation cannot be
// cancelled otherwise), which flushes the rest; wait still returns only when none of them
// can touch memory any more. The waiter is recycled.
func (e *endpoint) wait(ctx context.Context, w *waiter) error {
	var ctxErr error
	stopped := false
	w.mu.Lock()
	for w.pending != 0 && !stopped {
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
	select {
	case <-w.done: // drop a stale token
	default:
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-e.qp.Done():
		case <-e.closing:
		}
		cancel()
	}()
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
	kind := int(wc.ID >> 56)
	a := int(wc.ID >> 32 & 0xffffff)
	b := int(uint32(wc.ID))
	switch kind {
	case kindRecv:
		if h := e.onRecv.Load(); h != nil {
			(*h)(a, wc.ByteLen, wc)
		} else {
			e.earlyRecv(wc)
		}
	case kindSend:
		e.sq <- struct{}{}
		e.sendFree <- a
		if b > 0 {
			e.waiterAt(b - 1).complete(wc)
		}
	case kindWaiter:
		e.sq <- struct{}{}
		e.waiterAt(b - 1).complete(wc)
	}
	if e.posted.Add(-1) <= 0 && e.flushing.Load() {
		e.stop()
	}
}

// earlyRecv keeps a receive that completed before start for start to hand over.
func (e *endpoint) earlyRecv(wc *verbs.Completion) {
	e.startMu.Lock()
	if h := e.onRecv.Load(); h != nil {
		e.startMu.Unlock()
		(*h)(int(wc.ID>>32&0xffffff), wc.ByteLen, wc)
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

// close starts disconnecting: the watcher closes the queue pair and waits for the
// flushed completions. It never blocks, so a receive handler may call it.
func (e *endpoint) close() {
	e.closeMu.Do(func() { close(e.closing) })
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
	if e.recvMR != nil {
		e.recvMR.Close()
	}
	if e.sendMR != nil {
		e.sendMR.Close()
	}
	if e.cq != nil {
		e.cq.Close()
	}
}
