package linuxnfs

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// msg builds big-endian words.
func msg(words ...uint32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// rpcCall is an RPC call header for NFSv3 proc with an AUTH_SYS credential of
// credLen bytes and an AUTH_NONE verifier.
func rpcCall(xid, proc, credLen uint32) []byte {
	return cat(msg(xid, 0, 2, ProgNFS, 3, proc, 1, credLen), make([]byte, credLen), msg(0, 0))
}

// The Linux client's NFSv3 WRITE of 8192 bytes: RDMA_MSG, one read segment at XDR
// position 148 (after the inline WRITE arguments), empty write list, no reply chunk.
var linuxWrite = cat(msg(0x10, 1, 128, ProcMsg,
	1, 148, 0x1234, 8192, 0, 0x1000, 0,
	0, 0), rpcCall(0x10, NFSProcWrite, 24), make([]byte, 64))

// A READ call offering one write chunk of two segments and no reply chunk.
var readCall = cat(msg(0x11, 1, 128, ProcMsg, 0,
	1, 2, 0x55, 65536, 0, 0, 0x56, 4, 0, 0, 0,
	0), rpcCall(0x11, NFSProcRead, 0), make([]byte, 12))

// A READDIRPLUS call offering a reply chunk of one 32 KiB segment.
var readdirplusCall = cat(msg(0x12, 1, 128, ProcMsg, 0, 0,
	1, 1, 0x77, 32768, 0, 0), rpcCall(0x12, NFSProcReaddirPlus, 0), make([]byte, 20))

// The server's RDMA_NOMSG reply to it: 9000 bytes were written into the reply chunk.
var readdirplusReply = msg(0x12, 1, 64, ProcNoMsg, 0, 0, 1, 1, 0x77, 9000, 0, 0)

// The server's RDMA_MSG reply to readCall: the write chunk's lengths echoed (4093
// bytes placed, no pad), RPC reply inline.
var readReply = cat(msg(0x11, 1, 64, ProcMsg, 0,
	1, 1, 0x55, 4093, 0, 0,
	0, 0), msg(0x11, 1, 0, 0, 0, 0), make([]byte, 100))

// rpcCall4 is an RPC call header for the NFSv4 COMPOUND procedure with a 24-byte
// AUTH_SYS credential and an AUTH_NONE verifier.
func rpcCall4(xid uint32) []byte {
	return cat(msg(xid, 0, 2, ProgNFS, 4, NFS4ProcCompound, 1, 24), make([]byte, 24), msg(0, 0))
}

// compound4 is COMPOUND4args with an empty tag, minor version 1 and ops, each an
// operation number followed by its arguments.
func compound4(ops ...[]byte) []byte {
	return cat(msg(0, 1, uint32(len(ops))), cat(ops...))
}

var (
	seq4   = cat(msg(NFS4OpSequence), make([]byte, 16), msg(7, 0, 0, 0)) // SEQUENCE
	putfh4 = cat(msg(NFS4OpPutFH, 20), make([]byte, 20))                 // PUTFH of a 20-byte handle
	// READ: stateid, offset, count.
	read4 = cat(msg(NFS4OpRead), make([]byte, 16), msg(0, 0, 131072))
)

// The Linux client's NFSv4.1 READ: SEQUENCE, PUTFH, READ, offering a write chunk.
var read4Call = cat(msg(0x21, 1, 128, ProcMsg, 0,
	1, 1, 0x66, 131072, 0, 0,
	0, 0), rpcCall4(0x21), compound4(seq4, putfh4, read4))

// Its NFSv4.1 WRITE: SEQUENCE, PUTFH, WRITE, GETATTR with the data in a read chunk at
// the position of WRITE4args.data (the inline part stops before it).
var write4Call = cat(msg(0x22, 1, 128, ProcMsg,
	1, 200, 0x67, 131072, 0, 0, 0,
	0, 0), rpcCall4(0x22), compound4(seq4, putfh4, cat(msg(NFS4OpWrite), make([]byte, 16), msg(0, 0, 2, 131072))))

// A READDIR compound offering a reply chunk, and a compound of SEQUENCE alone (a
// lease renewal).
var (
	readdir4Call = cat(msg(0x23, 1, 128, ProcMsg, 0, 0,
		1, 1, 0x68, 32768, 0, 0), rpcCall4(0x23), compound4(seq4, putfh4, msg(NFS4OpReaddir, 0, 0, 0, 0, 8192, 32768, 0)))
	seq4Call = cat(msg(0x24, 1, 128, ProcMsg, 0, 0, 0), rpcCall4(0x24), compound4(seq4))
)

func TestParseCompound(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		op   uint32
	}{
		{"READ", read4Call, NFS4OpRead},
		{"WRITE", write4Call, NFS4OpWrite},
		{"READDIR", readdir4Call, NFS4OpReaddir},
		{"SEQUENCE alone", seq4Call, NFS4OpSequence},
		{"PUTROOTFH GETFH GETATTR", cat(msg(0x25, 1, 128, ProcMsg, 0, 0, 0), rpcCall4(0x25),
			compound4(seq4, msg(NFS4OpPutRootFH), msg(NFS4OpGetFH), msg(9, 1, 0x10))), 9},
	} {
		h, err := Parse(tc.msg)
		if err != nil || !h.HasRPC || !h.IsCall || h.RPCVers != 4 || h.RPCProc != NFS4ProcCompound || !h.HasNFS4Op || h.NFS4Op != tc.op {
			t.Errorf("%s: %+v, %v; want operation %d", tc.name, h, err, tc.op)
		}
	}
	if h, err := Parse(linuxWrite); err != nil || h.HasNFS4Op {
		t.Errorf("an NFSv3 call has no NFSv4 operation: %+v, %v", h, err)
	}
}

