package soft

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// The FuzzRx harness: a fresh device whose first MR (4 KiB, all rights) has
// STag fuzzSTag and TO fuzzTO, and two posted 64-byte receives.
const (
	fuzzSTag = 1<<8 | 38 // index 1, key 38 (FuzzRx fixes the key stream, see fuzzKeys)
	fuzzTO   = 1 << 32
)

func fuzzFPDU(crc bool, h iwarp.Header, payload []byte) []byte {
	b, err := iwarp.AppendFPDU(nil, &h, payload, crc)
	if err != nil {
		panic(err)
	}
	return b
}

type fuzzSeed struct {
	name string
	crc  bool
	data []byte
}

// fuzzSeeds has one stream per receive-path rule: valid traffic of each
// opcode, each violation that must produce a Terminate, and malformed
// Terminates, which must not.
func fuzzSeeds() []fuzzSeed {
	send := func(crc bool, msn, mo uint32, last bool, p string) []byte {
		return fuzzFPDU(crc, iwarp.Header{Opcode: iwarp.OpSend, Last: last, MSN: msn, MO: mo}, []byte(p))
	}
	write := func(stag uint32, to uint64, p string) []byte {
		return fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: stag, TO: to}, []byte(p))
	}
	rreq := func(msn uint32, rr iwarp.ReadRequest, extra string) []byte {
		return fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpReadRequest, Last: true, QN: 1, MSN: msn}, append(rr.Append(nil), extra...))
	}
	goodRR := iwarp.ReadRequest{SinkSTag: 0x200, Size: 16, SrcSTag: fuzzSTag, SrcTO: fuzzTO}
	term := iwarp.NewTerminate(iwarp.TermDDPUntaggedInvalidMO, nil)
	termB, _ := iwarp.AppendTerminateFPDU(nil, &term, 1, false)
	badCRC := send(true, 1, 0, true, "abc")
	badCRC[len(badCRC)-1] ^= 1
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	return []fuzzSeed{
		{"send", false, send(false, 1, 0, true, "hello")},
		{"send-crc", true, send(true, 1, 0, true, "hello")},
		{"send-two-segments", false, cat(send(false, 1, 0, false, "abcd"), send(false, 1, 4, true, "efg"))},
		{"send-two-messages", false, cat(send(false, 1, 0, true, "a"), send(false, 2, 0, true, "b"))},
		{"send-no-receive", false, cat(send(false, 1, 0, true, "a"), send(false, 2, 0, true, "b"), send(false, 3, 0, true, "c"))},
		{"send-too-long", false, send(false, 1, 0, true, string(make([]byte, 65)))},
		{"send-opcode-change", false, cat(send(false, 1, 0, false, "abcd"),
			fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpSendInvalidate, Last: true, MSN: 1, MO: 4, InvalidateSTag: fuzzSTag}, []byte("efg")))},
		{"send-msn", false, send(false, 7, 0, true, "x")},
		{"send-mo", false, send(false, 1, 3, true, "x")},
		{"send-inv-bad", false, fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpSendInvalidate, Last: true, MSN: 1, InvalidateSTag: 0x999}, []byte("x"))},
		{"send-inv-ok", false, fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpSendSEInvalidate, Last: true, MSN: 1, InvalidateSTag: fuzzSTag}, []byte("x"))},
		{"crc-error", true, badCRC},
		{"write", false, write(fuzzSTag, fuzzTO+10, "data")},
		{"write-zero-length", false, write(1, 0, "")},
		{"write-invalid-stag", false, write(0x12345, fuzzTO, "data")},
		{"write-bounds", false, write(fuzzSTag, fuzzTO+4094, "data")},
		{"write-stag-change", false, cat(
			fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpWrite, STag: fuzzSTag, TO: fuzzTO}, []byte("ab")),
			fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: fuzzSTag + 1, TO: fuzzTO + 2}, []byte("cd")))},
		{"write-to-gap", false, cat(
			fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpWrite, STag: fuzzSTag, TO: fuzzTO}, []byte("ab")),
			fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: fuzzSTag, TO: fuzzTO + 9}, []byte("cd")))},
		{"read-request", false, rreq(1, goodRR, "")},
		{"read-request-msn", false, rreq(2, goodRR, "")},
		{"read-request-payload", false, rreq(1, goodRR, "xx")},
		{"read-request-bad-source", false, rreq(1, iwarp.ReadRequest{SinkSTag: 0x200, Size: 16, SrcSTag: 0x4400, SrcTO: 0}, "")},
		{"read-request-ird", false, cat(rreq(1, goodRR, ""), rreq(2, goodRR, ""), rreq(3, goodRR, ""), rreq(4, goodRR, ""), rreq(5, goodRR, ""))},
		{"read-response-unexpected", false, fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpReadResponse, Last: true, STag: fuzzSTag, TO: fuzzTO}, []byte("x"))},
		{"terminate", false, termB},
		{"terminate-truncated-copy", false, fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpTerminate, Last: true, QN: 2, MSN: 1}, []byte{0x11, 0x01, 0xc0, 0, 0, 0x10})},
		{"terminate-no-control", false, fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpTerminate, Last: true, QN: 2, MSN: 1}, []byte{0x11, 0x01})},
		{"bad-opcode", false, []byte{0, 18, 0x41, 0x4f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"bad-ddp-version", false, []byte{0, 18, 0x42, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"bad-qn", false, []byte{0, 18, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"short-ulpdu", false, []byte{0, 2, 0x41, 0x43, 0, 0, 0, 0}},
		{"truncated", false, send(false, 1, 0, true, "hello")[:9]},
	}
}

// fuzzKeys replaces crypto/rand as FuzzRx's STag key source, so that the
// first region gets fuzzSTag, the STag the seeds address.
func fuzzKeys(b []byte) {
	for i := range b {
		b[i] = fuzzSTag & 0xff
	}
}

// FuzzRx feeds an arbitrary byte stream (what follows the MPA exchange) to a
// QP's receive path. Whatever arrives, the QP must end in the error state
// (connection loss or Terminate) without panicking, hanging or leaking.
func FuzzRx(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.crc, s.data)
	}
	f.Fuzz(func(t *testing.T, crc bool, data []byte) { fuzzRxStream(t, crc, data, false) })
}

