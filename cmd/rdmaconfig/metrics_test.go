//go:build linux

package main

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/internal/metricstest"
	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
)

// rdmaconfig -metrics: CONF_RDMA queries over RDMA and TCP move the scraped
// conf_rdma series and the per-transport connection counters; a hostile
// bad-version call moves ERR_VERS.
func TestServeMetrics(t *testing.T) {
	cfg, err := parseFlags([]string{"-listen", "127.0.0.1:0", "-tcp", "127.0.0.1:0", "-metrics", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	msc := make(chan *metrics.Server, 1)
	cfg.metricsReady = func(s *metrics.Server) { msc <- s }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	type addrs struct{ rdma, tcp net.Addr }
	readyc := make(chan addrs, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- serve(sctx, cfg, hclog.NewNullLogger(), func(r, t net.Addr) { readyc <- addrs{r, t} })
	}()
	var a addrs
	select {
	case a = <-readyc:
	case err := <-errc:
		t.Fatal(err)
	}
	defer func() {
		stop()
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	url := "http://" + (<-msc).Addr().String() + "/metrics"

	for _, q := range []struct{ net, addr string }{{"rdma", a.rdma.String()}, {"rdma", a.rdma.String()}, {"tcp", a.tcp.String()}} {
		if err := run(ctx, []string{"-query", q.addr, "-query-net", q.net}, io.Discard, io.Discard); err != nil {
			t.Fatalf("query over %s: %v", q.net, err)
		}
	}
	code, err := metricstest.SendBadVersion(ctx, a.rdma.String())
	if err != nil || code != rpcrdma.ErrCodeVers {
		t.Fatalf("bad version answered %v, %v; want ERR_VERS", code, err)
	}
	conf := func(transport string) []string {
		return []string{"program", "conf_rdma", "version", "1", "procedure", "conf_rdma", "transport", transport, "outcome", "success"}
	}
	var m metricstest.Series
	for {
		if m, err = metricstest.Scrape(ctx, url); err != nil {
			t.Fatal(err)
		}
		r, _ := m.Get("rpcrdma_rpc_calls_total", conf("rdma")...)
		c, _ := m.Get("rpcrdma_rpc_calls_total", conf("tcp")...)
		if r+c >= 3 || ctx.Err() != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for tr, n := range map[string]float64{"rdma": 2, "tcp": 1} {
		if v, _ := m.Get("rpcrdma_rpc_calls_total", conf(tr)...); v != n {
			t.Errorf("CONF_RDMA calls over %s: %v, want %v", tr, v, n)
		}
	}
	for tr, want := range map[string]float64{"rdma": 3, "tcp": 1} { // two queries and the hostile peer; one query
		if v, _ := m.Get("rpcrdma_transport_connections_accepted_total", "transport", tr); v != want {
			t.Errorf("%s connections accepted: %v, want %v", tr, v, want)
		}
	}
	if v, _ := m.Get("rpcrdma_rdma_errors_sent_total", "transport", "rdma", "kind", "ERR_VERS"); v != 1 {
		t.Errorf("ERR_VERS sent: %v, want 1", v)
	}
}

// -pprof needs -metrics; -metrics needs a host:port and a server.
func TestMetricsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-listen", "127.0.0.1:0", "-pprof"}, "-pprof: needs -metrics"},
		{[]string{"-listen", "127.0.0.1:0", "-metrics", "nonsense"}, "-metrics \"nonsense\": want host:port"},
		{[]string{"-query", "127.0.0.1:1", "-metrics", "127.0.0.1:0"}, "cannot be combined with -query"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
