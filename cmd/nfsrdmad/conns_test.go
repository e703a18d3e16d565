//go:build linux

package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsd"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

func TestParseFlagsConnLimits(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseFlags([]string{"-export", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.IdleTimeout != nfsd.DefaultIdleTimeout || cfg.MaxConns != nfsd.DefaultMaxConns() {
		t.Errorf("defaults: idle %v, max conns %d; want %v, %d", cfg.IdleTimeout, cfg.MaxConns, nfsd.DefaultIdleTimeout, nfsd.DefaultMaxConns())
	}
	if cfg.IdleTimeout != 6*time.Minute || cfg.MaxConns < 1 || cfg.MaxConns > 1024 {
		t.Errorf("defaults: idle %v, max conns %d; want 6m, 1 to 1024", cfg.IdleTimeout, cfg.MaxConns)
	}
	cfg, err = parseFlags([]string{"-export", dir, "-idle-timeout", "90s", "-max-conns", "7"}, io.Discard)
	if err != nil || cfg.IdleTimeout != 90*time.Second || cfg.MaxConns != 7 {
		t.Errorf("-idle-timeout 90s -max-conns 7: %v, %d, %v", cfg.IdleTimeout, cfg.MaxConns, err)
	}
	cfg, err = parseFlags([]string{"-export", dir, "-idle-timeout", "0", "-max-conns", "0"}, io.Discard)
	if err != nil || cfg.IdleTimeout >= 0 || cfg.MaxConns >= 0 {
		t.Errorf("-idle-timeout 0 -max-conns 0: %v, %d, %v; want never and no limit (negative)", cfg.IdleTimeout, cfg.MaxConns, err)
	}
	for _, args := range [][]string{{"-idle-timeout", "soon"}, {"-max-conns", "many"}} {
		_, err := parseFlags(append([]string{"-export", dir}, args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("parseFlags(%q) = %v, want an error naming %s", args, err, args[0])
		}
	}
}

// nfsNull calls NFS NULL over rt.
func nfsNull(ctx context.Context, rt oncrpc.RoundTripper) error {
	return oncrpc.NewClient(rt, nfs3.Program, nfs3.Version).Call(ctx, 0, nil, nil)
}

// closedByServer reports whether reading c ends (EOF or reset) rather than timing out.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestServeMaxConns: with -max-conns 2 each listener serves two connections and refuses
// the third (RDMA: the dialer gets an MPA Reject; TCP: the connection is closed), with a
// warning in the log; the two it has keep working.
func TestServeMaxConns(t *testing.T) {
	s := startServer(t, "-max-conns", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	var rdma []*rpcrdma.Client
	for i := 0; i < 2; i++ {
		c, err := rpcrdma.Dial(ctx, dev, s.info.RDMA.String(), nil)
		if err != nil {
			t.Fatalf("RDMA connection %d: %v", i+1, err)
		}
		defer c.Close()
		rdma = append(rdma, c)
	}
	var rej *verbs.RejectedError
	if _, err := rpcrdma.Dial(ctx, dev, s.info.RDMA.String(), nil); !errors.As(err, &rej) {
		t.Fatalf("third RDMA connection: %v, want a *verbs.RejectedError", err)
	}
	var tcp []*oncrpc.TCPTransport
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", s.info.TCP.String())
		if err != nil {
			t.Fatal(err)
		}
		tr := oncrpc.NewTCPTransport(c, nil)
		defer tr.Close()
		tcp = append(tcp, tr)
	}
	for _, tr := range tcp { // both accepted before the third dials
		if err := nfsNull(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("tcp", s.info.TCP.String())
	if err == nil {
		if !closedByServer(c) {
			t.Fatal("third TCP connection not closed")
		}
		c.Close()
	}
	for _, rt := range []oncrpc.RoundTripper{rdma[0], rdma[1], tcp[0], tcp[1]} {
		if err := nfsNull(ctx, rt); err != nil {
			t.Fatalf("existing connection: %v", err)
		}
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s.log.String(), "connection limit reached"); n != 2 {
		t.Errorf("%d limit warnings in the log, want one per listener:\n%s", n, s.log.String())
	}
}

// TestServeIdleTimeout: with a short -idle-timeout the server closes a TCP connection
// and an RDMA connection that never call.
func TestServeIdleTimeout(t *testing.T) {
	s := startServer(t, "-idle-timeout", "30ms")
	c, err := net.Dial("tcp", s.info.TCP.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !closedByServer(c) {
		t.Fatal("idle TCP connection not closed")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	cq, err := dev.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1, MaxRecvWR: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	mr, err := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	if err := qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: mr, Length: 4096}}}); err != nil {
		t.Fatal(err)
	}
	priv := rpcrdma.ConnPrivate{SendSize: 4096, RecvSize: 4096}
	if _, err := dev.Dial(ctx, s.info.RDMA.String(), qp, verbs.ConnParams{PrivateData: priv.Append(nil), IRD: 1, ORD: 1}); err != nil {
		t.Fatal(err)
	}
	// The server closes the connection: the posted receive is flushed with an error.
	wc, err := verbs.NextCompletion(ctx, cq)
	if err != nil {
		t.Fatalf("waiting for the idle RDMA connection to be closed: %v", err)
	}
	if wc.Status == verbs.StatusSuccess {
		t.Fatalf("the server sent something to an idle connection: %+v", wc)
	}
}
