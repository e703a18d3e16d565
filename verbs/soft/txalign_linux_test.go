//go:build linux

package soft

import (
	"bytes"
	"net"
	"syscall"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// dialMSS connects a raw initiator to addr over a socket whose MSS is
// clamped to mss (TCP_MAXSEG before connect: the SYN advertises it, so the
// provider's side sends segments of at most mss bytes less options).
func dialMSS(t *testing.T, addr string, req iwarp.MPAFrame, mss int) *rawPeer {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, mss)
		}); err != nil {
			return err
		}
		return serr
	}}
	p, _ := rawDialWith(t, &d, addr, req)
	return p
}

// connectMSS connects a raw initiator (CRC as crc) to s over a socket whose
// MSS is clamped to mss, sends the first FPDU (a responder sends nothing
// before it) and returns the peer and the segment size s's QP aligns FPDUs
// with, which it checks is the clamped MSS.
func (s *serverUnderTest) connectMSS(t *testing.T, crc bool, mss int) (*rawPeer, int) {
	t.Helper()
	ch := s.accept(t, verbs.ConnParams{})
	p := dialMSS(t, s.ln.Addr().String(), enhancedRequest(crc, 8, 8, nil), mss)
	if err := <-ch; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: 1}, nil)
	q := s.qp.(*queuePair)
	q.mu.Lock()
	seg := q.txSeg
	q.mu.Unlock()
	if seg < txMinAlignSeg || seg > mss || seg%4 != 0 {
		t.Fatalf("MSS clamped to %d reads as %d", mss, seg)
	}
	return p, seg
}

// TestFPDUsAlignedInOneWrite posts a chain of RDMA Writes and Sends of
// awkward sizes (the tail of a Write, short Sends, a zero-length Send) that
// leave in one vectored write, reads the bytes of that write at a raw peer
// and checks the layout: every FPDU ends at or before the next multiple of
// the connection's MSS counted from the start of the write, a Send behind
// a Write is not cut, the Writes' data arrives at the right TOs and the
// Sends' in order.
func TestFPDUsAlignedInOneWrite(t *testing.T) {
	for _, crc := range []bool{false, true} {
		s := newServerUnderTest(t, Config{})
		p, seg := s.connectMSS(t, crc, 1448)
		q := s.qp.(*queuePair)

		src := make([]byte, 64<<10)
		fillPattern(src, 3)
		smr := s.reg(t, src, verbs.AccessLocalWrite)
		type piece struct {
			op     verbs.SendOp
			off, n int
			stag   uint32
			to     uint64
		}
		pieces := []piece{
			// Its last FPDU would leave 100 bytes of its segment: less
			// than the Send behind it takes.
			{op: verbs.OpWrite, off: 0, n: 4*(seg-iwarp.TaggedHeaderLen-iwarp.CRCLen) - 100, stag: 0x100, to: 0x1000},
			{op: verbs.OpSend, off: 9000, n: 174},
			{op: verbs.OpWrite, off: 10000, n: 2*seg - 40, stag: 0x200, to: 0x2000},
			{op: verbs.OpSend, off: 20000, n: 1},
			{op: verbs.OpSend, off: 20100, n: 0},
			{op: verbs.OpSend, off: 21000, n: seg - 30},
			{op: verbs.OpWrite, off: 30000, n: 5000, stag: 0x300, to: 0x3000},
			{op: verbs.OpSend, off: 40000, n: 230},
		}
		wrs := make([]verbs.SendWR, len(pieces))
		for i, pc := range pieces {
			wrs[i] = verbs.SendWR{ID: uint64(i), Op: pc.op, Flags: verbs.Signaled, RemoteSTag: pc.stag, RemoteTO: pc.to}
			if pc.n > 0 {
				wrs[i].SGL = []verbs.SGE{{MR: smr, Offset: pc.off, Length: pc.n}}
			}
			if i > 0 {
				wrs[i-1].Next = &wrs[i]
			}
		}
		writes := q.w.writes.Load()
		if err := s.qp.PostSend(&wrs[0]); err != nil {
			t.Fatal(err)
		}
		for i, pc := range pieces {
			op := verbs.OpcodeSend
			if pc.op == verbs.OpWrite {
				op = verbs.OpcodeWrite
			}
			s.expect(t, uint64(i), op, verbs.StatusSuccess)
		}
		if n := q.w.writes.Load() - writes; n != 1 {
			t.Fatalf("the chain left in %d writes, want 1", n)
		}

		pos, fpdus, cut := 0, 0, 0
		for i, pc := range pieces {
			for got := 0; ; {
				f := p.next()
				if f == nil {
					t.Fatal("raw peer: connection closed")
				}
				start := pos
				pos += fpduLen(f.Header.Len(), len(f.Payload))
				fpdus++
				if (pos-1)/seg != start/seg {
					t.Fatalf("crc %v: FPDU %d (%v, %d payload bytes) at [%d,%d) of the write straddles a multiple of the MSS %d",
						crc, fpdus, f.Header.Opcode, len(f.Payload), start, pos, seg)
				}
				if pos%seg == 0 {
					cut++
				}
				switch pc.op {
				case verbs.OpWrite:
					if f.Header.Opcode != iwarp.OpWrite || f.Header.STag != pc.stag || f.Header.TO != pc.to+uint64(got) {
						t.Fatalf("piece %d: FPDU %v STag %#x TO %#x, want an RDMA Write to %#x at %#x",
							i, f.Header.Opcode, f.Header.STag, f.Header.TO, pc.stag, pc.to+uint64(got))
					}
				default:
					if f.Header.Opcode != iwarp.OpSend || f.Header.MO != uint32(got) {
						t.Fatalf("piece %d: FPDU %v MO %d, want a Send at MO %d", i, f.Header.Opcode, f.Header.MO, got)
					}
					// A short Send behind an RDMA Write, as an RPC
					// reply's, is left room for: one FPDU.
					if pieces[i-1].op == verbs.OpWrite && !f.Header.Last {
						t.Fatalf("piece %d: the %d-byte Send after an RDMA Write is cut (%d bytes in its first FPDU)", i, pc.n, len(f.Payload))
					}
				}
				if !bytes.Equal(f.Payload, src[pc.off+got:pc.off+got+len(f.Payload)]) {
					t.Fatalf("piece %d: payload at %d differs", i, got)
				}
				got += len(f.Payload)
				if f.Header.Last {
					if got != pc.n {
						t.Fatalf("piece %d: %d of %d bytes", i, got, pc.n)
					}
					break
				}
			}
		}
		t.Logf("crc %v: MSS %d, one write of %d bytes: %d FPDUs, %d ending on a segment boundary", crc, seg, pos, fpdus, cut)
	}
}

