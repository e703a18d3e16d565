// Package soft is a software RDMA provider for package verbs that speaks the
// real iWARP protocol suite over TCP: MPA (RFC 5044) with enhanced connection
// setup (RFC 6581), DDP (RFC 5041) and RDMAP (RFC 5040). It is
// wire-compatible with Linux soft-iWARP (siw), so a Linux host with siw can
// talk to it with no special software, and it lets every test and benchmark
// of the project run on machines without RDMA hardware.
//
// # Protocol
//
//   - Connection setup: MPA Request/Reply revision 1 and 2, RFC 6581 IRD/ORD
//     negotiation (an IRD or ORD of 0x3FFF, "not negotiated", leaves the
//     local value it would adjust unchanged), the peer-to-peer model with a ready-to-receive (RTR) frame
//     (a zero-length RDMA Write or Read, as siw offers), CRC32c as negotiated
//     by the C bit, markers refused, Reject with private data. A request
//     the provider cannot accept (key, revision above 2, markers, private
//     data over 256 bytes, enhanced bit without the IRD/ORD block) is
//     answered with an MPA Reply with the R bit and no private data, at the
//     request's revision or 2; after any Reject the connection is
//     half-closed and drained briefly, so the Reject is not lost to a
//     RST. No FPDU is sent
//     before the MPA exchange completes, and a responder sends no FPDU before
//     the initiator's first FPDU arrives (RFC 5044 §7.1.2, siw's strictness).
//   - Data transfer: FPDUs segmented to Config.MaxFPDU (default: the TCP MSS, as it changes)
//     and reassembled at any legal length; DDP tagged and untagged segments
//     (QN 0 Send, 1 Read Request, 2 Terminate; MSN from 1; MO), each message's
//     opcode the same in all its segments; RDMAP Send,
//     Send with Invalidate, Send with SE (and SE+Invalidate), RDMA Write, Read
//     Request/Response, Terminate. IRD is enforced on inbound Read Requests;
//     outbound Read Requests beyond ORD wait in the send queue.
//   - Errors: every violation sends a Terminate carrying the RFC layer, error
//     type and code; the queue pair then enters the error state and every
//     outstanding work request completes with verbs.StatusFlushed. A received
//     Terminate moves the queue pair to the error state and is reported as a
//     *verbs.TerminateError in verbs.QPError and in the flushed completions;
//     it is never answered, not even when malformed (the code of a Terminate
//     with a truncated header copy is still reported; one whose Terminate
//     Control cannot be read is reported with layer, type and code 0xff).
//   - Memory protection (RFC 5042): STag = index<<8 | 8-bit key, the key
//     drawn from crypto/rand (in batches) on every registration and
//     re-registration, never equal to the index's previous key, and the
//     index scattered over 24 bits by a per-device keyed permutation, so
//     STags cannot be derived from the order of registrations and a stale
//     STag is refused; peer accesses are
//     checked for STag, protection domain, access rights and bounds;
//     invalidation waits for accesses in progress, but never for a stalled
//     peer: the region's lock is held only while bytes move (readiness-based
//     socket I/O on Linux), and the STag is re-checked before every read or
//     write. Tagged offsets are index<<32 + offset, never heap addresses.
//   - Linux siw quirks: Terminates from siw are decoded in either nibble
//     order; against the Linux 6.1 siw accept race (an FPDU arriving right
//     behind the MPA Reply can sit unprocessed) the initiator sends one
//     zero-length RDMA Write if the peer stays silent (Config.SiwKick), or
//     can delay its first FPDU (Config.FirstFPDUDelay).
//
// # Performance
//
// Each connection has one reader and one writer goroutine. The reader reads
// through a 64 KiB read-ahead buffer, so one read brings in whatever has
// arrived (an RPC reply's RDMA Write and Send together, many small FPDUs);
// payload is copied out of it when small and read straight from the socket
// into the registered buffer (tagged) or the posted receive buffer
// (untagged) when 16 KiB or more remains. The transmit side gathers every
// queued work request into one vectored write (headers, payload pieces,
// trailers; up to IOV_MAX pieces and 1 MiB), so an RDMA Write and the Send
// behind it leave in one system call, in queue order. A batch of Sends of
// up to 64 KiB posted while the writer goroutine has nothing to do is
// written by PostSend itself, saving the goroutine hand-off; that write
// never blocks: what the socket does not take at once is left to the
// writer, which sends it before anything else. So PostSend never waits for
// the socket. (An RDMA Write is left to the writer, so that the Send
// usually posted right behind it joins it.) A caller waiting for one
// completion can receive it on its own goroutine (verbs.DirectProcessor):
// the reader hands receiving over between FPDUs and the caller reads and
// processes whole buffered FPDUs until its completion is delivered, so no
// goroutine has to wake it; large payloads, errors and other waiters go
// back to the reader (see direct.go). Work requests and completions
// live in rings allocated when the QP and CQ are created, so the steady
// state does not allocate (see the benchmarks); read-ahead and batch
// buffers come from pools and are held only while in use, so an idle
// connection holds none.
//
// Wire encoding and decoding is package verbs/iwarp; this package holds the
// protocol state machines. Its one dependency beyond the standard library is
// github.com/hashicorp/go-hclog, the project's logger, for control-path
// events (Config.Logger).
package soft

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/hashicorp/go-hclog"
)

