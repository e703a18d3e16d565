// Package clitest runs a command's main in a child process of its test binary, so
// that tests see the exit statuses and output of the real command.
package clitest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// argsEnv makes the test binary run main with these unit-separator (0x1f)
// separated arguments (see RunMain and Command).
const argsEnv = "RPCRDMA_CLITEST_MAIN_ARGS"

// RunMain runs main as the command name with the arguments given to Command,
// then exits 0 (main normally exits itself; reaching that is a bug the status
// shows). It returns at once in the test binary itself. Call it first in TestMain.
func RunMain(name string, main func()) {
	args, ok := os.LookupEnv(argsEnv)
	if !ok {
		return
	}
	os.Args = []string{name}
	if args != "" {
		os.Args = append(os.Args, strings.Split(args, "\x1f")...)
	}
	main()
	os.Exit(0)
}

// Command is the test binary as a child process running main with args; the
// package's TestMain must call RunMain.
func Command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), argsEnv+"="+strings.Join(args, "\x1f"))
	return cmd
}

// ExitCode runs cmd to the end and returns its exit status; it fails the test
// when cmd cannot run.
func ExitCode(t testing.TB, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// Run runs main with args in a child process and returns its exit status and
// what it printed on stdout and stderr.
func Run(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := Command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code = ExitCode(t, cmd)
	return code, out.String(), errOut.String()
}

// Buffer is a bytes.Buffer safe for a command's goroutines and the test at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
