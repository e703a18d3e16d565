package rpcrdma

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func tpMakePayloads(sizes ...int) tpPayloads {
	var p tpPayloads
	for i, n := range sizes {
		b := make([]byte, n)
		tpFill(b, byte(i+1))
		p = append(p, b)
	}
	return p
}

// TestReadChunksAtSeveralPositions: payloads too big for inline travel as read chunks at
// their XDR positions, without roundup; the server pulls them into place.
func TestReadChunksAtSeveralPositions(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	sizes := []int{3000, 5, 10001, 4096}
	args := tpMakePayloads(sizes...)
	var res tpPair
	if err := env.rpc.Call(ctx, tpSum, args, &res); err != nil {
		t.Fatal(err)
	}
	if res[0] != 4 || res[1] != 3000+5+10001+4096 {
		t.Fatalf("server saw %d payloads, %d bytes", res[0], res[1])
	}
	h := env.strace.last(t, false)
	if h.Proc != ProcMsg || len(h.ReadList) != 4 || len(h.WriteList) != 0 {
		t.Fatalf("server received %v with %d read segments", h.Proc, len(h.ReadList))
	}
	// Recompute the expected positions from the call's XDR encoding.
	var e xdr.Encoder
	(&oncrpc.CallHeader{XID: h.XID, Prog: tpProg, Vers: tpVers, Proc: tpSum, Cred: oncrpc.OpaqueAuth{}, Verf: oncrpc.OpaqueAuth{}}).EncodeXDR(&e)
	args.EncodeXDR(&e)
	for i, p := range e.Payloads() {
		rs := h.ReadList[i]
		if int(rs.Position) != p.Pos || int(rs.Length) != sizes[i] {
			t.Errorf("read segment %d: position %d length %d, want %d %d (roundup elided)", i, rs.Position, rs.Length, p.Pos, sizes[i])
		}
	}
	if g, err := chunks.Group(nil, h.ReadList); err != nil || len(g) != 4 {
		t.Fatalf("read list groups into %d chunks: %v", len(g), err)
	}
}

// TestSeveralWriteChunks: each reply sink becomes a write chunk; the i-th payload of the
// reply lands in the i-th chunk and the lengths come back.
func TestSeveralWriteChunks(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	args := tpMakePayloads(100, 7, 2000)
	sinks := [][]byte{make([]byte, 200), make([]byte, 64), make([]byte, 4096)}
	var res tpPayloads
	if err := env.rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 1024}); err != nil {
		t.Fatal(err)
	}
	for i := range args {
		if !bytes.Equal(res[i], args[i]) {
			t.Fatalf("payload %d: got %d bytes, want %d", i, len(res[i]), len(args[i]))
		}
		if !bytes.Equal(sinks[i][:len(args[i])], args[i]) {
			t.Fatalf("payload %d was not placed in its sink", i)
		}
	}
	call := env.strace.last(t, false)
	if call.Proc != ProcMsg || len(call.ReadList) != 0 || len(call.WriteList) != 3 || len(call.ReplyChunk) != 0 {
		t.Fatalf("call header: %v, %d read, %d write chunks, reply chunk %v", call.Proc, len(call.ReadList), len(call.WriteList), call.ReplyChunk)
	}
	for i, c := range call.WriteList {
		if c.Length() != uint64(len(sinks[i])) {
			t.Errorf("write chunk %d offers %d bytes, sink has %d", i, c.Length(), len(sinks[i]))
		}
	}
	rep := env.ctrace.last(t, false)
	if rep.Proc != ProcMsg || len(rep.WriteList) != 3 {
		t.Fatalf("reply: %v with %d write chunks", rep.Proc, len(rep.WriteList))
	}
	for i, c := range rep.WriteList {
		if c.Length() != uint64(len(args[i])) || c[0].Handle != call.WriteList[i][0].Handle {
			t.Errorf("reply write chunk %d: %d bytes handle %#x, want %d %#x", i, c.Length(), c[0].Handle, len(args[i]), call.WriteList[i][0].Handle)
		}
	}
}

