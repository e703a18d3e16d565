package main

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// newProcStats returns the per-procedure table for -metrics and the observer to give
// the server (both nil without -metrics: no cost per call).
func newProcStats(cfg *config) (*oncrpc.ProcStats, func(oncrpc.CallInfo)) {
	if cfg.metrics == "" {
		return nil, nil
	}
	p := new(oncrpc.ProcStats)
	return p, p.Observe
}

// startMetrics serves -metrics (and -pprof) for the server, its listeners and the
// RDMA device (nil when there is none). Without -metrics it does nothing.
func startMetrics(cfg *config, log hclog.Logger, procs *oncrpc.ProcStats, srv *oncrpc.Server, dev verbs.Device, listeners []oncrpc.Listener) (*metrics.Server, error) {
	if cfg.metrics == "" {
		return nil, nil
	}
	c := metrics.New()
	c.AddProcStats(procs)
	c.AddServer(srv)
	for _, l := range listeners {
		c.AddListener(l)
	}
	if dev != nil {
		c.AddDevice(dev)
	}
	ms, err := metrics.Serve(cfg.metrics, c, &metrics.Options{Pprof: cfg.pprof, Logger: log.Named("metrics")})
	if err != nil {
		return nil, fmt.Errorf("-metrics %s: %w", cfg.metrics, err)
	}
	if cfg.metricsReady != nil {
		cfg.metricsReady(ms)
	}
	return ms, nil
}
