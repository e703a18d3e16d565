package iwarp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// fpduBad has one FPDU per header validation rule of ParseFPDUHeader, with
// the sentinel and the Terminate code expected. CRC fields are zero (the
// vectors are decoded without CRC).
var fpduBad = []struct {
	name string
	hex  string
	err  error
	code TermCode
}{
	// DDP version (ctrl byte 2, bits 0x03) 0 or 2; the T flag picks the EType.
	{"ddp-version-0-untagged", "0014 | 40 43 | 00000000 00000000 00000001 00000000 | cafe 0000 | 00000000",
		ErrDDPVersion, TermDDPUntaggedInvalidVersion},
	{"ddp-version-2-untagged", "0014 | 42 43 | 00000000 00000000 00000001 00000000 | cafe 0000 | 00000000",
		ErrDDPVersion, TermDDPUntaggedInvalidVersion},
	{"ddp-version-2-tagged", "0012 | c2 40 | 00000001 0000000000000000 | 01020304 | 00000000",
		ErrDDPVersion, TermDDPTaggedInvalidVersion},
	// RDMAP version (ctrl byte 3, bits 0xc0) 0 or 2.
	{"rdmap-version-0", "0014 | 41 03 | 00000000 00000000 00000001 00000000 | cafe 0000 | 00000000",
		ErrRDMAPVersion, TermRDMAPInvalidVersion},
	{"rdmap-version-2", "0012 | c1 80 | 00000001 0000000000000000 | 01020304 | 00000000",
		ErrRDMAPVersion, TermRDMAPInvalidVersion},
	// Opcodes 8..15 are undefined.
	{"opcode-8", "0014 | 41 48 | 00000000 00000000 00000001 00000000 | cafe 0000 | 00000000",
		ErrOpcode, TermRDMAPUnexpectedOpcode},
	{"opcode-15-tagged", "0012 | c1 4f | 00000001 0000000000000000 | 01020304 | 00000000",
		ErrOpcode, TermRDMAPUnexpectedOpcode},
	// T flag inconsistent with the opcode.
	{"write-untagged", "0014 | 41 40 | 00000000 00000000 00000001 00000000 | cafe 0000 | 00000000",
		ErrTaggedMismatch, TermRDMAPUnexpectedOpcode},
	{"send-tagged", "0012 | c1 43 | 00000001 0000000000000000 | 01020304 | 00000000",
		ErrTaggedMismatch, TermRDMAPUnexpectedOpcode},
	// ULPDU_Length smaller than the header.
	{"tagged-ulpdu-13", "000d | c1 40 | 00000001 0000000000000000 | 000000 | 00000000",
		ErrSegmentShort, TermDDPLocalCatastrophic},
	{"untagged-ulpdu-17", "0011 | 41 43 | 00000000 00000000 00000001 000000 | 00000000",
		ErrSegmentShort, TermDDPLocalCatastrophic},
	// QN out of range, or not the opcode's queue.
	{"qn-5", "0012 | 41 43 | 00000000 00000005 00000001 00000000 | 00000000",
		ErrQN, TermDDPUntaggedInvalidQN},
	{"qn-ffffffff", "0012 | 41 43 | 00000000 ffffffff 00000001 00000000 | 00000000",
		ErrQN, TermDDPUntaggedInvalidQN},
	{"send-on-qn-1", "0012 | 41 43 | 00000000 00000001 00000001 00000000 | 00000000",
		ErrQN, TermRDMAPUnexpectedOpcode},
	{"read-request-on-qn-0", "002e | 41 41 | 00000000 00000000 00000001 00000000 |" +
		" 00000000 0000000000000000 00000000 00000000 0000000000000000 | 00000000",
		ErrQN, TermRDMAPUnexpectedOpcode},
	{"terminate-on-qn-0", "0016 | 41 47 | 00000000 00000000 00000001 00000000 | 20020000 | 00000000",
		ErrQN, TermRDMAPUnexpectedOpcode},
	// Read Request body must be exactly 28 bytes, in one (last) segment.
	{"read-request-short", "002a | 41 41 | 00000000 00000001 00000001 00000000 |" +
		" 00000000 0000000000000000 00000000 00000000 00000000 | 00000000",
		ErrMessageLength, TermRDMAPCatastrophicStream},
	{"read-request-long", "0032 | 41 41 | 00000000 00000001 00000001 00000000 |" +
		" 00000000 0000000000000000 00000000 00000000 0000000000000000 00000000 | 00000000",
		ErrMessageLength, TermRDMAPCatastrophicStream},
	{"read-request-not-last", "002e | 01 41 | 00000000 00000001 00000001 00000000 |" +
		" 00000000 0000000000000000 00000000 00000000 0000000000000000 | 00000000",
		ErrNotLast, TermRDMAPCatastrophicStream},
	// Terminate body at least 4 bytes, in one (last) segment.
	{"terminate-short", "0014 | 41 47 | 00000000 00000002 00000001 00000000 | 2002 0000 | 00000000",
		ErrMessageLength, TermRDMAPCatastrophicStream},
	{"terminate-not-last", "0016 | 01 47 | 00000000 00000002 00000001 00000000 | 20020000 | 00000000",
		ErrNotLast, TermRDMAPCatastrophicStream},
	// Whole FPDUs shorter than the header they claim: decided from the
	// first 4 bytes (2+ULPDU_Length+pad+CRC is all the peer sends).
	{"tagged-ulpdu-0", "0000 | c1 40 | 00000000", ErrSegmentShort, TermDDPLocalCatastrophic},
	{"tagged-ulpdu-6", "0006 | c1 40 | 00000001 | 00000000", ErrSegmentShort, TermDDPLocalCatastrophic},
	{"untagged-ulpdu-2", "0002 | 41 43 | 00000000", ErrSegmentShort, TermDDPLocalCatastrophic},
	{"untagged-ulpdu-10", "000a | 41 43 | 00000000 00000000 | 00000000", ErrSegmentShort, TermDDPLocalCatastrophic},
	{"read-request-ulpdu-2", "0002 | 41 41 | 00000000", ErrSegmentShort, TermDDPLocalCatastrophic},
	{"terminate-ulpdu-0", "0000 | 41 47 | 00000000", ErrSegmentShort, TermDDPLocalCatastrophic},
}

