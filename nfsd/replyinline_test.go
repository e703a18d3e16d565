//go:build linux

package nfsd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestReplyInlineCarriesSmallReads: with the default ReplyInline (8 KiB) a 4 KiB NFS
// READ from a client with the default thresholds offers no write chunk and its data
// comes back inline in the reply's Send; with ReplyInline 4096 (what Linux's svcrdma
// uses) the same READ offers its buffer as a write chunk and the data is placed there.
func TestReplyInlineCarriesSmallReads(t *testing.T) {
	for _, tc := range []struct {
		replyInline int
		inline      bool
	}{{0, true}, {4096, false}} {
		dir := t.TempDir()
		data := bytes.Repeat([]byte("0123456789abcdef"), 4096/16)
		if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		errc := make(chan error, 1)
		ready := make(chan Info, 1)
		go func() {
			errc <- Run(ctx, Config{Export: dir, RDMA: "127.0.0.1:0", ReplyInline: tc.replyInline}, func(i Info) { ready <- i })
		}()
		var info Info
		select {
		case info = <-ready:
		case err := <-errc:
			cancel()
			t.Fatal(err)
		}
		var (
			mu      sync.Mutex
			replies []rpcrdma.Header // received by the client
		)
		dev := soft.New(soft.Config{})
		tr, err := rpcrdma.Dial(ctx, dev, info.RDMA.String(), &rpcrdma.ClientOptions{
			Trace: func(sent bool, msg []byte) {
				var h rpcrdma.Header
				if _, err := h.Decode(msg); err == nil && !sent {
					mu.Lock()
					replies = append(replies, h)
					mu.Unlock()
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: tr}, info.ExportPath)
		if err != nil {
			t.Fatal(err)
		}
		fh, _, err := c.Lookup(ctx, c.Root(), "f")
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		replies = replies[:0]
		mu.Unlock()
		buf := make([]byte, 4096)
		n, _, err := c.Read(ctx, fh, 0, buf)
		if err != nil || n != len(data) || !bytes.Equal(buf, data) {
			t.Fatalf("ReplyInline %d: READ %d bytes, %v; data equal %v", tc.replyInline, n, err, bytes.Equal(buf, data))
		}
		mu.Lock()
		got := replies
		mu.Unlock()
		if len(got) != 1 {
			t.Fatalf("ReplyInline %d: %d replies to one READ", tc.replyInline, len(got))
		}
		wl := got[0].WriteList
		if tc.inline && len(wl) != 0 {
			t.Errorf("ReplyInline %d: READ reply's write list %v, want the data inline", tc.replyInline, wl)
		}
		if !tc.inline && (len(wl) != 1 || wl[0].Length() != uint64(len(data))) {
			t.Errorf("ReplyInline %d: READ reply's write list %v, want the data in one write chunk", tc.replyInline, wl)
		}
		tr.Close()
		dev.Close()
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
