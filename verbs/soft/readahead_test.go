package soft

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TestReadResponseReadAhead: within a large Read Response the reader reads the
// next FPDUs' payloads straight into the sink in the same readv when they
// continue the response as predicted (rawReadStep), and copies them back into
// the stream when they do not, through a larger buffer when they do not fit
// the read-ahead buffer. A raw peer cuts the response as it likes: regular
// FPDUs, one shorter or longer than the one before, a Send between two of them,
// sent at once or trickled, with and without CRC. Every time the Read completes
// with the source's bytes, nothing past the Read's length is written, the Send
// arrives intact, and the device's counters show which way the bytes went.
func TestReadResponseReadAhead(t *testing.T) {
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(i*7 + i>>9)
	}
	// The first FPDU is longer than the read-ahead buffer, so that the
	// reader is placing directly when the second begins.
	for _, tc := range []struct {
		name      string
		cuts      []int // payload of each FPDU
		sendAfter int   // a Send follows this FPDU; -1: none
		trickle   int   // written in pieces of this many bytes; 0: at once
		placed    bool  // some payload must be found in place
		spliced   bool  // some must be copied back
		// spliceMin: in one try at least this many bytes must be copied
		// back (more than the read-ahead buffer: through rxBigPool).
		spliceMin uint64
	}{
		{"regular", []int{65000, 30000, 30000, 30000, 10000}, -1, 0, true, false, 0},
		{"shorter", []int{65000, 30000, 20000, 30000, 10000}, -1, 0, true, true, 0},
		{"longer", []int{65000, 20000, 30000, 50000}, -1, 0, true, false, 0},
		{"send-between", []int{65000, 30000, 30000, 40000}, 1, 0, false, true, 0},
		{"regular-trickled", []int{65000, 30000, 30000, 30000, 10000}, -1, 997, false, false, 0},
		{"send-between-trickled", []int{65000, 30000, 30000, 40000}, 1, 4099, false, false, 0},
		// From the third FPDU on the size has repeated: the reader reads
		// the rest ahead in runs of up to rxMaxSpec payloads.
		{"many-regular", []int{40000, 40000, 40000, 40000, 40000, 40000, 40000, 40000, 40000, 40000, 40000, 40000, 5000}, -1, 0, true, false, 0},
		{"many-shorter", runs(40000, 20000, 4), -1, 0, true, true, rxReadAhead + 1},
		{"many-longer", runs(40000, 60000, 3), -1, 0, true, true, rxReadAhead + 1},
		{"many-send-between", []int{40000, 40000, 40000, 40000, 40000, 40000, 40000}, 3, 0, true, true, 0},
		{"many-first-differs", []int{39996, 40000, 40000, 40000, 40000, 40000, 40000, 40000, 40000, 17}, -1, 0, true, false, 0},
		{"many-regular-trickled", []int{40000, 40000, 40000, 40000, 40000, 40000, 40000, 5000}, -1, 8191, false, false, 0},
		{"many-shorter-trickled", []int{40000, 40000, 40000, 40000, 20000, 40000, 40000, 5000}, -1, 12007, false, false, 0},
	} {
		size := 0
		for _, c := range tc.cuts {
			size += c
		}
		for _, crc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/crc=%v", tc.name, crc), func(t *testing.T) {
				// How the stream is cut into reads is the kernel's choice: a case
				// that needs a read ahead to happen tries up to 20 times (its
				// bytes are checked every time).
				for try := 1; ; try++ {
					placed, spliced := readAheadOnce(t, src[:size], tc.cuts, tc.sendAfter, tc.trickle, crc)
					if (!tc.placed || placed > 0) && (!tc.spliced || spliced > 0) && spliced >= tc.spliceMin {
						break
					}
					if try == 20 {
						t.Fatalf("in %d tries, %d bytes found in place and %d copied back; want %v, %v (at least %d copied back)", try, placed, spliced, tc.placed, tc.spliced, tc.spliceMin)
					}
				}
			})
		}
	}
}

// runs returns FPDU payloads in runs of one size, n times a run of three of
// size followed by one of odd, behind a first run of three, and a short last
// one: a change of size, n times, where the reader may have read ahead.
func runs(size, odd, n int) []int {
	c := []int{size, size, size}
	for range n {
		c = append(c, odd, size, size, size)
	}
	return append(c, 5000)
}

