//go:build ibverbs && linux && cgo

package ibverbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// protDomain is the provider's verbs.PD (ibv_pd).
type protDomain struct {
	dev    *Device
	pd     *C.struct_ibv_pd
	mu     sync.Mutex
	nmr    int
	nqp    int
	closed bool
	// zero is a small C-allocated region registered on demand for
	// receives without SGEs on devices that refuse them (siw).
	zero    *C.struct_ibv_mr
	zeroBuf unsafe.Pointer
}

// zeroSGE returns an empty SGE on the PD's internal region.
func (pd *protDomain) zeroSGE() (C.struct_ibv_sge, error) {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.zero == nil {
		buf := C.calloc(1, 64)
		mr, errno := C.ibv_reg_mr(pd.pd, buf, 64, C.IBV_ACCESS_LOCAL_WRITE)
		if mr == nil {
			C.free(buf)
			return C.struct_ibv_sge{}, pd.dev.regError(64, errnoErr(errno))
		}
		pd.zero, pd.zeroBuf = mr, buf
	}
	return C.struct_ibv_sge{addr: C.uint64_t(uintptr(pd.zeroBuf)), length: 0, lkey: pd.zero.lkey}, nil
}

// AllocPD allocates a protection domain (ibv_alloc_pd).
func (d *Device) AllocPD() (verbs.PD, error) {
	if err := d.checkFork("AllocPD"); err != nil {
		return nil, err
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("ibverbs: AllocPD: %w", verbs.ErrClosed)
	}
	pd, errno := C.ibv_alloc_pd(d.ctx)
	if pd == nil {
		return nil, fmt.Errorf("ibverbs: %s: ibv_alloc_pd: %w", d.name, errnoErr(errno))
	}
	return &protDomain{dev: d, pd: pd}, nil
}

// Close deallocates the PD.
func (pd *protDomain) Close() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return nil
	}
	if pd.nmr > 0 || pd.nqp > 0 {
		return fmt.Errorf("ibverbs: PD.Close: %d memory regions and %d queue pairs still open", pd.nmr, pd.nqp)
	}
	if pd.zero != nil {
		C.ibv_dereg_mr(pd.zero)
		C.free(pd.zeroBuf)
		pd.zero, pd.zeroBuf = nil, nil
	}
	if rc := C.ibv_dealloc_pd(pd.pd); rc != 0 {
		return fmt.Errorf("ibverbs: ibv_dealloc_pd: %w", syscall.Errno(rc))
	}
	pd.closed = true
	return nil
}

const allAccess = verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite

// ibvAccess converts access rights. ibverbs requires local write for remote
// write; the region's verbs.Access still reports what the caller asked for,
// and local SGE checks use that.
func ibvAccess(a verbs.Access) C.int {
	var f C.int
	if a&verbs.AccessLocalWrite != 0 {
		f |= C.IBV_ACCESS_LOCAL_WRITE
	}
	if a&verbs.AccessRemoteRead != 0 {
		f |= C.IBV_ACCESS_REMOTE_READ
	}
	if a&verbs.AccessRemoteWrite != 0 {
		f |= C.IBV_ACCESS_REMOTE_WRITE | C.IBV_ACCESS_LOCAL_WRITE
	}
	return f
}

// memRegion is the provider's verbs.MR.
//
// The registered memory is the caller's []byte. Its first byte is pinned
// with a runtime.Pinner for the life of the region, which under the cgo
// rules lets C (and the device) keep using the address after ibv_reg_mr
// returns; the Go heap does not move objects, and the pin keeps the
// allocation alive even if the caller drops every reference.
//
// Invalidate deregisters the region (ibv_dereg_mr) and Reregister registers
// it again: user-space ibverbs has no fast-register work request for
// ibv_reg_mr regions, and memory windows (IBV_WR_BIND_MW / IBV_WR_LOCAL_INV)
// are not offered by siw. The new registration is checked to carry a
// different rkey than the old one, so a stale STag never matches again.
type memRegion struct {
	pd   *protDomain
	buf  []byte
	base uintptr
	ptr  unsafe.Pointer // &buf[0], pinned
	pin  runtime.Pinner

	mu     sync.RWMutex
	mr     *C.struct_ibv_mr // nil while invalidated
	lkey   uint32
	rkey   uint32
	access verbs.Access
	valid  bool
	closed bool
}

