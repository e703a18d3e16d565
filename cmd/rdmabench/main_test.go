package main

import (
	"strings"
	"testing"
)

// TestRowSpeedupSameSense: the speedup column means the same on every row, above 1
// RDMA is faster. An RDMA path twice as fast as TCP prints 2.00 on a bandwidth row
// (RDMA's MB/s over TCP's) and on the round-trip row (TCP's µs over RDMA's); the
// latency row used to print RDMA/TCP, 0.50.
func TestRowSpeedupSameSense(t *testing.T) {
	last := func(row string) string {
		f := strings.Fields(row)
		return f[len(f)-1]
	}
	for _, c := range []struct {
		name, unit string
		v, tcp     float64
		want       string
	}{
		{"Send/Recv", "MB/s", 2000, 1000, "2.00"}, // RDMA twice as fast
		{"Send/Recv RTT", "µs", 10, 20, "2.00"},   // RDMA twice as fast
		{"RDMA Write", "MB/s", 500, 1000, "0.50"}, // RDMA twice as slow
		{"Send/Recv RTT", "µs", 40, 20, "0.50"},   // RDMA twice as slow
		{"Send/Recv RTT", "µs", 10, 0, "-"},       // no TCP baseline
		{"Send/Recv RTT", "µs", 0, 20, "-"},       // no RDMA samples
		{"RDMA Read", "MB/s", 1000, 0, "-"},       // no TCP baseline
	} {
		r := row(c.name, 64, c.v, c.tcp, c.unit)
		if got := last(r); got != c.want {
			t.Errorf("%s: RDMA %v %s, TCP %v %s: speedup %s, want %s (row %q)", c.name, c.v, c.unit, c.tcp, c.unit, got, c.want, strings.TrimSpace(r))
		}
	}
}
