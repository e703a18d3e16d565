package rpcbind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// DefaultAddr is where the local rpcbind listens for TCP: loopback, port 111.
const DefaultAddr = "127.0.0.1:111"

// Errors of the registration helpers; test with errors.Is.
var (
	// ErrRefused means rpcbind answered FALSE to SET or UNSET: for SET, a mapping of
	// the same program, version and netid exists already (under another address
	// or owner); for UNSET, the caller does not own the mapping.
	ErrRefused = errors.New("rpcbind refused the request")
	// ErrNotRegistered means no mapping matches a lookup.
	ErrNotRegistered = errors.New("not registered")
)

// Options configure a Client. The zero value is usable.
type Options struct {
	// Version is the rpcbind version of the rpcb procedures (Set, Unset, GetAddr,
	// Dump, and the helpers built on them): 3 or 4 (default 4). Version 2 (portmap)
	// has its own methods (PmapSet, ...).
	Version uint32
	// TCP configures the transport DialClient creates.
	TCP *oncrpc.TCPOptions
	// ClientOptions are passed to every oncrpc.Client (e.g. oncrpc.WithAuth).
	ClientOptions []oncrpc.ClientOption
}

// A Client talks to one rpcbind over an ONC RPC transport, with versions 2, 3 and 4
// of the protocol. It is safe for concurrent use.
type Client struct {
	t      oncrpc.RoundTripper
	owned  bool // Close closes t
	vers   uint32
	pmap   *oncrpc.Client // version 2
	rpcb   *oncrpc.Client // version Options.Version
	v3, v4 *oncrpc.Client
}

