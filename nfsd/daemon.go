//go:build linux

// Package nfsd is a whole NFS-over-RDMA server, the body of the nfsrdmad command: it
// exports one local directory (Config.Export) or the exports of an exports(5) file,
// with per-client access control (Config.ExportsFile, reloaded on demand), over NFS
// versions 3 and 4.1 on RPC-over-RDMA and on TCP, MOUNT version 3 over TCP, and the CONF_RDMA
// service (program 100400) beside NFS on every listener, optionally registered with
// the local rpcbind, with the memory budgets, connection limits and
// metrics endpoint the command's flags set. It lives in a package of its own so that
// other programs (the nfsrdma demo, tests, embedders) run the very same server in
// process, and no command imports another.
//
// Run serves until its context ends, then shuts down in order: stop reading calls,
// let running calls finish (bounded), close the listeners and the RDMA device, and
// remove the rpcbind registrations it made.
//
// Dependencies: github.com/hashicorp/go-hclog for the control-path logs, and the
// project's own packages (nfsbind/nfsserver, nfsbind/exports, oncrpc, rpcrdma,
// confproto, rpcbind, metrics, and every verbs provider built in through
// verbs/providers).
package nfsd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	_ "github.com/go-rpcrdma/rpcrdma/verbs/providers" // every provider built in, for Config.Provider
)

// Defaults of Config.
const (
	// DefaultRDMAAddr is where NFS over RDMA listens: port 20049, the port a Linux
	// client uses for proto=rdma when the mount gives none (NFS_RDMA_PORT).
	DefaultRDMAAddr = ":20049"
	// DefaultTCPAddr is where NFS and MOUNT listen over TCP: port 2049, NFS's port.
	DefaultTCPAddr = ":2049"
	// DefaultCredits is the credit grant per RDMA connection (Linux svcrdma's
	// max_requests).
	DefaultCredits = 64
	// DefaultInline is the inline threshold for calls (rpcrdma.DefaultInline: a 4 KiB
	// WRITE's call fits; Linux's RPCRDMA_DEF_INLINE is 4096).
	DefaultInline = rpcrdma.DefaultInline
	// DefaultReplyInline is the inline threshold for replies
	// (rpcrdma.DefaultReplyInline: a 4 KiB READ's reply fits).
	DefaultReplyInline = rpcrdma.DefaultReplyInline
	// DefaultMaxOpenFiles is the default size of the NFS server's open-file cache.
	DefaultMaxOpenFiles = nfsserver.DefaultMaxOpenFiles
	// DefaultShutdownTimeout bounds how long Run waits for calls in progress when
	// its context ends.
	DefaultShutdownTimeout = 5 * time.Second
	// Owner is the owner string of the rpcbind registrations Run makes.
	Owner = "nfsrdmad"
)