// TestWriteChunkTooSmallIsErrChunk: a payload longer than the write chunk the client
// offered for it is not moved into the inline reply (nor the reply chunk): the client
// decodes that result from its sink. The server answers ERR_CHUNK (RFC 8166 §4.5.3: a
// write chunk too small for the reply), where Linux svcrdma refuses the payload with
// -E2BIG (svc_rdma_result_payload) and never sends it inline; the chunk is not
// written, and the connection goes on.
func TestWriteChunkTooSmallIsErrChunk(t *testing.T) {
	// Replies inline only up to 1 KiB: the 1024-byte MaxReply does not bound the
	// reply within it, so the sink is offered as a write chunk (planCall).
	env := newTPEnv(t, nil, &ClientOptions{InlineRecv: MinInlineSize})
	ctx := tpCtx(t)
	args := tpMakePayloads(300)
	sinks := [][]byte{make([]byte, 100)}
	var res tpPayloads
	err := env.rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 1024})
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != ErrCodeChunk {
		t.Fatalf("err = %v, want RDMA_ERROR ERR_CHUNK", err)
	}
	if !bytes.Equal(sinks[0], make([]byte, 100)) {
		t.Fatal("the too-small sink was written")
	}
	rep := env.ctrace.last(t, false)
	if rep.Proc != ProcError || rep.ErrCode != ErrCodeChunk {
		t.Fatalf("reply %v, want RDMA_ERROR ERR_CHUNK", rep.Proc)
	}
	// A payload that fits its sink still goes there, on the same connection.
	args = tpMakePayloads(80)
	if err := env.rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 1024}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res[0], args[0]) || !bytes.Equal(sinks[0][:80], args[0]) {
		t.Fatal("payload not placed in its sink")
	}
}

// TestReplyChunk: a reply that may exceed the inline size gets a reply chunk; the server
// writes the reply there and answers RDMA_NOMSG.
func TestReplyChunk(t *testing.T) {
	env := newTPEnv(t, nil, &ClientOptions{InlineRecv: 4096}) // 4 KiB receives: 5000 bytes do not fit
	ctx := tpCtx(t)
	for _, n := range []int{10, 5000, 100003} {
		var res tpOpaque
		if err := env.rpc.CallWithOptions(ctx, tpBig, tpUint32(n), &res, oncrpc.CallOptions{MaxReply: 200000}); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, n)
		tpFill(want, byte(n))
		if !bytes.Equal(res, want) {
			t.Fatalf("n=%d: reply corrupted", n)
		}
		call := env.strace.last(t, false)
		if len(call.ReplyChunk) != 1 || call.ReplyChunk.Length() != 200000 {
			t.Fatalf("call reply chunk %v", call.ReplyChunk)
		}
		rep := env.ctrace.last(t, false)
		if n > 4000 {
			if rep.Proc != ProcNoMsg || rep.ReplyChunk.Length() < uint64(n) {
				t.Fatalf("n=%d: reply %v reply chunk %v", n, rep.Proc, rep.ReplyChunk)
			}
		} else if rep.Proc != ProcMsg || rep.ReplyChunk.Length() != 0 {
			t.Fatalf("n=%d: small reply %v with reply chunk %v", n, rep.Proc, rep.ReplyChunk)
		}
	}
}

// TestLongCall: a call too long for inline goes as RDMA_NOMSG with a position-zero read
// chunk and nothing inline.
func TestLongCall(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	blob := make([]byte, 20000)
	tpFill(blob, 7)
	var res tpUint32
	if err := env.rpc.Call(ctx, tpBigInline, tpOpaque(blob), &res); err != nil {
		t.Fatal(err)
	}
	if res != 20000 {
		t.Fatalf("server saw %d bytes", res)
	}
	env.strace.mu.Lock()
	raw := env.strace.recv[len(env.strace.recv)-1]
	env.strace.mu.Unlock()
	var h Header
	n, err := h.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if h.Proc != ProcNoMsg || len(h.ReadList) != 1 || h.ReadList[0].Position != 0 || n != len(raw) {
		t.Fatalf("long call: %v read list %v, %d bytes after the header", h.Proc, h.ReadList, len(raw)-n)
	}
}

// TestLongCallWithReadChunks: a long call whose payloads are read chunks too: the PZRC
// carries the inline stream, the payload chunks are spliced in at their positions.
func TestLongCallWithReadChunks(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	blob := make([]byte, 9000)
	tpFill(blob, 7)
	args := tpMixedArgs{blob: blob, payloads: tpMakePayloads(33, 8192, 1)}
	var res tpPair
	if err := env.rpc.Call(ctx, tpMixed, args, &res); err != nil {
		t.Fatal(err)
	}
	if res[0] != 3 || res[1] != 33+8192+1 {
		t.Fatalf("server saw %v", res)
	}
	h := env.strace.last(t, false)
	if h.Proc != ProcNoMsg || len(h.ReadList) != 4 || h.ReadList[0].Position != 0 {
		t.Fatalf("%v with read list %v", h.Proc, h.ReadList)
	}
}

