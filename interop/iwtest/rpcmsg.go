package iwtest

import (
	"encoding/binary"
	"fmt"
)

// Protocol numbers the interop cases use.
const (
	// ProgNFS is the ONC RPC program number of NFS (RFC 1813, RFC 8881).
	ProgNFS = 100003
	// RPCRDMAVersion is the RPC-over-RDMA protocol version (RFC 8166 §4.2).
	RPCRDMAVersion = 1
	// ProcRDMAMsg is the RPC-over-RDMA procedure RDMA_MSG (RFC 8166 §4.2.4).
	ProcRDMAMsg = 0
)

// HeaderError says which field of an RPC-over-RDMA or RPC header was wrong.
type HeaderError struct {
	Field string // e.g. "rpcrdma.vers", "rpc.prog"
	Got   uint64 // the value found (or the length, for "length" fields)
	Want  string // what was expected
}

// Error names the field, the value and the expectation.
func (e *HeaderError) Error() string {
	return fmt.Sprintf("iwtest: %s = %d, want %s", e.Field, e.Got, e.Want)
}

func bad(field string, got uint64, want string) error {
	return &HeaderError{Field: field, Got: got, Want: want}
}

// Call is what ParseCall found in an RDMA_MSG carrying an RPC call.
type Call struct {
	XID     uint32 // transport header XID (equal to the RPC XID)
	Credits uint32 // credits requested
	Prog    uint32 // RPC program
	Vers    uint32 // program version
	Proc    uint32 // procedure
	Flavor  uint32 // credential flavor
	ArgLen  int    // bytes of procedure arguments after the verifier
}

// Reply is what ParseReply found in an RDMA_MSG carrying an RPC reply.
type Reply struct {
	XID        uint32 // transport header XID (equal to the RPC XID)
	Credits    uint32 // credits granted
	ReplyStat  uint32 // 0 = MSG_ACCEPTED
	AcceptStat uint32 // 0 = SUCCESS (only when accepted)
	ResLen     int    // bytes of results after accept_stat
}

type reader struct {
	b   []byte
	off int
}

func (r *reader) u32(field string) (uint32, error) {
	if len(r.b)-r.off < 4 {
		return 0, bad(field+".length", uint64(len(r.b)-r.off), ">= 4 bytes left")
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v, nil
}

func (r *reader) expect(field string, want uint32) (uint32, error) {
	v, err := r.u32(field)
	if err == nil && v != want {
		err = bad(field, uint64(v), fmt.Sprint(want))
	}
	return v, err
}

// opaqueAuth skips an opaque_auth (flavor, length, body up to 400 bytes,
// RFC 5531 §8.2) and returns its flavor.
func (r *reader) opaqueAuth(field string) (uint32, error) {
	fl, err := r.u32(field + ".flavor")
	if err != nil {
		return 0, err
	}
	n, err := r.u32(field + ".length")
	if err != nil {
		return 0, err
	}
	if n > 400 {
		return 0, bad(field+".length", uint64(n), "<= 400")
	}
	padded := int(n+3) &^ 3
	if len(r.b)-r.off < padded {
		return 0, bad(field+".body", uint64(len(r.b)-r.off), fmt.Sprintf(">= %d bytes left", padded))
	}
	r.off += padded
	return fl, nil
}

// header reads the RPC-over-RDMA header of an RDMA_MSG without chunks and
// the RPC XID that must follow it.
func (r *reader) header() (xid, credits uint32, err error) {
	if xid, err = r.u32("rpcrdma.xid"); err != nil {
		return
	}
	if _, err = r.expect("rpcrdma.vers", RPCRDMAVersion); err != nil {
		return
	}
	if credits, err = r.u32("rpcrdma.credits"); err != nil {
		return
	}
	if _, err = r.expect("rpcrdma.proc", ProcRDMAMsg); err != nil {
		return
	}
	for _, f := range []string{"rpcrdma.read_list", "rpcrdma.write_list", "rpcrdma.reply_chunk"} {
		if _, err = r.expect(f, 0); err != nil {
			return
		}
	}
	var rx uint32
	if rx, err = r.u32("rpc.xid"); err == nil && rx != xid {
		err = bad("rpc.xid", uint64(rx), fmt.Sprintf("%d (the rpcrdma.xid)", xid))
	}
	return
}

// ParseCall checks that msg (the payload of one RDMAP Send) is an RDMA_MSG
// with empty chunk lists carrying an ONC RPC version 2 call (RFC 8166 §4.2,
// RFC 5531 §9), and returns its header fields. Errors are *HeaderError.
func ParseCall(msg []byte) (Call, error) {
	r := reader{b: msg}
	var c Call
	var err error
	if c.XID, c.Credits, err = r.header(); err != nil {
		return c, err
	}
	if _, err = r.expect("rpc.msg_type", 0); err != nil {
		return c, err
	}
	if _, err = r.expect("rpc.rpcvers", 2); err != nil {
		return c, err
	}
	if c.Prog, err = r.u32("rpc.prog"); err != nil {
		return c, err
	}
	if c.Vers, err = r.u32("rpc.vers"); err != nil {
		return c, err
	}
	if c.Proc, err = r.u32("rpc.proc"); err != nil {
		return c, err
	}
	if c.Flavor, err = r.opaqueAuth("rpc.cred"); err != nil {
		return c, err
	}
	if _, err = r.opaqueAuth("rpc.verf"); err != nil {
		return c, err
	}
	c.ArgLen = len(msg) - r.off
	return c, nil
}

// ParseReply checks that msg (the payload of one RDMAP Send) is an RDMA_MSG
// with empty chunk lists carrying an ONC RPC reply (RFC 5531 §9), and returns
// its header fields. A denied reply is returned without error (ReplyStat 1);
// callers judge the status. Errors are *HeaderError.
func ParseReply(msg []byte) (Reply, error) {
	r := reader{b: msg}
	var p Reply
	var err error
	if p.XID, p.Credits, err = r.header(); err != nil {
		return p, err
	}
	if _, err = r.expect("rpc.msg_type", 1); err != nil {
		return p, err
	}
	if p.ReplyStat, err = r.u32("rpc.reply_stat"); err != nil {
		return p, err
	}
	switch p.ReplyStat {
	case 0: // MSG_ACCEPTED: verifier, accept_stat
		if _, err = r.opaqueAuth("rpc.verf"); err != nil {
			return p, err
		}
		if p.AcceptStat, err = r.u32("rpc.accept_stat"); err != nil {
			return p, err
		}
	case 1: // MSG_DENIED: reject_stat and its body are left to ResLen
	default:
		return p, bad("rpc.reply_stat", uint64(p.ReplyStat), "0 (MSG_ACCEPTED) or 1 (MSG_DENIED)")
	}
	p.ResLen = len(msg) - r.off
	return p, nil
}

// AppendNullCall appends an RDMA_MSG (no chunks) carrying an RPC NULL call
// (procedure 0, AUTH_NONE) to program prog, version vers, and returns the
// extended slice. It is what the interop cases send to knfsd.
func AppendNullCall(dst []byte, xid, credits, prog, vers uint32) []byte {
	for _, w := range [...]uint32{
		xid, RPCRDMAVersion, credits, ProcRDMAMsg, 0, 0, 0, // RPC-over-RDMA header
		xid, 0, 2, prog, vers, 0, // RPC call header, NULL procedure
		0, 0, // cred: AUTH_NONE, length 0
		0, 0, // verf: AUTH_NONE, length 0
	} {
		dst = binary.BigEndian.AppendUint32(dst, w)
	}
	return dst
}
