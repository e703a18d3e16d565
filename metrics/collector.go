package metrics

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

const ns = "rpcrdma"

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(ns+"_"+name, help, labels, nil)
}

var (
	callsDesc    = desc("rpc_calls_total", "ONC RPC calls answered by the server, by procedure, transport and outcome (accept_stat, denied, dropped); program, version, procedure and transport \"other\" count the calls to programs, versions or procedures not served, and those past 512 procedures.", "program", "version", "procedure", "transport", "outcome")
	durationDesc = desc("rpc_call_duration_seconds", "Server latency of ONC RPC calls, from arrival to reply handed to the transport; procedure \"other\" as in rpcrdma_rpc_calls_total.", "program", "version", "procedure", "transport")

	srvCallsDesc     = desc("rpc_server_calls_total", "ONC RPC calls read from transports.")
	srvGarbageDesc   = desc("rpc_server_garbage_total", "ONC RPC calls dropped or denied because their header was malformed.")
	srvSysErrDesc    = desc("rpc_server_system_errors_total", "SYSTEM_ERR replies (handler errors and panics).")
	srvWriteErrsDesc = desc("rpc_server_write_errors_total", "Replies the transport failed to send.")

	connAcceptedDesc = desc("transport_connections_accepted_total", "Connections accepted.", "transport")
	connClosedDesc   = desc("transport_connections_closed_total", "Accepted connections that have closed.", "transport")
	connOpenDesc     = desc("transport_connections_open", "Connections open.", "transport")
	connRefusedDesc  = desc("transport_connections_refused_total", "Connections refused because the connection limit was reached.", "transport")
	connReapedDesc   = desc("transport_connections_reaped_total", "Connections closed for idleness.", "transport")

	rdmaCallsDesc       = desc("rdma_calls_total", "RPC-over-RDMA calls received within their credits, by whether they carried read chunks.", "transport", "chunks")
	rdmaRepliesDesc     = desc("rdma_replies_total", "RPC-over-RDMA replies sent, by path: inline, the client's reply chunk, or a read chunk.", "transport", "path")
	rdmaWriteChunksDesc = desc("rdma_write_chunks_total", "Write chunks filled with a reply payload.", "transport")
	rdmaReadBytesDesc   = desc("rdma_read_bytes_total", "Bytes of read chunks pulled by RDMA Read.", "transport")
	rdmaWriteBytesDesc  = desc("rdma_write_bytes_total", "Bytes pushed by RDMA Write into write and reply chunks.", "transport")
	rdmaErrorsDesc      = desc("rdma_errors_sent_total", "RDMA_ERROR messages sent, by error code.", "transport", "kind")
	creditsGrantedDesc  = desc("rdma_credits_granted", "Credits granted to the open connections (the last rdma_credit each was sent).", "transport")
	bufferBytesDesc     = desc("rdma_buffer_bytes", "Bytes of registered buffers for reassembled calls and long replies.", "transport")
	bufferInUseDesc     = desc("rdma_buffer_bytes_in_use", "Bytes of those buffers held by calls in flight (large messages in flight).", "transport")
	creditsInUseDesc    = desc("rdma_credits_in_use", "Calls received within their credits and not yet answered.", "transport")

	budgetInUseDesc = desc("rpc_bytes_in_flight", "Bytes held by calls in progress on both transports: call data reassembled and reply data not yet sent (the memory budget in use).")
	budgetLimitDesc = desc("rpc_bytes_budget", "The memory budget for calls in progress (0: unbounded).")

	nfsStatusDesc  = desc("nfs_replies_total", "NFSv3 replies by procedure and nfsstat3 status.", "procedure", "status")
	terminatesDesc = desc("iwarp_terminates_total", "iWARP Terminate messages, by direction and the layer their error code names.", "provider", "direction", "layer")

	reloadsDesc         = desc("exports_reloads_total", "Reloads of the exports file (SIGHUP), by result: success, or failure (the table in force stays).", "result")
	reloadOKDesc        = desc("exports_last_reload_successful", "Whether the last reload of the exports file succeeded (1; before any reload, 1) or failed (0).")
	reloadSuccessTSDesc = desc("exports_last_reload_success_timestamp_seconds", "When the exports table in force was loaded, at start or by the last successful reload, in seconds since the Unix epoch.")
)

