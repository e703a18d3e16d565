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
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// DefaultIRDORD is the IRD and ORD used when ConnParams leaves them zero
// (capped by the device's max_qp_rd_atom / max_qp_init_rd_atom).
const DefaultIRDORD = 16

// Private data limits of the InfiniBand CM as rdma_cm exposes them (its own
// header takes part of the MAD field): a request carries 56 bytes, a reply
// 196, a reject 148. iWARP (MPA) carries the exact bytes, up to iwarpMaxPrivateData.
const (
	ibMaxConnectPrivateData = 56
	ibMaxAcceptPrivateData  = 196
	ibMaxRejectPrivateData  = 148
	// iwarpMaxPrivateData: Linux 6.1 siw resets an MPA request with 252
	// bytes of private data and takes 248 (measured in the lab:
	// TestPrivateDataSizes); this provider holds iWARP to 248.
	iwarpMaxPrivateData = 248
)

// maxConnectPrivateData is the most request private data d carries.
func maxConnectPrivateData(d *Device) int {
	if d.IWARP() {
		return iwarpMaxPrivateData
	}
	return ibMaxConnectPrivateData
}

func (d *Device) checkPrivateData(what string, pd []byte, ibMax int) error {
	max := iwarpMaxPrivateData
	if !d.IWARP() {
		max = ibMax
	}
	if len(pd) > max {
		return fmt.Errorf("ibverbs: %s: %w: %d bytes, %s allows %d", what, verbs.ErrPrivateDataTooLong, len(pd), d.name, max)
	}
	return nil
}

// wait returns the id's next event, or an error when ctx ends or q is
// closed meanwhile.
func (c *cmID) wait(ctx context.Context, q *queuePair) (cmEvent, error) {
	stop := make(chan struct{})
	defer close(stop)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-q.done:
		case <-stop:
			return
		}
		close(done)
	}()
	ev, ok := c.next(done)
	if ok {
		return ev, nil
	}
	if ctx.Err() != nil {
		return ev, ctx.Err()
	}
	return ev, fmt.Errorf("ibverbs: %w: QP closed during connection setup", verbs.ErrClosed)
}

func eventError(what string, ev cmEvent) error {
	err := fmt.Errorf("ibverbs: %s: rdma_cm event %s", what, ev.name())
	if ev.status < 0 {
		err = fmt.Errorf("%w: %w", err, syscall.Errno(-ev.status))
	} else if ev.status != 0 {
		err = fmt.Errorf("%w (status %d)", err, ev.status)
	}
	return err
}

