package soft

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// inlineCounts returns how many messages PostSend wrote itself and how many
// of those the writer had to finish.
func inlineCounts(qp verbs.QP) (inlined, resumed uint64) {
	q := qp.(*queuePair)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inlined, q.resumed
}

// fusedCount returns how many messages qp posted the fused way.
func fusedCount(qp verbs.QP) uint64 {
	q := qp.(*queuePair)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fused
}

// waitWriterIdle waits until qp's writer is parked with nothing to do.
func waitWriterIdle(t *testing.T, qp verbs.QP) {
	t.Helper()
	q := qp.(*queuePair)
	for i := 0; ; i++ {
		q.mu.Lock()
		idle := q.writerIdle
		q.mu.Unlock()
		if idle {
			return
		}
		if i == 10000 {
			t.Fatal("the writer never became idle")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPostSendInline checks that a small Send posted while the writer has
// nothing to do is written by PostSend itself (no hand-off to the writer
// goroutine), that an RDMA Write is not, and that the peer gets every byte.
func TestPostSendInline(t *testing.T) {
	const n, size = 20, 1000
	rbufs := make([][]byte, n)
	cli, srv := connectPair(t, pairConfig{
		client: Config{SiwKick: -1},
		depth:  n,
		beforeAccept: func(e *endpoint) {
			for i := range rbufs {
				rbufs[i] = make([]byte, size)
				mr := e.reg(t, rbufs[i], verbs.AccessLocalWrite)
				if err := e.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: mr, Length: size}}}); err != nil {
					t.Fatal(err)
				}
			}
		},
	})
	sink := make([]byte, size)
	sinkMR := srv.reg(t, sink, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	src := make([]byte, size)
	srcMR := cli.reg(t, src, 0)
	for i := 0; i < n; i++ {
		fillPattern(src, byte(i))
		waitWriterIdle(t, cli.qp)
		if err := cli.qp.PostSend(&verbs.SendWR{ID: 100 + uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: srcMR, Length: size}}}); err != nil {
			t.Fatal(err)
		}
		cli.expect(t, 100+uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
		wc := srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
		if wc.ByteLen != size || !bytes.Equal(rbufs[i], src) {
			t.Fatalf("Send %d: received %d bytes %x..., want %x...", i, wc.ByteLen, rbufs[i][:8], src[:8])
		}
	}
	fillPattern(src, 0xa5)
	waitWriterIdle(t, cli.qp)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 999, Op: verbs.OpWrite, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: srcMR, Length: size}}, RemoteSTag: sinkMR.RKey(), RemoteTO: sinkMR.Addr()}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 999, verbs.OpcodeWrite, verbs.StatusSuccess)
	// The RDMA Write is the writer's: a Send usually follows it and should
	// share its socket write (TestWriteAndSendOneWrite).
	inlined, resumed := inlineCounts(cli.qp)
	if inlined != n || resumed != 0 {
		t.Errorf("PostSend wrote %d messages itself (writer finished %d), want the %d Sends (0)", inlined, resumed, n)
	}
	// The Write is placed before a later Send completes on the server.
	rq := make([]byte, 1)
	if err := srv.qp.PostRecv(&verbs.RecvWR{ID: 77, SGL: []verbs.SGE{{MR: srv.reg(t, rq, verbs.AccessLocalWrite), Length: 1}}}); err != nil {
		t.Fatal(err)
	}
	waitWriterIdle(t, cli.qp)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 1000, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: srcMR, Length: 0}}}); err != nil {
		t.Fatal(err)
	}
	srv.expect(t, 77, verbs.OpcodeRecv, verbs.StatusSuccess)
	if !bytes.Equal(sink, src) {
		t.Fatalf("RDMA Write placed %x..., want %x...", sink[:8], src[:8])
	}
}

// TestPostSendInlineFullSocket is the case that once made inline transmission
// unacceptable: the peer stops reading, so the socket fills up. PostSend must
// still return at once for every message (the writer finishes what the
// socket did not take), and once the peer reads again it must get every
// message whole and in order. Messages of 64 KiB, and of 1 MiB, which
// PostSend writes itself too (as much of it as the socket takes), and of
// 8000 bytes, one FPDU each, which it writes as fused posts (postFusedLocked).
func TestPostSendInlineFullSocket(t *testing.T) {
	t.Run("64KiB", func(t *testing.T) { testPostSendInlineFullSocket(t, 128, 64<<10) })
	t.Run("1MiB", func(t *testing.T) { testPostSendInlineFullSocket(t, 8, 1<<20) })
	t.Run("fused", func(t *testing.T) { testPostSendInlineFullSocket(t, 1024, 8000) })
}

