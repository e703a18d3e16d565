//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/internal/metricstest"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
)

// -metrics serves Prometheus metrics that follow real NFS traffic: READs over RDMA
// and TCP move the nfs/read series, the RDMA READs' write chunks move
// rdma_write_chunks_total, a hostile bad-version call moves ERR_VERS; -pprof adds
// /debug/pprof/ on the same listener.
func TestMetricsEndpoint(t *testing.T) {
	s := startServer(t, "-metrics", "127.0.0.1:0", "-pprof")
	if s.info.Metrics == nil {
		t.Fatal("no metrics address in the server's Info")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "http://" + s.info.Metrics.String()
	scrape := func() metricstest.Series {
		t.Helper()
		m, err := metricstest.Scrape(ctx, url+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	read := func(transport string) []string {
		return []string{"program", "nfs", "version", "3", "procedure", "read", "transport", transport, "outcome", "success"}
	}
	// waitFor scrapes until name{labels} reaches want (server counters move just
	// after the reply leaves) or ctx ends.
	waitFor := func(want float64, name string, labels ...string) float64 {
		t.Helper()
		for {
			v, _ := scrape().Get(name, labels...)
			if v >= want || ctx.Err() != nil {
				return v
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	data := bytes.Repeat([]byte("metrics!"), 64<<10/8)
	const nRDMA, nTCP = 4, 3
	buf := make([]byte, len(data))
	for _, tc := range []struct {
		netid string
		n     int
	}{{"rdma", nRDMA}, {"tcp", nTCP}} {
		c := s.mount(t, tc.netid)
		fh, _, err := c.Create(ctx, c.Root(), "f-"+tc.netid, 0o644, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(ctx, fh, 0, data, nfs3.FileSync); err != nil {
			t.Fatal(err)
		}
		chunksBefore, _ := scrape().Get("rpcrdma_rdma_write_chunks_total", "transport", "rdma")
		readsBefore, _ := scrape().Get("rpcrdma_rpc_calls_total", read(tc.netid)...)
		for range tc.n {
			if n, _, err := c.Read(ctx, fh, 0, buf); err != nil || n != len(data) {
				t.Fatalf("%s: READ: %d bytes, %v", tc.netid, n, err)
			}
		}
		if v := waitFor(readsBefore+float64(tc.n), "rpcrdma_rpc_calls_total", read(tc.netid)...); v != readsBefore+float64(tc.n) {
			t.Errorf("%s: nfs read calls went from %v to %v, want +%d", tc.netid, readsBefore, v, tc.n)
		}
		want := chunksBefore
		if tc.netid == "rdma" {
			want += nRDMA // each 64 KiB READ reply's data goes into the client's write chunk
		}
		if v := waitFor(want, "rpcrdma_rdma_write_chunks_total", "transport", "rdma"); v != want {
			t.Errorf("after %d READs over %s: %v write chunks, want %v", tc.n, tc.netid, v, want)
		}
	}
	m := scrape()
	for tr, n := range map[string]float64{"rdma": nRDMA, "tcp": nTCP} {
		if v, _ := m.Get("rpcrdma_rpc_call_duration_seconds_count", "program", "nfs", "version", "3", "procedure", "read", "transport", tr); v != n {
			t.Errorf("READ over %s: latency histogram holds %v calls, want %v", tr, v, n)
		}
	}
	if v, _ := m.Get("rpcrdma_rpc_calls_total", "program", "mount", "version", "3", "procedure", "mnt", "transport", "tcp", "outcome", "success"); v != 2 {
		t.Errorf("MOUNT MNT calls %v, want 2", v)
	}
	for _, tr := range []string{"rdma", "tcp"} {
		if v, _ := m.Get("rpcrdma_transport_connections_accepted_total", "transport", tr); v < 1 {
			t.Errorf("%s connections accepted: %v", tr, v)
		}
	}
	if v, _ := m.Get("rpcrdma_rdma_write_bytes_total", "transport", "rdma"); v < nRDMA*float64(len(data)) {
		t.Errorf("RDMA Write bytes %v, want at least %d", v, nRDMA*len(data))
	}

	// A LOOKUP of a missing name: NFS3ERR_NOENT in the status counts.
	c := s.mount(t, "tcp")
	if _, _, err := c.Lookup(ctx, c.Root(), "no-such-file"); err == nil {
		t.Fatal("LOOKUP of a missing name succeeded")
	}
	if v := waitFor(1, "rpcrdma_nfs_replies_total", "procedure", "lookup", "status", "nfs3err_noent"); v != 1 {
		t.Errorf("LOOKUP NOENT replies: %v, want 1", v)
	}
	if v, _ := scrape().Get("rpcrdma_nfs_replies_total", "procedure", "read", "status", "nfs3_ok"); v != nRDMA+nTCP {
		t.Errorf("READ NFS3_OK replies: %v, want %d", v, nRDMA+nTCP)
	}

	code, err := metricstest.SendBadVersion(ctx, s.info.RDMA.String())
	if err != nil || code != rpcrdma.ErrCodeVers {
		t.Fatalf("bad version answered %v, %v; want ERR_VERS", code, err)
	}
	if v, _ := scrape().Get("rpcrdma_rdma_errors_sent_total", "transport", "rdma", "kind", "ERR_VERS"); v != 1 {
		t.Errorf("ERR_VERS sent: %v, want 1", v)
	}

	resp, err := http.Get(url + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("-pprof: /debug/pprof/ answered %s", resp.Status)
	}
}

// -pprof needs -metrics, and a bad -metrics address is named.
func TestMetricsFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-export", dir, "-pprof"}, "-pprof: needs -metrics"},
		{[]string{"-export", dir, "-metrics", "nonsense"}, "-metrics \"nonsense\": want host:port"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	cfg, err := parseFlags([]string{"-export", dir, "-metrics", "127.0.0.1:9100", "-pprof"}, io.Discard)
	if err != nil || cfg.Metrics != "127.0.0.1:9100" || !cfg.Pprof {
		t.Errorf("-metrics -pprof: %+v, %v", cfg, err)
	}
}

// TestMetricsExportsReloads: the exports file's reloads at SIGHUP are counted by
// result, as Prometheus counts its own configuration's
// (prometheus_config_last_reload_successful and _success_timestamp_seconds): at
// start none, the last "successful" and the table's load time; after a reload that
// succeeds, one success and a later time; after one of a broken file, one failure,
// the last not successful and the time of the table still in force.
func TestMetricsExportsReloads(t *testing.T) {
	dir := exportDir(t)
	file := filepath.Join(t.TempDir(), "exports")
	writeExports(t, file, dir+" 127.0.0.1(rw,insecure)\n")
	before := time.Now()
	s := (&server{stdout: &clitest.Buffer{}, log: &clitest.Buffer{}}).start(t, []string{"-exports", file, "-metrics", "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "http://" + s.info.Metrics.String() + "/metrics"
	type state struct{ ok, failed, last, at float64 }
	scrape := func() state {
		t.Helper()
		m, err := metricstest.Scrape(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var st state
		var found [4]bool
		st.ok, found[0] = m.Get("rpcrdma_exports_reloads_total", "result", "success")
		st.failed, found[1] = m.Get("rpcrdma_exports_reloads_total", "result", "failure")
		st.last, found[2] = m.Get("rpcrdma_exports_last_reload_successful")
		st.at, found[3] = m.Get("rpcrdma_exports_last_reload_success_timestamp_seconds")
		for i, f := range found {
			if !f {
				t.Fatalf("series %d of the reload metrics missing", i)
			}
		}
		return st
	}
	// hup sends SIGHUP to this process, where run has asked for it, and waits until
	// the reload has been counted.
	hup := func(want func(state) bool) state {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for {
			st := scrape()
			if want(st) {
				return st
			}
			if ctx.Err() != nil {
				t.Fatalf("reload not counted: %+v\n%s", st, s.log.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	seconds := func(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

	st := scrape()
	if st.ok != 0 || st.failed != 0 || st.last != 1 || st.at < seconds(before) || st.at > seconds(time.Now()) {
		t.Errorf("at start: %+v, want no reloads, the last successful, loaded since %v", st, seconds(before))
	}
	loaded := st.at

	writeExports(t, file, dir+" 127.0.0.3(rw,insecure)\n")
	beforeReload := time.Now()
	st = hup(func(st state) bool { return st.ok == 1 })
	if st.failed != 0 || st.last != 1 || st.at < seconds(beforeReload) || st.at <= loaded {
		t.Errorf("after a successful reload: %+v, want one success, the last successful, loaded since %v", st, seconds(beforeReload))
	}
	reloaded := st.at

	writeExports(t, file, dir+" 127.0.0.1(rw,bogus)\n")
	st = hup(func(st state) bool { return st.failed == 1 })
	if st.ok != 1 || st.last != 0 || st.at != reloaded {
		t.Errorf("after a failed reload: %+v, want one success and one failure, the last failed, the table of %v in force", st, reloaded)
	}

	writeExports(t, file, dir+" 127.0.0.1(rw,insecure)\n")
	st = hup(func(st state) bool { return st.ok == 2 })
	if st.failed != 1 || st.last != 1 || st.at <= reloaded {
		t.Errorf("after a reload that succeeds again: %+v, want the last successful and a later load", st)
	}
}
