//go:build linux

package soft

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TestReaderReadsOncePerMessage: a peer that sends one message at a time and
// waits for it to be received (a request/response protocol) costs the reader
// one read per message. Without TCP_INQ it made two: the one that returned
// the message and one that found the socket empty before waiting.
func TestReaderReadsOncePerMessage(t *testing.T) {
	const n = 200
	cli, srv := connectPair(t, pairConfig{depth: 4})
	q := srv.qp.(*queuePair)
	if !q.r.inq {
		t.Skip("this kernel does not support TCP_INQ")
	}
	rbuf := make([]byte, 64)
	rmr := srv.reg(t, rbuf, verbs.AccessLocalWrite)
	sbuf := []byte("one message, then wait for it")
	smr := cli.reg(t, sbuf, 0)
	reads0 := q.r.reads.Load()
	for i := range n {
		if err := srv.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: rmr, Length: len(rbuf)}}}); err != nil {
			t.Fatal(err)
		}
		if err := cli.qp.PostSend(&verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: len(sbuf)}}}); err != nil {
			t.Fatal(err)
		}
		cli.expect(t, uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
		if wc := srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess); wc.ByteLen != len(sbuf) {
			t.Fatalf("message %d: received %d bytes, want %d", i, wc.ByteLen, len(sbuf))
		}
	}
	// A message split across TCP segments, or readiness that comes in between
	// a read and the wait, can cost a read more now and then; two per message
	// is what reading to EAGAIN costs.
	if reads := q.r.reads.Load() - reads0; reads > n+n/4 {
		t.Errorf("the reader made %d reads for %d messages, want about one each", reads, n)
	}
}

// TestReaderSeesFINBehindData: a peer that sends its last message and closes
// at once puts its FIN right behind the message, often into the same read,
// which then consumes the FIN while the socket's readiness for it is already
// spent. The reader must still see the end of the stream (TCP_INQ reports the
// FIN as something left to read) rather than wait for the socket forever.
func TestReaderSeesFINBehindData(t *testing.T) {
	for try := range 20 {
		s := newServerUnderTest(t, Config{})
		rmr := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
		for i := range 2 {
			if err := s.qp.PostRecv(&verbs.RecvWR{ID: uint64(i + 1), SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
				t.Fatal(err)
			}
		}
		p := s.connectRaw(t, try%2 == 1, verbs.ConnParams{})
		// A first message, received, so that the reader is waiting in
		// receive (after the read that emptied the socket) when the last
		// one and the FIN arrive.
		p.sendMsg(iwarp.OpSend, []byte("first"), 0)
		s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
		p.sendMsg(iwarp.OpSend, []byte("last"), 0)
		p.c.Close()
		select {
		case <-s.qp.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("try %d: the queue pair did not see the peer close the stream", try)
		}
		if err := s.qp.Err(); !errors.Is(err, verbs.ErrConnectionLost) || !errors.Is(err, io.EOF) {
			t.Fatalf("try %d: QP error %v, want a lost connection (EOF)", try, err)
		}
		s.expect(t, 2, verbs.OpcodeRecv, verbs.StatusSuccess)
	}
}
