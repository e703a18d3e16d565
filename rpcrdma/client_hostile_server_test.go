package rpcrdma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// The client offers no write chunk when the call's MaxReply bounds its whole reply
// within the inline size (resultsInline). A server that nevertheless returns a write
// list claiming 1024 bytes placed in "chunk 0" gets ErrBadReply: the client never gave
// it a segment, so nothing was placed, and the caller is never told that its sink's
// old bytes are results (RFC 8166 §3.4.6).
func TestUnofferedWriteChunkRefused(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	sink := bytes.Repeat([]byte{0xAA}, 1024) // stale bytes from an earlier use
	done := make(chan error, 1)
	var reply oncrpc.ClientReply
	go func() {
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 41, Msg: oncrpc.Message{Inline: rpcCall(41, 0)},
			ReplySinks: [][]byte{sink}, MaxReply: 2048}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	if len(h.WriteList) != 0 {
		t.Fatalf("precondition: client offered %d write chunks, want 0", len(h.WriteList))
	}
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsg,
		WriteList: []chunksWriteChunk{{{Handle: 0x1234, Length: 1024, Offset: 0}}}}
	b, _ := out.Append(nil)
	srv.send(t, append(b, rpcReply(h.XID)...))
	err := <-done
	if !errors.Is(err, ErrBadReply) {
		t.Fatalf("reply with a write chunk the client never offered: err = %v, placed %d chunk(s) of %d bytes (stale 0x%02x), want ErrBadReply",
			err, len(reply.Placed), func() int {
				if len(reply.Placed) > 0 {
					return len(reply.Placed[0])
				}
				return 0
			}(), sink[0])
	}
}

// The same with an empty first sink, which ends the offered write list (planCall),
// and a second sink the server claims.
func TestUnofferedWriteChunkAfterEmptySinkRefused(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	sink := bytes.Repeat([]byte{0xBB}, 512)
	done := make(chan error, 1)
	var reply oncrpc.ClientReply
	go func() {
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 42, Msg: oncrpc.Message{Inline: rpcCall(42, 0)},
			ReplySinks: [][]byte{nil, sink}}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	if len(h.WriteList) != 0 {
		t.Fatalf("precondition: client offered %d write chunks, want 0", len(h.WriteList))
	}
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsg,
		WriteList: []chunksWriteChunk{{{Handle: 1, Length: 0}}, {{Handle: 2, Length: 512}}}}
	b, _ := out.Append(nil)
	srv.send(t, append(b, rpcReply(h.XID)...))
	err := <-done
	if !errors.Is(err, ErrBadReply) {
		t.Fatalf("reply with write chunks the client never offered: err = %v, Placed lens %v, want ErrBadReply", err, lens(reply.Placed))
	}
}

func lens(p [][]byte) []int {
	var n []int
	for _, b := range p {
		n = append(n, len(b))
	}
	return n
}

// The server granted one credit and never answers the first call (sent without a
// per-try Timeout). A second call with a Timeout returns ErrTimeout while it waits for
// a credit (oncrpc.ClientCall.Timeout bounds the whole try), as it does while waiting
// for a connection (Client.conn).
func TestTimeoutWhileWaitingForCredit(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		first <- cl.RoundTrip(actx, &oncrpc.ClientCall{XID: 51, Msg: oncrpc.Message{Inline: rpcCall(51, 0)}, MaxReply: 100}, &reply)
	}()
	srv.recvHeader(t) // the first call holds the only credit; no reply
	second := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		second <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 52, Msg: oncrpc.Message{Inline: rpcCall(52, 0)}, MaxReply: 100, Timeout: 200 * time.Millisecond}, &reply)
	}()
	select {
	case err := <-second:
		if !errors.Is(err, oncrpc.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("call with Timeout 200ms still blocked after 20s waiting for a credit")
	}
}