// Defaults.
const (
	// DefaultMaxFPDU is the FPDU size used when the TCP MSS cannot be read.
	DefaultMaxFPDU = 1460
	// DefaultIRDORD is the IRD/ORD used when ConnParams leaves them zero.
	DefaultIRDORD = 16
	// MaxIRDORD is the largest IRD/ORD the provider grants (siw's limit).
	MaxIRDORD = 128
	// DefaultSiwKick is the default Config.SiwKick.
	DefaultSiwKick = 200 * time.Millisecond
	// DefaultMPATimeout bounds the MPA exchange when the context has no
	// deadline.
	DefaultMPATimeout = 10 * time.Second
)

// RTRType selects the ready-to-receive frame of the peer-to-peer model
// (RFC 6581 §3).
type RTRType uint8

// RTR types.
const (
	// RTRNone disables the peer-to-peer model: the initiator's ULP must send
	// first (RFC 5044 classic mode).
	RTRNone RTRType = iota
	// RTRWrite offers/uses a zero-length RDMA Write (siw's first choice).
	RTRWrite
	// RTRRead offers/uses a zero-length RDMA Read Request.
	RTRRead
)

// String names the RTR type.
func (r RTRType) String() string {
	switch r {
	case RTRNone:
		return "none"
	case RTRWrite:
		return "write"
	case RTRRead:
		return "read"
	}
	return fmt.Sprintf("RTRType(%d)", uint8(r))
}

// Config configures a Device. The zero value is usable.
type Config struct {
	// Name is the device name; default "soft0".
	Name string
	// MaxFPDU is the largest FPDU sent, in bytes, including headers and the
	// CRC field. Zero derives it from the connection's TCP MSS (rounded down
	// to a multiple of 8, as siw does), falling back to DefaultMaxFPDU; the
	// MSS is read again before the writer goroutine sends a message of more
	// than one FPDU (messages PostSend writes itself, at most 64 KiB, use
	// the size last read), so the size follows it as it changes (on
	// loopback it doubles once the TCP window opens).
	// Values below 64 are raised to 64.
	MaxFPDU int
	// CRC requests MPA CRC32c as initiator and insists on it as responder
	// (a responder always honours an initiator's C bit).
	CRC bool
	// P2P selects the peer-to-peer model and the RTR frame offered as
	// initiator. As responder, the initiator's offer is honoured regardless.
	P2P RTRType
	// MPARevision is the MPA revision requested as initiator: 2 (default,
	// enhanced, RFC 6581) or 1 (no IRD/ORD, no P2P).
	MPARevision int
	// FirstFPDUDelay delays the initiator's first FPDU after the MPA Reply.
	// Linux 6.1 siw responders can leave an FPDU that arrives right behind
	// their reply unprocessed (the siw accept race); a few milliseconds
	// avoid it. Zero sends at once.
	FirstFPDUDelay time.Duration
	// SiwKick works around the same siw race without delaying every
	// connection: if, this long after the initiator's first FPDU, the peer
	// has sent nothing and we have sent nothing more, the initiator sends
	// one zero-length RDMA Write (STag 1, TO 0; receivers do not check the
	// STag of an empty Write, RFC 6581's RTR uses the same frame), whose
	// arrival makes a stuck siw responder process the first FPDU. Zero
	// selects DefaultSiwKick; negative disables it.
	SiwKick time.Duration
	// TakeBack bounds how long bytes can wait for a receiver: a queue
	// pair's reader goroutine that handed receiving over to a caller
	// (verbs.DirectProcessor) receives again, when nothing asked it to,
	// once nobody has received for the queue pair for between TakeBack/2
	// and TakeBack (one sweep per device every TakeBack/2 looks; see
	// takeback.go). Zero selects DefaultTakeBack.
	TakeBack time.Duration
	// Dialer is used by Dial; nil means a net.Dialer with default settings.
	Dialer *net.Dialer
	// Logger receives control-path events (connections established and
	// refused, Terminates sent and received, connection loss). Nil
	// discards them. Nothing is logged per message.
	Logger hclog.Logger
}

