//go:build !linux

package soft

import (
	"net"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// Without Linux readiness-based I/O, peer accesses hold the region's lock
// across the whole socket read or write.

// rawRxState, rawAhead, rawTxState and rawTxBuf are unused without readiness-based I/O.
type (
	rawRxState struct{}
	rawAhead   struct{}
	rawTxState struct{}
	rawTxBuf   struct{}
)

func newRawTxBuf() rawTxBuf { return rawTxBuf{} }

func rawConnOf(net.Conn) syscall.RawConn { return nil }

func (q *queuePair) rawReadStep(fd uintptr) bool   { return true }
func (q *queuePair) rawFillStep(fd uintptr) bool   { return true }
func (q *queuePair) rawWriteStep(fd uintptr) bool  { return true }
func (q *queuePair) rawTryStep(fd uintptr) bool    { return true }
func (q *queuePair) rawFinishStep(fd uintptr) bool { return true }
func (q *queuePair) rawRecvStep(fd uintptr) bool   { return true }

// Without a RawConn the reader reads until EAGAIN (fill); receive is never
// called.
func (q *queuePair) receive() error { return q.readFPDU() }

// Without a RawConn PostSend never writes inline (canInlineLocked), so
// nothing is ever left unsent.
func (w *txState) unsent() bool         { return false }
func (w *txState) dropIOV()             {}
func (q *queuePair) tryWriteVec() error { return q.writeVec() }

// Nor is a post ever fused (postFusedLocked writes inline too).
func (q *queuePair) postFusedLocked(*verbs.SendWR, int) (bool, error) { return false, nil }

// writeRaw reports false: the batch goes out through net.Buffers.
func (q *queuePair) writeRaw() (bool, error) { return false, nil }
func (q *queuePair) finishVec() error        { return nil }

func (q *queuePair) writeGuarded(m *memRegion, stag uint32) (revoked bool, err error) {
	m.mu.RLock()
	ok := !m.closed && m.valid && m.stag == stag
	if ok {
		err = q.writeVec()
	}
	m.mu.RUnlock()
	return !ok, err
}
