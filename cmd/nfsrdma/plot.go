//go:build linux

package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SVG layout of writeBenchPlot, in pixels: a title, one row of panels (IOPS, MB/s)
// per operation and size, a legend.
const (
	plotPanelW, plotPanelH  = 440, 270
	plotLeft, plotRight     = 72, 20
	plotTop, plotBottom     = 34, 46
	plotTitleH, plotLegendH = 36, 30
	plotInnerW              = plotPanelW - plotLeft - plotRight
	plotInnerH              = plotPanelH - plotTop - plotBottom
	plotPanelsPerRow        = 2
	plotYTicks              = 5
	plotPointR              = 3.5
	plotAxisColor           = "#333"
	plotGridColor           = "#ddd"
	plotRDMAColor           = "#c0392b"
	plotTCPColor            = "#2471a3"
	plotOtherColor          = "#7d3c98"
)

// plotColor is a transport's line colour.
func plotColor(proto string) string {
	switch proto {
	case "rdma":
		return plotRDMAColor
	case "tcp":
		return plotTCPColor
	}
	return plotOtherColor
}

// plotGroup is the results of one operation and size: one row of charts.
type plotGroup struct {
	op   string
	size int
	rs   []benchResult
}

// writeBenchPlot draws the bench results as a standalone SVG: for each operation and
// call size a row of two charts, IOPS and MB/s against queue depth (log scale), with
// one line per transport. Each line is a <polyline class="series"> carrying
// data-proto, data-metric, data-op and data-size, and each point has a <title> with
// its value.
func writeBenchPlot(w io.Writer, results []benchResult) error {
	var groups []*plotGroup
	var protos []string
	for _, r := range results {
		i := slices.IndexFunc(groups, func(g *plotGroup) bool { return g.op == r.op && g.size == r.size })
		if i < 0 {
			groups = append(groups, &plotGroup{op: r.op, size: r.size})
			i = len(groups) - 1
		}
		groups[i].rs = append(groups[i].rs, r)
		if !slices.Contains(protos, r.proto) {
			protos = append(protos, r.proto)
		}
	}
	if len(groups) == 0 {
		return fmt.Errorf("plot: no results to draw")
	}
	width := plotPanelsPerRow * plotPanelW
	height := plotTitleH + len(groups)*plotPanelH + plotLegendH
	var b bytes.Buffer
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", width, height, width, height)
	fmt.Fprintf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height)
	plotText(&b, float64(width)/2, 24, "middle", "16", "nfsrdma bench: medians against queue depth")
	for row, g := range groups {
		y0 := float64(plotTitleH + row*plotPanelH)
		plotPanel(&b, 0, y0, g, "iops", "IOPS", func(r benchResult) float64 { return r.iops() })
		plotPanel(&b, plotPanelW, y0, g, "mbps", "MB/s", func(r benchResult) float64 { return r.mbps() })
	}
	// Legend.
	ly := float64(height - plotLegendH/2)
	for i, p := range protos {
		x := float64(plotLeft + i*110)
		fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"/>\n", x, ly, x+24, ly, plotColor(p))
		plotText(&b, x+30, ly+4, "start", "12", p)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// plotPanel draws one chart of group g at (x0, y0): metric (value of) against queue
// depth, a line per transport.
func plotPanel(b *bytes.Buffer, x0, y0 float64, g *plotGroup, metric, metricName string, value func(benchResult) float64) {
	var qds []int
	top := 0.0
	for _, r := range g.rs {
		if !slices.Contains(qds, r.qd) {
			qds = append(qds, r.qd)
		}
		top = max(top, value(r))
	}
	slices.Sort(qds)
	step := niceStep(top / plotYTicks)
	top = step * plotYTicks
	lx, rx := x0+plotLeft, x0+plotLeft+plotInnerW
	ty, by := y0+plotTop, y0+plotTop+plotInnerH
	xOf := func(qd int) float64 {
		lo, hi := math.Log2(float64(qds[0])), math.Log2(float64(qds[len(qds)-1]))
		if hi == lo {
			return (lx + rx) / 2
		}
		const pad = 16 // keep the end points off the axes
		return lx + pad + (math.Log2(float64(qd))-lo)/(hi-lo)*(plotInnerW-2*pad)
	}
	yOf := func(v float64) float64 { return by - v/top*plotInnerH }

	plotText(b, (lx+rx)/2, y0+plotTop-12, "middle", "13", fmt.Sprintf("%s %s: %s", g.op, sizeName(g.size), metricName))
	for i := 0; i <= plotYTicks; i++ {
		v := step * float64(i)
		y := yOf(v)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", lx, y, rx, y, plotGridColor)
		plotText(b, lx-6, y+4, "end", "11", plotNumber(v))
	}
	for _, qd := range qds {
		x := xOf(qd)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x, by, x, by+4, plotAxisColor)
		plotText(b, x, by+17, "middle", "11", strconv.Itoa(qd))
	}
	fmt.Fprintf(b, "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"none\" stroke=\"%s\"/>\n", lx, ty, lx, by, rx, by, plotAxisColor)
	plotText(b, (lx+rx)/2, by+36, "middle", "11", "queue depth (calls in flight)")

	var protos []string
	for _, r := range g.rs {
		if !slices.Contains(protos, r.proto) {
			protos = append(protos, r.proto)
		}
	}
	for _, p := range protos {
		var pts []benchResult
		for _, r := range g.rs {
			if r.proto == p {
				pts = append(pts, r)
			}
		}
		slices.SortFunc(pts, func(a, c benchResult) int { return a.qd - c.qd })
		fmt.Fprintf(b, "<polyline class=\"series\" data-proto=\"%s\" data-metric=\"%s\" data-op=\"%s\" data-size=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			plotAttr(p), metric, plotAttr(g.op), g.size, plotColor(p))
		for i, r := range pts {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "%.1f,%.1f", xOf(r.qd), yOf(value(r)))
		}
		b.WriteString("\"/>\n")
		for _, r := range pts {
			fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"><title>", xOf(r.qd), yOf(value(r)), plotPointR, plotColor(p))
			xml.EscapeText(b, []byte(fmt.Sprintf("%s qd %d: %s %s", p, r.qd, plotNumber(value(r)), metricName)))
			b.WriteString("</title></circle>\n")
		}
	}
}

// plotText writes a <text> element with s escaped.
func plotText(b *bytes.Buffer, x, y float64, anchor, size, s string) {
	fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%s\">", x, y, anchor, size)
	xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// plotAttr escapes s for an attribute value.
func plotAttr(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten (1 for
// nothing to draw).
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// plotNumber prints an axis or point value with at most one decimal: 12.5k for
// 12500, 3M for 3000000, 1.5 for 1.5.
func plotNumber(v float64) string {
	suffix := ""
	switch {
	case v >= 1e6:
		v, suffix = v/1e6, "M"
	case v >= 1e4:
		v, suffix = v/1e3, "k"
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + suffix
}

// checkPlotPath checks, before a bench starts, that the plot can be written where
// -plot says: its directory exists.
func checkPlotPath(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("-plot %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("-plot %s: %s is not a directory", path, dir)
	}
	return nil
}

// saveBenchPlot writes the plot to path through a temporary file beside it, so an
// interrupted run leaves no half-written picture.
func saveBenchPlot(path string, results []benchResult) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return fmt.Errorf("-plot %s: %w", path, err)
	}
	err = writeBenchPlot(f, results)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("-plot %s: %w", path, err)
	}
	return nil
}
