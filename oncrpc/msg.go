package oncrpc

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// RPC message layout (RFC 5531 §9):
//
//	struct rpc_msg {
//	    unsigned int xid;
//	    union switch (msg_type mtype) {       CALL = 0, REPLY = 1
//	    case CALL:  call_body cbody;
//	    case REPLY: reply_body rbody;
//	    } body;
//	};
//
//	struct call_body {
//	    unsigned int rpcvers;                 must be 2
//	    unsigned int prog, vers, proc;
//	    opaque_auth  cred;
//	    opaque_auth  verf;
//	    /* procedure-specific parameters start here */
//	};
//
//	union reply_body switch (reply_stat stat) {   MSG_ACCEPTED = 0, MSG_DENIED = 1
//	case MSG_ACCEPTED: accepted_reply areply;
//	case MSG_DENIED:   rejected_reply rreply;
//	};
//
//	struct accepted_reply {
//	    opaque_auth verf;
//	    union switch (accept_stat stat) {
//	    case SUCCESS:      opaque results[0];  /* procedure-specific results start here */
//	    case PROG_MISMATCH: struct { unsigned int low; unsigned int high; } mismatch_info;
//	    default:           void;           /* PROG_UNAVAIL, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR */
//	    } reply_data;
//	};
//
//	union rejected_reply switch (reject_stat stat) {
//	case RPC_MISMATCH: struct { unsigned int low; unsigned int high; } mismatch_info;
//	case AUTH_ERROR:   auth_stat stat;
//	};

// RPCVersion is the only ONC RPC protocol version (RFC 5531 §8).
const RPCVersion = 2

// MsgType is the msg_type discriminant of an RPC message.
type MsgType uint32

// Message types.
const (
	Call  MsgType = 0
	Reply MsgType = 1
)

func (t MsgType) String() string {
	switch t {
	case Call:
		return "CALL"
	case Reply:
		return "REPLY"
	}
	return fmt.Sprintf("msg_type(%d)", uint32(t))
}

// ReplyStat says whether a call was accepted (reply_stat).
type ReplyStat uint32

// Reply statuses.
const (
	MsgAccepted ReplyStat = 0
	MsgDenied   ReplyStat = 1
)

func (s ReplyStat) String() string {
	switch s {
	case MsgAccepted:
		return "MSG_ACCEPTED"
	case MsgDenied:
		return "MSG_DENIED"
	}
	return fmt.Sprintf("reply_stat(%d)", uint32(s))
}

// AcceptStat is the status of an accepted call (accept_stat).
type AcceptStat uint32

// Accept statuses.
const (
	Success      AcceptStat = 0 // RPC executed successfully
	ProgUnavail  AcceptStat = 1 // remote hasn't exported the program
	ProgMismatch AcceptStat = 2 // remote can't support the version number
	ProcUnavail  AcceptStat = 3 // program can't support the procedure
	GarbageArgs  AcceptStat = 4 // procedure can't decode the arguments
	SystemErr    AcceptStat = 5 // e.g. memory allocation failure
)

var acceptStatNames = [...]string{"SUCCESS", "PROG_UNAVAIL", "PROG_MISMATCH", "PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR"}

func (s AcceptStat) String() string {
	if int(s) < len(acceptStatNames) {
		return acceptStatNames[s]
	}
	return fmt.Sprintf("accept_stat(%d)", uint32(s))
}

// RejectStat is the reason a call was denied (reject_stat).
type RejectStat uint32

// Reject statuses.
const (
	RPCMismatch RejectStat = 0 // RPC version number is not 2
	AuthError   RejectStat = 1 // remote can't authenticate the caller
)

func (s RejectStat) String() string {
	switch s {
	case RPCMismatch:
		return "RPC_MISMATCH"
	case AuthError:
		return "AUTH_ERROR"
	}
	return fmt.Sprintf("reject_stat(%d)", uint32(s))
}

// AuthStat is why authentication failed (auth_stat, RFC 5531 §9 and the RPCSEC_GSS values).
type AuthStat uint32

