package nfsclient

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
)

// TestWriteOverMSGP: with RDMA_MSGP negotiated (rdma_align 512), an NFSv3 WRITE small
// enough to go inline carries its data padded to a 512-byte boundary of the server's
// receive buffer (seed §3.9); the server decodes WRITE3args through the padding, the
// file holds the data, and a WRITE allocates nothing more than without padding.
func TestWriteOverMSGP(t *testing.T) {
	ctx := context.Background()
	file := &cannedFile{data: make([]byte, 1<<20)}
	rs := oncrpc.NewServer(nil)
	rs.Register(nfs3.Program, nfs3.Version, file)
	t.Cleanup(func() { rs.Close() })
	var (
		tracing atomic.Bool
		mu      sync.Mutex
		sent    []byte
	)
	tracing.Store(true)
	_, rt := serveOverRDMA(t, rs, &rpcrdma.ServerOptions{MSGP: true, InlineRecv: 16384, InlineSend: 16384}, &rpcrdma.ClientOptions{
		InlineSend: 16384, InlineRecv: 16384, MSGPAlign: 512, MSGPThresh: 1024,
		Trace: func(out bool, msg []byte) {
			if out && tracing.Load() {
				mu.Lock()
				sent = bytes.Clone(msg)
				mu.Unlock()
			}
		},
	})
	c, err := New(ctx, rt, nfs3.FH{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i*31 + 7)
	}
	if _, err := c.Write(ctx, nil, 4096, data, nfs3.FileSync); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file.data[4096:4096+len(data)], data) {
		t.Fatal("WRITE over RDMA_MSGP stored wrong data")
	}
	mu.Lock()
	msg := sent
	mu.Unlock()
	var h rpcrdma.Header
	if _, err := h.Decode(msg); err != nil || h.Proc != rpcrdma.ProcMsgP || h.Align != 512 {
		t.Fatalf("WRITE sent as %v align %d (%v)", h.Proc, h.Align, err)
	}
	if at := bytes.Index(msg, data); at%512 != 0 {
		t.Fatalf("WRITE data at message offset %d, not on a 512-byte boundary", at)
	}
	tracing.Store(false)
	if raceEnabled {
		return
	}
	w := testing.AllocsPerRun(200, func() {
		if _, e := c.Write(ctx, nil, 0, data, nfs3.Unstable); e != nil {
			err = e
		}
	})
	if err != nil || w != 0 {
		t.Fatalf("WRITE over RDMA_MSGP: %v allocations per call, %v", w, err)
	}
}
