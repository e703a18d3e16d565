package soft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// rawPeer is a hand-driven iWARP peer: a plain TCP connection that speaks
// MPA and then sends frames built with package iwarp.
type rawPeer struct {
	t    testing.TB
	c    net.Conn
	crc  bool
	rbuf []byte
	msn  [3]uint32
}

// rawDial connects a raw initiator to addr with the given MPA request and
// returns it with the decoded reply.
func rawDial(t testing.TB, addr string, req iwarp.MPAFrame) (*rawPeer, iwarp.MPAFrame) {
	t.Helper()
	return rawDialWith(t, &net.Dialer{}, addr, req)
}

// rawDialWith is rawDial through the dialer d (socket options set before connect).
func rawDialWith(t testing.TB, d *net.Dialer, addr string, req iwarp.MPAFrame) (*rawPeer, iwarp.MPAFrame) {
	t.Helper()
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	b, err := req.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	var buf [iwarp.MaxMPAFrameLen]byte
	rep, err := iwarp.ReadMPAFrame(c, buf[:], iwarp.MPAReply)
	if err != nil {
		t.Fatalf("raw peer: reading MPA Reply: %v", err)
	}
	rep.PrivateData = append([]byte(nil), rep.PrivateData...)
	return &rawPeer{t: t, c: c, crc: rep.CRC(), msn: [3]uint32{1, 1, 1}}, rep
}

func enhancedRequest(crc bool, ird, ord uint16, pd []byte) iwarp.MPAFrame {
	f := iwarp.MPAFrame{Kind: iwarp.MPARequest, Revision: 2, Flags: iwarp.FlagEnhanced, IRD: ird, ORD: ord, PrivateData: pd}
	if crc {
		f.Flags |= iwarp.FlagCRC
	}
	return f
}

// send writes one FPDU.
func (p *rawPeer) send(h iwarp.Header, payload []byte) {
	p.t.Helper()
	b, err := iwarp.AppendFPDU(nil, &h, payload, p.crc)
	if err != nil {
		p.t.Fatal(err)
	}
	p.write(b)
}

func (p *rawPeer) write(b []byte) {
	p.t.Helper()
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatalf("raw peer write: %v", err)
	}
}

// next reads the next FPDU (nil at EOF).
func (p *rawPeer) next() *iwarp.FPDU {
	p.t.Helper()
	for {
		var f iwarp.FPDU
		n, err := iwarp.DecodeFPDU(p.rbuf, &f, p.crc)
		if err == nil {
			f.Payload = append([]byte(nil), f.Payload...)
			p.rbuf = p.rbuf[n:]
			return &f
		}
		if !errors.Is(err, iwarp.ErrIncomplete) {
			p.t.Fatalf("raw peer: decoding FPDU: %v", err)
		}
		var tmp [65536]byte
		k, err := p.c.Read(tmp[:])
		p.rbuf = append(p.rbuf, tmp[:k]...)
		if err != nil {
			if err == io.EOF && k == 0 {
				return nil
			}
			if k == 0 {
				p.t.Fatalf("raw peer read: %v", err)
			}
		}
	}
}

// expectTerminate reads FPDUs until a Terminate and checks its code.
func (p *rawPeer) expectTerminate(want iwarp.TermCode) iwarp.Terminate {
	p.t.Helper()
	for {
		f := p.next()
		if f == nil {
			p.t.Fatalf("connection closed without a Terminate (want %v)", want)
		}
		if f.Header.Opcode != iwarp.OpTerminate {
			continue
		}
		var t iwarp.Terminate
		if err := t.Decode(f.Payload); err != nil {
			p.t.Fatalf("decoding Terminate: %v", err)
		}
		if t.Code != want {
			p.t.Fatalf("Terminate %v, want %v", t.Code, want)
		}
		if t.Order != iwarp.TermOrderRFC {
			p.t.Errorf("Terminate sent in %v order, want RFC", t.Order)
		}
		if f.Header.QN != iwarp.QNTerminate || f.Header.MSN != 1 || !f.Header.Last {
			p.t.Errorf("Terminate header %+v", f.Header)
		}
		// After the Terminate the provider closes the stream.
		if g := p.next(); g != nil {
			p.t.Errorf("FPDU %v after Terminate", g.Header.Opcode)
		}
		return t
	}
}

func (p *rawPeer) sendMsg(op iwarp.Opcode, payload []byte, inv uint32) {
	qn := op.QN()
	p.send(iwarp.Header{Opcode: op, Last: true, QN: qn, MSN: p.msn[qn], InvalidateSTag: inv}, payload)
	p.msn[qn]++
}

func (p *rawPeer) readRequest(rr iwarp.ReadRequest) {
	p.sendMsg(iwarp.OpReadRequest, rr.Append(nil), 0)
}

// serverUnderTest is a provider endpoint accepting one raw peer.
type serverUnderTest struct {
	*endpoint
	ln  verbs.Listener
	buf []byte
	mr  verbs.MR // 4 KiB, all remote rights
	ro  verbs.MR // 4 KiB, RemoteRead only
}

