package soft

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TestHostileSendIntoRevokedReceive: a posted receive whose region was
// invalidated (locally, or by the peer's own Send with Invalidate),
// deregistered or re-registered without local write access after the
// receive was posted is not written by a Send: the region is checked when
// the Send is placed, as siw does (siw_proc_send checks every SGE with
// siw_check_sge for IB_ACCESS_LOCAL_WRITE and answers a failure with a DDP
// catastrophic Terminate, RFC 5041 §7.2, Layer 1 EType 0 code 0). The receive
// completes with StatusLocalProtection and the QP fails. Before, the Send
// was copied into the region all the same.
func TestHostileSendIntoRevokedReceive(t *testing.T) {
	for _, c := range []struct {
		name   string
		revoke func(t *testing.T, s *serverUnderTest, rmr verbs.MR, p *rawPeer)
		first  uint64 // the receive the refused Send is for
	}{
		{"Invalidate", func(t *testing.T, s *serverUnderTest, rmr verbs.MR, p *rawPeer) {
			if err := rmr.Invalidate(); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"Deregister", func(t *testing.T, s *serverUnderTest, rmr verbs.MR, p *rawPeer) {
			if err := rmr.Close(); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"ReregisterNoLocalWrite", func(t *testing.T, s *serverUnderTest, rmr verbs.MR, p *rawPeer) {
			if err := rmr.Reregister(verbs.AccessRemoteRead); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"PeerInvalidate", func(t *testing.T, s *serverUnderTest, rmr verbs.MR, p *rawPeer) {
			// The peer's Send with Invalidate, into the first receive,
			// invalidates the region both receives lie in.
			p.sendMsg(iwarp.OpSendInvalidate, []byte("inv"), rmr.RKey())
			wc := s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
			if wc.Flags&verbs.WithInvalidate == 0 || rmr.Valid() {
				t.Fatalf("Send with Invalidate of %#x: flags %v, region valid %v", rmr.RKey(), wc.Flags, rmr.Valid())
			}
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			rbuf := make([]byte, 32)
			rmr := s.reg(t, rbuf, verbs.AccessLocalWrite)
			for i := 0; i < 2; i++ {
				if err := s.qp.PostRecv(&verbs.RecvWR{ID: uint64(i + 1), SGL: []verbs.SGE{{MR: rmr, Offset: 16 * i, Length: 16}}}); err != nil {
					t.Fatal(err)
				}
			}
			p := s.connectRaw(t, false, verbs.ConnParams{})
			c.revoke(t, s, rmr, p)
			before := append([]byte(nil), rbuf...)
			p.sendMsg(iwarp.OpSend, bytes.Repeat([]byte{0xee}, 16), 0)
			for id := c.first; id <= 2; id++ {
				want := verbs.StatusFlushed
				if id == c.first {
					want = verbs.StatusLocalProtection
				}
				if wc := s.expect(t, id, verbs.OpcodeRecv, want); wc.Err == nil {
					t.Errorf("receive %d completed with %v but no Err", id, wc.Status)
				}
			}
			if !bytes.Equal(rbuf, before) {
				t.Fatalf("revoked receive region written: % x, was % x", rbuf, before)
			}
			p.expectTerminate(iwarp.TermDDPLocalCatastrophic)
			s.checkQPFailed(t, iwarp.TermDDPLocalCatastrophic, false)
		})
	}
}

// TestHostileReadResponseSinkNoLocalWrite: a Read Response is placed only
// into a sink region that still grants local write access when it arrives.
// Here the sink of the second of two RDMA Reads (ORD 1, so its Read Request
// waits for the first's response) is re-registered with remote read access
// only before that Read Request goes out: the request names the new STag,
// but the region no longer takes writes. siw checks the sink for
// IB_ACCESS_LOCAL_WRITE when the response arrives (siw_proc_rresp,
// siw_check_sge) and answers with a DDP tagged buffer error, Invalid STag,
// the code siw_tagged_error gives an access violation, RFC 5041 lacking
// one (RFC 5041 §7.2). Before, the response was placed.
func TestHostileReadResponseSinkNoLocalWrite(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	a, b := make([]byte, 16), make([]byte, 16)
	amr := s.reg(t, a, verbs.AccessLocalWrite)
	bmr := s.reg(t, b, verbs.AccessLocalWrite)
	ch := s.accept(t, verbs.ConnParams{})
	p, _ := rawDial(t, s.ln.Addr().String(), enhancedRequest(false, 1, 8, nil)) // our ORD: 1
	if err := <-ch; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: 1}, nil)
	for i, mr := range []verbs.MR{amr, bmr} {
		if err := s.qp.PostSend(&verbs.SendWR{ID: uint64(i + 1), Op: verbs.OpRead, Flags: verbs.Signaled,
			RemoteSTag: 0x12345600, RemoteTO: 0, SGL: []verbs.SGE{{MR: mr, Length: 16}}}); err != nil {
			t.Fatal(err)
		}
	}
	readRequest := func() iwarp.ReadRequest {
		t.Helper()
		f := p.next()
		if f == nil || f.Header.Opcode != iwarp.OpReadRequest {
			t.Fatalf("peer got %+v, want a Read Request", f)
		}
		var rr iwarp.ReadRequest
		if err := rr.Decode(f.Payload); err != nil {
			t.Fatal(err)
		}
		return rr
	}
	rr := readRequest()
	if err := bmr.Reregister(verbs.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	p.send(iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: rr.SinkSTag, TO: rr.SinkTO}, bytes.Repeat([]byte{0xaa}, 16))
	s.expect(t, 1, verbs.OpcodeRead, verbs.StatusSuccess)
	rr = readRequest()
	if rr.SinkSTag != bmr.RKey() {
		t.Fatalf("second Read Request names sink STag %#x, want %#x", rr.SinkSTag, bmr.RKey())
	}
	p.send(iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: rr.SinkSTag, TO: rr.SinkTO}, bytes.Repeat([]byte{0xee}, 16))
	s.expectReadRefused(t, p, 2, b, "sink without local write access")
}

