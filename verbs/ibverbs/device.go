//go:build ibverbs && linux && cgo

package ibverbs

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include <stdlib.h>
#include <errno.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// Config selects and configures a Device. Set at most one of Name and Addr;
// with neither, the only device present is used.
type Config struct {
	// Name is the RDMA device name as ibv_devices lists it, e.g. "rxe0",
	// "siw0", "mlx5_0".
	Name string
	// Addr is an IP address of the network device the RDMA device is bound
	// to (e.g. "10.0.2.15"): the device rdma_cm would use for it.
	Addr string
	// Port is the device port to check (default 1).
	Port int
	// ForkInit calls ibv_fork_init before anything else, so registered
	// memory is marked MADV_DONTFORK and a fork()ed child cannot corrupt it
	// by copy-on-write. Go programs start other programs with clone(VFORK),
	// which needs no protection; set it only when a library in the process
	// calls fork() without exec. See the package documentation.
	ForkInit bool
	// ResolveTimeout bounds rdma_resolve_addr and rdma_resolve_route each
	// (default 2 s). The context of Dial bounds the whole connection setup.
	ResolveTimeout time.Duration
	// CQPoll is how long a completion queue is polled (ibv_poll_cq, no
	// system call) after activity before its waiter arms the CQ and blocks
	// in the completion channel: after a completion was found or work was
	// posted to a queue pair using the CQ, and, with a handler, after each
	// completion event. A poll that finds nothing for CQPoll ends the
	// polling until the next activity, so an idle CQ costs no CPU. Zero
	// means DefaultCQPoll; a negative value disables polling (every wait
	// blocks in the completion channel).
	CQPoll time.Duration
}

// DefaultCQPoll is Config.CQPoll's default: long enough to cover a round
// trip on a busy connection (a few microseconds on hardware; tens under
// emulation), short enough that the CPU spent after a burst is negligible.
const DefaultCQPoll = 50 * time.Microsecond

// cqPoll is the CQ polling budget from the configuration (0: none).
func (d *Device) cqPoll() time.Duration {
	switch {
	case d.cfg.CQPoll < 0:
		return 0
	case d.cfg.CQPoll == 0:
		return DefaultCQPoll
	}
	return d.cfg.CQPoll
}

// Device is one libibverbs device opened through librdmacm. It implements
// verbs.Device.
type Device struct {
	cfg       Config
	name      string
	ctx       *C.struct_ibv_context
	devList   **C.struct_ibv_context
	transport int // C.IBV_TRANSPORT_IB or C.IBV_TRANSPORT_IWARP
	attr      DeviceAttr
	pid       int

	async *asyncReader

	ech   *C.struct_rdma_event_channel
	echFD *pollFD
	loop  chan struct{} // closed when the cm event loop exits

	mu     sync.Mutex
	ids    map[*C.struct_rdma_cm_id]*cmID
	mrs    map[uint32]*memRegion // by rkey, for remote invalidation
	closed bool
}

var _ verbs.Device = (*Device)(nil)

// DeviceAttr are the device limits this package checks requests against
// (ibv_device_attr).
type DeviceAttr struct {
	MaxQP, MaxQPWR, MaxSGE, MaxCQ, MaxCQE, MaxMR int
	// MaxQPRdAtom is the most inbound RDMA Reads per QP (IRD), and
	// MaxQPInitRdAtom the most outbound ones (ORD).
	MaxQPRdAtom, MaxQPInitRdAtom int
	MaxMRSize                    uint64
	Ports                        int
}

