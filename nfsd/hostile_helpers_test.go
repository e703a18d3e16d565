//go:build linux

package nfsd

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/stallproxy"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// newFreezeProxy starts a stallproxy in front of target, closed with the test.
func newFreezeProxy(t testing.TB, target string) *stallproxy.Proxy {
	t.Helper()
	p, err := stallproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// heapInUse returns the bytes of live heap objects (runtime/metrics) after two
// garbage collections, the memory the tests bound. Two, because what sync.Pools hold
// idle survives one (as their victim cache) and is dropped by the next: idle pooled
// buffers are not held memory.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// stacksInUse returns the bytes of goroutine stacks (runtime/metrics).
func stacksInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// hostileServer is a daemon started by Run with the given bounds, serving a directory
// holding one file ("big", 2 MiB).
type hostileServer struct {
	info Info
}

func startHostileServer(t testing.TB, cfg Config) *hostileServer {
	t.Helper()
	dir := t.TempDir()
	// Writable by anyone: the clients' calls carry no credentials (AUTH_NONE, nobody).
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(big, 0o666); err != nil {
		t.Fatal(err)
	}
	cfg.Export, cfg.RDMA, cfg.TCP = dir, "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	ready := make(chan Info, 1)
	go func() { errc <- Run(ctx, cfg, func(i Info) { ready <- i }) }()
	var s hostileServer
	select {
	case s.info = <-ready:
	case err := <-errc:
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &s
}

// nfsClient is an NFS client over RDMA (to addr, the server or a proxy in front of
// it) with MOUNT over TCP to the server.
type nfsClient struct {
	*nfsclient.Client
	fh   nfs3.FH
	rdma *rpcrdma.Client // the RDMA transport; nil over TCP
}

func (s *hostileServer) dialRDMA(t testing.TB, addr string) *nfsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	t.Cleanup(func() { dev.Close() })
	rt, err := rpcrdma.Dial(ctx, dev, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	c := s.mount(t, rt)
	c.rdma = rt
	return c
}

func (s *hostileServer) dialTCP(t testing.TB, addr string) *nfsClient {
	t.Helper()
	rt, err := oncrpc.DialTCP(context.Background(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return s.mount(t, rt)
}

func (s *hostileServer) mount(t testing.TB, rt oncrpc.RoundTripper) *nfsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mrt, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mrt.Close()
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: rt, Mount: mrt}, s.info.ExportPath)
	if err != nil {
		t.Fatal(err)
	}
	fh, _, err := c.LookupPath(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	return &nfsClient{Client: c, fh: fh}
}

// hostile is a client behind a freezeProxy that floods the server with READs of
// 1 MiB and never takes the replies.
type hostile struct {
	p      *stallproxy.Proxy
	c      *nfsClient
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// hostileCredits is the credit window a hostile RDMA client warms up to: its READs
// of 1 MiB in flight must outrun what the server's socket (tcp_wmem's maximum, 4 MiB
// by default) and the proxy's (stallproxy keeps it small) buffer of their replies, by
// more than the memory the tests wait for the server to hold.
const hostileCredits = 16

// startHostile connects through a proxy (over RDMA, or TCP when tcp is set), lets
// the client's credits grow with qd concurrent small READs, freezes the proxy and
// sends qd READs of 1 MiB. Their write chunks all name one sink: no data reaches it
// once the proxy is frozen.
func (s *hostileServer) startHostile(t testing.TB, qd int, tcp bool) *hostile {
	t.Helper()
	h := &hostile{}
	if tcp {
		h.p = newFreezeProxy(t, s.info.TCP.String())
		h.c = s.dialTCP(t, h.p.Addr())
	} else {
		h.p = newFreezeProxy(t, s.info.RDMA.String())
		h.c = s.dialRDMA(t, h.p.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	t.Cleanup(h.stop)
	// Warm up: qd calls at once, so that the server grows the client's credits;
	// over RDMA, rounds of them until the window holds hostileCredits (a busy
	// machine runs the calls of one round with little overlap, and then the
	// server, which grows a connection's credits only while it keeps most of them
	// outstanding, does not).
	warm := func() {
		var wg sync.WaitGroup
		for i := 0; i < qd; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b [4096]byte
				h.c.Read(ctx, h.c.fh, 0, b[:])
			}()
		}
		wg.Wait()
	}
	warm()
	want := min(qd, hostileCredits)
	for deadline := time.Now().Add(time.Minute); h.c.rdma != nil && h.c.rdma.Stats().Credits < want; warm() {
		if time.Now().After(deadline) {
			t.Fatalf("the hostile client's credits stayed at %d after warming up, want %d", h.c.rdma.Stats().Credits, want)
		}
	}
	h.p.Freeze()
	sink := make([]byte, 1<<20)
	for i := 0; i < qd; i++ {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.c.Read(ctx, h.c.fh, 0, sink)
		}()
	}
	return h
}

// stop abandons the hostile calls and closes the proxy.
func (h *hostile) stop() {
	h.cancel()
	h.p.Close()
	h.wg.Wait()
}
