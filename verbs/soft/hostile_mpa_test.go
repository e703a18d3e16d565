package soft

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// mpaHex decodes a frame written as hex with spaces and '|' separators;
// "REQ" and "REP" stand for the 16-byte keys.
func mpaHex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer("REQ", hex.EncodeToString([]byte("MPA ID Req Frame")),
		"REP", hex.EncodeToString([]byte("MPA ID Rep Frame")), " ", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawMPAExchange sends request to addr from a plain TCP connection and
// returns the len(want) bytes that come back, then checks that the
// provider closes the connection (EOF) without sending anything more.
func rawMPAExchange(t *testing.T, addr string, request []byte, want []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(request); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading the MPA Reply: %v (want %x)", err, want)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("MPA Reply\n got %x\nwant %x", got, want)
	}
	var f iwarp.MPAFrame
	if _, err := f.Decode(got, iwarp.MPAReply); err != nil || !f.Rejected() {
		t.Fatalf("reply decodes as %+v, %v; want a Reject", f, err)
	}
	var extra [64]byte
	if n, err := c.Read(extra[:]); err != io.EOF {
		t.Fatalf("after the Reject: %d bytes %x, %v; want EOF", n, extra[:n], err)
	}
}

// TestHostileMPARequestRejected: MPA Requests the provider cannot accept
// are refused with an MPA Reply carrying the R bit (key "MPA ID Rep Frame",
// PD_Length 0, the request's revision or, when that is not one we speak,
// 2), then a clean close (FIN, no RST, even with bytes left unread), and
// never reach Accept. Before, all but markers got a bare close.
func TestHostileMPARequestRejected(t *testing.T) {
	for _, c := range []struct {
		name, req, reply string
		extra            int // bytes sent after the request (unread by the provider)
	}{
		{"Revision3", "REQ | 10 03 | 0004 | 0010 0010", "REP | 20 02 | 0000", 0},
		{"Revision255", "REQ | 00 ff | 0000", "REP | 20 02 | 0000", 0},
		{"ReplyKeyInRequest", "REP | 10 02 | 0004 | 0010 0010", "REP | 20 02 | 0000", 0},
		{"GarbageKey", "4745 5420 2f20 4854 5450 2f31 2e31 0d0a | 00 01 | 0000", "REP | 20 01 | 0000", 40},
		{"Markers", "REQ | 90 02 | 0004 | 0010 0010", "REP | 20 02 | 0000", 0},
		{"MarkersRev1", "REQ | 80 01 | 0000", "REP | 20 01 | 0000", 0},
		{"MarkersRev0", "REQ | c0 00 | 0000", "REP | 20 01 | 0000", 0},
		{"EnhancedNoPrivateData", "REQ | 10 02 | 0000", "REP | 20 02 | 0000", 0},
		{"EnhancedShortPrivateData", "REQ | 10 02 | 0003 | 0010 00", "REP | 20 02 | 0000", 0},
		{"PrivateDataTooLong", "REQ | 10 02 | 0101", "REP | 20 02 | 0000", 257},
		{"PrivateDataMax", "REQ | 00 01 | ffff", "REP | 20 01 | 0000", 4000},
		{"RequestThenData", "REQ | 10 03 | 0000", "REP | 20 02 | 0000", 60 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			req := append(mpaHex(t, c.req), make([]byte, c.extra)...)
			rawMPAExchange(t, s.ln.Addr().String(), req, mpaHex(t, c.reply))
			// The refused request never reached Accept: the next
			// connection request is the next good one.
			ch := s.accept(t, verbs.ConnParams{})
			peer, rep := rawDial(t, s.ln.Addr().String(), enhancedRequest(false, 4, 4, []byte("good")))
			if err := <-ch; err != nil {
				t.Fatalf("Accept after a refused request: %v", err)
			}
			if rep.Rejected() {
				t.Fatal("good request rejected")
			}
			if got := s.qp.State(); got != verbs.StateRTS {
				t.Fatalf("QP %v after accepting the good request", got)
			}
			peer.c.Close()
		})
	}
}

