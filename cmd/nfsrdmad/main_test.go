//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsd"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcbind/rpcbindtest"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseFlags([]string{"-export", dir, "-rdma", "127.0.0.1:0", "-tcp", "", "-mountd", "127.0.0.1:0", "-credits", "16", "-inline", "8192", "-reply-inline", "16384", "-rpcbind", "-state", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Export != dir || cfg.RDMA != "127.0.0.1:0" || cfg.TCP != "" || cfg.Mountd != "127.0.0.1:0" || cfg.Credits != 16 || cfg.Inline != 8192 || cfg.ReplyInline != 16384 || !cfg.RPCBind || cfg.RPCBindAddr != rpcbind.DefaultAddr || cfg.StateDir != "" {
		t.Errorf("config %+v", cfg)
	}
	cfg, err = parseFlags([]string{"-export", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RDMA != ":20049" || cfg.TCP != ":2049" || cfg.Provider != "soft" || cfg.Credits != 64 || cfg.Inline != 5120 || cfg.ReplyInline != 8192 ||
		cfg.MaxOpenFiles != nfsd.DefaultMaxOpenFiles {
		t.Errorf("defaults %+v", cfg)
	}

	if cfg, err := parseFlags([]string{"-export", dir, "-max-open-files", "-1"}, io.Discard); err != nil || cfg.MaxOpenFiles != -1 {
		t.Errorf("-max-open-files -1: %+v, %v", cfg, err)
	}
	if cfg.Async {
		t.Error("async by default")
	}
	if cfg, err := parseFlags([]string{"-export", dir, "-async"}, io.Discard); err != nil || !cfg.Async {
		t.Errorf("-async: %+v, %v", cfg, err)
	}
	if cfg.MemBudget != 32<<20 || cfg.ConnMemBudget != 8<<20 || cfg.SendTimeout != time.Minute || cfg.ReadTimeout != 30*time.Second {
		t.Errorf("memory and stall defaults %+v", cfg)
	}
	cfg, err = parseFlags([]string{"-export", dir, "-mem-budget", "100", "-conn-mem-budget", "-1", "-send-timeout", "5s", "-read-timeout", "-1s"}, io.Discard)
	if err != nil || cfg.MemBudget != 100<<20 || cfg.ConnMemBudget != -1 || cfg.SendTimeout != 5*time.Second || cfg.ReadTimeout != -time.Second {
		t.Errorf("memory and stall flags: %+v, %v", cfg, err)
	}

	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	bad := []struct {
		args []string
		want string
	}{
		{nil, "-export: the directory to serve is required"},
		{[]string{"-export", filepath.Join(dir, "missing")}, "-export"},
		{[]string{"-export", file}, "-export " + fmt.Sprintf("%q", file) + ": not a directory"},
		{[]string{"-export", dir, "-export-path", "relative"}, "-export-path \"relative\": must start with /"},
		{[]string{"-export", dir, "-rdma", "", "-tcp", ""}, "-rdma and -tcp are both empty"},
		{[]string{"-export", dir, "-rdma", "nonsense"}, "-rdma \"nonsense\": want host:port"},
		{[]string{"-export", dir, "-tcp", ":99999"}, "-tcp \":99999\": port"},
		{[]string{"-export", dir, "-mountd", "x:y"}, "-mountd \"x:y\": port"},
		{[]string{"-export", dir, "-provider", "mlx5"}, "-provider \"mlx5\": not available in this binary"},
		{[]string{"-export", dir, "-credits", "0"}, "-credits 0"},
		{[]string{"-export", dir, "-credits", "100000"}, "-credits 100000"},
		{[]string{"-export", dir, "-inline", "512"}, "-inline 512: want 1024 to 262144"},
		{[]string{"-export", dir, "-inline", "1048576"}, "-inline 1048576"},
		{[]string{"-export", dir, "-max-io", "100"}, "-max-io 100"},
		{[]string{"-export", dir, "-log-level", "loud"}, "-log-level \"loud\""},
		{[]string{"-export", dir, "-shutdown-timeout", "0s"}, "-shutdown-timeout"},
		{[]string{"-export", dir, "-mem-budget", "0"}, "-mem-budget 0: want a number of MiB"},
		{[]string{"-export", dir, "-conn-mem-budget", "0"}, "-conn-mem-budget 0"},
		{[]string{"-export", dir, "-mem-budget", "2000000"}, "-mem-budget 2000000: more than 1 TiB"},
		{[]string{"-export", dir, "-send-timeout", "0s"}, "-send-timeout 0"},
		{[]string{"-export", dir, "-read-timeout", "0s"}, "-read-timeout 0"},
		{[]string{"-export", dir, "extra"}, "unexpected arguments"},
		{[]string{"-no-such-flag"}, "not defined"},
		{[]string{"-export", dir, "-rpcbind", "-rpcbind-addr", "bogus"}, "-rpcbind-addr \"bogus\": want host:port or unix:PATH"},
		{[]string{"-export", dir, "-rpcbind-addr", "127.0.0.1:111111"}, "-rpcbind-addr \"127.0.0.1:111111\": port"},
		{[]string{"-export", dir, "-rpcbind-addr", "unix:"}, "-rpcbind-addr \"unix:\""},
	}
	for _, tc := range bad {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard, io.Discard, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run -h: %v, want flag.ErrHelp", err)
	}
}

// server is a running nfsrdmad.
type server struct {
	info   nfsd.Info
	export string
	stdout *clitest.Buffer
	log    *clitest.Buffer
	stop   func() error
}

// clientID is the uid and gid test clients act as, owning the export: this user's,
// or 1000:1000 when the tests run as root, since -export squashes root to nobody.
func clientID() (uid, gid uint32) {
	if os.Geteuid() == 0 {
		return 1000, 1000
	}
	return uint32(os.Getuid()), uint32(os.Getgid())
}

// startServer runs the command with extra args on ephemeral 127.0.0.1 ports.
func startServer(t *testing.T, extra ...string) *server {
	t.Helper()
	s := &server{export: t.TempDir(), stdout: &clitest.Buffer{}, log: &clitest.Buffer{}}
	uid, gid := clientID()
	if err := os.Chown(s.export, int(uid), int(gid)); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	return s.start(t, append([]string{"-export", s.export}, extra...))
}

// start runs the command with args, plus a state directory and ephemeral 127.0.0.1
// ports, and returns once it serves.
func (s *server) start(t *testing.T, args []string) *server {
	t.Helper()
	args = append([]string{"-state", t.TempDir(), "-rdma", "127.0.0.1:0", "-tcp", "127.0.0.1:0"}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	readyc := make(chan nfsd.Info, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, args, s.stdout, s.log, func(i nfsd.Info) { readyc <- i }) }()
	select {
	case s.info = <-readyc:
	case err := <-errc:
		cancel()
		t.Fatalf("nfsrdmad %q: %v\n%s", args, err, s.log.String())
	}
	stopped := false
	var stopErr error
	s.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			stopErr = <-errc
			t.Logf("server log:\n%s", s.log.String())
		}
		return stopErr
	}
	t.Cleanup(func() { s.stop() })
	return s
}

