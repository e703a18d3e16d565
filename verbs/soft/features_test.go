package soft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

func TestSendWithInvalidate(t *testing.T) {
	checkGoroutines(t)
	// P2P: the server (responder) sends first, which RFC 5044 classic mode
	// would not allow before the client's first FPDU.
	cli, srv := connectPair(t, pairConfig{client: Config{P2P: RTRWrite}})
	// The client exposes a buffer (as an RPC client exposes a write chunk)
	// and the server invalidates it with its reply.
	chunk := make([]byte, 128)
	chunkMR := cli.reg(t, chunk, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	rbuf := make([]byte, 64)
	rmr := cli.reg(t, rbuf, verbs.AccessLocalWrite)
	for i := uint64(1); i <= 2; i++ {
		if err := cli.qp.PostRecv(&verbs.RecvWR{ID: i, SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
			t.Fatal(err)
		}
	}
	payload := []byte("reply")
	smr := srv.reg(t, append([]byte(nil), payload...), 0)
	stag := chunkMR.RKey()
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpSendInv, InvalidateSTag: stag, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: smr, Length: len(payload)}}}); err != nil {
		t.Fatal(err)
	}
	srv.expect(t, 1, verbs.OpcodeSend, verbs.StatusSuccess)
	wc := cli.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
	if wc.Flags != verbs.WithInvalidate || wc.InvalidatedSTag != stag {
		t.Fatalf("completion flags %v STag %#x, want WithInvalidate %#x", wc.Flags, wc.InvalidatedSTag, stag)
	}
	if chunkMR.Valid() {
		t.Fatal("STag still valid after Send with Invalidate completed")
	}
	// Re-registering gives a new key and makes it usable again.
	if err := chunkMR.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	if chunkMR.RKey() == stag {
		t.Fatal("Reregister kept the STag")
	}
	// SE + Invalidate.
	stag = chunkMR.RKey()
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSendInv, InvalidateSTag: stag, Flags: verbs.Signaled | verbs.Solicited,
		SGL: []verbs.SGE{{MR: smr, Length: len(payload)}}}); err != nil {
		t.Fatal(err)
	}
	srv.expect(t, 2, verbs.OpcodeSend, verbs.StatusSuccess)
	wc = cli.expect(t, 2, verbs.OpcodeRecv, verbs.StatusSuccess)
	if wc.Flags != verbs.WithInvalidate|verbs.SolicitedEvent || wc.InvalidatedSTag != stag || chunkMR.Valid() {
		t.Fatalf("SE+Inv: flags %v STag %#x valid %v", wc.Flags, wc.InvalidatedSTag, chunkMR.Valid())
	}
	// A Write to the invalidated STag is refused by the client side with a
	// Terminate, which the server receives.
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpWrite, RemoteSTag: stag, RemoteTO: chunkMR.Addr(),
		SGL: []verbs.SGE{{MR: smr, Length: 1}}}); err != nil {
		t.Fatal(err)
	}
	<-cli.qp.Done()
	<-srv.qp.Done()
	var te *verbs.TerminateError
	if !errors.As(srv.qp.Err(), &te) || !te.Received || te.Layer != 1 || te.EType != 1 || te.ECode != 0 {
		t.Fatalf("server QP error %v, want received DDP invalid STag Terminate", srv.qp.Err())
	}
	// Each device counts its side of the Terminate.
	if st := cli.dev.Stats(); st.TerminatesSent != (TerminateCounts{DDP: 1}) || st.TerminatesReceived != (TerminateCounts{}) {
		t.Errorf("client device stats %+v, want one DDP Terminate sent", st)
	}
	if st := srv.dev.Stats(); st.TerminatesReceived != (TerminateCounts{DDP: 1}) || st.TerminatesSent != (TerminateCounts{}) {
		t.Errorf("server device stats %+v, want one DDP Terminate received", st)
	}
}

