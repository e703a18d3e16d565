//go:build !linux

package soft

import (
	"net"
	"syscall"
)

// Without Linux readiness-based I/O, peer accesses hold the region's lock
// across the whole socket read or write.

// rawTxState is unused without readiness-based I/O.
type rawTxState struct{}

func rawConnOf(net.Conn) syscall.RawConn { return nil }

func (q *queuePair) rawReadStep(fd uintptr) bool  { return true }
func (q *queuePair) rawWriteStep(fd uintptr) bool { return true }

func (q *queuePair) writeGuarded(m *memRegion, stag uint32) (revoked bool, err error) {
	m.mu.RLock()
	ok := !m.closed && m.valid && m.stag == stag
	if ok {
		err = q.writeVec()
	}
	m.mu.RUnlock()
	return !ok, err
}
