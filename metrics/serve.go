package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure Serve.
type Options struct {
	// Pprof also serves net/http/pprof under /debug/pprof/ on the same listener.
	// Off by default: profiles reveal memory contents and cost CPU.
	Pprof bool
	// Logger receives the endpoint's errors. Default: none.
	Logger hclog.Logger

	// timeouts replaces defaultTimeouts when set (the tests shrink them).
	timeouts *timeouts
}

// timeouts bound how long a client may hold one of the endpoint's connections
// without completing a request or reading its response (http.Server's fields of the
// same names).
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// defaultTimeouts are the endpoint's: a request's header must arrive within 10 s and
// the whole request within 30 s, a response must be written within 30 s, and a
// kept-alive connection with no request for 60 s is closed, so that a client cannot
// hold a connection (a descriptor and a goroutine) forever. net/http/pprof extends
// the write deadline of /debug/pprof/profile?seconds=N and trace?seconds=N by N
// seconds, so profiles may last longer than the write timeout.
var defaultTimeouts = timeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: 30 * time.Second, idle: 60 * time.Second}

// Server is a running metrics endpoint.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	// Registry holds the Collector and the Go runtime and process collectors;
	// callers may register more.
	Registry *prometheus.Registry
}

// Serve listens on addr (host:port) and serves c's metrics, with the Go runtime and
// process metrics, at /metrics until Close. It closes connections idle for 60 s
// between requests, and those of clients slower than 10 s to send a request's
// header, 30 s to send the whole request or 30 s to read its response (plus the
// profile's duration for /debug/pprof/profile and trace).
func Serve(addr string, c *Collector, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	to := defaultTimeouts
	if o.timeouts != nil {
		to = *o.timeouts
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, done: make(chan struct{}), Registry: reg}
	s.srv = &http.Server{
		Handler:           Handler(reg, o.Pprof),
		ReadHeaderTimeout: to.readHeader,
		ReadTimeout:       to.read,
		WriteTimeout:      to.write,
		IdleTimeout:       to.idle,
		ErrorLog:          o.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("metrics endpoint failed", "addr", ln.Addr().String(), "error", err)
		}
	}()
	o.Logger.Info("serving metrics", "addr", ln.Addr().String(), "pprof", o.Pprof)
	return s, nil
}

// Handler returns the endpoint's handler: /metrics from reg and, with withPprof,
// net/http/pprof under /debug/pprof/.
func Handler(reg *prometheus.Registry, withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Addr returns the address the endpoint listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Stop closes s as a command does on its way out, giving a scrape in progress up to
// a second. A nil s (metrics off) is a no-op.
func (s *Server) Stop() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.Close(ctx)
}

// Close stops the endpoint, letting scrapes in progress finish until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("metrics: close: %w", err)
	}
	return nil
}
