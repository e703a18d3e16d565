package soft

import "github.com/go-rpcrdma/rpcrdma/verbs/iwarp"

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
// rest of the stream; a malformed Send costs that Send only, so Sends are
// cut like any message (measured on the interop case nfs41-server: the
// server's first connection decodes to its end, where it lost the framing
// a third of the way through before, with 364 replies reported malformed).

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
// (> 0) and maxPay the largest payload of an FPDU when not aligning.
func fpduPayload(pos, seg, hl, rest, maxPay int) int {
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
	if left == 0 || left >= txMinRoom {
		return rest
	}
	// The message would end leaving a room no FPDU fits: split it. Two
	// FPDUs take a header and a CRC more than one (hl+4 bytes), or a word
	// more again when both need padding, so a split about in half either
	// ends exactly on the boundary or overflows it, and then the second
	// FPDU is cut there, the rest starting the next segment.
	minPay := txMinRoom - iwarp.CRCLen - hl // the payload of a txMinRoom FPDU
	half := max((rest/2)&^3, minPay)
	for n := half; n < half+4 && n < rest; n++ {
		if fpduLen(hl, n)+fpduLen(hl, rest-n) == room {
			return n
		}
	}
	n := half
	if room-fpduLen(hl, n) < txMinRoom {
		// Keep room for the second FPDU to be cut.
		n = (room - txMinRoom - iwarp.CRCLen - hl) &^ 3
	}
	if n < minPay || n >= rest {
		return rest // too short to split: the next FPDU straddles
	}
	return n
}

// txAlignSplits bounds the FPDUs fpduPayload adds at the end of a message:
// the split, and the cut of its second FPDU at the boundary.
const txAlignSplits = 2

// alignSeg returns the segment size FPDUs are aligned with on a connection
// whose MSS is mss: mss, or 0 where fpduPayload would not align (no MSS, or
// one that is not a multiple of 4, as loopback's).
func alignSeg(mss int) int {
	if mss < txMinAlignSeg || mss%4 != 0 {
		return 0
	}
	return mss
}