// readAheadOnce has a raw peer answer one Read of src with FPDUs of the given
// payloads (a Send after FPDU sendAfter), checks what arrived, and returns the
// bytes read ahead that were found in place and that were copied back.
func readAheadOnce(t *testing.T, src []byte, cuts []int, sendAfter, trickle int, crc bool) (placed, spliced uint64) {
	t.Helper()
	const guard = 4096
	size := len(src)
	rbuf := make([]byte, 64)
	s, p, rmr, sinkBuf, rr := readAheadSetup(t, crc, rbuf, 2, size, guard)
	var stream []byte
	off := 0
	for i, c := range cuts {
		h := iwarp.Header{Opcode: iwarp.OpReadResponse, Last: i == len(cuts)-1, STag: rr.SinkSTag, TO: rr.SinkTO + uint64(off)}
		var err error
		if stream, err = iwarp.AppendFPDU(stream, &h, src[off:off+c], crc); err != nil {
			t.Fatal(err)
		}
		off += c
		if i == sendAfter {
			qn := iwarp.OpSend.QN()
			h := iwarp.Header{Opcode: iwarp.OpSend, Last: true, QN: qn, MSN: p.msn[qn]}
			p.msn[qn]++
			if stream, err = iwarp.AppendFPDU(stream, &h, []byte("between"), crc); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := s.dev.Stats()
	if trickle == 0 {
		p.write(stream)
	} else {
		for len(stream) > 0 {
			n := min(trickle, len(stream))
			p.write(stream[:n])
			stream = stream[n:]
			time.Sleep(50 * time.Microsecond) // pacing, so that reads end at many places
		}
	}
	if sendAfter >= 0 {
		wc := s.expect(t, 501, verbs.OpcodeRecv, verbs.StatusSuccess)
		if got := rbuf[:wc.ByteLen]; string(got) != "between" {
			t.Fatalf("Send between the FPDUs arrived as %q", got)
		}
	}
	s.expect(t, 999, verbs.OpcodeRead, verbs.StatusSuccess)
	if !bytes.Equal(sinkBuf[:size], src) {
		i := 0
		for sinkBuf[i] == src[i] {
			i++
		}
		t.Fatalf("sink differs from the source from byte %d on", i)
	}
	if !bytes.Equal(sinkBuf[size:], bytes.Repeat([]byte{0xEE}, guard)) {
		t.Fatal("bytes past the Read's length were written")
	}
	after := s.dev.Stats()
	placed, spliced = after.ReadAheadPlaced-before.ReadAheadPlaced, after.ReadAheadSpliced-before.ReadAheadSpliced
	// The connection still works.
	if sendAfter >= 0 {
		if err := s.qp.PostRecv(&verbs.RecvWR{ID: 502, SGL: []verbs.SGE{{MR: rmr, Length: 64}}}); err != nil {
			t.Fatal(err)
		}
	}
	p.sendMsg(iwarp.OpSend, []byte("after"), 0)
	if sendAfter < 0 {
		s.expect(t, 501, verbs.OpcodeRecv, verbs.StatusSuccess)
	} else {
		s.expect(t, 502, verbs.OpcodeRecv, verbs.StatusSuccess)
	}
	return placed, spliced
}

// readAheadSetup connects a raw peer to a new endpoint that has recvs
// receives of 64 bytes posted into rbuf (IDs 500 on; the peer's first Send
// takes one), and has the endpoint post an RDMA Read of size bytes into a
// sink followed by guard bytes of 0xEE. It returns the sink's buffer and the
// Read Request the peer got.
func readAheadSetup(t *testing.T, crc bool, rbuf []byte, recvs, size, guard int) (s *serverUnderTest, p *rawPeer, rmr verbs.MR, sinkBuf []byte, rr iwarp.ReadRequest) {
	t.Helper()
	s = newServerUnderTest(t, Config{})
	rmr = s.reg(t, rbuf, verbs.AccessLocalWrite)
	for id := uint64(500); id < 500+uint64(recvs); id++ {
		if err := s.qp.PostRecv(&verbs.RecvWR{ID: id, SGL: []verbs.SGE{{MR: rmr, Length: len(rbuf)}}}); err != nil {
			t.Fatal(err)
		}
	}
	p = s.connectRaw(t, crc, verbs.ConnParams{IRD: 4, ORD: 4})
	p.sendMsg(iwarp.OpSend, []byte("hello"), 0) // the responder's writer waits for the peer's first FPDU
	s.expect(t, 500, verbs.OpcodeRecv, verbs.StatusSuccess)
	sinkBuf = bytes.Repeat([]byte{0xEE}, size+guard)
	sink := s.reg(t, sinkBuf, verbs.AccessLocalWrite)
	if err := s.qp.PostSend(&verbs.SendWR{ID: 999, Op: verbs.OpRead, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: sink, Length: size}}, RemoteSTag: 0x1234}); err != nil {
		t.Fatal(err)
	}
	f := p.next()
	if f == nil || f.Header.Opcode != iwarp.OpReadRequest || rr.Decode(f.Payload) != nil {
		t.Fatalf("peer got %+v, want a Read Request", f)
	}
	return s, p, rmr, sinkBuf, rr
}

