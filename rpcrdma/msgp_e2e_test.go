package rpcrdma

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// msgpDataAt checks that msg is an RDMA_MSGP message with rdma_align align and that
// data lies in it at an offset that is a multiple of align (seed §3.9: padding "prior to
// the first data byte" aligns the data in the receive buffer, which starts with the
// transport header), and returns the header.
func msgpDataAt(t *testing.T, msg []byte, align int, data []byte) Header {
	t.Helper()
	var h Header
	if _, err := h.Decode(msg); err != nil {
		t.Fatal(err)
	}
	if h.Proc != ProcMsgP || int(h.Align) != align {
		t.Fatalf("%v align %d, want RDMA_MSGP align %d", h.Proc, h.Align, align)
	}
	if at := bytes.Index(msg, data); at < 0 || at%align != 0 {
		t.Fatalf("%d bytes of data at message offset %d, not a multiple of %d", len(data), at, align)
	}
	return h
}

// lastMsg returns the last message tr saw received (sent: false) or sent.
func (tr *tpTrace) lastMsg(t *testing.T, sent bool) []byte {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	msgs := tr.recv
	if sent {
		msgs = tr.sent
	}
	if len(msgs) == 0 {
		t.Fatal("no message traced")
	}
	return msgs[len(msgs)-1]
}

// TestMSGPBothWays: a client that opted in (rdma_thresh 200) and knows the server's
// rdma_align (64) sends an echo call with a 700-byte payload padded so that its data
// starts on a 64-byte boundary of the server's receive buffer, and the 33-byte one
// unpadded; the server decodes it and answers RDMA_MSGP padded the same way; the
// client decodes that. Small calls stay RDMA_MSG.
func TestMSGPBothWays(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{MSGP: true}, &ClientOptions{MSGPAlign: 64, MSGPThresh: 200})
	ctx := tpCtx(t)
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	if h := env.strace.last(t, false); h.Proc != ProcMsg {
		t.Fatalf("call with nothing to pad sent as %v", h.Proc)
	}
	args := tpMakePayloads(700, 33)
	var res tpPayloads
	if err := env.rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{MaxReply: 2048}); err != nil {
		t.Fatal(err)
	}
	for i := range args {
		if !bytes.Equal(res[i], args[i]) {
			t.Fatalf("payload %d corrupted through RDMA_MSGP", i)
		}
	}
	call := env.strace.lastMsg(t, false)
	if h := msgpDataAt(t, call, 64, args[0]); h.Thresh < 200 {
		t.Fatalf("call rdma_thresh %d", h.Thresh)
	}
	rep := env.ctrace.lastMsg(t, false)
	if h := msgpDataAt(t, rep, 64, args[0]); h.Thresh < 200 {
		t.Fatalf("reply rdma_thresh %d", h.Thresh)
	}
	if i := bytes.Index(call, args[1]); i < 0 || bytes.Equal(call[i-4:i], make([]byte, 4)) {
		t.Fatalf("33-byte payload (below rdma_thresh) padded or missing at %d", i)
	}
}

// TestMSGPOffByDefault: RDMA_MSGP is never sent unless the client opted in and knows
// an alignment, even to a server that accepts it.
func TestMSGPOffByDefault(t *testing.T) {
	for _, co := range []*ClientOptions{nil, {MSGPAlign: 64}, {MSGPThresh: 100}} {
		env := newTPEnv(t, &ServerOptions{MSGP: true}, co)
		var res tpPayloads
		if err := env.rpc.CallWithOptions(tpCtx(t), tpEcho, tpMakePayloads(700), &res, oncrpc.CallOptions{MaxReply: 2048}); err != nil {
			t.Fatal(err)
		}
		if h := env.strace.last(t, false); h.Proc != ProcMsg {
			t.Fatalf("%+v: call sent as %v", co, h.Proc)
		}
		if h := env.ctrace.last(t, false); h.Proc != ProcMsg {
			t.Fatalf("%+v: reply sent as %v", co, h.Proc)
		}
	}
}

// TestMSGPRefusedByDefault: a server that did not opt in answers RDMA_MSGP with
// ERR_CHUNK (as Linux does), surfaced to the caller as a *RemoteError.
func TestMSGPRefusedByDefault(t *testing.T) {
	env := newTPEnv(t, nil, &ClientOptions{MSGPAlign: 32, MSGPThresh: 1})
	err := env.rpc.CallWithOptions(tpCtx(t), tpEcho, tpMakePayloads(100), nil, oncrpc.CallOptions{MaxReply: 1000})
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != ErrCodeChunk {
		t.Fatalf("err = %v, want ERR_CHUNK", err)
	}
}

