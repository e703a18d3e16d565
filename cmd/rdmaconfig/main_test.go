package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcbind/rpcbindtest"
)

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-listen", "127.0.0.1:20049", "-maxcall", "8192", "-align", "4096", "-register"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := confproto.Limits{MaxCallSendSize: 8192, MaxReplySendSize: 4096, Align: 4096, MaxRDMARead: 16}
	if cfg.listen != "127.0.0.1:20049" || cfg.limits != want || !cfg.register || cfg.rpcbind != rpcbind.DefaultAddr {
		t.Errorf("config %+v", cfg)
	}
	cfg, err = parseFlags([]string{"-query", "192.0.2.1:20049", "-query-net", "tcp", "-maxreply", "2048"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.request() != (confproto.ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 2048, MaxRDMARead: 16}) {
		t.Errorf("query request %+v", cfg.request())
	}

	bad := []struct {
		args []string
		want string
	}{
		{nil, "nothing to serve"},
		{[]string{"-tcp", "127.0.0.1:0", "-maxcall", "512"}, "-maxcall 512"},
		{[]string{"-tcp", "127.0.0.1:0", "-maxreply", "100"}, "-maxreply 100"},
		{[]string{"-tcp", "127.0.0.1:0", "-align", "6"}, "-align 6"},
		{[]string{"-tcp", "127.0.0.1:0", "-maxcall", "4294967296"}, "-maxcall 4294967296"},
		{[]string{"-listen", "127.0.0.1:0", "-maxcall", "1048576"}, "at most 262144"},
		{[]string{"-listen", "127.0.0.1:0", "-provider", "mlx5"}, "-provider"},
		{[]string{"-tcp", "127.0.0.1:0", "-log-level", "loud"}, "-log-level"},
		{[]string{"-tcp", "127.0.0.1:0", "-timeout", "0s"}, "-timeout"},
		{[]string{"-tcp", "127.0.0.1:0", "extra"}, "unexpected arguments"},
		{[]string{"-query", "127.0.0.1:1", "-listen", "127.0.0.1:0"}, "client mode"},
		{[]string{"-query", "127.0.0.1:1", "-query-net", "udp"}, "-query-net"},
		{[]string{"-query", "127.0.0.1:1", "-maxreply", "10"}, "-maxreply 10"},
		{[]string{"-no-such-flag"}, "not defined"},
		// Addresses are checked with the command line, as nfsrdmad checks its own,
		// not when a listener or a dial fails after the device was opened.
		{[]string{"-listen", "nonsense"}, "-listen \"nonsense\": want host:port"},
		{[]string{"-tcp", ":99999"}, "-tcp \":99999\": port \"99999\" is not a number from 0 to 65535"},
		{[]string{"-tcp", "127.0.0.1:0", "-metrics", ":99999"}, "-metrics \":99999\": port"},
		{[]string{"-tcp", "127.0.0.1:0", "-register", "-rpcbind", "bogus"}, "-rpcbind \"bogus\": want host:port or unix:PATH"},
		{[]string{"-tcp", "127.0.0.1:0", "-register", "-rpcbind", "unix:"}, "-rpcbind \"unix:\""},
		{[]string{"-query", "nonsense"}, "-query \"nonsense\": want host:port"},
	}
	for _, tc := range bad {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run -h: %v, want flag.ErrHelp", err)
	}
}

// startServe runs serve with args in the background and returns the listeners'
// addresses and a function that stops it and returns serve's error.
func startServe(t *testing.T, args []string) (rdma, tcp net.Addr, stop func() error, logs *clitest.Buffer) {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	logBuf := new(clitest.Buffer)
	log := hclog.New(&hclog.LoggerOptions{Name: "rdmaconfig", Output: logBuf, Level: hclog.Info})
	ctx, cancel := context.WithCancel(context.Background())
	type addrs struct{ rdma, tcp net.Addr }
	readyc := make(chan addrs, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- serve(ctx, cfg, log, func(r, t net.Addr) { readyc <- addrs{r, t} })
	}()
	select {
	case a := <-readyc:
		rdma, tcp = a.rdma, a.tcp
	case err := <-errc:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-errc
		t.Logf("server log:\n%s", logBuf.String())
		return err
	}
	t.Cleanup(func() { stop() })
	if !strings.Contains(logBuf.String(), "serving CONF_RDMA") {
		t.Errorf("no start-up line in the log: %s", logBuf.String())
	}
	return rdma, tcp, stop, logBuf
}