var _ verbs.MR = (*memRegion)(nil)

// RegMR registers buf (ibv_reg_mr). See memRegion for how Go memory is kept
// in place.
func (pd *protDomain) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	if len(buf) == 0 {
		return nil, errors.New("ibverbs: RegMR: empty buffer")
	}
	if access&^allAccess != 0 {
		return nil, fmt.Errorf("ibverbs: RegMR: unknown access flags %#x", uint32(access))
	}
	d := pd.dev
	if err := d.checkFork("RegMR"); err != nil {
		return nil, err
	}
	if d.attr.MaxMRSize != 0 && uint64(len(buf)) > d.attr.MaxMRSize {
		return nil, fmt.Errorf("ibverbs: RegMR: %w: %d bytes, device max_mr_size is %d", ErrLimit, len(buf), d.attr.MaxMRSize)
	}
	pd.mu.Lock()
	if pd.closed {
		pd.mu.Unlock()
		return nil, fmt.Errorf("ibverbs: RegMR: %w", verbs.ErrClosed)
	}
	pd.nmr++
	pd.mu.Unlock()
	m := &memRegion{pd: pd, buf: buf, access: access}
	m.pin.Pin(&buf[0])
	m.ptr = unsafe.Pointer(&buf[0])
	m.base = uintptr(m.ptr)
	mr, err := m.register(access, 0, false)
	if err != nil {
		m.pin.Unpin()
		pd.mu.Lock()
		pd.nmr--
		pd.mu.Unlock()
		return nil, err
	}
	m.set(mr, access)
	return m, nil
}

// register calls ibv_reg_mr, retrying (while holding the colliding
// registrations) when avoid is set and the new rkey equals old.
func (m *memRegion) register(access verbs.Access, old uint32, avoid bool) (*C.struct_ibv_mr, error) {
	var hold []*C.struct_ibv_mr
	defer func() {
		for _, h := range hold {
			C.ibv_dereg_mr(h)
		}
	}()
	for {
		mr, errno := C.ibv_reg_mr(m.pd.pd, m.ptr, C.size_t(len(m.buf)), ibvAccess(access))
		if mr == nil {
			return nil, m.pd.dev.regError(len(m.buf), errnoErr(errno))
		}
		// A region without remote access has no rkey a peer could use
		// (rxe reports 0 for every such region): nothing to avoid.
		if !avoid || uint32(mr.rkey) != old || access&(verbs.AccessRemoteRead|verbs.AccessRemoteWrite) == 0 {
			return mr, nil
		}
		hold = append(hold, mr)
		if len(hold) > 8 {
			return nil, fmt.Errorf("ibverbs: Reregister: the device keeps handing out rkey %#x", old)
		}
	}
}

// regError explains a failed ibv_reg_mr.
func (d *Device) regError(n int, err error) error {
	var lim syscall.Rlimit
	if (errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EAGAIN)) &&
		syscall.Getrlimit(8 /* RLIMIT_MEMLOCK */, &lim) == nil && lim.Cur != ^uint64(0) {
		return &MemlockError{Length: n, Limit: lim.Cur, Err: err}
	}
	if errors.Is(err, syscall.ENOMEM) {
		return fmt.Errorf("ibverbs: %s: ibv_reg_mr of %d bytes: %w (device max_mr %d): %w", d.name, n, ErrLimit, d.attr.MaxMR, err)
	}
	return fmt.Errorf("ibverbs: %s: ibv_reg_mr of %d bytes: %w", d.name, n, err)
}