// beginSetup moves q from StateInit to StateConnecting.
func (q *queuePair) beginSetup(d *Device, what string) error {
	if q.dev != d {
		return fmt.Errorf("ibverbs: %s: QP belongs to device %s, not %s", what, q.dev.name, d.name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state != verbs.StateInit {
		return fmt.Errorf("ibverbs: %s: %w: QP is %v", what, verbs.ErrBadState, q.state)
	}
	q.state = verbs.StateConnecting
	q.setup = make(chan struct{})
	return nil
}

// endSetup finishes Dial/Accept: on failure the device QP and id are torn
// down (receives posted so far stay pending) and q is back in StateInit
// unless it was closed meanwhile.
func (q *queuePair) endSetup(id *cmID, err error) {
	q.mu.Lock()
	setup := q.setup
	q.setup = nil
	if err == nil {
		q.pending = nil
		q.mu.Unlock()
		close(setup)
		return
	}
	qp := q.qp
	q.discard = true
	q.mu.Unlock()
	if qp != nil {
		// Flush the attempt's device QP and drop its completions
		// before destroying it: the device may give the next QP the
		// same number, and the receives stay pending for the next
		// attempt anyway.
		C.gshim_qp_to_error(qp)
		q.awaitFlush()
	}
	q.mu.Lock()
	q.qp, q.id, q.discard = nil, nil, false
	if q.state == verbs.StateConnecting {
		q.state = verbs.StateInit
	}
	q.sqHead, q.sqTail, q.sqOut, q.rqHead, q.rqTail, q.sqSinceSig = 0, 0, 0, 0, 0, 0
	clear(q.sq)
	q.mu.Unlock()
	if qp != nil {
		for _, c := range []*compQueue{q.scq, q.rcq} {
			c.mu.Lock()
			if c.qps[q.qpn] == q {
				delete(c.qps, q.qpn)
			}
			c.mu.Unlock()
		}
		q.dev.async.removeQP(qp)
		C.rdma_destroy_qp(id.id)
	}
	id.destroy()
	close(setup)
}

// attach creates the device QP on id and posts the pending receives.
func (q *queuePair) attach(id *cmID) error {
	d := q.dev
	if id.id.verbs != d.ctx {
		other := "another device"
		if id.id.verbs != nil {
			other = C.GoString(C.gshim_dev_name(id.id.verbs))
		}
		return fmt.Errorf("ibverbs: the connection runs over %s, not %s (open the device by that name or address)", other, d.name)
	}
	rc := C.gshim_create_qp(id.id, q.pd.pd, q.scq.cq, q.rcq.cq, C.uint32_t(q.cfg.MaxSendWR), C.uint32_t(q.cfg.MaxRecvWR),
		C.uint32_t(q.cfg.MaxSendSGE), C.uint32_t(q.cfg.MaxRecvSGE))
	if rc != 0 {
		err := syscall.Errno(rc)
		if err == syscall.ENOMEM || err == syscall.EINVAL {
			return fmt.Errorf("ibverbs: rdma_create_qp: %w (max_qp %d, max_qp_wr %d, max_sge %d): %w", ErrLimit, d.attr.MaxQP, d.attr.MaxQPWR, d.attr.MaxSGE, err)
		}
		return fmt.Errorf("ibverbs: rdma_create_qp: %w", err)
	}
	q.mu.Lock()
	q.id, q.qp, q.qpn = id, id.id.qp, uint32(id.id.qp.qp_num)
	q.mu.Unlock()
	d.async.addQP(id.id.qp, q)
	q.scq.addQP(q)
	q.rcq.addQP(q)
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.pending {
		p := &q.pending[i]
		if _, err := q.postRecvLocked([]verbs.RecvWR{{ID: p.id, SGL: p.sgl}}); err != nil {
			return err
		}
	}
	return nil
}

// established completes setup: q is in StateRTS and receives the id's
// further events.
func (q *queuePair) established(id *cmID, pd []byte) (*verbs.ConnInfo, error) {
	var ord, ird C.int
	q.mu.Lock()
	if q.state != verbs.StateConnecting {
		st := q.state
		q.mu.Unlock()
		return nil, fmt.Errorf("ibverbs: %w: QP became %v during connection setup", verbs.ErrClosed, st)
	}
	if rc := C.gshim_query_rd_atomic(q.qp, &ord, &ird); rc != 0 {
		q.mu.Unlock()
		return nil, fmt.Errorf("ibverbs: ibv_query_qp: %w", syscall.Errno(rc))
	}
	q.ord = int(ord)
	q.state = verbs.StateRTS
	q.mu.Unlock()
	info := &verbs.ConnInfo{PrivateData: pd, IRD: int(ird), ORD: int(ord),
		LocalAddr: idAddr(id.id, false), RemoteAddr: idAddr(id.id, true)}
	// From now on the event loop hands this id's events to the QP.
	id.mu.Lock()
	id.onEvent = q.onCMEvent
	queued := id.queue
	id.queue = nil
	id.mu.Unlock()
	for _, ev := range queued {
		q.onCMEvent(ev)
	}
	return info, nil
}

func idAddr(id *C.struct_rdma_cm_id, peer bool) net.Addr {
	var buf [80]C.char
	p := C.int(0)
	if peer {
		p = 1
	}
	if C.gshim_addr_string(id, p, &buf[0], C.int(len(buf))) != 0 {
		return nil
	}
	ap, err := netip.ParseAddrPort(C.GoString(&buf[0]))
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

func (d *Device) irdOrd(p verbs.ConnParams) (int, int, error) {
	if p.IRD < 0 || p.ORD < 0 || p.IRD > 255 || p.ORD > 255 {
		return 0, 0, fmt.Errorf("ibverbs: ConnParams IRD %d / ORD %d out of range [0, 255]", p.IRD, p.ORD)
	}
	ird, ord := p.IRD, p.ORD
	if ird == 0 {
		ird = DefaultIRDORD
	}
	if ord == 0 {
		ord = DefaultIRDORD
	}
	return min(ird, d.attr.MaxQPRdAtom), min(ord, d.attr.MaxQPInitRdAtom), nil
}

func splitAddr(addr string) (host, port *C.char, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("ibverbs: address %q: %w", addr, err)
	}
	if _, err := strconv.ParseUint(p, 10, 16); err != nil {
		return nil, nil, fmt.Errorf("ibverbs: address %q: port %q is not a number", addr, p)
	}
	if h != "" && net.ParseIP(h) == nil {
		return nil, nil, fmt.Errorf("ibverbs: address %q: host must be an IP address", addr)
	}
	return C.CString(h), C.CString(p), nil
}

// Dial connects qp to a listener at addr ("IP:port") through rdma_cm:
// rdma_resolve_addr, rdma_resolve_route, rdma_create_qp, rdma_connect with
// p's private data and IRD/ORD (responder_resources / initiator_depth).
func (d *Device) Dial(ctx context.Context, addr string, qp verbs.QP, p verbs.ConnParams) (*verbs.ConnInfo, error) {
	q, ok := qp.(*queuePair)
	if !ok || q == nil {
		return nil, errors.New("ibverbs: Dial: QP is not from this provider")
	}
	if err := d.checkPrivateData("Dial", p.PrivateData, ibMaxConnectPrivateData); err != nil {
		return nil, err
	}
	ird, ord, err := d.irdOrd(p)
	if err != nil {
		return nil, err
	}
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(host))
	defer C.free(unsafe.Pointer(port))
	if err := q.beginSetup(d, "Dial"); err != nil {
		return nil, err
	}
	id, err := d.newID()
	if err != nil {
		q.mu.Lock()
		q.state, q.setup = verbs.StateInit, nil
		q.mu.Unlock()
		return nil, err
	}
	info, err := d.dial(ctx, id, q, host, port, addr, p.PrivateData, ird, ord)
	q.endSetup(id, err)
	return info, err
}

func (d *Device) dial(ctx context.Context, id *cmID, q *queuePair, host, port *C.char, addr string, pd []byte, ird, ord int) (*verbs.ConnInfo, error) {
	tmo := C.int(d.cfg.ResolveTimeout.Milliseconds())
	if rc := C.gshim_resolve_addr(id.id, host, port, tmo); rc != 0 {
		return nil, fmt.Errorf("ibverbs: Dial %s: rdma_resolve_addr: %w", addr, syscall.Errno(rc))
	}
	ev, err := id.wait(ctx, q)
	if err != nil {
		return nil, err
	}
	if ev.typ != C.RDMA_CM_EVENT_ADDR_RESOLVED {
		return nil, eventError("Dial "+addr+": resolving the address", ev)
	}
	if rc, errno := C.rdma_resolve_route(id.id, tmo); rc != 0 {
		return nil, fmt.Errorf("ibverbs: Dial %s: rdma_resolve_route: %w", addr, errnoErr(errno))
	}
	if ev, err = id.wait(ctx, q); err != nil {
		return nil, err
	}
	if ev.typ != C.RDMA_CM_EVENT_ROUTE_RESOLVED {
		return nil, eventError("Dial "+addr+": resolving the route", ev)
	}
	if err := q.attach(id); err != nil {
		return nil, fmt.Errorf("ibverbs: Dial %s: %w", addr, err)
	}
	var pdp unsafe.Pointer
	if len(pd) > 0 {
		pdp = C.CBytes(pd)
		defer C.free(pdp)
	}
	if rc := C.gshim_connect(id.id, pdp, C.int(len(pd)), C.int(ird), C.int(ord), 0); rc != 0 {
		return nil, fmt.Errorf("ibverbs: Dial %s: rdma_connect: %w", addr, syscall.Errno(rc))
	}
	if ev, err = id.wait(ctx, q); err != nil {
		return nil, err
	}
	switch ev.typ {
	case C.RDMA_CM_EVENT_ESTABLISHED:
		return q.established(id, ev.privateData)
	case C.RDMA_CM_EVENT_REJECTED:
		return nil, &verbs.RejectedError{PrivateData: ev.privateData, Reason: rejectReason(d, ev.status)}
	}
	return nil, eventError("Dial "+addr, ev)
}

// rejectReason describes a non-consumer reject; "" for a ULP reject.
func rejectReason(d *Device, status int) string {
	if d.IWARP() {
		if status == -int(syscall.ECONNREFUSED) || status == 0 {
			return ""
		}
		return fmt.Sprintf("iWARP connection refused (%v)", syscall.Errno(-status))
	}
	if status == 28 { // IB_CM_REJ_CONSUMER_DEFINED
		return ""
	}
	return fmt.Sprintf("InfiniBand CM reject reason %d", status)
}

// listener is the provider's verbs.Listener.
type listener struct {
	dev       *Device
	id        *cmID
	addr      net.Addr
	closed    chan struct{}
	closeOnce sync.Once
}

// Listen binds an rdma_cm identifier to addr ("IP:port"; port 0 picks one)
// and listens. With a specific IP the address must belong to this device.
func (d *Device) Listen(ctx context.Context, addr string) (verbs.Listener, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(host))
	defer C.free(unsafe.Pointer(port))
	id, err := d.newID()
	if err != nil {
		return nil, err
	}
	if rc := C.gshim_bind_addr(id.id, host, port); rc != 0 {
		id.destroy()
		return nil, fmt.Errorf("ibverbs: Listen %s: rdma_bind_addr: %w", addr, syscall.Errno(rc))
	}
	if id.id.verbs != nil && id.id.verbs != d.ctx {
		other := C.GoString(C.gshim_dev_name(id.id.verbs))
		id.destroy()
		return nil, fmt.Errorf("ibverbs: Listen %s: the address belongs to device %s, not %s", addr, other, d.name)
	}
	if rc, errno := C.rdma_listen(id.id, 128); rc != 0 {
		id.destroy()
		return nil, fmt.Errorf("ibverbs: Listen %s: rdma_listen: %w", addr, errnoErr(errno))
	}
	return &listener{dev: d, id: id, addr: idAddr(id.id, false), closed: make(chan struct{})}, nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// Accept waits for the next connection request.
func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	for {
		done := make(chan struct{})
		stop := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
			case <-l.closed:
			case <-stop:
				return
			}
			close(done)
		}()
		ev, ok := l.id.next(done)
		close(stop)
		if !ok {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("ibverbs: Accept: %w", verbs.ErrClosed)
		}
		if ev.typ != C.RDMA_CM_EVENT_CONNECT_REQUEST {
			continue // e.g. DEVICE_REMOVAL handled by Close
		}
		cid := l.dev.lookupID(ev.id)
		if cid == nil {
			continue
		}
		return newConnRequest(l.dev, cid, ev), nil
	}
}