func TestFPDUValidation(t *testing.T) {
	for _, tc := range fpduBad {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.hex)
			var f FPDU
			_, err := DecodeFPDU(b, &f, false)
			if !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("not a *ProtocolError: %#v", err)
			}
			if pe.Code != tc.code {
				t.Fatalf("Terminate code %v, want %v", pe.Code, tc.code)
			}
			if err.Error() == "" || pe.Field == "" {
				t.Fatal("empty error text or field")
			}
			// The error converts into a Terminate FPDU that itself decodes.
			term := pe.Terminate()
			wire, err := AppendTerminateFPDU(nil, &term, 1, true)
			if err != nil {
				t.Fatal(err)
			}
			var tf FPDU
			if _, err := DecodeFPDU(wire, &tf, true); err != nil {
				t.Fatalf("Terminate FPDU does not decode: %v", err)
			}
			var back Terminate
			if err := back.Decode(tf.Payload); err != nil {
				t.Fatal(err)
			}
			if back.Code != tc.code || back.Order != TermOrderRFC {
				t.Fatalf("Terminate round trip: %+v", back)
			}
			if back.HasDDPHeader && !bytes.Equal(back.DDPHeader(), b[:len(back.DDPHeader())]) {
				t.Fatalf("Terminate header copy %x is not the offending header %x", back.DDPHeader(), b)
			}
		})
	}
}

