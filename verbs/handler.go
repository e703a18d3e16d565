package verbs

import "time"

// CompletionHandler receives the completions of a CQ created WithHandler, inline
// from the provider: no polling goroutine stands between the provider and the
// consumer (the kernel's ib_cq with per-request done callbacks). The contract,
// which every provider keeps and package verbstest checks:
//
//   - Who calls it: a goroutine of the provider's completion context (verbs/soft:
//     the QP's receive or transmit goroutine; verbs/ibverbs: the CQ's event
//     goroutine), or a goroutine inside PostSend, PostRecv or Close of a QP that
//     uses the CQ (a provider that completes work while posting, as verbs/soft
//     does when it transmits a small message from the posting goroutine, delivers
//     it there), or the goroutine of a consumer in DirectProcessor.ProcessDirect.
//     It is never called with a provider lock held, so callers of
//     PostSend, PostRecv and Close must not hold a lock the handler takes.
//   - One at a time: calls for one CQ never overlap; wc is valid only during the
//     call (copy what you keep).
//   - Order: completions are delivered in the order the CQ received them, so a
//     QP's receive completions arrive in the order the messages arrived, and its
//     send completions in posting order (as the provider generates them).
//   - Re-entrance: the handler may call PostSend and PostRecv on any QP, including
//     the one that completed (repost the receive, send the reply). Completions
//     that those posts produce are delivered after the handler returns, by the
//     same goroutine or another, never by a nested call.
//   - It must not block (it holds up every later completion of the CQ) and must
//     not call Close of the CQ or of a QP that uses it (Close waits for the
//     completion context the handler may be running on); hand such work to
//     another goroutine.
//   - Flush and close: when a QP fails or is closed, each of its outstanding work
//     requests is delivered once more, with StatusFlushed, exactly like a polled
//     completion; every work request posted completes exactly once. When QP.Close
//     returns, all of that QP's completions have been handed to the CQ; a handler
//     call already running on another goroutine may still be delivering them, so
//     a consumer that frees memory after the last completion counts its
//     outstanding requests (it cannot rely on Close alone). After CQ.Close
//     returns, no handler call is running and none starts.
//   - Failure: if the CQ overruns (more completions pending delivery than its
//     depth), the excess is lost and Poll and Wait report the *CQOverrunError,
//     as for a polled CQ; size the CQ for every request that can be outstanding.
type CompletionHandler func(wc *Completion)

// CQOptions are the settings of Device.CreateCQ that CQOption values set.
// Providers read them with ApplyCQOptions.
type CQOptions struct {
	// Handler, when not nil, receives every completion inline (see
	// CompletionHandler); Poll then never returns completions.
	Handler CompletionHandler
}

// CQOption is an optional setting of Device.CreateCQ.
type CQOption func(*CQOptions)

// WithHandler makes CreateCQ's queue deliver every completion to h inline.
func WithHandler(h CompletionHandler) CQOption {
	return func(o *CQOptions) { o.Handler = h }
}

// ApplyCQOptions returns the settings opts make (for providers' CreateCQ).
func ApplyCQOptions(opts []CQOption) CQOptions {
	var o CQOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// DirectProcessor is implemented by a QP whose provider can run its receive
// processing on the caller's goroutine, as Linux's ib_process_cq_direct polls a
// CQ in the caller's context. A consumer that waits for one completion, with
// nothing else of its own outstanding, receives for the QP itself: the
// completion reaches the handler (see CompletionHandler) on the goroutine that
// waits for it, which saves the hand-off from the provider's goroutine to the
// waiting one (a wake-up of a sleeping goroutine, and often of a thread, per
// message).
//
// verbs/soft implements it (the caller reads the socket), and so does
// verbs/ibverbs (the caller polls the receive CQ for up to its polling
// budget); a consumer type-asserts and falls back to waiting for its
// handler's signal when the QP does not.
type DirectProcessor interface {
	// ProcessDirect receives for the QP on the calling goroutine, handing
	// completions to the CQ handlers exactly as the provider's own
	// completion context would, until done reports true or deadline (zero:
	// none) passes. It returns what done reports as it returns. done is
	// called between completions, never with a provider lock held, and must
	// become true only through a completion's delivery.
	//
	// When the provider's goroutine is receiving, the caller waits until
	// that goroutine hands receiving over between two messages (one
	// wake-up, in place of the one that would deliver the caller's
	// completion). It returns early, with done still false, when another
	// caller is receiving or waiting for a hand-over, when the QP fails,
	// when the deadline passes, when what arrives needs the provider's own
	// goroutine (a large payload placed directly), or when the provider's
	// own budget for a direct wait runs out (ibverbs polls the CQ for
	// Config.CQPoll, and not at all with polling off); the caller then calls
	// Resume and waits as it would without it.
	//
	// While it runs, completions of other work requests on the QP are
	// delivered by this goroutine; a consumer that waits for one while
	// another goroutine processes directly calls Resume.
	//
	// A consumer whose wait may also end by an event no completion reports
	// (a cancelled context) bounds the call by a deadline near enough for
	// that event to be noticed in time, and then waits as it would without
	// it.
	ProcessDirect(done func() bool, deadline time.Time) bool
	// Resume makes sure receive processing continues once the goroutine that
	// is processing directly (if any) returns: a consumer calls it before it
	// waits for a completion without processing directly.
	Resume()
}