// Authentication statuses.
const (
	AuthOK               AuthStat = 0  // success
	AuthBadCred          AuthStat = 1  // bad credential (seal broken)
	AuthRejectedCred     AuthStat = 2  // client must begin a new session
	AuthBadVerf          AuthStat = 3  // bad verifier (seal broken)
	AuthRejectedVerf     AuthStat = 4  // verifier expired or replayed
	AuthTooWeak          AuthStat = 5  // rejected for security reasons
	AuthInvalidResp      AuthStat = 6  // bogus response verifier
	AuthFailed           AuthStat = 7  // reason unknown
	AuthKerbGeneric      AuthStat = 8  // kerberos generic error
	AuthTimeExpire       AuthStat = 9  // time of credential expired
	AuthTktFile          AuthStat = 10 // problem with ticket file
	AuthDecode           AuthStat = 11 // can't decode authenticator
	AuthNetAddr          AuthStat = 12 // wrong net address in ticket
	RPCSecGSSCredProblem AuthStat = 13 // no credentials for user
	RPCSecGSSCtxProblem  AuthStat = 14 // problem with context
)

var authStatNames = [...]string{"AUTH_OK", "AUTH_BADCRED", "AUTH_REJECTEDCRED", "AUTH_BADVERF",
	"AUTH_REJECTEDVERF", "AUTH_TOOWEAK", "AUTH_INVALIDRESP", "AUTH_FAILED", "AUTH_KERB_GENERIC",
	"AUTH_TIMEEXPIRE", "AUTH_TKTFILE", "AUTH_DECODE", "AUTH_NET_ADDR",
	"RPCSEC_GSS_CREDPROBLEM", "RPCSEC_GSS_CTXPROBLEM"}

func (s AuthStat) String() string {
	if int(s) < len(authStatNames) {
		return authStatNames[s]
	}
	return fmt.Sprintf("auth_stat(%d)", uint32(s))
}

// Sentinel causes carried by a *HeaderError; test with errors.Is.
var (
	// ErrNotCall means a message expected to be a CALL has another msg_type.
	ErrNotCall = errors.New("message is not a CALL")
	// ErrNotReply means a message expected to be a REPLY has another msg_type.
	ErrNotReply = errors.New("message is not a REPLY")
	// ErrRPCVersion means a call's rpcvers is not 2; a server answers RPC_MISMATCH.
	ErrRPCVersion = errors.New("rpcvers is not 2")
	// ErrBadDiscriminant means a union discriminant (reply_stat, accept_stat,
	// reject_stat) has a value the RFC does not define.
	ErrBadDiscriminant = errors.New("undefined union discriminant")
)

// A HeaderError reports a malformed RPC call or reply header and names the field.
type HeaderError struct {
	Msg   string // "call" or "reply"
	Field string // RFC 5531 field name, e.g. "rpcvers", "cred.body", "accept_stat"
	Value uint32 // offending value when Err is ErrNotCall, ErrRPCVersion, ...
	Err   error  // a sentinel above or an *xdr.DecodeError
}

func (e *HeaderError) Error() string {
	var de *xdr.DecodeError
	if errors.As(e.Err, &de) {
		return fmt.Sprintf("oncrpc: %s header %s: %v", e.Msg, e.Field, e.Err)
	}
	return fmt.Sprintf("oncrpc: %s header %s = %d: %v", e.Msg, e.Field, e.Value, e.Err)
}

func (e *HeaderError) Unwrap() error { return e.Err }

func callErr(field string, v uint32, err error) error {
	return &HeaderError{Msg: "call", Field: field, Value: v, Err: err}
}

func replyErr(field string, v uint32, err error) error {
	return &HeaderError{Msg: "reply", Field: field, Value: v, Err: err}
}

// CallHeader is the header of a CALL message: everything before the procedure's
// arguments. Decoding fills it in place; Cred.Body and Verf.Body alias the decoded
// buffer.
type CallHeader struct {
	XID     uint32
	RPCVers uint32 // set to RPCVersion by AppendCall
	Prog    uint32
	Vers    uint32
	Proc    uint32
	Cred    OpaqueAuth
	Verf    OpaqueAuth
}

// Append appends the encoded header (rpcvers is always written as 2) to b.
func (h *CallHeader) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, h.XID)
	b = xdr.AppendUint32(b, uint32(Call))
	b = xdr.AppendUint32(b, RPCVersion)
	b = xdr.AppendUint32(b, h.Prog)
	b = xdr.AppendUint32(b, h.Vers)
	b = xdr.AppendUint32(b, h.Proc)
	b = h.Cred.Append(b)
	return h.Verf.Append(b)
}

