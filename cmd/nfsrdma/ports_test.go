//go:build linux

package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
)

// startRegistry serves an in-memory rpcbind on an ephemeral loopback port (never the
// host's port 111) and returns it with its port.
func startRegistry(t *testing.T) (*rpcbind.Registry, int) {
	t.Helper()
	reg := rpcbind.NewRegistry()
	rs := oncrpc.NewServer(nil)
	reg.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rs.Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10e9)
		defer cancel()
		rs.Shutdown(ctx)
		<-done
	})
	return reg, l.Addr().(*net.TCPAddr).Port
}

// TestPortsFromRPCBind: with no port flags, the commands ask the server's rpcbind
// for NFS over rdma or tcp and for MOUNT, and reach the server on those ports.
func TestPortsFromRPCBind(t *testing.T) {
	s := startServer(t)
	reg, rport := startRegistry(t)
	tcp := uint16(portOfAddr(s.info.TCP.String()))
	rdma := uint16(portOfAddr(s.info.RDMA.String()))
	for _, m := range []rpcbind.RPCB{
		{Prog: nfs3.Program, Vers: nfs3.Version, NetID: "tcp", Addr: "0.0.0.0." + strconv.Itoa(int(tcp>>8)) + "." + strconv.Itoa(int(tcp&255))},
		{Prog: nfs3.Program, Vers: nfs3.Version, NetID: "rdma", Addr: "0.0.0.0." + strconv.Itoa(int(rdma>>8)) + "." + strconv.Itoa(int(rdma&255))},
		{Prog: nfs3.MountProgram, Vers: nfs3.MountVersion, NetID: "tcp", Addr: "0.0.0.0." + strconv.Itoa(int(tcp>>8)) + "." + strconv.Itoa(int(tcp&255))},
	} {
		m.Owner = "test"
		if err := reg.Set(m); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(s.export, "f"), []byte("found by rpcbind"), 0o644)
	for _, proto := range []string{"rdma", "tcp"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"get", "-proto", proto, "-rpcbind-port", strconv.Itoa(rport), "-log-level", "debug", "127.0.0.1:/export/f", "-"}, &out, &errOut)
		if err != nil || out.String() != "found by rpcbind" {
			t.Fatalf("get over %s with ports from rpcbind: %v %q\n%s", proto, err, out.String(), errOut.String())
		}
		for _, w := range []string{
			"port from rpcbind: server=127.0.0.1 program=100005 version=3 transport=tcp port=" + strconv.Itoa(int(tcp)),
			"port from rpcbind: server=127.0.0.1 program=100003 version=3 transport=" + proto + " port=",
		} {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("over %s the debug log lacks %q:\n%s", proto, w, errOut.String())
			}
		}
	}
}

// TestPortFallback: when rpcbind does not answer, or knows nothing of the program,
// the well-known port (the flag's default) is used, and the reason logged at debug.
func TestPortFallback(t *testing.T) {
	_, rport := startRegistry(t) // knows only itself
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close()
	for _, tc := range []struct {
		rpcbindPort int
		reason      string
	}{
		{rport, "not registered"},
		{deadPort, "connection refused"},
	} {
		var logs bytes.Buffer
		f := &connFlags{rdmaPort: 20049, tcpPort: 2049, mountport: 2049, rpcbindPort: tc.rpcbindPort, set: map[string]bool{},
			log: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &logs})}
		p := &portFinder{f: f, host: "127.0.0.1"}
		if got := p.mountPort(context.Background()); got != 2049 {
			t.Errorf("MOUNT port %d, want 2049", got)
		}
		if got := p.nfsPort(context.Background(), "rdma"); got != 20049 {
			t.Errorf("NFS rdma port %d, want 20049", got)
		}
		p.close()
		if n := strings.Count(logs.String(), "using the well-known port"); n != 2 || !strings.Contains(logs.String(), tc.reason) {
			t.Errorf("rpcbind port %d: debug log %q, want two fallbacks saying %q", tc.rpcbindPort, logs.String(), tc.reason)
		}
	}
	// Ports given on the command line are not looked up.
	f := &connFlags{port: 7, mountport: 8, rpcbindPort: deadPort, set: map[string]bool{"mountport": true}, log: hclog.NewNullLogger()}
	p := &portFinder{f: f, host: "127.0.0.1"}
	if p.mountPort(context.Background()) != 8 || p.nfsPort(context.Background(), "tcp") != 7 || p.c != nil || p.err != nil {
		t.Error("given ports were looked up")
	}
}

func TestMountCandidates(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want string
	}{
		{"/", "/"},
		{"/f", "/ /f"},
		{"/srv/data/x", "/ /srv /srv/data /srv/data/x"},
	} {
		if got := strings.Join(mountCandidates(tc.p), " "); got != tc.want {
			t.Errorf("mountCandidates(%q) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