// appendPaddedOpaque appends an opaque with seed §3.9 padding (align, counted from
// message offset 0, which b starts at) before its data.
func appendPaddedOpaque(b, data []byte, align int) []byte {
	b = xdr.AppendUint32(b, uint32(len(data)))
	b = append(b, make([]byte, (align-len(b)%align)%align)...)
	return xdr.AppendFixedOpaque(b, data)
}

// TestClientDecodesPeerPaddedReply: a peer's RDMA_MSGP reply with two opaques above
// rdma_thresh, each padded to rdma_align 256, and a short one below it, decodes through
// the RPC client into the right results.
func TestClientDecodesPeerPaddedReply(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	want := tpMakePayloads(300, 8, 1000)
	done := make(chan error, 1)
	var res tpPayloads
	go func() {
		done <- oncrpc.NewClient(cl, tpProg, tpVers).CallWithOptions(ctx, tpEcho, nil, &res, oncrpc.CallOptions{MaxReply: 3000})
	}()
	h, _ := srv.recvHeader(t)
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsgP, Align: 256, Thresh: 100}
	b, _ := out.Append(nil)
	b = append(b, rpcReply(h.XID)...)
	b = xdr.AppendUint32(b, 3)
	for _, p := range want {
		if len(p) >= 100 {
			b = appendPaddedOpaque(b, p, 256)
		} else {
			b = xdr.AppendOpaque(b, p)
		}
	}
	srv.send(t, b)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if i >= len(res) || !bytes.Equal(res[i], want[i]) {
			t.Fatalf("result %d of %d differs", i, len(res))
		}
	}
}

// TestServerDecodesPeerPaddedCall: a peer's RDMA_MSGP echo call with two payloads above
// rdma_thresh, padded to rdma_align 128, is decoded by the server, which answers
// RDMA_MSGP with the payloads' data on 128-byte boundaries.
func TestServerDecodesPeerPaddedCall(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{MSGP: true}, nil)
	p := dialRaw(t, env.ln.Addr().String(), ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil))
	args := tpMakePayloads(500, 12, 300)
	h := Header{XID: 0x77, Vers: 1, Credits: 1, Proc: ProcMsgP, Align: 128, Thresh: 64}
	b, _ := h.Append(nil)
	b = append(b, rpcCall(0x77, tpEcho)...)
	b = xdr.AppendUint32(b, 3)
	for _, a := range args {
		if len(a) >= 64 {
			b = appendPaddedOpaque(b, a, 128)
		} else {
			b = xdr.AppendOpaque(b, a)
		}
	}
	p.send(t, b)
	msg, _ := p.recv(t)
	rh := msgpDataAt(t, msg, 128, args[0])
	msgpDataAt(t, msg, 128, args[2])
	hl, _ := rh.Decode(msg)
	d := xdr.NewDecoder(msg[hl:])
	d.SetPadding(receivedPadding(&rh, hl))
	var rep oncrpc.ReplyHeader
	var res tpPayloads
	if err := rep.DecodeXDR(d); err != nil || rep.Err() != nil {
		t.Fatalf("reply header %+v: %v", rep, err)
	}
	if err := res.DecodeXDR(d); err != nil || len(res) != 3 {
		t.Fatalf("results: %d, %v", len(res), err)
	}
	for i := range args {
		if !bytes.Equal(res[i], args[i]) {
			t.Fatalf("payload %d echoed wrong", i)
		}
	}
}

