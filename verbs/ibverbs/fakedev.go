//go:build ibverbs && linux && cgo

package ibverbs

// Test support only: a fake device for the package's tests (fakedev_test.go).
// It lives in a non-test file because cgo cannot be used in _test.go files;
// nothing in the provider refers to it, so it is not reachable from Open and
// the linker drops it from programs.
//
// libibverbs' data-path verbs (ibv_post_send, ibv_post_recv, ibv_poll_cq) are
// inline calls through ibv_context.ops, so a context whose ops are the stubs
// below lets the provider's real PostSend → gshim_post_send → Poll path run
// without a device. Nothing else of libibverbs may be called on it. A
// connection request event is made up and copied by the event loop's own
// gshim_copy_cm_event, so the way it reads rdma_cm's values is tested too.

/*
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"

#define GFAKE_MAX 256

struct gfake_wr {
	uint64_t wr_id;
	int send_flags;
};

// gfake is one fake device. ctx comes first: the stubs find their gfake
// from the context the QP and CQ point to.
struct gfake {
	struct ibv_context ctx;
	struct ibv_qp qp;
	struct ibv_cq cq;
	struct ibv_mr mr;
	struct rdma_cm_id id; // the identifier of a made-up connection request
	struct gfake_wr posted[GFAKE_MAX]; // send requests the "device" took
	int nposted;
	struct ibv_wc cqe[GFAKE_MAX]; // completions queued for poll_cq
	int ncqe, cqhead;
	int fail_in;    // post_send refuses the request this many requests on (-1: none)
	int fail_errno;
};

static int gfake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
	struct gfake *f = (struct gfake *)qp->context;
	for (; wr; wr = wr->next) {
		if (f->fail_in == 0 || f->nposted == GFAKE_MAX) {
			int rc = f->fail_in == 0 ? f->fail_errno : ENOMEM;
			f->fail_in = -1;
			*bad = wr;
			return rc;
		}
		if (f->fail_in > 0) f->fail_in--;
		f->posted[f->nposted].wr_id = wr->wr_id;
		f->posted[f->nposted].send_flags = wr->send_flags;
		f->nposted++;
	}
	return 0;
}

static int gfake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
	return 0;
}

static int gfake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
	struct gfake *f = (struct gfake *)cq->context;
	int k = 0;
	while (k < n && f->cqhead < f->ncqe) wc[k++] = f->cqe[f->cqhead++];
	return k;
}

static struct gfake *gfake_new(uint32_t qpn) {
	struct gfake *f = calloc(1, sizeof(*f));
	if (!f) return NULL;
	f->ctx.ops.post_send = gfake_post_send;
	f->ctx.ops.post_recv = gfake_post_recv;
	f->ctx.ops.poll_cq = gfake_poll_cq;
	f->qp.context = &f->ctx;
	f->qp.qp_num = qpn;
	f->cq.context = &f->ctx;
	f->fail_in = -1;
	return f;
}

static int gfake_complete(struct gfake *f, uint64_t wr_id, int status) {
	struct ibv_wc *w;
	if (f->ncqe == GFAKE_MAX) return ENOSPC;
	w = &f->cqe[f->ncqe++];
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->status = status;
	w->qp_num = f->qp.qp_num;
	return 0;
}

// gfake_connect_request fills out as the event loop does for an
// RDMA_CM_EVENT_CONNECT_REQUEST carrying these rdma_conn_param values.
static void gfake_connect_request(struct gfake *f, uint8_t responder_resources, uint8_t initiator_depth, struct gcmev *out) {
	struct rdma_cm_event ev;
	memset(&ev, 0, sizeof(ev));
	memset(&f->id, 0, sizeof(f->id));
	f->id.verbs = &f->ctx;
	f->id.ps = RDMA_PS_TCP;
	ev.id = &f->id;
	ev.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	ev.param.conn.responder_resources = responder_resources;
	ev.param.conn.initiator_depth = initiator_depth;
	gshim_copy_cm_event(&ev, out);
}
*/
import "C"

