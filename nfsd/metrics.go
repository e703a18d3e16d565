//go:build linux

package nfsd

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// metricsState is what Run keeps for Config.Metrics: the per-procedure table its
// servers feed and the collector the endpoint reads. Its zero value (metrics off)
// costs nothing on the per-call path.
type metricsState struct {
	procs  *oncrpc.ProcStats
	status *nfsserver.StatusStats
	c      *metrics.Collector
}

func newMetricsState(cfg *Config) *metricsState {
	if cfg.Metrics == "" {
		return &metricsState{}
	}
	return &metricsState{procs: new(oncrpc.ProcStats), status: new(nfsserver.StatusStats), c: metrics.New()}
}

// nfsService is what Run serves NFS and MOUNT with: an nfsserver.Exports (or one
// nfsserver.Server).
type nfsService interface {
	Register(srv *oncrpc.Server)
	NFSHandler() oncrpc.Handler
	NFS4Handler() oncrpc.Handler
	MountHandler() oncrpc.Handler
}

// registerNFS registers NFS (versions 3 and 4) and MOUNT on srv, NFSv3 counting its
// replies' statuses when metrics are on.
func (m *metricsState) registerNFS(srv *oncrpc.Server, nfs nfsService) {
	if m.status == nil {
		nfs.Register(srv)
		return
	}
	srv.Register(nfs3.Program, nfs3.Version, m.status.Handler(nfs.NFSHandler()))
	srv.Register(nfs3.MountProgram, nfs3.MountVersion, nfs.MountHandler())
	srv.Register(nfs4.Program, nfs4.Version, nfs.NFS4Handler())
}

// addBudget adds the memory budget Run's servers share to the collector.
func (m *metricsState) addBudget(b *oncrpc.Budget) {
	if m.c != nil {
		m.c.AddBudget(b)
	}
}

// addReloads adds the counts of the exports table's reloads to the collector, the
// table in force having been loaded at loaded, and returns them for the reloader to
// update (nil when metrics are off).
func (m *metricsState) addReloads(loaded time.Time) *metrics.ReloadStats {
	if m.c == nil {
		return nil
	}
	s := metrics.NewReloadStats(loaded)
	m.c.AddReloads(s)
	return s
}

// observe is the ServerOptions.Observe for Run's servers (nil when metrics are off).
func (m *metricsState) observe() func(oncrpc.CallInfo) {
	if m.procs == nil {
		return nil
	}
	return m.procs.Observe
}

// start adds the servers, listeners and device to the collector and starts the
// endpoint; stop closes it. With metrics off it does nothing.
func (m *metricsState) start(cfg *Config, log hclog.Logger, dev verbs.Device, servers []*oncrpc.Server, ls []listener) (*metrics.Server, error) {
	if m.c == nil {
		return nil, nil
	}
	m.c.AddProcStats(m.procs)
	m.c.AddNFSStatus(m.status)
	for _, s := range servers {
		if s != nil {
			m.c.AddServer(s)
		}
	}
	for _, l := range ls {
		m.c.AddListener(l.l)
	}
	if dev != nil {
		m.c.AddDevice(dev)
	}
	ms, err := metrics.Serve(cfg.Metrics, m.c, &metrics.Options{Pprof: cfg.Pprof, Logger: log.Named("metrics")})
	if err != nil {
		return nil, listenErr("Metrics", cfg.Metrics, err)
	}
	return ms, nil
}