// mount mounts the server's export over netid ("rdma" or "tcp"); MOUNT goes over TCP.
func (s *server) mount(t *testing.T, netid string) *nfsclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mrt, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mrt.Close() })
	nrt := oncrpc.RoundTripper(mrt)
	if netid == "rdma" {
		dev := soft.New(soft.Config{})
		c, err := rpcrdma.Dial(ctx, dev, s.info.RDMA.String(), nil)
		if err != nil {
			dev.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); dev.Close() })
		nrt = c
	}
	uid, gid := clientID()
	auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("test"), UID: uid, GID: gid})
	if err != nil {
		t.Fatal(err)
	}
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: nrt, Mount: mrt}, s.info.ExportPath, oncrpc.WithAuth(auth))
	if err != nil {
		t.Fatalf("mount over %s: %v", netid, err)
	}
	return c
}

func TestServeRDMAAndTCP(t *testing.T) {
	s := startServer(t, "-export-path", "/export", "-credits", "8", "-inline", "2048")
	if s.info.RDMA == nil || s.info.RDMA.Network() != "rdma" || s.info.TCP == nil || s.info.Mountd != nil {
		t.Fatalf("listeners %+v", s.info)
	}
	wantMount := fmt.Sprintf("mount -t nfs -o vers=3,proto=rdma,port=%d,mountport=%d,mountproto=tcp,nolock 127.0.0.1:/export /mnt",
		portOf(t, s.info.RDMA.String()), portOf(t, s.info.TCP.String()))
	if s.info.MountCommand != wantMount {
		t.Errorf("mount command %q, want %q", s.info.MountCommand, wantMount)
	}
	out := s.stdout.String()
	for _, w := range []string{"exporting " + s.export + " as /export", "over RDMA  " + s.info.RDMA.String(), "verbs/soft", "8 credits, 2048/8192-byte inline calls/replies", "over TCP       " + s.info.TCP.String(), wantMount, "rdma link add siw0"} {
		if !strings.Contains(out, w) {
			t.Errorf("start-up output lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(s.log.String(), "serving NFSv3") {
		t.Errorf("no start-up log line:\n%s", s.log.String())
	}

	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), (1<<20+3*4096)/16) // > 1 MiB: two WRITEs, two READs
	data = append(data, 'x', 'y', 'z')                                  // odd length
	for _, netid := range []string{"rdma", "tcp"} {
		c := s.mount(t, netid)
		name := "file-" + netid
		fh, _, err := c.Create(ctx, c.Root(), name, 0o644, false)
		if err != nil {
			t.Fatalf("%s: create: %v", netid, err)
		}
		if err := c.WriteAll(ctx, fh, data); err != nil {
			t.Fatalf("%s: write: %v", netid, err)
		}
		onDisk, err := os.ReadFile(filepath.Join(s.export, name))
		if err != nil || !bytes.Equal(onDisk, data) {
			t.Fatalf("%s: file on disk: %d bytes, err %v; want the %d bytes written", netid, len(onDisk), err, len(data))
		}
		got, err := c.ReadAll(ctx, fh)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: read back %d bytes, err %v", netid, len(got), err)
		}
	}
	// CONF_RDMA answers on the RDMA listener with the -inline size.
	{
		dev := soft.New(soft.Config{})
		defer dev.Close()
		rt, err := rpcrdma.Dial(ctx, dev, s.info.RDMA.String(), &rpcrdma.ClientOptions{InlineSend: confproto.BaseInlineSize})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := confproto.Negotiate(ctx, confproto.NewClient(rt), confproto.ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 8})
		rt.Close()
		if err != nil || reply.MaxCallSendSize != 2048 {
			t.Errorf("CONF_RDMA over RDMA: %+v, %v; want maxcall_sendsize 2048", reply, err)
		}
	}
	// Both files are listed over RDMA (READDIRPLUS by reply chunk when long).
	c := s.mount(t, "rdma")
	ents, err := c.ReaddirPlus(ctx, c.Root())
	if err != nil || len(ents) != 2 {
		t.Fatalf("readdirplus: %v %v", ents, err)
	}
	if err := s.stop(); err != nil {
		t.Errorf("run returned %v after its context ended", err)
	}
	if !strings.Contains(s.log.String(), "stopped") {
		t.Errorf("no shutdown log line:\n%s", s.log.String())
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	var p int
	if _, err := fmt.Sscan(addr[i+1:], &p); err != nil {
		t.Fatalf("port of %q: %v", addr, err)
	}
	return p
}

