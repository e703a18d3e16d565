// Command rdmaconfig runs the RPC-over-RDMA Connection Configuration Protocol
// (CONF_RDMA, program 100400 version 1, seed draft §6) as a service of its own, or
// queries one.
//
// Serve CONF_RDMA over RDMA (the software iWARP provider, verbs/soft) and/or TCP:
//
//	rdmaconfig -listen 0.0.0.0:20049 [-tcp 127.0.0.1:20048] [-register]
//	           [-maxcall 4096] [-maxreply 4096] [-align 4] [-maxrdmaread 16]
//	           [-metrics 127.0.0.1:9100 [-pprof]]
//
// -metrics serves Prometheus metrics (package metrics) at http://ADDR/metrics, and
// -pprof adds net/http/pprof under /debug/pprof/ on that listener.
//
// Each negotiation over RDMA is applied to the connection it came on (the server's
// inline send size and RDMA Read budget, confproto.ServerSettings) and logged.
//
// With -register the listeners are registered with the local rpcbind (127.0.0.1:111,
// or its AF_LOCAL socket with -rpcbind unix:/run/rpcbind.sock) under netid "rdma" or "rdma6" (and "tcp"/"tcp6" for -tcp), after
// removing stale registrations of the same netid, and unregistered on exit.
//
// Query a server (negotiate from one credit and 1 KiB messages, seed §6.1), apply the
// outcome to the RDMA connection, and print the server's answer and the settings:
//
//	rdmaconfig -query 192.0.2.1:20049 [-query-net rdma|tcp] [-maxcall ...] ...
//
// In query mode -maxcall, -maxreply and -maxrdmaread are the client's request.
// Logs go to stderr through go-hclog (-log-level; -log-format json for one JSON
// object per line). -version prints the version. The exit status is 0 on success
// and for -h, 2 for a bad command line, 1 for other failures, 130/143 when SIGINT or
// SIGTERM cut a query short (a server stopped by either exits 0).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/internal/cli"
	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	_ "github.com/go-rpcrdma/rpcrdma/verbs/providers" // every provider built in, for -provider
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	code := cli.Report(ctx, "rdmaconfig", err)
	stop()
	os.Exit(code)
}

// errVersion is parseFlags' answer to -version.
var errVersion = errors.New("-version")

// config is the parsed command line.
type config struct {
	listen   string // RDMA listener address
	tcp      string // TCP listener address
	provider string // RDMA provider, by its verbs registry name
	device   string // RDMA device for the provider (ibverbs)
	limits   confproto.Limits
	register bool
	rpcbind  string
	query    string
	queryNet string
	timeout  time.Duration
	log      hclog.Logger
	// metrics is -metrics (serve Prometheus metrics there), pprof -pprof;
	// metricsReady, when set (tests), is told the endpoint once it listens.
	metrics      string
	pprof        bool
	metricsReady func(*metrics.Server)
}

