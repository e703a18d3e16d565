// Package nfsserver serves a local directory over NFS version 3 and MOUNT version 3
// (RFC 1813), and over NFS version 4.1 (RFC 8881), as handlers for an oncrpc.Server,
// so the same code answers over TCP and, through package rpcrdma, over
// RPC-over-RDMA: READ data leaves as an xdr.Payload (a write chunk over RDMA) and
// WRITE data arrives in the call stream however the transport carried it.
//
// # Safety of the export
//
// Every object is reached from a file descriptor on the export root through stored,
// validated path components, with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) or,
// where the kernel lacks it, one openat(O_PATH|O_NOFOLLOW) per component; every
// operation then works on that descriptor (the *at system calls, or /proc/self/fd for
// the few calls without an *at form), after checking that it is the inode the file
// handle names. A
// symbolic link is never followed by the server, only returned by READLINK, with one
// exception: MNT resolves the links in its path, as knfsd's mountd does (realpath),
// but itself, one O_NOFOLLOW component at a time, and refuses with MNT3ERR_ACCES a
// link whose target is absolute or climbs above the export root. Names containing "/"
// or NUL are refused with NFS3ERR_ACCES, and "." and ".." are resolved by the server
// itself, never by the file system, so ".." at the export root is the root. Nothing
// outside the export can be reached.
//
// # File systems mounted below the export
//
// As knfsd, the server serves the export root's own file system only, unless the
// caller's client entry says crossmnt (Options.CrossMount, exports(5) crossmnt): an
// export of / does not expose /proc, /sys or /dev/shm, an export of /srv not a disk
// mounted on /srv/archive, nor a bind mount below it. "Its own file system" is the
// export root's mount: every resolution (of a file handle, a name, a MNT path) ends
// with a statx of the object reached, and the mount id it reports is compared with
// the export root's (Linux 5.8 and later; the device before), so one comparison on a
// statx the server makes anyway covers the whole path, the open-file cache included.
// A btrfs subvolume, which has a device of its own but is no mount, is served, as by
// knfsd.
//
// Where knfsd, not crossing a mount point, shows the directory the mount covers, a
// server in user space cannot: that directory is out of its reach. So, without
// crossmnt:
//
//   - LOOKUP of a mount point is NFS3ERR_ACCES (NFSv4: NFS4ERR_ACCESS), and CREATE
//     (OPEN) of its name does not open it;
//   - READDIR lists a mount point with the fileid of the directory it covers, as knfsd
//     does; READDIRPLUS too, with neither attributes nor handle, as knfsd lists every
//     mount point, so clients LOOKUP it (and get NFS3ERR_ACCES); NFSv4 READDIR gives
//     it the attribute rdattr_error NFS4ERR_ACCESS alone, or fails with that error
//     when the client asks for attributes but not for rdattr_error;
//   - a file handle of an object on another mount (issued to a client with
//     crossmnt, before a reload took it away) is NFS3ERR_STALE (NFS4ERR_STALE), as
//     knfsd answers a handle of a file system the client has no export of;
//   - MNT of a directory on another mount or device is MNT3ERR_ACCES, as mountd
//     refuses a directory "below nearest filesystem".
//
// An NFSv4 client crosses into an export nested in another that is a mount of its own
// (PUTROOTFH and LOOKUPs from the pseudo root pass through the parent export), with
// the nested export's handles, options and fsid, as knfsd lets NFSv4 clients cross
// into an exported mount; an NFSv3 client mounts the nested export by its path, or
// crosses into it from the parent when its entry in the nested export says nohide
// (knfsd's NFSEXP_NOHIDE) or its entry in the parent says crossmnt (below).
// With crossmnt, every mount point is crossed and the objects of each file system
// report its own fsid; an NFSv3 LOOKUP that crosses into the root of a nested export
// listing the caller answers with that export's handle, so that its options and fsid
// apply below (READDIRPLUS lists that root without a handle), and a caller the nested
// export does not list crosses with the parent's handles and options, as with knfsd
// (nfsd_cross_mnt). A handle of the parent for an object on such a nested export's
// file system (issued before a reload made it an export, or to another client) is
// NFS3ERR_STALE (NFS4ERR_STALE) to a caller the nested export lists: knfsd picks the export of a file
// system per client, so that caller gets the nested export's options there or nothing.
// This holds for nested exports that are mounts of file systems of their own (statx's
// STATX_ATTR_MOUNT_ROOT, Linux 5.8 and later); one on a bind mount of the parent's
// file system, or inside a crossed mount, is not told apart this way.
//
// # Open files
//
// READ, WRITE and COMMIT keep regular files open between calls in a cache keyed by
// file handle (least recently used out, at most Options.MaxOpenFiles descriptors, by
// default DefaultMaxOpenFiles and never more than a quarter of RLIMIT_NOFILE; an
// evicted descriptor is closed when the last call using it ends). Each call fstats the
// cached descriptor for its attributes: a file with no links left (removed, or renamed
// over, which leaves the handle naming the old inode) is NFS3ERR_STALE, and the
// descriptor is dropped. At most once a second a call resolves the handle inside the
// export again, so a file moved out of the export by a local process stops being
// served within a second. Access is checked on every call for the caller's
// credentials; a file is held open read-only until a WRITE its caller may make needs
// it writable, so files clients only read (or may not write) never make a local exec
// fail with ETXTBSY. REMOVE and RENAME close the descriptor of the inode they unlink;
// a sweep every 5 s closes files removed by local processes and files no call used
// for 30 s.
//
// # File handles
//
// A handle is 48 bytes: a version byte, the export id, the file's device and inode
// numbers, a generation (the birth time from statx, when the file system records one,
// so a reused inode number does not revive an old handle), and a 16-byte truncated
// HMAC-SHA256 of all of it under a key kept in Options.StateDir. Only a handle that
// cannot be one of ours (wrong length, version or reserved bytes) is
// NFS3ERR_BADHANDLE. A well-formed handle that fails the MAC (issued under another
// key, as by a server restarted without its StateDir), names another export or a file
// that no longer exists is NFS3ERR_STALE, which clients treat as "this file is gone"
// rather than as a protocol error. Handles are resolved through an inode-to-path index filled by
// LOOKUP, READDIRPLUS and the creating procedures; after a restart (or an outside
// rename) a miss falls back to a breadth-first search of the export, which refills
// the index. With the same StateDir, handles survive a server restart. A handle a
// search did not find is answered NFS3ERR_STALE without searching again for 30 s.
//
// # Writes
//
// UNSTABLE writes go to the page cache and are made durable by COMMIT (fsync), which
// takes write permission on the file, as with knfsd, so that a caller that may only
// read it cannot make the server sync it on every call (NFSv4's OPEN with
// OPEN4_SHARE_DENY_READ takes write permission likewise, or a reader could keep every
// other client from reading the file); DATA_SYNC and FILE_SYNC writes are synced
// before the reply, on every export. On a
// sync export (the default; see Options.Async) CREATE, MKDIR, SYMLINK, MKNOD, LINK,
// RENAME, REMOVE, RMDIR and SETATTR also fsync the directories and objects they
// changed before replying, so a COMMITted file cannot lose its name in a crash. The
// write verifier is random per Server (the exports of an Exports share one), so it
// changes on every restart and clients resend uncommitted data; it changes too whenever writing or syncing a file's data
// fails in WRITE or COMMIT (as knfsd's does), or in the fsync of a regular file that
// makes a SETATTR, CREATE or LINK stable, since data written UNSTABLE may then be
// lost: Linux reports a writeback error to one fsync only. EXCLUSIVE CREATE stores the
// client's verifier in the new file's mtime and atime seconds, as Linux nfsd does, so
// a retried create finds its own file and succeeds.
//
// # Directory listings
//
// READDIR and READDIRPLUS, and NFSv4.1's READDIR, list a directory in the order of
// its entries' cookies, a cookie being SipHash-2-4 of the name under a key derived
// from the handle key, so cookies stay valid while the directory changes and, with
// the same StateDir, across restarts. The key keeps anyone who can create names in a
// shared directory from choosing one with another file's cookie, which would hide
// that file from listings. No entry gets a cookie NFSv3 or NFSv4 reserves (0, 1, 2).
//
// # Retransmissions
//
// A duplicate request cache (1024 entries) remembers the results of the non-idempotent
// procedures (SETATTR, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK) by
// client address, XID, procedure and a CRC-32C of the arguments, so a retransmitted
// call gets its original answer; one that arrives while the original still runs waits
// for it (knfsd drops it). As in knfsd, the client address includes the TCP source port (clients,
// oncrpc.DialTCP and Linux's among them, reconnect from the same port) but not the
// RPC-over-RDMA one, which changes with every connection.
//
// # Clients and exports
//
// A Server without a client list (Server.SetClients) admits every caller with the
// Options' settings. With one (an export of an exports(5) table, package
// nfsbind/exports), every NFS call but NULL and every MNT is checked against it:
// the caller's address (over RDMA too: the peer's IP) picks the client entry, whose
// options apply to that call (ro, root_squash, all_squash, anonuid/anongid, secure,
// crossmnt).
// A caller no entry admits gets NFS3ERR_STALE, as from knfsd; MNT3ERR_ACCES from
// MOUNT; "secure" refuses TCP source ports from 1024 up with NFS3ERR_PERM (RDMA is
// exempt, as in knfsd). Exports serves a whole table: one Server per export, one
// handle key, calls routed by the export id in their first handle, MNT by the
// longest export path that admits the caller (a client of /srv not listed for a
// nested /srv/inner mounts it through /srv, as from knfsd's mountd), tables replaced
// while serving (Exports.Load). The fsid in attributes is the device's unless the
// export has fsid= (Options.FSID), which objects on the export root's file system
// report (those of a file system mounted below it, reached with crossmnt, keep their
// device's); the export id in handles is distinct per export.
//
// # Credentials
//
// AUTH_SYS credentials are checked against each object's mode bits, owner and group
// (owner, group or other class, with root allowed everything except executing a file
// with no execute bit), for every procedure that reads, writes, creates, removes or
// searches; AUTH_NONE, all_squash and root under root_squash (Options.RootSquash, or
// the client entry's option) act as the anonymous uid and gid (root_squash also maps
// gid 0, primary or supplementary; all_squash squashes everyone even with
// no_root_squash, as in knfsd). When the server runs as root, new objects are
// given the caller's (squashed) uid and gid, only root may create devices (MKNOD of a
// block or character device by anyone else is NFS3ERR_PERM), and a caller outside a
// file's group cannot set its setgid bit (it is dropped, as chmod(2) does), and LINK
// follows Linux's protected_hardlinks rule for the caller (only the owner may link a
// setuid or setgid-executable file, or one it may not read and write); so a squashed
// root cannot leave a root-owned setuid file, a new name for one, or a device behind. A
// WRITE or a change of size (SETATTR, CREATE, OPEN) by a caller other than root clears
// the file's setuid bit, and its setgid bit when the file is group-executable or the
// caller outside its group, as the kernel does for a local writer without CAP_FSETID
// (knfsd drops CAP_FSETID for such callers); the server, writing as root, clears them
// itself. The server process's own rights still apply underneath. No ACLs are consulted.
//
// # NFSv4.1
//
// Register (Server's and Exports') registers program 100003 version 4 beside version
// 3, so one oncrpc.Server serves both on every listener. COMPOUND runs its operations
// one at a time as it decodes them (package nfs4), on the same code as NFSv3: the
// handle format (an NFSv4 handle of a file is its NFSv3 handle), object resolution
// inside the export, the open-file cache, permission checks, client lists and
// squashing, durable metadata on sync exports, the write verifier and the memory
// budget of READ buffers. What NFSv4 adds is kept by an nfs4state.Manager (clients,
// sessions and their slot reply caches, open and lock stateids, share reservations,
// byte-range locks, leases and the grace period; Options.NFS4 bounds it, and with a
// StateDir it remembers which clients may reclaim after a restart); expired leases are
// swept every tenth of the lease time.
//
// PUTROOTFH leads to a read-only pseudo file system made of the export paths'
// components, whose LOOKUP of an export's path gives the export root (v4pseudo.go); a
// client sees only the exports its client entries admit. Operations: the session ones
// (EXCHANGE_ID with SP4_NONE, CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID,
// BIND_CONN_TO_SESSION, BACKCHANNEL_CTL, SEQUENCE, RECLAIM_COMPLETE, SECINFO,
// SECINFO_NO_NAME, TEST_STATEID, FREE_STATEID), PUTFH, PUTROOTFH, PUTPUBFH, GETFH, SAVEFH, RESTOREFH, LOOKUP,
// LOOKUPP, GETATTR, SETATTR, VERIFY, NVERIFY, ACCESS, OPEN (CLAIM_NULL, CLAIM_FH,
// CLAIM_PREVIOUS; UNCHECKED4, GUARDED4, EXCLUSIVE4, EXCLUSIVE4_1), OPEN_DOWNGRADE,
// CLOSE, LOCK, LOCKT, LOCKU, READ, WRITE, COMMIT, CREATE, REMOVE, RENAME, LINK,
// READLINK and READDIR. The rest are NFS4ERR_NOTSUPP (NFSv4.0-only operations, pNFS,
// delegations, named attributes); minor versions other than 1 are
// NFS4ERR_MINOR_VERS_MISMATCH. No delegation is granted. v4compound.go documents
// the session rules and limits, v4attr.go the attributes, v4open.go and v4io.go the
// state checks, v4callback.go the back channel probes (the credential of
// csa_sec_parms, the back-off after a failed probe).
//
// This package runs on Linux only (it relies on openat, statx and /proc/self/fd).
// A steady-state READ, WRITE or COMMIT allocates nothing.
// Dependencies: golang.org/x/sys/unix for those calls and github.com/hashicorp/go-hclog
// for control-path logs (mounts, unmounts, key creation, handle searches).
package nfsserver