func testPostSendInlineFullSocket(t *testing.T, n, size int) {
	checkGoroutines(t)
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		// A small receive window, so that our socket fills quickly.
		var serr error
		if err := c.Control(func(fd uintptr) { serr = setRcvBuf(fd, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peerc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			peerc <- nil
			return
		}
		var buf [iwarp.MaxMPAFrameLen]byte
		if _, err := iwarp.ReadMPAFrame(c, buf[:], iwarp.MPARequest); err != nil {
			c.Close()
			peerc <- nil
			return
		}
		rep := iwarp.MPAFrame{Kind: iwarp.MPAReply, Revision: 2, Flags: iwarp.FlagEnhanced, IRD: 8, ORD: 8}
		b, _ := rep.Append(nil)
		c.Write(b)
		peerc <- c // and read nothing until the sends are posted
	}()
	// The small window also shrinks the MSS, from which the FPDU size would
	// follow: fix it so that a message fits one vectored write.
	cli := newEndpoint(t, New(Config{SiwKick: -1, MaxFPDU: 16 << 10}), n)
	defer cli.close(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.dev.Dial(ctx, ln.Addr().String(), cli.qp, verbs.ConnParams{}); err != nil {
		t.Fatal(err)
	}
	c := <-peerc
	if c == nil {
		t.Fatal("raw peer: MPA exchange failed")
	}
	defer c.Close()

	src := make([]byte, size)
	fillPattern(src, 3)
	mr := cli.reg(t, src, 0)
	posted := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			// Post while the writer is idle, so that PostSend writes,
			// until the socket is full and the writer takes over.
			for q := cli.qp.(*queuePair); ; runtime.Gosched() {
				q.mu.Lock()
				idle, partial := q.writerIdle, q.resumed > 0
				q.mu.Unlock()
				if idle || partial {
					break
				}
			}
			if err := cli.qp.PostSend(&verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled,
				SGL: []verbs.SGE{{MR: mr, Length: size}}}); err != nil {
				posted <- err
				return
			}
		}
		posted <- nil
	}()
	select {
	case err := <-posted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("PostSend blocked on a full socket")
	}
	if inlined, resumed := inlineCounts(cli.qp); inlined == 0 || resumed == 0 {
		t.Fatalf("PostSend wrote %d messages itself, the writer finished %d: the full-socket path was not taken", inlined, resumed)
	}
	if fused, one := fusedCount(cli.qp), size <= iwarp.MaxPayload(16<<10, false); one != (fused > 0) {
		t.Fatalf("%d of the %d-byte Sends were fused posts", fused, size)
	}

	p := &rawPeer{t: t, c: c, msn: [3]uint32{1, 1, 1}}
	c.SetDeadline(time.Now().Add(60 * time.Second))
	for i := 0; i < n; i++ {
		var got []byte
		for {
			f := p.next()
			if f == nil {
				t.Fatalf("connection ended after %d messages", i)
			}
			h := f.Header
			if h.Opcode != iwarp.OpSend || h.MSN != uint32(i+1) || int(h.MO) != len(got) {
				t.Fatalf("message %d: FPDU %v MSN %d MO %d, want Send MSN %d MO %d", i, h.Opcode, h.MSN, h.MO, i+1, len(got))
			}
			got = append(got, f.Payload...)
			if h.Last {
				break
			}
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("message %d: %d bytes, not the %d sent", i, len(got), size)
		}
	}
	for i := 0; i < n; i++ {
		cli.expect(t, uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
	}
}

// writesOf returns how many socket writes qp's transmit side has made.
func writesOf(qp verbs.QP) uint64 { return qp.(*queuePair).w.writes.Load() }

