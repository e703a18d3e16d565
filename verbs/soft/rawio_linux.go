//go:build linux

package soft

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
	"golang.org/x/sys/unix"
)

// Readiness-based socket I/O for peer accesses to registered memory.
//
// A region's lock is held while the peer's bytes move into or out of it, so
// that Invalidate and Close wait for accesses in progress. Holding it across
// a blocking read or write would let a stalled peer block Invalidate
// forever; instead the goroutines wait for the socket to become ready
// without the lock (syscall.RawConn) and hold it only for the non-blocking
// read(2)/writev(2) itself, re-checking the STag each time.
//
// Those reads and writes are syscall.RawSyscall, not syscall.Syscall: the
// socket is non-blocking (rawConnOf insists), so the call copies what it can
// and returns, and waiting is the RawConn's job. syscall.Syscall tells the Go
// scheduler that the thread may block: its monitor (sysmon) then takes the
// processor (P) from a call it finds running on two looks in a row (20 µs
// apart while it is busy) when other goroutines wait for a P, and hands the
// P to another thread; when the call returns, its thread has no P and parks.
// The copies of large messages (an RDMA Write or Read Response of up to
// 1 MiB: 100-400 µs on the 2-vCPU VM of PERFORMANCE.md) run that long, and a
// monitor that has taken a P keeps looking every 20 µs and takes more: a run
// of 1 MiB NFS WRITEs at 32 in flight then switched threads 6.3-7 times per
// WRITE and took 580-620 µs per WRITE, against 1.3-1.6 switches and 415-430
// µs with RawSyscall, which keeps the thread on its P through the copy, CPU
// work either way ("The processor kept through socket copies" in
// PERFORMANCE.md).

// rawTxState is the writer's state for the raw writes.
type rawTxState struct {
	iov        []syscall.Iovec // what is left to write of w.buf.iovStore
	msg        unix.Msghdr     // sendmsg's header (a field, so it does not escape per write)
	rawRevoked bool
	rawErr     error
	fused      fusedTx // postFusedLocked's scratch
}

// rawRxState is the reader's state for the raw reads: placeGuarded's
// readv(2) pieces (a field, so that they do not escape per read; cleared
// after each call).
type rawRxState struct {
	rawIOV [4]syscall.Iovec
}

// rawAhead is the iovecs of a read that reads ahead into a Read Response's
// sink (part of rxAhead): the payload, then up to rxMaxSpec gaps and
// payloads, and the read-ahead behind them.
type rawAhead struct {
	iov [2*rxMaxSpec + 2]syscall.Iovec
}

// rawTxBuf is a batch buffer's iovec array.
type rawTxBuf struct {
	iovStore []syscall.Iovec
}

func newRawTxBuf() rawTxBuf { return rawTxBuf{iovStore: make([]syscall.Iovec, 0, txMaxIOV)} }

// rawConnOf returns c's RawConn, or nil when c is not a TCP socket in
// non-blocking mode (the raw reads and writes must never block, see above; a
// descriptor put in blocking mode, say by a Config.Dialer's Control, is
// served through c).
func rawConnOf(c net.Conn) syscall.RawConn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	nonblock := false
	if err := rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = err == nil && fl&unix.O_NONBLOCK != 0
	}); err != nil || !nonblock {
		return nil
	}
	return rc
}