// Close stops listening; requests not yet accepted are rejected.
func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.id.mu.Lock()
		l.id.closed = true
		q := l.id.queue
		l.id.queue = nil
		l.id.mu.Unlock()
		l.id.destroy()
		for _, ev := range q {
			if ev.typ == C.RDMA_CM_EVENT_CONNECT_REQUEST {
				if cid := l.dev.lookupID(ev.id); cid != nil {
					C.rdma_reject(cid.id, nil, 0)
					cid.destroy()
				}
			}
		}
	})
	return nil
}

// connRequest is the provider's verbs.ConnRequest.
type connRequest struct {
	dev      *Device
	id       *cmID
	pd       []byte
	ird, ord int // the peer's (see newConnRequest)
	remote   net.Addr
	once     sync.Once
	used     bool
}

// newConnRequest makes the request of an RDMA_CM_EVENT_CONNECT_REQUEST
// event ev on identifier id. rdma_cm reports a request from the receiver's
// side (rdma_get_cm_event(3)): responder_resources "matches the initiator
// depth specified by the remote node", the peer's ORD, and initiator_depth
// the peer's responder resources, its IRD. The kernel swaps them on both
// transports: the IB CM in cm_format_req_event, iWARP in siw_proc_mpareq
// and siw_cm_upcall (the peer's MPA IRD becomes the event's ird, which cma's
// iw_conn_req_handler reports as initiator_depth).
func newConnRequest(d *Device, id *cmID, ev cmEvent) *connRequest {
	return &connRequest{dev: d, id: id, pd: ev.privateData, ird: ev.initiatorDepth, ord: ev.responderResources,
		remote: idAddr(ev.id, true)}
}

