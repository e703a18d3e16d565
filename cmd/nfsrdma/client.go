//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/internal/cli"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	_ "github.com/go-rpcrdma/rpcrdma/verbs/providers" // every provider built in, for -provider
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Default ports: NFS over RDMA (NFS_RDMA_PORT), NFS over TCP, and MOUNT where
// nfsrdmad serves it (beside NFS on its TCP port).
const (
	defaultRDMAPort  = 20049
	defaultTCPPort   = 2049
	defaultMountPort = 2049
)

// Default time limits: the major timeout after which a call without a reply makes
// the client say the server is not responding (Linux's default timeo for TCP), and
// the bound on establishing a connection.
const (
	defaultTimeo          = 60 * time.Second
	defaultConnectTimeout = 30 * time.Second
)

// connFlags are the flags every client command shares.
type connFlags struct {
	proto          string
	port           int
	rdmaPort       int
	tcpPort        int
	mountport      int
	timeout        time.Duration
	timeo          time.Duration
	connectTimeout time.Duration
	provider       string
	device         string
	rpcbindPort    int
	allowBoth      bool // -proto both (bench)
	logf           cli.LogFlags
	set            map[string]bool // the flags given on the command line

	log    hclog.Logger // from logf, set by startCommand
	stderr io.Writer    // where "server not responding" goes in text format
}

func (f *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.proto, "proto", "rdma", "NFS transport: rdma or tcp (MOUNT always uses tcp)")
	fs.IntVar(&f.port, "port", 0, "NFS `port` for -proto (0: ask the server's rpcbind, else -rdma-port or -tcp-port)")
	fs.IntVar(&f.rdmaPort, "rdma-port", defaultRDMAPort, "NFS over RDMA `port` when -port is 0 (when not given: the port rpcbind names, else this default)")
	fs.IntVar(&f.tcpPort, "tcp-port", defaultTCPPort, "NFS over TCP `port` when -port is 0 (when not given: the port rpcbind names, else this default)")
	fs.IntVar(&f.mountport, "mountport", defaultMountPort, "MOUNT `port` over TCP (when not given: the port rpcbind names, else this default, where nfsrdmad serves MOUNT)")
	fs.IntVar(&f.rpcbindPort, "rpcbind-port", rpcbind.Port, "the server's rpcbind `port`, asked for the ports not given")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "bound on the whole command")
	if !f.allowBoth { // bench measures calls without a per-call timer
		fs.DurationVar(&f.timeo, "timeo", defaultTimeo, "a call without a reply for this long is sent again and the server reported as not responding (like Linux's timeo)")
	}
	fs.DurationVar(&f.connectTimeout, "connect-timeout", defaultConnectTimeout, "bound on establishing each connection")
	f.logf.Register(fs, "info")
	fs.StringVar(&f.provider, "provider", "soft", "RDMA provider: soft or ibverbs (only in binaries built with -tags ibverbs)")
	fs.StringVar(&f.device, "device", "", "ibverbs device `NAME` (default: the only one)")
}

// check validates the flags, naming the bad one.
func (f *connFlags) check() error {
	switch {
	case f.proto == "rdma" || f.proto == "tcp":
	case f.proto == "both" && f.allowBoth:
		if f.port != 0 {
			return errors.New("-port: ambiguous with -proto both; use -rdma-port and -tcp-port")
		}
	case f.allowBoth:
		return fmt.Errorf("-proto %q: want rdma, tcp or both", f.proto)
	default:
		return fmt.Errorf("-proto %q: want rdma or tcp", f.proto)
	}
	if f.port < 0 || f.port > 65535 {
		return fmt.Errorf("-port %d: want 1 to 65535 (0 for the default)", f.port)
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"rdma-port", f.rdmaPort}, {"tcp-port", f.tcpPort}, {"mountport", f.mountport}, {"rpcbind-port", f.rpcbindPort}} {
		if p.v < 1 || p.v > 65535 {
			return fmt.Errorf("-%s %d: want 1 to 65535", p.name, p.v)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", f.timeout}, {"timeo", f.timeo}, {"connect-timeout", f.connectTimeout}} {
		if d.v <= 0 && (d.name != "timeo" || !f.allowBoth) {
			return fmt.Errorf("-%s %v: must be positive", d.name, d.v)
		}
	}
	if f.provider != "soft" && f.provider != "ibverbs" {
		return fmt.Errorf("-provider %q: want soft or ibverbs", f.provider)
	}
	return nil
}

