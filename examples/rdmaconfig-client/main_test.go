package main

import (
	"bytes"
	"context"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcbind/rpcbindtest"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestDiscoverAndNegotiate serves CONF_RDMA over RDMA on 127.0.0.1, registers it with
// the real rpcbind under "rdma" as 0.0.0.0 (as a server listening on every address
// would), and runs the example against it.
func TestDiscoverAndNegotiate(t *testing.T) {
	rpcbindtest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	dev := soft.New(soft.Config{})
	defer dev.Close()
	ln, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", &rpcrdma.ServerOptions{InlineRecv: 8192, InlineSend: 8192, MSGP: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := confproto.NewService(&confproto.ServiceOptions{Limits: &confproto.Limits{MaxCallSendSize: 8192, MaxReplySendSize: 8192, Align: 64, MaxRDMARead: 4}})
	if err != nil {
		t.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	svc.Register(srv)
	go srv.Serve(ln)
	defer srv.Close()

	rb, err := rpcbind.DialClient(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	port := netip.MustParseAddrPort(ln.Addr().String()).Port()
	rb.Unregister(ctx, confproto.Program, confproto.Version, rpcbind.NetIDRDMA)
	if err := rb.Register(ctx, confproto.Program, confproto.Version, rpcbind.NetIDRDMA, netip.AddrPortFrom(netip.IPv4Unspecified(), port), ""); err != nil {
		t.Fatal(err)
	}
	defer rb.Unregister(context.Background(), confproto.Program, confproto.Version, rpcbind.NetIDRDMA)

	var out bytes.Buffer
	if err := run(ctx, []string{"-host", "127.0.0.1", "-maxcall", "16384"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CONF_RDMA rdma at 127.0.0.1:",
		"negotiated: {InlineSend:8192 InlineRecv:4096 MaxRDMARead:4 Align:64 NoReadTarget:false}",
		"connection: inline send 8192 bytes, inline receive 4096 bytes",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-host", "server.example"},
		{"-netid", "tcp"},
		{"-maxcall", "100"},
	} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
