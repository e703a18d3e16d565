//go:build linux

package main

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
)

// startDaemon starts cmd (clitest.Command) with its stderr in the returned buffer
// and its stdout read to the end in the background, and returns once the start-up
// summary has been printed; it fails the test when the process ends first. The
// process is killed when the test ends, if it is still running.
func startDaemon(t *testing.T, cmd *exec.Cmd) *clitest.Buffer {
	t.Helper()
	stderr := new(clitest.Buffer)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Mount it from Linux") {
			go func() {
				for sc.Scan() {
				}
			}()
			return stderr
		}
	}
	cmd.Wait()
	t.Fatalf("no start-up summary; stderr:\n%s", stderr.String())
	return nil
}