// nfsPort is the NFS port for proto.
func (f *connFlags) nfsPort(proto string) int {
	if f.port != 0 {
		return f.port
	}
	if proto == "rdma" {
		return f.rdmaPort
	}
	return f.tcpPort
}

// flagSet is flag.FlagSet, for brevity in the commands' flag hooks.
type flagSet = flag.FlagSet

// remote is a parsed SERVER:/path.
type remote struct {
	host string // without brackets
	path string // absolute, cleaned
	// dir says the path names a directory however it is written: with a trailing
	// slash, as the root, or ending in "." or "..". Like cp, put and get then
	// require it to be an existing directory.
	dir bool
}

func (r remote) String() string {
	h := r.hostString()
	if r.dir && r.path != "/" {
		return h + ":" + r.path + "/"
	}
	return h + ":" + r.path
}

// hostString is the host as written in SERVER:/path: an IPv6 address in brackets.
func (r remote) hostString() string {
	if strings.Contains(r.host, ":") {
		return "[" + r.host + "]"
	}
	return r.host
}

// parseRemote parses SERVER:/path, where SERVER is a host name, an IPv4 address or a
// bracketed IPv6 address.
func parseRemote(s string) (remote, error) {
	var host, p string
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 || end+1 >= len(s) || s[end+1] != ':' {
			return remote{}, fmt.Errorf("remote %q: want [IPv6]:/path", s)
		}
		host, p = s[1:end], s[end+2:]
	} else {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return remote{}, fmt.Errorf("remote %q: want SERVER:/path", s)
		}
		host, p = s[:i], s[i+1:]
	}
	if host == "" {
		return remote{}, fmt.Errorf("remote %q: no server before the colon", s)
	}
	if strings.ContainsAny(host, "[]/ \t\n\x00") {
		return remote{}, fmt.Errorf("remote %q: %q is not a host name or address", s, host)
	}
	if !strings.HasPrefix(p, "/") {
		return remote{}, fmt.Errorf("remote %q: the path must start with / (the export path, e.g. SERVER:/srv/data/file)", s)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return remote{}, fmt.Errorf("remote %q: the path contains a NUL byte", s)
	}
	clean, base := path.Clean(p), path.Base(p)
	dir := strings.HasSuffix(p, "/") || clean == "/" || base == "." || base == ".."
	return remote{host: host, path: clean, dir: dir}, nil
}

// session is a mounted export.
type session struct {
	c      *nfsclient.Client
	proto  string
	export string // the export mounted
	rel    string // the remote path inside the export ("" for its root)
	// unlisted says why the export was not found in the server's EXPORT list, and the
	// remote path was mounted as it is ("" when it was found there).
	unlisted string
	mrt      oncrpc.RoundTripper
	closer   []func() error
}

// Close unmounts and closes the transports.
func (s *session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := nfsclient.Unmount(ctx, s.mrt, s.export)
	for i := len(s.closer) - 1; i >= 0; i-- {
		s.closer[i]()
	}
	return err
}

// auth is the AUTH_SYS credential of this process.
func auth() (oncrpc.ClientOption, error) {
	host, _ := os.Hostname()
	if len(host) > oncrpc.MaxMachineNameLen {
		host = host[:oncrpc.MaxMachineNameLen]
	}
	a, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte(host), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	if err != nil {
		return nil, fmt.Errorf("AUTH_SYS credential: %w", err)
	}
	return oncrpc.WithAuth(a), nil
}

// monitor returns the Monitor of host's server, which says, like Linux, "server HOST
// not responding, still trying" once a call has had no reply for -timeo, and "server
// HOST OK" when replies come again: plain lines on stderr, or log records with
// -log-format json.
func (f *connFlags) monitor(host string) *oncrpc.Monitor {
	return oncrpc.NewMonitor(func(ok bool) {
		switch {
		case f.logf.Format == "json" && ok:
			f.log.Info("server OK", "server", host)
		case f.logf.Format == "json":
			f.log.Warn("server not responding, still trying", "server", host, "timeo", f.timeo.String())
		case ok:
			fmt.Fprintf(f.stderr, "nfsrdma: server %s OK\n", host)
		default:
			fmt.Fprintf(f.stderr, "nfsrdma: server %s not responding, still trying\n", host)
		}
	})
}

// callOptions are the options of every client of host's programs: the credential,
// the Monitor, and retransmission after each -timeo until the command's -timeout
// (or an interrupt) ends it, like a hard mount. Bench (no -timeo) gets the
// credential alone.
func (f *connFlags) callOptions(m *oncrpc.Monitor) ([]oncrpc.ClientOption, error) {
	a, err := auth()
	if err != nil {
		return nil, err
	}
	if f.timeo == 0 { // bench
		return []oncrpc.ClientOption{a}, nil
	}
	return []oncrpc.ClientOption{a, oncrpc.WithMonitor(m), oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: f.timeo, MaxTries: math.MaxInt})}, nil
}