func newServerUnderTest(t *testing.T, cfg Config) *serverUnderTest {
	t.Helper()
	dev := New(cfg)
	ln, err := dev.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &serverUnderTest{endpoint: newEndpoint(t, dev, 8), ln: ln}
	s.buf = make([]byte, 4096)
	s.mr = s.reg(t, s.buf, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	s.ro = s.reg(t, make([]byte, 4096), verbs.AccessRemoteRead)
	t.Cleanup(func() { s.qp.Close(); s.cq.Close(); ln.Close() })
	return s
}

// accept accepts the next connection request in the background.
func (s *serverUnderTest) accept(t *testing.T, p verbs.ConnParams) <-chan error {
	ch := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cr, err := s.ln.Accept(ctx)
		if err != nil {
			ch <- err
			return
		}
		_, err = cr.Accept(ctx, s.qp, p)
		ch <- err
	}()
	return ch
}

// connectRaw connects a raw initiator to s and returns it.
func (s *serverUnderTest) connectRaw(t *testing.T, crc bool, p verbs.ConnParams) *rawPeer {
	t.Helper()
	ch := s.accept(t, p)
	ord := uint16(8)
	if p.IRD > 0 {
		ord = uint16(p.IRD) // else our relaxed negotiation raises IRD to it
	}
	peer, _ := rawDial(t, s.ln.Addr().String(), enhancedRequest(crc, 8, ord, nil))
	if err := <-ch; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	return peer
}

// connectRawFirst is connectRaw followed by the initiator's first FPDU, a
// zero-length RDMA Write as siw's RTR: a responder sends nothing before it, so
// a test of what s's QP sends starts here.
func (s *serverUnderTest) connectRawFirst(t *testing.T, crc bool) *rawPeer {
	t.Helper()
	p := s.connectRaw(t, crc, verbs.ConnParams{})
	p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: 1}, nil)
	return p
}

// checkQPFailed checks the QP is in the error state because of a Terminate
// with code, and that outstanding receives were flushed.
func (s *serverUnderTest) checkQPFailed(t *testing.T, code iwarp.TermCode, received bool) {
	t.Helper()
	select {
	case <-s.qp.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("QP did not enter the error state")
	}
	if st := s.qp.State(); st != verbs.StateError {
		t.Fatalf("QP state %v, want Error", st)
	}
	var te *verbs.TerminateError
	if !errors.As(s.qp.Err(), &te) {
		t.Fatalf("QP error %v is not a TerminateError", s.qp.Err())
	}
	if te.Received != received || te.Layer != uint8(code.Layer()) || te.EType != code.EType() || te.ECode != code.ECode() {
		t.Fatalf("QP error %+v, want code %v received=%v", te, code, received)
	}
	if !errors.Is(s.qp.Err(), verbs.ErrFlushed) {
		t.Errorf("QP error does not wrap ErrFlushed")
	}
}

