//go:build linux

package soft

import (
	"net"
	"syscall"
	"testing"
	"unsafe"

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
	checkWritesAndReads(t, cli, srv, []int{100, rxDirectMin, 200000})
}
