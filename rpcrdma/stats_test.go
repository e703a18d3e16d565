package rpcrdma

import (
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// waitStats polls l.Stats until ok accepts them (counters move just after the reply
// is posted, so the client may see the reply first) or a generous deadline passes.
func waitStats(t *testing.T, l *Listener, ok func(ServerStats) bool) ServerStats {
	t.Helper()
	st := l.Stats()
	for deadline := time.Now().Add(20 * time.Second); !ok(st) && time.Now().Before(deadline); st = l.Stats() {
		time.Sleep(time.Millisecond)
	}
	return st
}

// The Listener's counters follow real calls: inline calls and replies, read chunks
// pulled, write chunks and the reply chunk written, RDMA_ERRORs sent, connections.
func TestServerStatsFollowCalls(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	for range 3 {
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 128}); err != nil {
			t.Fatal(err)
		}
	}
	st := waitStats(t, env.ln, func(s ServerStats) bool { return s.RepliesInline >= 3 })
	if st.CallsInline != 3 || st.RepliesInline != 3 || st.CallsReadChunks != 0 || st.WriteChunks != 0 {
		t.Fatalf("after 3 NULLs: %+v", st)
	}
	if st.Conns.Accepted != 1 || st.Conns.Open() != 1 || st.Credits.Conns < 1 || st.Credits.Granted == 0 {
		t.Fatalf("connections and credits after 3 NULLs: %+v", st)
	}

	// Two payloads beyond the inline threshold: read chunks (15000 bytes pulled).
	var sum tpPair
	if err := env.rpc.Call(ctx, tpSum, tpMakePayloads(10000, 5000), &sum); err != nil {
		t.Fatal(err)
	}
	// Echo into write chunks: 100 + 2000 bytes written.
	var echo tpPayloads
	sinks := [][]byte{make([]byte, 200), make([]byte, 4096)}
	if err := env.rpc.CallWithOptions(ctx, tpEcho, tpMakePayloads(100, 2000), &echo, oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 1024}); err != nil {
		t.Fatal(err)
	}
	// A long reply through the reply chunk.
	var big tpOpaque
	if err := env.rpc.CallWithOptions(ctx, tpBig, tpUint32(100000), &big, oncrpc.CallOptions{MaxReply: 200000}); err != nil {
		t.Fatal(err)
	}
	st = waitStats(t, env.ln, func(s ServerStats) bool { return s.RepliesInline+s.RepliesReplyChunk >= 6 })
	if st.CallsReadChunks != 1 || st.ReadBytes < 15000 || st.ReadBytes > 15008 {
		t.Errorf("read chunks: %d calls, %d bytes; want 1, 15000", st.CallsReadChunks, st.ReadBytes)
	}
	if st.WriteChunks != 2 || st.RepliesReplyChunk != 1 || st.RepliesInline != 5 {
		t.Errorf("replies: %+v; want 2 write chunks, 1 reply chunk, 5 inline", st)
	}
	if st.WriteBytes < 100+2000+100000 {
		t.Errorf("%d bytes written, want at least %d", st.WriteBytes, 100+2000+100000)
	}
	if st.ErrVers != 0 || st.ErrChunk != 0 {
		t.Errorf("errors sent before any bad call: %+v", st)
	}
	// The reassembly buffer of the read-chunk call and the reply chunk's stream
	// buffer went back to the pool: registered, not in use.
	if st.BufferBytes < 100000 || st.BufferBytesInUse != 0 {
		t.Errorf("buffers: %d bytes registered, %d in use; want at least 100000 and 0", st.BufferBytes, st.BufferBytesInUse)
	}
}

// A hostile client's bad version and bad chunks move the RDMA_ERROR counters.
func TestHostileServerStatsCountErrors(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	p := dialRaw(t, env.ln.Addr().String(), linuxClientPrivate)
	p.send(t, append(be32(0x77, 2, 8, 0, 0, 0, 0), rpcCall(0x77, 0)...))
	if h, _ := p.recvHeader(t); h.ErrCode != ErrCodeVers {
		t.Fatalf("answer %+v, want ERR_VERS", h)
	}
	p.send(t, be32(0x78, 1, 8))
	if h, _ := p.recvHeader(t); h.ErrCode != ErrCodeChunk {
		t.Fatalf("answer %+v, want ERR_CHUNK", h)
	}
	st := env.ln.Stats()
	if st.ErrVers != 1 || st.ErrChunk != 1 {
		t.Fatalf("errors counted: vers %d chunk %d, want 1 and 1", st.ErrVers, st.ErrChunk)
	}
	if st.Conns.Accepted != 2 {
		t.Fatalf("%d connections accepted, want 2", st.Conns.Accepted)
	}
}

// The counters are kept per connection (so that connections do not share a cache
// line per call); a closed connection's counts stay in the Listener's totals.
func TestServerStatsOutliveTheirConnection(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	for range 3 {
		if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 128}); err != nil {
			t.Fatal(err)
		}
	}
	waitStats(t, env.ln, func(s ServerStats) bool { return s.RepliesInline >= 3 })
	env.ln.mu.Lock()
	var conns []*ServerConn
	for sc := range env.ln.conns {
		conns = append(conns, sc)
	}
	env.ln.mu.Unlock()
	for _, sc := range conns {
		sc.Close()
	}
	if n := serverConns(env.ln); n != 0 {
		t.Fatalf("%d connections still listed after Close", n)
	}
	if st := env.ln.Stats(); st.CallsInline != 3 || st.RepliesInline != 3 {
		t.Fatalf("after the connection closed: %d calls, %d replies counted; want 3 and 3", st.CallsInline, st.RepliesInline)
	}
}
