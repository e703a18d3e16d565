//go:build linux

package nfsd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestConfRDMAAppliedPerConnection negotiates with nfsrdmad over CONF_RDMA on one
// RDMA connection and checks that the server applies the outcome to that
// connection: the client announces 4 KiB receive buffers in its private data but
// asks for 1 KiB replies in CONF_RDMA, so a READDIR reply of about 2 KiB, which the
// server would otherwise send inline, must come back through the client's reply
// chunk (RDMA_NOMSG). A second connection that did not negotiate still gets it
// inline (RDMA_MSG).
func TestConfRDMAAppliedPerConnection(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("a-file-with-a-long-name-%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	ready := make(chan Info, 1)
	go func() {
		errc <- Run(ctx, Config{Export: dir, RDMA: "127.0.0.1:0"}, func(i Info) { ready <- i })
	}()
	var info Info
	select {
	case info = <-ready:
	case err := <-errc:
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	dev := soft.New(soft.Config{})
	defer dev.Close()
	readdirReply := func(negotiate bool) rpcrdma.Proc {
		t.Helper()
		var (
			mu    sync.Mutex
			procs []rpcrdma.Proc
			last  []byte
		)
		tr, err := rpcrdma.Dial(ctx, dev, info.RDMA.String(), &rpcrdma.ClientOptions{
			InlineSend: 4096, InlineRecv: 4096,
			Trace: func(sent bool, msg []byte) {
				if sent {
					return
				}
				var h rpcrdma.Header
				if _, err := h.Decode(msg); err == nil {
					mu.Lock()
					procs = append(procs, h.Proc)
					last = bytes.Clone(msg)
					mu.Unlock()
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if negotiate {
			want := confproto.ConfigRDMAReq{MaxCallSendSize: 1024, MaxReplySendSize: 1024, MaxRDMARead: 4}
			s, err := confproto.NegotiateAndApply(ctx, confproto.NewClient(tr), want, tr)
			if err != nil {
				t.Fatal(err)
			}
			if s.InlineRecv != 1024 {
				t.Fatalf("negotiated %+v, want a 1 KiB reply threshold", s)
			}
		}
		c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: tr}, info.ExportPath)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		procs = procs[:0]
		mu.Unlock()
		ents, err := c.Readdir(ctx, c.Root())
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) < 40 {
			t.Fatalf("READDIR: %d entries, want at least 40", len(ents))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(procs) != 1 {
			t.Fatalf("READDIR: %d replies received (%v), want 1", len(procs), procs)
		}
		if procs[0] == rpcrdma.ProcMsg && len(last) < 1500 {
			t.Fatalf("READDIR reply inline is only %d bytes; the test needs one above 1 KiB", len(last))
		}
		return procs[0]
	}
	if p := readdirReply(false); p != rpcrdma.ProcMsg {
		t.Errorf("without CONF_RDMA the ~2 KiB READDIR reply came as %v, want inline RDMA_MSG", p)
	}
	if p := readdirReply(true); p != rpcrdma.ProcNoMsg {
		t.Errorf("after CONF_RDMA asked for 1 KiB replies, the READDIR reply came as %v, want RDMA_NOMSG through the reply chunk", p)
	}
}