// set installs a registration. Caller holds m.mu or owns m exclusively.
func (m *memRegion) set(mr *C.struct_ibv_mr, access verbs.Access) {
	m.mr, m.lkey, m.rkey, m.access, m.valid = mr, uint32(mr.lkey), uint32(mr.rkey), access, true
	d := m.pd.dev
	d.mu.Lock()
	d.mrs[m.rkey] = m
	d.mu.Unlock()
}

// unset deregisters. Caller holds m.mu.
func (m *memRegion) unset() error {
	if m.mr == nil {
		return nil
	}
	d := m.pd.dev
	d.mu.Lock()
	if d.mrs[m.rkey] == m {
		delete(d.mrs, m.rkey)
	}
	d.mu.Unlock()
	if rc := C.ibv_dereg_mr(m.mr); rc != 0 {
		return fmt.Errorf("ibverbs: ibv_dereg_mr: %w", syscall.Errno(rc))
	}
	m.mr = nil
	return nil
}

func (m *memRegion) Buf() []byte { return m.buf }

// Addr is the virtual address of Buf()[0]: ibverbs tagged offsets are
// addresses.
func (m *memRegion) Addr() uint64 { return uint64(m.base) }

func (m *memRegion) LKey() uint32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.lkey
}

func (m *memRegion) RKey() uint32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.rkey
}

func (m *memRegion) Access() verbs.Access {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.access
}

func (m *memRegion) Valid() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.valid && !m.closed
}

// Invalidate deregisters the region: when it returns the device refuses
// every access naming the old STag.
func (m *memRegion) Invalidate() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("ibverbs: Invalidate: %w", verbs.ErrClosed)
	}
	m.valid = false
	return m.unset()
}

// remoteInvalidated records that a received Send with Invalidate
// invalidated rkey.
func (d *Device) remoteInvalidated(rkey uint32) {
	d.mu.Lock()
	m := d.mrs[rkey]
	d.mu.Unlock()
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.rkey == rkey {
		m.valid = false
	}
	m.mu.Unlock()
}

// Reregister registers the region again with new access rights and a new
// STag.
func (m *memRegion) Reregister(access verbs.Access) error {
	if access&^allAccess != 0 {
		return fmt.Errorf("ibverbs: Reregister: unknown access flags %#x", uint32(access))
	}
	if err := m.pd.dev.checkFork("Reregister"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("ibverbs: Reregister: %w", verbs.ErrClosed)
	}
	// Register the new one while the old one (if any) still exists, so the
	// two cannot share an rkey.
	mr, err := m.register(access, m.rkey, true)
	if err != nil {
		return err
	}
	if err := m.unset(); err != nil {
		C.ibv_dereg_mr(mr)
		return err
	}
	m.set(mr, access)
	return nil
}

// Close deregisters the region and unpins the memory.
func (m *memRegion) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	err := m.unset()
	m.closed, m.valid = true, false
	m.pin.Unpin()
	m.mu.Unlock()
	m.pd.mu.Lock()
	m.pd.nmr--
	m.pd.mu.Unlock()
	return err
}

// sge resolves a verbs.SGE against the region for a local work request.
func (m *memRegion) sge(s *verbs.SGE, need verbs.Access, out *C.struct_ibv_sge) error {
	if s.Offset < 0 || s.Length < 0 || s.Offset > len(m.buf) || s.Length > len(m.buf)-s.Offset {
		return fmt.Errorf("%w: offset %d length %d outside MR of %d bytes", verbs.ErrInvalidWR, s.Offset, s.Length, len(m.buf))
	}
	m.mu.RLock()
	ok, acc, lkey := m.valid && !m.closed && m.mr != nil, m.access, m.lkey
	m.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: MR is invalidated or deregistered", verbs.ErrInvalidWR)
	}
	if need != 0 && acc&need == 0 {
		return fmt.Errorf("%w: MR lacks %v access", verbs.ErrInvalidWR, need)
	}
	out.addr = C.uint64_t(m.base + uintptr(s.Offset))
	out.length = C.uint32_t(s.Length)
	out.lkey = C.uint32_t(lkey)
	return nil
}
