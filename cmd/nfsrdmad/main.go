//go:build linux

// Command nfsrdmad serves a local directory over NFS versions 3 and 4.1 on
// RPC-over-RDMA and on TCP, with MOUNT version 3 over TCP and the CONF_RDMA service
// (program 100400) on every listener, so that a Linux machine can mount it with
// proto=rdma:
//
//	nfsrdmad -export /srv/data
//
// listens for NFS over RDMA on :20049 (the software iWARP provider, verbs/soft, by
// default) and for NFS and MOUNT over TCP on :2049, and prints the mount command, e.g.
//
//	mount -t nfs -o vers=3,proto=rdma,port=20049,mountport=2049,mountproto=tcp,nolock HOST:/srv/data /mnt
//
// The Linux client needs an RDMA device; with the software provider that is an iWARP
// device such as siw (`modprobe siw; rdma link add siw0 type siw netdev eth0`).
// nfsrdmad does not serve NLM, hence nolock. NFSv4.1 needs neither MOUNT nor NLM:
//
//	mount -t nfs -o vers=4.1,proto=rdma,port=20049 HOST:/srv/data /mnt
//
// (clients reach the export through the NFSv4 pseudo file system, by its path). Port 2049 is the kernel nfsd's: on a
// machine that runs it, choose other ports (-tcp :12049 -rdma :20050).
//
// Flags:
//
//	-export DIR        directory to serve, to every host as the exports(5) line
//	                   DIR *(rw,root_squash,sync,insecure): root acts as nobody, and
//	                   file systems mounted below DIR are not served (no crossmnt)
//	-exports FILE      serve the exports of an exports(5) file instead (clients,
//	                   ro/rw, root_squash, all_squash, anonuid, secure, crossmnt,
//	                   nohide, fsid...); SIGHUP re-reads it
//	-export-path PATH  path clients mount (default: DIR made absolute)
//	-state DIR         keeps the file-handle key so handles survive restarts
//	                   (default $STATE_DIRECTORY under systemd, else
//	                   $XDG_STATE_HOME/nfsrdmad or ~/.local/state/nfsrdmad;
//	                   "" for a random key per run)
//	-ro                refuse every modification (NFS3ERR_ROFS)
//	-async             reply to metadata changes before they are on disk (exports(5)
//	                   async): faster, but a server crash can lose them
//	-max-io N          largest READ/WRITE in bytes (default 1 MiB)
//	-max-open-files N  files kept open between READ/WRITE calls (default 512;
//	                   negative: none; at most a quarter of RLIMIT_NOFILE)
//	-rdma ADDR         NFS over RDMA listener (default :20049; "" disables)
//	-tcp ADDR          NFS and MOUNT over TCP listener (default :2049; "" disables)
//	-mountd ADDR       an extra TCP listener for MOUNT alone
//	-provider NAME     soft (default) or ibverbs (binaries built with -tags ibverbs)
//	-device NAME       ibverbs device (default: the one owning the -rdma address)
//	-credits N         credits granted per RDMA connection (default 64)
//	-inline N          inline threshold for calls in bytes (default 5120)
//	-reply-inline N    inline threshold for replies in bytes (default 8192)
//	-idle-timeout D    close a connection with no call for D (default 6m; 0: never)
//	-max-conns N       connections each listener keeps open, more are refused
//	                   (default 1024, or a quarter of RLIMIT_NOFILE if less; 0: no limit)
//	-nfs4-lease D      NFSv4.1 lease (default 90s)
//	-nfs4-grace D      NFSv4.1 grace period after a restart with -state (default: the lease)
//	-rpcbind           register NFS v3, v4 (tcp, rdma), MOUNT (tcp) and CONF_RDMA (rdma)
//	                   with the local rpcbind; unregister on exit
//	-rpcbind-addr A    rpcbind's address, host:port or unix:PATH (default 127.0.0.1:111)
//	-metrics ADDR      serve Prometheus metrics at http://ADDR/metrics (off by default)
//	-pprof             also serve net/http/pprof at /debug/pprof/ on the -metrics listener
//	-mem-budget MiB    bytes calls in progress may hold, all connections (default 32)
//	-conn-mem-budget MiB  the same per connection (default 8)
//	-send-timeout D    close a connection that takes no reply data for D (default 60s)
//	-read-timeout D    close an RDMA connection whose RDMA Reads stay unanswered (default 30s)
//	-shutdown-timeout D  how long calls in progress may run after SIGINT/SIGTERM (default 5s)
//	-log-level L       trace, debug, info (default), warn, error
//	-log-format F      text (default) or json (one object per line)
//	-check             check the exports as a start or SIGHUP would, list them and
//	                   exit (0: they can be served; 1: the error says why)
//	-version           print the version and exit
//
// SIGHUP re-reads the -exports file: new client lists apply to the calls that
// follow; a file that does not parse is logged and the table in force kept.
// SIGINT and SIGTERM stop it cleanly: calls in progress finish (at most
// -shutdown-timeout), listeners close, registrations are removed. Under systemd
// (systemd/nfsrdmad.service beside this file, Type=notify) it reports READY=1 once it
// listens, RELOADING=1 and READY=1 around each SIGHUP (with a STATUS saying whether
// the exports were re-read) and STOPPING=1 when it stops. The server itself is
// package nfsd, which other programs can run in process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/internal/cli"
	"github.com/go-rpcrdma/rpcrdma/nfsd"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	code := cli.Report(ctx, "nfsrdmad", err)
	stop()
	os.Exit(code)
}