// rawReadStep is the RawConn.Read callback of placeGuarded (stored once as a
// method value, so calling it does not allocate). It returns false to wait
// for readability.
//
// r.rawDst is the rest of the FPDU's payload, so each read(2) is a readv(2)
// of two pieces: the payload into its destination and, behind it, up to
// rxLargeReadAhead bytes (the trailer, the next header and the start of its
// payload) into the empty read-ahead buffer. One syscall per large FPDU
// then does what a payload read and a trailer read did. Only the first
// piece is registered memory; the region's lock and STag check cover the
// syscall that may write it, as before.
//
// Within a Read Response that has more to come (r.specNext), the readv
// takes the next FPDUs too, up to rxMaxSpec of them, as TCP reads take what
// has arrived: the trailer and header before each (r.specGap bytes) into the
// buffer (the first) or beside it (rxAhead.side), each payload, as predicted (the
// same length as this one's, the same sink, contiguous), straight into the
// sink behind the one before, and rxLargeReadAhead bytes more into the
// buffer: one syscall for up to nine FPDUs, where a MiB takes sixteen. The
// prediction is checked as each header is parsed (placeGuarded); once one
// fails, the bytes read ahead are copied back into the stream, in order
// (relinearize). Those bytes were put only in this Read's own sink, in the
// part the response has yet to fill.
func (q *queuePair) rawReadStep(fd uintptr) bool {
	r := &q.r
	for len(r.rawDst) > 0 {
		if r.buf == nil {
			r.take()
		}
		iov := r.rawIOV[:]
		pieces := 1
		gap, chunks := 0, 0
		var a *rxAhead
		if r.w == 0 && r.nspec == 0 && r.specNext != nil && r.specGap <= rxMaxGap { // the buffer is always empty here
			if r.ahead == nil {
				r.ahead = rxAheadPool.Get().(*rxAhead)
			}
			a = r.ahead
			iov = a.iov[:]
			gap = r.specGap
			iov[1] = syscall.Iovec{Base: &r.buf[0]}
			iov[1].SetLen(gap)
			pieces = 2
			for at := 0; at < len(r.specNext) && chunks < rxMaxSpec; chunks++ {
				if chunks > 0 {
					iov[pieces] = syscall.Iovec{Base: &a.side[(chunks-1)*rxMaxGap]}
					iov[pieces].SetLen(gap)
					pieces++
				}
				c := r.specNext[at:min(at+r.specPL, len(r.specNext))]
				a.specs[chunks] = c
				iov[pieces] = syscall.Iovec{Base: &c[0]}
				iov[pieces].SetLen(len(c))
				pieces++
				at += len(c)
			}
			iov[pieces] = syscall.Iovec{Base: &r.buf[gap]}
			iov[pieces].SetLen(rxLargeReadAhead)
			pieces++
		} else if r.w < rxLargeReadAhead { // always so: the buffer is empty here
			iov[1] = syscall.Iovec{Base: &r.buf[r.w]}
			iov[1].SetLen(rxLargeReadAhead - r.w)
			pieces = 2
		}
		iov[0] = syscall.Iovec{Base: &r.rawDst[0]}
		iov[0].SetLen(len(r.rawDst))
		m := r.rawMR
		m.mu.RLock()
		if m.closed || !m.valid || m.stag != r.rawSTag {
			m.mu.RUnlock()
			clear(iov[:pieces])
			if a != nil {
				r.dropAhead()
			}
			r.rawRevoked = true
			return true
		}
		r.reads.Add(1)
		nn, _, e := syscall.RawSyscall(syscall.SYS_READV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(pieces))
		n := int(nn)
		if e != 0 {
			n = 0
		}
		placed := min(n, len(r.rawDst))
		if placed > 0 && q.crc {
			r.crc = iwarp.UpdateCRC(r.crc, r.rawDst[:placed])
		}
		m.mu.RUnlock()
		clear(iov[:pieces]) // no stale pointer into registered memory
		if a != nil && (e != 0 || n == 0) {
			r.dropAhead()
		}
		switch {
		case e == syscall.EAGAIN:
			if r.w == 0 {
				r.release() // wait without a buffer
			}
			return false
		case e == syscall.EINTR:
			continue
		case e != 0:
			r.rawErr = e
			return true
		case n == 0:
			r.rawErr = io.ErrUnexpectedEOF
			return true
		}
		r.rawDst = r.rawDst[placed:]
		n -= placed
		if chunks == 0 || n <= gap {
			if a != nil {
				r.dropAhead()
			}
			r.w += n
			continue
		}
		// The stream went on past the first gap: into the chunks, the gaps
		// between them (the last one read, if the read ended in it,
		// becomes the tail) and the tail behind the last chunk.
		n -= gap
		r.w = gap
		r.specMR, r.specSTag = m, r.rawSTag
		k := 0
		for ; k < chunks && n > 0; k++ {
			c := min(n, len(a.specs[k]))
			a.specs[k] = a.specs[k][:c]
			n -= c
			if k+1 < chunks && n > 0 {
				g := min(n, gap)
				if g == n {
					// The read ended in this gap: its bytes are the tail.
					copy(r.buf[r.w:], a.side[k*rxMaxGap:k*rxMaxGap+g])
					r.tailN = g
					n = 0
					k++
					break
				}
				a.gapN[k] = g
				n -= g
			}
		}
		clear(a.specs[k:chunks])
		r.nspec = k
		if n > 0 {
			r.tailN = n // behind the last chunk, in buf[gap:]
		}
	}
	return true
}