// TestEmptySinkEndsWriteList: results map to write chunks by index, so an empty reply
// sink ends the write list and later results come inline.
func TestEmptySinkEndsWriteList(t *testing.T) {
	env := newTPEnv(t, nil, &ClientOptions{InlineRecv: MinInlineSize}) // as TestWriteChunkTooSmallGoesInline
	args := tpMakePayloads(50, 60, 70)
	sinks := [][]byte{make([]byte, 100), nil, make([]byte, 100)}
	var res tpPayloads
	if err := env.rpc.CallWithOptions(tpCtx(t), tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 1024}); err != nil {
		t.Fatal(err)
	}
	for i := range args {
		if !bytes.Equal(res[i], args[i]) {
			t.Fatalf("payload %d corrupted", i)
		}
	}
	if h := env.strace.last(t, false); len(h.WriteList) != 1 {
		t.Fatalf("%d write chunks offered, want 1", len(h.WriteList))
	}
	if !bytes.Equal(sinks[0][:50], args[0]) || !bytes.Equal(sinks[2], make([]byte, 100)) {
		t.Fatal("results placed in the wrong sinks")
	}
}

// TestReplyChunkExcludesWriteChunkData: a call's MaxReply bounds the whole reply, data
// included (nfsclient passes nfsbind.MaxReply for READ); the data placed in write chunks
// travels neither inline nor in the reply chunk, so a reply whose rest fits inline gets
// no reply chunk, as Linux xprtrdma sizes it (a READ offers a write chunk only). Linux
// knfsd, offered both, writes the whole READ reply, data included, into the reply chunk
// as well as the data into the write chunk: every byte crossed twice.
func TestReplyChunkExcludesWriteChunkData(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	args := tpMakePayloads(100003)
	sinks := [][]byte{make([]byte, 100004)}
	var res tpPayloads
	if err := env.rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 100004 + 512}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res[0], args[0]) || !bytes.Equal(sinks[0][:len(args[0])], args[0]) {
		t.Fatal("payload not placed in its sink")
	}
	call := env.strace.last(t, false)
	if len(call.WriteList) != 1 || len(call.ReplyChunk) != 0 {
		t.Fatalf("call offers %d write chunks and reply chunk %v, want one write chunk and no reply chunk", len(call.WriteList), call.ReplyChunk)
	}
	if rep := env.ctrace.last(t, false); rep.Proc != ProcMsg || len(rep.WriteList) != 1 || rep.WriteList[0].Length() != 100003 {
		t.Fatalf("reply %v with write list %v", rep.Proc, rep.WriteList)
	}
	// A reply whose rest may still not fit inline keeps its reply chunk.
	if err := env.rpc.CallWithOptions(ctx, tpEcho, args, &res, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 100004 + 20000}); err != nil {
		t.Fatal(err)
	}
	if call := env.strace.last(t, false); len(call.ReplyChunk) != 1 {
		t.Fatalf("a reply of up to 20000 bytes beside the write chunk: reply chunk %v, want one", call.ReplyChunk)
	}
}

