package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// mainArgsEnv makes the test binary run main with these unit-separator (0x1f)
// separated arguments, so that exit statuses are those of the real command.
const mainArgsEnv = "RDMABENCH_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(mainArgsEnv); ok {
		os.Args = append([]string{"rdmabench"}, strings.Split(args, "\x1f")...)
		main()
		os.Exit(0)
	}
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
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), mainArgsEnv+"="+tc.arg)
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
			t.Errorf("rdmabench %s: exit %d, want %d; stdout %q, stderr %q", tc.arg, got, tc.want, out.String(), errOut.String())
		}
	}
}