// DialClient connects to the rpcbind at addr ("host:port"; "" means DefaultAddr)
// over TCP and returns a Client that owns the connection.
func DialClient(ctx context.Context, addr string, opts *Options) (*Client, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	var tcp *oncrpc.TCPOptions
	if opts != nil {
		tcp = opts.TCP
	}
	t, err := oncrpc.DialTCP(ctx, addr, tcp)
	if err != nil {
		return nil, fmt.Errorf("rpcbind: %w", err)
	}
	c, err := NewClient(t, opts)
	if err != nil {
		t.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// DefaultLocalPath is the AF_LOCAL stream socket of Linux rpcbind.
const DefaultLocalPath = "/run/rpcbind.sock"

// DialLocalClient connects to rpcbind's AF_LOCAL socket at path ("" means
// DefaultLocalPath) and returns a Client that owns the connection. Linux rpcbind
// learns the caller's uid from this socket: registrations made by root through it
// are owned by "superuser" (and by the uid otherwise), so that other local users
// cannot remove them. The connection is not re-established if it breaks.
func DialLocalClient(ctx context.Context, path string, opts *Options) (*Client, error) {
	if path == "" {
		path = DefaultLocalPath
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("rpcbind: %w", err)
	}
	var tcp *oncrpc.TCPOptions
	if opts != nil {
		tcp = opts.TCP
	}
	t := oncrpc.NewTCPTransport(conn, tcp)
	c, err := NewClient(t, opts)
	if err != nil {
		t.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// NewClient returns a Client over t, which the caller keeps owning (Close does not
// close it).
func NewClient(t oncrpc.RoundTripper, opts *Options) (*Client, error) {
	vers := uint32(Version4)
	var copts []oncrpc.ClientOption
	if opts != nil {
		if opts.Version != 0 {
			vers = opts.Version
		}
		copts = opts.ClientOptions
	}
	if vers != Version3 && vers != Version4 {
		return nil, fmt.Errorf("rpcbind: Options.Version %d: want %d or %d", vers, Version3, Version4)
	}
	c := &Client{
		t:    t,
		vers: vers,
		pmap: oncrpc.NewClient(t, Program, Version2, copts...),
		v3:   oncrpc.NewClient(t, Program, Version3, copts...),
		v4:   oncrpc.NewClient(t, Program, Version4, copts...),
	}
	c.rpcb = c.v4
	if vers == Version3 {
		c.rpcb = c.v3
	}
	return c, nil
}

// Close closes the transport if DialClient created it.
func (c *Client) Close() error {
	if c.owned {
		return c.t.Close()
	}
	return nil
}

// Version returns the rpcbind version the rpcb procedures use (3 or 4).
func (c *Client) Version() uint32 { return c.vers }

// Null calls procedure 0 of version vers (2, 3 or 4): a ping.
func (c *Client) Null(ctx context.Context, vers uint32) error {
	var cl *oncrpc.Client
	switch vers {
	case Version2:
		cl = c.pmap
	case Version3:
		cl = c.v3
	case Version4:
		cl = c.v4
	default:
		return fmt.Errorf("rpcbind: NULL: version %d: want 2, 3 or 4", vers)
	}
	if err := cl.Call(ctx, ProcNull, nil, nil); err != nil {
		return fmt.Errorf("rpcbind: v%d NULL: %w", vers, err)
	}
	return nil
}

func (c *Client) callBool(ctx context.Context, name string, proc uint32, m *RPCB) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, fmt.Errorf("rpcbind: %s: %w", name, err)
	}
	var r boolResult
	if err := c.rpcb.Call(ctx, proc, m, &r); err != nil {
		return false, fmt.Errorf("rpcbind: v%d %s prog %d vers %d netid %q: %w", c.vers, name, m.Prog, m.Vers, m.NetID, err)
	}
	return bool(r), nil
}

// Set calls RPCBPROC_SET: it registers m (program, version, netid, universal address
// and owner) and returns rpcbind's answer. rpcbind answers FALSE when a mapping of the
// same program, version and netid exists. Over TCP rpcbind ignores m.Owner and records
// the owner as "unknown"; it accepts SET and UNSET only from the loopback interface.
func (c *Client) Set(ctx context.Context, m *RPCB) (bool, error) {
	return c.callBool(ctx, "SET", ProcSet, m)
}

// Unset calls RPCBPROC_UNSET: it removes the mappings of m.Prog and m.Vers under
// m.NetID, or under every netid when m.NetID is "". m.Addr is ignored. Linux rpcbind
// answers FALSE only when a matching mapping belongs to another owner.
func (c *Client) Unset(ctx context.Context, m *RPCB) (bool, error) {
	return c.callBool(ctx, "UNSET", ProcUnset, m)
}

// GetAddr calls RPCBPROC_GETADDR and returns the universal address, "" when nothing is
// registered.
//
// Beware: Linux rpcbind (libtirpc's rpcbind, as in Debian) looks the service up
// under the netid of the transport the request arrived on ("tcp" here), not under
// m.NetID, so GETADDR cannot find an "rdma" or "rdma6" registration. Lookup works
// around this with DUMP.
func (c *Client) GetAddr(ctx context.Context, m *RPCB) (string, error) {
	if err := m.Validate(); err != nil {
		return "", fmt.Errorf("rpcbind: GETADDR: %w", err)
	}
	var r stringResult
	if err := c.rpcb.Call(ctx, ProcGetAddr, m, &r); err != nil {
		return "", fmt.Errorf("rpcbind: v%d GETADDR prog %d vers %d netid %q: %w", c.vers, m.Prog, m.Vers, m.NetID, err)
	}
	return string(r), nil
}

// Dump calls RPCBPROC_DUMP and returns every registered mapping.
func (c *Client) Dump(ctx context.Context) ([]RPCB, error) {
	var l RPCBList
	if err := c.rpcb.Call(ctx, ProcDump, nil, &l); err != nil {
		return nil, fmt.Errorf("rpcbind: v%d DUMP: %w", c.vers, err)
	}
	return l, nil
}

// GetTime calls RPCBPROC_GETTIME and returns rpcbind's clock in seconds since the
// Unix epoch.
func (c *Client) GetTime(ctx context.Context) (uint32, error) {
	var r uint32Result
	if err := c.rpcb.Call(ctx, ProcGetTime, nil, &r); err != nil {
		return 0, fmt.Errorf("rpcbind: v%d GETTIME: %w", c.vers, err)
	}
	return uint32(r), nil
}

// PmapSet calls PMAPPROC_SET (version 2).
func (c *Client) PmapSet(ctx context.Context, m *Mapping) (bool, error) {
	var r boolResult
	if err := c.pmap.Call(ctx, ProcSet, m, &r); err != nil {
		return false, fmt.Errorf("rpcbind: v2 SET prog %d vers %d prot %d: %w", m.Prog, m.Vers, m.Prot, err)
	}
	return bool(r), nil
}

// PmapUnset calls PMAPPROC_UNSET (version 2). rpcbind removes the program version's
// "tcp" and "udp" mappings whatever m.Prot and m.Port say.
func (c *Client) PmapUnset(ctx context.Context, m *Mapping) (bool, error) {
	var r boolResult
	if err := c.pmap.Call(ctx, ProcUnset, m, &r); err != nil {
		return false, fmt.Errorf("rpcbind: v2 UNSET prog %d vers %d: %w", m.Prog, m.Vers, err)
	}
	return bool(r), nil
}

// PmapGetPort calls PMAPPROC_GETPORT (version 2), as Linux mount does, and returns the
// port (0: not registered). m.Port is ignored.
func (c *Client) PmapGetPort(ctx context.Context, m *Mapping) (uint32, error) {
	var r uint32Result
	if err := c.pmap.Call(ctx, ProcGetAddr, m, &r); err != nil {
		return 0, fmt.Errorf("rpcbind: v2 GETPORT prog %d vers %d prot %d: %w", m.Prog, m.Vers, m.Prot, err)
	}
	return uint32(r), nil
}

// PmapDump calls PMAPPROC_DUMP (version 2): the "tcp" and "udp" mappings.
func (c *Client) PmapDump(ctx context.Context) ([]Mapping, error) {
	var l PmapList
	if err := c.pmap.Call(ctx, ProcDump, nil, &l); err != nil {
		return nil, fmt.Errorf("rpcbind: v2 DUMP: %w", err)
	}
	return l, nil
}

// Register registers program prog, version vers as reachable at addr under netid
// ("tcp", "tcp6", "udp", "udp6", "rdma" or "rdma6"; addr's family must match it) with
// the given owner. It fails with an error wrapping ErrRefused when rpcbind refuses,
// which it does when the program version is already registered under netid.
func (c *Client) Register(ctx context.Context, prog, vers uint32, netid string, addr netip.AddrPort, owner string) error {
	if err := CheckAddr(netid, addr); err != nil {
		return fmt.Errorf("rpcbind: register prog %d vers %d: %w", prog, vers, err)
	}
	m := RPCB{Prog: prog, Vers: vers, NetID: netid, Addr: FormatUniversalAddr(addr), Owner: owner}
	ok, err := c.Set(ctx, &m)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("rpcbind: register prog %d vers %d netid %q addr %s: %w (already registered under this netid?)", prog, vers, netid, m.Addr, ErrRefused)
	}
	return nil
}

// Unregister removes the registration of program prog, version vers under netid
// ("" removes every netid). It fails with an error wrapping ErrRefused when rpcbind
// answers FALSE, which Linux rpcbind does when the mapping belongs to another owner
// (one registered as "superuser" through the AF_LOCAL socket cannot be removed over
// TCP). Linux rpcbind answers TRUE when nothing matched, so removing a mapping that
// does not exist succeeds.
func (c *Client) Unregister(ctx context.Context, prog, vers uint32, netid string) error {
	if netid != "" {
		if _, err := netIDFamily(netid); err != nil {
			return fmt.Errorf("rpcbind: unregister prog %d vers %d: %w", prog, vers, err)
		}
	}
	m := RPCB{Prog: prog, Vers: vers, NetID: netid}
	ok, err := c.Unset(ctx, &m)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("rpcbind: unregister prog %d vers %d netid %q: %w (registered by another owner?)", prog, vers, netid, ErrRefused)
	}
	return nil
}