// EncodeXDR encodes the header (see Append).
func (h *CallHeader) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(h.XID)
	e.Uint32(uint32(Call))
	e.Uint32(RPCVersion)
	e.Uint32(h.Prog)
	e.Uint32(h.Vers)
	e.Uint32(h.Proc)
	h.Cred.EncodeXDR(e)
	h.Verf.EncodeXDR(e)
}

// DecodeXDR decodes a call header, leaving d at the first argument byte. On error h
// holds what was decoded before the bad field: a server uses XID to answer a
// well-framed but bad call. When rpcvers is not 2 decoding stops there and the error
// wraps ErrRPCVersion (answer RPC_MISMATCH). A bad credential or verifier yields an
// error whose Field begins with "cred" or "verf" (answer AUTH_BADCRED/AUTH_BADVERF).
func (h *CallHeader) DecodeXDR(d *xdr.Decoder) error {
	var err error
	if h.XID, err = d.Uint32(); err != nil {
		return callErr("xid", 0, err)
	}
	mt, err := d.Uint32()
	if err != nil {
		return callErr("msg_type", 0, err)
	}
	if MsgType(mt) != Call {
		return callErr("msg_type", mt, ErrNotCall)
	}
	if h.RPCVers, err = d.Uint32(); err != nil {
		return callErr("rpcvers", 0, err)
	}
	if h.RPCVers != RPCVersion {
		return callErr("rpcvers", h.RPCVers, ErrRPCVersion)
	}
	if h.Prog, err = d.Uint32(); err != nil {
		return callErr("prog", 0, err)
	}
	if h.Vers, err = d.Uint32(); err != nil {
		return callErr("vers", 0, err)
	}
	if h.Proc, err = d.Uint32(); err != nil {
		return callErr("proc", 0, err)
	}
	if field, err := h.Cred.decode(d, "cred"); err != nil {
		return callErr(field, 0, err)
	}
	if field, err := h.Verf.decode(d, "verf"); err != nil {
		return callErr(field, 0, err)
	}
	return nil
}

// ReplyHeader is the header of a REPLY message: everything before the procedure's
// results. Which fields are meaningful depends on Stat, AcceptStat and RejectStat; Low
// and High carry mismatch_info for PROG_MISMATCH and RPC_MISMATCH.
type ReplyHeader struct {
	XID        uint32
	Stat       ReplyStat
	Verf       OpaqueAuth // MSG_ACCEPTED only
	AcceptStat AcceptStat // MSG_ACCEPTED only
	RejectStat RejectStat // MSG_DENIED only
	AuthStat   AuthStat   // MSG_DENIED with AUTH_ERROR only
	Low, High  uint32     // PROG_MISMATCH or RPC_MISMATCH
}

// Append appends the encoded header to b. Fields that Stat and the status do not select
// are not written.
func (h *ReplyHeader) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, h.XID)
	b = xdr.AppendUint32(b, uint32(Reply))
	b = xdr.AppendUint32(b, uint32(h.Stat))
	if h.Stat == MsgAccepted {
		b = h.Verf.Append(b)
		b = xdr.AppendUint32(b, uint32(h.AcceptStat))
		if h.AcceptStat == ProgMismatch {
			b = xdr.AppendUint32(b, h.Low)
			b = xdr.AppendUint32(b, h.High)
		}
		return b
	}
	b = xdr.AppendUint32(b, uint32(h.RejectStat))
	if h.RejectStat == RPCMismatch {
		b = xdr.AppendUint32(b, h.Low)
		return xdr.AppendUint32(b, h.High)
	}
	return xdr.AppendUint32(b, uint32(h.AuthStat))
}

// EncodeXDR encodes the header (see Append).
func (h *ReplyHeader) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(h.XID)
	e.Uint32(uint32(Reply))
	e.Uint32(uint32(h.Stat))
	if h.Stat == MsgAccepted {
		h.Verf.EncodeXDR(e)
		e.Uint32(uint32(h.AcceptStat))
		if h.AcceptStat == ProgMismatch {
			e.Uint32(h.Low)
			e.Uint32(h.High)
		}
		return
	}
	e.Uint32(uint32(h.RejectStat))
	if h.RejectStat == RPCMismatch {
		e.Uint32(h.Low)
		e.Uint32(h.High)
		return
	}
	e.Uint32(uint32(h.AuthStat))
}

