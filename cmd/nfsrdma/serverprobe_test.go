//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsd"
)

// With -server-metrics, bench reads nfsrdmad's endpoint around every round: the
// server's CPU time per call appears beside the client's, and the calls it counted
// over each transport confirm the rounds' transports. The rounds last 200 ms, well
// above the 10 ms resolution of the server's CPU counter.
func TestBenchServerMetrics(t *testing.T) {
	s := startServer(t, func(c *nfsd.Config) { c.Metrics = "127.0.0.1:0" })
	url := "http://" + s.info.Metrics.String() + "/metrics"
	out := s.mustCLI(t, "bench", "-server-metrics", url, "-ops", "read,write", "-sizes", "4k", "-qd", "4",
		"-duration", "400ms", "-rounds", "2", "-file-size", "64k", "127.0.0.1:/export")
	for _, w := range []string{"rdma srv µs", "tcp srv µs", "CPU µs per call: client"} {
		if !strings.Contains(out, w) {
			t.Errorf("bench output lacks %q:\n%s", w, out)
		}
	}
	// The endpoint exports what the bench reads: without the calls metric the
	// transport check would pass unread.
	probe, err := newServerProbe(url)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := probe.sample(context.Background())
	if err != nil || smp.cpu <= 0 || smp.calls["rdma"] < 1 || smp.calls["tcp"] < 1 {
		t.Fatalf("nfsrdmad's endpoint: %+v, %v; want CPU time and NFS READ/WRITE calls counted over rdma and tcp", smp, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, r := range lines[len(lines)-2:] {
		f := strings.Fields(r)
		if len(f) != 13 || !strings.HasSuffix(f[12], "x") {
			t.Fatalf("summary row %q: want op, size (2 fields), qd, 8 numbers and a ratio", r)
		}
		// Client and server share this process here, so each sees the other's
		// CPU too: what is checked is that both were read and are positive.
		for _, cpu := range []string{f[6], f[7], f[10], f[11]} {
			if v, err := strconv.ParseFloat(cpu, 64); err != nil || v <= 0 {
				t.Errorf("summary row %q: CPU µs per call %q, want a positive number", r, cpu)
			}
		}
	}
}

// exposition is a metrics endpoint's text: cpu seconds, and reads answered over
// tcp (none over rdma).
func exposition(cpu float64, tcpReads int64) string {
	return fmt.Sprintf(`# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total %g
# TYPE rpcrdma_rpc_calls_total counter
rpcrdma_rpc_calls_total{outcome="success",procedure="read",program="nfs",transport="tcp",version="3"} %d
rpcrdma_rpc_calls_total{outcome="success",procedure="getattr",program="nfs",transport="rdma",version="3"} 7
`, cpu, tcpReads)
}

// A round whose calls the server did not count over the transport measured fails,
// naming the transport that did count calls: here the endpoint is another server's,
// whose reads all come over TCP.
func TestBenchServerMetricsWrongTransport(t *testing.T) {
	s := startServer(t)
	var scrapes atomic.Int64
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := scrapes.Add(1)
		fmt.Fprint(w, exposition(float64(n), 1000*n))
	}))
	defer fake.Close()
	_, err := s.cli(t, "bench", "-server-metrics", fake.URL+"/metrics", "-proto", "rdma", "-ops", "read", "-sizes", "4k", "-qd", "1",
		"-duration", "100ms", "-rounds", "1", "-max-ops", "20", "-file-size", "64k", "127.0.0.1:/export")
	if err == nil || !strings.Contains(err.Error(), "counted 0 READ and WRITE calls over rdma") || !strings.Contains(err.Error(), "1000 over tcp") {
		t.Fatalf("bench against another server's metrics: %v", err)
	}
}

// An endpoint that is not a Prometheus client's, or a URL that is not http(s), is
// refused before the first round.
func TestBenchServerMetricsRefused(t *testing.T) {
	s := startServer(t)
	noCPU := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE up gauge\nup 1\n")
	}))
	defer noCPU.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	for _, tc := range []struct{ url, want string }{
		{noCPU.URL, "no process_cpu_seconds_total"},
		{notFound.URL, "404 Not Found"},
		{"ftp://h/metrics", "want an http:// or https:// URL"},
		{"h:9100", "want an http:// or https:// URL"},
	} {
		_, err := s.cli(t, "bench", "-server-metrics", tc.url, "-proto", "tcp", "-ops", "read", "-sizes", "4k", "-qd", "1",
			"-duration", "50ms", "-rounds", "1", "-file-size", "64k", "127.0.0.1:/export")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-server-metrics %s: %v, want %q", tc.url, err, tc.want)
		}
	}
}

func TestParseServerSample(t *testing.T) {
	s, err := parseServerSample(strings.NewReader(exposition(2.5, 40)))
	if err != nil {
		t.Fatal(err)
	}
	if s.cpu != 2.5 || s.calls["tcp"] != 40 || s.calls["rdma"] != 0 {
		t.Fatalf("sample %+v: want cpu 2.5, 40 reads over tcp and no READ or WRITE over rdma (a GETATTR is not counted)", s)
	}
	// Without the calls metric (not nfsrdmad) the transport is not checked.
	s, err = parseServerSample(strings.NewReader("process_cpu_seconds_total 3\n"))
	if err != nil || s.cpu != 3 || s.calls != nil {
		t.Fatalf("an untyped CPU counter alone: %+v, %v", s, err)
	}
	if err := checkTransport(s, s, "rdma", 100, 1); err != nil {
		t.Fatalf("no calls metric: %v", err)
	}
	// Up to qd calls may be counted after the client has their replies.
	a := serverSample{calls: map[string]float64{"rdma": 10}}
	b := serverSample{calls: map[string]float64{"rdma": 106}}
	if err := checkTransport(a, b, "rdma", 100, 4); err != nil {
		t.Errorf("96 of 100 at qd 4: %v", err)
	}
	if err := checkTransport(a, b, "rdma", 100, 3); err == nil {
		t.Error("96 of 100 at qd 3 passed")
	}
	if _, err := parseServerSample(strings.NewReader("process_cpu_seconds_total{a=\"1\"} 1\nprocess_cpu_seconds_total{a=\"2\"} 2\n")); err == nil {
		t.Error("two CPU series accepted")
	}
}

// FuzzParseServerSample checks that parseServerSample never panics and that what it
// accepts had a CPU time.
func FuzzParseServerSample(f *testing.F) {
	f.Add(exposition(1, 2))
	f.Add("process_cpu_seconds_total 3\n")
	f.Add("# TYPE process_cpu_seconds_total gauge\nprocess_cpu_seconds_total NaN\n")
	f.Add("rpcrdma_rpc_calls_total{transport=\"rdma\",program=\"nfs\",procedure=\"write\"} 1\n")
	f.Add("# TYPE rpcrdma_rpc_calls_total histogram\nrpcrdma_rpc_calls_total_bucket{le=\"+Inf\"} 1\nprocess_cpu_seconds_total 1\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := parseServerSample(strings.NewReader(text))
		if err != nil {
			return
		}
		if !strings.Contains(text, metricServerCPU) {
			t.Fatalf("accepted an exposition without %s: %+v", metricServerCPU, s)
		}
	})
}
