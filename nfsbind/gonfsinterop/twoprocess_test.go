package gonfsinterop

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
)

// serverProcessEnv names the environment variable that makes TestPeerServerProcess
// serve: "SERVER DIR", SERVER a key of peerServers.
const serverProcessEnv = "GONFSINTEROP_SERVER_PROCESS"

// TestPeerServerProcess is not a test: it is the server half of
// BenchmarkPeersTwoProcess, run by childServer in a child process (this test binary
// again). It serves DIR with the server serverProcessEnv names, prints a line
// "peer TCP RDMA EXPORT" (RDMA "-" when the server has no RDMA listener) and serves
// until its standard input closes, answering each line "cpu" read from it with
// "cpu NS", the CPU time its process has used (benchio.ProcessCPU).
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
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "cpu" {
			fmt.Printf("cpu %d\n", benchio.ProcessCPU())
		}
	}
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
		f, err := childLine(sc, "peer")
		if err != nil || len(f) != 3 {
			tb.Fatalf("the %s process: peer line %q: %v", name, f, err)
		}
		p := peer{tcp: f[0], rdma: f[1], export: f[2]}
		if p.rdma == "-" {
			p.rdma = ""
		}
		p.cpu = func(tb testing.TB) time.Duration {
			tb.Helper()
			if _, err := io.WriteString(in, "cpu\n"); err != nil {
				tb.Fatalf("the %s process: asking for its CPU time: %v", name, err)
			}
			f, err := childLine(sc, "cpu")
			var ns int64
			if err == nil && len(f) == 1 {
				ns, err = strconv.ParseInt(f[0], 10, 64)
			}
			if err != nil {
				tb.Fatalf("the %s process: cpu line %q: %v", name, f, err)
			}
			return time.Duration(ns)
		}
		return p
	}
}

// childLine returns the fields after key of the next line sc reads that begins with
// key, skipping others (what the test framework prints).
func childLine(sc *bufio.Scanner, key string) ([]string, error) {
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == key {
			return f[1:], nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, io.ErrUnexpectedEOF
}