func TestServeAndQuery(t *testing.T) {
	rdmaAddr, tcpAddr, stop, logs := startServe(t, []string{"-listen", "127.0.0.1:0", "-tcp", "127.0.0.1:0", "-maxcall", "8192", "-maxreply", "8192", "-align", "64", "-maxrdmaread", "8"})
	if rdmaAddr == nil || tcpAddr == nil || rdmaAddr.Network() != "rdma" {
		t.Fatalf("listeners: rdma %v, tcp %v", rdmaAddr, tcpAddr)
	}
	for _, tc := range []struct {
		net, addr string
		args      []string
		want      []string
	}{
		{"rdma", rdmaAddr.String(), nil, []string{
			"(rdma): maxcall_sendsize=8192 align=64 maxrdmaread=8",
			"client settings: inline_send=4096 inline_recv=4096 max_rdma_read=8 align=64",
			"applied to the RDMA connection: inline_send=4096 inline_recv=4096",
		}},
		{"rdma", rdmaAddr.String(), []string{"-maxcall", "65536", "-maxreply", "2048"}, []string{
			"client settings: inline_send=8192 inline_recv=2048 max_rdma_read=8 align=64",
			"applied to the RDMA connection: inline_send=8192 inline_recv=2048",
		}},
		{"tcp", tcpAddr.String(), []string{"-maxcall", "16384", "-maxreply", "2048"}, []string{
			"(tcp): maxcall_sendsize=8192 align=64 maxrdmaread=8",
			"client settings: inline_send=8192 inline_recv=2048 max_rdma_read=8 align=64",
		}},
	} {
		var out bytes.Buffer
		args := append([]string{"-query", tc.addr, "-query-net", tc.net}, tc.args...)
		if err := run(context.Background(), args, &out, io.Discard); err != nil {
			t.Fatalf("query over %s: %v", tc.net, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("query over %s printed %q, want a line containing %q", tc.net, out.String(), w)
			}
		}
	}
	// The server applied each RDMA negotiation to its connection, not the TCP one.
	for _, w := range []string{
		"netid=rdma client_maxcall_sendsize=65536 client_maxreply_sendsize=2048 client_maxrdmaread=16 server_inline_send=2048 server_inline_recv=8192 server_max_rdma_read=16 applied=true",
		"netid=tcp client_maxcall_sendsize=16384 client_maxreply_sendsize=2048 client_maxrdmaread=16 server_inline_send=2048 server_inline_recv=8192 server_max_rdma_read=16 applied=false",
	} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("server log lacks %q", w)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("serve returned %v after its context ended", err)
	}
	// A stopped server no longer answers.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := run(ctx, []string{"-query", tcpAddr.String(), "-query-net", "tcp", "-timeout", "2s"}, io.Discard, io.Discard); err == nil {
		t.Error("query of a stopped server succeeded")
	}
}

