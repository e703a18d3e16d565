package main

import (
	"os"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
)

func TestMain(m *testing.M) {
	clitest.RunMain("rdmabench", main)
	os.Exit(m.Run())
}

// TestExitStatus: -h and -version exit 0, an unknown flag and a measurement flag out
// of range exit 2 naming the flag (they used to run every measurement: with no
// samples, into an invalid work request after the bandwidth tests, or into a hang).
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		arg            string
		want           int
		stdout, stderr string
	}{
		{"-h", 0, "", "-self"},
		{"-version", 0, "rdmabench ", ""},
		{"-nope", 2, "", "not defined"},
		{"-self -rounds 0", 2, "", "-rounds 0: want at least 1"},
		{"-self -duration -1s", 2, "", "-duration -1s: want a positive duration"},
		{"-self -duration 0", 2, "", "-duration 0s"},
		{"-self -max-iters 0", 2, "", "-max-iters 0"},
		{"-self -small -1", 2, "", "-small -1: want 1 to"},
		{"-self -small 0", 2, "", "-small 0"},
		{"-self -small 2000000", 2, "", "-small 2000000"},
	} {
		got, out, errOut := clitest.Run(t, strings.Fields(tc.arg)...)
		if got != tc.want || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("rdmabench %s: exit %d, want %d; stdout %q, stderr %q", tc.arg, got, tc.want, out, errOut)
		}
	}
}
