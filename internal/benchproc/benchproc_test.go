package benchproc

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// helperEnv makes TestHelperChild serve.
const helperEnv = "BENCHPROC_HELPER_CHILD"

// TestHelperChild is the child of TestChildAnswers: it announces itself, spends some CPU
// time when asked to, and echoes other requests.
func TestHelperChild(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("the child of TestChildAnswers")
	}
	fmt.Println("ready 1 2")
	Serve(os.Stdin, os.Stdout, func(req string, w io.Writer) {
		if req == "spin" {
			x := 0
			for i := range 50_000_000 {
				x += i ^ x
			}
			fmt.Fprintln(w, "spun", x&1)
			return
		}
		fmt.Fprintln(w, "echo", req)
	})
}

// A child started by Start announces its line, answers requests in order (skipping
// the lines that are not the answer asked for), and reports a CPU time that grows as
// it works.
func TestChildAnswers(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the child")
	}
	c := Start(t, "TestHelperChild", helperEnv+"=1")
	if f := c.Line("ready"); len(f) != 2 || f[0] != "1" || f[1] != "2" {
		t.Fatalf("ready line %q", f)
	}
	if f := c.Ask("hello", "echo"); len(f) != 1 || f[0] != "hello" {
		t.Fatalf("echo line %q", f)
	}
	cpu0 := c.CPU()
	c.Ask("spin", "spun")
	if cpu1 := c.CPU(); cpu1 <= cpu0 {
		t.Fatalf("child CPU time %v, then %v after spinning", cpu0, cpu1)
	}
}
