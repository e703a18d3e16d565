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

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		arg            string
		want           int
		stdout, stderr string
	}{
		{"-h", 0, "", "-self"},
		{"-version", 0, "rdmabench ", ""},
		{"-nope", 2, "", "not defined"},
	} {
		got, out, errOut := clitest.Run(t, tc.arg)
		if got != tc.want || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("rdmabench %s: exit %d, want %d; stdout %q, stderr %q", tc.arg, got, tc.want, out, errOut)
		}
	}
}
