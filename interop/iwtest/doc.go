// Package iwtest is the host side of the project's Linux interop cases
// (interop/run.sh, see interop/README.md). The tests in this package are built
// with the build tag "interop" and run by the harness inside a network
// namespace while a qemu guest runs a real Linux kernel with soft-iWARP (siw),
// the NFS client (xprtrdma) and knfsd (svcrdma):
//
//   - TestLinuxClientFirstSend and TestProviderLinuxClientFirstSend: the
//     guest's NFS client connects to us; MPA completes and its first Send
//     decodes as an RPC-over-RDMA call to the NFS program.
//   - TestDialKnfsdNull and TestProviderDialKnfsdNull: we connect to the
//     guest's knfsd (with and without MPA CRC, IWTEST_CRC) and exchange
//     RPC-over-RDMA NULL calls by Send.
//
// Without the tag, or without the environment the harness sets (IWTEST_PEER,
// IWTEST_LISTEN), the interop tests are not built or skip. The untagged files
// hold the wire judges the tests use (ParseCall, ParseReply, AppendNullCall):
// a small, independent reading of RFC 8166 and RFC 5531 headers, so that the
// interop verdict does not rest on the codecs under test. Their unit and fuzz
// tests run in ordinary CI and use bytes captured from Linux by the lab.
package iwtest