// TestTerminateHeaderCopies checks which errors carry a header copy
// (NewTerminate's rules, after siw_send_terminate and the RFC 5040 Terminate Header).
func TestTerminateHeaderCopies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hex     string
		d, r    bool
		copyLen int
	}{
		{"ddp-version: layout unknown, no copy", fpduBad[0].hex, false, false, 0},
		{"rdmap-version: no copy", fpduBad[3].hex, false, false, 0},
		{"opcode: no copy", fpduBad[5].hex, false, false, 0},
		{"invalid QN: DDP header", fpduBad[11].hex, true, false, UntaggedHeaderLen},
		{"short tagged segment: no complete header, no copy", fpduBad[9].hex, false, false, 0},
		{"read request length: DDP header", fpduBad[16].hex, true, false, UntaggedHeaderLen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f FPDU
			_, err := DecodeFPDU(unhex(t, tc.hex), &f, false)
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("%v", err)
			}
			term := pe.Terminate()
			if term.HasDDPHeader != tc.d || term.SegLenValid != tc.d || term.HasRDMAPHeader != tc.r || len(term.Headers) != tc.copyLen {
				t.Fatalf("got M=%v D=%v R=%v %d bytes", term.SegLenValid, term.HasDDPHeader, term.HasRDMAPHeader, len(term.Headers))
			}
		})
	}
	// A remote protection error on a Read Request copies the DDP header and
	// the 28-byte RDMAP header (M, D, R).
	rreq := unhex(t, fpduGolden[2].hex)
	term := NewTerminate(TermRDMAPInvalidSTag, rreq[:UntaggedHeaderLen+ReadRequestLen])
	if !term.SegLenValid || !term.HasDDPHeader || !term.HasRDMAPHeader || len(term.Headers) != 48 {
		t.Fatalf("read request protection terminate: %+v", term)
	}
	if !bytes.Equal(term.RDMAPHeader(), rreq[20:48]) || !bytes.Equal(term.DDPHeader(), rreq[:20]) {
		t.Fatal("read request copies wrong")
	}
	if l, ok := term.DDPSegmentLength(); !ok || l != 46 {
		t.Fatalf("segment length %d %v", l, ok)
	}
	// On a tagged Write only the DDP header (M, D).
	w := unhex(t, fpduGolden[0].hex)
	term = NewTerminate(TermDDPTaggedInvalidSTag, w)
	if !term.HasDDPHeader || term.HasRDMAPHeader || len(term.Headers) != TaggedHeaderLen {
		t.Fatalf("write terminate: %+v", term)
	}
	// Catastrophic and LLP errors: nothing.
	for _, c := range []TermCode{TermRDMAPLocalCatastrophic, TermLLPInsufficientIRD, TermLLPNoMatchingRTR} {
		if term := NewTerminate(c, w); term.HasDDPHeader || len(term.Headers) != 0 {
			t.Fatalf("%v: %+v", c, term)
		}
	}
}

// TestParseHeaderStreaming checks the "how many bytes do you need" contract
// a stream reader relies on.
func TestParseHeaderStreaming(t *testing.T) {
	for _, tc := range fpduGolden {
		b := unhex(t, tc.hex)
		var h Header
		for i := 0; i < 4; i++ {
			if n, _, err := ParseFPDUHeader(b[:i], &h); !errors.Is(err, ErrIncomplete) || n != 4 {
				t.Fatalf("%s: %d bytes: n=%d err=%v", tc.name, i, n, err)
			}
		}
		hl := tc.hdr.Opcode.HeaderLen()
		for i := 4; i < hl; i++ {
			if n, _, err := ParseFPDUHeader(b[:i], &h); !errors.Is(err, ErrIncomplete) || n != hl {
				t.Fatalf("%s: %d bytes: n=%d err=%v", tc.name, i, n, err)
			}
		}
		n, pl, err := ParseFPDUHeader(b[:hl], &h)
		if err != nil || n != hl || pl != len(tc.payload) {
			t.Fatalf("%s: n=%d pl=%d err=%v", tc.name, n, pl, err)
		}
		// DecodeFPDU on a prefix asks for the whole FPDU once the header is in.
		var f FPDU
		if n, err := DecodeFPDU(b[:len(b)-1], &f, false); !errors.Is(err, ErrIncomplete) || n != len(b) {
			t.Fatalf("%s: DecodeFPDU prefix: n=%d err=%v", tc.name, n, err)
		}
		// ReadFPDUHeader reads exactly the header.
		r := bytes.NewReader(b)
		buf := make([]byte, UntaggedHeaderLen)
		n, pl, err = ReadFPDUHeader(r, buf, &h)
		if err != nil || n != hl || pl != len(tc.payload) || r.Len() != len(b)-hl {
			t.Fatalf("%s: ReadFPDUHeader n=%d pl=%d left=%d err=%v", tc.name, n, pl, r.Len(), err)
		}
	}
	// The control word is validated before the rest of the header arrives.
	var h Header
	if _, _, err := ParseFPDUHeader(unhex(t, "0014 42 43"), &h); !errors.Is(err, ErrDDPVersion) {
		t.Fatalf("early validation: %v", err)
	}
}

