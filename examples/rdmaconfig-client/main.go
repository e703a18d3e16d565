// Command rdmaconfig-client shows the client side of RPC-over-RDMA service discovery
// and configuration: it asks the rpcbind on -host where CONF_RDMA (program 100400,
// version 1) listens under netid "rdma" (or "rdma6"), connects there over
// RPC-over-RDMA with the software iWARP provider, negotiates (seed draft §6) and
// prints what the connection applies.
//
//	rdmaconfig -listen 0.0.0.0:20049 -register &    # a server (cmd/rdmaconfig)
//	rdmaconfig-client -host 127.0.0.1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "rdmaconfig-client:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rdmaconfig-client", flag.ContinueOnError)
	host := fs.String("host", "127.0.0.1", "host whose rpcbind (port 111) knows the CONF_RDMA server")
	rpcbindPort := fs.Int("rpcbind-port", 111, "rpcbind's TCP port")
	netid := fs.String("netid", rpcbind.NetIDRDMA, "netid to look up: rdma or rdma6")
	maxcall := fs.Uint("maxcall", 4096, "largest inline call wanted")
	maxreply := fs.Uint("maxreply", 4096, "largest inline reply accepted")
	maxrdmaread := fs.Uint("maxrdmaread", 16, "RDMA Reads the server may have active against us")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on the whole exchange")
	if err := fs.Parse(args); err != nil {
		return err
	}
	hostIP, err := netip.ParseAddr(*host)
	if err != nil {
		return fmt.Errorf("-host %q: want an IP address: %w", *host, err)
	}
	if *netid != rpcbind.NetIDRDMA && *netid != rpcbind.NetIDRDMA6 {
		return fmt.Errorf("-netid %q: want rdma or rdma6", *netid)
	}
	want := confproto.ConfigRDMAReq{MaxCallSendSize: uint32(*maxcall), MaxReplySendSize: uint32(*maxreply), MaxRDMARead: uint32(*maxrdmaread)}
	if err := want.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	// 1. Where does CONF_RDMA listen?
	rb, err := rpcbind.DialClient(ctx, net.JoinHostPort(hostIP.String(), fmt.Sprint(*rpcbindPort)), nil)
	if err != nil {
		return err
	}
	ap, err := rb.Lookup(ctx, confproto.Program, confproto.Version, *netid)
	rb.Close()
	if err != nil {
		return err
	}
	if ap.Addr().IsUnspecified() {
		// A server listening on every address registers 0.0.0.0 or ::; it is
		// reachable where its rpcbind is.
		ap = netip.AddrPortFrom(hostIP, ap.Port())
	}
	fmt.Fprintf(w, "rpcbind on %s: CONF_RDMA %s at %s\n", hostIP, *netid, ap)

	// 2. Connect over RDMA with buffers for what we want, but one credit and 1 KiB
	// messages until configured (seed §6.1).
	dev := soft.New(soft.Config{})
	defer dev.Close()
	t, err := rpcrdma.Dial(ctx, dev, ap.String(), &rpcrdma.ClientOptions{InlineSend: int(want.MaxCallSendSize), InlineRecv: int(want.MaxReplySendSize)})
	if err != nil {
		return err
	}
	defer t.Close()
	t.SetInlineThresholds(confproto.BaseInlineSize, confproto.BaseInlineSize)

	// 3. Negotiate and apply the outcome to the connection (rpcrdma.Client is a
	// confproto.Configurable).
	s, err := confproto.NegotiateAndApply(ctx, confproto.NewClient(t), want, t)
	if err != nil {
		return err
	}
	l := t.Limits()
	fmt.Fprintf(w, "negotiated: %+v\n", s)
	fmt.Fprintf(w, "connection: inline send %d bytes, inline receive %d bytes\n", l.InlineSend, l.InlineRecv)
	return nil
}