// TestHostileMPAP2PNoMatchingRTR: a peer-to-peer request offering only the
// zero-length Send RTR, which the provider does not generate, is refused
// with an enhanced Reject naming the RTR types it supports (RFC 6581 §9.2:
// A, C (Write) and D (Read)), and Accept fails.
func TestHostileMPAP2PNoMatchingRTR(t *testing.T) {
	checkGoroutines(t)
	s := newServerUnderTest(t, Config{})
	ch := s.accept(t, verbs.ConnParams{})
	rawMPAExchange(t, s.ln.Addr().String(),
		mpaHex(t, "REQ | 10 02 | 0004 | c004 0004"), // A|B, IRD 4, ORD 4
		mpaHex(t, "REP | 30 02 | 0004 | 8000 c000"))
	if err := <-ch; err == nil || !strings.Contains(err.Error(), "RTR") {
		t.Fatalf("Accept: %v, want an RTR error", err)
	}
	if got := s.qp.State(); got != verbs.StateInit {
		t.Fatalf("QP %v after the refused request, want Init", got)
	}
}

// TestHostileMPAULPReject: a ULP's Reject goes out as an MPA Reply with the
// R bit and the ULP's private data (after a zero IRD/ORD block when the
// request was enhanced), at the request's revision; then the connection
// closes cleanly, even if the peer sent bytes after its request.
func TestHostileMPAULPReject(t *testing.T) {
	for _, c := range []struct {
		name, req, reply string
	}{
		{"Enhanced", "REQ | 10 02 | 000c | 0010 0008 | 7265 7175 6573 7421", "REP | 30 02 | 000b | 0000 0000 | 676f 2061 7761 79"},
		{"Rev1", "REQ | 00 01 | 0008 | 7265 7175 6573 7421", "REP | 20 01 | 0007 | 676f 2061 7761 79"},
		{"Rev1EnhancedBitIgnored", "REQ | 10 01 | 0000", "REP | 20 01 | 0007 | 676f 2061 7761 79"},
		{"TrailingBytes", "REQ | 10 02 | 0004 | 0010 0008 | 0014 4143 0000", "REP | 30 02 | 000b | 0000 0000 | 676f 2061 7761 79"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				cr, err := s.ln.Accept(ctx)
				if err != nil {
					done <- err
					return
				}
				done <- cr.Reject([]byte("go away"))
			}()
			rawMPAExchange(t, s.ln.Addr().String(), mpaHex(t, c.req), mpaHex(t, c.reply))
			if err := <-done; err != nil {
				t.Fatalf("Reject: %v", err)
			}
		})
	}
}

