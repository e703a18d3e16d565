package soft

import (
	"encoding/binary"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// shortFPDU builds the whole FPDU (length field, ULPDU, pad, CRC) a peer
// sends for a segment of ulpdu bytes, with ctrl at offset 2 where the
// receiver reads the DDP/RDMAP control word (for ULPDU_Length 0 those are
// pad bytes: the receiver cannot know that before it has read them).
func shortFPDU(ulpdu int, ctrl uint16, crc bool) []byte {
	b := make([]byte, iwarp.MPALenFieldLen+ulpdu+iwarp.PadLen(ulpdu)) // at least 4
	binary.BigEndian.PutUint16(b, uint16(ulpdu))
	binary.BigEndian.PutUint16(b[2:], ctrl)
	sum := uint32(0)
	if crc {
		sum = iwarp.UpdateCRC(0, b)
	}
	return binary.LittleEndian.AppendUint32(b, sum)
}

// TestHostileFPDUShortULPDU: an FPDU whose ULPDU_Length is shorter than the
// DDP header its control word calls for (tagged 14 bytes after the length
// field, untagged 18), zero included, is answered at once with a DDP local
// catastrophic Terminate, without the peer sending another byte; the QP
// fails and the connection closes. Before, the reader waited for the rest of
// a header the segment does not have, holding the connection open.
func TestHostileFPDUShortULPDU(t *testing.T) {
	const (
		write   = 0xc140 // T L DV=1 RV=1 RDMA Write
		send    = 0x4143 // L Send
		readReq = 0x4141
		term    = 0x4147
		midSend = 0x0143 // Send, not the last segment
	)
	for _, c := range []struct {
		name  string
		ulpdu int
		ctrl  uint16
		crc   bool
	}{
		{"WriteZero", 0, write, false},
		{"WriteZeroCRC", 0, write, true},
		{"Write2", 2, write, false},
		{"Write13", 13, write, true},
		{"SendZero", 0, send, false},
		{"Send2", 2, send, true},
		{"Send10", 10, send, false},
		{"Send17", 17, send, false},
		{"SendNotLast6", 6, midSend, false},
		{"ReadRequest2", 2, readReq, false},
		{"Terminate2", 2, term, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			rmr := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
			if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
				t.Fatal(err)
			}
			p := s.connectRaw(t, c.crc, verbs.ConnParams{})
			fpdu := shortFPDU(c.ulpdu, c.ctrl, c.crc)
			p.write(fpdu)
			// Nothing more is sent: the Terminate must come anyway.
			tm := p.expectTerminate(iwarp.TermDDPLocalCatastrophic)
			if tm.HasDDPHeader || len(tm.Headers) != 0 {
				t.Errorf("Terminate copies %d header bytes (D=%v); the segment has no complete header", len(tm.Headers), tm.HasDDPHeader)
			}
			s.checkQPFailed(t, iwarp.TermDDPLocalCatastrophic, false)
			s.expect(t, 1, verbs.OpcodeRecv, verbs.StatusFlushed)
			if st := s.dev.Stats(); st.TerminatesSent != (TerminateCounts{DDP: 1}) {
				t.Errorf("device stats %+v, want one DDP Terminate sent", st)
			}
		})
	}
}

// TestHostileFPDULongULPDU: a segment whose ULPDU_Length (up to the 16-bit
// maximum; MPA negotiates no smaller limit, so a receiver takes any length,
// see TestLargestFPDU) claims more than its destination can take is
// refused from its header alone: the Terminate comes although the peer
// never sends the payload it announced.
func TestHostileFPDULongULPDU(t *testing.T) {
	hdrOnly := func(h iwarp.Header, payloadLen int) []byte {
		b, err := iwarp.AppendFPDUHeader(nil, &h, payloadLen)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	maxSend := iwarp.MaxULPDULength + iwarp.MPALenFieldLen - iwarp.UntaggedHeaderLen
	maxWrite := iwarp.MaxULPDULength + iwarp.MPALenFieldLen - iwarp.TaggedHeaderLen
	for _, c := range []struct {
		name string
		fpdu func(s *serverUnderTest) []byte
		code iwarp.TermCode
	}{
		{"SendBeyondReceive", func(s *serverUnderTest) []byte {
			return hdrOnly(iwarp.Header{Opcode: iwarp.OpSend, Last: true, MSN: 1}, maxSend)
		}, iwarp.TermDDPUntaggedMessageTooLong},
		{"SendNotLastBeyondReceive", func(s *serverUnderTest) []byte {
			return hdrOnly(iwarp.Header{Opcode: iwarp.OpSend, MSN: 1}, 65)
		}, iwarp.TermDDPUntaggedMessageTooLong},
		{"WriteBeyondRegion", func(s *serverUnderTest) []byte {
			return hdrOnly(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr()}, maxWrite)
		}, iwarp.TermDDPTaggedBaseBounds},
		{"ReadRequestLong", func(s *serverUnderTest) []byte {
			return hdrOnly(iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: 1, MSN: 1}, maxSend)
		}, iwarp.TermRDMAPCatastrophicStream},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			rmr := s.reg(t, make([]byte, 64), verbs.AccessLocalWrite)
			if err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
				t.Fatal(err)
			}
			p := s.connectRaw(t, false, verbs.ConnParams{IRD: 4})
			p.write(c.fpdu(s)) // the header only; the payload never comes
			p.expectTerminate(c.code)
			s.checkQPFailed(t, c.code, false)
		})
	}
}
