//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// mainCmd is the command as a child process running main with args (see TestMain).
func mainCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(args, "\x1f"))
	return cmd
}

func TestExitStatus(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		args           []string
		want           int
		stdout, stderr string
	}{
		{[]string{"-h"}, 0, "", "usage: nfsrdmad"},
		{[]string{"-help"}, 0, "", "usage: nfsrdmad"},
		{[]string{"-version"}, 0, "nfsrdmad ", ""},
		{[]string{"-export", dir, "-log-format", "xml"}, 2, "", "-log-format \"xml\": want text or json"},
		{[]string{"-export", dir, "-credits", "0"}, 2, "", "-credits 0"},
		{[]string{"-nope"}, 2, "", "not defined"},
		{[]string{"-export", dir, "-state", "", "-rdma", "", "-tcp", busy.Addr().String()}, 1, "", "address already in use"},
	} {
		cmd := mainCmd(tc.args...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		got := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != tc.want || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("nfsrdmad %q: exit %d, want %d; stdout %q (want %q), stderr %q (want %q)", tc.args, got, tc.want, out.String(), tc.stdout, errOut.String(), tc.stderr)
		}
	}
}

// TestLogFormatJSON runs the server with -log-format json to a clean stop: every line
// it logs is one JSON object.
func TestLogFormatJSON(t *testing.T) {
	cmd := mainCmd("-export", t.TempDir(), "-state", "", "-rdma", "127.0.0.1:0", "-tcp", "127.0.0.1:0", "-log-format", "json", "-log-level", "debug")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "Mount it from Linux") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; stderr:\n%s", err, errOut.String())
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("log line %q is not JSON: %v", l, err)
			continue
		}
		msgs = append(msgs, m["@message"].(string))
	}
	if len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "|"), "stopped") {
		t.Errorf("log messages %q, want a \"stopped\" among them", msgs)
	}
}
