// Command oncrpc-echo is a tiny ONC RPC service and client over TCP.
//
// Program 0x20000001 (a transient number), version 1: procedure 0 is NULL, procedure 1
// (ECHO) takes a string and returns it, procedure 2 (WHOAMI) returns the caller's
// AUTH_SYS uid and machine name.
//
//	oncrpc-echo -listen 127.0.0.1:9999
//	oncrpc-echo -connect 127.0.0.1:9999 -n 1000 hello world
//
// With neither flag it runs both sides in one process on a loopback port.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	echoProg   = 0x20000001
	echoVers   = 1
	procNull   = 0
	procEcho   = 1
	procWhoAmI = 2
	maxText    = 64 << 10
)

// text is a string argument or result.
type text struct{ s string }

func (t *text) EncodeXDR(e *xdr.Encoder) { e.String(t.s) }

func (t *text) DecodeXDR(d *xdr.Decoder) (err error) {
	t.s, err = d.String(maxText)
	return err
}

// whoami is the WHOAMI result.
type whoami struct {
	uid  uint32
	host string
}

func (w *whoami) DecodeXDR(d *xdr.Decoder) (err error) {
	if w.uid, err = d.Uint32(); err != nil {
		return err
	}
	w.host, err = d.String(oncrpc.MaxMachineNameLen)
	return err
}

func handler() oncrpc.Handler {
	return oncrpc.Procs{
		procNull: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error { return nil },
		procEcho: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			b, err := req.Args.StringBytes(maxText)
			if err != nil {
				return err // GARBAGE_ARGS
			}
			res.Opaque(b)
			return nil
		},
		procWhoAmI: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			if req.AuthSys == nil {
				return oncrpc.AuthErr(oncrpc.AuthTooWeak)
			}
			res.Uint32(req.AuthSys.UID)
			res.Opaque(req.AuthSys.MachineName)
			return nil
		},
	}
}

func serve(ctx context.Context, addr string, logger hclog.Logger) (*oncrpc.Server, *oncrpc.TCPListener, error) {
	srv := oncrpc.NewServer(&oncrpc.ServerOptions{Logger: logger})
	srv.Register(echoProg, echoVers, handler())
	l, err := oncrpc.ListenTCP(addr, &oncrpc.TCPOptions{Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, oncrpc.ErrClosed) {
			logger.Error("serve", "error", err)
		}
	}()
	return srv, l, nil
}

func client(ctx context.Context, addr string, n int, msg string) error {
	tr, err := oncrpc.DialTCP(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer tr.Close()
	host, _ := os.Hostname()
	if len(host) > oncrpc.MaxMachineNameLen {
		host = host[:oncrpc.MaxMachineNameLen]
	}
	cred, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{
		Stamp: uint32(time.Now().Unix()), MachineName: []byte(host),
		UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
	})
	if err != nil {
		return err
	}
	c := oncrpc.NewClient(tr, echoProg, echoVers, oncrpc.WithAuth(cred))

	var res text
	if err := c.Call(ctx, procEcho, &text{msg}, &res); err != nil {
		return err
	}
	fmt.Printf("ECHO %q -> %q\n", msg, res.s)

	var who whoami
	if err := c.Call(ctx, procWhoAmI, nil, &who); err != nil {
		return err
	}
	fmt.Printf("WHOAMI -> uid %d on %q\n", who.uid, who.host)

	start := time.Now()
	for i := 0; i < n; i++ {
		if err := c.Call(ctx, procNull, nil, nil); err != nil {
			return err
		}
	}
	if n > 0 {
		d := time.Since(start)
		fmt.Printf("%d NULL calls in %v (%v per call)\n", n, d.Round(time.Microsecond), (d / time.Duration(n)).Round(time.Nanosecond))
	}
	return nil
}

func main() {
	listen := flag.String("listen", "", "serve on this address (host:port)")
	connect := flag.String("connect", "", "call the service at this address (host:port)")
	n := flag.Int("n", 100, "number of NULL calls to time")
	verbose := flag.Bool("v", false, "log connections")
	flag.Parse()
	msg := strings.Join(flag.Args(), " ")
	if msg == "" {
		msg = "hello, ONC RPC"
	}
	level := hclog.Warn
	if *verbose {
		level = hclog.Debug
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "oncrpc-echo", Level: level})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	switch {
	case *listen != "":
		srv, l, err := serve(ctx, *listen, logger)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("serving on", l.Addr())
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Fatal(err)
		}
	case *connect != "":
		if err := client(ctx, *connect, *n, msg); err != nil {
			log.Fatal(err)
		}
	default:
		srv, l, err := serve(ctx, "127.0.0.1:0", logger)
		if err != nil {
			log.Fatal(err)
		}
		err = client(ctx, l.Addr().String(), *n, msg)
		srv.Shutdown(context.Background())
		if err != nil {
			log.Fatal(err)
		}
	}
}
