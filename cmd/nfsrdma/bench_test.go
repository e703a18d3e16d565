//go:build linux

package main

import (
	"strings"
	"testing"
)

// The summary reports each case's median round, not its mean or its last round.
func TestBenchTableMedians(t *testing.T) {
	rd := benchResult{benchCase: benchCase{"READ", 4096, 32, "rdma"}, rounds: []float64{90_000, 1_000, 50_000}}
	tc := benchResult{benchCase: benchCase{"READ", 4096, 32, "tcp"}, rounds: []float64{10_000, 25_000, 99_000, 20_000, 30_000}}
	if rd.iops() != 50_000 || tc.iops() != 25_000 {
		t.Fatalf("medians %v and %v, want 50000 and 25000", rd.iops(), tc.iops())
	}
	var out strings.Builder
	printBenchTable(&out, []benchResult{rd, tc}, []string{"rdma", "tcp"})
	row := strings.Fields(strings.Split(strings.TrimSpace(out.String()), "\n")[1])
	want := []string{"READ", "4", "KiB", "32", "204.8", "50000", "102.4", "25000", "2.00x"}
	if strings.Join(row, " ") != strings.Join(want, " ") {
		t.Fatalf("summary row %q, want %q", row, want)
	}
}