// rawFillStep is the RawConn.Read callback of fill: one read(2) into the
// read-ahead buffer, up to r.fillLim. When nothing has arrived and nothing
// is buffered, the buffer goes back to the pool before the wait, so an idle
// connection holds none; it is taken again when the socket is readable.
func (q *queuePair) rawFillStep(fd uintptr) bool {
	r := &q.r
	for {
		if r.buf == nil {
			r.take()
		}
		r.reads.Add(1)
		// read(2) directly rather than syscall.Read: the errno is compared as a
		// number, not as an error interface (two interface comparisons per
		// read on the hot path), and converted to an error only when it is one.
		p := r.buf[r.w:r.fillLim]
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			if r.w == 0 {
				r.release()
			}
			return false
		case e != 0:
			r.fillErr = e
		case n == 0:
			r.fillErr = io.EOF
		default:
			r.w += int(n)
		}
		return true
	}
}

// Receiving without the read that finds the socket empty.
//
// A goroutine that has processed everything it read must wait for the socket,
// and the runtime forgets readiness at the start of each RawConn.Read: so
// fill's wait begins with a read(2), which finds the socket empty (EAGAIN)
// whenever the peer has sent nothing more, which for a request/response
// protocol is almost always. receive avoids that read: it stays in one
// RawConn.Read, processing the whole FPDUs each read brought inside the
// callback, and waits (returns false) straight after a read that came back
// short of the buffer. Readiness that comes after that read is kept for the
// wait, since the runtime resets it only when RawConn.Read begins.
//
// A short read has emptied the socket of data, but not always of the
// stream's end: when the peer's FIN or reset comes right behind its last
// bytes, the read that returns the bytes may consume the FIN too (or return
// before the reset), and their readiness came before the read, so the wait
// would not end. The device's confirm sweep (confirmwait.go) wakes a reader
// still in such a wait at its second look, and it reads once more: the end
// is seen within two periods. (TCP_INQ, which reports the bytes left with
// each recvmsg(2), counts a pending FIN but not a reset, so the sweep is
// needed either way; and recvmsg's header and control message cost more
// than the read(2) that replaces it, about 0.15 µs per message here.)

// receive reads the socket and processes every whole FPDU it brings, waiting
// for the socket as needed, until an FPDU is only partly buffered or is large
// (readFPDU reads the rest, placing a large payload directly), a caller wants
// to receive (wantLead), or an FPDU or the socket fails. It is called with
// nothing buffered, and only on a socket with a RawConn (r.shortWait).
//
// The completions are delivered inside the RawConn.Read callback, so a
// handler must not close the connection synchronously: no handler can (Close
// waits for the reader to end).
func (q *queuePair) receive() error {
	r := &q.r
	for {
		r.recvErr = nil
		r.inRecv = true
		err := q.rawConn.Read(q.rawRecvFn)
		r.inRecv = false
		if q.leaveReceive() && errors.Is(err, os.ErrDeadlineExceeded) {
			if q.failed.Load() {
				return errStop // failed meanwhile: the reader drains, as after any failure
			}
			continue // woken by the confirm sweep (confirmwait.go): read once more
		}
		if err == nil {
			err = r.recvErr
		}
		return err
	}
}