// TestReplyWritesChainedWithSend: the server posts a reply's RDMA Writes and its Send
// as one chain (one PostSend, so the provider can put them on the wire together) —
// unless a payload it writes lies in the call's own receive buffer, which is released
// before the Send is posted: then the Writes go first, alone, and the Send follows.
func TestReplyWritesChainedWithSend(t *testing.T) {
	const tpReflect = 13 // args: payloads; results: the same payloads, not copied
	reflect := oncrpc.Procs{tpReflect: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		n, err := req.Args.ArrayLen(64, 4)
		if err != nil {
			return err
		}
		res.Uint32(uint32(n))
		for i := 0; i < n; i++ {
			b, err := req.Args.Payload(-1)
			if err != nil {
				return err
			}
			res.Payload(b)
		}
		return nil
	}}
	// 4 KiB receives, so that the 5000-byte reply below needs the reply chunk.
	env := newTPEnv(t, nil, &ClientOptions{InlineRecv: 4096}, benchProcs(), reflect)
	ctx := tpCtx(t)
	sc := onlyConn(t, env.ln)
	type chain struct {
		k    int
		send bool
	}
	var mu sync.Mutex
	var chains []chain
	sc.ep.chainHook = func(k int, send bool) {
		mu.Lock()
		chains = append(chains, chain{k, send})
		mu.Unlock()
	}
	take := func() []chain {
		mu.Lock()
		defer mu.Unlock()
		c := chains
		chains = nil
		return c
	}
	// A payload from server memory into a one-segment write chunk: Write + Send.
	sink := make([]byte, 4096)
	var res benchSink
	if err := env.rpc.CallWithOptions(ctx, tpSource, tpUint32(4096), &res, oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: 1024}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sink, benchSource[:4096]) {
		t.Fatal("payload not placed in the sink")
	}
	if got := take(); len(got) != 1 || got[0] != (chain{2, true}) {
		t.Fatalf("source reply posted as %v, want one chain of a Write and the Send", got)
	}
	// A long reply into the reply chunk: Write + Send.
	var big tpOpaque
	if err := env.rpc.CallWithOptions(ctx, tpBig, tpUint32(5000), &big, oncrpc.CallOptions{MaxReply: 200000}); err != nil {
		t.Fatal(err)
	}
	if got := take(); len(got) != 1 || got[0] != (chain{2, true}) {
		t.Fatalf("reply chunk reply posted as %v, want one chain of a Write and the Send", got)
	}
	// Reflected payloads lie in the call's receive buffer: three Writes, then the Send.
	args := tpMakePayloads(100, 7, 2000)
	sinks := [][]byte{make([]byte, 200), make([]byte, 64), make([]byte, 4096)}
	var echo tpPayloads
	if err := env.rpc.CallWithOptions(ctx, tpReflect, args, &echo, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 1024}); err != nil {
		t.Fatal(err)
	}
	for i := range args {
		if !bytes.Equal(sinks[i][:len(args[i])], args[i]) {
			t.Fatalf("payload %d was not placed in its sink", i)
		}
	}
	if got := take(); len(got) != 2 || got[0] != (chain{3, false}) || got[1] != (chain{1, true}) {
		t.Fatalf("reflected reply posted as %v, want the three Writes, then the Send", got)
	}
}

// tpSunk decodes tpSource's results: a copy of the payload, and where the decoder
// found it (in the reply sink when placed, in the receive buffer when inline).
type tpSunk struct {
	data []byte
	at   *byte
}

func (s *tpSunk) DecodeXDR(d *xdr.Decoder) error {
	if _, err := d.Uint32(); err != nil {
		return err
	}
	b, err := d.Payload(-1)
	s.data, s.at = bytes.Clone(b), nil
	if len(b) > 0 {
		s.at = &b[0]
	}
	return err
}

// TestResultsInline: a call whose MaxReply bounds its whole reply, results included,
// within what the server sends inline offers no write chunk, and the results come in
// the reply's Send (a 4 KiB NFS READ with the default thresholds; Linux
// rpcrdma_results_inline). Against a server that sends at most 4 KiB inline (Linux
// svcrdma announces that) the same call offers its sink as a write chunk and finds
// the data placed there; so does a call without a MaxReply.
func TestResultsInline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		so       *ServerOptions
		maxReply int
		inline   bool
	}{
		{"defaults", nil, 4096 + 256, true},
		{"server sends 4KiB", &ServerOptions{InlineSend: 4096}, 4096 + 256, false},
		{"no MaxReply", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTPEnv(t, tc.so, nil, benchProcs())
			sink := make([]byte, 4096)
			var res tpSunk
			opts := oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: tc.maxReply}
			if err := env.rpc.CallWithOptions(tpCtx(t), tpSource, tpUint32(4096), &res, opts); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.data, benchSource[:4096]) {
				t.Fatal("payload corrupted")
			}
			call, rep := env.strace.last(t, false), env.ctrace.last(t, false)
			if tc.inline {
				if len(call.WriteList) != 0 || len(call.ReplyChunk) != 0 || len(rep.WriteList) != 0 || rep.Proc != ProcMsg {
					t.Fatalf("call write list %v reply chunk %v; reply %v write list %v: want no chunks", call.WriteList, call.ReplyChunk, rep.Proc, rep.WriteList)
				}
				if res.at == &sink[0] {
					t.Fatal("inline results reported as placed in the sink")
				}
				return
			}
			if len(call.WriteList) != 1 || call.WriteList[0].Length() != 4096 || len(rep.WriteList) != 1 || rep.WriteList[0].Length() != 4096 {
				t.Fatalf("call write list %v, reply write list %v: want the 4096-byte sink", call.WriteList, rep.WriteList)
			}
			if res.at != &sink[0] {
				t.Fatal("results not placed in the sink")
			}
		})
	}
}
