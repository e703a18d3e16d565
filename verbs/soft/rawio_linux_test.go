//go:build linux

package soft

import (
	"bytes"
	"net"
	"syscall"
	"testing"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"golang.org/x/sys/unix"
)

// BenchmarkReadEmptySocket measures the read(2) a receiver makes before it waits for
// the socket, the one that finds it empty (EAGAIN), as rawFillStep makes it: the
// syscall with the runtime's entry and exit, on a loopback TCP socket.
//
//	go test -run '^$' -bench ReadEmptySocket ./verbs/soft
func BenchmarkReadEmptySocket(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rc, err := s.(*net.TCPConn).SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, rxReadAhead)
	var errno syscall.Errno
	b.ResetTimer()
	rc.Control(func(fd uintptr) {
		for range b.N {
			_, _, errno = syscall.Syscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			if errno != syscall.EAGAIN {
				return
			}
		}
	})
	b.StopTimer()
	if errno != syscall.EAGAIN {
		b.Fatalf("read of an empty socket: errno %v, want EAGAIN", errno)
	}
}

// A socket in blocking mode never takes the raw path, whose reads and writes are
// RawSyscalls that must not block (a blocked one would hold its P): rawConnOf
// refuses it, and a QP over it moves its messages, RDMA Writes and Reads
// included, through the net.Conn.
func TestBlockingSocketServedThroughConn(t *testing.T) {
	checkGoroutines(t)
	blocking := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = unix.SetNonblock(int(fd), false) }); cerr != nil {
			return cerr
		}
		return err
	}}
	cli, srv := connectPair(t, pairConfig{client: Config{Dialer: blocking}})
	if rc := cli.qp.(*queuePair).rawConn; rc != nil {
		t.Fatal("client QP over a blocking socket took the raw path")
	}
	if rc := srv.qp.(*queuePair).rawConn; rc == nil {
		t.Fatal("server QP over a non-blocking socket did not take the raw path")
	}
	const n = 200000
	src := make([]byte, n)
	fillPattern(src, 9)
	srcMR := cli.reg(t, src, 0)
	dst := make([]byte, n)
	dstMR := srv.reg(t, dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	back := make([]byte, n)
	backMR := cli.reg(t, back, verbs.AccessLocalWrite)
	note := make([]byte, 64)
	noteMR := srv.reg(t, note, verbs.AccessLocalWrite)
	if err := srv.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: noteMR, Length: len(note)}}}); err != nil {
		t.Fatal(err)
	}
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: srcMR, Length: n}},
		RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr()}); err != nil {
		t.Fatal(err)
	}
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: srcMR, Offset: 5, Length: 40}}}); err != nil {
		t.Fatal(err)
	}
	if wc := srv.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess); wc.ByteLen != 40 || !bytes.Equal(note[:40], src[5:45]) {
		t.Fatalf("Send behind the Write: %+v", wc)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("RDMA Write over the blocking socket: target mismatch")
	}
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 4, Op: verbs.OpRead, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: backMR, Length: n}}, RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr()}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 4, verbs.OpcodeRead, verbs.StatusSuccess)
	if !bytes.Equal(back, src) {
		t.Fatal("RDMA Read over the blocking socket: data mismatch")
	}
}