// Config configures Run. Zero values select the defaults named on each field, except
// that an empty RDMA or TCP address disables that listener: callers that want the
// defaults set DefaultRDMAAddr and DefaultTCPAddr themselves (the command's flags do).
type Config struct {
	// Export is the directory to serve, to every host with OneLineOptions (required
	// unless ExportsFile is set).
	Export string
	// ExportsFile is an exports(5) file (package nfsbind/exports) listing the
	// directories to serve, their clients and options, instead of Export. A syntax
	// error names the file, line and column and Run refuses to start; a value on
	// Reload re-reads it.
	ExportsFile string
	// Reload, when set, makes Run re-read ExportsFile each time a value arrives
	// (nfsrdmad sends SIGHUP): the new client lists apply to calls that start after
	// it; a file that fails to parse is logged and the table in force kept.
	Reload <-chan os.Signal
	// Resolver looks up the host names of callers for host-name and wildcard clients
	// of ExportsFile (default net.DefaultResolver).
	Resolver exports.Resolver
	// ExportPath is the path clients name in MOUNT (default: Export made absolute).
	ExportPath string
	// StateDir keeps the file-handle key so handles survive a restart. Empty: a
	// random key per run (handles go stale when the server restarts).
	StateDir string
	// ReadOnly refuses every modifying procedure with NFS3ERR_ROFS.
	ReadOnly bool
	// Async is the exports(5) "async" option (nfsserver.Options.Async): metadata
	// changes are answered before they are on stable storage, so a server crash can
	// lose files and names clients were told exist. Default false ("sync").
	Async bool
	// MaxIO is the largest READ and WRITE (rtmax, wtmax). Default 1 MiB.
	MaxIO int
	// MaxOpenFiles bounds the NFS server's open-file cache: regular files kept open
	// between READ, WRITE and COMMIT calls (0: nfsserver.DefaultMaxOpenFiles; negative:
	// no cache, every call opens its file).
	MaxOpenFiles int
	// NFS4LeaseTime is the NFSv4.1 lease: a client that renews nothing for this long
	// loses its opens and locks (0: nfs4state.DefaultLeaseTime, 90 s).
	NFS4LeaseTime time.Duration
	// NFS4GraceTime is how long after a start with a StateDir that lists NFSv4.1
	// clients of the previous run only their reclaims are served (0: the lease
	// time), unless they all finish reclaiming earlier.
	NFS4GraceTime time.Duration

	// RDMA is the RPC-over-RDMA listener address (host:port; "" disables it). It
	// serves NFS v3 and v4.1, MOUNT v3 and CONF_RDMA.
	RDMA string
	// TCP is the TCP listener address for NFS v3 and v4.1, MOUNT v3 and CONF_RDMA (""
	// disables it).
	TCP string
	// Mountd, when set, is an extra TCP listener serving only MOUNT v3 (for setups
	// that want MOUNT on a port of its own, or NFS over RDMA without a TCP NFS
	// listener).
	Mountd string

	// Provider is the RDMA provider, by its name in the verbs provider registry
	// (verbs.ProviderNames): "soft" (default: verbs/soft, iWARP in software over TCP)
	// or "ibverbs" (libibverbs, only in binaries built with -tags ibverbs).
	Provider string
	// Device selects the ibverbs device by name (e.g. "siw0", "rxe0"); empty selects
	// the device that owns the RDMA listener's IP address, or the only device.
	Device string
	// Credits is the most credits one RDMA connection is granted. Default 64.
	Credits int
	// Inline is the inline threshold for calls: the receive buffers posted, announced
	// in the connection's private data and by CONF_RDMA (maxcall_sendsize). Default
	// 5120, between 1024 and 262144; Linux clients send at most 4096 inline whatever
	// is announced.
	Inline int
	// ReplyInline is the inline threshold for replies: the largest reply sent without
	// chunks, announced the same way (maxreply_sendsize); each client's announced
	// receive size limits it further (Linux clients announce 4096). Default 8192,
	// between 1024 and 262144.
	ReplyInline int
	// IdleTimeout closes a connection (RDMA or TCP) that has had no call for that
	// long and has none in progress. Default DefaultIdleTimeout (6 minutes); negative:
	// never.
	IdleTimeout time.Duration
	// MaxConns is the most connections each listener keeps open; past it new ones are
	// refused (RDMA: MPA Reject; TCP: reset) and logged at Warn at most every 10 s.
	// Default DefaultMaxConns(); negative: no limit.
	MaxConns int

	// RPCBind registers NFS (netids tcp and rdma), MOUNT (tcp) and CONF_RDMA (rdma)
	// with the rpcbind at RPCBindAddr, and unregisters them on exit.
	RPCBind bool
	// RPCBindAddr is rpcbind's address: host:port over TCP, or unix:PATH for its
	// AF_LOCAL socket. Default rpcbind.DefaultAddr (127.0.0.1:111).
	RPCBindAddr string
	// RPCBindTimeout bounds each exchange with rpcbind. Default 10 s.
	RPCBindTimeout time.Duration

	// Memory and stall bounds, so that peers that send calls and never take the
	// replies (or never answer RDMA Reads) cannot grow the server without bound.
	//
	// MemBudget bounds the bytes calls in progress hold across every NFS connection,
	// RDMA and TCP together: READ reply buffers, reassembled calls (RDMA read chunks),
	// received TCP records. Past it, connections are not read and calls wait.
	// Default oncrpc.DefaultBudget (32 MiB); negative: no global bound.
	MemBudget int64
	// ConnMemBudget bounds the same bytes per connection. Default
	// oncrpc.DefaultConnBudget (8 MiB); negative: none.
	ConnMemBudget int64
	// SendTimeout closes a connection whose peer takes no reply data for this long
	// (TCP: a reply write; RDMA: Sends and RDMA Writes), freeing its calls' memory.
	// Default rpcrdma.DefaultSendTimeout (60 s); negative: none.
	SendTimeout time.Duration
	// ReadTimeout closes an RDMA connection whose RDMA Reads (a WRITE's data) stay
	// unanswered this long. Default rpcrdma.DefaultReadTimeout (30 s); negative: none.
	ReadTimeout time.Duration
	// Metrics, when set, serves Prometheus metrics on this host:port at /metrics
	// (package metrics); Pprof adds net/http/pprof under /debug/pprof/ there.
	Metrics string
	Pprof   bool

	// ShutdownTimeout bounds the wait for calls in progress. Default 5 s.
	ShutdownTimeout time.Duration
	// Stdout, when set, receives the human start-up summary with the mount command.
	Stdout io.Writer
	// Logger receives the logs (default: none).
	Logger hclog.Logger
}

