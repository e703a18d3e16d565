//go:build linux

package main

import (
	"strings"
	"testing"
)

// The summary reports each case's median round, not its mean or its last round.
func TestBenchTableMedians(t *testing.T) {
	rd := benchResult{benchCase: benchCase{"READ", 4096, 32, "rdma"}, rounds: []float64{90_000, 1_000, 50_000},
		cpu: []float64{9e-6, 30e-6, 20e-6}, srvCPU: []float64{12e-6, 11e-6, 40e-6}}
	tc := benchResult{benchCase: benchCase{"READ", 4096, 32, "tcp"}, rounds: []float64{10_000, 25_000, 99_000, 20_000, 30_000},
		cpu: []float64{25e-6, 21e-6, 99e-6, 1e-6, 22e-6}, srvCPU: []float64{18e-6, 19e-6, 17e-6, 16e-6, 50e-6}}
	if rd.iops() != 50_000 || tc.iops() != 25_000 {
		t.Fatalf("medians %v and %v, want 50000 and 25000", rd.iops(), tc.iops())
	}
	var out strings.Builder
	printBenchTable(&out, []benchResult{rd, tc}, []string{"rdma", "tcp"}, true)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	hdr := strings.Fields(lines[0])
	wantHdr := []string{"op", "size", "qd", "rdma", "MB/s", "rdma", "IOPS", "rdma", "cpu", "µs", "rdma", "srv", "µs",
		"tcp", "MB/s", "tcp", "IOPS", "tcp", "cpu", "µs", "tcp", "srv", "µs", "rdma/tcp"}
	if strings.Join(hdr, " ") != strings.Join(wantHdr, " ") {
		t.Errorf("header %q, want %q", hdr, wantHdr)
	}
	row := strings.Fields(lines[1])
	want := []string{"READ", "4", "KiB", "32", "204.8", "50000", "20.0", "12.0", "102.4", "25000", "22.0", "18.0", "2.00x"}
	if strings.Join(row, " ") != strings.Join(want, " ") {
		t.Fatalf("summary row %q, want %q", row, want)
	}
	// Without -server-metrics there is no server column.
	out.Reset()
	rd.srvCPU, tc.srvCPU = nil, nil
	printBenchTable(&out, []benchResult{rd, tc}, []string{"rdma", "tcp"}, false)
	row = strings.Fields(strings.Split(strings.TrimSpace(out.String()), "\n")[1])
	want = []string{"READ", "4", "KiB", "32", "204.8", "50000", "20.0", "102.4", "25000", "22.0", "2.00x"}
	if strings.Join(row, " ") != strings.Join(want, " ") {
		t.Fatalf("summary row without the server %q, want %q", row, want)
	}
}
