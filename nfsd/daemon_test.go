//go:build linux

package nfsd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	ok := Config{Export: dir, RDMA: ":20049", TCP: ":2049"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		mod   func(*Config)
		field string
		want  string
	}{
		{func(c *Config) { c.Export = "" }, "Export", "required"},
		{func(c *Config) { c.Export = filepath.Join(dir, "missing") }, "Export", "no such file"},
		{func(c *Config) { c.Export = file }, "Export", "not a directory"},
		{func(c *Config) { c.ExportPath = "x" }, "ExportPath", "must start with /"},
		{func(c *Config) { c.RDMA, c.TCP = "", "" }, "RDMA", "both empty"},
		{func(c *Config) { c.TCP = "2049" }, "TCP", "want host:port"},
		{func(c *Config) { c.Mountd = "h:port" }, "Mountd", "not a number"},
		{func(c *Config) { c.Provider = "x" }, "Provider", "unknown RDMA provider"},
		{func(c *Config) { c.Credits = -1 }, "Credits", "want 1 to 4096"},
		{func(c *Config) { c.Inline = 100 }, "Inline", "want 1024 to 262144"},
		{func(c *Config) { c.ReplyInline = 300000 }, "ReplyInline", "want 1024 to 262144"},
		{func(c *Config) { c.MaxIO = 10 }, "MaxIO", "want 4096"},
		{func(c *Config) { c.RPCBindTimeout = -1 }, "RPCBindTimeout", "negative"},
		{func(c *Config) { c.NFS4LeaseTime = time.Millisecond }, "NFS4LeaseTime", "at least 1s"},
		{func(c *Config) { c.NFS4GraceTime = -time.Second }, "NFS4GraceTime", "negative"},
	} {
		c := ok
		tc.mod(&c)
		err := c.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want a ConfigError for %s containing %q", c, err, tc.field, tc.want)
		}
	}
}

func tcpAddr(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }

func TestMountCommand(t *testing.T) {
	info := Info{RDMA: rpcrdma.Addr{Addr: tcpAddr("0.0.0.0:20049")}, TCP: tcpAddr("0.0.0.0:2049"), ExportPath: "/srv", MountPort: 2049}
	if got, want := MountCommand(info, "h"), "mount -t nfs -o vers=3,proto=rdma,port=20049,mountport=2049,mountproto=tcp,nolock h:/srv /mnt"; got != want {
		t.Errorf("MountCommand = %q, want %q", got, want)
	}
	if got, want := MountCommand4(info, "h"), "mount -t nfs -o vers=4.1,proto=rdma,port=20049 h:/srv /mnt"; got != want {
		t.Errorf("MountCommand4 = %q, want %q", got, want)
	}
	info.RDMA = nil
	if got, want := MountCommand(info, "h"), "mount -t nfs -o vers=3,proto=tcp,port=2049,mountport=2049,mountproto=tcp,nolock h:/srv /mnt"; got != want {
		t.Errorf("MountCommand without RDMA = %q, want %q", got, want)
	}
	if got, want := MountCommand4(info, "[2001:db8::1]"), "mount -t nfs -o vers=4.1,proto=tcp6,port=2049 [2001:db8::1]:/srv /mnt"; got != want {
		t.Errorf("MountCommand4 without RDMA, IPv6 = %q, want %q", got, want)
	}
	if got := MountCommand4(Info{Mountd: tcpAddr("0.0.0.0:635"), ExportPath: "/srv"}, "h"); got != "" {
		t.Errorf("MountCommand4 without an NFS listener = %q", got)
	}
	info.RDMA = rpcrdma.Addr{Addr: tcpAddr("[2001:db8::1]:20049")}
	if got, want := MountCommand(info, "[2001:db8::1]"), "mount -t nfs -o vers=3,proto=rdma6,port=20049,mountport=2049,mountproto=tcp6,nolock [2001:db8::1]:/srv /mnt"; got != want {
		t.Errorf("MountCommand for IPv6 = %q, want %q", got, want)
	}
	if h := hostForMount(Info{TCP: tcpAddr("[2001:db8::1]:2049")}); h != "[2001:db8::1]" {
		t.Errorf("host for an IPv6 listener: %q", h)
	}
	if h := hostForMount(Info{TCP: tcpAddr("[::ffff:192.0.2.7]:2049")}); h != "192.0.2.7" {
		t.Errorf("host for a mapped IPv4 listener: %q", h)
	}
	if h, _ := os.Hostname(); h != "" && hostForMount(Info{TCP: tcpAddr("0.0.0.0:2049")}) != h {
		t.Errorf("host for a wildcard listener: %q, want the host name %q", hostForMount(Info{TCP: tcpAddr("0.0.0.0:2049")}), h)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want bool
	}{
		{Info{TCP: tcpAddr("127.0.0.1:2049"), RDMA: rpcrdma.Addr{Addr: tcpAddr("127.0.0.1:20049")}}, true},
		{Info{TCP: tcpAddr("[::1]:2049")}, true},
		{Info{TCP: tcpAddr("127.0.0.1:2049"), Mountd: tcpAddr("0.0.0.0:635")}, false},
		{Info{TCP: tcpAddr("[::]:2049")}, false},
		{Info{RDMA: rpcrdma.Addr{Addr: tcpAddr("192.0.2.1:20049")}}, false},
	} {
		if got := loopbackOnly(tc.info); got != tc.want {
			t.Errorf("loopbackOnly(%v %v %v) = %v", tc.info.RDMA, tc.info.TCP, tc.info.Mountd, got)
		}
	}
}

