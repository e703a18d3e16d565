//go:build linux

package benchio

import (
	"syscall"
	"testing"
	"time"
)

// ProcessSwitches counts the context switches of the process's threads: each sleep
// of a thread is one.
func TestProcessSwitchesCountsSleeps(t *testing.T) {
	before := ProcessSwitches()
	for range 10 {
		ts := syscall.NsecToTimespec(int64(time.Millisecond))
		if err := syscall.Nanosleep(&ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	if d := ProcessSwitches() - before; d < 10 {
		t.Fatalf("ProcessSwitches grew by %d across 10 sleeps of a thread", d)
	}
}