// expectReadRefused checks that the Read Response just sent for Read id was refused:
// the Read fails, sink is untouched (what names it in the failure), the peer gets a
// DDP tagged Invalid STag Terminate and the queue pair fails.
func (s *serverUnderTest) expectReadRefused(t *testing.T, p *rawPeer, id uint64, sink []byte, what string) {
	t.Helper()
	wc := s.wait(t)
	if wc.ID != id || wc.Status == verbs.StatusSuccess {
		t.Fatalf("completion = {ID %d %v %v}, want Read %d failed", wc.ID, wc.Opcode, wc.Status, id)
	}
	if !bytes.Equal(sink, make([]byte, len(sink))) {
		t.Fatalf("%s written: % x", what, sink)
	}
	p.expectTerminate(iwarp.TermDDPTaggedInvalidSTag)
	s.checkQPFailed(t, iwarp.TermDDPTaggedInvalidSTag, false)
}

// TestHostileSendInvalidateOtherPD: a Send with Invalidate naming a region
// of another protection domain of the device is refused with the RDMAP
// Remote Protection Error "STag cannot be invalidated" (RFC 5040 §7.2,
// Layer 0 EType 1 code 0x09), as siw answers a PD mismatch
// (siw_rdmap_complete: -EACCES from siw_invalidate_stag), not with the
// Remote Operation Error of an STag that names no region. The region stays
// valid either way.
func TestHostileSendInvalidateOtherPD(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	other, err := s.dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	victim, err := other.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Close() })
	rmr := s.reg(t, make([]byte, 16), verbs.AccessLocalWrite)
	if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 16}}}); err != nil {
		t.Fatal(err)
	}
	p := s.connectRaw(t, false, verbs.ConnParams{})
	p.sendMsg(iwarp.OpSendInvalidate, []byte("x"), victim.RKey())
	code := iwarp.TermRDMAPProtCannotInvalidate
	wc := s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusRemoteInvalidate)
	var te *verbs.TerminateError
	if !errors.As(wc.Err, &te) || te.Layer != uint8(code.Layer()) || te.EType != code.EType() || te.ECode != code.ECode() {
		t.Errorf("receive error %v, want code %v", wc.Err, code)
	}
	if !victim.Valid() {
		t.Error("region of another protection domain invalidated")
	}
	p.expectTerminate(code)
	s.checkQPFailed(t, code, false)
}

