//go:build interop

package iwtest

// Bulk data between our provider and Linux siw: knfsd moves NFSv3 WRITE
// data with RDMA Read (it reads our registered memory through a read chunk)
// and READ data with RDMA Write (it writes into our memory through a write
// chunk). The NFSv3 and MOUNT messages are encoded here by hand, so the
// verdict rests only on verbs/soft and on Linux.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// ONC RPC numbers (RFC 1813, RFC 5531).
const (
	progMount      = 100005 // MOUNT protocol (RFC 1813 appendix I)
	mountProcMnt   = 1
	nfs3ProcCreate = 8
	nfs3ProcWrite  = 7
	nfs3ProcRead   = 6
	authSys        = 1
	fileSync       = 2
)

// xdrBuf appends XDR items.
type xdrBuf []byte

func (b xdrBuf) u32(v uint32) xdrBuf { return binary.BigEndian.AppendUint32(b, v) }
func (b xdrBuf) u64(v uint64) xdrBuf { return binary.BigEndian.AppendUint64(b, v) }
func (b xdrBuf) opaque(p []byte) xdrBuf {
	b = b.u32(uint32(len(p)))
	b = append(b, p...)
	return append(b, make([]byte, (4-len(p)%4)%4)...)
}

// rpcCallHeader appends an RPC call header with AUTH_SYS uid 0 / gid 0
// (the export has no_root_squash) and an AUTH_NONE verifier.
func rpcCallHeader(b xdrBuf, xid, prog, vers, proc uint32) xdrBuf {
	var cred xdrBuf
	cred = cred.u32(1).opaque([]byte("iwtest")).u32(0).u32(0).u32(0) // stamp, machine, uid, gid, no gids
	b = b.u32(xid).u32(0).u32(2).u32(prog).u32(vers).u32(proc)
	b = b.u32(authSys).opaque(cred)
	return b.u32(0).u32(0)
}

func (r *reader) u64(field string) (uint64, error) {
	hi, err := r.u32(field)
	if err != nil {
		return 0, err
	}
	lo, err := r.u32(field)
	return uint64(hi)<<32 | uint64(lo), err
}

