package metrics_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/internal/metricstest"
	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// env is an ONC RPC server with CONF_RDMA on an RDMA and a TCP listener, and its
// metrics endpoint.
type env struct {
	rdma *rpcrdma.Listener
	tcp  *oncrpc.TCPListener
	m    *metrics.Server
	url  string
}

func newEnv(t *testing.T, ctx context.Context, opts *metrics.Options) *env {
	t.Helper()
	dev := soft.New(soft.Config{})
	t.Cleanup(func() { dev.Close() })
	var procs oncrpc.ProcStats
	srv := oncrpc.NewServer(&oncrpc.ServerOptions{Observe: procs.Observe})
	svc, err := confproto.NewService(nil)
	if err != nil {
		t.Fatal(err)
	}
	svc.Register(srv)
	rl, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(rl)
	go srv.Serve(tl)
	t.Cleanup(func() { srv.Close() })

	c := metrics.New()
	c.AddProcStats(&procs)
	c.AddServer(srv)
	c.AddListener(rl)
	c.AddListener(tl)
	c.AddDevice(dev)
	m, err := metrics.Serve("127.0.0.1:0", c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return &env{rdma: rl, tcp: tl, m: m, url: "http://" + m.Addr().String()}
}

func (e *env) scrape(t *testing.T, ctx context.Context) metricstest.Series {
	t.Helper()
	s, err := metricstest.Scrape(ctx, e.url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor scrapes until the series reaches want (server counters move just after
// the reply leaves) or ctx ends, and returns the last value.
func (e *env) waitFor(t *testing.T, ctx context.Context, want float64, name string, labels ...string) float64 {
	t.Helper()
	for {
		v, _ := e.scrape(t, ctx).Get(name, labels...)
		if v >= want || ctx.Err() != nil {
			return v
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Real CONF_RDMA calls over RDMA and TCP move the per-procedure and per-transport
// series of the scraped endpoint; a hostile client's bad version moves
// rdma_errors_sent_total{kind="ERR_VERS"}.
func TestScrapeFollowsCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := newEnv(t, ctx, nil)

	before := e.scrape(t, ctx)
	if Transport := metrics.Transport; Transport("rdma6") != "rdma" || Transport("tcp") != "tcp" || Transport("") != "other" {
		t.Error("metrics.Transport does not fold netids into transports")
	}
	if _, ok := before.Get("go_goroutines"); !ok {
		t.Error("no Go runtime metrics (go_goroutines)")
	}
	if _, ok := before.Get("process_open_fds"); !ok {
		t.Error("no process metrics (process_open_fds)")
	}
	if v, ok := before.Get("rpcrdma_transport_connections_accepted_total", "transport", "rdma"); !ok || v != 0 {
		t.Errorf("rdma connections accepted before any client: %v (present %v)", v, ok)
	}

	dev := soft.New(soft.Config{})
	defer dev.Close()
	rt, err := rpcrdma.Dial(ctx, dev, e.rdma.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tt, err := oncrpc.DialTCP(ctx, e.tcp.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Close()
	want := confproto.ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 4}
	for range 3 {
		if _, err := confproto.Negotiate(ctx, confproto.NewClient(rt), want); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := confproto.Negotiate(ctx, confproto.NewClient(tt), want); err != nil {
			t.Fatal(err)
		}
	}
	conf := func(transport string, more ...string) []string {
		return append([]string{"program", "conf_rdma", "version", "1", "procedure", "conf_rdma", "transport", transport}, more...)
	}
	for tr, n := range map[string]float64{"rdma": 3, "tcp": 2} {
		if v := e.waitFor(t, ctx, n, "rpcrdma_rpc_calls_total", conf(tr, "outcome", "success")...); v != n {
			t.Errorf("CONF_RDMA calls over %s: %v, want %v", tr, v, n)
		}
	}
	s := e.scrape(t, ctx)
	for tr, n := range map[string]float64{"rdma": 3, "tcp": 2} {
		if v, _ := s.Get("rpcrdma_rpc_call_duration_seconds_count", conf(tr)...); v != n {
			t.Errorf("%s latency histogram count %v, want %v", tr, v, n)
		}
		if v, _ := s.Get("rpcrdma_rpc_call_duration_seconds_bucket", conf(tr, "le", "+Inf")...); v != n {
			t.Errorf("%s latency histogram +Inf bucket %v, want %v", tr, v, n)
		}
	}
	for _, tr := range []string{"rdma", "tcp"} {
		if v, _ := s.Get("rpcrdma_transport_connections_accepted_total", "transport", tr); v != 1 {
			t.Errorf("%s connections accepted: %v, want 1", tr, v)
		}
		if v, _ := s.Get("rpcrdma_transport_connections_open", "transport", tr); v != 1 {
			t.Errorf("%s connections open: %v, want 1", tr, v)
		}
	}
	if v, _ := s.Get("rpcrdma_rdma_calls_total", "transport", "rdma", "chunks", "none"); v != 3 {
		t.Errorf("rdma inline calls: %v, want 3", v)
	}
	if v, _ := s.Get("rpcrdma_rdma_replies_total", "transport", "rdma", "path", "inline"); v != 3 {
		t.Errorf("rdma inline replies: %v, want 3", v)
	}
	if v, _ := s.Get("rpcrdma_rdma_credits_granted", "transport", "rdma"); v < 1 {
		t.Errorf("rdma credits granted: %v, want at least 1", v)
	}
	for _, g := range []string{"rpcrdma_rdma_buffer_bytes", "rpcrdma_rdma_buffer_bytes_in_use", "rpcrdma_rdma_credits_in_use"} {
		if _, ok := s.Get(g, "transport", "rdma"); !ok {
			t.Errorf("no %s series", g)
		}
	}
	if v, _ := s.Get("rpcrdma_rpc_server_calls_total"); v != 5 {
		t.Errorf("server calls: %v, want 5", v)
	}

	code, err := metricstest.SendBadVersion(ctx, e.rdma.Addr().String())
	if err != nil || code != rpcrdma.ErrCodeVers {
		t.Fatalf("bad version answered %v, %v; want ERR_VERS", code, err)
	}
	s = e.scrape(t, ctx)
	if v, _ := s.Get("rpcrdma_rdma_errors_sent_total", "transport", "rdma", "kind", "ERR_VERS"); v != 1 {
		t.Errorf("ERR_VERS sent: %v, want 1", v)
	}
	if v, _ := s.Get("rpcrdma_rdma_errors_sent_total", "transport", "rdma", "kind", "ERR_CHUNK"); v != 0 {
		t.Errorf("ERR_CHUNK sent: %v, want 0", v)
	}
	if _, ok := s.Get("rpcrdma_iwarp_terminates_total", "provider", "soft", "direction", "sent", "layer", "ddp"); !ok {
		t.Error("no iwarp_terminates_total series for the soft device")
	}

	// Closing the clients moves the closed counters.
	rt.Close()
	tt.Close()
	for _, tr := range []string{"rdma", "tcp"} {
		if v := e.waitFor(t, ctx, 1, "rpcrdma_transport_connections_closed_total", "transport", tr); v < 1 {
			t.Errorf("%s connections closed: %v, want at least 1", tr, v)
		}
	}
}

// /debug/pprof/ is served only when asked for.
func TestPprofOptIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, on := range []bool{false, true} {
		e := newEnv(t, ctx, &metrics.Options{Pprof: on})
		resp, err := http.Get(e.url + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		served := resp.StatusCode == http.StatusOK && strings.Contains(string(body), "goroutine")
		if served != on {
			t.Errorf("pprof %v: /debug/pprof/ answered %s (served %v)", on, resp.Status, served)
		}
	}
}

// A client that scrapes once over a kept-alive connection and then sends nothing
// loses the connection after the idle timeout (60 s by default, shrunk here), so
// clients cannot hold the endpoint's descriptors and goroutines forever: the server
// used to set only ReadHeaderTimeout, and net/http waits for a kept-alive
// connection's next request without a deadline unless IdleTimeout or ReadTimeout is
// set.
func TestIdleKeepAliveConnectionClosed(t *testing.T) {
	var o metrics.Options
	metrics.SetTimeouts(&o, 10*time.Second, 10*time.Second, 10*time.Second, 50*time.Millisecond)
	ms, err := metrics.Serve("127.0.0.1:0", metrics.New(), &o)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close(context.Background())
	c, err := net.Dial("tcp", ms.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("scrape answered %s, close %v; want 200 on a kept-alive connection", resp.Status, resp.Close)
	}
	// Idle now: the server must close the connection, well within this bound.
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := br.ReadByte()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatal("idle kept-alive connection still open after 20 s: the endpoint has no idle timeout")
	case err == nil:
		t.Fatalf("server sent %q on an idle connection", b)
	}
}

// A CPU profile may last longer than the endpoint's write timeout: net/http/pprof
// extends the write deadline by the seconds asked for.
func TestPprofProfileOutlastsWriteTimeout(t *testing.T) {
	o := metrics.Options{Pprof: true}
	metrics.SetTimeouts(&o, 10*time.Second, 10*time.Second, time.Second, 10*time.Second)
	ms, err := metrics.Serve("127.0.0.1:0", metrics.New(), &o)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close(context.Background())
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + ms.Addr().String() + "/debug/pprof/profile?seconds=2")
	if err != nil {
		t.Fatalf("2 s profile with a 1 s write timeout: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("2 s profile with a 1 s write timeout: %s, %d bytes, %v", resp.Status, len(body), err)
	}
}

// Names gives the programs of this module and their procedures nfsstat's names.
func TestNames(t *testing.T) {
	for _, c := range []struct {
		k                oncrpc.ProcKey
		prog, vers, proc string
	}{
		{oncrpc.ProcKey{Prog: 100003, Vers: 3, Proc: 6}, "nfs", "3", "read"},
		{oncrpc.ProcKey{Prog: 100003, Vers: 3, Proc: 99}, "nfs", "3", "99"},
		{oncrpc.ProcKey{Prog: 100005, Vers: 3, Proc: 1}, "mount", "3", "mnt"},
		{oncrpc.ProcKey{Prog: 100400, Vers: 1, Proc: 1}, "conf_rdma", "1", "conf_rdma"},
		{oncrpc.ProcKey{Prog: 7, Vers: 2, Proc: 1}, "7", "2", "1"},
		{oncrpc.OtherProc, "other", "other", "other"},
		{oncrpc.ProcKey{Prog: oncrpc.OtherProc.Prog, Vers: oncrpc.OtherProc.Vers, Proc: oncrpc.OtherProc.Proc, Netid: "other"}, "other", "other", "other"},
	} {
		p, v, q := metrics.Names(c.k)
		if p != c.prog || v != c.vers || q != c.proc {
			t.Errorf("Names(%+v) = %s %s %s, want %s %s %s", c.k, p, v, q, c.prog, c.vers, c.proc)
		}
	}
}

// TestOverflowProcsExportedAsOther: the calls a full ProcStats counts under
// oncrpc.OtherProc are exported with program, version and procedure "other". The
// collector folds the key's netid into the transport label ("" becomes "other")
// before naming it, and Names used to compare the whole key, netid included, with
// OtherProc, so the series came out as program="4294967295" and so on.
func TestOverflowProcsExportedAsOther(t *testing.T) {
	var ps oncrpc.ProcStats
	for i := range uint32(oncrpc.MaxProcKeys + 10) {
		ps.Observe(oncrpc.CallInfo{Prog: 7, Vers: 1, Proc: i, Netid: "tcp", Outcome: oncrpc.OutcomeSuccess})
	}
	c := metrics.New()
	c.AddProcStats(&ps)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var other float64
	for _, mf := range mfs {
		if mf.GetName() != "rpcrdma_rpc_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for _, l := range []string{"program", "version", "procedure"} {
				if labels[l] == "4294967295" {
					t.Errorf("overflow series exported as %v (%v calls), want program, version and procedure \"other\"", labels, m.GetCounter().GetValue())
				}
			}
			if labels["procedure"] == "other" {
				other += m.GetCounter().GetValue()
			}
		}
	}
	if want := float64(oncrpc.MaxProcKeys + 10 - (oncrpc.MaxProcKeys - 1)); other != want {
		t.Errorf("rpc_calls_total{procedure=\"other\"} counts %v calls, want %v", other, want)
	}
}