func TestTerminatePaths(t *testing.T) {
	type tc struct {
		name   string
		crc    bool
		recvs  int // receives posted before the bad frame (16 bytes each)
		ird    int
		bad    func(s *serverUnderTest, p *rawPeer)
		code   iwarp.TermCode
		recvSt verbs.Status // status of the first posted receive
	}
	cases := []tc{
		{name: "WriteInvalidSTag", bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey() ^ 0xff00, TO: s.mr.Addr()}, []byte("data"))
		}, code: iwarp.TermDDPTaggedInvalidSTag},
		{name: "WriteStaleKey", bad: func(s *serverUnderTest, p *rawPeer) {
			old := s.mr.RKey()
			if err := s.mr.Reregister(verbs.AccessRemoteWrite | verbs.AccessLocalWrite); err != nil {
				t.Fatal(err)
			}
			if s.mr.RKey() == old || s.mr.RKey()>>8 != old>>8 {
				t.Errorf("Reregister: STag %#x -> %#x, want same index, new key", old, s.mr.RKey())
			}
			p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: old, TO: s.mr.Addr()}, []byte("data"))
		}, code: iwarp.TermDDPTaggedInvalidSTag},
		{name: "WriteInvalidated", bad: func(s *serverUnderTest, p *rawPeer) {
			if err := s.mr.Invalidate(); err != nil {
				t.Fatal(err)
			}
			p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr()}, []byte("data"))
		}, code: iwarp.TermDDPTaggedInvalidSTag},
		{name: "WriteBounds", bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr() + 4094}, []byte("data"))
		}, code: iwarp.TermDDPTaggedBaseBounds},
		{name: "WriteBelowBase", bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr() - 1}, []byte("data"))
		}, code: iwarp.TermDDPTaggedBaseBounds},
		{name: "WriteAccessRights", bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.ro.RKey(), TO: s.ro.Addr()}, []byte("data"))
		}, code: iwarp.TermRDMAPAccessRights},
		{name: "ReadInvalidSTag", bad: func(s *serverUnderTest, p *rawPeer) {
			p.readRequest(iwarp.ReadRequest{SinkSTag: 0x100, Size: 4, SrcSTag: 0x7777700, SrcTO: 0})
		}, code: iwarp.TermRDMAPInvalidSTag},
		{name: "ReadBounds", bad: func(s *serverUnderTest, p *rawPeer) {
			p.readRequest(iwarp.ReadRequest{SinkSTag: 0x100, Size: 4097, SrcSTag: s.mr.RKey(), SrcTO: s.mr.Addr()})
		}, code: iwarp.TermRDMAPBaseBounds},
		{name: "ReadAccessRights", bad: func(s *serverUnderTest, p *rawPeer) {
			p.readRequest(iwarp.ReadRequest{SinkSTag: 0x100, Size: 4, SrcSTag: s.ro.RKey() /* has RemoteRead */, SrcTO: s.ro.Addr()})
			p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.ro.RKey(), TO: s.ro.Addr()}, []byte("x"))
		}, code: iwarp.TermRDMAPAccessRights},
		{name: "ReadWithPayload", bad: func(s *serverUnderTest, p *rawPeer) {
			rr := iwarp.ReadRequest{SinkSTag: 0x100, Size: 4, SrcSTag: s.mr.RKey(), SrcTO: s.mr.Addr()}
			p.send(iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: 1, MSN: 1}, append(rr.Append(nil), 1, 2, 3, 4))
		}, code: iwarp.TermRDMAPCatastrophicStream},
		{name: "ReadMSN", bad: func(s *serverUnderTest, p *rawPeer) {
			rr := iwarp.ReadRequest{SinkSTag: 0x100, Size: 4, SrcSTag: s.mr.RKey(), SrcTO: s.mr.Addr()}
			p.send(iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: 1, MSN: 5}, rr.Append(nil))
		}, code: iwarp.TermDDPUntaggedMSNRange},
		{name: "IRDExceeded", ird: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			// Three reads against IRD 1, sent in one write, and not read
			// by us: the first response cannot drain before the others
			// arrive.
			big := s.reg(t, make([]byte, 32<<20), verbs.AccessRemoteRead)
			var b []byte
			for i := uint32(1); i <= 3; i++ {
				rr := iwarp.ReadRequest{SinkSTag: 0x100, Size: 32 << 20, SrcSTag: big.RKey(), SrcTO: big.Addr()}
				h := iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: 1, MSN: i}
				b, _ = iwarp.AppendFPDU(b, &h, rr.Append(nil), p.crc)
			}
			p.write(b)
		}, code: iwarp.TermRDMAPCatastrophicStream},
		{name: "NoReceive", bad: func(s *serverUnderTest, p *rawPeer) {
			p.sendMsg(iwarp.OpSend, []byte("hello"), 0)
		}, code: iwarp.TermDDPUntaggedMSNNoBuffer},
		{name: "ReceiveTooSmall", recvs: 2, bad: func(s *serverUnderTest, p *rawPeer) {
			p.sendMsg(iwarp.OpSend, make([]byte, 17), 0)
		}, code: iwarp.TermDDPUntaggedMessageTooLong, recvSt: verbs.StatusLocalLength},
		{name: "InvalidQN", recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			h := iwarp.Header{Opcode: iwarp.OpSend, Last: true, MSN: 1}
			b, _ := iwarp.AppendFPDU(nil, &h, []byte("x"), p.crc)
			b[11] = 5 // QN field, offset 8..11
			if p.crc {
				t.Skip()
			}
			p.write(b)
		}, code: iwarp.TermDDPUntaggedInvalidQN, recvSt: verbs.StatusFlushed},
		{name: "SendMSN", recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpSend, Last: true, QN: 0, MSN: 2}, []byte("x"))
		}, code: iwarp.TermDDPUntaggedMSNRange, recvSt: verbs.StatusFlushed},
		{name: "SendMO", recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpSend, Last: true, QN: 0, MSN: 1, MO: 4}, []byte("x"))
		}, code: iwarp.TermDDPUntaggedInvalidMO, recvSt: verbs.StatusFlushed},
		{name: "SendMOGap", recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpSend, Last: false, QN: 0, MSN: 1, MO: 0}, []byte("abcd"))
			p.send(iwarp.Header{Opcode: iwarp.OpSend, Last: true, QN: 0, MSN: 1, MO: 8}, []byte("x"))
		}, code: iwarp.TermDDPUntaggedInvalidMO, recvSt: verbs.StatusFlushed},
		{name: "CRC", crc: true, recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			h := iwarp.Header{Opcode: iwarp.OpSend, Last: true, MSN: 1}
			b, _ := iwarp.AppendFPDU(nil, &h, []byte("abc"), true)
			b[len(b)-1] ^= 0x55
			p.write(b)
		}, code: iwarp.TermLLPCRCError, recvSt: verbs.StatusFlushed},
		{name: "SendInvalidateBadSTag", recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			p.sendMsg(iwarp.OpSendInvalidate, []byte("x"), 0x12345600)
		}, code: iwarp.TermRDMAPOpCannotInvalidate, recvSt: verbs.StatusRemoteInvalidate},
		{name: "UnknownOpcode", recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			p.write([]byte{0, 18, 0x41, 0x48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
		}, code: iwarp.TermRDMAPUnexpectedOpcode, recvSt: verbs.StatusFlushed},
		{name: "DDPVersion", recvs: 1, bad: func(s *serverUnderTest, p *rawPeer) {
			p.write([]byte{0, 18, 0x42, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
		}, code: iwarp.TermDDPUntaggedInvalidVersion, recvSt: verbs.StatusFlushed},
		{name: "UnexpectedReadResponse", bad: func(s *serverUnderTest, p *rawPeer) {
			p.send(iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr()}, []byte("x"))
		}, code: iwarp.TermRDMAPCatastrophicStream},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			var rbuf []byte
			if c.recvs > 0 {
				rbuf = make([]byte, 16*c.recvs)
				rmr := s.reg(t, rbuf, verbs.AccessLocalWrite)
				for i := 0; i < c.recvs; i++ {
					if err := s.qp.PostRecv(&verbs.RecvWR{ID: uint64(i + 1), SGL: []verbs.SGE{{MR: rmr, Offset: 16 * i, Length: 16}}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			p := s.connectRaw(t, c.crc, verbs.ConnParams{IRD: c.ird})
			c.bad(s, p)
			p.expectTerminate(c.code)
			s.checkQPFailed(t, c.code, false)
			for i := 0; i < c.recvs; i++ {
				want := verbs.StatusFlushed
				if i == 0 && c.recvSt != 0 {
					want = c.recvSt
				}
				wc := s.expect(t, uint64(i+1), verbs.OpcodeRecv, want)
				if wc.Err == nil {
					t.Errorf("receive %d completed with %v but no Err", i+1, wc.Status)
				}
			}
			// Posting after the error flushes at once.
			if err := s.qp.PostRecv(&verbs.RecvWR{ID: 99}); err != nil {
				t.Fatal(err)
			}
			s.expect(t, 99, verbs.OpcodeRecv, verbs.StatusFlushed)
		})
	}
}

// TestHostileSendOpcodeChange: every DDP segment of an untagged message
// carries the message's RDMAP header (RFC 5040 §4), so its opcode may not
// change from one segment to the next. A peer that starts a Send and ends it
// as a Send with Invalidate (or the other way round, or as a Send with SE)
// gets the Terminate a change of opcode within a tagged message gets
// (RDMAP catastrophic error localized to the stream, 0/2/0x07), the receive
// is flushed, and the STag named by any segment stays valid. Before, the
// last segment's opcode decided: a message begun as a plain Send could
// invalidate an STag.
func TestHostileSendOpcodeChange(t *testing.T) {
	for _, c := range []struct {
		name        string
		first, last iwarp.Opcode
	}{
		{"SendThenSendInvalidate", iwarp.OpSend, iwarp.OpSendInvalidate},
		{"SendInvalidateThenSend", iwarp.OpSendInvalidate, iwarp.OpSend},
		{"SendThenSendSE", iwarp.OpSend, iwarp.OpSendSE},
		{"SendSEInvalidateThenSendInvalidate", iwarp.OpSendSEInvalidate, iwarp.OpSendInvalidate},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			rmr := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
			if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
				t.Fatal(err)
			}
			victim := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			p := s.connectRaw(t, false, verbs.ConnParams{})
			p.send(iwarp.Header{Opcode: c.first, QN: 0, MSN: 1, MO: 0, InvalidateSTag: victim.RKey()}, []byte("abcd"))
			p.send(iwarp.Header{Opcode: c.last, Last: true, QN: 0, MSN: 1, MO: 4, InvalidateSTag: victim.RKey()}, []byte("efgh"))
			s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusFlushed)
			if !victim.Valid() {
				t.Errorf("STag %#x invalidated by a message whose opcode changed", victim.RKey())
			}
			p.expectTerminate(iwarp.TermRDMAPCatastrophicStream)
			s.checkQPFailed(t, iwarp.TermRDMAPCatastrophicStream, false)
		})
	}
}