// A Collector is a prometheus.Collector reading the sources added to it at scrape
// time. Sources may be added at any time; the zero value is not usable (New).
type Collector struct {
	mu      sync.Mutex
	procs   []*oncrpc.ProcStats
	servers []*oncrpc.Server
	rdma    []*rpcrdma.Listener
	tcp     []*oncrpc.TCPListener
	softs   []*soft.Device
	nfs     []*nfsserver.StatusStats
	budgets []*oncrpc.Budget
	reloads []*ReloadStats
}

// New returns a Collector with no sources.
func New() *Collector { return &Collector{} }

// AddProcStats adds a per-procedure table (the one given to
// oncrpc.ServerOptions.Observe).
func (c *Collector) AddProcStats(p *oncrpc.ProcStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
}

// AddNFSStatus adds an NFS server's reply counts by status.
func (c *Collector) AddNFSStatus(st *nfsserver.StatusStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nfs = append(c.nfs, st)
}

// AddReloads adds a daemon's configuration reloads (nfsrdmad's exports file).
func (c *Collector) AddReloads(s *ReloadStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reloads = append(c.reloads, s)
}

// AddBudget adds a memory budget (oncrpc.ServerOptions.Budget): the bytes calls in
// progress hold, and its limit.
func (c *Collector) AddBudget(b *oncrpc.Budget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budgets = append(c.budgets, b)
}

// AddServer adds an ONC RPC server's counters.
func (c *Collector) AddServer(s *oncrpc.Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.servers = append(c.servers, s)
}

// AddListener adds a listener's counters: an *rpcrdma.Listener (transport "rdma") or
// an *oncrpc.TCPListener (transport "tcp"). It reports whether it knows l's type.
func (c *Collector) AddListener(l oncrpc.Listener) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch l := l.(type) {
	case *rpcrdma.Listener:
		c.rdma = append(c.rdma, l)
	case *oncrpc.TCPListener:
		c.tcp = append(c.tcp, l)
	default:
		return false
	}
	return true
}

// AddDevice adds an RDMA device's counters when it keeps any (verbs/soft's
// Terminates); it reports whether it did.
func (c *Collector) AddDevice(d verbs.Device) bool {
	s, ok := d.(*soft.Device)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.softs = append(c.softs, s)
	return true
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{callsDesc, durationDesc, srvCallsDesc, srvGarbageDesc, srvSysErrDesc, srvWriteErrsDesc,
		connAcceptedDesc, connClosedDesc, connOpenDesc, connRefusedDesc, connReapedDesc,
		rdmaCallsDesc, rdmaRepliesDesc, rdmaWriteChunksDesc, rdmaReadBytesDesc, rdmaWriteBytesDesc, rdmaErrorsDesc,
		creditsGrantedDesc, creditsInUseDesc, bufferBytesDesc, bufferInUseDesc, terminatesDesc, nfsStatusDesc,
		budgetInUseDesc, budgetLimitDesc, reloadsDesc, reloadOKDesc, reloadSuccessTSDesc} {
		ch <- d
	}
}

