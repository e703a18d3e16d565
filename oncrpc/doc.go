// Package oncrpc implements ONC RPC version 2 (RFC 5531): call and reply messages,
// AUTH_NONE and AUTH_SYS, a concurrent Server and Client, and the transport contract
// that lets the same Client and Server run over TCP record marking (in this package)
// or RPC-over-RDMA (package rpcrdma).
//
// # Messages
//
// CallHeader and ReplyHeader encode by appending (Append, EncodeXDR) and decode in
// place (DecodeXDR) without allocating; decoded credential bodies alias the input.
// Malformed headers yield a *HeaderError naming the RFC field. A reply's status
// becomes a typed error through ReplyHeader.Err: *AcceptError (PROG_UNAVAIL,
// PROG_MISMATCH with Low/High, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR) or *RejectError
// (RPC_MISMATCH with Low/High, AUTH_ERROR with AuthStat).
//
// # Transport contract
//
// A transport moves Messages: an inline XDR stream plus the DDP-eligible items elided
// from it (xdr.Payload, positioned in the whole logical stream). On the client side a
// RoundTripper takes a ClientCall (XID, Msg, ReplySinks for results that may be placed
// out of line, MaxReply, a per-try Timeout) and fills a ClientReply (Inline, Placed).
// On the server side a Listener yields ServerConns; ReadCall returns a ServerCall whose
// Msg.Inline is the whole call stream, and WriteReply sends a reply Message and
// releases the call. A transport that receives RPC-over-RDMA RDMA_MSGP messages leaves
// their padding in place and states its rule in ServerCall.Msg.Padding or
// ClientReply.Padding; the Server's argument decoder and the Client's reply decoder
// skip it (xdr.Decoder.SetPadding). PendingCalls is an XID-matching table (cancellation, per-try
// timeouts, retransmission after reconnect) that client transports can share; the
// TCP transport uses it.
//
// # Server
//
// Register a Handler per program version (or range); the Server answers PROG_UNAVAIL,
// PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR, RPC_MISMATCH and AUTH_ERROR
// itself or from the Handler's error, runs calls of one connection concurrently up to
// ServerOptions.MaxConcurrent, and shuts down gracefully.
//
// Malformed calls are answered as far as the header allows: a message too short to
// carry an xid and msg_type, a message that is not a CALL, or one without rpcvers is
// dropped (and logged); rpcvers other than 2 gets MSG_DENIED RPC_MISMATCH (2, 2); a
// header cut short in prog, vers or proc gets GARBAGE_ARGS; a malformed credential
// (over 400 bytes, a bad AUTH_SYS body, a non-empty AUTH_NONE body) gets AUTH_BADCRED;
// a verifier other than an empty AUTH_NONE gets AUTH_BADVERF; a flavor other than
// AUTH_NONE and AUTH_SYS gets AUTH_REJECTEDCRED (as the reference ONC RPC
// implementation answers a flavor it has no authenticator for); an implemented flavor
// that ServerOptions.Flavors excludes gets AUTH_TOOWEAK (NULL always accepts
// AUTH_NONE), and a Handler may be stricter and answer AuthErr(AuthTooWeak). A
// record over the transport's limit, or a stream that ends inside a record, closes
// the connection.
//
// # Memory budget
//
// A Server bounds what calls in progress hold, globally (ServerOptions.Budget,
// default DefaultBudget) and per connection (ConnBudget, default DefaultConnBudget):
// handlers reserve their big buffers with Request.Reserve (nfsserver's READ does),
// TCP call records are charged while their call runs, and a TCP connection over its
// budget is not read until its calls are answered. A connection may always have one
// reservation, so stalled peers cannot starve the others. TCPOptions.SendTimeout
// closes a connection whose peer does not take a reply.
//
// # Client
//
// A Client issues calls over a RoundTripper with unique XIDs (random start), context
// deadlines and a retransmission policy; steady-state calls do not allocate in this
// package.
//
// # Reverse direction
//
// A server may call the client connected to it (NFSv4.1 callbacks): a ServerConn that
// can carry such calls implements BackchannelConn, whose Backchannel RoundTripper sends
// CALLs with the server's XIDs (NextXID) and matches the client's REPLYs, which the
// transport tells from forward calls by msg_type; TCP server connections do, on the same
// record stream, and so do rpcrdma's (RFC 8167). A client transport given
// BackchannelOptions (TCPOptions.Backchannel, rpcrdma.ClientOptions.Backchannel) serves
// the CALLs its server sends with a Handler, through a BackchannelServer that applies this
// package's Server checks, bounds the calls in progress (MaxRequests) and hands each
// reply back to the transport for the connection the call came on. Without a Handler,
// or past the bound, reverse calls are dropped and counted.
//
// Over TCP the server reads reverse replies in the loop that reads calls; that loop
// pauses while ServerOptions.MaxConcurrent handlers run or the connection's budget is
// spent, so a handler that waits for a reverse reply must not be one of MaxConcurrent
// such handlers: make callbacks from a goroutine of their own.
//
// # TCP
//
// DialTCP/NewTCPTransport and ListenTCP implement RFC 5531 §11 record marking with
// multi-fragment records in both directions, a maximum record size enforced before
// anything is allocated, and payloads sent by one vectored write without copying.
//
// Dependencies: github.com/hashicorp/go-hclog for control-path logging (connections,
// garbage, panics), never per call. github.com/davecgh/go-xdr is used only in tests,
// as an independent encoder of authsys_parms.
package oncrpc