// TestSendInvalidateSTagFromFirstSegment: the STag a Send with Invalidate
// invalidates is the one its first segment names, as siw takes it (the
// receive context keeps it from the first segment); a different STag in a
// later segment is neither invalidated nor reported.
func TestSendInvalidateSTagFromFirstSegment(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	rmr := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
	if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
		t.Fatal(err)
	}
	named := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	other := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	p := s.connectRaw(t, false, verbs.ConnParams{})
	p.send(iwarp.Header{Opcode: iwarp.OpSendInvalidate, QN: 0, MSN: 1, MO: 0, InvalidateSTag: named.RKey()}, []byte("abcd"))
	p.send(iwarp.Header{Opcode: iwarp.OpSendInvalidate, Last: true, QN: 0, MSN: 1, MO: 4, InvalidateSTag: other.RKey()}, []byte("efgh"))
	wc := s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
	if wc.Flags&verbs.WithInvalidate == 0 || wc.InvalidatedSTag != named.RKey() || wc.ByteLen != 8 {
		t.Errorf("completion flags %v STag %#x length %d, want WithInvalidate of %#x, 8 bytes", wc.Flags, wc.InvalidatedSTag, wc.ByteLen, named.RKey())
	}
	if named.Valid() || !other.Valid() {
		t.Errorf("first segment's STag valid=%v, last segment's valid=%v; want only the first invalidated", named.Valid(), other.Valid())
	}
}

// TestTerminateSurvivesClose: a consumer that closes a QP as soon as it
// failed on the peer's violation does not cut its Terminate off: the peer
// still gets it (Close waits for the writer to put it on the wire). Linux's
// NFS client in the lab (linux-client-terminate) once saw only the close.
func TestTerminateSurvivesClose(t *testing.T) {
	for i := 0; i < 20; i++ {
		s := newServerUnderTest(t, Config{})
		p := s.connectRaw(t, false, verbs.ConnParams{})
		p.sendMsg(iwarp.OpSend, []byte("hello"), 0) // no receive posted
		select {
		case <-s.qp.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("QP did not fail")
		}
		s.qp.Close()
		p.expectTerminate(iwarp.TermDDPUntaggedMSNNoBuffer)
	}
}