func TestServeListenError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg, err := parseFlags([]string{"-tcp", l.Addr().String()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = serve(context.Background(), cfg, hclog.NewNullLogger(), nil)
	if err == nil || !strings.Contains(err.Error(), "-tcp "+l.Addr().String()) {
		t.Errorf("serve on a used port: %v", err)
	}
}

// TestServeRegister runs the service with -register against Debian's real rpcbind and
// checks that the RDMA and TCP listeners are registered under "rdma" and "tcp" while
// it runs, and gone after it stops.
func TestServeRegister(t *testing.T) {
	rpcbindtest.Need(t)
	rdmaAddr, tcpAddr, stop, _ := startServe(t, []string{"-listen", "127.0.0.1:0", "-tcp", "127.0.0.1:0", "-register"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpcbind.DialClient(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		netid string
		addr  net.Addr
	}{{rpcbind.NetIDRDMA, rdmaAddr}, {rpcbind.NetIDTCP, tcpAddr}} {
		got, err := c.Lookup(ctx, confproto.Program, confproto.Version, tc.netid)
		if err != nil || got.String() != tc.addr.String() {
			t.Errorf("Lookup %s = %v, %v; want %v", tc.netid, got, err, tc.addr)
		}
	}
	// A client finds the RDMA endpoint through rpcbind and negotiates with it.
	ap, err := c.Lookup(ctx, confproto.Program, confproto.Version, rpcbind.NetIDRDMA)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"-query", ap.String()}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "maxcall_sendsize=4096") {
		t.Errorf("query of the registered address: %v: %s", err, out.String())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, netid := range []string{rpcbind.NetIDRDMA, rpcbind.NetIDTCP} {
		if _, err := c.Lookup(ctx, confproto.Program, confproto.Version, netid); !errors.Is(err, rpcbind.ErrNotRegistered) {
			t.Errorf("Lookup %s after stop: %v, want ErrNotRegistered", netid, err)
		}
	}
}

// TestServeRegisterReplacesStale: a mapping left by a dead instance is replaced.
func TestServeRegisterReplacesStale(t *testing.T) {
	rpcbindtest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpcbind.DialClient(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Unregister(ctx, confproto.Program, confproto.Version, rpcbind.NetIDTCP)
	stale := netip.MustParseAddrPort("127.0.0.1:9")
	if err := c.Register(ctx, confproto.Program, confproto.Version, rpcbind.NetIDTCP, stale, ""); err != nil {
		t.Fatal(err)
	}
	defer c.Unregister(context.Background(), confproto.Program, confproto.Version, rpcbind.NetIDTCP)
	_, tcpAddr, stop, _ := startServe(t, []string{"-tcp", "127.0.0.1:0", "-register"})
	got, err := c.Lookup(ctx, confproto.Program, confproto.Version, rpcbind.NetIDTCP)
	if err != nil || got.String() != tcpAddr.String() {
		t.Errorf("Lookup = %v, %v; want %v", got, err, tcpAddr)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestServeRegisterLocal registers through rpcbind's AF_LOCAL socket: as root the
// mappings are owned by "superuser", so other local users cannot remove them.
func TestServeRegisterLocal(t *testing.T) {
	rpcbindtest.Need(t)
	if _, err := os.Stat(rpcbind.DefaultLocalPath); err != nil {
		t.Skipf("rpcbind's local socket: %v", err)
	}
	_, tcpAddr, stop, _ := startServe(t, []string{"-tcp", "127.0.0.1:0", "-register", "-rpcbind", "unix:" + rpcbind.DefaultLocalPath})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpcbind.DialClient(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range l {
		if m.Prog == confproto.Program && m.Vers == confproto.Version && m.NetID == rpcbind.NetIDTCP {
			found = true
			ap, err := rpcbind.ParseUniversalAddr(m.Addr)
			if err != nil || ap.String() != tcpAddr.String() {
				t.Errorf("registered %q, want %v", m.Addr, tcpAddr)
			}
			if os.Geteuid() == 0 && m.Owner != "superuser" {
				t.Errorf("owner %q, want superuser", m.Owner)
			}
		}
	}
	if !found {
		t.Fatalf("no tcp registration in DUMP: %+v", l)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, confproto.Program, confproto.Version, rpcbind.NetIDTCP); !errors.Is(err, rpcbind.ErrNotRegistered) {
		t.Errorf("Lookup after stop: %v, want ErrNotRegistered", err)
	}
}

// Under systemd (Type=notify) the server reports READY=1 once it listens and
// STOPPING=1 when it stops.
func TestServeNotifiesSystemd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	_, _, stop, _ := startServe(t, []string{"-listen", "127.0.0.1:0"})
	buf := make([]byte, 512)
	sock.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := sock.Read(buf); err != nil || string(buf[:n]) != "READY=1\nSTATUS=serving CONF_RDMA" {
		t.Errorf("after start-up: %q, %v", buf[:n], err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n, err := sock.Read(buf); err != nil || string(buf[:n]) != "STOPPING=1" {
		t.Errorf("after stop: %q, %v", buf[:n], err)
	}
}
