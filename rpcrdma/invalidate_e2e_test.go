package rpcrdma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestMemoryInvalidatedAfterReply: once RoundTrip returns, the server can no longer
// write the caller's sink: a late RDMA Write to the old write chunk fails with a
// Terminate, and the sink is untouched.
func TestMemoryInvalidatedAfterReply(t *testing.T) {
	for _, mode := range []string{"reply", "timeout", "cancel"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cl, srv := dialRawServer(t)
			sink := make([]byte, 4096)
			call := &oncrpc.ClientCall{XID: 5, Msg: oncrpc.Message{Inline: rpcCall(5, 0)}, ReplySinks: [][]byte{sink}, MaxReply: 200}
			rctx := ctx
			var cancel func()
			switch mode {
			case "timeout":
				call.Timeout = 20e6 // 20 ms
			case "cancel":
				rctx, cancel = contextWithCancel(ctx)
			}
			done := make(chan error, 1)
			go func() {
				var reply oncrpc.ClientReply
				done <- cl.RoundTrip(rctx, call, &reply)
			}()
			h, _ := srv.recvHeader(t)
			if len(h.WriteList) != 1 {
				t.Fatalf("call write list %v", h.WriteList)
			}
			seg := h.WriteList[0][0]
			switch mode {
			case "reply":
				out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsg, WriteList: []chunksWriteChunk{{{Handle: seg.Handle, Offset: seg.Offset}}}}
				b, err := out.Append(nil)
				if err != nil {
					t.Fatal(err)
				}
				srv.send(t, append(b, rpcReply(h.XID)...))
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			case "timeout":
				if err := <-done; !errors.Is(err, oncrpc.ErrTimeout) {
					t.Fatalf("err = %v, want ErrTimeout", err)
				}
			case "cancel":
				cancel()
				if err := <-done; err == nil {
					t.Fatal("cancelled RoundTrip returned nil")
				}
			}
			// A late RDMA Write into the old write chunk.
			copy(srv.sendMR.Buf(), "late data")
			err := srv.qp.PostSend(&verbs.SendWR{ID: 9, Op: verbs.OpWrite, Flags: verbs.Signaled,
				SGL: []verbs.SGE{{MR: srv.sendMR, Length: 9}}, RemoteSTag: seg.Handle, RemoteTO: seg.Offset})
			if err != nil {
				t.Fatal(err)
			}
			srv.waitSend(t, 9) // completes locally; the peer answers with a Terminate
			select {
			case <-srv.qp.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the late write did not fail the connection")
			}
			// The client refused the write: it sent a Terminate for an invalid STag (the
			// raw peer may see the Terminate or just the close that follows it).
			if mode != "timeout" {
				cl.mu.Lock()
				cc := cl.cc
				cl.mu.Unlock()
				if cc == nil {
					t.Fatal("client has no connection")
				}
				<-cc.ep.qp.Done()
				var te *verbs.TerminateError
				if !errors.As(cc.ep.qp.Err(), &te) || te.Received {
					t.Fatalf("client QP error %v, want a Terminate it sent", cc.ep.qp.Err())
				}
			}
			if !bytes.Equal(sink, make([]byte, 4096)) {
				t.Fatal("late write reached the caller's memory")
			}
		})
	}
}

// TestClientHandlesSendWithInvalidate: a reply sent with Send With Invalidate naming the
// call's only STag completes normally.
func TestClientHandlesSendWithInvalidate(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	var priv ConnPrivate
	_ = priv
	sink := make([]byte, 100)
	done := make(chan error, 1)
	var reply oncrpc.ClientReply
	go func() {
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 6, Msg: oncrpc.Message{Inline: rpcCall(6, 0)}, ReplySinks: [][]byte{sink}}, &reply) // no MaxReply: the sink is a write chunk
	}()
	h, _ := srv.recvHeader(t)
	seg := h.WriteList[0][0]
	// Place 4 bytes in the sink, then answer with Send With Invalidate.
	copy(srv.sendMR.Buf()[1000:], "abcd")
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 3, Op: verbs.OpWrite, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: srv.sendMR, Offset: 1000, Length: 4}}, RemoteSTag: seg.Handle, RemoteTO: seg.Offset}); err != nil {
		t.Fatal(err)
	}
	srv.waitSend(t, 3)
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsg, WriteList: []chunksWriteChunk{{{Handle: seg.Handle, Length: 4, Offset: seg.Offset}}}}
	b, _ := out.Append(nil)
	b = append(b, rpcReply(h.XID)...)
	copy(srv.sendMR.Buf(), b)
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 4, Op: verbs.OpSendInv, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: srv.sendMR, Length: len(b)}}, InvalidateSTag: seg.Handle}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(reply.Placed) != 1 || string(reply.Placed[0]) != "abcd" {
		t.Fatalf("placed %q", reply.Placed)
	}
	// The client does not invalidate the region itself once the server's Send With
	// Invalidate has: it must stay unusable all the same. A late RDMA Write into it
	// is refused (a Terminate) and never reaches the caller's memory.
	copy(srv.sendMR.Buf(), "late")
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 5, Op: verbs.OpWrite, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: srv.sendMR, Length: 4}}, RemoteSTag: seg.Handle, RemoteTO: seg.Offset}); err != nil {
		t.Fatal(err)
	}
	srv.waitSend(t, 5)
	select {
	case <-srv.qp.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the late write did not fail the connection")
	}
	if string(sink[:4]) != "abcd" {
		t.Fatalf("late write reached the caller's memory: %q", sink[:4])
	}
}

