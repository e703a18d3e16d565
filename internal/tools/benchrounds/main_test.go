package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeEnv makes this test binary act as a benchmark binary: it prints benchmark lines,
// RDMA at 64 connections twice as fast when it was run under the name new as under
// old, and appends that name
// to the file fakeEnv names, so that the test sees the order of the runs.
const fakeEnv = "BENCHROUNDS_FAKE_LOG"

func TestMain(m *testing.M) {
	if log := os.Getenv(fakeEnv); log != "" {
		name := filepath.Base(os.Args[0])
		f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			os.Exit(3)
		}
		fmt.Fprintln(f, name)
		f.Close()
		k := 1.0
		if name == "new" {
			k = 2
		}
		fmt.Println("goos: linux")
		fmt.Printf("BenchmarkConns/rdma/conns=1-2  \t 100\t %g ns/op\t %g calls/s\n", 1000.0, 40000.0)
		fmt.Printf("BenchmarkConns/rdma/conns=64-2 \t 100\t %g ns/op\t %g calls/s\n", 500/k, 90000*k)
		fmt.Printf("BenchmarkConns/tcp/conns=1-2   \t 100\t %g ns/op\t %g calls/s\n", 1000.0, 40000.0)
		fmt.Printf("BenchmarkConns/tcp/conns=64-2  \t 100\t %g ns/op\t %g calls/s\n", 400.0, 100000.0)
		fmt.Println("PASS")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		name string
		want result
	}{
		{"BenchmarkTransportNull/rdma-soft-2   \t   40000\t     16972 ns/op\t       6 B/op\t       0 allocs/op",
			"TransportNull/rdma-soft", result{"ns/op": 16972, "B/op": 6, "allocs/op": 0}},
		{"BenchmarkX/conns=64 100 2.5e3 ns/op", "X/conns=64", result{"ns/op": 2500}},
		{"BenchmarkPeers/op=READ/size=4KiB/qd=32/peer=go-nfs-tcp-2 2000 41831 ns/op 97.92 MB/s",
			"Peers/op=READ/size=4KiB/qd=32/peer=go-nfs-tcp", result{"ns/op": 41831, "MB/s": 97.92}},
	} {
		name, r, ok := parseLine(tc.line)
		if !ok || name != tc.name || fmt.Sprint(r) != fmt.Sprint(tc.want) {
			t.Errorf("parseLine(%q) = %q, %v, %v; want %q, %v", tc.line, name, r, ok, tc.name, tc.want)
		}
	}
	for _, line := range []string{"PASS", "goos: linux", "BenchmarkX-2 abc 10 ns/op", "BenchmarkX-2 10 10", "BenchmarkX-2 10 ten ns/op"} {
		if _, _, ok := parseLine(line); ok {
			t.Errorf("parseLine(%q) accepted a line that is not a benchmark result", line)
		}
	}
}

// TestRatioTerms splits specs whose benchmark names contain slashes themselves.
func TestRatioTerms(t *testing.T) {
	rd := round{
		"Conns/rdma/conns=1": {"calls/s": 40}, "Conns/rdma/conns=64": {"calls/s": 90},
		"Conns/tcp/conns=1": {"calls/s": 40}, "Conns/tcp/conns=64": {"calls/s": 100},
		"Null/rdma": {"ns/op": 16}, "Null/raw": {"ns/op": 13},
	}
	for _, tc := range []struct {
		spec string
		want float64
	}{
		{"a=Null/rdma/Null/raw@ns/op", 16.0 / 13},
		{"g=Conns/rdma/conns=64/Conns/rdma/conns=1/Conns/tcp/conns=64/Conns/tcp/conns=1@calls/s", (90.0 / 40) / (100.0 / 40)},
	} {
		q, err := parseRatio(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		v, err := q.value(rd)
		if err != nil || v != tc.want {
			t.Errorf("%s = %v, %v; want %v", tc.spec, v, err, tc.want)
		}
	}
	for _, spec := range []string{"x=Null/rdma@ns/op", "x=Null/rdma/Null/nope@ns/op", "x=Null/rdma/Null/raw/Null/rdma@ns/op", "x=Null/rdma/Null/raw@B/op"} {
		q, err := parseRatio(spec)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := q.value(rd); err == nil {
			t.Errorf("%s = %v, want an error", spec, v)
		}
	}
	for _, spec := range []string{"Null/rdma/Null/raw@ns/op", "x=Null/rdma/Null/raw", "x=Null/rdma/Null/raw@"} {
		if _, err := parseRatio(spec); err == nil {
			t.Errorf("parseRatio(%q) accepted it", spec)
		}
	}
}

// TestRunInterleaves runs the command on two fake binaries: every round runs each once,
// in the order given, and the report gives each one's medians and ratios.
func TestRunInterleaves(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{"old", "new"} {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Skip("no symlinks here:", err)
		}
	}
	log := filepath.Join(dir, "log")
	t.Setenv(fakeEnv, log)
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"-rounds", "3", "-dir", dir,
		"-ratio", "growth=Conns/rdma/conns=64/Conns/rdma/conns=1/Conns/tcp/conns=64/Conns/tcp/conns=1@calls/s",
		"old=" + filepath.Join(dir, "old"), "new=" + filepath.Join(dir, "new")}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	order, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(order)); strings.Join(got, " ") != "old new old new old new" {
		t.Errorf("runs in the order %v, want old and new alternating, three rounds", got)
	}
	report := out.String()
	for _, want := range []string{
		"== old (3 rounds)",
		"Conns/rdma/conns=64: calls/s 90000 [90000–90000], ns/op 500.0 [500.0–500.0]",
		"ratio growth (calls/s): 0.9 [0.9–0.9]",
		"== new (3 rounds)",
		"Conns/rdma/conns=64: calls/s 180000 [180000–180000], ns/op 250.0 [250.0–250.0]",
		"ratio growth (calls/s): 1.8 [1.8–1.8]",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// TestRunFails checks that a binary that fails, a ratio that names a benchmark the
// binaries do not run, and bad arguments end the command with an error naming them.
func TestRunFails(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-dir", dir, "x=" + filepath.Join(dir, "missing")}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "round 1, x") {
		t.Errorf("missing binary: err %v, want one naming round 1 and x", err)
	}
	// A ratio naming a benchmark the binaries do not run: the first round says so.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "old")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	log := filepath.Join(dir, "log")
	t.Setenv(fakeEnv, log)
	err = run(context.Background(), []string{"-rounds", "5", "-dir", dir, "-ratio", "x=Conns/rdma/conns=1/Conns/nope@ns/op",
		"old=" + filepath.Join(dir, "old")}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "ratio x") {
		t.Errorf("unknown benchmark in a ratio: err %v, want one naming the ratio", err)
	}
	if runs, _ := os.ReadFile(log); strings.Count(string(runs), "old") != 1 {
		t.Errorf("the binary ran %d times, want once before the bad ratio stops the command", strings.Count(string(runs), "old"))
	}
	if err := run(context.Background(), []string{"-dir", dir}, &out, &errOut); err == nil {
		t.Error("no binaries: no error")
	}
	if err := run(context.Background(), []string{"x"}, &out, &errOut); err == nil {
		t.Error("an argument without =: no error")
	}
}
