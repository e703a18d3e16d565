//go:build unix

package benchio

import (
	"testing"
	"time"
)

// ProcessCPU counts the CPU time the process spends: it grows across work.
func TestProcessCPUGrows(t *testing.T) {
	before := ProcessCPU()
	x := uint64(1)
	for end := time.Now().Add(10 * time.Second); ProcessCPU()-before < time.Millisecond; {
		if time.Now().After(end) {
			t.Fatalf("ProcessCPU stayed at %v (from %v) through 10 s of computing", ProcessCPU(), before)
		}
		for i := range 1 << 16 {
			x = x*6364136223846793005 + uint64(i)
		}
	}
	if x == 0 {
		t.Log(x) // keeps the loop's work
	}
}
