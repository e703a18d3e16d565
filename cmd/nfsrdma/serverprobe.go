//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Reading the server's side of a bench round from its Prometheus endpoint
// (bench -server-metrics, nfsrdmad -metrics): its CPU time, which the
// standard process collector exports as process_cpu_seconds_total, and the
// NFS READ and WRITE calls it answered per transport (rpcrdma_rpc_calls_total,
// package metrics), so that a round's calls are seen to have arrived over the
// transport the round measured.

const (
	metricServerCPU = "process_cpu_seconds_total"
	metricCalls     = "rpcrdma_rpc_calls_total"
	// maxExposition bounds what a sample reads of the endpoint's answer.
	maxExposition = 16 << 20
	// probeTimeout bounds one sample, whatever the bench's context allows.
	probeTimeout = 10 * time.Second
)

// serverProbe samples a server's metrics endpoint.
type serverProbe struct {
	url string
	hc  *http.Client
}

// serverSample is one reading of the endpoint.
type serverSample struct {
	cpu   float64            // process_cpu_seconds_total
	calls map[string]float64 // transport → NFS READ and WRITE calls answered; nil: not exported
}

// newServerProbe checks -server-metrics.
func newServerProbe(raw string) (*serverProbe, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("-server-metrics %q: want an http:// or https:// URL, e.g. http://server:9100/metrics", raw)
	}
	return &serverProbe{url: raw, hc: &http.Client{Timeout: probeTimeout}}, nil
}

// sample reads the endpoint once.
func (p *serverProbe) sample(ctx context.Context) (serverSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return serverSample{}, fmt.Errorf("-server-metrics %s: %w", p.url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := p.hc.Do(req)
	if err != nil {
		return serverSample{}, fmt.Errorf("-server-metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return serverSample{}, fmt.Errorf("-server-metrics %s: %s", p.url, resp.Status)
	}
	s, err := parseServerSample(io.LimitReader(resp.Body, maxExposition))
	if err != nil {
		return serverSample{}, fmt.Errorf("-server-metrics %s: %w", p.url, err)
	}
	return s, nil
}

// parseServerSample reads a text exposition.
func parseServerSample(r io.Reader) (serverSample, error) {
	tp := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := tp.TextToMetricFamilies(r)
	if err != nil {
		return serverSample{}, fmt.Errorf("exposition: %w", err)
	}
	var s serverSample
	cpu, ok := fams[metricServerCPU]
	if !ok || len(cpu.GetMetric()) != 1 {
		return serverSample{}, errors.New("no " + metricServerCPU + " (the process collector of a Prometheus client library, which nfsrdmad -metrics serves)")
	}
	m := cpu.GetMetric()[0]
	switch {
	case m.GetCounter() != nil:
		s.cpu = m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		s.cpu = m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		s.cpu = m.GetUntyped().GetValue()
	}
	if calls, ok := fams[metricCalls]; ok {
		s.calls = map[string]float64{}
		for _, m := range calls.GetMetric() {
			var prog, proc, transport string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "program":
					prog = l.GetValue()
				case "procedure":
					proc = l.GetValue()
				case "transport":
					transport = l.GetValue()
				}
			}
			if prog == "nfs" && (proc == "read" || proc == "write") {
				s.calls[strings.ToLower(transport)] += m.GetCounter().GetValue()
			}
		}
	}
	return s, nil
}

// checkTransport reports an error when the server did not count a round's done
// calls (qd in flight at a time) as answered over proto between the samples a
// and b. Up to qd of them may not be counted yet: the server counts a call
// after handing its reply to the transport, which can be after the client has
// read that reply. An endpoint that does not export the calls is not checked.
func checkTransport(a, b serverSample, proto string, done int64, qd int) error {
	if a.calls == nil || b.calls == nil {
		return nil
	}
	got := b.calls[proto] - a.calls[proto]
	if want := done - int64(qd); got < float64(want) {
		var others []string
		for t, n := range b.calls {
			if d := n - a.calls[t]; t != proto && d > 0 {
				others = append(others, fmt.Sprintf("%.0f over %s", d, t))
			}
		}
		where := ""
		if len(others) > 0 {
			where = " (it counted " + strings.Join(others, ", ") + ")"
		}
		return fmt.Errorf("the server counted %.0f READ and WRITE calls over %s during a round of %d%s: the calls did not take the transport measured", got, proto, done, where)
	}
	return nil
}
