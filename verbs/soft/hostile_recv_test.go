package soft

import (
	"bytes"
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
