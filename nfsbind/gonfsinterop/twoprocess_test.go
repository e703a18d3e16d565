package gonfsinterop

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// serverProcessEnv names the environment variable that makes TestPeerServerProcess
// serve: "SERVER DIR", SERVER a key of peerServers.
const serverProcessEnv = "GONFSINTEROP_SERVER_PROCESS"

// TestPeerServerProcess is not a test: it is the server half of
// BenchmarkPeersTwoProcess, run by childServer in a child process (this test binary
// again). It serves DIR with the server serverProcessEnv names, prints a line
// "peer TCP RDMA EXPORT" (RDMA "-" when the server has no RDMA listener) and serves
// until its standard input closes.
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
	io.Copy(io.Discard, os.Stdin)
}

// childServer returns a peer start function that serves its directory with the
// server name (a key of peerServers) in a child process, ended when tb's test or
// benchmark ends.
func childServer(name string) func(testing.TB, string) peer {
	return func(tb testing.TB, dir string) peer {
		tb.Helper()
		cmd := exec.Command(os.Args[0], "-test.run", "^TestPeerServerProcess$", "-test.count", "1")
		cmd.Env = append(os.Environ(), serverProcessEnv+"="+name+" "+dir)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			tb.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			tb.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			tb.Fatalf("starting the %s process: %v", name, err)
		}
		tb.Cleanup(func() {
			in.Close() // the child exits at EOF
			if err := cmd.Wait(); err != nil {
				tb.Errorf("the %s process: %v", name, err)
			}
		})
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "peer" {
				continue
			}
			go io.Copy(io.Discard, out) // the child's "PASS" at its end
			p := peer{tcp: f[1], rdma: f[2], export: f[3]}
			if p.rdma == "-" {
				p.rdma = ""
			}
			return p
		}
		tb.Fatalf("the %s process printed no peer line: %v", name, sc.Err())
		return peer{}
	}
}