// TestServerSendWithInvalidate: our server uses Send With Invalidate exactly when the
// client allows it and the call named one distinct STag.
func TestServerSendWithInvalidate(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	for _, c := range []struct {
		name  string
		flag  bool
		stags int
		want  bool
	}{
		{"one STag, allowed", true, 1, true},
		{"two STags, allowed", true, 2, false},
		{"one STag, not allowed", false, 1, false},
		{"no STag", true, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := dialRaw(t, env.ln.Addr().String(), ConnPrivate{SendInvOK: c.flag, SendSize: 4096, RecvSize: 4096}.Append(nil))
			var mrs []verbs.MR
			h := Header{XID: 42, Vers: 1, Credits: 4, Proc: ProcMsg}
			for i := 0; i < c.stags; i++ {
				mr, err := p.pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
				if err != nil {
					t.Fatal(err)
				}
				defer mr.Close()
				mrs = append(mrs, mr)
				h.WriteList = append(h.WriteList, chunksWriteChunk{{Handle: mr.RKey(), Length: 4096, Offset: mr.Addr()}})
			}
			b, _ := h.Append(nil)
			p.send(t, append(b, rpcCall(42, tpNull)...))
			_, wc := p.recv(t)
			got := wc.Flags&verbs.WithInvalidate != 0
			if got != c.want {
				t.Fatalf("Send With Invalidate = %v, want %v", got, c.want)
			}
			if got && (wc.InvalidatedSTag != mrs[0].RKey() || mrs[0].Valid()) {
				t.Fatalf("invalidated %#x (valid %v), want %#x", wc.InvalidatedSTag, mrs[0].Valid(), mrs[0].RKey())
			}
		})
	}
}

// orphanCall makes call xid with sink as its reply sink, and cancels it once the
// server (srv) has it: the call stays pending on the connection, an orphan. It
// returns the call's header as the server received it.
func orphanCall(t *testing.T, ctx context.Context, cl *Client, srv *rawPeer, xid uint32, sink []byte) Header {
	t.Helper()
	rctx, cancel := contextWithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(rctx, &oncrpc.ClientCall{XID: xid, Msg: oncrpc.Message{Inline: rpcCall(xid, 0)}, ReplySinks: [][]byte{sink}}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled RoundTrip returned nil")
	}
	return h
}

// TestLateSendWithInvalidateKeepsConnection: a call whose caller gave up (its context
// cancelled: the connection stays, the call pending) has its memory revoked at once;
// the server's reply, when it comes, invalidates the call's one STag with Send With
// Invalidate, as Linux svcrdma does. The STag is invalid already, which is no error
// (siw_invalidate_stag makes no state check): the orphaned reply is taken and the
// connection carries the next call. Before, the client's provider answered with a
// Terminate and every call in flight lost its connection.
func TestLateSendWithInvalidateKeepsConnection(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	sink := make([]byte, 4096)
	h := orphanCall(t, ctx, cl, srv, 7, sink)
	seg := h.WriteList[0][0]
	cc := cl.current()
	done := make(chan error, 1)
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsg, WriteList: []chunksWriteChunk{{{Handle: seg.Handle, Offset: seg.Offset}}}}
	b, _ := out.Append(nil)
	b = append(b, rpcReply(h.XID)...)
	copy(srv.sendMR.Buf(), b)
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 4, Op: verbs.OpSendInv, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: srv.sendMR, Length: len(b)}}, InvalidateSTag: seg.Handle}); err != nil {
		t.Fatal(err)
	}
	srv.waitSend(t, 4)
	// The next call goes out on the same connection and is answered.
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 8, Msg: oncrpc.Message{Inline: rpcCall(8, 0)}, MaxReply: 200}, &reply)
	}()
	h, _ = srv.recvHeader(t)
	if h.XID != 8 {
		t.Fatalf("next call has XID %#x, want 8", h.XID)
	}
	out = Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsg}
	b, _ = out.Append(nil)
	srv.send(t, append(b, rpcReply(h.XID)...))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cl.mu.Lock()
	same := cl.cc == cc
	cl.mu.Unlock()
	if !same || cc.ep.qp.State() != verbs.StateRTS {
		t.Fatalf("connection replaced (%v) or failed: %v", !same, cc.ep.qp.Err())
	}
}