// errVersion and errCheck are parseFlags' answers to -version and -check.
var errVersion, errCheck = errors.New("-version"), errors.New("-check")

// defaultStateDir is where the handle key lives unless -state says otherwise: the
// directory systemd made for the service (StateDirectory=, $STATE_DIRECTORY), else
// the user's state directory.
func defaultStateDir() string {
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "nfsrdmad")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "nfsrdmad")
	}
	return ""
}

// parseFlags turns the command line into a nfsd.Config, with errors naming the flag.
func parseFlags(args []string, stderr io.Writer) (nfsd.Config, error) {
	var cfg nfsd.Config
	fs := flag.NewFlagSet("nfsrdmad", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nfsrdmad -export DIR [flags]\n       nfsrdmad -exports FILE [flags]\n\nServe DIR (or FILE's exports) over NFSv3 and NFSv4.1 on RDMA (port 20049) and TCP (port 2049).\n\nFlags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Export, "export", "", "serve directory `DIR` to every host, as the exports(5) line DIR *(rw,root_squash,sync,insecure) (file systems mounted below DIR are not served)")
	fs.StringVar(&cfg.ExportsFile, "exports", "", "serve the exports listed in exports(5) `FILE` instead of -export; SIGHUP re-reads it")
	fs.StringVar(&cfg.ExportPath, "export-path", "", "`PATH` clients name when mounting (default: the -export directory made absolute)")
	fs.StringVar(&cfg.StateDir, "state", defaultStateDir(), "`DIR` keeping the file-handle key, so handles survive a restart (\"\": a random key per run)")
	fs.BoolVar(&cfg.ReadOnly, "ro", false, "export read-only")
	fs.BoolVar(&cfg.Async, "async", false, "reply to metadata changes (create, remove, rename, setattr...) before they are on disk, as exports(5) async: faster, but a server crash can lose them")
	fs.IntVar(&cfg.MaxIO, "max-io", 0, "largest READ/WRITE in `bytes` (0: 1 MiB)")
	fs.IntVar(&cfg.MaxOpenFiles, "max-open-files", nfsd.DefaultMaxOpenFiles, "files kept open between READ/WRITE calls (negative: none; capped at a quarter of RLIMIT_NOFILE)")
	fs.DurationVar(&cfg.NFS4LeaseTime, "nfs4-lease", 0, "NFSv4.1 lease `duration`: a client silent this long loses its opens and locks (0: 90s)")
	fs.DurationVar(&cfg.NFS4GraceTime, "nfs4-grace", 0, "NFSv4.1 grace period after a restart with -state, while the previous clients reclaim (0: the lease)")
	fs.StringVar(&cfg.RDMA, "rdma", nfsd.DefaultRDMAAddr, "NFS over RDMA listener `ADDR` (\"\" disables)")
	fs.StringVar(&cfg.TCP, "tcp", nfsd.DefaultTCPAddr, "NFS and MOUNT over TCP listener `ADDR` (\"\" disables)")
	fs.StringVar(&cfg.Mountd, "mountd", "", "extra TCP listener `ADDR` serving only MOUNT (needed when -tcp is \"\")")
	fs.StringVar(&cfg.Provider, "provider", "soft", "RDMA provider: "+strings.Join(verbs.ProviderNames(), " or ")+" (ibverbs only in binaries built with -tags ibverbs)")
	fs.StringVar(&cfg.Device, "device", "", "ibverbs device `NAME` (default: the one owning the -rdma address)")
	fs.IntVar(&cfg.Credits, "credits", nfsd.DefaultCredits, "credits granted per RDMA connection")
	fs.IntVar(&cfg.Inline, "inline", nfsd.DefaultInline, "RDMA inline threshold for calls in `bytes` (1024..262144)")
	fs.IntVar(&cfg.ReplyInline, "reply-inline", nfsd.DefaultReplyInline, "RDMA inline threshold for replies in `bytes` (1024..262144)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", nfsd.DefaultIdleTimeout, "close a connection with no call for this `duration` (0: never)")
	fs.IntVar(&cfg.MaxConns, "max-conns", nfsd.DefaultMaxConns(), "connections each listener keeps open; more are refused (0: no limit)")
	fs.BoolVar(&cfg.RPCBind, "rpcbind", false, "register NFS (tcp, rdma), MOUNT (tcp) and CONF_RDMA (rdma) with the local rpcbind; unregister on exit")
	fs.StringVar(&cfg.RPCBindAddr, "rpcbind-addr", rpcbind.DefaultAddr, "rpcbind `ADDR`: host:port, or unix:PATH for its AF_LOCAL socket")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", nfsd.DefaultShutdownTimeout, "how long calls in progress may run after SIGINT/SIGTERM")
	fs.StringVar(&cfg.Metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (host:port; \"\": off)")
	fs.BoolVar(&cfg.Pprof, "pprof", false, "also serve net/http/pprof under /debug/pprof/ on the -metrics listener")
	// Memory and stall bounds (issue #11 §2).
	memBudget := fs.Int64("mem-budget", oncrpc.DefaultBudget>>20, "`MiB` that calls in progress may hold across all connections: READ buffers, reassembled WRITEs, TCP records (negative: no bound)")
	connMemBudget := fs.Int64("conn-mem-budget", oncrpc.DefaultConnBudget>>20, "`MiB` that the calls in progress of one connection may hold (negative: no bound)")
	fs.DurationVar(&cfg.SendTimeout, "send-timeout", rpcrdma.DefaultSendTimeout, "close a connection whose peer takes no reply data for this long (negative: never)")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", rpcrdma.DefaultReadTimeout, "close an RDMA connection whose RDMA Reads stay unanswered this long (negative: never)")
	level := fs.String("log-level", "info", "log `level`: trace, debug, info, warn, error")
	logFormat := fs.String("log-format", "text", "log `format`: text, or json (one object per line)")
	version := fs.Bool("version", false, "print the version and exit")
	check := fs.Bool("check", false, "check the exports (-export or -exports) as a start or SIGHUP would, list them and exit: status 0 when they can be served, 1 when not")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if *version {
		return cfg, errVersion
	}
	if fs.NArg() != 0 {
		return cfg, fmt.Errorf("unexpected arguments %q (flags go before them; see -h)", fs.Args())
	}
	var err error
	if cfg.Logger, err = (&cli.LogFlags{Level: *level, Format: *logFormat}).Logger("nfsrdmad", stderr); err != nil {
		return cfg, err
	}
	if *check {
		return cfg, errCheck
	}
	if cfg.Credits <= 0 {
		return cfg, fmt.Errorf("-credits %d: must be at least 1", cfg.Credits)
	}
	if cfg.ShutdownTimeout <= 0 {
		return cfg, fmt.Errorf("-shutdown-timeout %v: must be positive", cfg.ShutdownTimeout)
	}
	if cfg.Pprof && cfg.Metrics == "" {
		return cfg, errors.New("-pprof: needs -metrics ADDR, the listener it is served on")
	}
	if err := cli.CheckRPCBindAddr("-rpcbind-addr", cfg.RPCBindAddr); err != nil {
		return cfg, err
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = -1 // never (nfsd.Config's 0 is the default)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = -1 // no limit
	}
	for _, b := range []struct {
		name string
		mib  int64
		to   *int64
	}{{"-mem-budget", *memBudget, &cfg.MemBudget}, {"-conn-mem-budget", *connMemBudget, &cfg.ConnMemBudget}} {
		switch {
		case b.mib == 0:
			return cfg, fmt.Errorf("%s 0: want a number of MiB (negative: no bound)", b.name)
		case b.mib > 1<<20:
			return cfg, fmt.Errorf("%s %d: more than 1 TiB", b.name, b.mib)
		case b.mib < 0:
			*b.to = -1
		default:
			*b.to = b.mib << 20
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"-send-timeout", cfg.SendTimeout}, {"-read-timeout", cfg.ReadTimeout}} {
		if d.v == 0 {
			return cfg, fmt.Errorf("%s 0: want a duration (negative: never)", d.name)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, flagErr(err)
	}
	return cfg, nil
}

// flagNames maps nfsd.Config fields to the flags that set them.
var flagNames = map[string]string{
	"Export": "-export", "ExportsFile": "-exports", "ExportPath": "-export-path", "RDMA": "-rdma", "TCP": "-tcp",
	"Mountd": "-mountd", "Provider": "-provider", "Credits": "-credits", "Inline": "-inline", "ReplyInline": "-reply-inline",
	"Metrics": "-metrics", "MaxIO": "-max-io", "MaxOpenFiles": "-max-open-files",
	"NFS4LeaseTime": "-nfs4-lease", "NFS4GraceTime": "-nfs4-grace",
}

// flagErr rewrites a *nfsd.ConfigError in terms of the command's flags.
func flagErr(err error) error {
	var ce *nfsd.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	name, ok := flagNames[ce.Field]
	if !ok {
		return err
	}
	s := name
	if ce.Value != "" {
		s += " " + ce.Value
	}
	s += ": " + strings.ReplaceAll(ce.Reason, "RDMA and TCP", "-rdma and -tcp")
	if ce.Err != nil {
		return fmt.Errorf("%s: %w", s, ce.Err)
	}
	return errors.New(s)
}

// run parses args and serves until ctx ends. ready, when set, is called with the
// server's description once it listens.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(nfsd.Info)) error {
	cfg, err := parseFlags(args, stderr)
	switch {
	case err == errVersion:
		fmt.Fprintln(stdout, cli.VersionLine("nfsrdmad"))
		return nil
	case err == errCheck:
		lines, err := nfsd.CheckExports(cfg)
		if err != nil {
			return flagErr(err)
		}
		for _, l := range lines {
			fmt.Fprintln(stdout, "nfsrdmad: can serve "+l)
		}
		return nil
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		return &cli.UsageError{Err: err} // a bad command line: exit status 2
	}
	cfg.Stdout = stdout
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	quit, done := make(chan struct{}), make(chan struct{})
	started := false
	start := time.Now()
	err = nfsd.Run(ctx, cfg, func(info nfsd.Info) {
		started = true
		cli.NotifyOrLog(cfg.Logger, "READY=1\nSTATUS="+status(info))
		go func() {
			defer close(done)
			serveSignals(ctx, quit, hup, &cfg, info)
		}()
		if ready != nil {
			ready(info)
		}
	})
	if started {
		close(quit)
		<-done // STOPPING=1 is sent
	}
	if err != nil {
		return flagErr(err)
	}
	cfg.Logger.Debug("exited", "uptime", time.Since(start).Round(time.Millisecond))
	return nil
}

// serveSignals re-reads the exports at each SIGHUP on hup, telling systemd
// (RELOADING=1, then READY=1 with the outcome as STATUS), until ctx ends or quit
// closes, when it tells systemd STOPPING=1.
func serveSignals(ctx context.Context, quit <-chan struct{}, hup <-chan os.Signal, cfg *nfsd.Config, info nfsd.Info) {
	for {
		select {
		case <-ctx.Done():
		case <-quit:
		case <-hup:
			var ts unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			cli.NotifyOrLog(cfg.Logger, fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1e3))
			st := status(info)
			if err := info.Reload(); err != nil {
				if cfg.ExportsFile == "" { // the reload did not log it
					cfg.Logger.Warn("SIGHUP: nothing to re-read: serving -export, not an exports file")
				}
				// STATUS is one line.
				st = "exports not reloaded (" + strings.ReplaceAll(flagErr(err).Error(), "\n", " ") + "); " + st
			}
			cli.NotifyOrLog(cfg.Logger, "READY=1\nSTATUS="+st)
			continue
		}
		cli.NotifyOrLog(cfg.Logger, "STOPPING=1")
		return
	}
}

// status is the one line systemctl status shows for a running server.
func status(info nfsd.Info) string {
	var on []string
	if info.RDMA != nil {
		on = append(on, "RDMA "+info.RDMA.String())
	}
	if info.TCP != nil {
		on = append(on, "TCP "+info.TCP.String())
	}
	return "serving NFS on " + strings.Join(on, " and ")
}