func (r *connRequest) PrivateData() []byte  { return r.pd }
func (r *connRequest) IRD() int             { return r.ird }
func (r *connRequest) ORD() int             { return r.ord }
func (r *connRequest) RemoteAddr() net.Addr { return r.remote }

func (r *connRequest) claim() bool {
	first := false
	r.once.Do(func() { first = true })
	return first
}

// Accept creates the device QP on the request's identifier, posts qp's
// pending receives, and answers with rdma_accept, with p's IRD and ORD
// matched to the peer's (limits).
func (r *connRequest) Accept(ctx context.Context, qp verbs.QP, p verbs.ConnParams) (*verbs.ConnInfo, error) {
	d := r.dev
	q, ok := qp.(*queuePair)
	if !ok || q == nil {
		return nil, errors.New("ibverbs: Accept: QP is not from this provider")
	}
	if err := d.checkPrivateData("Accept", p.PrivateData, ibMaxAcceptPrivateData); err != nil {
		return nil, err
	}
	ird, ord, err := r.limits(p)
	if err != nil {
		return nil, err
	}
	if !r.claim() {
		return nil, errors.New("ibverbs: Accept: request already answered")
	}
	if err := q.beginSetup(d, "Accept"); err != nil {
		C.rdma_reject(r.id.id, nil, 0)
		r.id.destroy()
		return nil, err
	}
	info, err := r.accept(ctx, q, p.PrivateData, ird, ord)
	if err != nil {
		C.rdma_reject(r.id.id, nil, 0)
	}
	q.endSetup(r.id, err)
	return info, err
}

