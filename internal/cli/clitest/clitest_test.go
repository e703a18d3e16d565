package clitest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	RunMain("fake", func() {
		fmt.Println(strings.Join(os.Args, "|"))
		fmt.Fprintln(os.Stderr, "to stderr")
		if len(os.Args) > 1 && os.Args[1] == "fail" {
			os.Exit(3)
		}
	})
	os.Exit(m.Run())
}

// TestRun checks that the child runs main under the given name with exactly the
// given arguments (none is none, an empty one is kept) and reports its status.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, 0, "fake\n"},
		{[]string{"fail", "a b", ""}, 3, "fake|fail|a b|\n"},
		{[]string{"x"}, 0, "fake|x\n"},
	} {
		code, out, errOut := Run(t, tc.args...)
		if code != tc.code || out != tc.out || errOut != "to stderr\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q", tc.args, code, out, errOut, tc.code, tc.out)
		}
	}
}
