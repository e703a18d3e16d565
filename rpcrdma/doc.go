// Package rpcrdma implements RPC-over-RDMA version 1 (RFC 8166, which refines
// draft-ietf-nfsv4-rpcrdma-08 / RFC 5666): the transport header codec and the client and
// server transports that carry ONC RPC (package oncrpc) over RDMA (package verbs).
//
// # Header codec
//
// Header, its allocation-free encoder (Header.Append, AppendErrVers, AppendErrChunk) and
// decoder (Header.Decode, Decoder.Decode), the typed decode errors a responder maps to
// RDMA_ERROR replies (*VersionError → ERR_VERS, *ChunkError → ERR_CHUNK), and size
// helpers; see header.go. The chunk types and their rules live in package chunks; RFC
// 8797 connection private data is ConnPrivate.
//
// # Transport
//
// Dial returns a Client, an oncrpc.RoundTripper; Listen returns a Listener, an
// oncrpc.Listener whose connections (ServerConn) are oncrpc.ServerConns. Both program
// only against package verbs (the software iWARP provider, verbs/soft, by default) and
// follow RFC 8166 and the seed draft, matching Linux xprtrdma/svcrdma where Linux is the
// standard:
//
//   - Connection setup exchanges RFC 8797 private data both ways (ConnPrivate); each
//     side sends no more than the peer announced it receives, 1024 bytes when the peer
//     announced nothing. Limits/SetLimits expose and change the result (CONF_RDMA).
//     A listener refuses a request whose private data carries the RFC 8797 magic but
//     is truncated, with a Reject that carries its own private data.
//   - Buffers for transport headers and inline messages are registered per connection
//     in slabs, few at first and more as the connection's traffic needs them, and
//     reused for every message. Caller memory carried by chunks is registered per RPC through a cache
//     that re-keys the STag on reuse and invalidates it as soon as the RPC completes
//     (reply, error, timeout or cancel), so a peer can never touch it afterwards.
//   - A call goes inline (RDMA_MSG) when it fits; otherwise its DDP-eligible payloads
//     travel as read chunks at their XDR positions (roundup elided), and a call still
//     too long goes as RDMA_NOMSG with a position-zero read chunk. Reply sinks become
//     write chunks; a reply chunk is offered whenever the reply may not fit inline.
//   - The server validates every header (ERR_VERS, ERR_CHUNK on the same connection,
//     which stays up), pulls read chunks by RDMA Read straight into place (at most ORD in
//     flight), writes results into write chunks and long replies into the reply chunk,
//     and answers ERR_CHUNK when the client offered too little. Optionally it returns
//     long replies as read chunks held until RDMA_DONE or a timeout, and pads RDMA_MSGP
//     replies for clients that opted in. It uses Send With Invalidate when the client
//     allows it and the call named exactly one STag.
//   - Credits: the client starts each connection with one credit and follows the
//     server's grants (package credits); the server's grants follow its posted
//     receives, are shared between connections by a credits.Policy, and a client that
//     overruns its grant gets ERR_CHUNK, then is disconnected. A server connection
//     posts a few receives at first and registers more, doubling up to the policy's
//     grant, when its client keeps the credits it was granted in use, so an idle
//     connection holds little memory.
//   - After a connection loss (or a timed-out try, which drops the connection as Linux
//     does) the client reconnects and retransmits outstanding calls with their XIDs;
//     nothing is ever retransmitted on the connection that carried the original.
//
// # RDMA_MSGP
//
// Seed §3.9 lets a sender pad opaque data of at least rdma_thresh bytes to rdma_align
// and asks the receiver's XDR decoder to skip the padding. A transport cannot find opaque
// items in a stream it does not parse, so this package pads where a transport can: once,
// between the transport header and the RPC message, so that the message (and with it
// every 4-byte-aligned item) starts on an rdma_align boundary of the receive buffer. A
// client opts in (ClientOptions.MSGPAlign) and sends RDMA_MSGP for calls of at least
// rdma_thresh bytes; a server that accepts it (ServerOptions.MSGP) pads its replies to
// such clients the same way. Both sides strip the padding of any RDMA_MSGP they receive.
// Linux removed RDMA_MSGP on both sides, so it is never sent unless asked for.
//
// Logging (github.com/hashicorp/go-hclog, the project's logger) is on control paths only.
package rpcrdma