// TestHostileMSGPCalls: RDMA_MSGP calls a server that accepts RDMA_MSGP must refuse get
// a clear answer on a connection that stays up: with a read list, ERR_CHUNK (the draft
// does not say whether chunk positions count padding); with padding that runs past the
// message, GARBAGE_ARGS; with an rdma_align beyond any buffer, GARBAGE_ARGS.
func TestHostileMSGPCalls(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{MSGP: true}, nil)
	p := dialRaw(t, env.ln.Addr().String(), ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil))
	args := func(b []byte) []byte { // one 40-byte payload, unpadded
		b = append(b, rpcCall(binary.BigEndian.Uint32(b), tpEcho)...)
		b = xdr.AppendUint32(b, 1)
		return xdr.AppendOpaque(b, make([]byte, 40))
	}
	readList := be32(0x51, 1, 1, 2, 64, 16, 1, 0, 0x99, 8, 0, 0, 0, 0, 0)
	p.send(t, args(readList))
	if h, _ := p.recvHeader(t); h.Proc != ProcError || h.ErrCode != ErrCodeChunk || h.XID != 0x51 {
		t.Fatalf("RDMA_MSGP with a read list: %v %v", h.Proc, h.ErrCode)
	}
	for _, c := range []struct {
		xid, align uint32
	}{{0x52, 4096}, {0x53, 1 << 31}} {
		p.send(t, args(be32(c.xid, 1, 1, 2, c.align, 16, 0, 0, 0)))
		h, body := p.recvHeader(t)
		if h.Proc != ProcMsg || h.XID != c.xid {
			t.Fatalf("align %d: %v", c.align, h.Proc)
		}
		var rep oncrpc.ReplyHeader
		if err := rep.DecodeXDR(xdr.NewDecoder(body)); err != nil || rep.AcceptStat != oncrpc.GarbageArgs {
			t.Fatalf("align %d: reply %+v, %v; want GARBAGE_ARGS", c.align, rep, err)
		}
	}
	p.send(t, msgCall(t, 0x54, 1))
	if h, _ := p.recvHeader(t); h.Proc != ProcMsg || h.XID != 0x54 {
		t.Fatalf("connection unusable after refused RDMA_MSGP calls: %v", h.Proc)
	}
}

// BenchmarkMSGPEcho echoes a 2000-byte payload inline over verbs/soft as RDMA_MSG and
// as RDMA_MSGP (rdma_align 64, rdma_thresh 512: the payload padded both ways), to show
// what the padding costs per call.
func BenchmarkMSGPEcho(b *testing.B) {
	for _, c := range []struct {
		name string
		co   *ClientOptions
	}{{"msg", &ClientOptions{}}, {"msgp", &ClientOptions{MSGPAlign: 64, MSGPThresh: 512}}} {
		b.Run(c.name, func(b *testing.B) {
			noTrace := func(bool, []byte) {}
			c.co.Trace = noTrace
			env := newTPEnv(b, &ServerOptions{MSGP: true, Trace: noTrace}, c.co)
			ctx := tpCtx(b)
			args := tpMakePayloads(2000)
			var res tpPayloads
			opts := oncrpc.CallOptions{MaxReply: 2500}
			b.ReportAllocs()
			for b.Loop() {
				if err := env.rpc.CallWithOptions(ctx, tpEcho, args, &res, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHostileMSGPReplies: RDMA_MSGP replies a client must refuse end the call with a
// clear error and leave the connection usable: one with a read list is a bad reply;
// one whose padding runs past the message fails to decode, naming the opaque.
func TestHostileMSGPReplies(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	rpc := oncrpc.NewClient(cl, tpProg, tpVers)
	call := func(reply func(xid uint32) []byte) error {
		done := make(chan error, 1)
		go func() {
			var res tpPayloads
			done <- rpc.CallWithOptions(ctx, tpEcho, nil, &res, oncrpc.CallOptions{MaxReply: 3000})
		}()
		h, _ := srv.recvHeader(t)
		srv.send(t, reply(h.XID))
		return <-done
	}
	err := call(func(xid uint32) []byte {
		return be32(xid, 1, 4, 2, 64, 16, 1, 0, 0x4242, 100, 0, 1<<20, 0, 0, 0)
	})
	if !errors.Is(err, ErrBadReply) || !errors.Is(err, errMSGPReadList) {
		t.Fatalf("RDMA_MSGP reply with a read list: %v", err)
	}
	err = call(func(xid uint32) []byte {
		b := append(be32(xid, 1, 4, 2, 1<<20, 16, 0, 0, 0), rpcReply(xid)...)
		b = append(b, be32(1, 40)...)
		return append(b, make([]byte, 40)...)
	})
	var de *xdr.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, xdr.ErrShort) || de.What != "opaque<> payload" {
		t.Fatalf("RDMA_MSGP reply with padding past its end: %v", err)
	}
	err = call(func(xid uint32) []byte {
		return append(be32(xid, 1, 4, 0, 0, 0, 0), append(rpcReply(xid), be32(0)...)...)
	})
	if err != nil {
		t.Fatalf("connection after refused RDMA_MSGP replies: %v", err)
	}
}