func TestRegistrationsFor(t *testing.T) {
	info := Info{RDMA: rpcrdma.Addr{Addr: tcpAddr("[::]:20049")}, TCP: tcpAddr("127.0.0.1:2049"), Mountd: tcpAddr("127.0.0.1:635")}
	regs, err := registrationsFor(info)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range regs {
		got = append(got, r.String())
	}
	want := []string{
		"100003/3/tcp=127.0.0.1.8.1",
		"100003/3/rdma=0.0.0.0.78.81", "100003/3/rdma6=::.78.81",
		"100003/4/tcp=127.0.0.1.8.1",
		"100003/4/rdma=0.0.0.0.78.81", "100003/4/rdma6=::.78.81",
		"100005/3/tcp=127.0.0.1.2.123",
		"100400/1/rdma=0.0.0.0.78.81", "100400/1/rdma6=::.78.81",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("registrations\n got %q\nwant %q", got, want)
	}
	if _, err := registrationsFor(Info{TCP: &net.UnixAddr{Name: "/x", Net: "unix"}}); err == nil {
		t.Error("registrations of a unix listener succeeded")
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	ready := make(chan Info, 1)
	go func() {
		errc <- Run(ctx, Config{Export: t.TempDir(), TCP: "127.0.0.1:0"}, func(i Info) { ready <- i })
	}()
	var info Info
	select {
	case info = <-ready:
	case err := <-errc:
		t.Fatal(err)
	}
	if info.RDMA != nil || info.TCP == nil || info.MountPort == 0 || !strings.Contains(info.MountCommand, "proto=tcp") {
		t.Errorf("info %+v", info)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	// The port is free again.
	l, err := net.Listen("tcp", info.TCP.String())
	if err != nil {
		t.Errorf("listener not closed: %v", err)
	} else {
		l.Close()
	}
}

// Config.Async reaches the NFS server: its start-up log names the export async.
func TestRunAsyncExport(t *testing.T) {
	for _, async := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var logs clitest.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
		errc := make(chan error, 1)
		ready := make(chan Info, 1)
		go func() {
			errc <- Run(ctx, Config{Export: t.TempDir(), TCP: "127.0.0.1:0", Async: async, Logger: log}, func(i Info) { ready <- i })
		}()
		select {
		case <-ready:
		case err := <-errc:
			t.Fatal(err)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
		if want := fmt.Sprintf("async=%v", async); !strings.Contains(logs.String(), want) {
			t.Errorf("Async %v: log has no %q:\n%s", async, want, logs.String())
		}
	}
}