// TestHostileReadResponseRekeyedSink: a Read Response answers the Read
// Request it follows, so it is placed only under the sink STag that request
// named, and only while that STag is still valid (RFC 5040 §5.3: the Data
// Sink STag and TO of the response are those of the request; RFC 5041 §7.2:
// a tagged message to an invalid STag is a DDP tagged buffer error, Invalid
// STag). Here the sink is invalidated and re-registered, with local write
// access and a fresh STag, while the Read is outstanding: a response naming
// the new STag is refused with that Terminate, the Read fails and the sink is
// not written. Before, the response was checked against the sink's current
// STag and placed.
func TestHostileReadResponseRekeyedSink(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	sink := make([]byte, 16)
	smr := s.reg(t, sink, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	ch := s.accept(t, verbs.ConnParams{})
	p, _ := rawDial(t, s.ln.Addr().String(), enhancedRequest(false, 1, 8, nil)) // our ORD: 1
	if err := <-ch; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: 1}, nil)
	if err := s.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpRead, Flags: verbs.Signaled,
		RemoteSTag: 0x12345600, RemoteTO: 0, SGL: []verbs.SGE{{MR: smr, Length: 16}}}); err != nil {
		t.Fatal(err)
	}
	f := p.next()
	if f == nil || f.Header.Opcode != iwarp.OpReadRequest {
		t.Fatalf("peer got %+v, want a Read Request", f)
	}
	var rr iwarp.ReadRequest
	if err := rr.Decode(f.Payload); err != nil {
		t.Fatal(err)
	}
	if err := smr.Invalidate(); err != nil {
		t.Fatal(err)
	}
	if err := smr.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	if smr.RKey() == rr.SinkSTag {
		t.Fatalf("re-registered sink kept STag %#x", rr.SinkSTag)
	}
	p.send(iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: smr.RKey(), TO: rr.SinkTO}, bytes.Repeat([]byte{0xee}, 16))
	s.expectReadRefused(t, p, 1, sink, "re-keyed sink, by a response to the old Read Request,")
}

// TestSendInvalidateOfInvalidSTag: a Send with Invalidate naming an STag of
// ours that is invalid already (invalidated locally, or by the peer's own
// earlier Send with Invalidate) but still registered under that key is
// delivered with the invalidation reported, and the stream goes on: as the
// verbs define it, invalidating an invalid STag leaves it invalid, and siw
// accepts it (siw_invalidate_stag makes no state check). RFC 5040 §7.2's
// "STag cannot be invalidated" is for an STag that names no region of the
// stream. An RPC-over-RDMA server sends one when the client gave up on a call
// and revoked its memory before the reply came (Linux svcrdma invalidates
// the call's one rkey in its reply). Before, it was refused with a Terminate
// and the connection lost.
func TestSendInvalidateOfInvalidSTag(t *testing.T) {
	for _, c := range []struct {
		name   string
		revoke func(t *testing.T, s *serverUnderTest, p *rawPeer)
		recv   uint64 // the receive the Send with Invalidate of the invalid STag lands in
	}{
		{"Local", func(t *testing.T, s *serverUnderTest, p *rawPeer) {
			if err := s.mr.Invalidate(); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"Peer", func(t *testing.T, s *serverUnderTest, p *rawPeer) {
			p.sendMsg(iwarp.OpSendInvalidate, []byte("inv"), s.mr.RKey())
			if wc := s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess); wc.Flags&verbs.WithInvalidate == 0 {
				t.Fatalf("first Send with Invalidate: flags %v", wc.Flags)
			}
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			rbuf := make([]byte, 48)
			rmr := s.reg(t, rbuf, verbs.AccessLocalWrite)
			for i := 0; i < 3; i++ {
				if err := s.qp.PostRecv(&verbs.RecvWR{ID: uint64(i + 1), SGL: []verbs.SGE{{MR: rmr, Offset: 16 * i, Length: 16}}}); err != nil {
					t.Fatal(err)
				}
			}
			p := s.connectRaw(t, false, verbs.ConnParams{})
			c.revoke(t, s, p)
			stag := s.mr.RKey()
			if s.mr.Valid() {
				t.Fatal("region still valid")
			}
			p.sendMsg(iwarp.OpSendInvalidate, []byte("again"), stag)
			wc := s.expect(t, c.recv, verbs.OpcodeRecv, verbs.StatusSuccess)
			if wc.Flags&verbs.WithInvalidate == 0 || wc.InvalidatedSTag != stag || wc.Err != nil {
				t.Fatalf("Send with Invalidate of invalid STag %#x: flags %v, invalidated %#x, err %v", stag, wc.Flags, wc.InvalidatedSTag, wc.Err)
			}
			if at := 16 * (c.recv - 1); string(rbuf[at:at+5]) != "again" {
				t.Fatalf("receive holds %q", rbuf[at:at+5])
			}
			if s.mr.Valid() {
				t.Fatal("region valid again")
			}
			// The stream goes on.
			p.sendMsg(iwarp.OpSend, []byte("next"), 0)
			s.expect(t, c.recv+1, verbs.OpcodeRecv, verbs.StatusSuccess)
			if st := s.qp.State(); st != verbs.StateRTS {
				t.Fatalf("QP state %v, want RTS", st)
			}
		})
	}
}