// Open opens the device cfg selects.
func Open(cfg Config) (*Device, error) {
	if cfg.Name != "" && cfg.Addr != "" {
		return nil, errors.New("ibverbs: Open: set Config.Name or Config.Addr, not both")
	}
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	if cfg.ResolveTimeout <= 0 {
		cfg.ResolveTimeout = 2 * time.Second
	}
	if cfg.ForkInit {
		if rc := C.ibv_fork_init(); rc != 0 {
			return nil, fmt.Errorf("ibverbs: ibv_fork_init: %w", syscall.Errno(-rc))
		}
	}
	var n C.int
	list, errno := C.rdma_get_devices(&n)
	if list == nil || n == 0 {
		if list != nil {
			C.rdma_free_devices(list)
		}
		return nil, noDeviceError(errno)
	}
	d := &Device{cfg: cfg, devList: list, pid: os.Getpid(),
		ids: make(map[*C.struct_rdma_cm_id]*cmID), mrs: make(map[uint32]*memRegion)}
	ctxs := unsafe.Slice(list, int(n))
	var names []string
	for _, c := range ctxs {
		names = append(names, C.GoString(C.gshim_dev_name(c)))
	}
	want := cfg.Name
	if cfg.Addr != "" {
		name, err := deviceForAddr(cfg.Addr)
		if err != nil {
			C.rdma_free_devices(list)
			return nil, err
		}
		want = name
	}
	switch {
	case want != "":
		for i, nm := range names {
			if nm == want {
				d.ctx = ctxs[i]
			}
		}
		if d.ctx == nil {
			C.rdma_free_devices(list)
			return nil, fmt.Errorf("ibverbs: Open: %w: no device named %q (have %s)", ErrNoDevice, want, strings.Join(names, ", "))
		}
	case len(ctxs) == 1:
		d.ctx = ctxs[0]
	default:
		C.rdma_free_devices(list)
		return nil, fmt.Errorf("ibverbs: Open: %d devices (%s): set Config.Name or Config.Addr", len(names), strings.Join(names, ", "))
	}
	d.name = C.GoString(C.gshim_dev_name(d.ctx))
	d.transport = int(C.gshim_transport(d.ctx))
	if err := d.queryAttr(); err != nil {
		C.rdma_free_devices(list)
		return nil, err
	}
	if err := d.checkPort(); err != nil {
		C.rdma_free_devices(list)
		return nil, err
	}
	async, err := acquireAsync(d.ctx)
	if err != nil {
		C.rdma_free_devices(list)
		return nil, err
	}
	d.async = async
	ech, errno := C.rdma_create_event_channel()
	if ech == nil {
		async.release()
		C.rdma_free_devices(list)
		return nil, fmt.Errorf("ibverbs: rdma_create_event_channel: %w", errnoErr(errno))
	}
	d.ech = ech
	fd, err := newPollFD(int(ech.fd), "rdma_cm")
	if err != nil {
		async.release()
		C.rdma_destroy_event_channel(ech)
		C.rdma_free_devices(list)
		return nil, err
	}
	d.echFD = fd
	d.loop = make(chan struct{})
	go d.cmLoop()
	return d, nil
}

func noDeviceError(errno error) error {
	hint := "load a provider and create a link, e.g. `modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0` or `modprobe siw && rdma link add siw0 type siw netdev eth0`"
	if _, err := os.Stat("/dev/infiniband/rdma_cm"); err != nil {
		hint = "/dev/infiniband/rdma_cm is missing (modprobe rdma_ucm ib_uverbs); " + hint
	}
	if errno != nil && !errors.Is(errno, syscall.Errno(0)) {
		return fmt.Errorf("ibverbs: Open: %w (%v): %s", ErrNoDevice, errno, hint)
	}
	return fmt.Errorf("ibverbs: Open: %w: %s", ErrNoDevice, hint)
}

// deviceForAddr asks rdma_cm which device owns ip (rdma_bind_addr on a
// synchronous id).
func deviceForAddr(ip string) (string, error) {
	if net.ParseIP(ip) == nil {
		return "", fmt.Errorf("ibverbs: Open: Config.Addr %q is not an IP address", ip)
	}
	var id *C.struct_rdma_cm_id
	if rc, errno := C.rdma_create_id(nil, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		return "", fmt.Errorf("ibverbs: Open: rdma_create_id: %w", errnoErr(errno))
	}
	defer C.rdma_destroy_id(id)
	h, p := C.CString(ip), C.CString("0")
	defer C.free(unsafe.Pointer(h))
	defer C.free(unsafe.Pointer(p))
	if rc := C.gshim_bind_addr(id, h, p); rc != 0 {
		return "", fmt.Errorf("ibverbs: Open: address %s: %w: rdma_bind_addr: %v", ip, ErrNoDevice, syscall.Errno(rc))
	}
	if id.verbs == nil {
		return "", fmt.Errorf("ibverbs: Open: %w: no RDMA device is bound to the network device that has %s", ErrNoDevice, ip)
	}
	return C.GoString(C.gshim_dev_name(id.verbs)), nil
}

func (d *Device) queryAttr() error {
	var a [9]C.int
	var mrsz C.uint64_t
	if rc := C.gshim_query_device(d.ctx, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &mrsz, &a[8]); rc != 0 {
		return fmt.Errorf("ibverbs: %s: ibv_query_device: %w", d.name, syscall.Errno(rc))
	}
	d.attr = DeviceAttr{MaxQP: int(a[0]), MaxQPWR: int(a[1]), MaxSGE: int(a[2]), MaxCQ: int(a[3]), MaxCQE: int(a[4]),
		MaxMR: int(a[5]), MaxQPRdAtom: int(a[6]), MaxQPInitRdAtom: int(a[7]), MaxMRSize: uint64(mrsz), Ports: int(a[8])}
	return nil
}