// dialErr describes a failed connection to addr, naming -connect-timeout when that
// is what ended it (dctx is ctx bounded by it).
func (f *connFlags) dialErr(ctx, dctx context.Context, what, addr string, err error) error {
	// The dialer may report its deadline a moment before dctx itself ends.
	deadline, _ := dctx.Deadline()
	if ctx.Err() == nil && (dctx.Err() != nil || !time.Now().Before(deadline) || errors.Is(err, os.ErrDeadlineExceeded)) {
		return fmt.Errorf("%s at %s: no connection within %v (-connect-timeout)", what, addr, f.connectTimeout)
	}
	return fmt.Errorf("%s at %s: %w", what, addr, err)
}

// dialTCP connects an ONC RPC TCP transport to addr within -connect-timeout.
func (f *connFlags) dialTCP(ctx context.Context, what, addr string) (*oncrpc.TCPTransport, error) {
	dctx, cancel := context.WithTimeout(ctx, f.connectTimeout)
	defer cancel()
	t, err := oncrpc.DialTCP(dctx, addr, &oncrpc.TCPOptions{Logger: f.log.Named("tcp")})
	if err != nil {
		return nil, f.dialErr(ctx, dctx, what, addr, err)
	}
	return t, nil
}

// dialNFS opens the NFS transport of proto to port on host.
func dialNFS(ctx context.Context, f *connFlags, proto, host string, port int) (oncrpc.RoundTripper, func() error, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if proto == "tcp" {
		t, err := f.dialTCP(ctx, "NFS over TCP", addr)
		if err != nil {
			return nil, nil, err
		}
		return t, t.Close, nil
	}
	dev, err := verbs.OpenProvider(f.provider, verbs.ProviderConfig{Device: f.device})
	if err != nil {
		return nil, nil, fmt.Errorf("-provider %q: %w", f.provider, err)
	}
	dctx, cancel := context.WithTimeout(ctx, f.connectTimeout)
	defer cancel()
	t, err := rpcrdma.Dial(dctx, dev, addr, &rpcrdma.ClientOptions{Logger: f.log.Named("rpcrdma")})
	if err != nil {
		dev.Close()
		return nil, nil, f.dialErr(ctx, dctx, "NFS over RDMA", addr, fmt.Errorf("is nfsrdmad running there, with -rdma on that port? %w", err))
	}
	return t, func() error { t.Close(); return dev.Close() }, nil
}

// decodeFunc adapts a function to xdr.DecoderFrom.
type decodeFunc func(d *xdr.Decoder) error

func (f decodeFunc) DecodeXDR(d *xdr.Decoder) error { return f(d) }

// exports asks the MOUNT service for its export list.
func exports(ctx context.Context, mrt oncrpc.RoundTripper, opts ...oncrpc.ClientOption) ([]string, error) {
	mc := oncrpc.NewClient(mrt, nfs3.MountProgram, nfs3.MountVersion, opts...)
	var out []string
	var r nfs3.ExportRes
	err := mc.Call(ctx, uint32(nfs3.MountProcExport), nil, decodeFunc(func(d *xdr.Decoder) error {
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		for _, e := range r.Exports {
			out = append(out, string(e.Dir))
		}
		return nil
	}))
	if err != nil {
		return nil, fmt.Errorf("MOUNT EXPORT: %w", err)
	}
	return out, nil
}

// exportFor returns the longest export containing p and p's path inside it.
func exportFor(exps []string, p string) (exp, rel string, ok bool) {
	best := -1
	for _, e := range exps {
		e = path.Clean(e)
		var r string
		switch {
		case p == e:
		case e == "/":
			r = p[1:]
		case strings.HasPrefix(p, e+"/"):
			r = p[len(e)+1:]
		default:
			continue
		}
		if len(e) > best {
			best, exp, rel = len(e), e, r
		}
	}
	return exp, rel, best >= 0
}

// mountCandidates are the directories MNT is asked for, in order, when the server
// does not list its exports: p's ancestors from "/" down, then p. A server refuses
// (a mountstat3 error) those that are not exported; willscott/go-nfs accepts any
// path and serves its one export, so "/" is right for it.
func mountCandidates(p string) []string {
	out := []string{"/"}
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	if p != "/" {
		out = append(out, p)
	}
	return out
}

