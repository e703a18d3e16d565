//go:build interop

package rpcrdma

// Interop with Linux: the client transport calls the guest's knfsd (svcrdma over siw)
// through interop/run.sh (case rpcrdma-knfsd), which sets IWTEST_PEER.

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestLinuxKnfsdNull dials knfsd with the client transport: NFSv3 NULL inline, NULL with
// a reply chunk (svcrdma then answers RDMA_NOMSG through it), and 300 concurrent NULLs
// within the 64 credits knfsd grants.
func TestLinuxKnfsdNull(t *testing.T) {
	peer := os.Getenv("IWTEST_PEER")
	if peer == "" {
		t.Skip("IWTEST_PEER not set: run through interop/run.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tr := &tpTrace{}
	// FirstFPDUDelay: the Linux 6.1 siw accept race (interop/README.md).
	dev := soft.New(soft.Config{CRC: os.Getenv("IWTEST_CRC") == "1", FirstFPDUDelay: 300 * time.Millisecond})
	cl, err := Dial(ctx, dev, peer, &ClientOptions{Trace: tr.fn})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if l := cl.Limits(); l.InlineSend != 4096 || l.InlineRecv != 4096 {
		t.Errorf("limits from knfsd's private data: %+v, want 4096/4096", l)
	}
	nfs := oncrpc.NewClient(cl, 100003, 3)
	if err := nfs.CallWithOptions(ctx, 0, nil, nil, oncrpc.CallOptions{MaxReply: 128}); err != nil {
		t.Fatalf("NULL inline: %v", err)
	}
	rep := tr.last(t, false)
	if rep.Proc != ProcMsg || rep.Credits != 64 {
		t.Errorf("inline NULL reply: %v granting %d", rep.Proc, rep.Credits)
	}
	if g := cl.window.Granted(); g != 64 {
		t.Errorf("window %d after knfsd's grant, want 64", g)
	}
	if err := nfs.CallWithOptions(ctx, 0, nil, nil, oncrpc.CallOptions{}); err != nil {
		t.Fatalf("NULL with a reply chunk: %v", err)
	}
	if rep := tr.last(t, false); rep.Proc != ProcNoMsg || len(rep.ReplyChunk) != 1 || rep.ReplyChunk.Length() == 0 {
		t.Errorf("NULL with a reply chunk answered %v, reply chunk %v", rep.Proc, rep.ReplyChunk)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- nfs.CallWithOptions(ctx, 0, nil, nil, oncrpc.CallOptions{MaxReply: 128})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d messages sent, %d received; knfsd granted %d credits", len(tr.sent), len(tr.recv), cl.window.Granted())
}