// DecodeXDR decodes a reply header, leaving d at the first result byte (meaningful
// only for MSG_ACCEPTED/SUCCESS). Unknown reply_stat, accept_stat or reject_stat
// values are errors; an unknown auth_stat is carried as is.
func (h *ReplyHeader) DecodeXDR(d *xdr.Decoder) error {
	var err error
	*h = ReplyHeader{}
	if h.XID, err = d.Uint32(); err != nil {
		return replyErr("xid", 0, err)
	}
	mt, err := d.Uint32()
	if err != nil {
		return replyErr("msg_type", 0, err)
	}
	if MsgType(mt) != Reply {
		return replyErr("msg_type", mt, ErrNotReply)
	}
	v, err := d.Uint32()
	if err != nil {
		return replyErr("reply_stat", 0, err)
	}
	h.Stat = ReplyStat(v)
	switch h.Stat {
	case MsgAccepted:
		if field, err := h.Verf.decode(d, "verf"); err != nil {
			return replyErr(field, 0, err)
		}
		if v, err = d.Uint32(); err != nil {
			return replyErr("accept_stat", 0, err)
		}
		h.AcceptStat = AcceptStat(v)
		switch h.AcceptStat {
		case Success, ProgUnavail, ProcUnavail, GarbageArgs, SystemErr:
		case ProgMismatch:
			if h.Low, err = d.Uint32(); err != nil {
				return replyErr("mismatch_info.low", 0, err)
			}
			if h.High, err = d.Uint32(); err != nil {
				return replyErr("mismatch_info.high", 0, err)
			}
		default:
			return replyErr("accept_stat", v, ErrBadDiscriminant)
		}
	case MsgDenied:
		if v, err = d.Uint32(); err != nil {
			return replyErr("reject_stat", 0, err)
		}
		h.RejectStat = RejectStat(v)
		switch h.RejectStat {
		case RPCMismatch:
			if h.Low, err = d.Uint32(); err != nil {
				return replyErr("mismatch_info.low", 0, err)
			}
			if h.High, err = d.Uint32(); err != nil {
				return replyErr("mismatch_info.high", 0, err)
			}
		case AuthError:
			if v, err = d.Uint32(); err != nil {
				return replyErr("auth_stat", 0, err)
			}
			h.AuthStat = AuthStat(v)
		default:
			return replyErr("reject_stat", v, ErrBadDiscriminant)
		}
	default:
		return replyErr("reply_stat", v, ErrBadDiscriminant)
	}
	return nil
}

// Err returns nil for MSG_ACCEPTED/SUCCESS, an *AcceptError for any other accepted
// status and a *RejectError for MSG_DENIED.
func (h *ReplyHeader) Err() error {
	if h.Stat == MsgAccepted {
		if h.AcceptStat == Success {
			return nil
		}
		return &AcceptError{Stat: h.AcceptStat, Low: h.Low, High: h.High}
	}
	return &RejectError{Stat: h.RejectStat, Low: h.Low, High: h.High, AuthStat: h.AuthStat}
}

// An AcceptError is a reply that the server accepted but could not execute: its
// accept_stat, and for PROG_MISMATCH the lowest and highest versions supported.
type AcceptError struct {
	Stat      AcceptStat
	Low, High uint32
}

func (e *AcceptError) Error() string {
	if e.Stat == ProgMismatch {
		return fmt.Sprintf("oncrpc: call accepted, %v (versions %d..%d supported)", e.Stat, e.Low, e.High)
	}
	return fmt.Sprintf("oncrpc: call accepted, %v", e.Stat)
}

// A RejectError is a MSG_DENIED reply: RPC_MISMATCH with the supported RPC version
// range, or AUTH_ERROR with its auth_stat.
type RejectError struct {
	Stat      RejectStat
	Low, High uint32   // RPC_MISMATCH
	AuthStat  AuthStat // AUTH_ERROR
}

func (e *RejectError) Error() string {
	if e.Stat == RPCMismatch {
		return fmt.Sprintf("oncrpc: call denied, RPC_MISMATCH (versions %d..%d supported)", e.Low, e.High)
	}
	return fmt.Sprintf("oncrpc: call denied, %v: %v", e.Stat, e.AuthStat)
}