var portStates = map[int]string{0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}

func (d *Device) checkPort() error {
	if d.cfg.Port < 1 || d.cfg.Port > d.attr.Ports {
		return fmt.Errorf("ibverbs: %s: Config.Port %d out of range [1, %d]", d.name, d.cfg.Port, d.attr.Ports)
	}
	var st C.int
	if rc := C.gshim_port_state(d.ctx, C.int(d.cfg.Port), &st); rc != 0 {
		return fmt.Errorf("ibverbs: %s: ibv_query_port %d: %w", d.name, d.cfg.Port, syscall.Errno(rc))
	}
	if st != C.IBV_PORT_ACTIVE {
		return &PortDownError{Device: d.name, Port: d.cfg.Port, State: portStates[int(st)]}
	}
	return nil
}

// Name returns the device name, e.g. "rxe0".
func (d *Device) Name() string { return d.name }

// Attr returns the device limits.
func (d *Device) Attr() DeviceAttr { return d.attr }

// IWARP reports whether the device is an iWARP device (siw, cxgb4, irdma
// in iWARP mode) rather than InfiniBand or RoCE.
func (d *Device) IWARP() bool { return d.transport == C.IBV_TRANSPORT_IWARP }

// ForkStatus reports libibverbs' fork protection: "disabled" (ibv_fork_init
// not called, and the kernel cannot keep registrations safe across fork),
// "enabled" (ibv_fork_init was called) or "unneeded" (the kernel, 5.13 and
// later, keeps registered pages safe in a forked child by itself).
func ForkStatus() string {
	switch C.ibv_is_fork_initialized() {
	case C.IBV_FORK_ENABLED:
		return "enabled"
	case C.IBV_FORK_UNNEEDED:
		return "unneeded"
	}
	return "disabled"
}

// checkFork reports ErrForked when called in a child process forked after
// Open: the child shares no RDMA resources with the parent.
func (d *Device) checkFork(what string) error {
	if os.Getpid() != d.pid {
		return fmt.Errorf("ibverbs: %s: %w", what, ErrForked)
	}
	return nil
}

// Close releases the device. Every PD, CQ, QP and listener must be closed
// first.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	if len(d.ids) > 0 {
		n := len(d.ids)
		d.mu.Unlock()
		return fmt.Errorf("ibverbs: %s: Close: %d connection identifiers (QPs, listeners) still open", d.name, n)
	}
	d.closed = true
	d.mu.Unlock()
	d.echFD.close()
	<-d.loop
	C.rdma_destroy_event_channel(d.ech)
	d.async.release()
	C.rdma_free_devices(d.devList)
	return nil
}

// cmEvent is a copied rdma_cm event.
type cmEvent struct {
	typ         int
	status      int
	id          *C.struct_rdma_cm_id
	privateData []byte
	// responderResources and initiatorDepth are ev.param.conn's, as
	// rdma_cm reports them: from the receiver's side. In a connection
	// request, responder_resources is what the peer asks us to take (its
	// ORD) and initiator_depth what we may initiate (its IRD); see
	// newConnRequest.
	responderResources, initiatorDepth int
}

// newCMEvent copies ev, which gshim_get_cm_event filled, to Go memory.
func newCMEvent(ev *C.struct_gcmev) cmEvent {
	e := cmEvent{typ: int(ev.event), status: int(ev.status), id: ev.id,
		responderResources: int(ev.responder_resources), initiatorDepth: int(ev.initiator_depth)}
	if ev.private_data_len > 0 {
		e.privateData = C.GoBytes(unsafe.Pointer(&ev.private_data[0]), C.int(ev.private_data_len))
	}
	return e
}

func (e *cmEvent) name() string { return C.GoString(C.rdma_event_str(uint32(e.typ))) }

// cmID is the Go side of one rdma_cm_id: an event queue, or a handler once
// the connection is established.
type cmID struct {
	dev    *Device
	id     *C.struct_rdma_cm_id
	mu     sync.Mutex
	queue  []cmEvent
	notify chan struct{}
	// onEvent, when set, receives events instead of the queue (an
	// established connection's QP). It must not block.
	onEvent func(cmEvent)
	// closed: a closed listener; new requests are refused.
	closed bool
}

