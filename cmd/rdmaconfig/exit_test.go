//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
)

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		want           int
		stdout, stderr string
	}{
		{[]string{"-h"}, 0, "", "-listen"},
		{[]string{"-help"}, 0, "", "-listen"},
		{[]string{"-version"}, 0, "rdmaconfig ", ""},
		{nil, 2, "", "nothing to serve"},
		{[]string{"-tcp", "127.0.0.1:0", "-log-format", "xml"}, 2, "", "-log-format \"xml\": want text or json"},
		{[]string{"-nope"}, 2, "", "not defined"},
		{[]string{"-listen", "nonsense"}, 2, "", "-listen \"nonsense\": want host:port"},
		{[]string{"-tcp", "127.0.0.1:0", "-register", "-rpcbind", "bogus"}, 2, "", "-rpcbind \"bogus\""},
		{[]string{"-query", "127.0.0.1:1", "-query-net", "tcp", "-timeout", "5s"}, 1, "", "127.0.0.1:1"},
	} {
		got, out, errOut := clitest.Run(t, tc.args...)
		if got != tc.want || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("rdmaconfig %q: exit %d, want %d; stdout %q (want %q), stderr %q (want %q)", tc.args, got, tc.want, out, tc.stdout, errOut, tc.stderr)
		}
	}
}

// TestLogFormatJSON serves with -log-format json under a context that has already
// ended: the start-up and stop lines are JSON objects.
func TestLogFormatJSON(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var errOut bytes.Buffer
	if err := run(ctx, []string{"-tcp", "127.0.0.1:0", "-log-format", "json"}, &bytes.Buffer{}, &errOut); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		if m["@module"] != "rdmaconfig" {
			continue // e.g. rdmaconfig.oncrpc's "serving", when a Serve goroutine runs before the shutdown
		}
		msgs = append(msgs, m["@message"].(string))
	}
	if strings.Join(msgs, "|") != "serving CONF_RDMA|stopped" {
		t.Errorf("log messages %q", msgs)
	}
}
