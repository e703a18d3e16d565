// Package linuxnfs is the host side of the NFSv3-over-RDMA interop cases against the
// real Linux kernel (interop/run.sh, cases nfsrdma-*; see README.md here and
// interop/README.md):
//
//   - TestLinuxClientMountsServer (case nfsrdma-linux-client): our NFSv3 server
//     (nfsbind/nfsserver on oncrpc, NFS over RPC-over-RDMA on port 20049 through
//     rpcrdma and the software iWARP provider verbs/soft, NFS and MOUNT over TCP on
//     2049) is mounted by the guest's kernel client with proto=rdma over siw, which
//     runs a file, directory and namespace workload. The test then checks on the
//     wire that WRITE data came by read chunks, READ data left by write chunks and
//     READDIR(PLUS) replies by reply chunks, and that no RDMA_ERROR was sent.
//
//   - TestClientAgainstKnfsd (case nfsrdma-knfsd-client): our client library
//     (nfsbind/nfsclient over rpcrdma and verbs/soft) against the guest's knfsd over
//     siw, after MOUNT over TCP: the same workload through the library, with the
//     credits knfsd grants honoured; the guest then checks the files' checksums and
//     knfsd's per-procedure counters.
//
//   - TestLinuxClientMountsNfsrdmad (case nfsrdma-nfsrdmad): the same guest workload
//     against cmd/nfsrdmad's nfsd.Run with its defaults, judged by the files and
//     by the Linux client's own xprtrdma counters.
//
//   - TestLinuxClientMountsServerV41 (case nfs41-server, issue #13): the same server,
//     which serves NFSv4.1 beside NFSv3, mounted with vers=4.1,proto=rdma; the guest
//     runs the NFSv4.1 workload (guest/tests/nfs41.sh) that case nfs41-knfsd runs
//     against knfsd, and the verdict counts NFSv4 COMPOUNDs of a READ, WRITE or
//     READDIR by their chunks (Parse reads a COMPOUND's leading operations).
//
// Cases nfsrdma-*-crc run the same tests with MPA CRC32c (NFSRDMA_CRC=1).
//
// Those tests carry the build tag "interop" and skip without the harness's
// environment. The untagged part is the wire judge they use: Parse reads an
// RPC-over-RDMA header and the start of its RPC message (for an NFSv4 COMPOUND, its
// leading operations), and Tally counts what it finds, as a Trace function of
// rpcrdma's client or server options or fed by ReadCapture, which reads a packet
// capture of the session (TCP, MPA, DDP and RDMAP). It is a small, separate reading
// of RFC 8166 §4.2, RFC 5531 §9, RFC 8881 §16.2 and RFC 5040/5041/5044, so that the
// verdict does not rest on the code under test. It depends only on the standard
// library.
package linuxnfs
