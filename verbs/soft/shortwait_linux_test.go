//go:build linux

package soft

import (
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestReaderReadsOncePerMessage: a peer that sends one message at a time and
// waits for it to be received (a request/response protocol) costs the reader
// one read per message. Reading until EAGAIN made two: the one that returned
// the message and one that found the socket empty before waiting.
func TestReaderReadsOncePerMessage(t *testing.T) {
	const n = 200
	sbuf := []byte("one message, then wait for it")
	cli, srv, q, rbuf, rmr, smr := shortWaitPair(t, Config{}, sbuf)
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

// TestConfirmSweepReadsOnceWhenIdle: after its last message, a reader that
// waits straight after a short read (which may have taken the stream's end
// in with it) is woken once by the device's confirm sweep and reads once more,
// finding the socket empty; from then on it waits for readiness alone, and an
// idle connection costs no further reads. (Without the sweep the read never
// comes; if the sweep woke the reader on every look, one would come every
// confirmPeriod.)
func TestConfirmSweepReadsOnceWhenIdle(t *testing.T) {
	// No SiwKick: its empty Write would arrive while the test watches.
	sbuf := []byte("the last message for a while")
	cli, srv, q, rbuf, rmr, smr := shortWaitPair(t, Config{SiwKick: -1}, sbuf)
	if err := srv.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: len(rbuf)}}}); err != nil {
		t.Fatal(err)
	}
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: smr, Length: len(sbuf)}}}); err != nil {
		t.Fatal(err)
	}
	srv.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
	// The reader is in, or about to enter, its unconfirmed wait.
	deadline := time.Now().Add(10 * time.Second)
	for q.unconfirmed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reader did not wait after its short read")
		}
		time.Sleep(time.Millisecond)
	}
	reads := q.r.reads.Load()
	for q.unconfirmed.Load() != 0 || q.r.reads.Load() == reads {
		if time.Now().After(deadline) {
			t.Fatalf("no confirming read after %v (reads %d)", 10*time.Second, q.r.reads.Load()-reads)
		}
		time.Sleep(time.Millisecond)
	}
	confirmed := q.r.reads.Load()
	if confirmed != reads+1 {
		t.Errorf("the confirm sweep's wake-up cost %d reads, want 1", confirmed-reads)
	}
	time.Sleep(6 * confirmPeriod)
	if n := q.r.reads.Load() - confirmed; n != 0 {
		t.Errorf("an idle reader made %d more reads in %v after its wait was confirmed, want none", n, 6*confirmPeriod)
	}
	q.leadMu.Lock()
	poked := q.poked
	q.leadMu.Unlock()
	if poked {
		t.Error("the confirm sweep's read deadline is still marked as set")
	}
}

// shortWaitPair connects a pair (client is the client's Config) whose server
// QP's reader receives through receive, and registers a 64-byte receive
// buffer on the server and sbuf on the client.
func shortWaitPair(t *testing.T, client Config, sbuf []byte) (cli, srv *endpoint, q *queuePair, rbuf []byte, rmr, smr verbs.MR) {
	t.Helper()
	cli, srv = connectPair(t, pairConfig{depth: 4, client: client})
	q = srv.qp.(*queuePair)
	if !q.r.shortWait {
		t.Fatal("the reader of a TCP socket does not receive through receive")
	}
	rbuf = make([]byte, 64)
	rmr = srv.reg(t, rbuf, verbs.AccessLocalWrite)
	smr = cli.reg(t, sbuf, 0)
	return cli, srv, q, rbuf, rmr, smr
}
