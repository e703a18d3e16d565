// Package ibverbs is a provider of the verbs API (package verbs) on
// rdma-core's libibverbs and librdmacm, through cgo: InfiniBand, RoCE
// (including Soft-RoCE, rxe) and iWARP devices (including soft-iWARP, siw).
//
// # Build tag
//
// The provider is compiled only with the build tag ibverbs on Linux with
// cgo (`go build -tags ibverbs`), and needs the rdma-core development
// packages (Debian: apt-get install libibverbs-dev librdmacm-dev). Without
// the tag this package holds only its documentation and error values, so
// the default build of the module stays pure Go.
//
// # Devices
//
// Open selects a device by name (Config.Name, e.g. "rxe0") or by an IP
// address of the network device it is bound to (Config.Addr; rdma_cm is
// asked which device owns the address), checks that its port is ACTIVE
// (*PortDownError otherwise) and reads its limits. Errors name what people
// hit: ErrNoDevice (with how to create a soft device), *MemlockError when
// RLIMIT_MEMLOCK stops a registration (raise it with `ulimit -l unlimited`
// or LimitMEMLOCK=infinity in a systemd unit), ErrLimit for queue-pair,
// work-request, SGE, CQE and memory-region limits, ErrForked when an object
// is used in a child forked after Open.
//
// # Connections
//
// Connection management is rdma_cm with one event channel per Device, read
// by one goroutine through the Go runtime's poller: Dial does
// rdma_resolve_addr, rdma_resolve_route, rdma_create_qp and rdma_connect;
// Listen binds and listens; a ConnRequest is accepted with rdma_accept or
// refused with rdma_reject, both with private data. ConnParams.IRD and ORD
// become responder_resources and initiator_depth. ConnRequest.IRD and ORD
// are the peer's (the request's initiator_depth and responder_resources:
// rdma_cm reports them from the receiver's side), and Accept keeps its ORD
// within the peer's IRD (on InfiniBand a peer IRD of 0 means no Reads; on
// iWARP without enhanced MPA it means unknown) and raises its IRD to the
// peer's ORD, within the device's limits. On InfiniBand and RoCE,
// the CM carries private data in fixed-size fields: the receiver sees the
// sender's bytes followed by zeros up to 56 (request), 196 (reply) or 148
// (reject) bytes, and longer private data is refused with
// verbs.ErrPrivateDataTooLong. iWARP delivers the exact bytes, up to 248
// (Linux 6.1 siw resets an MPA request carrying 252).
//
// The device queue pair is created when the connection is set up
// (rdma_create_qp binds it to the connection identifier, and the passive
// side's identifier exists only once a request arrives). Receives posted in
// StateInit are kept and posted to the device queue pair before the
// connection is requested or accepted.
//
// # Data path
//
// libibverbs' data-path verbs are static inline functions, so small C shims
// call them. PostSend and PostRecv go through the same path as the
// BatchPoster methods, which post up to 64 work requests in one cgo call
// (one ibv_post_send / ibv_post_recv with a linked list); a PostSend chain
// (verbs.SendWR.Next, e.g. a reply's RDMA Writes and its Send) is one such
// call, all or none; Poll takes up to 64 completions per cgo call. Work
// requests are staged in C memory allocated with the queue pair, so posting
// does not allocate.
//
// A CQ created with verbs.WithHandler is drained by its event goroutine,
// which calls the handler for each completion straight after polling the
// device (no waiter to wake); completions the provider makes itself
// (flushes) are delivered by the goroutine that makes them.
//
// A device retires unsignalled send requests only when a later signalled
// one completes. So that a send queue drains whether or not the caller
// signals (as in verbs/soft, which retires a request once it is
// transmitted), the provider itself signals one request in every half
// queue of unsignalled ones and does not deliver those completions when
// they succeed; failed and flushed requests always complete. Completions
// may come out of order (siw completes a Send posted after an RDMA Read
// before the Read's response arrives): the overtaken request stays
// outstanding, and keeps its place in the send queue, until its own
// completion, so PostSend returns verbs.ErrQueueFull exactly when MaxSendWR
// requests are outstanding. A post that finds the send queue full first
// moves completions not yet polled from the device CQ to the CQ's queue,
// which retires them.
//
// Completions are found by adaptive polling, as busy RDMA stacks do: after
// activity on a CQ (a completion found, work posted to a queue pair using
// it) CQ.Wait polls the device (ibv_poll_cq, no system call) for up to
// Config.CQPoll (DefaultCQPoll, 50 µs) before it blocks, and a handler CQ's
// event goroutine keeps delivering after an event until no completion has
// come for that long. A poll that finds nothing ends the polling until the
// next activity, so an idle CQ costs no CPU; a negative Config.CQPoll turns
// polling off.
//
// Each CQ has its own completion channel. One goroutine per CQ arms it
// (ibv_req_notify_cq) when a waiter is about to block (a handler CQ: after
// each round of delivery) and waits for the channel's descriptor, set
// non-blocking, in the runtime poller (os.NewFile + syscall.RawConn.Read);
// CQ.Wait waits for that goroutine's wake-ups. Completions found by polling
// raise no events, and no OS thread is held per queue pair or per CQ.
//
// # Memory
//
// RegMR registers the caller's []byte in place: its first byte is pinned
// with runtime.Pinner for the life of the region, which is what the cgo
// pointer rules require for memory C keeps using after the call (the Go
// heap does not move objects; the pin also keeps the allocation alive).
// Nothing is copied. MR.Addr is the buffer's virtual address, the tagged
// offset ibverbs uses.
//
// Invalidation: user-space ibverbs offers no fast-register work request for
// regions registered with ibv_reg_mr, and memory windows (IBV_WR_BIND_MW,
// IBV_WR_LOCAL_INV) are not offered by siw. So MR.Invalidate deregisters the
// region (ibv_dereg_mr: when it returns, the device refuses the STag) and
// MR.Reregister registers it again; the new registration is made while the
// old one still exists, or retried, so its rkey always differs from the
// old one. A Send with Invalidate received for a region marks it invalid
// (MR.Valid false) when the device reports it (IBV_WC_WITH_INV). Soft-RoCE
// (rxe) remotely invalidates only fast-registered regions and memory windows
// and fails such a receive; siw invalidates ibv_reg_mr regions but libsiw
// reports no IBV_WC_WITH_INV, so the region's Valid stays true although
// the device refuses its STag. Sending Send with Invalidate works on both.
//
// Device quirks handled here: libsiw refuses receives without SGEs (one
// empty SGE on a small per-PD region stands in), returns negated errno
// values, and takes a Send with Invalidate's STag from wr.rdma.rkey; Linux
// 6.1 siw dereferences a NULL region for a zero-length SGE in a non-empty
// send (siw_tx_hdt), so empty SGEs are dropped before posting.
//
// Fork: registered memory must not be copied-on-write in a child. Go starts
// programs with clone(CLONE_VFORK|CLONE_VM), which shares memory and is
// safe; since Linux 5.13 the kernel also protects registrations itself
// (ForkStatus reports "unneeded"). Config.ForkInit calls ibv_fork_init
// (MADV_DONTFORK on registered pages) for processes that fork without exec.
package ibverbs