func TestReservedBitsIgnored(t *testing.T) {
	// DDP Rsvd (0x3c of byte 2) and RDMAP Rsv (0x30 of byte 3) set: RFC 5041
	// and RFC 5040 say receivers do not check them.
	b := unhex(t, "0014 | 7d 73 | 00000000 00000000 00000003 00000000 | cafe 0000 | 00000000")
	var f FPDU
	if _, err := DecodeFPDU(b, &f, false); err != nil {
		t.Fatal(err)
	}
	if f.Header.Opcode != OpSend || !f.Header.Last || f.Header.MSN != 3 {
		t.Fatalf("%+v", f.Header)
	}
}

func TestOpcodeProperties(t *testing.T) {
	for op := Opcode(0); op < 16; op++ {
		if op.Valid() != (op <= 7) {
			t.Errorf("%v valid", op)
		}
		if op.String() == "" {
			t.Errorf("empty name for %d", op)
		}
	}
	if !OpWrite.Tagged() || !OpReadResponse.Tagged() || OpSend.Tagged() || OpReadRequest.Tagged() {
		t.Error("Tagged wrong")
	}
	if OpSendSEInvalidate.QN() != 0 || OpReadRequest.QN() != 1 || OpTerminate.QN() != 2 {
		t.Error("QN wrong")
	}
	if !OpSendInvalidate.Invalidates() || !OpSendSEInvalidate.Invalidates() || OpSendSE.Invalidates() {
		t.Error("Invalidates wrong")
	}
	if OpWrite.String() != "RDMA Write" || Opcode(9).String() != "opcode(9)" {
		t.Error("names")
	}
}

func TestReadRequestDecode(t *testing.T) {
	want := ReadRequest{SinkSTag: 1, SinkTO: 2, Size: 3, SrcSTag: 4, SrcTO: 5}
	b := want.Append(nil)
	if len(b) != ReadRequestLen {
		t.Fatalf("len %d", len(b))
	}
	var got ReadRequest
	if err := got.Decode(b); err != nil || got != want {
		t.Fatalf("%+v %v", got, err)
	}
	if err := got.Decode(b[:27]); !errors.Is(err, ErrMessageLength) {
		t.Fatalf("short: %v", err)
	}
}