import (
	"errors"
	"os"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// fakeQPN is the number of the fake device's one queue pair.
const fakeQPN = 7

// fakeDev is a fake device (test support; see the top of this file).
type fakeDev struct{ f *C.struct_gfake }

// fakePosted is a send request the fake device took.
type fakePosted struct {
	wrID     uint64
	signaled bool
}

func newFakeDev() (*fakeDev, error) {
	f := C.gfake_new(fakeQPN)
	if f == nil {
		return nil, errors.New("ibverbs: fake device: out of memory")
	}
	return &fakeDev{f: f}, nil
}

// device returns a Device on the fake context, iWARP or InfiniBand.
func (fd *fakeDev) device(iwarp bool) *Device {
	d := &Device{name: "fake0", ctx: &fd.f.ctx, transport: C.IBV_TRANSPORT_IB, pid: os.Getpid(),
		ids: map[*C.struct_rdma_cm_id]*cmID{}, mrs: map[uint32]*memRegion{},
		attr: DeviceAttr{MaxQP: 1, MaxQPWR: 1 << 14, MaxSGE: 8, MaxCQ: 1, MaxCQE: 1 << 16, MaxMR: 1,
			MaxQPRdAtom: 16, MaxQPInitRdAtom: 16, Ports: 1}}
	if iwarp {
		d.transport = C.IBV_TRANSPORT_IWARP
	}
	return d
}

// cq returns a CQ of d on the fake device's CQ. It has no completion
// channel: Poll works, Wait and Close do not.
func (fd *fakeDev) cq(d *Device, depth int) *compQueue {
	c := &compQueue{dev: d, depth: depth, cq: &fd.f.cq,
		wc:  (*C.struct_gwc)(C.calloc(C.GSHIM_BATCH, C.sizeof_struct_gwc)),
		qps: map[uint32]*queuePair{}, notify: make(chan struct{}, 1), closedC: make(chan struct{})}
	c.idle.L = &c.mu
	return c
}

// connect makes q, created on a device and CQs of fd, a connected queue
// pair on the fake device QP with the given ORD.
func (fd *fakeDev) connect(q *queuePair, ord int) {
	q.mu.Lock()
	q.qp, q.qpn, q.state, q.ord = &fd.f.qp, fakeQPN, verbs.StateRTS, ord
	q.mu.Unlock()
	q.scq.addQP(q)
	q.rcq.addQP(q)
}

// mr returns a memory region of pd over buf with the fake device's keys.
func (fd *fakeDev) mr(pd *protDomain, buf []byte, access verbs.Access) *memRegion {
	fd.f.mr.lkey, fd.f.mr.rkey = 0x11, 0x22
	return &memRegion{pd: pd, buf: buf, base: uintptr(unsafe.Pointer(&buf[0])), ptr: unsafe.Pointer(&buf[0]),
		mr: &fd.f.mr, lkey: 0x11, rkey: 0x22, access: access, valid: true}
}

// complete queues a completion of wrID on the fake CQ, successful or
// flushed (IBV_WC_WR_FLUSH_ERR).
func (fd *fakeDev) complete(wrID uint64, flushed bool) error {
	st := C.int(C.IBV_WC_SUCCESS)
	if flushed {
		st = C.IBV_WC_WR_FLUSH_ERR
	}
	if C.gfake_complete(fd.f, C.uint64_t(wrID), st) != 0 {
		return errors.New("ibverbs: fake device: CQ full")
	}
	return nil
}

// failPostAfter makes the next ibv_post_send take n requests and refuse
// the next one with ENOMEM (bad_wr pointing at it).
func (fd *fakeDev) failPostAfter(n int) {
	fd.f.fail_in, fd.f.fail_errno = C.int(n), C.ENOMEM
}

// posted lists the send requests the fake device took, in order.
func (fd *fakeDev) posted() []fakePosted {
	out := make([]fakePosted, int(fd.f.nposted))
	for i, p := range fd.f.posted[:len(out)] {
		out[i] = fakePosted{wrID: uint64(p.wr_id), signaled: p.send_flags&C.IBV_SEND_SIGNALED != 0}
	}
	return out
}

// connectRequest returns the event the event loop makes of an
// RDMA_CM_EVENT_CONNECT_REQUEST whose rdma_conn_param has these
// responder_resources and initiator_depth.
func (fd *fakeDev) connectRequest(responderResources, initiatorDepth int) cmEvent {
	ev := (*C.struct_gcmev)(C.calloc(1, C.sizeof_struct_gcmev))
	defer C.free(unsafe.Pointer(ev))
	C.gfake_connect_request(fd.f, C.uint8_t(responderResources), C.uint8_t(initiatorDepth), ev)
	return newCMEvent(ev)
}

// freeCQ releases the C memory of c, a CQ made by cq; c must not be used
// after.
func (fd *fakeDev) freeCQ(c *compQueue) {
	C.free(unsafe.Pointer(c.wc))
	c.wc = nil
}

// free releases the fake device. Close its queue pairs and free its CQs
// first.
func (fd *fakeDev) free() {
	C.free(unsafe.Pointer(fd.f))
	fd.f = nil
}
