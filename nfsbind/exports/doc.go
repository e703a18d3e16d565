// Package exports reads an exports(5) table — the directories an NFS server exports,
// and for each the clients that may reach it with their options — and matches a
// caller's address against it. It knows nothing of NFS itself: package nfsserver
// applies what it decides.
//
// # Syntax
//
// One export per line; "#" at the start of a word starts a comment; a backslash at
// the end of a line continues it on the next (the break separates words, so a client
// and its option list stay on one line). A line is a path, absolute, optionally in double
// quotes (for spaces) or with a character written as a backslash and three octal
// digits (\040 for a space), followed by clients:
//
//	/srv/data   10.0.0.0/8(rw) host.example.com(rw,no_root_squash) *(ro)
//	"/srv/my files" -rw,insecure *.lab.example.com 2001:db8::/32(ro)
//
// A client is a host name, an IPv4 or IPv6 address, a network in CIDR form
// (10.0.0.0/8, 2001:db8::/32) or with a dotted mask (10.0.0.0/255.0.0.0), a wildcard
// name with "*" and "?" (*.example.com), or "*" for every host. Each client may carry
// its own option list, written right after it with no space: client(opt,opt). A token
// "-opt,opt" sets default options for the clients after it on the line; a client's own
// options apply on top of them. A path with no clients is exported to "*" with the
// defaults, as exportfs does. A path listed on several lines (two paths that clean to
// the same are one) is one export with the clients of every line, in file order, as
// nfs-utils keys its table by path and client; its lines may not give different fsids.
// A space between a client and its "(" is an error here
// (exportfs would read the options as a second client "*" with those options, a
// classic way to export to the world by mistake).
//
// # Options
//
//	ro (default) / rw                   writes refused with NFS3ERR_ROFS / allowed
//	root_squash (default)               uid 0 and gid 0 act as anonuid / anongid
//	no_root_squash                      root is root (unless all_squash)
//	no_all_squash (default)             only root_squash or no_root_squash applies
//	all_squash                          every caller, root too, acts as anonuid / anongid
//	anonuid=N, anongid=N                the anonymous identity (default 65534; N from
//	                                    0 to 4294967294: -1 is no identity)
//	sync (default) / async              metadata made durable before replying / not
//	secure (default) / insecure         TCP callers must use a source port < 1024 / any
//	nocrossmnt (default) / crossmnt     file systems mounted below the export are not
//	                                    served / are (see below)
//	fsid=N, fsid=root (same as fsid=0)  the export's file system id (handles, attributes);
//	                                    N as exportfs reads it: 0x hex, 0 octal
//	no_subtree_check, subtree_check,    accepted for compatibility with knfsd tables;
//	wdelay, no_wdelay, sec=sys, hide    they change nothing here
//
// As in knfsd, root_squash and all_squash are two independent settings (the last of
// root_squash and no_root_squash counts, and the last of all_squash and
// no_all_squash), and all_squash squashes every caller whatever the other says:
// "all_squash,no_root_squash" squashes root. Any other option is an error. fsid
// belongs to the export: clients of one export may not give different values. Every
// error is an *Error naming the file, line and column.
//
// # File systems mounted below an export
//
// As under knfsd, an export serves its own file system: without crossmnt, a client
// does not reach a file system mounted below the export's directory (a disk on
// /srv/data/archive, /proc below an export of /), nor a bind mount there. crossmnt,
// given to a client entry, lets that client cross every such mount point, as knfsd's
// NFSEXP_CROSSMOUNT does; each file system crossed into reports its own fsid
// (package nfsserver says how a server without crossmnt answers where knfsd would show
// the directory the mount covers). nohide, given to a client entry of an export that
// is a mount of its own below another export, lets that client cross into it from
// the parent with NFSv3 even without crossmnt, as knfsd's NFSEXP_NOHIDE does; hide,
// the default, leaves it to MNT of its path (NFSv4 clients cross into a nested
// export that is a mount of its own whatever the options, as under knfsd).
//
// # Matching
//
// Export.Match picks the client entry that applies to a caller, with the precedence of
// exports(5): a single host (by name or address) first, then networks, then wildcard
// names, then "*"; within one kind, the first in file order. A host by name and a host
// by address are one kind, as in knfsd: "h.example.com(rw) 10.0.0.5(ro)" gives a
// caller at 10.0.0.5 named h.example.com rw. A network admits an IPv6 link-local
// caller by its address whatever its interface (zone), as knfsd's mountd does; a
// host address entry cannot have a zone, so it does not admit such a caller (mountd
// refuses a link-local host of another scope): list link-local clients as a
// network, fe80::1/128 for one host. Host names and wildcards are matched
// against the caller's names found by reverse lookup of its address, as knfsd's
// mountd does, keeping only the names whose forward lookup gives the address back (so
// a forged PTR record cannot claim a listed name); the lookup is made only when such
// an entry could still win over the entries matched by address. Lookups go through a
// Resolver (*net.Resolver is one; tests use a fake) and are cached by Names until it
// is replaced, which nfsrdmad does when it reloads the table.
package exports
