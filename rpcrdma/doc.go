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
//     write chunks, unless the call's MaxReply bounds the whole reply within the reply
//     inline size (8 KiB by default, DefaultReplyInline: a 4 KiB READ's results come
//     inline); a reply chunk is offered whenever the reply may not fit inline.
//   - The server validates every header (ERR_VERS, ERR_CHUNK on the same connection,
//     which stays up), pulls read chunks by RDMA Read straight into place (at most ORD in
//     flight), writes results into write chunks and long replies into the reply chunk,
//     and answers ERR_CHUNK when the client offered too little. Optionally it returns
//     long replies as read chunks held until RDMA_DONE or a timeout, and pads RDMA_MSGP
//     replies for clients that opted in. A side that announced CONF_RDMA maxrdmaread
//     0 is never the target of RDMA Reads (seed §6.2; see SetReadTarget). It uses Send With Invalidate when the client
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
// Seed §3.9: padding goes "prior to the first data byte" of opaque items whose length
// is at or above rdma_thresh, between the item's length word and its data, so that the
// data starts on an rdma_align boundary; "The XDR routine at the peer MUST consult
// these values when decoding opaque values." Alignment is counted from the start of the
// receive buffer, the first byte of the transport header: the draft aligns data in the
// receiver's chained buffers, which hold the whole message, and header and RPC message
// form one XDR stream ("rpc body follows").
//
// Receiving needs the XDR schema, which only the RPC layer has, so a received
// RDMA_MSGP message goes up as it arrived, with its padding rule: the transport sets
// oncrpc.ServerCall.Msg.Padding or oncrpc.ClientReply.Padding (rdma_align,
// rdma_thresh, and Base, the header's length), and the oncrpc Server and Client hand
// it to their xdr.Decoder (SetPadding), which skips the padding before every opaque,
// string and inline payload of at least rdma_thresh bytes. Any peer's padding is
// understood, whatever items it pads.
//
// Sending pads only the DDP-eligible payloads (xdr.Payload), the opaque items whose
// positions the transport knows, and still keeps the rule for every opaque: the
// rdma_thresh it announces is at least the length of the inline stream, which holds
// every other opaque of the message whole and so exceeds each of their lengths, and
// differs from every padded payload's length, so that the draft's "exceeds" reading
// agrees. For the calls and replies of NFSv3 this pads WRITE and READ data, the items
// that benefit. RDMA_MSGP is sent only for a message that goes whole inline with a
// padded payload; RDMA_MSGP with a read list is neither sent nor accepted (ERR_CHUNK,
// or a bad reply), since the draft does not say whether chunk positions count padding.
//
// RDMA_MSGP is off by default and toward Linux, whose svcrdma answers it with
// ERR_CHUNK and whose client never sends it. A client pads only when it opted in
// (ClientOptions.MSGPThresh) and knows the server's rdma_align: from CONF_RDMA
// (confproto applies config_rdma_reply.align with Client.SetMSGPAlign) or from
// ClientOptions.MSGPAlign; a new connection starts from the options again. A server
// accepts RDMA_MSGP only with ServerOptions.MSGP, recommends no alignment in CONF_RDMA
// otherwise (ServerConn.AcceptsMSGP), and answers RDMA_MSGP only to RDMA_MSGP calls,
// padded to the call's rdma_align.
//
// # Reverse direction
//
// RFC 8167 bidirectional RPC (backchannel*.go, as Linux's backchannel.c and
// svc_rdma_backchannel.c): ServerConn implements oncrpc.BackchannelConn, whose
// Backchannel RoundTripper sends CALLs to the client; ClientOptions.Backchannel makes a
// Client serve them with an oncrpc.Handler. A reverse-direction message is an RDMA_MSG
// with no chunks whose RPC xid equals rdma_xid; a client tells a reverse CALL from a
// forward REPLY, and a server a reverse REPLY from a forward CALL, by msg_type. Reverse
// messages travel inline only: a call over the inline threshold fails with
// ErrReverseTooLarge, a reply over it becomes SYSTEM_ERR. Reverse credits are counted
// apart from forward ones: a server connection requests ServerOptions.BackchannelCredits
// (2, as Linux svcrdma), starts with one and follows the grant in each reverse reply,
// and posts receives for the replies once its back channel is used; the client keeps
// oncrpc.BackchannelOptions.MaxRequests receives posted for reverse calls and grants that many
// (Linux's client grants 16 and keeps 32 posted). A client without a handler drops
// reverse calls and counts them (ClientStats), as Linux's RDMA client does without a
// callback service; so does one whose server exceeds the grant (Linux disconnects).
//
// Logging (github.com/hashicorp/go-hclog, the project's logger) is on control paths only.
package rpcrdma
