package gonfsinterop

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/benchproc"
)

// serverProcessEnv names the environment variable that makes TestPeerServerProcess
// serve: "SERVER DIR", SERVER a key of peerServers.
const serverProcessEnv = "GONFSINTEROP_SERVER_PROCESS"

// TestPeerServerProcess is not a test: it is the server half of
// BenchmarkPeersTwoProcess, run by childServer in a child process (this test binary
// again). It serves DIR with the server serverProcessEnv names, prints a line
// "peer TCP RDMA EXPORT" (RDMA "-" when the server has no RDMA listener) and serves
// until its standard input closes, answering "cpu" (benchproc.Serve).
func TestPeerServerProcess(t *testing.T) {
	spec := os.Getenv(serverProcessEnv)
	if spec == "" {
		t.Skip("the server half of BenchmarkPeersTwoProcess, run by it")
	}
	name, dir, _ := strings.Cut(spec, " ")
	start, ok := peerServers[name]
	if !ok {
		t.Fatalf("%s=%q: no server %q", serverProcessEnv, spec, name)
	}
	p := start(t, dir)
	rdma := p.rdma
	if rdma == "" {
		rdma = "-"
	}
	fmt.Printf("peer %s %s %s\n", p.tcp, rdma, p.export)
	benchproc.Serve(os.Stdin, os.Stdout, nil)
}

// childServer returns a peer start function that serves its directory with the
// server name (a key of peerServers) in a child process, ended when tb's test or
// benchmark ends.
func childServer(name string) func(testing.TB, string) peer {
	return func(tb testing.TB, dir string) peer {
		tb.Helper()
		c := benchproc.Start(tb, "TestPeerServerProcess", serverProcessEnv+"="+name+" "+dir)
		f := c.Line("peer")
		if len(f) != 3 {
			tb.Fatalf("the %s process: peer line %q", name, f)
		}
		p := peer{tcp: f[0], rdma: f[1], export: f[2], cpu: c.CPU}
		if p.rdma == "-" {
			p.rdma = ""
		}
		return p
	}
}
