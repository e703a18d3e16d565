//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// mainArgsEnv makes the test binary run main with these unit-separator (0x1f)
// separated arguments (see TestMain), so that exit statuses are those of the real
// command.
const mainArgsEnv = "RDMACONFIG_TEST_MAIN_ARGS"

// runMainIfAsked runs main, which exits, when the test binary was started with
// mainArgsEnv set.
func runMainIfAsked() {
	args, ok := os.LookupEnv(mainArgsEnv)
	if !ok {
		return
	}
	os.Args = []string{"rdmaconfig"}
	if args != "" {
		os.Args = append(os.Args, strings.Split(args, "\x1f")...)
	}
	main()
	os.Exit(0)
}

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
		{[]string{"-query", "127.0.0.1:1", "-query-net", "tcp", "-timeout", "5s"}, 1, "", "127.0.0.1:1"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(tc.args, "\x1f"))
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
			t.Errorf("rdmaconfig %q: exit %d, want %d; stdout %q (want %q), stderr %q (want %q)", tc.args, got, tc.want, out.String(), tc.stdout, errOut.String(), tc.stderr)
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