// Collect reads every source and sends the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	procs, servers := c.procs, c.servers
	rdma, tcp, softs, nfs, budgets := c.rdma, c.tcp, c.softs, c.nfs, c.budgets
	reloads := c.reloads
	c.mu.Unlock()

	collectReloads(ch, reloads)

	if len(budgets) > 0 {
		var used, limit int64
		unbounded := false
		for _, b := range budgets {
			used += b.InUse()
			limit += b.Limit()
			unbounded = unbounded || b.Limit() <= 0
		}
		if unbounded { // one unbounded budget leaves the sum unbounded: 0, as documented
			limit = 0
		}
		gauge(ch, budgetInUseDesc, float64(used))
		gauge(ch, budgetLimitDesc, float64(limit))
	}

	collectProcs(ch, procs)
	collectNFSStatus(ch, nfs)

	var srv oncrpc.ServerStats
	for _, s := range servers {
		st := s.Stats()
		srv.Calls += st.Calls
		srv.Garbage += st.Garbage
		srv.SystemErrs += st.SystemErrs
		srv.WriteErrors += st.WriteErrors
	}
	counter(ch, srvCallsDesc, srv.Calls)
	counter(ch, srvGarbageDesc, srv.Garbage)
	counter(ch, srvSysErrDesc, srv.SystemErrs)
	counter(ch, srvWriteErrsDesc, srv.WriteErrors)

	var tcpConns oncrpc.ListenerStats
	for _, l := range tcp {
		addConns(&tcpConns, l.Stats())
	}
	var r rpcrdma.ServerStats
	for _, l := range rdma {
		st := l.Stats()
		addConns(&r.Conns, st.Conns)
		r.CallsInline += st.CallsInline
		r.CallsReadChunks += st.CallsReadChunks
		r.ReadBytes += st.ReadBytes
		r.RepliesInline += st.RepliesInline
		r.RepliesReplyChunk += st.RepliesReplyChunk
		r.RepliesReadChunk += st.RepliesReadChunk
		r.WriteChunks += st.WriteChunks
		r.WriteBytes += st.WriteBytes
		r.ErrVers += st.ErrVers
		r.ErrChunk += st.ErrChunk
		r.Credits.Granted += st.Credits.Granted
		r.Credits.Outstanding += st.Credits.Outstanding
		r.BufferBytes += st.BufferBytes
		r.BufferBytesInUse += st.BufferBytesInUse
	}
	if len(tcp) > 0 {
		collectConns(ch, "tcp", tcpConns)
	}
	if len(rdma) > 0 {
		collectConns(ch, "rdma", r.Conns)
		counter(ch, rdmaCallsDesc, r.CallsInline, "rdma", "none")
		counter(ch, rdmaCallsDesc, r.CallsReadChunks, "rdma", "read")
		counter(ch, rdmaRepliesDesc, r.RepliesInline, "rdma", "inline")
		counter(ch, rdmaRepliesDesc, r.RepliesReplyChunk, "rdma", "reply_chunk")
		counter(ch, rdmaRepliesDesc, r.RepliesReadChunk, "rdma", "read_chunk")
		counter(ch, rdmaWriteChunksDesc, r.WriteChunks, "rdma")
		counter(ch, rdmaReadBytesDesc, r.ReadBytes, "rdma")
		counter(ch, rdmaWriteBytesDesc, r.WriteBytes, "rdma")
		counter(ch, rdmaErrorsDesc, r.ErrVers, "rdma", "ERR_VERS")
		counter(ch, rdmaErrorsDesc, r.ErrChunk, "rdma", "ERR_CHUNK")
		gauge(ch, creditsGrantedDesc, float64(r.Credits.Granted), "rdma")
		gauge(ch, creditsInUseDesc, float64(r.Credits.Outstanding), "rdma")
		gauge(ch, bufferBytesDesc, float64(r.BufferBytes), "rdma")
		gauge(ch, bufferInUseDesc, float64(r.BufferBytesInUse), "rdma")
	}
	if len(softs) > 0 {
		var sent, recv soft.TerminateCounts
		for _, d := range softs {
			st := d.Stats()
			addTerms(&sent, st.TerminatesSent)
			addTerms(&recv, st.TerminatesReceived)
		}
		for _, x := range []struct {
			dir string
			t   soft.TerminateCounts
		}{{"sent", sent}, {"received", recv}} {
			counter(ch, terminatesDesc, x.t.RDMAP, "soft", x.dir, "rdmap")
			counter(ch, terminatesDesc, x.t.DDP, "soft", x.dir, "ddp")
			counter(ch, terminatesDesc, x.t.LLP, "soft", x.dir, "llp")
			counter(ch, terminatesDesc, x.t.Other, "soft", x.dir, "other")
		}
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func addConns(sum *oncrpc.ListenerStats, s oncrpc.ListenerStats) {
	sum.Accepted += s.Accepted
	sum.Closed += s.Closed
	sum.Refused += s.Refused
	sum.Reaped += s.Reaped
}

func addTerms(sum *soft.TerminateCounts, t soft.TerminateCounts) {
	sum.RDMAP += t.RDMAP
	sum.DDP += t.DDP
	sum.LLP += t.LLP
	sum.Other += t.Other
}

func collectConns(ch chan<- prometheus.Metric, transport string, s oncrpc.ListenerStats) {
	counter(ch, connAcceptedDesc, s.Accepted, transport)
	counter(ch, connClosedDesc, s.Closed, transport)
	gauge(ch, connOpenDesc, float64(s.Open()), transport)
	counter(ch, connRefusedDesc, s.Refused, transport)
	counter(ch, connReapedDesc, s.Reaped, transport)
}

// collectReloads sends the reload counts, summed over the stats, whether the last
// reload of each succeeded (0 if any failed), and the latest successful load.
func collectReloads(ch chan<- prometheus.Metric, stats []*ReloadStats) {
	if len(stats) == 0 {
		return
	}
	var ok, failed uint64
	allOK := true
	var last time.Time
	for _, s := range stats {
		o, f := s.Reloads()
		ok += o
		failed += f
		allOK = allOK && s.LastSuccessful()
		if t := s.LastSuccess(); t.After(last) {
			last = t
		}
	}
	counter(ch, reloadsDesc, ok, "success")
	counter(ch, reloadsDesc, failed, "failure")
	v := 0.0
	if allOK {
		v = 1
	}
	gauge(ch, reloadOKDesc, v)
	gauge(ch, reloadSuccessTSDesc, float64(last.UnixNano())/1e9)
}

// bucketBounds are oncrpc.LatencyBuckets in seconds.
var bucketBounds = func() []float64 {
	b := make([]float64, len(oncrpc.LatencyBuckets))
	for i, d := range oncrpc.LatencyBuckets {
		b[i] = d.Seconds()
	}
	return b
}()

// collectProcs sends the per-procedure counters and histograms, summed over the
// tables (two servers may serve the same procedure) and over the netids of one
// transport ("rdma" and "rdma6" are transport="rdma").
func collectProcs(ch chan<- prometheus.Metric, tables []*oncrpc.ProcStats) {
	sums := make(map[oncrpc.ProcKey]*oncrpc.ProcCounters)
	for _, t := range tables {
		t.Each(func(k oncrpc.ProcKey, c *oncrpc.ProcCounters) {
			k.Netid = Transport(k.Netid)
			s := sums[k]
			if s == nil {
				s = new(oncrpc.ProcCounters)
				sums[k] = s
			}
			for i, v := range c.Outcomes {
				s.Outcomes[i] += v
			}
			for i, v := range c.Buckets {
				s.Buckets[i] += v
			}
			s.Sum += c.Sum
		})
	}
	for k, s := range sums {
		prog, vers, proc := Names(k)
		for o, v := range s.Outcomes {
			if v > 0 {
				counter(ch, callsDesc, v, prog, vers, proc, k.Netid, oncrpc.Outcome(o).String())
			}
		}
		cum := make(map[float64]uint64, len(bucketBounds))
		var n uint64
		for i, b := range bucketBounds {
			n += s.Buckets[i]
			cum[b] = n
		}
		n += s.Buckets[len(bucketBounds)]
		ch <- prometheus.MustNewConstHistogram(durationDesc, n, s.Sum.Seconds(), cum, prog, vers, proc, k.Netid)
	}
}

// collectNFSStatus sends the NFS reply counts by procedure and status, summed over
// the tables; only the pairs seen.
func collectNFSStatus(ch chan<- prometheus.Metric, tables []*nfsserver.StatusStats) {
	type key struct {
		proc   nfs3.Proc
		status nfs3.Status
	}
	sums := map[key]uint64{}
	for _, t := range tables {
		t.Each(func(p nfs3.Proc, s nfs3.Status, n uint64) { sums[key{p, s}] += n })
	}
	for k, n := range sums {
		status := "other"
		if k.status != nfs3.Status(^uint32(0)) {
			status = strings.ToLower(k.status.String())
		}
		counter(ch, nfsStatusDesc, n, strings.ToLower(k.proc.String()), status)
	}
}

// itoa formats a program, version or procedure number.
func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