// TestReceivedTerminate: a Terminate from the peer puts the QP in error,
// reports the peer's code, and flushes.
func TestReceivedTerminate(t *testing.T) {
	for _, siwOrder := range []bool{false, true} {
		checkGoroutines(t)
		s := newServerUnderTest(t, Config{})
		rmr := s.reg(t, make([]byte, 16), verbs.AccessLocalWrite)
		if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 16}}}); err != nil {
			t.Fatal(err)
		}
		p := s.connectRaw(t, false, verbs.ConnParams{})
		term := iwarp.NewTerminate(iwarp.TermDDPTaggedBaseBounds, nil)
		b, err := iwarp.AppendTerminateFPDU(nil, &term, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		if siwOrder {
			b[iwarp.UntaggedHeaderLen] = 0x11 // siw x86: etype<<4 | layer
		}
		p.write(b)
		s.checkQPFailed(t, iwarp.TermDDPTaggedBaseBounds, true)
		wc := s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusFlushed)
		var te *verbs.TerminateError
		if !errors.As(wc.Err, &te) || !te.Received {
			t.Fatalf("flushed completion Err = %v, want the received Terminate", wc.Err)
		}
		if f := p.next(); f != nil {
			t.Fatalf("provider answered a Terminate with %v", f.Header.Opcode)
		}
	}
}

// TestReceivedTerminateMalformed: a malformed Terminate from the peer ends
// the stream like a well-formed one (TestReceivedTerminate) and is not
// answered either. One whose header copy is truncated (D set, too few
// bytes) reports the layer, error type and code of its Terminate Control,
// in either order; one whose Terminate Control cannot be read (body under 4
// bytes, or L clear) reports termUnread. Before, all of them were answered
// with a Terminate of our own and the QP error said "Terminate sent". (A
// segment whose DDP header is malformed is still answered, whatever its
// opcode: TestHostileFPDUShortULPDU.)
func TestReceivedTerminateMalformed(t *testing.T) {
	for _, c := range []struct {
		name   string
		last   bool
		body   []byte
		code   iwarp.TermCode
		unread bool // the Terminate Control is not read: termUnread
	}{
		// DDP tagged base or bounds (1/1/0x01), M and D, 2 of 16 header bytes.
		{"TruncatedHeaderCopy", true, []byte{0x11, 0x01, 0xc0, 0x00, 0x00, 0x10}, iwarp.TermDDPTaggedBaseBounds, false},
		// DDP untagged invalid QN (1/2/0x01) in siw's order, M and D, 2 bytes.
		{"TruncatedHeaderCopySiwOrder", true, []byte{0x21, 0x01, 0x03, 0x00, 0x00, 0x16}, iwarp.TermDDPUntaggedInvalidQN, false},
		{"NoTerminateControl", true, []byte{0x11, 0x01}, 0, true},
		{"NotLast", false, []byte{0x20, 0x06, 0x00, 0x00}, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			rmr := s.reg(t, make([]byte, 16), verbs.AccessLocalWrite)
			if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 16}}}); err != nil {
				t.Fatal(err)
			}
			p := s.connectRaw(t, false, verbs.ConnParams{})
			p.send(iwarp.Header{Opcode: iwarp.OpTerminate, Last: c.last, QN: iwarp.QNTerminate, MSN: 1}, c.body)
			p.c.(*net.TCPConn).CloseWrite() // the provider's drain ends at once
			select {
			case <-s.qp.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("QP did not fail")
			}
			var te *verbs.TerminateError
			if !errors.As(s.qp.Err(), &te) || !te.Received {
				t.Fatalf("QP error %v, want a received Terminate", s.qp.Err())
			}
			want := [3]uint8{uint8(c.code.Layer()), c.code.EType(), c.code.ECode()}
			if c.unread {
				want = [3]uint8{termUnread, termUnread, termUnread}
			}
			if got := [3]uint8{te.Layer, te.EType, te.ECode}; got != want {
				t.Errorf("QP error %v: layer/etype/ecode %v, want %v", te, got, want)
			}
			s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusFlushed)
			if f := p.next(); f != nil {
				t.Fatalf("provider answered a malformed Terminate with %v", f.Header.Opcode)
			}
			st := s.dev.Stats()
			if st.TerminatesSent != (TerminateCounts{}) {
				t.Errorf("Terminates sent %+v, want none", st.TerminatesSent)
			}
			wantRecv := TerminateCounts{DDP: 1}
			if c.unread {
				wantRecv = TerminateCounts{Other: 1}
			}
			if st.TerminatesReceived != wantRecv {
				t.Errorf("Terminates received %+v, want %+v", st.TerminatesReceived, wantRecv)
			}
		})
	}
}

// TestSiwMPARequest feeds the exact MPA Request Linux xprtrdma over siw
// sends (lab sample) and checks the reply is what Linux svcrdma would send,
// given our IRD default.
func TestSiwMPARequest(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	req := []byte("MPA ID Req Frame")
	req = append(req, 0x10, 0x02, 0x00, 0x0c, 0x00, 0x80, 0x00, 0x00, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03)
	ch := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cr, err := s.ln.Accept(ctx)
		if err != nil {
			ch <- err
			return
		}
		if cr.IRD() != 128 || cr.ORD() != 0 || !bytes.Equal(cr.PrivateData(), []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}) {
			t.Errorf("request: IRD %d ORD %d pd % x", cr.IRD(), cr.ORD(), cr.PrivateData())
		}
		_, err = cr.Accept(ctx, s.qp, verbs.ConnParams{IRD: 1, ORD: 128, PrivateData: []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3}})
		ch <- err
	}()
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(req)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 32)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
	want := []byte("MPA ID Rep Frame")
	want = append(want, 0x10, 0x02, 0x00, 0x0c, 0x00, 0x01, 0x00, 0x80, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03)
	if !bytes.Equal(got, want) {
		t.Fatalf("reply\n% x\nwant\n% x", got, want)
	}
	// Nothing follows the reply until the initiator sends its first FPDU.
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := c.Read(got); n != 0 || err == nil {
		t.Fatalf("responder sent %d bytes after its reply", n)
	}
}