// TestReadResponseReadAheadHostile: a peer whose Read Response goes wrong after
// the reader has read ahead into the sink (a TO that skips, an STag that
// changes, a Write in the middle, a Terminate) gets the Terminate it earns, the
// Read completes in error, and nothing past the Read's length was written.
func TestReadResponseReadAheadHostile(t *testing.T) {
	const guard = 4096
	src := make([]byte, 5*30000+30000)
	for i := range src {
		src[i] = byte(i*13 + 1)
	}
	for _, tc := range []struct {
		name string
		code iwarp.TermCode
		// bad returns the FPDU that goes wrong, after good ones of off
		// bytes in all; the Read is of off+30000 bytes.
		bad func(rr iwarp.ReadRequest, s *serverUnderTest, off int) (iwarp.Header, []byte)
	}{
		{"to-skips", iwarp.TermDDPTaggedBaseBounds, func(rr iwarp.ReadRequest, _ *serverUnderTest, off int) (iwarp.Header, []byte) {
			return iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: rr.SinkSTag, TO: rr.SinkTO + uint64(off) + 8}, src[off : off+30000]
		}},
		{"stag-changes", iwarp.TermDDPTaggedInvalidSTag, func(rr iwarp.ReadRequest, _ *serverUnderTest, off int) (iwarp.Header, []byte) {
			return iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: rr.SinkSTag + 1, TO: rr.SinkTO + uint64(off)}, src[off : off+30000]
		}},
		{"write-inside", iwarp.TermRDMAPCatastrophicStream, func(_ iwarp.ReadRequest, s *serverUnderTest, _ int) (iwarp.Header, []byte) {
			return iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: s.mr.RKey(), TO: s.mr.Addr()}, src[:30000]
		}},
		{"too-long", iwarp.TermDDPTaggedBaseBounds, func(rr iwarp.ReadRequest, _ *serverUnderTest, off int) (iwarp.Header, []byte) {
			return iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: rr.SinkSTag, TO: rr.SinkTO + uint64(off)}, append(src[off:off+30000:off+30000], make([]byte, 100)...)
		}},
	} {
		// After two good FPDUs the reader has read at most one ahead; after
		// five of one size, several (rxMaxSpec).
		for _, good := range [][]int{{65000, 30000}, {30000, 30000, 30000, 30000, 30000}} {
			t.Run(fmt.Sprintf("%s/after-%d", tc.name, len(good)), func(t *testing.T) {
				off := 0
				for _, n := range good {
					off += n
				}
				size := off + 30000
				s, p, _, sinkBuf, rr := readAheadSetup(t, false, make([]byte, 64), 1, size, guard)
				var stream []byte
				var err error
				at := 0
				for _, n := range good {
					h := iwarp.Header{Opcode: iwarp.OpReadResponse, STag: rr.SinkSTag, TO: rr.SinkTO + uint64(at)}
					if stream, err = iwarp.AppendFPDU(stream, &h, src[at:at+n], false); err != nil {
						t.Fatal(err)
					}
					at += n
				}
				h, payload := tc.bad(rr, s, off)
				if stream, err = iwarp.AppendFPDU(stream, &h, payload, false); err != nil {
					t.Fatal(err)
				}
				p.write(stream)
				p.expectTerminate(tc.code)
				s.checkQPFailed(t, tc.code, false)
				wc := s.wait(t)
				if wc.ID != 999 || wc.Status == verbs.StatusSuccess {
					t.Fatalf("Read completion %+v, want an error", wc)
				}
				if !bytes.Equal(sinkBuf[size:], bytes.Repeat([]byte{0xEE}, guard)) {
					t.Fatal("bytes past the Read's length were written")
				}
			})
		}
	}
}
