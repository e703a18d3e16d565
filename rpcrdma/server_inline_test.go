package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestServerInlineSendHeldToClientReceives: a server connection's negotiated inline
// send size (SetInlineThresholds, as CONF_RDMA applies it, or SetLimits) is held to
// the receive buffers the client announced in its RFC 8797 private data, as the
// client's is to the server's (Client.SetLimits): a reply that would be larger than
// them is not sent inline into them. Without a reply chunk it is answered with
// ERR_CHUNK.
func TestServerInlineSendHeldToClientReceives(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(sc *ServerConn)
	}{
		{"SetInlineThresholds", func(sc *ServerConn) { sc.SetInlineThresholds(8192, 8192) }},
		{"SetLimits", func(sc *ServerConn) {
			if err := sc.SetLimits(Limits{InlineSend: 8192}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := tpCtx(t)
			ln, err := Listen(ctx, soft.New(soft.Config{}), "127.0.0.1:0", &ServerOptions{InlineSend: 8192})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan *ServerConn, 1)
			go func() {
				sc, err := ln.Accept(ctx)
				if err != nil {
					accepted <- nil
					return
				}
				accepted <- sc.(*ServerConn)
			}()
			const recvSize = 1024
			p := dialRaw(t, ln.Addr().String(), ConnPrivate{SendSize: 4096, RecvSize: recvSize}.Append(nil))
			sc := <-accepted
			if sc == nil {
				t.Fatal("accept failed")
			}
			defer sc.Close()
			c.set(sc)
			if got := sc.Limits().InlineSend; got > recvSize {
				t.Errorf("Limits().InlineSend = %d beyond the client's %d-byte receives", got, recvSize)
			}
			const x = 0x4000
			p.send(t, msgCall(t, x, 8))
			call, err := sc.ReadCall(ctx)
			if err != nil {
				t.Fatal(err)
			}
			reply := append(rpcReply(x), make([]byte, 2000)...)
			werr := sc.WriteReply(call, &oncrpc.Message{Inline: reply})
			msg, _ := p.recv(t)
			if len(msg) > recvSize {
				t.Fatalf("server sent a %d-byte message to a client whose receive size is %d", len(msg), recvSize)
			}
			var h Header
			if _, err := h.Decode(msg); err != nil || h.Proc != ProcError || h.ErrCode != ErrCodeChunk || h.XID != x {
				t.Fatalf("answer %+v (%v), want ERR_CHUNK for xid %#x", h, err, x)
			}
			if werr == nil {
				t.Fatal("WriteReply of a reply that fits nothing returned nil")
			}
		})
	}
}
