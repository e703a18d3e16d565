package soft

import (
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// FPDU alignment with TCP segments.
//
// MPA without markers does not need FPDUs aligned with TCP segments: a
// receiver finds them in the byte stream. RFC 5044 leaves alignment to
// "MPA-aware" TCP senders; its Appendix A (informative, "NOT part of the
// standard") gives guidance for implementations that want to send as much
// traffic as possible "in an aligned and zero-copy fashion". Linux siw
// aligns by sending each FPDU, no larger than the MSS, in a sendmsg of its
// own (MSG_EOR). Wireshark (4.0) relies on it: when a dissector above MPA
// fails inside an FPDU it had to reassemble from two segments, it loses the
// MPA framing for the rest of the stream (interop finding 13).
//
// This provider writes a batch of FPDUs with one vectored write, which the
// kernel, when the socket's send queue holds nothing unsent, cuts into
// segments of one MSS counted from the start of the write. fpduPayload
// sizes each FPDU from its position in the write so that it ends at or
// before the next multiple of the MSS: a DDP segment of a tagged or an
// untagged message can be cut at any length, since each carries its own TO
// or MO. An FPDU that must be cut fills its segment exactly (FPDUs are
// multiples of 4 bytes, as MSS values are on real links; with an MSS that
// is not, such as loopback's, FPDUs keep the MSS-derived size); a message
// whose last FPDU would leave a room too small for another FPDU (txMinRoom) is
// split in two so that the second ends exactly on the boundary or is cut
// there, its rest starting the next segment. What remains unaligned: a
// fixed-size FPDU (a Read Request, a zero-length message) that finds a room
// smaller than itself straddles it, and so does an FPDU after one that
// leaves such a room (or after a message too short to split); that FPDU is
// sized to end on the following boundary, so alignment resumes there. And a
// write that finds unsent bytes in the socket (a closed window, or Linux's
// autocorking holding back a short tail) may be appended to the last unsent
// segment, which shifts its segmentation: siw's MSG_EOR per FPDU avoids
// that at the cost of a system call per FPDU, which this provider does not
// pay.
//
// Wireshark 4.0 has a second limit this sizing meets: its rpcordma
// dissector fails (a malformed frame) on an RPC-over-RDMA message that
// arrives in several DDP segments, as a short Send cut at a boundary or
// split does. Leaving such a Send whole instead makes it straddle, and a
// dissector failure inside a straddling FPDU costs the MPA framing of the
// rest of the stream, so Sends are cut like any message; but an RDMA Write
// followed by a short Send (an RPC reply with a write chunk) leaves the
// Send room for its FPDU (fpduNeed), so that reply Sends are rarely cut.
// And a short Send (an FPDU of at most txNeedMax bytes) that the rest of its
// segment would cut after other messages of the writer's batch (several
// replies queued while the writer was busy) ends that batch instead: it
// starts the next write, and with it a segment, at the cost of one more
// sendmsg. (PostSend's own batch, written only if the socket takes it at
// once, cannot be split that way; there such a Send is still cut.) The
// interop case nfs41-server met one or two such cut Sends per run (one in a
// batch of six replies), each a reply Wireshark 4.0 could not read.
//
// Measured on the interop case nfs41-server (Linux NFS client over siw,
// our server, tshark 4.0 on the capture): with writev, tshark lost the
// framing of the server's first connection at frame 12509 of 31993 and
// decoded 385 to 479 of 507 READ replies; with this sizing alone it still
// lost it where a 65160-byte GSO segment started inside an FPDU (a batch
// appended by the kernel to unsent bytes of the previous one). Since each
// batch leaves in one sendmsg(MSG_EOR) (sendEOR in rawio_linux.go), nothing
// is appended to a batch and every batch starts a segment: tshark follows
// both connections to their end, all 506 of 506 READ replies decode with
// their write chunk, and the only malformed frames are the 48 READ replies
// whose write-chunk data is not a multiple of 4 bytes, a Wireshark 4.0
// limitation knfsd's capture shows as well (49 frames).

// txMinRoom is the smallest room the sizing leaves at the end of a segment,
// and the smallest FPDU it cuts: an untagged header, one word of payload and
// the CRC (28 bytes). Any FPDU that can be cut fits it, and so does a
// zero-length message's; a Read Request (52 bytes) may not.
const txMinRoom = iwarp.UntaggedHeaderLen + 4 + iwarp.CRCLen

// txMinAlignSeg is the smallest segment size FPDUs are aligned to; with a
// smaller one (a broken MSS reading), or one that is not a multiple of 4,
// FPDUs are sized by maxPay only.
const txMinAlignSeg = 256

// fpduLen is the length on the wire of an FPDU with an hl-byte header (MPA
// length field included) and n bytes of payload: padded to 4, plus the CRC.
func fpduLen(hl, n int) int {
	return (hl+n+3)&^3 + iwarp.CRCLen
}

// fpduPayload returns the payload of the next FPDU of a message: pos is where
// the FPDU starts in the vectored write, seg the TCP segment size (0: do not
// align), hl the FPDU header length, rest the message's payload still to send
// (> 0), maxPay the largest payload of an FPDU when not aligning, and need
// the room the next message in the write needs to go whole into a segment
// (fpduNeed; 0 for none).
func fpduPayload(pos, seg, hl, rest, maxPay, need int) int {
	if seg < txMinAlignSeg || seg%4 != 0 {
		// No MSS, or an odd one (Linux's loopback: 65483) that
		// 4-byte FPDUs cannot follow.
		return min(rest, maxPay)
	}
	room := seg - pos%seg
	if room < txMinRoom {
		// A fixed-size FPDU or a short message left too little: this
		// FPDU straddles the boundary and ends at the next one.
		room += seg
	}
	// The largest payload that fits room (also within MPA's 16-bit
	// ULPDU_Length).
	fit := min((room-iwarp.CRCLen)&^3-hl, iwarp.MaxULPDULength+iwarp.MPALenFieldLen-hl)
	if rest > fit {
		return fit
	}
	left := room - fpduLen(hl, rest)
	minLeft := txMinRoom
	if hl == iwarp.TaggedHeaderLen && need > 0 && left != need && left < need+txMinRoom &&
		rest >= (left/(hl+4)+2)*txMinRoom {
		// An RDMA Write (or Read Response) followed by a short Send,
		// as an RPC reply with a write chunk: the Write's end leaves
		// the Send the room for its FPDU and the next, so that it is
		// not cut (Wireshark 4.0's rpcordma fails on a Send in several
		// DDP segments), if the Write has the bytes for the FPDUs
		// that takes.
		minLeft = need + txMinRoom
	}
	if left == 0 || left >= minLeft {
		return rest
	}
	// The message would end leaving a room the next FPDU does not fit:
	// split it. Each further FPDU moves its end on by a header and a CRC
	// (hl+4 bytes; a word more where both need padding), so two FPDUs
	// may end exactly on the boundary; otherwise left/(hl+4)+1 more FPDUs
	// carry the end past it, where the last is cut and its rest starts the
	// next segment.
	minPay := txMinRoom - iwarp.CRCLen - hl // the payload of a txMinRoom FPDU
	if left <= hl+8 {
		half := max((rest/2)&^3, minPay)
		for n := half; n < half+4 && n < rest; n++ {
			if fpduLen(hl, n)+fpduLen(hl, rest-n) == room {
				return n
			}
		}
	}
	k := left/(hl+4) + 1
	n := max((rest/(k+1))&^3, minPay)
	if room-fpduLen(hl, n) < txMinRoom {
		// Keep room for the last FPDU to be cut.
		n = (room - txMinRoom - iwarp.CRCLen - hl) &^ 3
	}
	if n < minPay || n >= rest {
		return rest // too short to split: the next FPDU straddles
	}
	return n
}

// txAlignSplits bounds the FPDUs fpduPayload adds at the end of a message
// to leave txMinRoom: up to two splits, and the cut of the last FPDU at the
// boundary. Making room for the next message (need) takes up to
// txNeedFPDUs more, which batchNeed grants only where the batch buffer has
// room for them beside what the rest of the batch may take.
const txAlignSplits = 3

// txNeedMax is the largest room fpduPayload makes for the next message:
// the FPDU of a short Send (an RPC reply) or of a Read Request.
const txNeedMax = 512

// txNeedFPDUs and txNeedSlab bound the FPDUs, and their headers and
// trailers, that making room for the next message adds to a message.
const (
	txNeedFPDUs = (txNeedMax+txMinRoom)/(iwarp.TaggedHeaderLen+iwarp.CRCLen) + 3
	txNeedSlab  = txNeedFPDUs * txFPDUOverhead
)

// batchNeed returns the room the entry after i of the batch [i, to) of sq
// needs (fpduNeed), if the batch buffer has room for the FPDUs that making
// it takes (txNeedSlab) beside what the entries after i may take (which
// claimLocked and canInlineLocked admitted the batch by), else 0.
func (q *queuePair) batchNeed(sq []sendWQE, i, to uint64) int {
	n := uint64(len(sq))
	need := q.fpduNeed(&sq[(i+1)%n])
	if need == 0 {
		return 0
	}
	slab, pieces := q.wqeCost(&sq[i%n])
	for j := i + 1; j < to; j++ {
		s, p := q.wqeCost(&sq[j%n])
		slab, pieces = slab+s, pieces+p
	}
	if !q.w.buf.room(slab+txNeedSlab, pieces+2*txNeedFPDUs) {
		return 0
	}
	return need
}

// wqeCost is msgCost for a send-queue entry: what it may take of a batch
// buffer, slab bytes and other pieces.
func (q *queuePair) wqeCost(wq *sendWQE) (slab, pieces int) {
	if wq.op == verbs.OpRead {
		return txFPDUOverhead, 0
	}
	return msgCost(wq.length, iwarp.MaxPayload(q.maxFPDU, wq.op == verbs.OpWrite), len(wq.sgl))
}

// fpduNeed returns the room the send-queue entry wq needs of a TCP segment
// to leave in one FPDU, for fpduPayload: a short Send's FPDU, a Read
// Request's, or 0 (a message that is cut anyway, or no alignment).
func (q *queuePair) fpduNeed(wq *sendWQE) int {
	if q.txSeg == 0 {
		return 0
	}
	var f int
	switch wq.op {
	case verbs.OpSend, verbs.OpSendInv:
		f = fpduLen(iwarp.UntaggedHeaderLen, wq.length)
	case verbs.OpRead:
		f = iwarp.UntaggedHeaderLen + iwarp.ReadRequestLen + iwarp.CRCLen
	}
	if f > txNeedMax {
		return 0
	}
	return f
}

// alignSeg returns the segment size FPDUs are aligned with on a connection
// whose MSS is mss: mss, or 0 where fpduPayload would not align (no MSS, or
// one that is not a multiple of 4, as loopback's).
func alignSeg(mss int) int {
	if mss < txMinAlignSeg || mss%4 != 0 {
		return 0
	}
	return mss
}