func (d *Device) newID() (*cmID, error) {
	if err := d.checkFork("rdma_create_id"); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("ibverbs: %w", verbs.ErrClosed)
	}
	var id *C.struct_rdma_cm_id
	if rc, errno := C.rdma_create_id(d.ech, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		return nil, fmt.Errorf("ibverbs: rdma_create_id: %w", errnoErr(errno))
	}
	c := &cmID{dev: d, id: id, notify: make(chan struct{}, 1)}
	d.ids[id] = c
	return c, nil
}

// destroy unregisters and destroys the id (and its QP, if rdma_create_qp
// made one and it was not destroyed yet).
func (c *cmID) destroy() {
	d := c.dev
	d.mu.Lock()
	delete(d.ids, c.id)
	d.mu.Unlock()
	C.rdma_destroy_id(c.id)
}

// deliver queues ev (or hands it to onEvent); false if the id no longer
// takes events (a closed listener).
func (c *cmID) deliver(ev cmEvent) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if f := c.onEvent; f != nil {
		c.mu.Unlock()
		f(ev)
		return true
	}
	c.queue = append(c.queue, ev)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return true
}

// next waits for the next queued event.
func (c *cmID) next(done <-chan struct{}) (cmEvent, bool) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			ev := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return ev, true
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-done:
			return cmEvent{}, false
		}
	}
}

// cmLoop reads the device's rdma_cm event channel through the runtime
// poller and dispatches each event to its id.
func (d *Device) cmLoop() {
	defer close(d.loop)
	ev := (*C.struct_gcmev)(C.calloc(1, C.sizeof_struct_gcmev))
	defer C.free(unsafe.Pointer(ev))
	var rc C.int
	read := func(uintptr) bool {
		rc = C.gshim_get_cm_event(d.ech, ev)
		return rc != C.EAGAIN
	}
	for {
		if err := d.echFD.rc.Read(read); err != nil {
			return
		}
		if rc != 0 {
			// EINTR and friends: try again when readable.
			continue
		}
		e := newCMEvent(ev)
		d.mu.Lock()
		var target *cmID
		if e.typ == C.RDMA_CM_EVENT_CONNECT_REQUEST {
			target = d.ids[ev.listen_id]
			if target != nil {
				// The new id is ours from now on; its events find it here.
				d.ids[ev.id] = &cmID{dev: d, id: ev.id, notify: make(chan struct{}, 1)}
			}
		} else {
			target = d.ids[ev.id]
		}
		d.mu.Unlock()
		if target == nil {
			if e.typ == C.RDMA_CM_EVENT_CONNECT_REQUEST {
				C.rdma_reject(ev.id, nil, 0)
				C.rdma_destroy_id(ev.id)
			}
			continue
		}
		if !target.deliver(e) && e.typ == C.RDMA_CM_EVENT_CONNECT_REQUEST {
			// The listener closed meanwhile.
			if cid := d.lookupID(e.id); cid != nil {
				C.rdma_reject(cid.id, nil, 0)
				cid.destroy()
			}
		}
	}
}

func (d *Device) lookupID(id *C.struct_rdma_cm_id) *cmID {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ids[id]
}

// pollFD is a non-blocking file descriptor waited on by the Go runtime's
// network poller (epoll), so no goroutine blocks an OS thread in read(2).
// It is a dup of a descriptor libibverbs owns: closing it wakes waiters and
// leaves the original to its owner.
type pollFD struct {
	f  *os.File
	rc syscall.RawConn
}

func newPollFD(fd int, name string) (*pollFD, error) {
	if rc := C.gshim_set_nonblock(C.int(fd)); rc != 0 {
		return nil, fmt.Errorf("ibverbs: %s fd: O_NONBLOCK: %w", name, syscall.Errno(rc))
	}
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("ibverbs: %s fd: dup: %w", name, err)
	}
	syscall.CloseOnExec(nfd)
	f := os.NewFile(uintptr(nfd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ibverbs: %s fd: %w", name, err)
	}
	return &pollFD{f: f, rc: rc}, nil
}

func (p *pollFD) close() { p.f.Close() }

// errnoErr turns the errno cgo returned into an error, or EIO when the
// library did not set one.
func errnoErr(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

// DeviceNames lists the RDMA devices librdmacm can use, sorted.
func DeviceNames() ([]string, error) {
	var n C.int
	list, errno := C.rdma_get_devices(&n)
	if list == nil {
		return nil, noDeviceError(errno)
	}
	defer C.rdma_free_devices(list)
	var names []string
	for _, c := range unsafe.Slice(list, int(n)) {
		names = append(names, C.GoString(C.gshim_dev_name(c)))
	}
	sort.Strings(names)
	return names, nil
}
