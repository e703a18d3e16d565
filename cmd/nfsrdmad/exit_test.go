//go:build linux

package main

import (
	"encoding/json"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
)

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
		{[]string{"-export", dir, "-state", "", "-rdma", "", "-tcp", "127.0.0.1:0", "-rpcbind", "-rpcbind-addr", "bogus"}, 2, "", "-rpcbind-addr \"bogus\""},
		{[]string{"-export", dir, "-state", "", "-rdma", "", "-tcp", busy.Addr().String()}, 1, "", "address already in use"},
	} {
		got, out, errOut := clitest.Run(t, tc.args...)
		if got != tc.want || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("nfsrdmad %q: exit %d, want %d; stdout %q (want %q), stderr %q (want %q)", tc.args, got, tc.want, out, tc.stdout, errOut, tc.stderr)
		}
	}
}

// TestLogFormatJSON runs the server with -log-format json to a clean stop: every line
// it logs is one JSON object.
func TestLogFormatJSON(t *testing.T) {
	cmd := clitest.Command("-export", t.TempDir(), "-state", "", "-rdma", "127.0.0.1:0", "-tcp", "127.0.0.1:0", "-log-format", "json", "-log-level", "debug")
	errOut := startDaemon(t, cmd)
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