// TestMPAInitiatorNotNegotiated: an IRD or ORD of 0x3FFF in the MPA Reply
// means "not negotiated" (RFC 6581 §9.1): the initiator leaves its IRD
// unchanged on a responder ORD of 0x3FFF and its ORD on a responder IRD of
// 0x3FFF, and connects; the value not 0x3FFF is negotiated as usual. Before,
// a responder ORD of 0x3FFF was taken for a Read Request depth beyond our
// maximum IRD and refused with an "insufficient IRD" Terminate.
func TestMPAInitiatorNotNegotiated(t *testing.T) {
	for _, c := range []struct {
		name, reply string
		ird, ord    int // the initiator's, after the Reply; it offered IRD 4, ORD 8
	}{
		{"ORD", "REP | 10 02 | 0004 | 0002 3fff", 4, 2},
		{"IRD", "REP | 10 02 | 0004 | 3fff 0006", 6, 8},
		{"Both", "REP | 10 02 | 0004 | 3fff 3fff", 4, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			addr, got := replyingResponder(t, c.reply, func(s net.Conn) []byte {
				// Nothing may follow: no Terminate (nor, client-server
				// model with SiwKick off, any FPDU).
				s.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				var b [256]byte
				n, _ := s.Read(b[:])
				return b[:n]
			})
			dev := New(Config{SiwKick: -1})
			e := newEndpoint(t, dev, 2)
			defer e.close(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			info, err := dev.Dial(ctx, addr, e.qp, verbs.ConnParams{IRD: 4, ORD: 8})
			rest := <-got
			if err != nil {
				t.Fatalf("Dial: %v (initiator sent %x)", err, rest)
			}
			if len(rest) > 0 {
				t.Errorf("initiator sent %x after the Reply", rest)
			}
			if info.IRD != c.ird || info.ORD != c.ord {
				t.Errorf("initiator IRD %d ORD %d, want %d %d", info.IRD, info.ORD, c.ird, c.ord)
			}
		})
	}
}

// TestMPAResponderNotNegotiated: the responder answers an initiator ORD of
// 0x3FFF ("not negotiated", RFC 6581 §9.1) by keeping its IRD and replying
// IRD = 0x3FFF, and an initiator IRD of 0x3FFF by keeping its ORD and
// replying ORD = 0x3FFF; the other value is negotiated as usual. Before, the
// responder raised its IRD to its maximum and replied with its own values.
func TestMPAResponderNotNegotiated(t *testing.T) {
	for _, c := range []struct {
		name           string
		reqIRD, reqORD uint16
		repIRD, repORD uint16
		ird, ord       int // the responder's; it accepts with IRD 4, ORD 4
	}{
		{"Both", 0x3fff, 0x3fff, 0x3fff, 0x3fff, 4, 4},
		{"ORD", 8, 0x3fff, 0x3fff, 4, 4, 4},
		{"IRD", 0x3fff, 8, 8, 0x3fff, 8, 4},
		{"Neither", 2, 2, 4, 2, 4, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			ch := make(chan *verbs.ConnInfo, 1)
			go func() {
				defer close(ch)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				cr, err := s.ln.Accept(ctx)
				if err != nil {
					t.Errorf("Accept: %v", err)
					return
				}
				if cr.IRD() != int(c.reqIRD) || cr.ORD() != int(c.reqORD) {
					t.Errorf("request IRD %#x ORD %#x, want the initiator's %#x %#x", cr.IRD(), cr.ORD(), c.reqIRD, c.reqORD)
				}
				info, err := cr.Accept(ctx, s.qp, verbs.ConnParams{IRD: 4, ORD: 4})
				if err != nil {
					t.Errorf("Accept: %v", err)
					return
				}
				ch <- info
			}()
			p, rep := rawDial(t, s.ln.Addr().String(), enhancedRequest(false, c.reqIRD, c.reqORD, nil))
			defer p.c.Close()
			info := <-ch
			if info == nil {
				t.FailNow()
			}
			if rep.IRD != c.repIRD || rep.ORD != c.repORD {
				t.Errorf("reply IRD %#x ORD %#x, want %#x %#x", rep.IRD, rep.ORD, c.repIRD, c.repORD)
			}
			if info.IRD != c.ird || info.ORD != c.ord {
				t.Errorf("responder IRD %d ORD %d, want %d %d", info.IRD, info.ORD, c.ird, c.ord)
			}
		})
	}
}