// Info describes a running server; Run hands it to its ready callback.
type Info struct {
	// RDMA, TCP and Mountd are the listeners' addresses (nil when disabled). RDMA's
	// Network is "rdma".
	RDMA, TCP, Mountd net.Addr
	// ExportPath is the path to mount.
	ExportPath string
	// MountPort is the TCP port serving MOUNT (Mountd's, else TCP's; 0 if none).
	MountPort int
	// MountCommand is the Linux command that mounts the export over RDMA (over TCP
	// when there is no RDMA listener).
	MountCommand string
	// MountCommand4 is the same with NFSv4.1, which needs no MOUNT port and no nolock.
	MountCommand4 string
	// Registered lists the rpcbind mappings made, as "program/version/netid=uaddr".
	Registered []string
	// Budget is the memory budget the NFS listeners share (Config.MemBudget), for
	// monitoring: Budget.InUse is what calls in progress hold.
	Budget *oncrpc.Budget
	// Metrics is the metrics endpoint's address (nil without Config.Metrics).
	Metrics net.Addr
	// Reload re-reads Config.ExportsFile as a value on Config.Reload does; its error
	// says why the table in force was kept.
	Reload func() error
}

// ConfigError reports a Config field that cannot be used: a bad value, or a listener
// that cannot listen on its address.
type ConfigError struct {
	Field  string // Config field name: "Export", "RDMA", "Credits", ...
	Value  string // the value as given, quoted when it is a string
	Reason string // what is wrong, for people
	Err    error  // the underlying error, if any
}