func TestParse(t *testing.T) {
	h, err := Parse(linuxWrite)
	if err != nil {
		t.Fatal(err)
	}
	if h.XID != 0x10 || h.Credits != 128 || h.Proc != ProcMsg || h.ReadSegs != 1 || h.ReadZero ||
		h.ReadPosBytes != 8192 || h.ReadBytes != 8192 || h.WriteChunks != 0 || h.ReplyChunk {
		t.Errorf("WRITE header: %+v", h)
	}
	if !h.HasRPC || !h.IsCall || h.RPCXID != 0x10 || h.Prog != ProgNFS || h.RPCVers != 3 || h.RPCProc != NFSProcWrite {
		t.Errorf("WRITE RPC: %+v", h)
	}
	if h, err = Parse(readCall); err != nil || h.WriteChunks != 1 || h.WriteSegs != 2 || h.WriteBytes != 65540 || h.RPCProc != NFSProcRead {
		t.Errorf("READ call: %+v, %v", h, err)
	}
	if h, err = Parse(readdirplusCall); err != nil || !h.ReplyChunk || h.ReplySegs != 1 || h.ReplyBytes != 32768 || h.RPCProc != NFSProcReaddirPlus {
		t.Errorf("READDIRPLUS call: %+v, %v", h, err)
	}
	if h, err = Parse(readdirplusReply); err != nil || h.Proc != ProcNoMsg || h.HasRPC || h.ReplyBytes != 9000 || h.InlineLen != 0 {
		t.Errorf("READDIRPLUS reply: %+v, %v", h, err)
	}
	if h, err = Parse(readReply); err != nil || !h.HasRPC || h.IsCall || h.WriteBytes != 4093 || h.Credits != 64 {
		t.Errorf("READ reply: %+v, %v", h, err)
	}
	long := msg(0x13, 1, 128, ProcNoMsg, 1, 0, 0x99, 5000, 0, 0, 0, 0, 0)
	if h, err = Parse(long); err != nil || !h.ReadZero || h.ReadPosBytes != 0 || h.ReadBytes != 5000 || h.HasRPC {
		t.Errorf("long call: %+v, %v", h, err)
	}
	if h, err = Parse(msg(0x14, 1, 64, ProcDone)); err != nil || h.Proc != ProcDone {
		t.Errorf("RDMA_DONE: %+v, %v", h, err)
	}
	if h, err = Parse(msg(0x15, 1, 64, ProcError, 2)); err != nil || h.Proc != ProcError || h.InlineLen != 4 {
		t.Errorf("RDMA_ERROR: %+v, %v", h, err)
	}
	// Draft §3.9: RDMA_MSGP pads inside the XDR stream, before the data of opaques at
	// or above rdma_thresh; the RPC message follows the header at once.
	msgp := cat(msg(0x16, 1, 64, ProcMsgp, 64, 1024, 0, 0, 0), msg(0x16, 0, 2, ProgNFS, 3, NFSProcWrite, 0, 0, 0, 0))
	if h, err = Parse(msgp); err != nil || h.Proc != ProcMsgp || !h.HasRPC || !h.IsCall || h.RPCXID != 0x16 || h.RPCProc != NFSProcWrite {
		t.Errorf("RDMA_MSGP: %+v, %v", h, err)
	}
}

