// Package benchproc runs a benchmark's server in a process of its own, as nfsrdma bench
// meets nfsrdmad: the test binary again, running one test function that serves when an
// environment variable is set. Parent and child talk in lines of text, "KEY FIELDS...":
// the child announces what it serves on its standard output and answers the requests
// its parent writes to its standard input, "cpu" among them, until that input closes.
package benchproc

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

// Child is a server process started by Start.
type Child struct {
	tb   testing.TB
	name string
	in   io.Writer
	out  *bufio.Scanner
}

// Start runs the test function test of this test binary in a child process, with env
// ("NAME=value") added to its environment; the child is expected to serve only when env
// is set. When tb ends, the child's standard input is closed and the child waited for;
// a child that then fails fails tb.
func Start(tb testing.TB, test, env string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.count", "1")
	cmd.Env = append(os.Environ(), env)
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
		tb.Fatalf("starting %s: %v", test, err)
	}
	tb.Cleanup(func() {
		in.Close() // the child ends at EOF
		if err := cmd.Wait(); err != nil {
			tb.Errorf("%s process: %v", test, err)
		}
	})
	return &Child{tb: tb, name: test, in: in, out: bufio.NewScanner(out)}
}

// Line returns the fields after key of the child's next line that begins with key,
// skipping the other lines (the test framework's among them). It fails the test when the
// child's output ends first.
func (c *Child) Line(key string) []string {
	c.tb.Helper()
	for c.out.Scan() {
		if f := strings.Fields(c.out.Text()); len(f) > 0 && f[0] == key {
			return f[1:]
		}
	}
	c.tb.Fatalf("%s process: no %q line: %v", c.name, key, c.out.Err())
	return nil
}

// Ask writes the request req to the child and returns the fields of its answer, the
// next line beginning with key.
func (c *Child) Ask(req, key string) []string {
	c.tb.Helper()
	if _, err := io.WriteString(c.in, req+"\n"); err != nil {
		c.tb.Fatalf("%s process: asking %q: %v", c.name, req, err)
	}
	return c.Line(key)
}

// CPU returns the CPU time the child's process has used so far (benchio.ProcessCPU), as
// a child in Serve answers "cpu".
func (c *Child) CPU() time.Duration {
	c.tb.Helper()
	f := c.Ask("cpu", "cpu")
	if len(f) != 1 {
		c.tb.Fatalf("%s process: cpu line %q", c.name, f)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		c.tb.Fatalf("%s process: cpu line %q: %v", c.name, f, err)
	}
	return time.Duration(ns)
}

// Serve is the child's side: it reads requests from r, one per line, until r ends. It
// answers "cpu" on w with "cpu NS", the CPU time the process has used, and hands every
// other request to handle (when not nil), which answers on w itself.
func Serve(r io.Reader, w io.Writer, handle func(req string, w io.Writer)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch req := sc.Text(); {
		case req == "cpu":
			fmt.Fprintf(w, "cpu %d\n", benchio.ProcessCPU().Nanoseconds())
		case handle != nil:
			handle(req, w)
		}
	}
}
