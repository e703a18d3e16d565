package soft

import (
	"math/rand/v2"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// packedFPDU is one FPDU of a simulated write.
type packedFPDU struct {
	msg        int // index of the message
	start, end int // bytes in the write
	off, n     int // payload offset in the message and length
}

// packMessages lays out messages of the given payload sizes and header
// lengths one after the other in one write, as appendMessage sizes them
// (maxPay: the payload limit when seg is 0).
func packMessages(seg, maxPay int, hls, sizes []int) []packedFPDU {
	var out []packedFPDU
	pos := 0
	for m, total := range sizes {
		hl := hls[m]
		for off := 0; ; {
			n := 0
			if total > 0 {
				n = fpduPayload(pos, seg, hl, total-off, maxPay, needOf(m+1, hls, sizes))
			}
			l := fpduLen(hl, n)
			out = append(out, packedFPDU{msg: m, start: pos, end: pos + l, off: off, n: n})
			pos += l
			off += n
			if off == total {
				break
			}
		}
	}
	return out
}

// needOf is fpduNeed for message m of a simulated write (0 past the end).
func needOf(m int, hls, sizes []int) int {
	if m >= len(sizes) || hls[m] != iwarp.UntaggedHeaderLen {
		return 0
	}
	if f := fpduLen(iwarp.UntaggedHeaderLen, sizes[m]); f <= txNeedMax {
		return f
	}
	return 0
}

// TestFPDUPayloadAligned packs random mixes of tagged and untagged messages
// at link MSS values and checks that every FPDU ends at or before the next
// segment boundary, that no FPDU cut at a boundary is smaller than
// txMinRoom, that each message's payload is covered exactly once, in order,
// and that msgCost's FPDU bound holds.
func TestFPDUPayloadAligned(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fpdus, straddles, sendsAfterWrite, sendsCut := 0, 0, 0, 0
	for _, seg := range []int{536, 1448, 1460, 8948, 9000} {
		maxPay := iwarp.MaxPayload(fpduFromMSS(seg), true)
		for round := range 400 {
			k := 1 + rng.IntN(40)
			hls, sizes := make([]int, k), make([]int, k)
			for i := range k {
				hls[i] = iwarp.TaggedHeaderLen
				if rng.IntN(2) == 0 {
					hls[i] = iwarp.UntaggedHeaderLen
				}
				switch rng.IntN(4) {
				case 0:
					sizes[i] = 1 + rng.IntN(300) // short Sends, tails
				case 1:
					sizes[i] = 1 + rng.IntN(3*seg)
				case 2:
					sizes[i] = 1 + rng.IntN(64<<10)
				default:
					sizes[i] = rng.IntN(8) * 1024
				}
			}
			fp := packMessages(seg, maxPay, hls, sizes)
			fpdus += len(fp)
			next := make([]int, k) // next payload offset per message
			count := make([]int, k)
			for i, f := range fp {
				if f.start%4 != 0 {
					t.Fatalf("seg %d round %d: FPDU %d starts at %d, not a multiple of 4", seg, round, i, f.start)
				}
				if (f.end-1)/seg != f.start/seg && !shortBefore(fp, i, sizes) {
					t.Fatalf("seg %d round %d: FPDU %d [%d,%d) of message %d (%d bytes) straddles a segment boundary",
						seg, round, i, f.start, f.end, f.msg, sizes[f.msg])
				}
				last := f.off+f.n == sizes[f.msg]
				if (f.end-1)/seg != f.start/seg {
					straddles++
					if !last && f.end%seg != 0 {
						t.Fatalf("seg %d round %d: FPDU %d [%d,%d) straddles and does not end at the next boundary", seg, round, i, f.start, f.end)
					}
				}
				if !last && f.end%seg != 0 && f.end-f.start < txMinRoom {
					t.Fatalf("seg %d round %d: FPDU %d [%d,%d) cut below txMinRoom", seg, round, i, f.start, f.end)
				}
				if f.off != next[f.msg] {
					t.Fatalf("seg %d round %d: message %d: FPDU at offset %d, want %d", seg, round, f.msg, f.off, next[f.msg])
				}
				if f.n == 0 && sizes[f.msg] != 0 {
					t.Fatalf("seg %d round %d: empty FPDU in a %d-byte message", seg, round, sizes[f.msg])
				}
				if f.off == 0 && f.msg > 0 && hls[f.msg-1] == iwarp.TaggedHeaderLen && needOf(f.msg, hls, sizes) > 0 {
					if f.n != sizes[f.msg] || (f.end-1)/seg != f.start/seg {
						sendsCut++
						// A Write that crosses a boundary starts its
						// last FPDU on one, and has the bytes.
						if seg >= 1448 && sizes[f.msg-1] >= seg {
							t.Fatalf("seg %d round %d: FPDU %d [%d,%d): a %d-byte Send after a %d-byte RDMA Write is cut or straddles",
								seg, round, i, f.start, f.end, sizes[f.msg], sizes[f.msg-1])
						}
					}
					sendsAfterWrite++
				}
				next[f.msg] += f.n
				count[f.msg]++
			}
			for m := range k {
				if next[m] != sizes[m] {
					t.Fatalf("seg %d round %d: message %d: %d of %d bytes sent", seg, round, m, next[m], sizes[m])
				}
				slab, _ := msgCost(sizes[m], maxPay, 1)
				if needOf(m+1, hls, sizes) > 0 {
					slab += txNeedSlab // granted by appendMessage where the batch has it
				}
				if count[m]*txFPDUOverhead > slab {
					t.Fatalf("seg %d round %d: message %d (%d bytes): %d FPDUs, msgCost allows %d",
						seg, round, m, sizes[m], count[m], slab/txFPDUOverhead)
				}
			}
		}
	}
	t.Logf("%d FPDUs, %d straddle a boundary (after a short message); of %d short Sends after an RDMA Write, %d cut or straddling (after a Write too short to split, or at the 536-byte MSS)",
		fpdus, straddles, sendsAfterWrite, sendsCut)
}

// shortBefore reports whether FPDU i follows a message too short for
// fpduPayload to keep from leaving a room no FPDU fits: a zero-length one,
// or one of less than shortMsg bytes (its FPDUs are 28 to about 80 bytes).
func shortBefore(fp []packedFPDU, i int, sizes []int) bool {
	const shortMsg = 64
	return i > 0 && sizes[fp[i-1].msg] < shortMsg
}