// TestShortSendStartsWrite: in a batch of the writer's, a short Send that the
// rest of its TCP segment would cut starts the next write instead, whole in
// one FPDU at a segment boundary; a Send too long for any segment is still
// cut. (Wireshark 4.0's rpcordma cannot read a Send in several DDP segments.)
func TestShortSendStartsWrite(t *testing.T) {
	s := newServerUnderTest(t, Config{SiwKick: -1})
	p, seg := s.connectMSS(t, false, 1448)
	q := s.qp.(*queuePair)
	src := make([]byte, 8192)
	fillPattern(src, 7)
	smr := s.reg(t, src, verbs.AccessLocalWrite)
	// The first Send leaves 100 bytes of its segment; the second needs more
	// (an FPDU of 24 + 300 bytes); the third is longer than any segment.
	sizes := []int{seg - iwarp.UntaggedHeaderLen - iwarp.CRCLen - 100, 300, 2 * seg}
	wrs := make([]verbs.SendWR, len(sizes))
	off := 0
	for i, n := range sizes {
		wrs[i] = verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Offset: off, Length: n}}}
		off += n
		if i > 0 {
			wrs[i-1].Next = &wrs[i]
		}
	}
	waitWriterIdle(t, s.qp)
	writes := q.w.writes.Load()
	release := holdTx(s.qp) // the writer's batch, not PostSend's own
	if err := s.qp.PostSend(&wrs[0]); err != nil {
		t.Fatal(err)
	}
	release()
	for i := range sizes {
		s.expect(t, uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
	}
	if n := q.w.writes.Load() - writes; n != 2 {
		t.Errorf("the three Sends left in %d writes, want 2 (the short Send starting the second)", n)
	}
	off = 0
	for i, n := range sizes {
		var fpdus int
		for got := 0; ; {
			f := p.next()
			if f == nil {
				t.Fatal("raw peer: connection closed")
			}
			fpdus++
			if !bytes.Equal(f.Payload, src[off+got:off+got+len(f.Payload)]) {
				t.Fatalf("Send %d: payload at %d differs", i, got)
			}
			got += len(f.Payload)
			if f.Header.Last {
				if got != n {
					t.Fatalf("Send %d: %d of %d bytes", i, got, n)
				}
				break
			}
		}
		if i < 2 && fpdus != 1 {
			t.Errorf("Send %d of %d bytes came in %d FPDUs, want 1", i, n, fpdus)
		}
		if i == 2 && fpdus < 3 {
			t.Errorf("Send %d of %d bytes came in %d FPDUs, want it cut at the segment boundaries", i, n, fpdus)
		}
		off += n
	}
}