func TestManyQPs(t *testing.T) {
	checkGoroutines(t)
	const n = 24
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sdev, cdev := New(Config{}), New(Config{MaxFPDU: 512})
	ln, err := sdev.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Server: accept n connections, echo each Send back.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			cr, err := ln.Accept(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			e := newEndpoint(t, sdev, 4)
			buf := make([]byte, 8192)
			mr := e.reg(t, buf, verbs.AccessLocalWrite)
			if err := e.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: mr, Length: len(buf)}}}); err != nil {
				t.Error(err)
				return
			}
			if _, err := cr.Accept(ctx, e.qp, verbs.ConnParams{}); err != nil {
				t.Error(err)
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer e.close(t)
				wc := e.wait(t)
				if wc.Status != verbs.StatusSuccess {
					t.Errorf("server recv: %v", wc.Status)
					return
				}
				e.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: mr, Length: wc.ByteLen}}})
				e.wait(t)
				<-e.qp.Done() // until the client closes
			}()
		}
	}()
	var cwg sync.WaitGroup
	for i := 0; i < n; i++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			e := newEndpoint(t, cdev, 4)
			defer e.close(t)
			msg := make([]byte, 1000+i*211)
			fillPattern(msg, byte(i))
			mr := e.reg(t, msg, 0)
			back := make([]byte, len(msg))
			bmr := e.reg(t, back, verbs.AccessLocalWrite)
			e.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: bmr, Length: len(back)}}})
			if _, err := cdev.Dial(ctx, ln.Addr().String(), e.qp, verbs.ConnParams{PrivateData: []byte(fmt.Sprint(i))}); err != nil {
				t.Error(err)
				return
			}
			e.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: mr, Length: len(msg)}}})
			wc := e.wait(t)
			if wc.ID != 1 || wc.Status != verbs.StatusSuccess || !bytes.Equal(back[:wc.ByteLen], msg) {
				t.Errorf("QP %d: echo mismatch (%v, %d bytes)", i, wc.Status, wc.ByteLen)
			}
		}()
	}
	cwg.Wait()
	wg.Wait()
}

func TestP2PRTR(t *testing.T) {
	for _, rtr := range []RTRType{RTRWrite, RTRRead} {
		t.Run(fmt.Sprint(rtr), func(t *testing.T) {
			checkGoroutines(t)
			// The initiator asks for P2P; the responder sends first, which it
			// may only do after the RTR arrives.
			cli, srv := connectPair(t, pairConfig{client: Config{P2P: rtr}, beforeDial: func(e *endpoint) {
				rmr := e.reg(t, make([]byte, 16), verbs.AccessLocalWrite)
				e.qp.PostRecv(&verbs.RecvWR{ID: 5, SGL: []verbs.SGE{{MR: rmr, Length: 16}}})
			}})
			smr := srv.reg(t, []byte("first"), 0)
			if err := srv.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Length: 5}}}); err != nil {
				t.Fatal(err)
			}
			wc := cli.expect(t, 5, verbs.OpcodeRecv, verbs.StatusSuccess)
			if wc.ByteLen != 5 {
				t.Fatalf("got %d bytes", wc.ByteLen)
			}
		})
	}
}

// TestP2PRawResponder checks the RTR frame bytes our initiator sends, and
// that it sends nothing before the reply.
func TestP2PRawResponder(t *testing.T) {
	for _, rtr := range []RTRType{RTRWrite, RTRRead} {
		checkGoroutines(t)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dev := New(Config{P2P: rtr, CRC: true})
		e := newEndpoint(t, dev, 4)
		done := make(chan error, 1)
		go func() {
			_, err := dev.Dial(context.Background(), ln.Addr().String(), e.qp, verbs.ConnParams{IRD: 4, ORD: 4})
			done <- err
		}()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		var buf [iwarp.MaxMPAFrameLen]byte
		req, err := iwarp.ReadMPAFrame(c, buf[:], iwarp.MPARequest)
		if err != nil {
			t.Fatal(err)
		}
		if !req.PeerToPeer || !req.CRC() || req.IRD != 4 || req.ORD != 4 {
			t.Fatalf("request %+v", req)
		}
		rep := iwarp.MPAFrame{Kind: iwarp.MPAReply, Revision: 2, Flags: iwarp.FlagEnhanced | iwarp.FlagCRC, IRD: 2, ORD: 2, PeerToPeer: true, RTR: req.RTR}
		b, _ := rep.Append(nil)
		c.Write(b)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		p := &rawPeer{t: t, c: c, crc: true, msn: [3]uint32{1, 1, 1}}
		f := p.next()
		switch rtr {
		case RTRWrite:
			if f.Header.Opcode != iwarp.OpWrite || len(f.Payload) != 0 || !f.Header.Last {
				t.Fatalf("RTR %+v", f.Header)
			}
		case RTRRead:
			var rr iwarp.ReadRequest
			if f.Header.Opcode != iwarp.OpReadRequest || f.Header.MSN != 1 || rr.Decode(f.Payload) != nil || rr.Size != 0 {
				t.Fatalf("RTR %+v", f.Header)
			}
			// Answer it; the provider must accept the zero-length response.
			p.send(iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: rr.SinkSTag, TO: rr.SinkTO}, nil)
		}
		// Now a normal exchange works.
		rmr := e.reg(t, make([]byte, 8), verbs.AccessLocalWrite)
		e.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 8}}})
		p.sendMsg(iwarp.OpSend, []byte("ok"), 0)
		e.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
		e.close(t)
		c.Close()
	}
}

