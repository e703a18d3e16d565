package rpcrdma

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// msgpStart checks that msg is an RDMA_MSGP message whose RPC message (starting with
// xid) begins on an align boundary after the header, and returns the header.
func msgpStart(t *testing.T, msg []byte, align int) Header {
	t.Helper()
	var h Header
	n, err := h.Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if h.Proc != ProcMsgP || int(h.Align) != align {
		t.Fatalf("%v align %d, want RDMA_MSGP align %d", h.Proc, h.Align, align)
	}
	start := (n + align - 1) / align * align
	if !bytes.Equal(msg[n:start], make([]byte, start-n)) || binary.BigEndian.Uint32(msg[start:]) != h.XID {
		t.Fatalf("RPC message not at offset %d (header %d bytes): % x", start, n, msg[n:start+4])
	}
	return h
}

// TestMSGPBothWays: a client that opted in sends padded RDMA_MSGP calls above its
// threshold; a server that accepts them answers with RDMA_MSGP replies padded the same
// way; both sides strip the padding.
func TestMSGPBothWays(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{MSGP: true}, &ClientOptions{MSGPAlign: 64, MSGPThresh: 200})
	ctx := tpCtx(t)
	// Below the threshold: plain RDMA_MSG both ways.
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100}); err != nil {
		t.Fatal(err)
	}
	if h := env.strace.last(t, false); h.Proc != ProcMsg {
		t.Fatalf("small call sent as %v", h.Proc)
	}
	// Above it: padded both ways.
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
	env.strace.mu.Lock()
	call := env.strace.recv[len(env.strace.recv)-1]
	env.strace.mu.Unlock()
	msgpStart(t, call, 64)
	env.ctrace.mu.Lock()
	rep := env.ctrace.recv[len(env.ctrace.recv)-1]
	env.ctrace.mu.Unlock()
	if h := msgpStart(t, rep, 64); h.Thresh != 200 {
		t.Fatalf("reply rdma_thresh %d", h.Thresh)
	}
}

// TestMSGPRefusedByDefault: a server that did not opt in answers RDMA_MSGP with
// ERR_CHUNK (as Linux does), surfaced to the caller as a *RemoteError.
func TestMSGPRefusedByDefault(t *testing.T) {
	env := newTPEnv(t, nil, &ClientOptions{MSGPAlign: 32})
	err := env.rpc.CallWithOptions(tpCtx(t), tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 100})
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != ErrCodeChunk {
		t.Fatalf("err = %v, want ERR_CHUNK", err)
	}
}

// TestClientSkipsMSGPPadding: a raw server's padded RDMA_MSGP reply is decoded.
func TestClientSkipsMSGPPadding(t *testing.T) {
	addr, accept := listenRaw(t, ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil))
	ctx := tpCtx(t)
	cl, err := Dial(ctx, soft.New(soft.Config{}), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	srv := accept()
	done := make(chan error, 1)
	var reply oncrpc.ClientReply
	go func() {
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 8, Msg: oncrpc.Message{Inline: rpcCall(8, 0)}, MaxReply: 100}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcMsgP, Align: 256, Thresh: 0}
	b, _ := out.Append(nil)
	b = append(b, make([]byte, 256-len(b))...)
	body := rpcReply(h.XID)
	srv.send(t, append(b, body...))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(reply.Inline, body) {
		t.Fatalf("reply % x, want % x", reply.Inline, body)
	}
}