// TestInvalidateDuringPeerStall: a peer that stalls in the middle of an
// RDMA Write, or stops reading in the middle of a Read Response, must not
// block Invalidate; once invalidated, the rest of the access is refused with
// a Terminate.
func TestInvalidateDuringPeerStall(t *testing.T) {
	// The rest of the payload comes through the read-ahead buffer (4000
	// bytes) or is read straight into the region (60000).
	for _, size := range []int{4000, 60000} {
		t.Run(fmt.Sprintf("Write%d", size), func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			buf := make([]byte, size)
			mr := s.reg(t, buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			p := s.connectRaw(t, false, verbs.ConnParams{})
			h := iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: mr.RKey(), TO: mr.Addr()}
			fpdu, _ := iwarp.AppendFPDU(nil, &h, bytes.Repeat([]byte{0xff}, size), false)
			const first = 1000
			p.write(fpdu[:first]) // header and part of the payload, then stall
			time.Sleep(20 * time.Millisecond)
			invalidated := make(chan error, 1)
			go func() { invalidated <- mr.Invalidate() }()
			select {
			case err := <-invalidated:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Invalidate blocked behind a stalled peer")
			}
			p.write(fpdu[first:])
			p.expectTerminate(iwarp.TermDDPTaggedInvalidSTag)
			s.checkQPFailed(t, iwarp.TermDDPTaggedInvalidSTag, false)
			// Only what arrived before the invalidation may have been placed.
			if i := bytes.IndexByte(buf[first-iwarp.TaggedHeaderLen:], 0xff); i >= 0 {
				t.Fatalf("byte %d of the region was written after Invalidate", first-iwarp.TaggedHeaderLen+i)
			}
		})
	}
	t.Run("ReadResponse", func(t *testing.T) {
		checkGoroutines(t)
		s := newServerUnderTest(t, Config{})
		big := s.reg(t, make([]byte, 16<<20), verbs.AccessRemoteRead)
		p := s.connectRaw(t, false, verbs.ConnParams{})
		p.readRequest(iwarp.ReadRequest{SinkSTag: 0x100, Size: 16 << 20, SrcSTag: big.RKey(), SrcTO: big.Addr()})
		time.Sleep(50 * time.Millisecond) // the response fills the socket buffers
		invalidated := make(chan error, 1)
		go func() { invalidated <- big.Invalidate() }()
		select {
		case err := <-invalidated:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Invalidate blocked behind a peer that does not read")
		}
		p.expectTerminate(iwarp.TermRDMAPInvalidSTag)
		s.checkQPFailed(t, iwarp.TermRDMAPInvalidSTag, false)
	})
}

// TestSiwKick: against a responder that stays silent after our first FPDU
// (as a Linux 6.1 siw responder does when that FPDU hit its accept race),
// the initiator sends one zero-length RDMA Write.
func TestSiwKick(t *testing.T) {
	checkGoroutines(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dev := New(Config{SiwKick: 20 * time.Millisecond})
	e := newEndpoint(t, dev, 4)
	defer e.close(t)
	done := make(chan error, 1)
	go func() {
		_, err := dev.Dial(context.Background(), ln.Addr().String(), e.qp, verbs.ConnParams{})
		done <- err
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var buf [iwarp.MaxMPAFrameLen]byte
	if _, err := iwarp.ReadMPAFrame(c, buf[:], iwarp.MPARequest); err != nil {
		t.Fatal(err)
	}
	rep := iwarp.MPAFrame{Kind: iwarp.MPAReply, Revision: 2, Flags: iwarp.FlagEnhanced, IRD: 1, ORD: 1}
	b, _ := rep.Append(nil)
	c.Write(b)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	smr := e.reg(t, []byte("call"), 0)
	e.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Length: 4}}})
	p := &rawPeer{t: t, c: c, msn: [3]uint32{1, 1, 1}}
	if f := p.next(); f.Header.Opcode != iwarp.OpSend || string(f.Payload) != "call" {
		t.Fatalf("first FPDU %+v", f.Header)
	}
	f := p.next()
	if f.Header.Opcode != iwarp.OpWrite || len(f.Payload) != 0 || f.Header.STag != 1 || !f.Header.Last {
		t.Fatalf("kick %+v", f.Header)
	}
}

// TestLargestFPDU: FPDUs with the largest legal ULPDU_Length (65535), with
// a pad, are reassembled for Send and RDMA Write, with and without CRC.
func TestLargestFPDU(t *testing.T) {
	for _, crc := range []bool{false, true} {
		checkGoroutines(t)
		s := newServerUnderTest(t, Config{})
		big := make([]byte, 1<<18)
		bmr := s.reg(t, big, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: bmr, Length: 1 << 16}}}); err != nil {
			t.Fatal(err)
		}
		if err := s.qp.PostRecv(&verbs.RecvWR{ID: 2, SGL: []verbs.SGE{{MR: bmr, Offset: 1 << 16, Length: 16}}}); err != nil {
			t.Fatal(err)
		}
		p := s.connectRaw(t, crc, verbs.ConnParams{})
		sendPay := make([]byte, iwarp.MaxULPDULength+iwarp.MPALenFieldLen-iwarp.UntaggedHeaderLen)
		fillPattern(sendPay, 3)
		p.sendMsg(iwarp.OpSend, sendPay, 0)
		wc := s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
		if wc.ByteLen != len(sendPay) || !bytes.Equal(big[:len(sendPay)], sendPay) {
			t.Fatalf("Send of %d bytes: got %d, mismatch", len(sendPay), wc.ByteLen)
		}
		writePay := make([]byte, iwarp.MaxULPDULength+iwarp.MPALenFieldLen-iwarp.TaggedHeaderLen)
		fillPattern(writePay, 5)
		p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: bmr.RKey(), TO: bmr.Addr() + 1<<16 + 16}, writePay)
		p.sendMsg(iwarp.OpSend, nil, 0) // orders our view after the Write
		s.expect(t, 2, verbs.OpcodeRecv, verbs.StatusSuccess)
		if !bytes.Equal(big[1<<16+16:1<<16+16+len(writePay)], writePay) {
			t.Fatal("Write mismatch")
		}
	}
}