// openFDs counts this process's open file descriptors (Linux), or -1.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// TestHostileMPARejectDescriptors: refusing requests leaks nothing. 500
// peers send a bad request at once and hold their connections open while
// every one gets its Reject; then 5,000 peers in turn send one, read the
// Reject and close (half of them by ULP Reject). The process's descriptors
// and goroutines return to their baseline.
func TestHostileMPARejectDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("5,500 connections")
	}
	base := openFDs()
	if base < 0 {
		t.Skip("no /proc/self/fd")
	}
	checkGoroutines(t)
	dev := New(Config{})
	ln, err := dev.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			cr, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			cr.Reject([]byte("no"))
		}
	}()
	addr := ln.Addr().String()
	bad, badRep := mpaHex(t, "REQ | 10 03 | 0000"), mpaHex(t, "REP | 20 02 | 0000")
	good, goodRep := mpaHex(t, "REQ | 00 01 | 0000"), mpaHex(t, "REP | 20 01 | 0002 | 6e6f")
	dial := func(i int) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		c.SetDeadline(time.Now().Add(60 * time.Second))
		req, want := bad, badRep
		if i%2 == 1 {
			req, want = good, goodRep
		}
		if _, err := c.Write(req); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("connection %d: reply %x, %v; want %x", i, got, err, want)
		}
		return c
	}
	conns := make([]net.Conn, 500)
	errs := make(chan error, len(conns))
	for i := range conns {
		go func() {
			defer func() { errs <- nil }()
			conns[i] = dial(i)
		}()
	}
	for range conns {
		<-errs
	}
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	if t.Failed() {
		return
	}
	for i := 0; i < 5000; i++ {
		// Reset rather than FIN: 5,000 client TIME-WAIT sockets would
		// crowd the port range of a shared machine.
		c := dial(i).(*net.TCPConn)
		c.SetLinger(0)
		c.Close()
	}
	ln.Close()
	deadline := time.Now().Add(10 * time.Second)
	for n := openFDs(); n > base; n = openFDs() {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open, %d before", n, base)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHostileMPABadReply: Dial answers an MPA Reply it cannot accept with
// the LLP Terminate for it (RFC 5044: invalid Request/Reply 2/0/0x04;
// RFC 6581 §8: insufficient IRD 0x06, no matching RTR 0x07), then closes
// cleanly, and returns an error naming the problem. The Terminate carries a
// CRC when the Reply was invalid (whether CRC was agreed is unknowable),
// and follows the Reply's C bit otherwise.
func TestHostileMPABadReply(t *testing.T) {
	for _, c := range []struct {
		name, reply string
		p2p         bool
		code        iwarp.TermCode
		err         error
	}{
		{"Revision3", "REP | 10 03 | 0004 | 0004 0004", false, iwarp.TermLLPInvalidRequestReply, iwarp.ErrMPARevision},
		{"RequestKey", "REQ | 10 02 | 0004 | 0004 0004", false, iwarp.TermLLPInvalidRequestReply, iwarp.ErrMPAKey},
		{"Markers", "REP | 90 02 | 0004 | 0004 0004", false, iwarp.TermLLPInvalidRequestReply, iwarp.ErrMPAMarkers},
		{"PrivateDataTooLong", "REP | 10 02 | 0101", false, iwarp.TermLLPInvalidRequestReply, iwarp.ErrPrivateDataTooLong},
		{"EnhancedShort", "REP | 10 02 | 0002 | 0004", false, iwarp.TermLLPInvalidRequestReply, iwarp.ErrMPAEnhancedShort},
		{"ORDAboveOurIRD", "REP | 10 02 | 0004 | 0004 03e8", false, iwarp.TermLLPInsufficientIRD, nil},
		{"NoMatchingRTR", "REP | 10 02 | 0004 | c004 0004", true, iwarp.TermLLPNoMatchingRTR, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			addr, got := replyingResponder(t, c.reply, func(s net.Conn) []byte {
				rest, _ := io.ReadAll(s) // until the initiator closes
				return rest
			})
			cfg := Config{SiwKick: -1}
			if c.p2p {
				cfg.P2P = RTRWrite
			}
			dev := New(cfg)
			e := newEndpoint(t, dev, 2)
			defer e.close(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := dev.Dial(ctx, addr, e.qp, verbs.ConnParams{IRD: 4, ORD: 4})
			if err == nil || c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("Dial: %v, want %v", err, c.err)
			}
			rest := <-got
			var f iwarp.FPDU
			n, err := iwarp.DecodeFPDU(rest, &f, c.code == iwarp.TermLLPInvalidRequestReply)
			if err != nil || n != len(rest) || f.Header.Opcode != iwarp.OpTerminate {
				t.Fatalf("initiator sent %x (%v), want exactly one Terminate FPDU", rest, err)
			}
			var term iwarp.Terminate
			if err := term.Decode(f.Payload); err != nil || term.Code != c.code || term.HasDDPHeader {
				t.Fatalf("Terminate %v (%v), want %v without header copy", term.Code, err, c.code)
			}
			if st := dev.Stats(); st.TerminatesSent != (TerminateCounts{LLP: 1}) {
				t.Errorf("device stats %+v, want one LLP Terminate sent", st)
			}
		})
	}
}

// replyingResponder listens for one connection, reads its MPA Request, answers with
// reply (mpaHex notation) and sends what collect then reads from the initiator on the
// channel it returns (closed without a value if anything fails first). The
// connection's reads and writes end after 20 s; the listener closes with t.
func replyingResponder(t *testing.T, reply string, collect func(net.Conn) []byte) (addr string, got <-chan []byte) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ch := make(chan []byte, 1)
	go func() {
		defer close(ch)
		s, err := l.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		s.SetDeadline(time.Now().Add(20 * time.Second))
		var buf [iwarp.MaxMPAFrameLen]byte
		if _, err := iwarp.ReadMPAFrame(s, buf[:], iwarp.MPARequest); err != nil {
			return
		}
		s.Write(mpaHex(t, reply))
		ch <- collect(s)
	}()
	return l.Addr().String(), ch
}