// parseFlags parses args into a config and checks it.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	def := confproto.DefaultLimits()
	fs := flag.NewFlagSet("rdmaconfig", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.listen, "listen", "", "serve CONF_RDMA over RPC-over-RDMA on `ADDR` (host:port)")
	fs.StringVar(&cfg.tcp, "tcp", "", "serve CONF_RDMA over ONC RPC on TCP on `ADDR` (host:port)")
	fs.StringVar(&cfg.provider, "provider", "soft", "RDMA provider: "+strings.Join(verbs.ProviderNames(), " or ")+" (ibverbs only in binaries built with -tags ibverbs)")
	fs.StringVar(&cfg.device, "device", "", "RDMA `DEVICE` for -provider ibverbs, e.g. rxe0 (default: the one owning the listen address, or the only one)")
	maxcall := fs.Uint("maxcall", uint(def.MaxCallSendSize), "largest inline call accepted (serve) or wanted (query), bytes")
	maxreply := fs.Uint("maxreply", uint(def.MaxReplySendSize), "largest inline reply sent (serve) or accepted (query), bytes")
	align := fs.Uint("align", uint(def.Align), "alignment recommended for opaque data (serve); above 4, RDMA_MSGP calls padded to it are accepted")
	maxrdmaread := fs.Uint("maxrdmaread", uint(def.MaxRDMARead), "RDMA Reads the peer may have active against this side (IRD)")
	fs.BoolVar(&cfg.register, "register", false, "register the listeners with the local rpcbind (netids rdma/rdma6, tcp/tcp6)")
	fs.StringVar(&cfg.rpcbind, "rpcbind", rpcbind.DefaultAddr, "rpcbind `ADDR` for -register: host:port (TCP), or unix:PATH for its AF_LOCAL socket (mappings then owned by your uid, \"superuser\" for root)")
	fs.StringVar(&cfg.query, "query", "", "negotiate with the CONF_RDMA server at `ADDR` and print the result")
	fs.StringVar(&cfg.queryNet, "query-net", "rdma", "transport for -query: rdma or tcp")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "bound on -query and on each rpcbind exchange")
	fs.StringVar(&cfg.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (host:port; \"\": off)")
	fs.BoolVar(&cfg.pprof, "pprof", false, "also serve net/http/pprof under /debug/pprof/ on the -metrics listener")
	var logf cli.LogFlags
	logf.Register(fs, "info")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *version {
		return nil, errVersion
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if cfg.log, err = logf.Logger("rdmaconfig", stderr); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    uint
	}{{"maxcall", *maxcall}, {"maxreply", *maxreply}, {"align", *align}, {"maxrdmaread", *maxrdmaread}} {
		if f.v > 1<<32-1 {
			return nil, fmt.Errorf("-%s %d: larger than 32 bits", f.name, f.v)
		}
	}
	cfg.limits = confproto.Limits{MaxCallSendSize: uint32(*maxcall), MaxReplySendSize: uint32(*maxreply), Align: uint32(*align), MaxRDMARead: uint32(*maxrdmaread)}
	if err := verbs.CheckProvider(cfg.provider); err != nil {
		return nil, fmt.Errorf("-provider: %w", err)
	}
	if cfg.timeout <= 0 {
		return nil, fmt.Errorf("-timeout %v: must be positive", cfg.timeout)
	}

	if cfg.pprof && cfg.metrics == "" {
		return nil, errors.New("-pprof: needs -metrics ADDR, the listener it is served on")
	}
	for _, a := range []struct{ name, addr string }{{"-listen", cfg.listen}, {"-tcp", cfg.tcp}, {"-metrics", cfg.metrics}, {"-query", cfg.query}} {
		if a.addr == "" {
			continue
		}
		if err := cli.CheckAddr(a.name, a.addr); err != nil {
			return nil, err
		}
	}
	if err := cli.CheckRPCBindAddr("-rpcbind", cfg.rpcbind); err != nil {
		return nil, err
	}
	if cfg.query != "" {
		if cfg.metrics != "" {
			return nil, errors.New("-metrics serves a server's counters: it cannot be combined with -query")
		}
		if cfg.listen != "" || cfg.tcp != "" || cfg.register {
			return nil, errors.New("-query is a client mode: it cannot be combined with -listen, -tcp or -register")
		}
		if cfg.queryNet != "rdma" && cfg.queryNet != "tcp" {
			return nil, fmt.Errorf("-query-net %q: want rdma or tcp", cfg.queryNet)
		}
		req := cfg.request()
		if err := req.Validate(); err != nil {
			return nil, flagErr(err)
		}
		return cfg, nil
	}
	if cfg.listen == "" && cfg.tcp == "" {
		return nil, errors.New("nothing to serve: give -listen ADDR (RDMA) and/or -tcp ADDR, or -query ADDR")
	}
	if err := cfg.limits.Validate(); err != nil {
		return nil, flagErr(err)
	}
	if cfg.listen != "" {
		// The RDMA transport announces its receive and send buffers in RFC 8797
		// private data, which cannot express more than 256 KiB.
		if cfg.limits.MaxCallSendSize > rpcrdma.MaxInlineSize || cfg.limits.MaxReplySendSize > rpcrdma.MaxInlineSize {
			return nil, fmt.Errorf("-maxcall %d / -maxreply %d: the RDMA listener's inline buffers are at most %d bytes", cfg.limits.MaxCallSendSize, cfg.limits.MaxReplySendSize, rpcrdma.MaxInlineSize)
		}
	}
	return cfg, nil
}

// flagErr rewrites a *confproto.ValueError about the limits or the request in terms of
// the command's flags.
func flagErr(err error) error {
	var ve *confproto.ValueError
	if !errors.As(err, &ve) {
		return err
	}
	flagName := map[string]string{
		"MaxCallSendSize": "maxcall", "maxcall_sendsize": "maxcall",
		"MaxReplySendSize": "maxreply", "maxreply_sendsize": "maxreply",
		"Align": "align", "MaxRDMARead": "maxrdmaread", "maxrdmaread": "maxrdmaread",
	}[ve.Field]
	return fmt.Errorf("-%s %d: %s (%w)", flagName, ve.Value, ve.Reason, err)
}

// request is the CONF_RDMA request of query mode.
func (c *config) request() confproto.ConfigRDMAReq {
	return confproto.ConfigRDMAReq{MaxCallSendSize: c.limits.MaxCallSendSize, MaxReplySendSize: c.limits.MaxReplySendSize, MaxRDMARead: c.limits.MaxRDMARead}
}

