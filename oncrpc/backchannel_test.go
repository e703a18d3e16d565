package oncrpc

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// bcResult is what a BackchannelServer handed back for one call.
type bcResult struct {
	call  *ServerCall
	reply []byte // nil: dropped
}

// newTestBackchannelServer serves cbProg with callbackHandler and reports each reply.
func newTestBackchannelServer(t testing.TB, max int) (*BackchannelServer, chan bcResult) {
	out := make(chan bcResult, 64)
	write := func(call *ServerCall, reply *Message) error {
		r := bcResult{call: call}
		if reply != nil {
			r.reply = xdr.Flatten([]byte{}, reply.Inline, reply.Payloads)
		}
		out <- r
		return nil
	}
	b := NewBackchannelServer(&BackchannelOptions{Handler: callbackHandler(nil, nil), MaxRequests: max},
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2049}, write)
	t.Cleanup(b.Close)
	return b, out
}

// reverseCallMsg returns a reverse call of cbProcCB with arg.
func reverseCallMsg(xid uint32, arg string) []byte {
	h := CallHeader{XID: xid, Prog: cbProg, Vers: cbVers, Proc: cbProcCB}
	return xdr.AppendOpaque(h.Append(nil), []byte(arg))
}

// A BackchannelServer answers every call it takes exactly once, with the Server's
// checks (here PROG_UNAVAIL from the handler and GARBAGE_ARGS), and counts.
func TestBackchannelServerAnswers(t *testing.T) {
	b, out := newTestBackchannelServer(t, 4)
	cases := []struct {
		msg  []byte
		want AcceptStat
	}{
		{reverseCallMsg(1, "x"), Success},
		{(&CallHeader{XID: 2, Prog: cbProg + 1, Vers: cbVers, Proc: cbProcCB}).Append(nil), ProgUnavail},
		{(&CallHeader{XID: 3, Prog: cbProg, Vers: cbVers, Proc: cbProcCB}).Append(nil), GarbageArgs},
	}
	for _, c := range cases {
		if !b.Deliver(&ServerCall{Msg: Message{Inline: c.msg}}) {
			t.Fatal("call not taken")
		}
		r := <-out
		var rh ReplyHeader
		if err := rh.DecodeXDR(xdr.NewDecoder(r.reply)); err != nil || rh.XID != binary.BigEndian.Uint32(c.msg) || rh.AcceptStat != c.want {
			t.Fatalf("reply %+v (%v), want xid %d %v", rh, err, binary.BigEndian.Uint32(c.msg), c.want)
		}
	}
	if st := b.Stats(); st.Calls != 3 || st.Replies != 3 || st.Dropped != 0 || b.InProgress() != 0 {
		t.Errorf("stats %+v, %d in progress", st, b.InProgress())
	}
	b.Close()
	if b.Deliver(&ServerCall{Msg: Message{Inline: reverseCallMsg(4, "y")}}) {
		t.Fatal("call taken after Close")
	}
	if st := b.Stats(); st.Dropped != 1 {
		t.Errorf("stats %+v, want one dropped after Close", st)
	}
}

// Close cancels the handlers in progress and waits for them.
func TestBackchannelServerCloseCancelsHandlers(t *testing.T) {
	entered := make(chan struct{}, 1)
	gate := make(chan struct{}) // never opened: only the context ends the handler
	out := make(chan error, 1)
	b := NewBackchannelServer(&BackchannelOptions{Handler: callbackHandler(entered, gate)}, &net.TCPAddr{},
		func(call *ServerCall, reply *Message) error { out <- nil; return nil })
	if !b.Deliver(&ServerCall{Msg: Message{Inline: reverseCallMsg(1, "x")}}) {
		t.Fatal("call not taken")
	}
	<-entered
	b.Close()
	select {
	case <-out:
	default:
		t.Fatal("Close returned before the handler's reply was handed back")
	}
}

// FuzzBackchannelCall hands arbitrary messages to a BackchannelServer as reverse
// calls: each comes back exactly once, either dropped or answered with a REPLY
// carrying its XID, and nothing stays in progress.
func FuzzBackchannelCall(f *testing.F) {
	f.Add(reverseCallMsg(1, "hello"))
	f.Add((&CallHeader{XID: 2, Prog: cbProg, Vers: cbVers, Proc: 9}).Append(nil))
	f.Add([]byte{0, 0, 0, 3, 0, 0, 0, 1})
	f.Add([]byte{})
	b, out := newTestBackchannelServer(f, 1)
	f.Fuzz(func(t *testing.T, msg []byte) {
		call := &ServerCall{Msg: Message{Inline: msg}}
		if !b.Deliver(call) {
			t.Fatal("call not taken with nothing in progress")
		}
		var r bcResult
		select {
		case r = <-out:
		case <-time.After(10 * time.Second):
			t.Fatal("no answer within 10 s")
		}
		if r.call != call {
			t.Fatal("another call came back")
		}
		if r.reply != nil {
			var rh ReplyHeader
			if err := rh.DecodeXDR(xdr.NewDecoder(r.reply)); err != nil || rh.XID != binary.BigEndian.Uint32(msg) {
				t.Fatalf("reply %+v does not decode or has another XID: %v", rh, err)
			}
		} else if len(msg) >= 8 && binary.BigEndian.Uint32(msg[4:]) == uint32(Call) && len(msg) >= 12 && binary.BigEndian.Uint32(msg[8:]) == RPCVersion {
			t.Fatalf("a well-framed call was dropped")
		}
		if n := b.InProgress(); n != 0 { // released before the reply is handed back
			t.Fatalf("%d calls in progress after the reply", n)
		}
	})
}
