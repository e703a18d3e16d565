package confproto

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The CONF_RDMA service: CONFIG_RDMA_PROG version 1 as an oncrpc.Handler, so it runs
// on any oncrpc.Server and over any transport (TCP, or RPC-over-RDMA, where seed §6
// means it to run: in band, on the connection it configures).

// ErrInvalid is wrapped by every *ValueError.
var ErrInvalid = errors.New("invalid value")

// A ValueError reports a CONF_RDMA field, or a configured limit, whose value breaks a
// rule. Struct is "config_rdma_req", "config_rdma_reply" or "Limits"; Field is the
// seed §6.2 field name (or the Limits field name).
type ValueError struct {
	Struct string
	Field  string
	Value  uint32
	Reason string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("confproto: %s.%s = %d: %s", e.Struct, e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrInvalid.
func (e *ValueError) Unwrap() error { return ErrInvalid }

// ErrTrailing means a CONF_RDMA call carries bytes after its config_rdma_req.
var ErrTrailing = errors.New("trailing bytes after config_rdma_req")

// MaxMessageSize bounds every size this package accepts or sends: 16 MiB, far above
// any inline threshold a real RDMA endpoint posts (RFC 8797 can express at most
// 256 KiB), and small enough that a peer's value cannot overflow a buffer computation.
const MaxMessageSize = 16 << 20

// Default limits of a Service: Linux's default inline size (RPCRDMA_DEF_INLINE, 4096
// bytes) both ways, XDR alignment, and 16 RDMA Reads.
const (
	DefaultInlineSize  = 4096
	DefaultAlign       = 4
	DefaultMaxRDMARead = 16
)

// Limits are what a CONF_RDMA server announces and enforces.
type Limits struct {
	// MaxCallSendSize is the largest inline call the server receives: the size of
	// the receive buffers it posts. Sent as config_rdma_reply.maxcall_sendsize.
	MaxCallSendSize uint32
	// MaxReplySendSize is the largest inline reply the server sends (its send
	// buffers); the server sends at most the smaller of it and the client's
	// maxreply_sendsize. Not part of the reply (seed §6.2 has no field for it).
	MaxReplySendSize uint32
	// Align is the alignment the server recommends for opaque data in calls
	// (config_rdma_reply.align): a power of two, at least 4.
	Align uint32
	// MaxRDMARead is the number of RDMA Reads the server lets a client have active
	// against it (its IRD). Sent as config_rdma_reply.maxrdmaread.
	MaxRDMARead uint32
}

// DefaultLimits returns the limits a Service uses when none are given.
func DefaultLimits() Limits {
	return Limits{MaxCallSendSize: DefaultInlineSize, MaxReplySendSize: DefaultInlineSize, Align: DefaultAlign, MaxRDMARead: DefaultMaxRDMARead}
}

func checkSize(structName, field string, v uint32) error {
	switch {
	case v < BaseInlineSize:
		return &ValueError{Struct: structName, Field: field, Value: v, Reason: fmt.Sprintf("below the %d-byte size every peer supports (seed §6.1)", BaseInlineSize)}
	case v > MaxMessageSize:
		return &ValueError{Struct: structName, Field: field, Value: v, Reason: fmt.Sprintf("above the %d-byte limit", MaxMessageSize)}
	}
	return nil
}

func checkAlign(structName, field string, v uint32) error {
	if v < 4 || v&(v-1) != 0 || v > MaxMessageSize {
		return &ValueError{Struct: structName, Field: field, Value: v, Reason: fmt.Sprintf("not a power of two from 4 to %d", MaxMessageSize)}
	}
	return nil
}

// Validate checks the limits: sizes from BaseInlineSize to MaxMessageSize, Align a
// power of two from 4. MaxRDMARead may be 0: clients must then not make the server
// serve RDMA Reads (no read chunks in replies).
func (l *Limits) Validate() error {
	if err := checkSize("Limits", "MaxCallSendSize", l.MaxCallSendSize); err != nil {
		return err
	}
	if err := checkSize("Limits", "MaxReplySendSize", l.MaxReplySendSize); err != nil {
		return err
	}
	return checkAlign("Limits", "Align", l.Align)
}

// Validate checks a request: maxcall_sendsize and maxreply_sendsize from
// BaseInlineSize (seed §6.1: every peer exchanges 1 KB messages) to MaxMessageSize.
// maxrdmaread may be anything; 0 means the server must not issue RDMA Reads.
func (r *ConfigRDMAReq) Validate() error {
	if err := checkSize("config_rdma_req", "maxcall_sendsize", r.MaxCallSendSize); err != nil {
		return err
	}
	return checkSize("config_rdma_req", "maxreply_sendsize", r.MaxReplySendSize)
}

// Validate checks a reply: maxcall_sendsize from BaseInlineSize to MaxMessageSize,
// align a power of two from 4 (0 is taken as "no recommendation" and allowed).
func (r *ConfigRDMAReply) Validate() error {
	if err := checkSize("config_rdma_reply", "maxcall_sendsize", r.MaxCallSendSize); err != nil {
		return err
	}
	if r.Align == 0 {
		return nil
	}
	return checkAlign("config_rdma_reply", "align", r.Align)
}

// Settings are the outcome of a negotiation for one side of a connection: what that
// side applies to its transport (see Configurable).
type Settings struct {
	InlineSend  int // largest message this side sends inline (RDMA Send)
	InlineRecv  int // largest message this side must receive inline
	MaxRDMARead int // RDMA Reads this side may have active against its peer; 0: none
	Align       int // alignment for opaque data in calls (client side; 0: none)
	// NoReadTarget: this side announced maxrdmaread 0, so its peer "MUST NOT issue
	// requests which require RDMA Read to satisfy" (seed §6.2): a client that did
	// sends no read chunks, a server that did no reply read chunks.
	NoReadTarget bool
}

// A Configurable connection takes the outcome of a negotiation. The RPC-over-RDMA
// transport implements it on its connections; Settings.Apply calls it.
type Configurable interface {
	// SetInlineThresholds sets the largest message the connection sends inline
	// (send) and the largest it must be ready to receive inline (recv), in bytes.
	// A transport clamps them to what its registered buffers hold.
	SetInlineThresholds(send, recv int)
	// SetMaxRDMARead sets how many RDMA Reads the connection may have active
	// against its peer; a transport clamps it to its ORD.
	SetMaxRDMARead(n int)
}

// A ReadTarget is a Configurable that can stop being the target of its peer's RDMA
// Reads (seed §6.2, maxrdmaread 0); the RPC-over-RDMA transport's connections are.
type ReadTarget interface {
	// SetReadTarget says whether the peer may be asked to RDMA Read from this side.
	SetReadTarget(allowed bool)
}

// An Aligner is a Configurable client connection that can pad opaque data in its calls
// to the server's receive buffer alignment (RDMA_MSGP, seed §3.9); the RPC-over-RDMA
// client transport is one, and pads only when its user opted in.
type Aligner interface {
	// SetMSGPAlign sets the alignment from config_rdma_reply.align; at most 4 (XDR's
	// own) means no padding.
	SetMSGPAlign(align int)
}

// An MSGPAcceptor is a connection that says whether it accepts RDMA_MSGP calls; a
// Service recommends no alignment (DefaultAlign) to one that does not, so that no
// client pads toward a server that would refuse (as Linux does, with ERR_CHUNK).
type MSGPAcceptor interface {
	// AcceptsMSGP reports whether RDMA_MSGP calls are accepted.
	AcceptsMSGP() bool
}

// An InlineBuffered connection says how large a message its registered buffers hold:
// send, the largest it can send inline; recv, the largest it can receive inline. A
// Service announces no larger maxcall_sendsize than recv to one, and NegotiateAndApply
// asks for no more than send and recv. The RPC-over-RDMA transport's connections are.
type InlineBuffered interface {
	// InlineBuffers returns the sizes of the connection's send and receive buffers.
	InlineBuffers() (send, recv int)
}

// Apply hands s to c: the inline thresholds and RDMA Read depth, NoReadTarget when c
// is a ReadTarget, and Align when c is an Aligner.
func (s Settings) Apply(c Configurable) {
	c.SetInlineThresholds(s.InlineSend, s.InlineRecv)
	c.SetMaxRDMARead(s.MaxRDMARead)
	if rt, ok := c.(ReadTarget); ok {
		rt.SetReadTarget(!s.NoReadTarget)
	}
	if a, ok := c.(Aligner); ok {
		a.SetMSGPAlign(s.Align)
	}
}

// ServerSettings returns what a server with limits l applies after answering req:
// it sends replies inline up to the smaller of its MaxReplySendSize and the client's
// maxreply_sendsize, receives calls up to its MaxCallSendSize, and issues at most the
// client's maxrdmaread RDMA Reads (none when it is 0), and sends no reply read chunks
// when l.MaxRDMARead is 0. req and l must be valid.
func ServerSettings(l Limits, req ConfigRDMAReq) Settings {
	return Settings{
		InlineSend:   int(min(l.MaxReplySendSize, req.MaxReplySendSize)),
		InlineRecv:   int(l.MaxCallSendSize),
		MaxRDMARead:  int(req.MaxRDMARead),
		NoReadTarget: l.MaxRDMARead == 0,
	}
}

// ClientSettings returns what a client that asked for want and got reply applies: it
// sends calls inline up to the smaller of what it wanted and what the server accepts,
// receives replies up to its own maxreply_sendsize, issues at most the server's
// maxrdmaread RDMA Reads (none when it is 0), aligns opaque data as the server
// recommends, and sends no read chunks when want.MaxRDMARead is 0. want and reply must
// be valid.
func ClientSettings(want ConfigRDMAReq, reply ConfigRDMAReply) Settings {
	return Settings{
		InlineSend:   int(min(want.MaxCallSendSize, reply.MaxCallSendSize)),
		InlineRecv:   int(want.MaxReplySendSize),
		MaxRDMARead:  int(reply.MaxRDMARead),
		Align:        int(reply.Align),
		NoReadTarget: want.MaxRDMARead == 0,
	}
}

// ServiceOptions configure a Service. The zero value serves DefaultLimits.
type ServiceOptions struct {
	// Limits are announced and enforced (zero value: DefaultLimits()).
	Limits *Limits
	// Logger receives refused requests (control path; CONF_RDMA runs once per
	// connection). Default: no logging.
	Logger hclog.Logger
	// Configured, when set, is called after each valid CONF_RDMA call with the
	// request and the Settings the server side of that connection applies
	// (ServerSettings), after they were applied. req is valid only during the call;
	// req.Conn is the connection.
	Configured func(req *oncrpc.Request, client ConfigRDMAReq, s Settings)
}

// ServiceStats are a Service's cumulative counters.
type ServiceStats struct {
	Null     uint64 // NULL calls
	ConfRDMA uint64 // CONF_RDMA calls answered
	Garbage  uint64 // CONF_RDMA calls answered GARBAGE_ARGS
}

// A Service serves CONFIG_RDMA_PROG version 1 (NULL and CONF_RDMA). It is an
// oncrpc.Handler; Register puts it on a Server.
type Service struct {
	limits     Limits
	log        hclog.Logger
	configured func(*oncrpc.Request, ConfigRDMAReq, Settings)

	null, conf, garbage atomic.Uint64
}

// NewService returns a Service with the given options (nil: defaults). It fails if the
// limits are invalid.
func NewService(opts *ServiceOptions) (*Service, error) {
	s := &Service{limits: DefaultLimits(), log: hclog.NewNullLogger()}
	if opts != nil {
		if opts.Limits != nil {
			s.limits = *opts.Limits
		}
		if opts.Logger != nil {
			s.log = opts.Logger
		}
		s.configured = opts.Configured
	}
	if err := s.limits.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Limits returns the service's limits.
func (s *Service) Limits() Limits { return s.limits }

// Stats returns the service's counters.
func (s *Service) Stats() ServiceStats {
	return ServiceStats{Null: s.null.Load(), ConfRDMA: s.conf.Load(), Garbage: s.garbage.Load()}
}

// Register makes srv serve CONFIG_RDMA_PROG version 1 with s.
func (s *Service) Register(srv *oncrpc.Server) { srv.Register(Program, Version, s) }

// Reply returns the answer to a valid request: the server's maxcall_sendsize, align
// and maxrdmaread. The server announces what it accepts whatever the client asked
// (seed §6.2: it "MAY return a maxcall_sendsize value that is smaller or larger than
// the client's request"); the client takes the smaller.
func (s *Service) Reply(req ConfigRDMAReq) ConfigRDMAReply {
	return ConfigRDMAReply{MaxCallSendSize: s.limits.MaxCallSendSize, Align: s.limits.Align, MaxRDMARead: s.limits.MaxRDMARead}
}

// DecodeCall decodes the arguments of a CONF_RDMA call: exactly one config_rdma_req,
// valid. Errors name the field; a malformed one wraps ErrTruncated or ErrTrailing, an
// invalid one is a *ValueError.
func DecodeCall(args []byte) (ConfigRDMAReq, error) {
	var r ConfigRDMAReq
	n, err := r.DecodeXDR(args)
	if err != nil {
		return ConfigRDMAReq{}, err
	}
	if len(args) > n {
		return ConfigRDMAReq{}, fmt.Errorf("confproto: config_rdma_req: %d bytes after maxrdmaread: %w", len(args)-n, ErrTrailing)
	}
	if err := r.Validate(); err != nil {
		return ConfigRDMAReq{}, err
	}
	return r, nil
}

// ServeRPC implements oncrpc.Handler. NULL answers nothing; CONF_RDMA decodes and
// validates the request, answers the server's limits and applies ServerSettings to
// the connection it arrived on when that is Configurable (an RPC-over-RDMA
// connection; over TCP there is nothing to apply). A malformed or invalid
// request is answered GARBAGE_ARGS (CONF_RDMA has no error result) and logged with
// the field at fault. Other procedures get PROC_UNAVAIL.
func (s *Service) ServeRPC(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	switch req.Header.Proc {
	case ProcNull:
		s.null.Add(1)
		return nil
	case ProcConfRDMA:
	default:
		return oncrpc.ErrProcUnavail
	}
	args := req.Args.Rest()
	creq, err := DecodeCall(args)
	if err != nil {
		s.garbage.Add(1)
		s.log.Warn("CONF_RDMA refused", "remote", addrString(req), "netid", req.Netid, "xid", req.Header.XID, "error", err)
		return fmt.Errorf("%w: %w", oncrpc.ErrGarbageArgs, err)
	}
	// The arguments are consumed (DecodeCall checked that nothing follows).
	_ = req.Args.Skip(len(args))
	reply := s.Reply(creq)
	if m, ok := req.Conn.(MSGPAcceptor); ok && !m.AcceptsMSGP() {
		reply.Align = DefaultAlign
	}
	limits := s.limits
	if b, ok := req.Conn.(InlineBuffered); ok {
		// Never announce calls larger than the receive buffers posted for them.
		_, recv := b.InlineBuffers()
		if recv >= BaseInlineSize && uint32(recv) < reply.MaxCallSendSize {
			reply.MaxCallSendSize = uint32(recv)
			limits.MaxCallSendSize = reply.MaxCallSendSize
		}
	}
	res.Uint32(reply.MaxCallSendSize)
	res.Uint32(reply.Align)
	res.Uint32(reply.MaxRDMARead)
	s.conf.Add(1)
	set := ServerSettings(limits, creq)
	// The reply (12 bytes of results) fits the 1 KiB every connection starts
	// with, so the new thresholds may apply before it is sent.
	if c, ok := req.Conn.(Configurable); ok {
		set.Apply(c)
	}
	if s.configured != nil {
		s.configured(req, creq, set)
	}
	return nil
}

func addrString(req *oncrpc.Request) string {
	if req.RemoteAddr == nil {
		return ""
	}
	return req.RemoteAddr.String()
}
