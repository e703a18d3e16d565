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

// maxChunkSegments bounds the segment count of one write or reply chunk.
const maxChunkSegments = 256

// chunkLists skips a read list, a write list and a reply chunk (RFC 8166
// §4.2.1), checking only their structure.
func (r *reader) chunkLists() error {
	for { // read list: (1, position, handle, length, offset)* 0
		more, err := r.u32("rpcrdma.read_list")
		if err != nil {
			return err
		}
		if more == 0 {
			break
		}
		if more != 1 {
			return bad("rpcrdma.read_list", uint64(more), "0 or 1 (XDR bool)")
		}
		if err := r.skipWords("rpcrdma.read_segment", 6); err != nil {
			return err
		}
	}
	for { // write list: (1, count, segment*)* 0
		more, err := r.u32("rpcrdma.write_list")
		if err != nil {
			return err
		}
		if more == 0 {
			break
		}
		if more != 1 {
			return bad("rpcrdma.write_list", uint64(more), "0 or 1 (XDR bool)")
		}
		if err := r.chunk("rpcrdma.write_chunk"); err != nil {
			return err
		}
	}
	more, err := r.u32("rpcrdma.reply_chunk")
	switch {
	case err != nil:
		return err
	case more == 1:
		return r.chunk("rpcrdma.reply_chunk")
	case more != 0:
		return bad("rpcrdma.reply_chunk", uint64(more), "0 or 1 (XDR bool)")
	}
	return nil
}

// chunk skips a counted array of segments (handle, length, offset).
func (r *reader) chunk(field string) error {
	n, err := r.u32(field + ".count")
	if err != nil {
		return err
	}
	if n > maxChunkSegments {
		return bad(field+".count", uint64(n), fmt.Sprintf("<= %d", maxChunkSegments))
	}
	return r.skipWords(field+".segment", 4*int(n))
}

func (r *reader) skipWords(field string, n int) error {
	if len(r.b)-r.off < 4*n {
		return bad(field+".length", uint64(len(r.b)-r.off), fmt.Sprintf(">= %d bytes left", 4*n))
	}
	r.off += 4 * n
	return nil
}

// header reads the RPC-over-RDMA header of an RDMA_MSG without chunks (or,
// with chunks set, with any chunk lists) and the RPC XID that must follow it.
func (r *reader) header(chunks bool) (xid, credits uint32, err error) {
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
	if chunks {
		if err = r.chunkLists(); err != nil {
			return
		}
	} else {
		for _, f := range []string{"rpcrdma.read_list", "rpcrdma.write_list", "rpcrdma.reply_chunk"} {
			if _, err = r.expect(f, 0); err != nil {
				return
			}
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
func ParseCall(msg []byte) (Call, error) { return parseCall(msg, false) }

// ParseCallChunks is ParseCall for an RDMA_MSG that may carry chunk lists (a
// read list, write chunks, a reply chunk): they are checked for structure
// and skipped. ArgLen counts the inline argument bytes only.
func ParseCallChunks(msg []byte) (Call, error) { return parseCall(msg, true) }

func parseCall(msg []byte, chunks bool) (Call, error) {
	r := reader{b: msg}
	var c Call
	var err error
	if c.XID, c.Credits, err = r.header(chunks); err != nil {
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
	if p.XID, p.Credits, err = r.header(false); err != nil {
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

// AppendNullReply appends an RDMA_MSG (no chunks) granting credits and
// carrying a successful RPC reply with no results (MSG_ACCEPTED, AUTH_NONE
// verifier, SUCCESS), the answer to a NULL call, and returns the extended
// slice.
func AppendNullReply(dst []byte, xid, credits uint32) []byte {
	for _, w := range [...]uint32{
		xid, RPCRDMAVersion, credits, ProcRDMAMsg, 0, 0, 0, // RPC-over-RDMA header
		xid, 1, 0, // REPLY, MSG_ACCEPTED
		0, 0, // verf: AUTH_NONE, length 0
		0, // SUCCESS
	} {
		dst = binary.BigEndian.AppendUint32(dst, w)
	}
	return dst
}