// mount connects to r's server over proto and mounts the export holding r.path.
func mount(ctx context.Context, f *connFlags, proto string, r remote) (*session, error) {
	s := &session{proto: proto}
	ok := false
	defer func() {
		if !ok {
			for i := len(s.closer) - 1; i >= 0; i-- {
				s.closer[i]()
			}
		}
	}()
	opts, err := f.callOptions(f.monitor(r.host))
	if err != nil {
		return nil, err
	}
	ports := &portFinder{f: f, host: r.host}
	defer ports.close()
	maddr := net.JoinHostPort(r.host, strconv.Itoa(ports.mountPort(ctx)))
	mrt, err := f.dialTCP(ctx, "MOUNT over TCP", maddr)
	if err != nil {
		return nil, err
	}
	s.mrt = mrt
	s.closer = append(s.closer, mrt.Close)
	// A server that lists no exports, or does not implement EXPORT at all (such as
	// willscott/go-nfs), is asked to MNT the path's directories from the top down,
	// and the first it accepts is the export (see mountCandidates).
	exps, expErr := exports(ctx, mrt, opts...)
	exp, rel := r.path, ""
	switch {
	case expErr != nil:
		s.unlisted = expErr.Error()
	case len(exps) == 0:
		s.unlisted = "MOUNT EXPORT: no exports listed"
	default:
		var found bool
		if exp, rel, found = exportFor(exps, r.path); !found {
			return nil, fmt.Errorf("%s: no export of %s contains %s (exports: %s)", r, r.hostString(), r.path, strings.Join(exps, ", "))
		}
	}
	s.export, s.rel = exp, rel
	nrt, closeNFS, err := dialNFS(ctx, f, proto, r.host, ports.nfsPort(ctx, proto))
	if err != nil {
		return nil, err
	}
	s.closer = append(s.closer, closeNFS)
	var c *nfsclient.Client
	if s.unlisted == "" {
		c, err = nfsclient.Mount(ctx, nfsclient.Transports{NFS: nrt, Mount: mrt}, exp, opts...)
	} else {
		for _, cand := range mountCandidates(r.path) {
			exp = cand
			c, err = nfsclient.Mount(ctx, nfsclient.Transports{NFS: nrt, Mount: mrt}, exp, opts...)
			var refused nfs3.MountStat
			if err == nil || !errors.As(err, &refused) {
				break
			}
		}
		if err == nil {
			s.export, s.rel = exp, strings.TrimPrefix(strings.TrimPrefix(r.path, exp), "/")
		}
	}
	if err != nil && s.unlisted != "" {
		return nil, fmt.Errorf("mount %v over %s (MOUNT at %s: %s; then MNT of the path): %w", remote{host: r.host, path: exp}, proto, maddr, s.unlisted, err)
	}
	if err != nil {
		return nil, fmt.Errorf("mount %v over %s: %w", remote{host: r.host, path: exp}, proto, err)
	}
	s.c = c
	ok = true
	return s, nil
}

// lookup resolves the session's path (or rel below the export root).
func (s *session) lookup(ctx context.Context, rel string) (nfs3.FH, nfs3.Fattr, error) {
	fh, attr, err := s.c.LookupPath(ctx, rel)
	if err != nil {
		return nil, nfs3.Fattr{}, fmt.Errorf("%s: %w", path.Join(s.export, rel), err)
	}
	return fh, attr, nil
}

// startCommand parses a client command's flags and positional arguments and applies
// the timeout.
func startCommand(ctx context.Context, name string, args []string, n int, stderr io.Writer, more func(*flagSet)) (context.Context, context.CancelFunc, *connFlags, []string, error) {
	fs := newFlagSet(name, stderr)
	var f connFlags
	f.allowBoth = name == "bench"
	f.register(fs)
	if name == "bench" {
		fs.Lookup("proto").DefValue = "both"
		f.proto = "both"
		fs.Lookup("proto").Usage = "NFS transport: rdma, tcp or both (MOUNT always uses tcp)"
	}
	if more != nil {
		more(fs)
	}
	pos, err := parseArgs(fs, args, n)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := f.check(); err != nil {
		return nil, nil, nil, nil, &cli.UsageError{Err: err}
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.log, err = f.logf.Logger("nfsrdma", stderr); err != nil {
		return nil, nil, nil, nil, err
	}
	f.stderr = stderr
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	return ctx, cancel, &f, pos, nil
}

// isNotExist reports whether err is NFS3ERR_NOENT.
func isNotExist(err error) bool { return errors.Is(err, nfs3.StatusNoEnt) }
