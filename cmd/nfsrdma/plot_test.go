//go:build linux

package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// svgSeries parses an SVG as XML (failing on anything malformed) and returns its
// series polylines by "proto/metric/op/size", with their point counts.
func svgSeries(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	series := map[string]int{}
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Space + " " + se.Name.Local
		}
		if se.Name.Local != "polyline" {
			continue
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		if attr["class"] != "series" {
			continue
		}
		key := attr["data-proto"] + "/" + attr["data-metric"] + "/" + attr["data-op"] + "/" + attr["data-size"]
		series[key] = len(strings.Fields(attr["points"]))
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Fatalf("root element %q, want an SVG <svg>", root)
	}
	return series
}

// The plot is well-formed SVG with a line per transport, metric, operation and size,
// a point per queue depth; text is escaped.
func TestBenchPlotSeries(t *testing.T) {
	var results []benchResult
	for _, op := range []string{"READ", "WRITE"} {
		for _, proto := range []string{"rdma", "tcp", "a<b&c"} {
			for i, qd := range []int{1, 4, 32} {
				results = append(results, benchResult{benchCase: benchCase{op, 4096, qd, proto}, rounds: []float64{float64(1000 * (i + 1))}})
			}
		}
	}
	var b bytes.Buffer
	if err := writeBenchPlot(&b, results); err != nil {
		t.Fatal(err)
	}
	got := svgSeries(t, b.Bytes())
	if len(got) != 2*3*2 {
		t.Errorf("%d series, want 12: %v", len(got), got)
	}
	for _, op := range []string{"READ", "WRITE"} {
		for _, proto := range []string{"rdma", "tcp", "a<b&c"} {
			for _, m := range []string{"iops", "mbps"} {
				if n := got[proto+"/"+m+"/"+op+"/4096"]; n != 3 {
					t.Errorf("series %s %s %s: %d points, want 3", proto, m, op, n)
				}
			}
		}
	}
	if err := writeBenchPlot(io.Discard, nil); err == nil {
		t.Error("a plot of no results succeeded")
	}
}

// One queue depth, all-zero results: still a well-formed picture (no division by zero).
func TestBenchPlotDegenerate(t *testing.T) {
	var b bytes.Buffer
	rs := []benchResult{{benchCase: benchCase{"READ", 1 << 20, 8, "tcp"}, rounds: []float64{0}}}
	if err := writeBenchPlot(&b, rs); err != nil {
		t.Fatal(err)
	}
	if got := svgSeries(t, b.Bytes()); got["tcp/iops/READ/1048576"] != 1 {
		t.Fatalf("series %v", got)
	}
	if strings.Contains(b.String(), "NaN") || strings.Contains(b.String(), "Inf") {
		t.Fatalf("plot has NaN or Inf coordinates:\n%s", b.String())
	}
}

// -plot's directory must exist before the bench starts.
func TestBenchPlotPath(t *testing.T) {
	dir := t.TempDir()
	if err := checkPlotPath(filepath.Join(dir, "p.svg")); err != nil {
		t.Error(err)
	}
	if err := checkPlotPath(filepath.Join(dir, "missing", "p.svg")); err == nil || !strings.Contains(err.Error(), "-plot") {
		t.Errorf("missing directory: %v", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o644)
	if err := checkPlotPath(filepath.Join(f, "p.svg")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as directory: %v", err)
	}
}

// nfsrdma bench -plot against a real server over RDMA and TCP writes the picture.
func TestBenchPlotEndToEnd(t *testing.T) {
	s := startServer(t)
	plot := filepath.Join(t.TempDir(), "bench.svg")
	out := s.mustCLI(t, "bench", "-ops", "read", "-sizes", "4k", "-qd", "1,4", "-rounds", "1", "-duration", "20ms", "-max-ops", "50", "-file-size", "64k", "-plot", plot, "127.0.0.1:/export")
	if !strings.Contains(out, "plot: "+plot) {
		t.Errorf("bench output does not name the plot:\n%s", out)
	}
	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	got := svgSeries(t, svg)
	for _, k := range []string{"rdma/iops/READ/4096", "tcp/iops/READ/4096", "rdma/mbps/READ/4096", "tcp/mbps/READ/4096"} {
		if got[k] != 2 {
			t.Errorf("series %s: %d points, want 2 (qd 1 and 4); all: %v", k, got[k], got)
		}
	}
	if _, err := s.cli(t, "bench", "-plot", filepath.Join(t.TempDir(), "no", "p.svg"), "127.0.0.1:/export"); err == nil || !strings.Contains(err.Error(), "-plot") {
		t.Errorf("bench -plot into a missing directory: %v", err)
	}
}
