//go:build linux

package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
)

func TestMain(m *testing.M) {
	clitest.RunMain("nfsrdma", main)
	os.Exit(m.Run())
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		want   int
		stdout string // a piece of what it prints on stdout
		stderr string // ... and on stderr
	}{
		{[]string{"-h"}, 0, "Commands:", ""},
		{[]string{"help"}, 0, "Commands:", ""},
		{[]string{"-version"}, 0, "nfsrdma ", ""},
		{[]string{"version"}, 0, "nfsrdma ", ""},
		{[]string{"ls", "-h"}, 0, "", "usage: nfsrdma ls"},
		{[]string{"get", "-help"}, 0, "", "usage: nfsrdma get"},
		{[]string{"put", "-h"}, 0, "", "usage: nfsrdma put"},
		{[]string{"mkdir", "-h"}, 0, "", "usage: nfsrdma mkdir"},
		{[]string{"rm", "-h"}, 0, "", "usage: nfsrdma rm"},
		{[]string{"bench", "-h"}, 0, "", "usage: nfsrdma bench"},
		{[]string{"demo", "-h"}, 0, "", "usage: nfsrdma demo"},
		{nil, 2, "", "no command given"},
		{[]string{"frob"}, 2, "", "unknown command"},
		{[]string{"ls", "-nope", "h:/x"}, 2, "", "flag provided but not defined"},
		{[]string{"ls", "-proto", "udp", "h:/x"}, 2, "", "-proto \"udp\""},
		{[]string{"ls"}, 2, "", "want 1 argument(s)"},
		{[]string{"ls", "-mountport", "1", "-timeout", "5s", "127.0.0.1:/x"}, 1, "", "MOUNT over TCP at 127.0.0.1:1"},
	} {
		got, out, errOut := clitest.Run(t, tc.args...)
		if got != tc.want || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("nfsrdma %q: exit %d, want %d; stdout %q (want %q), stderr %q (want %q)", tc.args, got, tc.want, out, tc.stdout, errOut, tc.stderr)
		}
	}
}

// TestExitStatusInterrupted interrupts ls while it waits for a server that accepts
// the connection and never answers: the command exits 130 after SIGINT and 143 after
// SIGTERM, as shells expect.
func TestExitStatusInterrupted(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			cmd := clitest.Command("ls", "-mountport", strconv.Itoa(port), "-port", strconv.Itoa(port), "-proto", "tcp", "127.0.0.1:/x")
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// The first call has arrived: the command is waiting for its reply.
			if _, err := c.Read(make([]byte, 4)); err != nil {
				t.Fatal(err)
			}
			cmd.Process.Signal(tc.sig)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.want {
				t.Errorf("exit %v, want status %d; stderr %q", err, tc.want, errOut.String())
			}
		})
	}
}