// Device is a software iWARP device. It implements verbs.Device.
type Device struct {
	cfg   Config
	stags stagTable
	terms termCounters // see Stats
	// directFPDUs: see Stats.DirectFPDUs.
	directFPDUs atomic.Uint64
	// aheadPlaced, aheadSpliced: see Stats.ReadAheadPlaced, ReadAheadSpliced.
	aheadPlaced, aheadSpliced atomic.Uint64
	// takeBack takes receiving back for readers that handed it over
	// (takeback.go); confirmSweep confirms the waits of readers that stopped
	// reading after a short read (confirmwait.go).
	takeBack, confirmSweep qpSweep
	// crowd counts the QPs that post (crowd.go).
	crowd crowd

	mu     sync.Mutex
	closed bool
}

var _ verbs.Device = (*Device)(nil)

// New returns a software iWARP device.
func New(cfg Config) *Device {
	if cfg.Name == "" {
		cfg.Name = "soft0"
	}
	if cfg.MPARevision == 0 {
		cfg.MPARevision = 2
	}
	if cfg.SiwKick == 0 {
		cfg.SiwKick = DefaultSiwKick
	}
	if cfg.TakeBack <= 0 {
		cfg.TakeBack = DefaultTakeBack
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxFPDU != 0 && cfg.MaxFPDU < 64 {
		cfg.MaxFPDU = 64
	}
	d := &Device{cfg: cfg}
	d.takeBack = qpSweep{period: max(cfg.TakeBack/2, time.Microsecond), look: (*queuePair).sweepAside}
	d.confirmSweep = qpSweep{period: confirmPeriod, look: (*queuePair).confirmWait}
	d.stags.perm.key(&d.stags.rnd)
	return d
}

// Name returns the device name.
func (d *Device) Name() string { return d.cfg.Name }

// Close closes the device.
func (d *Device) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return nil
}

// protDomain is the software provider's verbs.PD.
type protDomain struct {
	dev    *Device
	mu     sync.Mutex
	nmr    int
	nqp    int
	closed bool
}

// AllocPD allocates a protection domain.
func (d *Device) AllocPD() (verbs.PD, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("soft: AllocPD: %w", verbs.ErrClosed)
	}
	return &protDomain{dev: d}, nil
}

func (pd *protDomain) Close() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.nmr > 0 || pd.nqp > 0 {
		return fmt.Errorf("soft: PD.Close: %d memory regions and %d queue pairs still open", pd.nmr, pd.nqp)
	}
	pd.closed = true
	return nil
}

// ctxDeadline returns the context's deadline or now+DefaultMPATimeout.
func ctxDeadline(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(DefaultMPATimeout)
}

func init() {
	verbs.RegisterProvider("soft", func(c verbs.ProviderConfig) (verbs.Device, error) {
		log := c.Logger
		if log != nil {
			log = log.Named("soft")
		}
		return New(Config{CRC: c.CRC, MaxFPDU: c.MaxFPDU, Logger: log}), nil
	})
}
