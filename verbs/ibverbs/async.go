//go:build ibverbs && linux && cgo

package ibverbs

/*
#include <stdlib.h>
#include <errno.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// asyncReader reads one device context's asynchronous events (CQ overrun,
// fatal QP errors, device errors) through the runtime poller and hands
// them to the CQs and QPs they name. librdmacm gives every Open of the
// same device the same context, so readers are shared and counted.
type asyncReader struct {
	ctx  *C.struct_ibv_context
	fd   *pollFD
	refs int
	done chan struct{}

	mu  sync.Mutex
	cqs map[unsafe.Pointer]*compQueue
	qps map[unsafe.Pointer]*queuePair
}

var (
	asyncMu      sync.Mutex
	asyncReaders = map[*C.struct_ibv_context]*asyncReader{}
)

func acquireAsync(ctx *C.struct_ibv_context) (*asyncReader, error) {
	asyncMu.Lock()
	defer asyncMu.Unlock()
	if a := asyncReaders[ctx]; a != nil {
		a.refs++
		return a, nil
	}
	fd, err := newPollFD(int(ctx.async_fd), "ibv async events")
	if err != nil {
		return nil, err
	}
	a := &asyncReader{ctx: ctx, fd: fd, refs: 1, done: make(chan struct{}),
		cqs: make(map[unsafe.Pointer]*compQueue), qps: make(map[unsafe.Pointer]*queuePair)}
	asyncReaders[ctx] = a
	go a.loop()
	return a, nil
}

func (a *asyncReader) release() {
	asyncMu.Lock()
	a.refs--
	last := a.refs == 0
	if last {
		delete(asyncReaders, a.ctx)
	}
	asyncMu.Unlock()
	if last {
		a.fd.close()
		<-a.done
	}
}

func (a *asyncReader) addCQ(cq *C.struct_ibv_cq, c *compQueue) {
	a.mu.Lock()
	a.cqs[unsafe.Pointer(cq)] = c
	a.mu.Unlock()
}

func (a *asyncReader) removeCQ(cq *C.struct_ibv_cq) {
	a.mu.Lock()
	delete(a.cqs, unsafe.Pointer(cq))
	a.mu.Unlock()
}

func (a *asyncReader) addQP(qp *C.struct_ibv_qp, q *queuePair) {
	a.mu.Lock()
	a.qps[unsafe.Pointer(qp)] = q
	a.mu.Unlock()
}

func (a *asyncReader) removeQP(qp *C.struct_ibv_qp) {
	a.mu.Lock()
	delete(a.qps, unsafe.Pointer(qp))
	a.mu.Unlock()
}

func (a *asyncReader) loop() {
	defer close(a.done)
	ev := (*C.struct_gasync)(C.calloc(1, C.sizeof_struct_gasync))
	defer C.free(unsafe.Pointer(ev))
	var rc C.int
	read := func(uintptr) bool {
		rc = C.gshim_get_async_event(a.ctx, ev)
		return rc != C.EAGAIN
	}
	for {
		if err := a.fd.rc.Read(read); err != nil {
			return
		}
		if rc != 0 {
			continue
		}
		a.dispatch(int(ev._type), ev.cq, ev.qp)
	}
}

func (a *asyncReader) dispatch(typ int, cq, qp unsafe.Pointer) {
	name := C.GoString(C.ibv_event_type_str(uint32(typ)))
	a.mu.Lock()
	c, q := a.cqs[cq], a.qps[qp]
	var all []*queuePair
	if typ == C.IBV_EVENT_DEVICE_FATAL {
		for _, q := range a.qps {
			all = append(all, q)
		}
	}
	a.mu.Unlock()
	switch typ {
	case C.IBV_EVENT_CQ_ERR:
		if c != nil {
			c.fail(&verbs.CQOverrunError{Depth: c.depth})
		}
	case C.IBV_EVENT_QP_FATAL, C.IBV_EVENT_QP_REQ_ERR, C.IBV_EVENT_QP_ACCESS_ERR:
		if q != nil {
			q.fail(fmt.Errorf("ibverbs: %w: the device reported %s", verbs.ErrConnectionLost, name))
		}
	case C.IBV_EVENT_DEVICE_FATAL:
		for _, q := range all {
			q.fail(fmt.Errorf("ibverbs: %w: the device reported %s", verbs.ErrConnectionLost, name))
		}
	}
}
