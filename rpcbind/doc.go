// Package rpcbind is a client for rpcbind (RFC 1833): versions 3 and 4 (SET, UNSET,
// GETADDR, DUMP, GETTIME) and version 2, portmap (SET, UNSET, GETPORT, DUMP), which
// Linux mount still uses; and Registry, an in-memory rpcbind served on an
// oncrpc.Server for a host that runs none (so that Linux clients mount without port
// options). It registers RPC services under the netids of RFC 5665 and
// the RPC-over-RDMA netids "rdma" and "rdma6" (seed draft §10, §12), with universal
// addresses (RFC 5665 §5.2.3) that ParseUniversalAddr and FormatUniversalAddr convert.
//
// A Client talks to the local rpcbind over TCP at 127.0.0.1:111 through an
// oncrpc.Client over the oncrpc TCP transport (DialClient), or over any
// oncrpc.RoundTripper (NewClient). Register, Unregister and Lookup are the helpers a
// service and its clients need:
//
//	c, err := rpcbind.DialClient(ctx, "", nil)
//	err = c.Register(ctx, 100400, 1, rpcbind.NetIDRDMA, netip.MustParseAddrPort("192.0.2.1:20049"), "superuser")
//	ap, err := c.Lookup(ctx, 100400, 1, rpcbind.NetIDRDMA)
//	err = c.Unregister(ctx, 100400, 1, rpcbind.NetIDRDMA)
//
// # Behaviour of Linux rpcbind
//
// The tests run against Debian's rpcbind (libtirpc). Facts they pin down:
//   - SET and UNSET are accepted over TCP from 127.0.0.1; the owner recorded for
//     such a registration is "unknown" whatever r_owner says. rpcbind trusts only
//     the credentials of its AF_LOCAL socket (DialLocalClient): registrations made
//     there by root are owned by "superuser", and UNSET over TCP cannot remove them
//     (it answers FALSE: ErrRefused). Such an UNSET still removes the caller's
//     registrations it met before the refused one, and version 2 UNSET answers TRUE
//     when either protocol had nothing to refuse.
//   - SET answers FALSE (ErrRefused) when the program version is registered under
//     the netid already, and registers an empty r_netid or r_addr, which RFC 1833
//     forbids; UNSET answers TRUE even when nothing matched.
//   - GETADDR looks a program up under the netid of the connection the request came
//     in on, not under r_netid, so it never returns an "rdma" or "rdma6"
//     registration. Lookup therefore uses DUMP.
//   - rpcbind does not check that a netid exists in /etc/netconfig: "rdma" and
//     "rdma6" mappings are stored and dumped like any other.
//
// # Registry
//
// A Registry serves versions 2, 3 and 4 with the same codecs the Client uses:
//
//	reg := rpcbind.NewRegistry()
//	err := reg.SetPort(100003, 3, rpcbind.IPProtoTCP, 2049)
//	rs := oncrpc.NewServer(nil)
//	reg.Register(rs) // then rs.Serve on 127.0.0.1:111 or wherever clients look
//
// Like Linux rpcbind, it records the caller rather than r_owner as the owner of what
// SET registers ("unknown": it cannot tell who calls over TCP or UDP), and UNSET
// removes only what its caller owns, so callers cannot remove rpcbind's own
// registrations or those made through Set and SetPort. Its answers differ from Linux
// rpcbind's in a few documented ways (see Registry): notably UNSET of nothing, or
// refused, answers FALSE and removes nothing, and GETADDR looks up r_netid (the
// transport's netid only when r_netid is empty).
//
// Decoders enforce limits (MaxNetIDLen, MaxAddrLen, MaxOwnerLen, MaxDumpEntries), a
// Registry holds at most MaxRegistrations registrations, and decoders
// report malformed input as a *FieldError naming the RFC 1833 field; universal address
// errors are *UniversalAddrError. This package has no dependencies beyond the module's
// xdr and oncrpc packages.
package rpcbind