func TestReject(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sdev, cdev := New(Config{}), New(Config{})
	ln, err := sdev.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		cr, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		cr.Reject([]byte("go away"))
	}()
	e := newEndpoint(t, cdev, 4)
	defer e.close(t)
	_, err = cdev.Dial(ctx, ln.Addr().String(), e.qp, verbs.ConnParams{PrivateData: make([]byte, 252)})
	var re *verbs.RejectedError
	if !errors.As(err, &re) || string(re.PrivateData) != "go away" {
		t.Fatalf("Dial error %v, want RejectedError with private data", err)
	}
	if e.qp.State() != verbs.StateInit {
		t.Fatalf("QP state after reject %v", e.qp.State())
	}
	if _, err := cdev.Dial(ctx, ln.Addr().String(), e.qp, verbs.ConnParams{PrivateData: make([]byte, 253)}); !errors.Is(err, verbs.ErrPrivateDataTooLong) {
		t.Fatalf("253 bytes of private data: %v", err)
	}
}

func TestMarkersRefused(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := append([]byte("MPA ID Req Frame"), 0x80|0x10, 2, 0, 4, 0, 1, 0, 1)
	c.Write(req)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [iwarp.MaxMPAFrameLen]byte
	rep, err := iwarp.ReadMPAFrame(c, buf[:], iwarp.MPAReply)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Rejected() || len(rep.PrivateData) != 0 || rep.Revision != 2 {
		t.Fatalf("reply %+v %q", rep, rep.PrivateData)
	}
	// And our initiator refuses a reply with M set.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		iwarp.ReadMPAFrame(c, buf[:], iwarp.MPARequest)
		c.Write(append([]byte("MPA ID Rep Frame"), 0x80|0x10, 2, 0, 4, 0, 1, 0, 1))
		c.Read(buf[:])
	}()
	dev := New(Config{})
	e := newEndpoint(t, dev, 2)
	defer e.close(t)
	_, err = dev.Dial(context.Background(), ln.Addr().String(), e.qp, verbs.ConnParams{})
	if !errors.Is(err, iwarp.ErrMPAMarkers) {
		t.Fatalf("Dial against a markers reply: %v", err)
	}
}