// run parses args and serves or queries until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	switch {
	case err == errVersion:
		fmt.Fprintln(stdout, cli.VersionLine("rdmaconfig"))
		return nil
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		return &cli.UsageError{Err: err}
	}
	if cfg.query != "" {
		return query(ctx, cfg, stdout)
	}
	return serve(ctx, cfg, cfg.log, nil)
}

// isConfigurable reports whether the service applied a negotiation to c (an
// RPC-over-RDMA connection), for the log.
func isConfigurable(c oncrpc.ServerConn) bool {
	_, ok := c.(confproto.Configurable)
	return ok
}

// serve runs the CONF_RDMA service on the configured listeners until ctx ends or a
// listener fails. ready, when set, is called with the listeners' addresses once they
// listen (and are registered).
func serve(ctx context.Context, cfg *config, log hclog.Logger, ready func(rdma, tcp net.Addr)) error {
	svc, err := confproto.NewService(&confproto.ServiceOptions{
		Limits: &cfg.limits,
		Logger: log.Named("conf_rdma"),
		Configured: func(req *oncrpc.Request, client confproto.ConfigRDMAReq, s confproto.Settings) {
			log.Info("CONF_RDMA", "remote", req.RemoteAddr.String(), "netid", req.Netid,
				"client_maxcall_sendsize", client.MaxCallSendSize, "client_maxreply_sendsize", client.MaxReplySendSize,
				"client_maxrdmaread", client.MaxRDMARead,
				"server_inline_send", s.InlineSend, "server_inline_recv", s.InlineRecv, "server_max_rdma_read", s.MaxRDMARead,
				"applied", isConfigurable(req.Conn))
		},
	})
	if err != nil {
		return flagErr(err)
	}
	procs, observe := newProcStats(cfg)
	srv := oncrpc.NewServer(&oncrpc.ServerOptions{Logger: log.Named("oncrpc"), Observe: observe})
	svc.Register(srv)
	var rdev verbs.Device // for -metrics

	var listeners []oncrpc.Listener
	closeAll := func() {
		for _, l := range listeners {
			l.Close()
		}
	}
	var rdmaAddr, tcpAddr net.Addr
	if cfg.listen != "" {
		host, _, _ := net.SplitHostPort(cfg.listen)
		dev, err := verbs.OpenProvider(cfg.provider, verbs.ProviderConfig{Device: cfg.device, Addr: host, Logger: log})
		if err != nil {
			return fmt.Errorf("-provider %s: %w", cfg.provider, err)
		}
		defer dev.Close()
		rdev = dev
		l, err := rpcrdma.Listen(ctx, dev, cfg.listen, &rpcrdma.ServerOptions{
			InlineRecv: int(cfg.limits.MaxCallSendSize),
			InlineSend: int(cfg.limits.MaxReplySendSize),
			// A server that recommends an alignment above XDR's accepts calls
			// padded to it (RDMA_MSGP, seed §3.9); otherwise CONF_RDMA answers 4.
			MSGP:   cfg.limits.Align > 4,
			Logger: log.Named("rpcrdma"),
		})
		if err != nil {
			return fmt.Errorf("-listen %s: %w", cfg.listen, err)
		}
		listeners = append(listeners, l)
		rdmaAddr = l.Addr()
	}
	if cfg.tcp != "" {
		l, err := oncrpc.ListenTCP(cfg.tcp, &oncrpc.TCPOptions{Logger: log.Named("tcp")})
		if err != nil {
			closeAll()
			return fmt.Errorf("-tcp %s: %w", cfg.tcp, err)
		}
		listeners = append(listeners, l)
		tcpAddr = l.Addr()
	}

	ms, err := startMetrics(cfg, log, procs, srv, rdev, listeners)
	if err != nil {
		closeAll()
		return err
	}
	defer ms.Stop()

	var regs []rpcbind.Registration
	if cfg.register {
		for _, l := range []struct {
			transport string
			addr      net.Addr
		}{{rpcbind.NetIDRDMA, rdmaAddr}, {rpcbind.NetIDTCP, tcpAddr}} {
			if l.addr == nil {
				continue
			}
			r, err := rpcbind.ListenerRegistrations(confproto.Program, confproto.Version, l.transport, l.addr)
			if err != nil {
				closeAll()
				return err
			}
			regs = append(regs, r...)
		}
		if err := register(ctx, cfg, log, regs); err != nil {
			closeAll()
			return err
		}
		defer unregister(cfg, log, regs)
	}

	startup := []any{"program", confproto.Program, "version", confproto.Version,
		"maxcall_sendsize", cfg.limits.MaxCallSendSize, "maxreply_sendsize", cfg.limits.MaxReplySendSize,
		"align", cfg.limits.Align, "maxrdmaread", cfg.limits.MaxRDMARead}
	if rdmaAddr != nil {
		startup = append(startup, "rdma", rdmaAddr.String(), "provider", "verbs/"+cfg.provider)
	}
	if tcpAddr != nil {
		startup = append(startup, "tcp", tcpAddr.String())
	}
	if cfg.register {
		var names []string
		for _, r := range regs {
			names = append(names, r.NetID+"="+rpcbind.FormatUniversalAddr(r.Addr))
		}
		startup = append(startup, "rpcbind", strings.Join(names, ","))
	}
	log.Info("serving CONF_RDMA", startup...)
	cli.NotifyOrLog(log, "READY=1\nSTATUS=serving CONF_RDMA")
	if ready != nil {
		ready(rdmaAddr, tcpAddr)
	}

	errc := make(chan error, len(listeners))
	var wg sync.WaitGroup
	for _, l := range listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- srv.Serve(l)
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	cli.NotifyOrLog(log, "STOPPING=1")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	wg.Wait()
	st := svc.Stats()
	log.Info("stopped", "conf_rdma_calls", st.ConfRDMA, "null_calls", st.Null, "garbage", st.Garbage)
	if serveErr != nil && !errors.Is(serveErr, oncrpc.ErrClosed) {
		return serveErr
	}
	return nil
}