// badMessages holds one message per validation rule of Parse, with the field its
// error must name.
var badMessages = []struct {
	field string
	msg   []byte
}{
	{"xid", []byte{1, 2}},
	{"vers", msg(1, 2, 0, 0)},
	{"credits", msg(1, 1)},
	{"proc", msg(1, 1, 1)},
	{"proc", msg(1, 1, 1, 5)},
	{"msgp.align", msg(1, 1, 1, ProcMsgp)},
	{"msgp.thresh", msg(1, 1, 1, ProcMsgp, 4)},
	{"read_list", msg(1, 1, 1, ProcMsg)},
	{"read_list", msg(1, 1, 1, ProcMsg, 2)},
	{"read_list.position", msg(1, 1, 1, ProcMsg, 1)},
	{"read_list.segment.handle", msg(1, 1, 1, ProcMsg, 1, 0)},
	{"read_list.segment.length", msg(1, 1, 1, ProcMsg, 1, 0, 7)},
	{"read_list.segment.offset", msg(1, 1, 1, ProcMsg, 1, 0, 7, 8)},
	{"write_list", msg(1, 1, 1, ProcMsg, 0)},
	{"write_list.chunk.count", msg(1, 1, 1, ProcMsg, 0, 1)},
	{"write_list.chunk.count", msg(1, 1, 1, ProcMsg, 0, 1, 1000000)},
	{"reply_chunk", msg(1, 1, 1, ProcMsg, 0, 0)},
	{"reply_chunk", msg(1, 1, 1, ProcMsg, 0, 0, 9)},
	{"reply_chunk.count", msg(1, 1, 1, ProcMsg, 0, 0, 1, 2, 0, 0, 0, 0)},
	{"rpc.xid", msg(1, 1, 1, ProcMsg, 0, 0, 0)},
	{"rpc.mtype", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1)},
	{"rpc.mtype", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 2)},
	{"rpc.rpcvers", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 3)},
	{"rpc.prog", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2)},
	{"rpc.vers", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS)},
	{"rpc.proc", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS, 3)},
	{"rpc.cred.flavor", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS, 3, 0)},
	{"rpc.cred.length", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS, 3, 0, 1)},
	{"rpc.cred.length", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS, 3, 0, 1, 401)},
	{"rpc.cred.length", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS, 3, 0, 1, 8, 0)},
	{"rpc.verf.flavor", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS, 3, 0, 0, 0)},
	{"rpc.verf.length", msg(1, 1, 1, ProcMsg, 0, 0, 0, 1, 0, 2, ProgNFS, 3, 0, 0, 0, 0, 4)},
	{"compound.tag.length", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1))},
	{"compound.tag.length", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(9, 0))},
	{"compound.minorversion", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0))},
	{"compound.numops", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1))},
	{"compound.numops", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1, 0, 53))},
	{"compound.numops", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1, 1000, 53))},
	{"compound.argop", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1, 2, NFS4OpPutFH, 0))},
	{"compound.sequence", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1, 1, NFS4OpSequence, 0, 0, 0))},
	{"compound.putfh.length", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1, 1, NFS4OpPutFH))},
	{"compound.putfh.length", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1, 1, NFS4OpPutFH, 129), make([]byte, 132))},
	{"compound.putfh.length", cat(msg(1, 1, 1, ProcMsg, 0, 0, 0), rpcCall4(1), msg(0, 1, 1, NFS4OpPutFH, 20), make([]byte, 16))},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range badMessages {
		_, err := Parse(tc.msg)
		var he *HeaderError
		if !errors.As(err, &he) {
			t.Errorf("% x: error %v, want a *HeaderError naming %s", tc.msg, err, tc.field)
			continue
		}
		if he.Field != tc.field {
			t.Errorf("% x: error names %q (%v), want %q", tc.msg, he.Field, err, tc.field)
		}
		if !strings.Contains(err.Error(), tc.field) || he.Offset < 0 || he.Offset > len(tc.msg) {
			t.Errorf("error %q: field or offset wrong", err)
		}
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = Parse(linuxWrite) }); n != 0 {
		t.Errorf("Parse allocates %v times per message", n)
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(linuxWrite)))
	for b.Loop() {
		if _, err := Parse(linuxWrite); err != nil {
			b.Fatal(err)
		}
	}
}