func TestServeMountdOnly(t *testing.T) {
	// NFS over RDMA only, MOUNT on a listener of its own: the NFS TCP listener is off.
	s := &server{export: t.TempDir(), stdout: &clitest.Buffer{}, log: &clitest.Buffer{}}
	uid, gid := clientID()
	if err := os.Chown(s.export, int(uid), int(gid)); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readyc := make(chan nfsd.Info, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"-export", s.export, "-state", "", "-rdma", "127.0.0.1:0", "-tcp", "", "-mountd", "127.0.0.1:0", "-ro"}, s.stdout, s.log, func(i nfsd.Info) { readyc <- i })
	}()
	var info nfsd.Info
	select {
	case info = <-readyc:
	case err := <-errc:
		t.Fatal(err)
	}
	if info.TCP != nil || info.Mountd == nil || info.MountPort != portOf(t, info.Mountd.String()) {
		t.Fatalf("info %+v", info)
	}
	if !strings.Contains(info.MountCommand, fmt.Sprintf("mountport=%d,", info.MountPort)) {
		t.Errorf("mount command %q", info.MountCommand)
	}
	os.WriteFile(filepath.Join(s.export, "ro"), []byte("read only"), 0o644)

	// MOUNT answers on the mountd listener; NFS is not served there.
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	defer dcancel()
	mrt, err := oncrpc.DialTCP(dctx, info.Mountd.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mrt.Close()
	var ae *oncrpc.AcceptError
	if _, err := nfsclient.Mount(dctx, nfsclient.Transports{NFS: mrt}, info.ExportPath); !errors.As(err, &ae) || ae.Stat != oncrpc.ProgUnavail {
		t.Errorf("NFS over the mountd listener: %v, want PROG_UNAVAIL", err)
	}
	dev := soft.New(soft.Config{})
	defer dev.Close()
	rt, err := rpcrdma.Dial(dctx, dev, info.RDMA.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c, err := nfsclient.Mount(dctx, nfsclient.Transports{NFS: rt, Mount: mrt}, info.ExportPath)
	if err != nil {
		t.Fatal(err)
	}
	fh, _, err := c.LookupPath(dctx, "ro")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadAll(dctx, fh); err != nil || string(got) != "read only" {
		t.Errorf("read %q %v", got, err)
	}
	if _, err := c.Write(dctx, fh, 0, []byte("no"), nfs3.FileSync); !errors.Is(err, nfs3.StatusROFS) {
		t.Errorf("write to a read-only export: %v, want NFS3ERR_ROFS", err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestServeErrors(t *testing.T) {
	dir := t.TempDir()
	// A port already taken is reported with the flag that named it.
	s := startServer(t)
	err := run(context.Background(), []string{"-export", dir, "-state", "", "-rdma", "", "-tcp", s.info.TCP.String()}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "-tcp \""+s.info.TCP.String()+"\": cannot listen") {
		t.Errorf("second server on a taken TCP port: %v", err)
	}
	err = run(context.Background(), []string{"-export", dir, "-state", "", "-rdma", s.info.RDMA.String(), "-tcp", ""}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "-rdma \""+s.info.RDMA.String()+"\": cannot listen") {
		t.Errorf("second server on a taken RDMA port: %v", err)
	}
	// ibverbs is accepted by name and refused clearly when not compiled in.
	err = run(context.Background(), []string{"-export", dir, "-state", "", "-rdma", "127.0.0.1:0", "-tcp", "", "-provider", "ibverbs"}, io.Discard, io.Discard, nil)
	if err != nil && !errors.Is(err, verbs.ErrProviderNotBuilt) && !strings.Contains(err.Error(), "ibverbs") {
		t.Errorf("-provider ibverbs: %v", err)
	}
	if err == nil {
		t.Error("-provider ibverbs without a device succeeded")
	}
	// rpcbind unreachable: a clear error, nothing left listening.
	err = run(context.Background(), []string{"-export", dir, "-state", "", "-rdma", "", "-tcp", "127.0.0.1:0", "-rpcbind", "-rpcbind-addr", "unix:" + filepath.Join(dir, "no-such.sock")}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "rpcbind unix:") {
		t.Errorf("-rpcbind with rpcbind absent: %v", err)
	}
}

func TestRPCBindRegistration(t *testing.T) {
	rpcbindtest.Need(t)
	s := startServer(t, "-rpcbind")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpcbind.DialClient(ctx, rpcbindtest.Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, r := range []struct {
		prog, vers uint32
		netid      string
		addr       string
	}{
		{100003, 3, "tcp", s.info.TCP.String()},
		{100003, 3, "rdma", s.info.RDMA.String()},
		{100003, 4, "tcp", s.info.TCP.String()},
		{100003, 4, "rdma", s.info.RDMA.String()},
		{100005, 3, "tcp", s.info.TCP.String()},
		{100400, 1, "rdma", s.info.RDMA.String()},
	} {
		ap, err := c.Lookup(ctx, r.prog, r.vers, r.netid)
		if err != nil || ap.String() != r.addr {
			t.Errorf("rpcbind lookup %d/%d/%s = %v, %v; want %s", r.prog, r.vers, r.netid, ap, err, r.addr)
		}
	}
	if len(s.info.Registered) != 6 || !strings.Contains(s.stdout.String(), "registered with rpcbind") {
		t.Errorf("registrations reported: %v\n%s", s.info.Registered, s.stdout.String())
	}
	// A second server cannot take over the first one's registrations.
	err = run(ctx, []string{"-export", t.TempDir(), "-state", "", "-rdma", "", "-tcp", "127.0.0.1:0", "-rpcbind"}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("second registering server: %v", err)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	for _, netid := range []string{"tcp", "rdma"} {
		for _, vers := range []uint32{3, 4} {
			if ap, err := c.Lookup(ctx, 100003, vers, netid); !errors.Is(err, rpcbind.ErrNotRegistered) {
				t.Errorf("after exit NFS v%d/%s still registered: %v %v", vers, netid, ap, err)
			}
		}
	}
	if _, err := c.Lookup(ctx, 100005, 3, "tcp"); !errors.Is(err, rpcbind.ErrNotRegistered) {
		t.Errorf("after exit MOUNT still registered: %v", err)
	}
}

// TestConcurrentClients has several clients, over RDMA and TCP, write and read back
// files of their own at the same time.
func TestConcurrentClients(t *testing.T) {
	s := startServer(t, "-credits", "4")
	ctx := context.Background()
	const n = 6
	clients := make([]*nfsclient.Client, n)
	for i := range clients {
		netid := "rdma"
		if i%3 == 2 {
			netid = "tcp"
		}
		clients[i] = s.mount(t, netid)
	}
	errc := make(chan error, n)
	for i, c := range clients {
		go func() {
			data := bytes.Repeat([]byte{byte(i), byte(i * 7), 0x5a}, (300<<10)/3+i)
			name := fmt.Sprintf("client-%d", i)
			fh, _, err := c.Create(ctx, c.Root(), name, 0o644, true)
			if err == nil {
				err = c.WriteAll(ctx, fh, data)
			}
			var got []byte
			if err == nil {
				got, err = c.ReadAll(ctx, fh)
			}
			if err == nil && !bytes.Equal(got, data) {
				err = fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(data))
			}
			if err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			}
			errc <- err
		}()
	}
	for range clients {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	ents, err := os.ReadDir(s.export)
	if err != nil || len(ents) != n {
		t.Errorf("export holds %d entries (%v), want %d", len(ents), err, n)
	}
}