// register replaces any registration of the CONF_RDMA program under each netid with
// regs (a previous instance that died leaves its mapping behind, and rpcbind would
// refuse a second one under the same netid).
func register(ctx context.Context, cfg *config, log hclog.Logger, regs []rpcbind.Registration) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	c, err := rpcbind.Dial(ctx, cfg.rpcbind)
	if err != nil {
		return fmt.Errorf("-register: %w", err)
	}
	defer c.Close()
	err = c.RegisterAll(ctx, regs, "rdmaconfig", rpcbind.ReplaceAny, func(old rpcbind.Registration) {
		log.Warn("replaced a stale registration", "mapping", old.String())
	})
	if err != nil {
		return fmt.Errorf("-register: %w", err)
	}
	for _, r := range regs {
		log.Debug("registered with rpcbind", "mapping", r.String())
	}
	return nil
}

// unregister removes regs from rpcbind.
func unregister(cfg *config, log hclog.Logger, regs []rpcbind.Registration) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	c, err := rpcbind.Dial(ctx, cfg.rpcbind)
	if err == nil {
		defer c.Close()
		err = c.UnregisterAll(ctx, regs)
	}
	if err != nil {
		log.Error("could not unregister from rpcbind", "error", err)
	}
}

// query negotiates with the server at cfg.query and prints its reply and the
// settings a client applies.
func query(ctx context.Context, cfg *config, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	want := cfg.request()
	var t oncrpc.RoundTripper
	var rdmaConn *rpcrdma.Client
	switch cfg.queryNet {
	case "rdma":
		dev, err := verbs.OpenProvider(cfg.provider, verbs.ProviderConfig{Device: cfg.device})
		if err != nil {
			return fmt.Errorf("-provider %s: %w", cfg.provider, err)
		}
		defer dev.Close()
		// Buffers for what we want; thresholds at 1 KiB until the server has
		// answered (seed §6.1), and the transport's credit window starts at one.
		c, err := rpcrdma.Dial(ctx, dev, cfg.query, &rpcrdma.ClientOptions{
			InlineSend: int(want.MaxCallSendSize),
			InlineRecv: int(want.MaxReplySendSize),
		})
		if err != nil {
			return fmt.Errorf("-query %s: %w", cfg.query, err)
		}
		c.SetInlineThresholds(confproto.BaseInlineSize, confproto.BaseInlineSize)
		t, rdmaConn = c, c
	case "tcp":
		c, err := oncrpc.DialTCP(ctx, cfg.query, nil)
		if err != nil {
			return fmt.Errorf("-query %s: %w", cfg.query, err)
		}
		t = c
	}
	defer t.Close()
	reply, err := confproto.Negotiate(ctx, confproto.NewClient(t), want)
	if err != nil {
		return fmt.Errorf("-query %s: %w", cfg.query, err)
	}
	s := confproto.ClientSettings(want, reply)
	fmt.Fprintf(w, "server %s (%s): maxcall_sendsize=%d align=%d maxrdmaread=%d\n",
		cfg.query, cfg.queryNet, reply.MaxCallSendSize, reply.Align, reply.MaxRDMARead)
	fmt.Fprintf(w, "client settings: inline_send=%d inline_recv=%d max_rdma_read=%d align=%d\n",
		s.InlineSend, s.InlineRecv, s.MaxRDMARead, s.Align)
	if rdmaConn != nil {
		s.Apply(rdmaConn)
		l := rdmaConn.Limits()
		fmt.Fprintf(w, "applied to the RDMA connection: inline_send=%d inline_recv=%d\n", l.InlineSend, l.InlineRecv)
	}
	return nil
}