func TestReadFPDUHeaderErrors(t *testing.T) {
	var h Header
	buf := make([]byte, UntaggedHeaderLen)
	send := unhex(t, fpduGolden[4].hex)
	if _, _, err := ReadFPDUHeader(bytes.NewReader(send), buf[:10], &h); !errors.Is(err, ErrBufferTooSmall) {
		t.Errorf("small buffer: %v", err)
	}
	if _, _, err := ReadFPDUHeader(bytes.NewReader(nil), buf, &h); !errors.Is(err, io.EOF) {
		t.Errorf("empty stream: %v", err)
	}
	if _, _, err := ReadFPDUHeader(bytes.NewReader(send[:3]), buf, &h); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("3 bytes: %v", err)
	}
	if _, _, err := ReadFPDUHeader(bytes.NewReader(send[:4]), buf, &h); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("4 bytes: %v", err)
	}
	if _, _, err := ReadFPDUHeader(bytes.NewReader(send[:12]), buf, &h); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("12 bytes: %v", err)
	}
	// A bad control word is reported after 4 bytes, before reading more.
	bad := unhex(t, fpduBad[1].hex)
	r := bytes.NewReader(bad)
	if _, _, err := ReadFPDUHeader(r, buf, &h); !errors.Is(err, ErrDDPVersion) || r.Len() != len(bad)-4 {
		t.Errorf("bad control word: %v, %d left", err, r.Len())
	}
	// So is a ULPDU_Length shorter than the header: the reader must not
	// wait for header bytes the segment does not have.
	for _, short := range []string{"0000 c1 40", "000d c1 40", "0002 41 43", "0011 41 43"} {
		r := bytes.NewReader(unhex(t, short)) // nothing after the first 4 bytes
		_, _, err := ReadFPDUHeader(r, buf, &h)
		var pe *ProtocolError
		if !errors.Is(err, ErrSegmentShort) || !errors.As(err, &pe) || pe.Code != TermDDPLocalCatastrophic {
			t.Errorf("%s: %v, want ErrSegmentShort with %v", short, err, TermDDPLocalCatastrophic)
		}
	}
	// A bad QN is reported after the full header.
	if _, _, err := ReadFPDUHeader(bytes.NewReader(unhex(t, fpduBad[11].hex)), buf, &h); !errors.Is(err, ErrQN) {
		t.Errorf("bad QN: %v", err)
	}
}

func TestLenAndStrings(t *testing.T) {
	f := mpaGolden[2].frame
	if f.Len() != 32 || f.PDLen() != 12 {
		t.Errorf("MPAFrame.Len %d PDLen %d", f.Len(), f.PDLen())
	}
	term := Terminate{Code: TermDDPUntaggedInvalidQN, Headers: make([]byte, 20)}
	if term.Len() != 24 {
		t.Errorf("Terminate.Len %d", term.Len())
	}
	for _, s := range []string{
		MPARequest.String(), MPAReply.String(), MPAAny.String(), MPAKind(9).String(),
		LayerRDMAP.String(), LayerLLP.String(), TermOrderRFC.String(), TermOrderSiw.String(),
		MakeTermCode(LayerDDP, 3, 3).String(), TermRDMAPLocalCatastrophic.String(),
	} {
		if s == "" {
			t.Error("empty String()")
		}
	}
	if MPAKind(9).Key() != nil || MPAAny.Key() != nil || string(MPARequest.Key()) != "MPA ID Req Frame" {
		t.Error("Key()")
	}
	h := Header{Opcode: OpReadResponse}
	if h.Len() != TaggedHeaderLen {
		t.Error("Header.Len")
	}
	if _, err := AppendFPDU(nil, &Header{Opcode: 12}, nil, false); !errors.Is(err, ErrOpcode) {
		t.Errorf("AppendFPDU bad opcode: %v", err)
	}
	if _, err := AppendTerminateFPDU(nil, &Terminate{Code: MakeTermCode(5, 5, 5)}, 1, false); !errors.Is(err, ErrTermCode) {
		t.Errorf("AppendTerminateFPDU unassigned: %v", err)
	}
}

func TestHeaderString(t *testing.T) {
	for _, tc := range []struct {
		h    Header
		want string
	}{
		{Header{Opcode: OpSend, Last: true, MSN: 1}, "Send L QN=0 MSN=1 MO=0"},
		{Header{Opcode: OpWrite, STag: 0x1201, TO: 0x2000}, "RDMA Write STag=0x1201 TO=0x2000"},
		{Header{Opcode: OpSendInvalidate, Last: true, MSN: 2, InvalidateSTag: 0xab01}, "Send with Invalidate L QN=0 MSN=2 MO=0 InvalidateSTag=0xab01"},
	} {
		if got := tc.h.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	term := Terminate{Code: TermLLPInsufficientIRD, Ambiguous: true, AltCode: TermRDMAPUnexpectedOpcode}
	if s := term.String(); !strings.Contains(s, "insufficient IRD") || !strings.Contains(s, "unexpected opcode") {
		t.Errorf("Terminate.String() = %q", s)
	}
}