// limits returns the IRD and ORD Accept asks rdma_accept for
// (responder_resources, initiator_depth): p's, within the device's limits
// (irdOrd), and then within the peer's. rdma_accept(3): initiator_depth must
// be at most the request's initiator_depth (the peer's IRD), and
// responder_resources should be at least the request's responder_resources
// (the peer's ORD); siw_accept fails an IRD below the peer's ORD with ENOMEM
// unless it may raise it itself.
func (r *connRequest) limits(p verbs.ConnParams) (ird, ord int, err error) {
	ird, ord, err = r.dev.irdOrd(p)
	if err != nil {
		return 0, 0, err
	}
	// No more Reads in flight than the peer takes. An InfiniBand CM REQ
	// always carries the peer's IRD, so 0 is 0; an iWARP peer without
	// enhanced MPA (RFC 6581) carries none and is reported as 0.
	if r.ird > 0 || !r.dev.IWARP() {
		ord = min(ord, r.ird)
	}
	// As many inbound Reads as the peer will have in flight, as far as
	// the device allows.
	ird = max(ird, min(r.ord, r.dev.attr.MaxQPRdAtom))
	return ird, ord, nil
}

func (r *connRequest) accept(ctx context.Context, q *queuePair, pd []byte, ird, ord int) (*verbs.ConnInfo, error) {
	if err := q.attach(r.id); err != nil {
		return nil, fmt.Errorf("ibverbs: Accept: %w", err)
	}
	var pdp unsafe.Pointer
	if len(pd) > 0 {
		pdp = C.CBytes(pd)
		defer C.free(pdp)
	}
	if rc := C.gshim_connect(r.id.id, pdp, C.int(len(pd)), C.int(ird), C.int(ord), 1); rc != 0 {
		return nil, fmt.Errorf("ibverbs: Accept: rdma_accept: %w", syscall.Errno(rc))
	}
	ev, err := r.id.wait(ctx, q)
	if err != nil {
		return nil, err
	}
	if ev.typ != C.RDMA_CM_EVENT_ESTABLISHED {
		return nil, eventError("Accept", ev)
	}
	return q.established(r.id, r.pd)
}

// Reject refuses the request with privateData (rdma_reject).
func (r *connRequest) Reject(privateData []byte) error {
	if err := r.dev.checkPrivateData("Reject", privateData, ibMaxRejectPrivateData); err != nil {
		return err
	}
	if !r.claim() {
		return errors.New("ibverbs: Reject: request already answered")
	}
	var pdp unsafe.Pointer
	if len(privateData) > 0 {
		pdp = C.CBytes(privateData)
		defer C.free(pdp)
	}
	rc, errno := C.rdma_reject(r.id.id, pdp, C.uint8_t(len(privateData)))
	r.id.destroy()
	if rc != 0 {
		return fmt.Errorf("ibverbs: Reject: rdma_reject: %w", errnoErr(errno))
	}
	return nil
}