// TestLateSendWithInvalidateAfterReuse: the memory of a call its caller gave up on
// (context cancelled, the call left pending on the connection) is revoked at once but
// its registration is not handed to another call until the orphan's reply comes: a
// next call over the same buffer gets a registration of its own. So the late reply's
// Send With Invalidate still names the orphan's own STag, invalid already (no error),
// not a stale key of a region re-keyed for the next call, which the provider must
// refuse with a Terminate (RFC 5040 §7.2), losing the connection and every call on it.
// Before, the next call re-keyed the orphan's region and the late reply cost the
// connection.
func TestLateSendWithInvalidateAfterReuse(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	sink := make([]byte, 4096)
	done := make(chan error, 1)
	// A first exchange grants the client more than its initial credit, so that the
	// next call need not wait for the orphan's.
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 6, Msg: oncrpc.Message{Inline: rpcCall(6, 0)}, MaxReply: 200}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsg}
	b, _ := out.Append(nil)
	srv.send(t, append(b, rpcReply(h.XID)...))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h = orphanCall(t, ctx, cl, srv, 7, sink)
	old := h.WriteList[0][0]
	cc := cl.current()
	// The next call, over the same sink, is at the server before the late reply.
	var reply oncrpc.ClientReply
	go func() {
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 8, Msg: oncrpc.Message{Inline: rpcCall(8, 0)}, ReplySinks: [][]byte{sink}}, &reply)
	}()
	h, _ = srv.recvHeader(t)
	if h.XID != 8 || len(h.WriteList) != 1 {
		t.Fatalf("next call: XID %#x, write list %v", h.XID, h.WriteList)
	}
	seg := h.WriteList[0][0]
	if seg.Handle == old.Handle {
		t.Fatalf("next call offers the orphan's STag %#x", old.Handle)
	}
	sendInv := func(id uint64, xid, inv uint32, wl []chunksWriteChunk) {
		t.Helper()
		out := Header{XID: xid, Vers: 1, Credits: 4, Proc: ProcMsg, WriteList: wl}
		b, _ := out.Append(nil)
		b = append(b, rpcReply(xid)...)
		copy(srv.sendMR.Buf(), b)
		if err := srv.qp.PostSend(&verbs.SendWR{ID: id, Op: verbs.OpSendInv, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: srv.sendMR, Length: len(b)}}, InvalidateSTag: inv}); err != nil {
			t.Fatal(err)
		}
		if wc := srv.waitSend(t, id); wc.Status != verbs.StatusSuccess {
			t.Fatalf("reply to %#x: %v", xid, wc.Status)
		}
	}
	sendInv(4, 7, old.Handle, []chunksWriteChunk{{{Handle: old.Handle, Offset: old.Offset}}})
	// The next call's sink is still the server's to write, and its reply completes it.
	copy(srv.sendMR.Buf()[2000:], "abcd")
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 5, Op: verbs.OpWrite, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: srv.sendMR, Offset: 2000, Length: 4}}, RemoteSTag: seg.Handle, RemoteTO: seg.Offset}); err != nil {
		t.Fatal(err)
	}
	if wc := srv.waitSend(t, 5); wc.Status != verbs.StatusSuccess {
		t.Fatalf("write into the next call's sink: %v", wc.Status)
	}
	sendInv(6, 8, seg.Handle, []chunksWriteChunk{{{Handle: seg.Handle, Length: 4, Offset: seg.Offset}}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(reply.Placed) != 1 || string(reply.Placed[0]) != "abcd" {
		t.Fatalf("placed %q", reply.Placed)
	}
	cl.mu.Lock()
	same := cl.cc == cc
	cl.mu.Unlock()
	if !same || cc.ep.qp.State() != verbs.StateRTS {
		t.Fatalf("connection replaced (%v) or failed: %v", !same, cc.ep.qp.Err())
	}
}