// A call whose context was cancelled stays pending as an orphan holding its credit
// until its reply. Sent again with the same XID (ClientCall.XID: "A retransmission
// reuses it"), it would leave two replies the client could not tell apart, and the
// orphan's credit would never come back: instead the connection is dropped, which
// gives the orphan's credit back, and the call is resent on a new one, as after a
// timeout. A second call with the XID of a live one is refused.
func TestSameXIDAfterCancelResendsOnNewConnection(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	done := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 60, Msg: oncrpc.Message{Inline: rpcCall(60, 0)}, MaxReply: 100}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	srv.send(t, append(be32(h.XID, 1, 4, 0, 0, 0, 0), rpcReply(h.XID)...)) // grant 4
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cc := cl.current()
	// A live call with XID 62, and a second one with the same XID: refused.
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 62, Msg: oncrpc.Message{Inline: rpcCall(62, 0)}, MaxReply: 100}, &reply)
	}()
	srv.recvHeader(t)
	var reply oncrpc.ClientReply
	if err := cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 62, Msg: oncrpc.Message{Inline: rpcCall(62, 0)}, MaxReply: 100}, &reply); !errors.Is(err, errXIDInFlight) {
		t.Fatalf("a second call with a live call's XID: %v, want errXIDInFlight", err)
	}
	srv.send(t, append(be32(62, 1, 4, 0, 0, 0, 0), rpcReply(62)...))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// XID 61, cancelled before its reply: an orphan holding a credit.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(cctx, &oncrpc.ClientCall{XID: 61, Msg: oncrpc.Message{Inline: rpcCall(61, 0)}, MaxReply: 100}, &reply)
	}()
	srv.recvHeader(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first try: %v", err)
	}
	if n := cc.window.InUse(); n != 1 {
		t.Fatalf("the orphan holds %d credits, want 1", n)
	}
	// Sent again with the same XID: the connection goes, and the orphan's credit
	// with it; the resend waits for a new connection (which this peer never
	// accepts), until its context ends.
	rctx, rcancel := context.WithCancel(ctx)
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(rctx, &oncrpc.ClientCall{XID: 61, Msg: oncrpc.Message{Inline: rpcCall(61, 0)}, MaxReply: 100}, &reply)
	}()
	select {
	case <-cc.dead:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection holding the orphan was not dropped")
	}
	waitFor(t, "the orphan's credit to come back", func() bool { return cc.window.InUse() == 0 })
	rcancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("resend: %v, want it waiting for a new connection until cancelled", err)
	}
}

// A cancelled call's orphan holds the only credit and the server never answers it. A
// later call with a per-try Timeout times out while it waits for the credit, and the
// connection is dropped (as after any try that times out), so the orphan's credit is
// not held forever.
func TestOrphanCreditDoesNotWedgeTimedCalls(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	cc := cl.current()
	cctx, cancel := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		first <- cl.RoundTrip(cctx, &oncrpc.ClientCall{XID: 71, Msg: oncrpc.Message{Inline: rpcCall(71, 0)}, MaxReply: 100}, &reply)
	}()
	srv.recvHeader(t)
	cancel()
	<-first
	second := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		second <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 72, Msg: oncrpc.Message{Inline: rpcCall(72, 0)}, MaxReply: 100, Timeout: 200 * time.Millisecond}, &reply)
	}()
	select {
	case err := <-second:
		if !errors.Is(err, oncrpc.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("call with Timeout 200ms still blocked after 20s: the orphan's credit wedges it")
	}
	select {
	case <-cc.dead:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection was not dropped after the timeout")
	}
}

// The client follows the grant of the reply it received last (RFC 8166 §3.3.1), which
// is what the server counts on (credits.Conn), also when two replies arrive together
// and their callers decode them in the other order: the server answers a pair of
// calls with grant 1, then grant 8, in one burst, and the window is 8 however the
// callers were scheduled.
func TestClientFollowsGrantReceivedLast(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	done := make(chan error, 2)
	call := func(xid uint32) {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: xid, Msg: oncrpc.Message{Inline: rpcCall(xid, 0)}, MaxReply: 100}, &reply)
	}
	go call(80)
	h, _ := srv.recvHeader(t)
	srv.send(t, append(be32(h.XID, 1, 2, 0, 0, 0, 0), rpcReply(h.XID)...)) // grant 2
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cc := cl.current()
	for round := range 20 {
		xid := uint32(100 + 2*round)
		go call(xid)
		go call(xid + 1)
		a, _ := srv.recvHeader(t)
		b, _ := srv.recvHeader(t)
		first := append(be32(a.XID, 1, 1, 0, 0, 0, 0), rpcReply(a.XID)...)
		second := append(be32(b.XID, 1, 8, 0, 0, 0, 0), rpcReply(b.XID)...)
		srv.sendBurst(t, first, second)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if g := cc.window.Granted(); g != 8 {
			t.Fatalf("round %d: window %d after replies granting 1 then 8, want 8", round, g)
		}
		// Back to 2 for the next round (the window follows lower grants too).
		go call(xid + 1000)
		h, _ := srv.recvHeader(t)
		srv.send(t, append(be32(h.XID, 1, 2, 0, 0, 0, 0), rpcReply(h.XID)...))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if g := cc.window.Granted(); g != 2 {
			t.Fatalf("round %d: window %d after a reply granting 2", round, g)
		}
	}
}

// A reply whose chunk lists do not decode still carries a grant the server counted
// (credits.Conn): the client applies it as the message arrives, and the caller gets
// ErrBadReply.
func TestClientAppliesGrantOfMalformedReply(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	var reply oncrpc.ClientReply
	done := make(chan error, 1)
	go func() {
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 90, Msg: oncrpc.Message{Inline: rpcCall(90, 0)}, MaxReply: 100}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	srv.send(t, append(be32(h.XID, 1, 8, 0, 7), rpcReply(h.XID)...)) // read list "present" = 7
	if err := <-done; !errors.Is(err, ErrBadReply) {
		t.Fatalf("reply with a malformed read list: %v, want ErrBadReply", err)
	}
	if g := cl.current().window.Granted(); g != 8 {
		t.Fatalf("window %d after a malformed reply granting 8, want 8", g)
	}
}