// Error implements error.
func (e *ConfigError) Error() string {
	s := "nfsrdmad: " + e.Field
	if e.Value != "" {
		s += " " + e.Value
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

func badString(field, v, reason string, err error) error {
	return &ConfigError{Field: field, Value: strconv.Quote(v), Reason: reason, Err: err}
}

// listenErr reports a listener that could not listen, with a hint when the port is
// taken.
func listenErr(field, addr string, err error) error {
	reason := "cannot listen"
	if errors.Is(err, syscall.EADDRINUSE) {
		reason = "cannot listen: the port is in use (another NFS server, such as the kernel's nfsd? choose another port)"
	}
	return badString(field, addr, reason, err)
}

func badInt(field string, v int, reason string) error {
	return &ConfigError{Field: field, Value: strconv.Itoa(v), Reason: reason}
}

// Validate checks c; its errors are *ConfigError naming the field.
func (c *Config) Validate() error {
	if err := c.validateExports(); err != nil {
		return err
	}
	if c.ExportPath != "" && !strings.HasPrefix(c.ExportPath, "/") {
		return badString("ExportPath", c.ExportPath, "must start with /", nil)
	}
	if c.RDMA == "" && c.TCP == "" {
		return &ConfigError{Field: "RDMA", Reason: "RDMA and TCP are both empty: nothing would serve NFS"}
	}
	for _, a := range []struct{ name, addr string }{{"RDMA", c.RDMA}, {"TCP", c.TCP}, {"Mountd", c.Mountd}, {"Metrics", c.Metrics}} {
		if a.addr == "" {
			continue
		}
		_, port, err := net.SplitHostPort(a.addr)
		if err != nil {
			return badString(a.name, a.addr, "want host:port (e.g. :2049 or 127.0.0.1:0)", err)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return badString(a.name, a.addr, "port "+strconv.Quote(port)+" is not a number from 0 to 65535", nil)
		}
	}
	if c.Provider != "" {
		if err := verbs.CheckProvider(c.Provider); err != nil {
			return badString("Provider", c.Provider, "not available in this binary", err)
		}
	}
	if c.Credits < 0 || c.Credits > 4096 {
		return badInt("Credits", c.Credits, fmt.Sprintf("want 1 to 4096 (0 for the default %d)", DefaultCredits))
	}
	if c.Inline != 0 && (c.Inline < rpcrdma.MinInlineSize || c.Inline > rpcrdma.MaxInlineSize) {
		return badInt("Inline", c.Inline, fmt.Sprintf("want %d to %d bytes (0 for the default %d)", rpcrdma.MinInlineSize, rpcrdma.MaxInlineSize, DefaultInline))
	}
	if c.ReplyInline != 0 && (c.ReplyInline < rpcrdma.MinInlineSize || c.ReplyInline > rpcrdma.MaxInlineSize) {
		return badInt("ReplyInline", c.ReplyInline, fmt.Sprintf("want %d to %d bytes (0 for the default %d)", rpcrdma.MinInlineSize, rpcrdma.MaxInlineSize, DefaultReplyInline))
	}
	if c.MaxIO < 0 || c.MaxIO > nfs3.MaxData || (c.MaxIO != 0 && c.MaxIO < 4096) {
		return badInt("MaxIO", c.MaxIO, fmt.Sprintf("want 4096 to %d bytes (0 for 1 MiB)", nfs3.MaxData))
	}
	if c.RPCBindTimeout < 0 {
		return &ConfigError{Field: "RPCBindTimeout", Value: c.RPCBindTimeout.String(), Reason: "must not be negative"}
	}
	if c.NFS4LeaseTime < 0 || (c.NFS4LeaseTime != 0 && c.NFS4LeaseTime < time.Second) {
		return &ConfigError{Field: "NFS4LeaseTime", Value: c.NFS4LeaseTime.String(), Reason: "want at least 1s (0 for the default)"}
	}
	if c.NFS4GraceTime < 0 {
		return &ConfigError{Field: "NFS4GraceTime", Value: c.NFS4GraceTime.String(), Reason: "must not be negative"}
	}
	return nil
}

// validateExports checks Export or ExportsFile, whichever is given.
func (c *Config) validateExports() error {
	switch {
	case c.Export == "" && c.ExportsFile == "":
		return &ConfigError{Field: "Export", Reason: "the directory to serve is required (or an exports file)"}
	case c.Export != "" && c.ExportsFile != "":
		return badString("ExportsFile", c.ExportsFile, "give a directory or an exports file, not both", nil)
	case c.ExportsFile != "":
		if c.ReadOnly || c.Async || c.ExportPath != "" {
			return badString("ExportsFile", c.ExportsFile, "read-only, async and the export path are set per export in the file (ro, async)", nil)
		}
		_, err := c.exportsTable()
		return err
	}
	fi, err := os.Stat(c.Export)
	if err != nil {
		return badString("Export", c.Export, "cannot be served", err)
	}
	if !fi.IsDir() {
		return badString("Export", c.Export, "not a directory", nil)
	}
	return nil
}

func (c *Config) fill() {
	if c.Provider == "" {
		c.Provider = "soft"
	}
	if c.Credits == 0 {
		c.Credits = DefaultCredits
	}
	if c.Inline == 0 {
		c.Inline = DefaultInline
	}
	if c.ReplyInline == 0 {
		c.ReplyInline = DefaultReplyInline
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns()
	}
	if c.RPCBindAddr == "" {
		c.RPCBindAddr = rpcbind.DefaultAddr
	}
	if c.RPCBindTimeout == 0 {
		c.RPCBindTimeout = 10 * time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MemBudget == 0 {
		c.MemBudget = oncrpc.DefaultBudget
	}
	if c.ConnMemBudget == 0 {
		c.ConnMemBudget = oncrpc.DefaultConnBudget
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = rpcrdma.DefaultSendTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = rpcrdma.DefaultReadTimeout
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// openDevice opens the RDMA device of cfg.Provider through the verbs provider
// registry, and describes it for the logs. Its errors are *ConfigError for the field
// Provider; a provider this binary was built without wraps
// verbs.ErrProviderNotBuilt, an unknown one verbs.ErrUnknownProvider.
func openDevice(cfg *Config, log hclog.Logger) (verbs.Device, string, error) {
	host, _, _ := net.SplitHostPort(cfg.RDMA)
	dev, err := verbs.OpenProvider(cfg.Provider, verbs.ProviderConfig{Device: cfg.Device, Addr: host, Logger: log})
	if err != nil {
		return nil, "", badString("Provider", cfg.Provider, "cannot open an RDMA device", err)
	}
	if cfg.Provider == "soft" {
		return dev, "verbs/soft (software iWARP over TCP)", nil
	}
	return dev, "verbs/" + cfg.Provider + " (" + dev.Name() + ")", nil
}

// listener is one oncrpc.Listener and the oncrpc.Server that serves it.
type listener struct {
	l   oncrpc.Listener
	srv *oncrpc.Server
}

// Run serves cfg.Export until ctx ends or a listener fails. ready, when not nil, is
// called once every listener listens and the rpcbind registrations are made. A
// context end is a clean stop: Run then returns nil.
func Run(ctx context.Context, cfg Config, ready func(Info)) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.fill()
	log := cfg.Logger

	var dev verbs.Device
	var provider string
	if cfg.RDMA != "" {
		dev, provider, err = openDevice(&cfg, log)
		if err != nil {
			return err
		}
		defer dev.Close()
	}

	table, err := cfg.exportsTable()
	if err != nil {
		return err
	}
	if cfg.Resolver == nil {
		cfg.Resolver = defaultResolver
	}
	nfs, err := nfsserver.NewExports(nfsserver.Options{
		StateDir: cfg.StateDir, MaxIO: cfg.MaxIO, MaxOpenFiles: cfg.MaxOpenFiles,
		Logger: log.Named("nfs"),
		NFS4:   nfsserver.NFS4Options{State: nfs4state.Options{LeaseTime: cfg.NFS4LeaseTime, GraceTime: cfg.NFS4GraceTime}},
	}, table, cfg.Resolver)
	if err != nil {
		return err
	}
	defer nfs.Close()
	loaded := time.Now()
	rl := &reloader{cfg: &cfg, x: nfs, log: log}

	limits := confproto.DefaultLimits()
	limits.MaxCallSendSize, limits.MaxReplySendSize = uint32(cfg.Inline), uint32(cfg.ReplyInline)
	conf, err := confproto.NewService(&confproto.ServiceOptions{
		Limits: &limits,
		Logger: log.Named("conf_rdma"),
		Configured: func(req *oncrpc.Request, client confproto.ConfigRDMAReq, s confproto.Settings) {
			log.Debug("CONF_RDMA", "remote", req.RemoteAddr.String(), "netid", req.Netid,
				"client_maxcall_sendsize", client.MaxCallSendSize, "client_maxreply_sendsize", client.MaxReplySendSize,
				"inline_send", s.InlineSend, "inline_recv", s.InlineRecv, "max_rdma_read", s.MaxRDMARead)
		},
	})
	if err != nil {
		return &ConfigError{Field: "Inline", Value: fmt.Sprintf("%d (replies %d)", cfg.Inline, cfg.ReplyInline), Reason: "CONF_RDMA refuses it", Err: err}
	}

	ms := newMetricsState(&cfg)
	// One budget for both transports: what calls in progress hold, wherever they came from.
	budget := oncrpc.NewBudget(max(cfg.MemBudget, 0))
	ms.addBudget(budget)
	rl.stats = ms.addReloads(loaded)
	main := oncrpc.NewServer(&oncrpc.ServerOptions{Logger: log.Named("oncrpc"), Observe: ms.observe(), Budget: budget, ConnBudget: cfg.ConnMemBudget})
	ms.registerNFS(main, nfs)
	conf.Register(main)
	var mountd *oncrpc.Server

	var ls []listener
	defer func() {
		for _, l := range ls {
			l.l.Close()
		}
	}()
	var info Info
	info.ExportPath = nfs.Servers()[0].ExportPath()
	info.Budget = budget
	info.Reload = rl.reload
	if dev != nil {
		l, err := rpcrdma.Listen(ctx, dev, cfg.RDMA, &rpcrdma.ServerOptions{
			InlineSend: cfg.ReplyInline,
			InlineRecv: cfg.Inline,
			Credits:    credits.NewServer(credits.Config{PerConn: cfg.Credits, Total: max(256, 4*cfg.Credits)}),
			Logger:     log.Named("rpcrdma"),

			IdleTimeout: cfg.IdleTimeout,
			MaxConns:    cfg.MaxConns,
			Budget:      budget,
			ConnBudget:  cfg.ConnMemBudget,
			SendTimeout: cfg.SendTimeout,
			ReadTimeout: cfg.ReadTimeout,
		})
		if err != nil {
			return listenErr("RDMA", cfg.RDMA, err)
		}
		ls = append(ls, listener{l, main})
		info.RDMA = l.Addr()
	}
	if cfg.TCP != "" {
		l, err := oncrpc.ListenTCP(cfg.TCP, &oncrpc.TCPOptions{Logger: log.Named("tcp"), IdleTimeout: cfg.IdleTimeout, MaxConns: cfg.MaxConns, SendTimeout: cfg.SendTimeout})
		if err != nil {
			return listenErr("TCP", cfg.TCP, err)
		}
		ls = append(ls, listener{l, main})
		info.TCP = l.Addr()
	}
	if cfg.Mountd != "" {
		mountd = oncrpc.NewServer(&oncrpc.ServerOptions{Logger: log.Named("mountd"), Observe: ms.observe()})
		mountd.Register(nfs3.MountProgram, nfs3.MountVersion, nfs.MountHandler())
		l, err := oncrpc.ListenTCP(cfg.Mountd, &oncrpc.TCPOptions{Logger: log.Named("mountd"), IdleTimeout: cfg.IdleTimeout, MaxConns: cfg.MaxConns})
		if err != nil {
			return listenErr("Mountd", cfg.Mountd, err)
		}
		ls = append(ls, listener{l, mountd})
		info.Mountd = l.Addr()
	}
	switch {
	case info.Mountd != nil:
		info.MountPort = portOf(info.Mountd)
	case info.TCP != nil:
		info.MountPort = portOf(info.TCP)
	}

	mserver, err := ms.start(&cfg, log, dev, []*oncrpc.Server{main, mountd}, ls)
	if err != nil {
		return err
	}
	defer mserver.Stop()
	if mserver != nil {
		info.Metrics = mserver.Addr()
	}

	if cfg.RPCBind {
		regs, err := registrationsFor(info)
		if err != nil {
			return err
		}
		if err := register(ctx, &cfg, regs); err != nil {
			return err
		}
		defer unregister(&cfg, regs)
		for _, r := range regs {
			info.Registered = append(info.Registered, r.String())
		}
	}

	info.MountCommand = MountCommand(info, hostForMount(info))
	info.MountCommand4 = MountCommand4(info, hostForMount(info))
	kv := []any{"exports", strings.Join(describeExports(table), "; ")}
	if info.RDMA != nil {
		kv = append(kv, "rdma", info.RDMA.String(), "provider", provider, "credits", cfg.Credits, "inline", cfg.Inline, "reply_inline", cfg.ReplyInline)
	}
	if info.TCP != nil {
		kv = append(kv, "tcp", info.TCP.String())
	}
	if info.Mountd != nil {
		kv = append(kv, "mountd", info.Mountd.String())
	}
	if len(info.Registered) > 0 {
		kv = append(kv, "rpcbind", strings.Join(info.Registered, ","))
	}
	kv = append(kv, "mount", info.MountCommand, "mount_v4.1", info.MountCommand4)
	log.Info("serving NFSv3 and NFSv4.1", kv...)
	if p := openToAll(table); p != "" && !loopbackOnly(info) {
		log.Warn("an export is open to every host (*): any host that reaches these ports can mount it and act as the uid/gid it claims (AUTH_SYS; root is squashed unless no_root_squash); list the clients in an exports file (-exports), listen on a private address or firewall the ports", "export", p)
	}
	if cfg.Stdout != nil {
		printSummary(cfg.Stdout, &cfg, table, info, provider)
	}
	if ready != nil {
		ready(info)
	}

	if cfg.Reload != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-cfg.Reload:
					rl.reload()
				}
			}
		}()
	}

	errc := make(chan error, len(ls))
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.srv.Serve(l.l)
			if err != nil && !errors.Is(err, oncrpc.ErrClosed) {
				err = fmt.Errorf("listener %s: %w", l.l.Addr(), err)
			} else {
				err = nil
			}
			errc <- err
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "reason", context.Cause(ctx))
	case serveErr = <-errc:
		log.Error("listener failed", "error", serveErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	for _, s := range []*oncrpc.Server{main, mountd} {
		if s == nil {
			continue
		}
		if err := s.Shutdown(sctx); err != nil {
			log.Warn("calls still running at shutdown were cut off", "error", err)
			s.Close()
		}
	}
	wg.Wait()
	st := main.Stats()
	log.Info("stopped", "calls", st.Calls, "garbage", st.Garbage, "system_errors", st.SystemErrs, "conf_rdma", conf.Stats().ConfRDMA)
	return serveErr
}