// TestReadSourceInvalidatedWhileQueued: a Read Request accepted while its
// source STag was valid, whose source is invalidated before its turn comes,
// is answered with a Terminate (invalid STag) carrying a copy of the Read
// Request, not with data.
func TestReadSourceInvalidatedWhileQueued(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	big := s.reg(t, make([]byte, 16<<20), verbs.AccessRemoteRead)
	p := s.connectRaw(t, false, verbs.ConnParams{})
	rr1 := iwarp.ReadRequest{SinkSTag: 0x100, Size: 16 << 20, SrcSTag: big.RKey(), SrcTO: big.Addr()}
	rr2 := iwarp.ReadRequest{SinkSTag: 0x200, SinkTO: 8, Size: 64, SrcSTag: s.mr.RKey(), SrcTO: s.mr.Addr()}
	p.readRequest(rr1) // its response blocks the writer: we do not read yet
	p.readRequest(rr2)
	time.Sleep(50 * time.Millisecond)
	if err := s.mr.Invalidate(); err != nil {
		t.Fatal(err)
	}
	term := p.expectTerminate(iwarp.TermRDMAPInvalidSTag)
	if !term.HasRDMAPHeader || !bytes.Equal(term.RDMAPHeader(), rr2.Append(nil)) {
		t.Fatalf("Terminate RDMAP header copy % x, want the second Read Request", term.RDMAPHeader())
	}
	s.checkQPFailed(t, iwarp.TermRDMAPInvalidSTag, false)
}

// TestFPDUSizeFollowsMSS: with Config.MaxFPDU unset, the FPDUs of a large
// message are sized to the connection's TCP MSS at the time the message is
// sent, not at connect time. On loopback Linux's MSS starts at half the
// initial window and grows once the window opens (32741 -> 65483), so a
// long transfer sees it change; where it does not change the test skips.
func TestFPDUSizeFollowsMSS(t *testing.T) {
	s := newServerUnderTest(t, Config{})
	p := s.connectRawFirst(t, false)
	q := s.qp.(*queuePair)
	const size = 1 << 20
	src := make([]byte, size)
	fillPattern(src, 7)
	smr := s.reg(t, src, verbs.AccessLocalWrite)
	// write sends one 1 MiB RDMA Write and returns the payload size of its
	// first FPDU, checking the data and the segmentation on the way.
	write := func(id uint64) int {
		t.Helper()
		if err := s.qp.PostSend(&verbs.SendWR{ID: id, Op: verbs.OpWrite, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: smr, Length: size}}, RemoteSTag: 0x1234, RemoteTO: 0}); err != nil {
			t.Fatal(err)
		}
		first, got := 0, 0
		for {
			f := p.next()
			if f == nil {
				t.Fatal("raw peer: connection closed")
			}
			if f.Header.Opcode != iwarp.OpWrite || f.Header.TO != uint64(got) {
				t.Fatalf("FPDU %v at TO %d, want an RDMA Write at %d", f.Header.Opcode, f.Header.TO, got)
			}
			if !bytes.Equal(f.Payload, src[got:got+len(f.Payload)]) {
				t.Fatalf("RDMA Write payload at %d differs", got)
			}
			if first == 0 {
				first = len(f.Payload)
			} else if !f.Header.Last && len(f.Payload) != first {
				t.Fatalf("FPDU at %d carries %d bytes, the first %d", got, len(f.Payload), first)
			}
			got += len(f.Payload)
			if f.Header.Last {
				break
			}
		}
		if got != size {
			t.Fatalf("RDMA Write of %d bytes arrived as %d", size, got)
		}
		s.expect(t, id, verbs.OpcodeWrite, verbs.StatusSuccess)
		return first
	}
	initial := tcpMSS(q.conn)
	if fpduFromMSS(initial) == 0 {
		t.Skip("TCP_MAXSEG not available")
	}
	firstPay := write(0)
	if want := iwarp.MaxPayload(fpduFromMSS(initial), true); firstPay != want {
		t.Logf("first message: FPDU payload %d, MSS %d gives %d (the MSS changed meanwhile)", firstPay, initial, want)
	}
	// Find a message sent while the MSS, changed since connect, stayed
	// the same from before its posting until after its completion.
	mss, pay, found := initial, 0, false
	for i := uint64(1); i <= 64 && !found; i++ {
		before := tcpMSS(q.conn)
		pay = write(i)
		mss = tcpMSS(q.conn)
		found = mss == before && mss != initial
	}
	if !found {
		t.Skipf("the TCP MSS (%d at connect, %d now) did not settle on a new value over 64 MiB", initial, mss)
	}
	if want := iwarp.MaxPayload(fpduFromMSS(mss), true); pay != want {
		t.Fatalf("MSS %d (at connect %d): FPDUs carry %d payload bytes, want %d", mss, initial, pay, want)
	}
	t.Logf("MSS %d -> %d: FPDU payload %d -> %d bytes", initial, mss, firstPay, pay)
}