// TestConnectionLoss: the peer vanishes mid-transfer; outstanding work
// completes with a flush status and the QP reports the connection loss.
func TestConnectionLoss(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	rbuf := make([]byte, 1<<16)
	rmr := s.reg(t, rbuf, verbs.AccessLocalWrite)
	for i := uint64(1); i <= 3; i++ {
		s.qp.PostRecv(&verbs.RecvWR{ID: i, SGL: []verbs.SGE{{MR: rmr, Length: len(rbuf)}}})
	}
	p := s.connectRaw(t, false, verbs.ConnParams{})
	// The first segment of a Send, then the connection dies.
	p.send(iwarp.Header{Opcode: iwarp.OpSend, QN: 0, MSN: 1}, make([]byte, 1000))
	// Outstanding sends and reads on the provider side too.
	big := s.reg(t, make([]byte, 8<<20), 0)
	sink := s.reg(t, make([]byte, 16), verbs.AccessLocalWrite)
	s.qp.PostSend(&verbs.SendWR{ID: 10, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: big, Length: 8 << 20}}})
	s.qp.PostSend(&verbs.SendWR{ID: 11, Op: verbs.OpRead, Flags: verbs.Signaled, RemoteSTag: 0x100, SGL: []verbs.SGE{{MR: sink, Length: 16}}})
	time.Sleep(20 * time.Millisecond)
	p.c.(*net.TCPConn).SetLinger(0)
	p.c.Close()
	<-s.qp.Done()
	if !errors.Is(s.qp.Err(), verbs.ErrConnectionLost) {
		t.Fatalf("QP error %v, want ErrConnectionLost", s.qp.Err())
	}
	got := map[uint64]verbs.Status{}
	for len(got) < 5 {
		wc := s.wait(t)
		got[wc.ID] = wc.Status
		if !errors.Is(wc.Err, verbs.ErrConnectionLost) {
			t.Errorf("completion %d Err %v", wc.ID, wc.Err)
		}
	}
	for _, id := range []uint64{1, 2, 3, 10, 11} {
		if got[id] != verbs.StatusFlushed {
			t.Errorf("WR %d: %v, want Flushed", id, got[id])
		}
	}
}

// TestORDQueueing posts more reads than ORD allows; the excess waits and
// all complete in order.
func TestORDQueueing(t *testing.T) {
	checkGoroutines(t)
	cli, srv := connectPair(t, pairConfig{depth: 64})
	if cli.info.ORD != DefaultIRDORD {
		t.Fatalf("ORD %d", cli.info.ORD)
	}
	src := make([]byte, 64*1024)
	fillPattern(src, 9)
	smr := srv.reg(t, src, verbs.AccessRemoteRead)
	dst := make([]byte, len(src))
	dmr := cli.reg(t, dst, verbs.AccessLocalWrite)
	const n = 48 // three times ORD
	for i := 0; i < n; i++ {
		off := i * 1024
		if err := cli.qp.PostSend(&verbs.SendWR{ID: uint64(i), Op: verbs.OpRead, Flags: verbs.Signaled,
			RemoteSTag: smr.RKey(), RemoteTO: smr.Addr() + uint64(off), SGL: []verbs.SGE{{MR: dmr, Offset: off, Length: 1024}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		cli.expect(t, uint64(i), verbs.OpcodeRead, verbs.StatusSuccess)
	}
	if !bytes.Equal(dst[:n*1024], src[:n*1024]) {
		t.Fatal("read data mismatch")
	}
}

// TestCloseClean closes both sides of a busy connection and checks no
// goroutine is left behind.
func TestCloseClean(t *testing.T) {
	checkGoroutines(t)
	cli, srv := connectPair(t, pairConfig{})
	buf := make([]byte, 1<<20)
	mr := srv.reg(t, buf, verbs.AccessRemoteWrite|verbs.AccessLocalWrite)
	src := cli.reg(t, make([]byte, 1<<20), 0)
	for i := 0; i < 8; i++ {
		cli.qp.PostSend(&verbs.SendWR{ID: uint64(i), Op: verbs.OpWrite, RemoteSTag: mr.RKey(), RemoteTO: mr.Addr(), SGL: []verbs.SGE{{MR: src, Length: 1 << 20}}})
	}
	cli.qp.Close()
	srv.qp.Close()
	if cli.qp.State() != verbs.StateClosed {
		t.Fatalf("state %v", cli.qp.State())
	}
	if err := cli.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend}); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("PostSend after Close: %v", err)
	}
}