// FuzzRxSocket is FuzzRx over a loopback TCP connection, where the reader
// processes whole FPDUs inside its socket callback and waits as soon as a
// read comes back short (receive); the peer's FIN comes right behind the
// stream. Its corpus is FuzzRx's.
func FuzzRxSocket(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.crc, s.data)
	}
	f.Fuzz(func(t *testing.T, crc bool, data []byte) { fuzzRxStream(t, crc, data, true) })
}

// fuzzRxStream is FuzzRx's and FuzzRxSocket's body: data is written to a
// started QP, over a pipe or a TCP connection, and the peer closes.
func fuzzRxStream(t *testing.T, crc bool, data []byte, socket bool) {
	dev := New(Config{})
	// The seeds name fuzzSTag: index 1 (identity permutation), key 38.
	dev.stags.rnd, dev.stags.perm = keyStream{fill: fuzzKeys}, indexPerm{}
	pd, _ := dev.AllocPD()
	cq, _ := dev.CreateCQ(64)
	qpi, _ := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4})
	q := qpi.(*queuePair)
	mr, _ := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	if mr.RKey() != fuzzSTag || mr.Addr() != fuzzTO {
		t.Fatalf("harness: STag %#x TO %#x", mr.RKey(), mr.Addr())
	}
	rmr, _ := pd.RegMR(make([]byte, 128), verbs.AccessLocalWrite)
	for i := 0; i < 2; i++ {
		q.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: rmr, Offset: 64 * i, Length: 64}}})
	}
	var a, b net.Conn
	if socket {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if b, err = net.Dial("tcp", ln.Addr().String()); err != nil {
			t.Fatal(err)
		}
		if a, err = ln.Accept(); err != nil {
			t.Fatal(err)
		}
	} else {
		a, b = net.Pipe()
	}
	q.state = verbs.StateConnecting
	if err := q.start(a, crc, 4, 4, 256, false, RTRNone); err != nil {
		t.Fatal(err)
	}
	if socket && !q.r.shortWait {
		t.Skip("the reader receives through receive only on Linux")
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 4096)
		for {
			if _, err := b.Read(buf); err != nil {
				return
			}
		}
	}()
	b.SetWriteDeadline(time.Now().Add(5 * time.Second))
	b.Write(data)
	if tc, ok := b.(*net.TCPConn); ok {
		tc.CloseWrite() // the FIN right behind the data; the Terminate, if any, still comes back
	} else {
		b.Close()
	}
	select {
	case <-q.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("QP still running after the stream ended")
	}
	if err := q.Err(); errors.Is(err, errNestedRead) {
		t.Fatalf("QP failed with %v", err)
	}
	q.Close()
	b.Close()
	<-drained
	cq.Close()
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzRx and testdata/fuzz/FuzzRxSocket
// from fuzzSeeds when SOFT_WRITE_CORPUS=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("SOFT_WRITE_CORPUS") != "1" {
		t.Skip("set SOFT_WRITE_CORPUS=1 to regenerate the corpus")
	}
	for _, target := range []string{"FuzzRx", "FuzzRxSocket"} { // one corpus, both targets
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range fuzzSeeds() {
			body := fmt.Sprintf("go test fuzz v1\nbool(%v)\n[]byte(%s)\n", s.crc, strconv.Quote(string(s.data)))
			if err := os.WriteFile(filepath.Join(dir, s.name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