func (r *reader) opaque(field string, max int) ([]byte, error) {
	n, err := r.u32(field + ".length")
	if err != nil {
		return nil, err
	}
	if int(n) > max {
		return nil, bad(field+".length", uint64(n), fmt.Sprintf("<= %d", max))
	}
	padded := (int(n) + 3) &^ 3
	if len(r.b)-r.off < padded {
		return nil, bad(field+".body", uint64(len(r.b)-r.off), fmt.Sprintf(">= %d bytes left", padded))
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += padded
	return p, nil
}

func (r *reader) skip(field string, n int) error {
	if len(r.b)-r.off < n {
		return bad(field, uint64(len(r.b)-r.off), fmt.Sprintf(">= %d bytes left", n))
	}
	r.off += n
	return nil
}

// postOpAttr skips a post_op_attr (bool, fattr3 of 84 bytes).
func (r *reader) postOpAttr(field string) error {
	follows, err := r.u32(field)
	if err != nil || follows == 0 {
		return err
	}
	return r.skip(field+".fattr3", 84)
}

// wccData skips a wcc_data (pre_op_attr: bool + 24 bytes, post_op_attr).
func (r *reader) wccData(field string) error {
	follows, err := r.u32(field + ".before")
	if err != nil {
		return err
	}
	if follows != 0 {
		if err := r.skip(field+".before.attr", 24); err != nil {
			return err
		}
	}
	return r.postOpAttr(field + ".after")
}

// acceptedReply reads the RPC reply header up to the procedure results.
func (r *reader) acceptedReply(xid uint32) error {
	if _, err := r.expect("rpc.xid", xid); err != nil {
		return err
	}
	if _, err := r.expect("rpc.msg_type", 1); err != nil {
		return err
	}
	if _, err := r.expect("rpc.reply_stat", 0); err != nil {
		return err
	}
	if _, err := r.opaqueAuth("rpc.verf"); err != nil {
		return err
	}
	_, err := r.expect("rpc.accept_stat", 0)
	return err
}

// segment is one RDMA segment (handle, length, offset) of a chunk.
type segment struct {
	Handle, Length uint32
	Offset         uint64
}

// rdmaReply reads an RPC-over-RDMA RDMA_MSG reply header that may carry a
// write list (returned) but no read list or reply chunk.
func (r *reader) rdmaReply(xid uint32) (credits uint32, writes [][]segment, err error) {
	if _, err = r.expect("rpcrdma.xid", xid); err != nil {
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
	if _, err = r.expect("rpcrdma.read_list", 0); err != nil {
		return
	}
	for {
		var more, n uint32
		if more, err = r.u32("rpcrdma.write_list"); err != nil || more == 0 {
			break
		}
		if n, err = r.u32("rpcrdma.write_chunk.count"); err != nil {
			return
		}
		if n > 16 {
			err = bad("rpcrdma.write_chunk.count", uint64(n), "<= 16")
			return
		}
		chunk := make([]segment, n)
		for i := range chunk {
			if chunk[i].Handle, err = r.u32("rpcrdma.segment.handle"); err != nil {
				return
			}
			if chunk[i].Length, err = r.u32("rpcrdma.segment.length"); err != nil {
				return
			}
			if chunk[i].Offset, err = r.u64("rpcrdma.segment.offset"); err != nil {
				return
			}
		}
		writes = append(writes, chunk)
	}
	if err != nil {
		return
	}
	_, err = r.expect("rpcrdma.reply_chunk", 0)
	return
}

// mountExport asks the guest's rpc.mountd (MOUNT v3 over TCP) for the root
// file handle of path.
func mountExport(ctx context.Context, addr, path string) ([]byte, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("MOUNT: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	const xid = 0x6d6e7401
	msg := rpcCallHeader(nil, xid, progMount, 3, mountProcMnt).opaque([]byte(path))
	rec := binary.BigEndian.AppendUint32(nil, 0x80000000|uint32(len(msg))) // one last fragment
	if _, err := c.Write(append(rec, msg...)); err != nil {
		return nil, fmt.Errorf("MOUNT: sending MNT: %w", err)
	}
	br := bufio.NewReader(c)
	var reply []byte
	for {
		var mark [4]byte
		if _, err := io.ReadFull(br, mark[:]); err != nil {
			return nil, fmt.Errorf("MOUNT: record mark: %w", err)
		}
		m := binary.BigEndian.Uint32(mark[:])
		if n := int(m & 0x7fffffff); n > 1<<16 || len(reply)+n > 1<<16 {
			return nil, fmt.Errorf("MOUNT: reply fragment of %d bytes", n)
		}
		frag := make([]byte, m&0x7fffffff)
		if _, err := io.ReadFull(br, frag); err != nil {
			return nil, fmt.Errorf("MOUNT: reply: %w", err)
		}
		reply = append(reply, frag...)
		if m&0x80000000 != 0 {
			break
		}
	}
	r := reader{b: reply}
	if err := r.acceptedReply(xid); err != nil {
		return nil, fmt.Errorf("MOUNT reply: %w", err)
	}
	if _, err := r.expect("mountres3.fhs_status", 0); err != nil {
		return nil, fmt.Errorf("MOUNT %s: %w", path, err)
	}
	fh, err := r.opaque("mountres3.fhandle", 64)
	if err != nil {
		return nil, fmt.Errorf("MOUNT reply: %w", err)
	}
	return append([]byte(nil), fh...), nil
}

// call sends one RPC-over-RDMA message (already encoded) and returns the
// reply Send's payload, after reposting nothing: the caller reposts buf.
func (e *endpoint) call(ctx context.Context, id uint64, msg []byte) ([]byte, int, error) {
	if len(msg) > inlineSize {
		return nil, 0, fmt.Errorf("call of %d bytes exceeds the %d-byte inline size", len(msg), inlineSize)
	}
	if err := e.sendMsg(id, msg); err != nil {
		return nil, 0, fmt.Errorf("PostSend: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return e.nextRecv(rctx)
}

// TestProviderKnfsdReadWrite: over a verbs/soft connection to the guest's
// knfsd, for each size in IWTEST_SIZES (default "1,4093,65536,100003,131072":
// odd and even, one FPDU to many), create a file, WRITE it through a read
// chunk (knfsd RDMA Reads our memory), READ it back through a write chunk
// (knfsd RDMA Writes into our memory) and compare. knfsd in the 1 GiB lab
// guest takes at most 128 KiB per READ/WRITE (/proc/fs/nfsd/max_block_size);
// a bigger chunk gets ERR_CHUNK and the connection is closed. IWTEST_MOUNT is
// rpc.mountd's TCP address. Cases: cases/knfsd-provider-rw*.case.
func TestProviderKnfsdReadWrite(t *testing.T) {
	addr := peerAddr(t)
	mountAddr := os.Getenv("IWTEST_MOUNT")
	if mountAddr == "" {
		t.Skip("IWTEST_MOUNT not set: run through interop/run.sh")
	}
	ctx := waitContext(t)
	var sizes []int
	for _, f := range strings.Split(cmp.Or(os.Getenv("IWTEST_SIZES"), "1,4093,65536,100003,131072"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1<<20 {
			t.Fatalf("IWTEST_SIZES item %q: want 1..1048576 (knfsd's largest single READ/WRITE)", f)
		}
		sizes = append(sizes, n)
	}

	root, err := mountExport(ctx, mountAddr, "/export")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MOUNT /export: root file handle % x", root)

	e := newEndpoint(t, soft.Config{CRC: envCRC(), FirstFPDUDelay: 300 * time.Millisecond})
	info, err := e.dev.Dial(ctx, addr, e.qp, verbs.ConnParams{
		PrivateData: AppendConnectPrivate(nil, ConnectPrivate{Version: 1, SendSize: inlineSize, RecvSize: inlineSize}),
		IRD:         128, // knfsd's RDMA Reads of our read chunk need IRD >= 1
		ORD:         1,
	})
	if err != nil {
		t.Fatalf("Dial knfsd at %s: %v", addr, err)
	}
	t.Logf("connected to %v: IRD %d ORD %d (CRC requested: %v)", info.RemoteAddr, info.IRD, info.ORD, envCRC())

	nfs := &nfsConn{e: e, root: root, xid: 0x72770000, segs: envInt(t, "IWTEST_SEGS", 1)}
	for _, size := range sizes {
		if err := nfs.writeReadBack(ctx, t, size); err != nil {
			t.Errorf("%d bytes: %v", size, err)
		}
		if err := e.qp.Err(); err != nil {
			t.Fatalf("QP failed: %v", err)
		}
	}
}

// nfsConn runs NFSv3 calls over an endpoint connected to knfsd.
type nfsConn struct {
	e    *endpoint
	root []byte
	xid  uint32
	id   uint64
	segs int // segments per chunk (IWTEST_SEGS)
}

const callCredits = 32

// roundTrip sends hdr+rpc and returns a reader positioned after the reply's
// transport header, and the write list the reply carries.
func (n *nfsConn) roundTrip(ctx context.Context, what string, msg []byte) (*reader, [][]segment, error) {
	n.id++
	reply, buf, err := n.e.call(ctx, n.id, msg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	defer n.e.postRecv(buf)
	reply = append([]byte(nil), reply...)
	r := &reader{b: reply}
	_, writes, err := r.rdmaReply(n.xid)
	if err != nil {
		return nil, nil, fmt.Errorf("%s reply header: %w (reply % x)", what, err, reply[:min(len(reply), 64)])
	}
	if err := r.acceptedReply(n.xid); err != nil {
		return nil, nil, fmt.Errorf("%s reply: %w", what, err)
	}
	return r, writes, nil
}

// splitSegments cuts size bytes into at most n segment lengths: all but the
// last a multiple of the 4 KiB page (as Linux cuts its chunks), the last the
// rest.
func splitSegments(size, n int) []int {
	per := max((size/n)&^4095, 4096)
	var lens []int
	for size > 0 {
		l := min(per, size)
		if len(lens) == n-1 {
			l = size
		}
		lens = append(lens, l)
		size -= l
	}
	return lens
}

// writeReadBack creates a file of size random bytes, writes it through a
// read chunk of up to n.segs segments (each its own MR) and reads it back
// through a write chunk of as many segments (each its own MR).
func (n *nfsConn) writeReadBack(ctx context.Context, t *testing.T, size int) error {
	e := n.e
	lens := splitSegments(size, max(n.segs, 1))
	var data []byte
	rng := rand.New(rand.NewPCG(uint64(size), 7))
	var srcs, sinks []verbs.MR
	defer func() {
		for _, mr := range append(srcs, sinks...) {
			mr.Close()
		}
	}()
	for i, l := range lens {
		b := make([]byte, l)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		data = append(data, b...)
		src, err := e.pd.RegMR(b, verbs.AccessRemoteRead)
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
		if i == len(lens)-1 {
			l = (l + 3) &^ 3 // room for the XDR pad, as Linux offers
		}
		sink, err := e.pd.RegMR(make([]byte, l), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			return err
		}
		sinks = append(sinks, sink)
	}
	noChunks := func(xid uint32) xdrBuf {
		return xdrBuf(nil).u32(xid).u32(RPCRDMAVersion).u32(callCredits).u32(ProcRDMAMsg).u32(0).u32(0).u32(0)
	}

	// CREATE (UNCHECKED, mode 0644) in the export's root.
	n.xid++
	name := fmt.Sprintf("iwtest-%d-%d-%d", os.Getpid(), size, len(lens))
	msg := rpcCallHeader(noChunks(n.xid), n.xid, ProgNFS, 3, nfs3ProcCreate)
	msg = msg.opaque(n.root).opaque([]byte(name)).u32(0)           // where, createmode UNCHECKED
	msg = msg.u32(1).u32(0o644).u32(0).u32(0).u32(0).u32(0).u32(0) // sattr3: mode only
	r, _, err := n.roundTrip(ctx, "CREATE", msg)
	if err != nil {
		return err
	}
	if _, err := r.expect("CREATE3res.status", 0); err != nil {
		return err
	}
	if _, err := r.expect("post_op_fh3.handle_follows", 1); err != nil {
		return err
	}
	fhp, err := r.opaque("post_op_fh3.handle", 64)
	if err != nil {
		return err
	}
	fh := append([]byte(nil), fhp...)

	// WRITE with a read chunk: the data stays in srcs; knfsd fetches it with
	// RDMA Read Requests that our provider answers.
	n.xid++
	hdr := xdrBuf(nil).u32(n.xid).u32(RPCRDMAVersion).u32(callCredits).u32(ProcRDMAMsg)
	rpc := rpcCallHeader(nil, n.xid, ProgNFS, 3, nfs3ProcWrite)
	rpc = rpc.opaque(fh).u64(0).u32(uint32(size)).u32(fileSync).u32(uint32(size))
	position := uint32(len(rpc)) // the data would start right after its length word
	for _, src := range srcs {   // one chunk: every segment at the same position
		hdr = hdr.u32(1).u32(position).u32(src.RKey()).u32(uint32(len(src.Buf()))).u64(src.Addr())
	}
	hdr = hdr.u32(0).u32(0).u32(0) // end of read list, write list, reply chunk
	start := time.Now()
	r, _, err = n.roundTrip(ctx, "WRITE", append(hdr, rpc...))
	if err != nil {
		return err
	}
	wdur := time.Since(start)
	if _, err := r.expect("WRITE3res.status", 0); err != nil {
		return err
	}
	if err := r.wccData("WRITE3res.file_wcc"); err != nil {
		return err
	}
	if _, err := r.expect("WRITE3resok.count", uint32(size)); err != nil {
		return err
	}
	t.Logf("%s: WRITE %d bytes through a read chunk of %d segment(s) (knfsd RDMA Reads from us): ok in %v", name, size, len(srcs), wdur.Round(time.Millisecond))

	// READ with a write chunk: knfsd RDMA Writes the data into sinks.
	n.xid++
	hdr = xdrBuf(nil).u32(n.xid).u32(RPCRDMAVersion).u32(callCredits).u32(ProcRDMAMsg)
	hdr = hdr.u32(0)                         // read list
	hdr = hdr.u32(1).u32(uint32(len(sinks))) // one write chunk
	for _, sink := range sinks {
		hdr = hdr.u32(sink.RKey()).u32(uint32(len(sink.Buf()))).u64(sink.Addr())
	}
	hdr = hdr.u32(0).u32(0) // end of write list, reply chunk
	rpc = rpcCallHeader(nil, n.xid, ProgNFS, 3, nfs3ProcRead).opaque(fh).u64(0).u32(uint32(size))
	start = time.Now()
	r, writes, err := n.roundTrip(ctx, "READ", append(hdr, rpc...))
	if err != nil {
		return err
	}
	rdur := time.Since(start)
	if len(writes) != 1 || len(writes[0]) != len(sinks) {
		return fmt.Errorf("READ reply write list %+v, want our one chunk of %d segment(s)", writes, len(sinks))
	}
	for i, seg := range writes[0] {
		if seg.Handle != sinks[i].RKey() || seg.Offset != sinks[i].Addr() || seg.Length != uint32(lens[i]) {
			return fmt.Errorf("READ reply write segment %d %+v, want handle %#x offset %#x length %d", i, seg, sinks[i].RKey(), sinks[i].Addr(), lens[i])
		}
	}
	if _, err := r.expect("READ3res.status", 0); err != nil {
		return err
	}
	if err := r.postOpAttr("READ3res.file_attributes"); err != nil {
		return err
	}
	if _, err := r.expect("READ3resok.count", uint32(size)); err != nil {
		return err
	}
	if _, err := r.expect("READ3resok.eof", 1); err != nil {
		return err
	}
	if _, err := r.expect("READ3resok.data.length", uint32(size)); err != nil {
		return err
	}
	var got []byte
	for i, sink := range sinks {
		got = append(got, sink.Buf()[:lens[i]]...)
	}
	if !bytes.Equal(got, data) {
		i := 0
		for i < size && got[i] == data[i] {
			i++
		}
		return fmt.Errorf("READ data differs from what was written, first at byte %d of %d", i, size)
	}
	t.Logf("%s: READ %d bytes through a write chunk of %d segment(s) (knfsd RDMA Writes into us): identical, in %v", name, size, len(sinks), rdur.Round(time.Millisecond))
	return nil
}