func TestPostErrors(t *testing.T) {
	dev := New(Config{})
	e := newEndpoint(t, dev, 2)
	defer e.close(t)
	mr := e.reg(t, make([]byte, 16), 0)
	other, _ := dev.AllocPD()
	omr, _ := other.RegMR(make([]byte, 16), verbs.AccessLocalWrite)
	defer omr.Close()
	cases := []struct {
		name string
		err  error
	}{
		{"send before connect", e.qp.PostSend(&verbs.SendWR{Op: verbs.OpSend})},
		{"recv without LocalWrite", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{MR: mr, Length: 16}}})},
		{"recv out of bounds", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{MR: omr, Offset: 8, Length: 9}}})},
		{"recv too many SGEs", e.qp.PostRecv(&verbs.RecvWR{SGL: make([]verbs.SGE, 5)})},
		{"recv nil MR", e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{Length: 1}}})},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if err := e.qp.PostRecv(&verbs.RecvWR{SGL: []verbs.SGE{{MR: omr, Length: 16}}}); err == nil {
		t.Error("recv with another PD's MR: no error")
	}
	e.qp.PostRecv(&verbs.RecvWR{})
	e.qp.PostRecv(&verbs.RecvWR{})
	if err := e.qp.PostRecv(&verbs.RecvWR{}); !errors.Is(err, verbs.ErrQueueFull) {
		t.Errorf("third recv on depth 2: %v", err)
	}
	if _, err := dev.CreateCQ(0); err == nil {
		t.Error("CreateCQ(0): no error")
	}
	if _, err := e.pd.RegMR(nil, 0); err == nil {
		t.Error("RegMR(nil): no error")
	}
	if err := other.Close(); err == nil {
		t.Error("PD.Close with an open MR: no error")
	}
}

func TestCQOverrunAndWait(t *testing.T) {
	dev := New(Config{})
	cq, _ := dev.CreateCQ(2)
	c := cq.(*compQueue)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := cq.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on empty CQ: %v", err)
	}
	for i := 0; i < 3; i++ {
		c.push(&verbs.Completion{ID: uint64(i)})
	}
	if err := cq.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wc [4]verbs.Completion
	n, err := cq.Poll(wc[:])
	if n != 2 || err != nil || wc[0].ID != 0 || wc[1].ID != 1 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	var oe *verbs.CQOverrunError
	if _, err := cq.Poll(wc[:]); !errors.As(err, &oe) {
		t.Fatalf("Poll after overrun: %v", err)
	}
	cq.Close()
	if err := cq.Wait(context.Background()); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
}

// TestP2PRawInitiator: a raw peer-to-peer initiator offers RTR types; our
// responder picks one (Write first, as siw), waits for the RTR frame, and
// only then sends.
func TestP2PRawInitiator(t *testing.T) {
	for _, offer := range []iwarp.RTRFlags{iwarp.RTRWrite | iwarp.RTRRead, iwarp.RTRRead} {
		t.Run(fmt.Sprint(offer), func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			ch := s.accept(t, verbs.ConnParams{})
			req := enhancedRequest(false, 4, 4, []byte("p2p"))
			req.PeerToPeer, req.RTR = true, offer
			p, rep := rawDial(t, s.ln.Addr().String(), req)
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
			want := iwarp.RTRWrite
			if offer&iwarp.RTRWrite == 0 {
				want = iwarp.RTRRead
			}
			if !rep.PeerToPeer || rep.RTR != want {
				t.Fatalf("reply P2P %v RTR %v, want %v", rep.PeerToPeer, rep.RTR, want)
			}
			// The responder has work queued but must wait for the RTR.
			smr := s.reg(t, []byte("after RTR"), 0)
			s.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Length: 9}}})
			p.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			var one [1]byte
			if n, _ := p.c.Read(one[:]); n != 0 {
				t.Fatal("responder sent before the RTR")
			}
			p.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if want == iwarp.RTRWrite {
				p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: 1}, nil)
			} else {
				p.readRequest(iwarp.ReadRequest{SinkSTag: 0x300, SinkTO: 0x40})
				f := p.next()
				if f.Header.Opcode != iwarp.OpReadResponse || len(f.Payload) != 0 || f.Header.STag != 0x300 || f.Header.TO != 0x40 {
					t.Fatalf("RTR read answered with %+v", f.Header)
				}
			}
			f := p.next()
			if f.Header.Opcode != iwarp.OpSend || string(f.Payload) != "after RTR" || f.Header.MSN != 1 {
				t.Fatalf("after RTR got %+v %q", f.Header, f.Payload)
			}
		})
	}
}

