package verbs

import "strconv"

// SGE is a scatter/gather entry: Length bytes of a local MR starting at Offset.
// See the package comment for how it maps onto ibverbs' {lkey, addr, length}.
type SGE struct {
	MR     MR
	Offset int
	Length int
}

// SendOp is the operation of a send-queue work request.
type SendOp uint8

// Send-queue operations (RFC 5040 §4 message types).
const (
	// OpSend sends the SGL to the peer's next posted receive.
	OpSend SendOp = iota + 1
	// OpSendInv is Send with Invalidate: the peer invalidates InvalidateSTag
	// (one of its own STags) before reporting the receive.
	OpSendInv
	// OpWrite RDMA-Writes the SGL to the peer's (RemoteSTag, RemoteTO).
	OpWrite
	// OpRead RDMA-Reads Length(SGL) bytes from the peer's (RemoteSTag,
	// RemoteTO) into the single SGE of the SGL (iWARP allows one sink SGE).
	OpRead
)

// String names the operation.
func (o SendOp) String() string {
	switch o {
	case OpSend:
		return "Send"
	case OpSendInv:
		return "SendInv"
	case OpWrite:
		return "Write"
	case OpRead:
		return "Read"
	}
	return "SendOp(" + strconv.Itoa(int(o)) + ")"
}

// SendFlags modify a send-queue work request.
type SendFlags uint8

// Send flags.
const (
	// Signaled requests a Completion when the request completes successfully.
	// Failed and flushed requests always complete.
	Signaled SendFlags = 1 << iota
	// Solicited sets the Solicited Event bit on a Send or Send with Invalidate
	// (RDMAP Send with SE, Send with SE and Invalidate).
	Solicited
)

// SendWR is a send-queue work request.
type SendWR struct {
	// ID is returned in the Completion.
	ID uint64
	// Op is the operation.
	Op SendOp
	// Flags are Signaled and Solicited.
	Flags SendFlags
	// SGL is the local memory: the data source for Send/Write, the sink for
	// Read (exactly one SGE with AccessLocalWrite).
	SGL []SGE
	// RemoteSTag and RemoteTO name the peer's memory for Write and Read.
	RemoteSTag uint32
	RemoteTO   uint64
	// InvalidateSTag is the peer STag a Send with Invalidate invalidates.
	InvalidateSTag uint32
	// Next chains another request behind this one (ibv_send_wr.next):
	// PostSend posts the whole chain as one batch (see QP.PostSend). Nil
	// ends the chain.
	Next *SendWR
}

// MaxChain is the longest chain of send work requests (SendWR.Next) one
// PostSend accepts.
const MaxChain = 64

// RecvWR is a receive-queue work request.
type RecvWR struct {
	// ID is returned in the Completion.
	ID uint64
	// SGL is where the received message is placed (AccessLocalWrite).
	SGL []SGE
}

// Opcode is the operation a Completion reports.
type Opcode uint8

// Completion opcodes.
const (
	OpcodeSend Opcode = iota + 1
	OpcodeWrite
	OpcodeRead
	OpcodeRecv
)

// String names the opcode.
func (o Opcode) String() string {
	switch o {
	case OpcodeSend:
		return "Send"
	case OpcodeWrite:
		return "Write"
	case OpcodeRead:
		return "Read"
	case OpcodeRecv:
		return "Recv"
	}
	return "Opcode(" + strconv.Itoa(int(o)) + ")"
}

// Status is a completion status (ibv_wc_status).
type Status uint8

// Completion statuses.
const (
	// StatusSuccess: the work request completed.
	StatusSuccess Status = iota
	// StatusFlushed: the QP entered the error state before the request
	// completed.
	StatusFlushed
	// StatusLocalLength: a receive buffer was too small for the message.
	StatusLocalLength
	// StatusLocalProtection: a local SGE named an invalid MR or range, or
	// lacked AccessLocalWrite.
	StatusLocalProtection
	// StatusRemoteAccess: the peer refused the remote STag/TO (Terminate
	// received for this request).
	StatusRemoteAccess
	// StatusRemoteInvalidate: a received Send with Invalidate named an STag
	// that could not be invalidated.
	StatusRemoteInvalidate
	// StatusFatal: the QP failed while this request was being processed
	// (protocol error, Terminate, connection loss).
	StatusFatal
)

// String names the status.
func (s Status) String() string {
	switch s {
	case StatusSuccess:
		return "Success"
	case StatusFlushed:
		return "Flushed"
	case StatusLocalLength:
		return "LocalLength"
	case StatusLocalProtection:
		return "LocalProtection"
	case StatusRemoteAccess:
		return "RemoteAccess"
	case StatusRemoteInvalidate:
		return "RemoteInvalidate"
	case StatusFatal:
		return "Fatal"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// CompletionFlags qualify a receive Completion.
type CompletionFlags uint8

// Completion flags.
const (
	// WithInvalidate: the message was a Send with Invalidate and
	// InvalidatedSTag has been invalidated.
	WithInvalidate CompletionFlags = 1 << iota
	// SolicitedEvent: the message carried the Solicited Event bit.
	SolicitedEvent
)

// Completion is one work completion (ibv_wc).
type Completion struct {
	// ID is the work request's ID.
	ID uint64
	// QP is the queue pair the request was posted on.
	QP QP
	// Opcode is the operation.
	Opcode Opcode
	// Status is the outcome; Err gives detail when it is not StatusSuccess.
	Status Status
	// Flags qualify receives.
	Flags CompletionFlags
	// ByteLen is the number of bytes received (receives) or read (reads).
	ByteLen int
	// InvalidatedSTag is the STag a Send with Invalidate invalidated.
	InvalidatedSTag uint32
	// Err is the reason for a failed or flushed request, or nil.
	Err error
}
