// Package metricstest helps tests check a -metrics endpoint: Scrape reads the text
// exposition into a map, and SendBadVersion plays a hostile RPC-over-RDMA client
// whose call carries the wrong version.
package metricstest

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Series maps a series, written as the exposition writes it (name{l1="v1",l2="v2"}
// with labels sorted by name but a histogram's "le" last, or the bare name), to its
// value.
type Series map[string]float64

// Scrape fetches url (an endpoint's /metrics) and parses its text exposition.
func Scrape(ctx context.Context, url string) (Series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scrape %s: %s: %s", url, resp.Status, b)
	}
	return Parse(resp.Body)
}

// Parse reads a text exposition with the Prometheus text parser (expfmt), which
// rejects what a Prometheus server would not take, and flattens it into series as
// the exposition writes them: a histogram's buckets, sum and count (and a summary's
// quantiles, sum and count) become series of their own.
func Parse(r io.Reader) (Series, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("exposition: %w", err)
	}
	s := make(Series)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, 2*len(m.GetLabel())+2)
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s[Key(name, labels...)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s[Key(name, labels...)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					s[Key(name+"_bucket", append(labels, "le", formatFloat(b.GetUpperBound()))...)] = float64(b.GetCumulativeCount())
				}
				s[Key(name+"_sum", labels...)] = h.GetSampleSum()
				s[Key(name+"_count", labels...)] = float64(h.GetSampleCount())
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					s[Key(name, append(labels, "quantile", formatFloat(q.GetQuantile()))...)] = q.GetValue()
				}
				s[Key(name+"_sum", labels...)] = sm.GetSampleSum()
				s[Key(name+"_count", labels...)] = float64(sm.GetSampleCount())
			default:
				s[Key(name, labels...)] = m.GetUntyped().GetValue()
			}
		}
	}
	return s, nil
}

// formatFloat writes a label value such as a bucket's bound as the exposition
// does.
func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Key writes the series of name with labels given as name, value pairs, in the
// exposition's form.
func Key(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	pairs := make([]string, 0, len(labels)/2)
	le := ""
	for i := 0; i+1 < len(labels); i += 2 {
		p := labels[i] + "=" + strconv.Quote(labels[i+1])
		if labels[i] == "le" {
			le = p
			continue
		}
		pairs = append(pairs, p)
	}
	sort.Strings(pairs)
	if le != "" {
		pairs = append(pairs, le)
	}
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// Get returns the value of name with labels (name, value pairs) and whether the
// series exists.
func (s Series) Get(name string, labels ...string) (float64, bool) {
	v, ok := s[Key(name, labels...)]
	return v, ok
}