// TestMessageOneWrite checks that a multi-FPDU message (a Send, an RDMA
// Write, and a Read Response answering a peer's Read Request) leaves in one
// vectored write: a peer never sees part of a message and then waits for the
// rest of it behind a second system call (the stall a split write would
// cause with Linux siw, whose receive path processes what has arrived and
// waits for more).
func TestMessageOneWrite(t *testing.T) {
	const size = 4096 // 3 FPDUs at 1448 bytes, as with an Ethernet MSS
	cfg := Config{MaxFPDU: 1448, SiwKick: -1}
	rbuf := make([]byte, size)
	var rmr verbs.MR
	cli, srv := connectPair(t, pairConfig{
		client: cfg, server: cfg,
		beforeAccept: func(e *endpoint) {
			rmr = e.reg(t, rbuf, verbs.AccessLocalWrite)
			if err := e.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: size}}}); err != nil {
				t.Fatal(err)
			}
		},
	})
	src := make([]byte, 4*size)
	fillPattern(src, 9)
	srcMR := cli.reg(t, src, verbs.AccessLocalWrite)
	remote := make([]byte, 4*size)
	fillPattern(remote, 77)
	remoteMR := srv.reg(t, remote, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)

	check := func(what string, qp verbs.QP, before uint64) {
		t.Helper()
		if n := writesOf(qp) - before; n != 1 {
			t.Errorf("%s of %d bytes took %d socket writes, want 1", what, size, n)
		}
	}

	c0 := writesOf(cli.qp)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: srcMR, Length: size}}}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 2, verbs.OpcodeSend, verbs.StatusSuccess)
	srv.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
	check("Send", cli.qp, c0)

	c0 = writesOf(cli.qp)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpWrite, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: srcMR, Length: size}},
		RemoteSTag: remoteMR.RKey(), RemoteTO: remoteMR.Addr()}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 3, verbs.OpcodeWrite, verbs.StatusSuccess)
	check("RDMA Write", cli.qp, c0)

	c0, s0 := writesOf(cli.qp), writesOf(srv.qp)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 4, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: srcMR, Offset: size, Length: size}},
		RemoteSTag: remoteMR.RKey(), RemoteTO: remoteMR.Addr() + size}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 4, verbs.OpcodeRead, verbs.StatusSuccess)
	check("Read Request", cli.qp, c0)
	check("Read Response", srv.qp, s0)
	if !bytes.Equal(src[size:2*size], remote[size:2*size]) {
		t.Fatal("RDMA Read returned other bytes")
	}
}

// holdTx makes qp's transmit side busy, as PostSend's own write does, so
// that work posted meanwhile queues up; the returned function releases it
// and the writer takes everything queued.
func holdTx(qp verbs.QP) (release func()) {
	q := qp.(*queuePair)
	q.mu.Lock()
	q.txBusy = true
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		q.txBusy = false
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// TestWriteAndSendOneWrite checks that an RDMA Write and the Send behind it,
// queued together (an RPC reply: its data by RDMA Write, then the reply
// message), leave in one socket write, in order, and complete in order.
func TestWriteAndSendOneWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxFPDU int
		size    int
	}{
		{"4KiB-MSS", 1448, 4096}, // the Write is 3 FPDUs
		{"64KiB", 0, 64 << 10},
		{"small", 0, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{MaxFPDU: tc.maxFPDU, SiwKick: -1}
			rbuf := make([]byte, 256)
			cli, srv := connectPair(t, pairConfig{
				client: cfg, server: cfg,
				beforeAccept: func(e *endpoint) {
					mr := e.reg(t, rbuf, verbs.AccessLocalWrite)
					if err := e.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: mr, Length: len(rbuf)}}}); err != nil {
						t.Fatal(err)
					}
				},
			})
			src := make([]byte, tc.size+64)
			fillPattern(src, 3)
			srcMR := cli.reg(t, src, verbs.AccessLocalWrite)
			remote := make([]byte, tc.size)
			remoteMR := srv.reg(t, remote, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)

			waitWriterIdle(t, cli.qp)
			c0 := writesOf(cli.qp)
			release := holdTx(cli.qp)
			if err := cli.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpWrite, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: srcMR, Length: tc.size}},
				RemoteSTag: remoteMR.RKey(), RemoteTO: remoteMR.Addr()}); err != nil {
				t.Fatal(err)
			}
			if err := cli.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: srcMR, Offset: tc.size, Length: 64}}}); err != nil {
				t.Fatal(err)
			}
			release()
			cli.expect(t, 2, verbs.OpcodeWrite, verbs.StatusSuccess)
			cli.expect(t, 3, verbs.OpcodeSend, verbs.StatusSuccess)
			wc := srv.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
			if n := writesOf(cli.qp) - c0; n != 1 {
				t.Errorf("RDMA Write of %d bytes and a Send took %d socket writes, want 1", tc.size, n)
			}
			// The Send arrived after the Write was placed.
			if !bytes.Equal(remote, src[:tc.size]) {
				t.Error("RDMA Write placed other bytes")
			}
			if wc.ByteLen != 64 || !bytes.Equal(rbuf[:64], src[tc.size:]) {
				t.Errorf("Send delivered %d bytes %x, want 64 bytes %x", wc.ByteLen, rbuf[:min(wc.ByteLen, 64)], src[tc.size:])
			}
		})
	}
}