// rawRecvStep is receive's RawConn.Read callback. Every read is into an
// empty buffer.
func (q *queuePair) rawRecvStep(fd uintptr) bool {
	r := &q.r
	if q.unconfirmed.Load() != 0 {
		q.unconfirmed.Store(0) // this read confirms the wait, whatever it finds
	}
	for {
		if r.buf == nil {
			r.take()
		}
		n, full, e := r.readAhead(fd)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			r.release() // wait without a buffer
			return false
		case e != 0:
			r.recvErr = e
			return true
		case n == 0:
			r.recvErr = io.EOF
			return true
		}
		r.w = n
		for !r.empty() {
			if whole, large := r.nextFPDU(); !whole || large {
				return true
			}
			err := q.readFPDU() // reads nothing from the socket: it is all buffered
			q.deliver()
			if err != nil {
				r.recvErr = err
				return true
			}
		}
		if q.wantLead.Load() {
			return true // the reader hands over
		}
		if !full {
			// The socket is empty: wait for it without another read. The
			// wait is unconfirmed (the stream's end may have come in with
			// the last bytes) until the confirm sweep has looked twice
			// (confirmwait.go).
			r.release()
			r.waitToken++
			q.unconfirmed.Store(r.waitToken)
			return false
		}
	}
}

// readAhead is one read(2) into the (empty) read-ahead buffer. full reports
// that it filled the buffer: more may be waiting.
func (r *rxState) readAhead(fd uintptr) (n int, full bool, e syscall.Errno) {
	r.reads.Add(1)
	nn, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.buf[0])), rxReadAhead)
	return int(nn), int(nn) == rxReadAhead, e
}

// rawWriteStep is the RawConn.Write callback of writeGuarded.
func (q *queuePair) rawWriteStep(fd uintptr) bool {
	w := &q.w
	for len(w.iov) > 0 {
		m := w.guard
		m.mu.RLock()
		if m.closed || !m.valid || m.stag != w.guardSTag {
			m.mu.RUnlock()
			w.rawRevoked = true
			return true
		}
		w.writes.Add(1)
		n, e := w.sendEOR(fd)
		m.mu.RUnlock()
		switch {
		case e == syscall.EAGAIN:
			return false
		case e == syscall.EINTR:
			continue
		case e != 0:
			w.rawErr = e
			return true
		}
		w.advance(n)
	}
	return true
}

// sendEOR writes w.iov with one sendmsg(2) flagged MSG_EOR (and MSG_NOSIGNAL).
//
// MSG_EOR is what keeps FPDUs aligned with TCP segments (txalign.go): Linux
// marks the last buffer of a sendmsg that copied all its data as a record end
// and never appends a later write to it, so every batch starts a new segment
// and the kernel cuts it into MSS-sized segments from there, where the FPDU
// sizing put the boundaries. With writev, a batch written while the previous
// one was still queued was appended to its last buffer, and its FPDUs then
// straddled segments (what Wireshark's iwarp_mpa dissector cannot follow).
// It is the same one system call per batch as writev. A partial write leaves
// its last buffer unmarked, so the rest continues it, still aligned.
func (w *txState) sendEOR(fd uintptr) (uintptr, syscall.Errno) {
	w.msg.Iov = (*unix.Iovec)(unsafe.Pointer(&w.iov[0])) // the same layout as syscall.Iovec
	w.msg.SetIovlen(len(w.iov))
	n, _, e := syscall.RawSyscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&w.msg)), syscall.MSG_EOR|syscall.MSG_NOSIGNAL)
	w.msg.Iov = nil
	return n, e
}

// advance drops the first n written bytes from w.iov.
func (w *txState) advance(n uintptr) {
	for n > 0 && len(w.iov) > 0 {
		l := uintptr(w.iov[0].Len)
		if n < l {
			w.iov[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(w.iov[0].Base), n))
			w.iov[0].SetLen(int(l - n))
			return
		}
		n -= l
		w.iov = w.iov[1:]
	}
}