func portOf(a net.Addr) int {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Port
	}
	if r, ok := a.(rpcrdma.Addr); ok {
		return portOf(r.Addr)
	}
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// loopbackOnly reports whether every listener is on a loopback address.
func loopbackOnly(info Info) bool {
	for _, a := range []net.Addr{info.RDMA, info.TCP, info.Mountd} {
		if a == nil {
			continue
		}
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return false
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// hostForMount is the host to name in the mount command: the listeners' address when
// it is a specific one, else this machine's host name.
func hostForMount(info Info) string {
	for _, a := range []net.Addr{info.RDMA, info.TCP} {
		if a == nil {
			continue
		}
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			continue
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.IsUnspecified() {
			continue
		}
		if ip.Is6() && !ip.Is4In6() {
			return "[" + ip.String() + "]"
		}
		return ip.Unmap().String()
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "SERVER"
}

// MountCommand returns the Linux mount command for a server described by info,
// reached at host (an IPv6 literal in brackets): NFSv3 over RDMA on info.RDMA's port
// when there is an RDMA listener, else over TCP, with MOUNT over TCP on
// info.MountPort and no NLM locking (nfsrdmad does not serve NLM). An IPv6 host gets
// the IPv6 transports (proto=rdma6 or tcp6, mountproto=tcp6).
func MountCommand(info Info, host string) string {
	six := ""
	if strings.HasPrefix(host, "[") {
		six = "6"
	}
	var opts []string
	if info.RDMA != nil {
		opts = append(opts, "vers=3", "proto=rdma"+six, "port="+strconv.Itoa(portOf(info.RDMA)))
	} else {
		opts = append(opts, "vers=3", "proto=tcp"+six, "port="+strconv.Itoa(portOf(info.TCP)))
	}
	if info.MountPort != 0 {
		opts = append(opts, "mountport="+strconv.Itoa(info.MountPort), "mountproto=tcp"+six)
	}
	opts = append(opts, "nolock")
	return "mount -t nfs -o " + strings.Join(opts, ",") + " " + host + ":" + info.ExportPath + " /mnt"
}

// MountCommand4 returns the Linux command that mounts the export with NFSv4.1 (over
// RDMA when there is an RDMA listener, else TCP): the client reaches the export
// through the server's pseudo file system by its path, with neither MOUNT nor NLM.
func MountCommand4(info Info, host string) string {
	six := ""
	if strings.HasPrefix(host, "[") {
		six = "6"
	}
	var proto string
	var port int
	switch {
	case info.RDMA != nil:
		proto, port = "rdma", portOf(info.RDMA)
	case info.TCP != nil:
		proto, port = "tcp", portOf(info.TCP)
	default:
		return "" // no NFS listener
	}
	return "mount -t nfs -o vers=4.1,proto=" + proto + six + ",port=" + strconv.Itoa(port) + " " + host + ":" + info.ExportPath + " /mnt"
}

func printSummary(w io.Writer, cfg *Config, t *exports.Table, info Info, provider string) {
	for _, d := range describeExports(t) {
		fmt.Fprintf(w, "nfsrdmad: exporting %s\n", d)
	}
	if info.RDMA != nil {
		fmt.Fprintf(w, "  NFSv3, NFSv4.1 + CONF_RDMA over RDMA  %-22s %s, %d credits, %d/%d-byte inline calls/replies\n", info.RDMA, provider, cfg.Credits, cfg.Inline, cfg.ReplyInline)
	}
	if info.TCP != nil {
		fmt.Fprintf(w, "  NFSv3, NFSv4.1 + MOUNT over TCP       %s\n", info.TCP)
	}
	if info.Mountd != nil {
		fmt.Fprintf(w, "  MOUNT over TCP               %s\n", info.Mountd)
	}
	if info.MountPort == 0 {
		fmt.Fprintln(w, "  (no TCP listener serves MOUNT: Linux cannot mount this with vers=3; give -tcp or -mountd)")
	}
	if openToAll(t) != "" && !loopbackOnly(info) {
		fmt.Fprintln(w, "  Note: an export is open to every host (*); AUTH_SYS uids are trusted, root is squashed unless no_root_squash. Use -exports FILE to list clients.")
	}
	for _, r := range info.Registered {
		fmt.Fprintf(w, "  registered with rpcbind      %s\n", r)
	}
	fmt.Fprintf(w, "Mount it from Linux with:\n  %s\nor, with NFSv4.1:\n  %s\n", info.MountCommand, info.MountCommand4)
	if info.RDMA != nil && cfg.Provider == "soft" {
		fmt.Fprintln(w, "  (the client needs an iWARP device, e.g.: modprobe siw && rdma link add siw0 type siw netdev eth0)")
	}
}