// Lookup returns the address registered for program prog, version vers under netid.
// It reads rpcbind's table with DUMP rather than asking GETADDR, because Linux rpcbind
// answers GETADDR for the netid of the connection the request came on and so never
// finds "rdma" or "rdma6" registrations (see GetAddr). It fails with an error wrapping
// ErrNotRegistered when there is no such mapping, and with a *UniversalAddrError when
// the registered address does not parse.
func (c *Client) Lookup(ctx context.Context, prog, vers uint32, netid string) (netip.AddrPort, error) {
	m, err := c.lookupRPCB(ctx, prog, vers, netid)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ap, err := ParseUniversalAddr(m.Addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("rpcbind: lookup prog %d vers %d netid %q: %w", prog, vers, netid, err)
	}
	if err := CheckAddr(netid, ap); err != nil {
		return netip.AddrPort{}, fmt.Errorf("rpcbind: lookup prog %d vers %d: %w", prog, vers, err)
	}
	return ap, nil
}

// lookupRPCB returns the mapping of program prog, version vers under netid as DUMP
// shows it (its universal address unparsed, its owner), or an error wrapping
// ErrNotRegistered.
func (c *Client) lookupRPCB(ctx context.Context, prog, vers uint32, netid string) (RPCB, error) {
	if _, err := netIDFamily(netid); err != nil {
		return RPCB{}, fmt.Errorf("rpcbind: lookup prog %d vers %d: %w", prog, vers, err)
	}
	l, err := c.Dump(ctx)
	if err != nil {
		return RPCB{}, err
	}
	for _, m := range l {
		if m.Prog == prog && m.Vers == vers && m.NetID == netid {
			return m, nil
		}
	}
	return RPCB{}, fmt.Errorf("rpcbind: lookup prog %d vers %d netid %q: %w", prog, vers, netid, ErrNotRegistered)
}
