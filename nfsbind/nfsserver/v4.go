//go:build linux

package nfsserver

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// v4Set is the exports an NFSv4.1 server serves at one moment: a Server's own export,
// or one loaded table of an Exports.
type v4Set struct {
	byID   map[uint32]*Server // export id (in handles) -> export
	list   []*Server
	pseudo *pseudoFS
}

func newV4Set(list []*Server) *v4Set {
	set := &v4Set{byID: make(map[uint32]*Server, len(list)), list: list, pseudo: newPseudoFS(list)}
	for _, s := range list {
		set.byID[s.handles.exportID] = s
	}
	return set
}

// NFS4Options configure the NFSv4.1 service of a Server or an Exports.
type NFS4Options struct {
	// State configures the client, session, open and lock state (nfs4state.Options):
	// lease time, grace time, the state directory that lets clients reclaim after a
	// restart (default: Options.StateDir), and the bounds of every table. Its Logger
	// defaults to the export's.
	State nfs4state.Options
	// SweepInterval is how often expired leases are swept (default a tenth of the
	// lease time, at least a second).
	SweepInterval time.Duration
}

// v4Server is the NFSv4.1 service (program 100003 version 4, minor version 1) of a set
// of exports: the COMPOUND procedure, the pseudo file system leading to the exports,
// and the state (clients, sessions, opens, locks) in an nfs4state.Manager.
type v4Server struct {
	log   hclog.Logger
	set   func() *v4Set
	state *nfs4state.Manager
	now   func() time.Time // the state manager's clock
	owner nfs4.ServerOwner4
	scope []byte
	impl  nfs4.NFSImplID4

	conns connIDs
	pool  sync.Pool // *compound
	cb    cbProbes

	// ctx ends at close, for the callback probes.
	ctx    context.Context
	cancel context.CancelFunc

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// newV4Server starts the NFSv4.1 service over the exports set returns; handles is
// the handle codec of those exports, whose key names the server instance (see
// serverIdentity).
func newV4Server(log hclog.Logger, set func() *v4Set, handles *handleCodec, opts NFS4Options) (*v4Server, error) {
	so := opts.State
	if so.Logger == nil {
		so.Logger = log.Named("nfs4state")
	}
	m, err := nfs4state.New(so)
	if err != nil {
		return nil, fmt.Errorf("nfsserver: NFSv4 state: %w", err)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	now := so.Now
	if now == nil {
		now = time.Now
	}
	v := &v4Server{log: log, set: set, state: m, now: now, stop: make(chan struct{}), done: make(chan struct{})}
	id := serverIdentity(host, handles)
	v.owner = nfs4.ServerOwner4{MinorID: 0, MajorID: id}
	v.scope = id
	v.impl = nfs4.NFSImplID4{Domain: []byte("go-rpcrdma.dev"), Name: []byte("go-rpcrdma nfsserver")}
	v.conns.init(m.ConnClosed)
	v.ctx, v.cancel = context.WithCancel(context.Background())
	v.cb.init()
	v.pool.New = func() any { return newCompound(v) }
	every := opts.SweepInterval
	if every <= 0 {
		every = max(m.LeaseTime()/10, time.Second)
	}
	go v.sweep(every)
	return v, nil
}

// serverIdentity is the server owner's major ID and the server scope (RFC 8881
// §2.5, §2.10.4): the host name and a digest of the handle key. Two servers on one
// host with different state directories (so different keys) are then different
// servers to a client, which would otherwise take them for one and trunk their
// sessions; a server restarted with its state directory keeps its identity and
// scope, so its clients may reclaim their state. Without a state directory the key,
// and so the identity, is new at every start, as the handles are.
func serverIdentity(host string, handles *handleCodec) []byte {
	var body [handleBody]byte
	copy(body[:], "NFSv4.1 server owner")
	var digest [handleMACLen]byte
	handles.mac(digest[:], body[:])
	return fmt.Appendf(nil, "go-rpcrdma:%s:%x", host, digest[:8])
}

// sweep ends the leases that expired, every interval, until close.
func (v *v4Server) sweep(every time.Duration) {
	defer close(v.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			if n := v.state.Sweep(v.now()); n > 0 {
				v.log.Info("leases expired", "clients", n)
			}
		}
	}
}

// close stops the lease sweeper and the callback probes.
func (v *v4Server) close() {
	v.stopOnce.Do(func() {
		close(v.stop)
		v.cb.mu.Lock()
		v.cancel()
		v.cb.mu.Unlock()
	})
	<-v.done
	v.cb.wait()
}

// handler returns the oncrpc handler of NFS version 4: NULL (non-blocking) and
// COMPOUND.
func (v *v4Server) handler() oncrpc.Handler {
	return oncrpc.NonBlocking(oncrpc.Procs{
		nfs4.ProcNull:     null,
		nfs4.ProcCompound: v.compound,
	}, nfs4.ProcNull)
}

// compound is the COMPOUND procedure (RFC 8881 §16.2).
func (v *v4Server) compound(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	c := v.pool.Get().(*compound)
	defer v.putCompound(c)
	return c.run(ctx, req, res)
}

// putCompound returns c to the pool. The slot of a COMPOUND that ends without a reply
// (abandoned when its call's context ended, or one that panicked, which oncrpc
// answers SYSTEM_ERR) is released here uncached, so that it is not left held and a
// retry gets NFS4ERR_RETRY_UNCACHED_REP rather than an empty reply (RFC 8881
// §2.10.6.1); Abandon is a no-op for a slot finishSlot released already.
func (v *v4Server) putCompound(c *compound) {
	c.slot.Abandon()
	c.reset()
	v.pool.Put(c)
}

// NFS4Handler returns the oncrpc handler of NFS version 4 for the export: minor
// version 1 (see the package documentation), NULL answered without a worker hand-off.
// A Server of an Exports has no NFSv4.1 service of its own (the Exports' covers all
// its exports): its handler answers every procedure PROC_UNAVAIL.
func (s *Server) NFS4Handler() oncrpc.Handler {
	if s.v4 == nil {
		return oncrpc.Procs{}
	}
	return s.v4.handler()
}
