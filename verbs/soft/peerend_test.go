package soft

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TestReaderSeesFINBehindData: a peer that sends its last message and closes
// at once puts its FIN right behind the message, often into the same read,
// which then consumes the FIN while the socket's readiness for it is already
// spent. The reader must still see the end of the stream rather than wait for
// the socket forever (it does: the confirm sweep wakes a reader still in the
// wait that followed such a read, confirmwait.go).
func TestReaderSeesFINBehindData(t *testing.T) { readerSeesPeerEnd(t, false) }

// TestReaderSeesResetBehindData: a peer that sends its last message and then
// aborts (a close with SO_LINGER 0, or with our bytes unread: an RST) puts
// the reset right behind the message, and the read that returns the message
// does not report it. The reader must see the reset.
func TestReaderSeesResetBehindData(t *testing.T) { readerSeesPeerEnd(t, true) }

// readerSeesPeerEnd has a raw peer send a message, which the reader receives
// (so that it is waiting for the socket), then a last one and, right behind it,
// a FIN or (abort) a reset; the QP must receive the message and fail with EOF
// or ECONNRESET. Twenty tries, with and without CRC.
func readerSeesPeerEnd(t *testing.T, abort bool) {
	want, what := error(io.EOF), "close the stream"
	if abort {
		want, what = syscall.ECONNRESET, "reset the connection"
	}
	for try := range 20 {
		s := newServerUnderTest(t, Config{})
		rmr := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
		for i := range 2 {
			if err := s.qp.PostRecv(&verbs.RecvWR{ID: uint64(i + 1), SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
				t.Fatal(err)
			}
		}
		p := s.connectRaw(t, try%2 == 1, verbs.ConnParams{})
		p.sendMsg(iwarp.OpSend, []byte("first"), 0)
		s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusSuccess)
		p.sendMsg(iwarp.OpSend, []byte("last"), 0)
		if abort {
			p.c.(*net.TCPConn).SetLinger(0)
		}
		p.c.Close()
		select {
		case <-s.qp.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("try %d: the queue pair did not see the peer %s", try, what)
		}
		if err := s.qp.Err(); !errors.Is(err, verbs.ErrConnectionLost) || !errors.Is(err, want) {
			t.Fatalf("try %d: QP error %v, want a lost connection (%v)", try, err, want)
		}
		s.expect(t, 2, verbs.OpcodeRecv, verbs.StatusSuccess)
	}
}