// loadIOV points w.iov at the pieces of the batch.
func (w *txState) loadIOV() {
	b := w.buf
	iov := b.iovStore[:0]
	for _, p := range b.vec {
		if len(p) == 0 {
			continue
		}
		v := syscall.Iovec{Base: &p[0]}
		v.SetLen(len(p))
		iov = append(iov, v)
	}
	b.iovStore = iov
	w.iov = iov
}

// unsent reports whether tryWriteVec left bytes for the writer.
func (w *txState) unsent() bool { return len(w.iov) > 0 }

// dropIOV forgets unsent bytes (the connection failed) and the references
// to registered memory.
func (w *txState) dropIOV() {
	w.iov = nil
	clear(w.fused.iov[:])
	if w.buf != nil {
		clear(w.buf.iovStore)
		w.buf.iovStore = w.buf.iovStore[:0]
	}
}

// writevStep is one writev(2) of w.iov. It reports whether to go on: false
// after EAGAIN or an error (recorded in w.rawErr) or when all is written.
func (w *txState) writevStep(fd uintptr) (again, wouldBlock bool) {
	w.writes.Add(1)
	n, e := w.sendEOR(fd)
	switch {
	case e == syscall.EAGAIN:
		return false, true
	case e == syscall.EINTR:
		return true, false
	case e != 0:
		w.rawErr = e
		return false, false
	}
	w.advance(n)
	return len(w.iov) > 0, false
}

// rawTryStep is the RawConn.Write callback of tryWriteVec: it writes what
// the socket takes now and never waits.
func (q *queuePair) rawTryStep(fd uintptr) bool {
	w := &q.w
	for len(w.iov) > 0 {
		if again, _ := w.writevStep(fd); !again {
			break
		}
	}
	return true
}

// rawFinishStep is the RawConn.Write callback of finishVec: it waits for
// the socket until everything is written.
func (q *queuePair) rawFinishStep(fd uintptr) bool {
	w := &q.w
	for len(w.iov) > 0 {
		again, wouldBlock := w.writevStep(fd)
		if wouldBlock {
			return false
		}
		if !again {
			break
		}
	}
	return true
}

// writeRaw writes the batch with sendEOR, waiting for the socket as needed. It
// reports false, writing nothing, when the connection has no RawConn.
func (q *queuePair) writeRaw() (bool, error) {
	if q.rawConn == nil {
		return false, nil
	}
	w := &q.w
	w.loadIOV()
	w.rawErr = nil
	err := q.rawConn.Write(q.rawFinishFn)
	w.dropIOV() // drop references to registered memory
	if err == nil {
		err = w.rawErr
	}
	return true, err
}

// tryWriteVec writes the batch without blocking (postInline). Bytes the socket
// did not take stay in w.iov for finishVec.
func (q *queuePair) tryWriteVec() error {
	w := &q.w
	w.loadIOV()
	w.rawErr = nil
	err := q.rawConn.Write(q.rawTryFn)
	if err == nil {
		err = w.rawErr
	}
	return err
}

// finishVec writes the rest of w.iov left by tryWriteVec, waiting for the
// socket as needed.
func (q *queuePair) finishVec() error {
	w := &q.w
	w.rawErr = nil
	err := q.rawConn.Write(q.rawFinishFn)
	if err == nil {
		err = w.rawErr
	}
	return err
}

// writeGuarded writes the batch while holding m's lock only during writev(2).
// It reports revoked when m's STag stopped being valid (nothing more is
// written then).
func (q *queuePair) writeGuarded(m *memRegion, stag uint32) (revoked bool, err error) {
	w := &q.w
	if q.rawConn == nil {
		m.mu.RLock()
		ok := !m.closed && m.valid && m.stag == stag
		if ok {
			err = q.writeVec()
		}
		m.mu.RUnlock()
		return !ok, err
	}
	w.loadIOV()
	w.rawRevoked, w.rawErr = false, nil
	err = q.rawConn.Write(q.rawWriteFn)
	w.dropIOV() // drop references to registered memory
	if err == nil {
		err = w.rawErr
	}
	return w.rawRevoked, err
}