// TestMPARevision1 connects with MPA revision 1 (no IRD/ORD block, no P2P)
// and moves data both ways.
func TestMPARevision1(t *testing.T) {
	checkGoroutines(t)
	cli, srv := connectPair(t, pairConfig{client: Config{MPARevision: 1, CRC: true}, clientPD: []byte("v1"), serverPD: []byte("ok")})
	src := srv.reg(t, []byte("readable"), verbs.AccessRemoteRead)
	dst := cli.reg(t, make([]byte, 8), verbs.AccessLocalWrite)
	cli.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpRead, Flags: verbs.Signaled, RemoteSTag: src.RKey(), RemoteTO: src.Addr(), SGL: []verbs.SGE{{MR: dst, Length: 8}}})
	cli.expect(t, 1, verbs.OpcodeRead, verbs.StatusSuccess)
	if string(dst.Buf()) != "readable" {
		t.Fatalf("read %q", dst.Buf())
	}
}

// TestReadRemoteAccessError: an RDMA Read naming a bad remote STag fails
// with StatusRemoteAccess (the peer's Terminate carries our Read Request),
// and outstanding receives are flushed.
func TestReadRemoteAccessError(t *testing.T) {
	checkGoroutines(t)
	cli, srv := connectPair(t, pairConfig{})
	sink := cli.reg(t, make([]byte, 16), verbs.AccessLocalWrite)
	wo := srv.reg(t, make([]byte, 16), verbs.AccessRemoteWrite) // no RemoteRead
	cli.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpRead, RemoteSTag: wo.RKey(), RemoteTO: wo.Addr(), SGL: []verbs.SGE{{MR: sink, Length: 16}}})
	cli.qp.PostRecv(&verbs.RecvWR{ID: 2})
	wc := cli.expect(t, 1, verbs.OpcodeRead, verbs.StatusRemoteAccess)
	var te *verbs.TerminateError
	if !errors.As(wc.Err, &te) || !te.Received || te.Layer != 0 || te.EType != 1 || te.ECode != 2 {
		t.Fatalf("read error %v, want received RDMAP access-rights Terminate", wc.Err)
	}
	cli.expect(t, 2, verbs.OpcodeRecv, verbs.StatusFlushed)
	<-srv.qp.Done()
}

// TestConnectionSetupCancel: Dial honours its context while the peer never
// replies; Accept honours its context; Close unblocks Accept and drops a
// peer still in the MPA exchange.
func TestConnectionSetupCancel(t *testing.T) {
	checkGoroutines(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c) // swallow the request, never reply
		}
	}()
	dev := New(Config{})
	e := newEndpoint(t, dev, 2)
	defer e.close(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := dev.Dial(ctx, ln.Addr().String(), e.qp, verbs.ConnParams{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a silent peer: %v", err)
	}
	if e.qp.State() != verbs.StateInit {
		t.Fatalf("QP state %v after a failed Dial", e.qp.State())
	}

	vl, err := dev.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer acancel()
	if _, err := vl.Accept(actx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Accept: %v", err)
	}
	// A peer that connects and sends half an MPA request.
	c, err := net.Dial("tcp", vl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("MPA ID Req"))
	accepted := make(chan error, 1)
	go func() {
		_, err := vl.Accept(context.Background())
		accepted <- err
	}()
	time.Sleep(10 * time.Millisecond)
	vl.Close()
	if err := <-accepted; !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("half-open MPA peer not dropped by Close")
	}
}

// TestMaxFPDUFromMSS: with Config.MaxFPDU zero the FPDU size comes from the
// TCP MSS (rounded down to a multiple of 8, as siw does).
func TestMaxFPDUFromMSS(t *testing.T) {
	cli, _ := connectPair(t, pairConfig{})
	q := cli.qp.(*queuePair)
	mss := tcpMSS(q.conn)
	if mss <= 0 {
		t.Skip("TCP_MAXSEG not available")
	}
	if q.maxFPDU != mss&^7 {
		t.Fatalf("maxFPDU %d, MSS %d", q.maxFPDU, mss)
	}
}
