package iwarp

import (
	"bytes"
	"errors"
	"testing"
)

// Headers copied into siw's Terminates in the vectors below.
const (
	hexSendQN5 = "0016 41 43 00000000 00000005 00000001 00000000"   // Send to QN 5 (20 bytes)
	hexSend    = "0016 41 43 00000000 00000000 00000009 00000000"   // Send, MSN 9 (20 bytes)
	hexWrite   = "0012 c1 40 0000dead 0000000000000000"             // RDMA Write (16 bytes)
	hexRReq    = "002e 41 41 00000000 00000001 00000001 00000000" + // Read Request header
		"00000100 0000000000000000 00001000 0000beef 0000000000000000" // and body (48 bytes)
)

// TestTerminateSiwOrder decodes Terminate bodies as siw (x86) sends them:
// first byte EType<<4 | Layer, M/D/R at 0x01/0x02/0x04 of the third byte
// (notes §8; siw iwarp.h little-endian bitfields). The first bytes are the
// ones observed in the lab.
func TestTerminateSiwOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hex     string
		code    TermCode
		m, d, r bool
	}{
		// Corrupted CRC: 0x02 = LLP(2), EType 0; ECode 0x02; no copy.
		{"crc", "02 02 00 00", TermLLPCRCError, false, false, false},
		// Untagged message to QN 5: 0x21 = DDP(1), EType 2; ECode 1; M|D = 0x03.
		{"invalid-qn", "21 01 03 00" + hexSendQN5, TermDDPUntaggedInvalidQN, true, true, false},
		// MSN out of range: ECode 3.
		{"msn-range", "21 03 03 00" + hexSend, TermDDPUntaggedMSNRange, true, true, false},
		// DDP version 2: ECode 6, no copy (layout unknown).
		{"ddp-version", "21 06 00 00", TermDDPUntaggedInvalidVersion, false, false, false},
		// Send bigger than the posted receive: ECode 2.
		{"no-buffer", "21 02 03 00" + hexSend, TermDDPUntaggedMSNNoBuffer, true, true, false},
		// Write to an unknown STag: 0x11 (DDP, tagged), ECode 0, M|D.
		{"write-stag", "11 00 03 00" + hexWrite, TermDDPTaggedInvalidSTag, true, true, false},
		// Read Request for an unknown source STag: 0x10 = RDMAP(0), EType 1
		// (remote protection), ECode 0; M|D|R = 0x07 and 48 bytes.
		{"rreq-stag", "10 00 07 00" + hexRReq, TermRDMAPInvalidSTag, true, true, true},
		// Opcode 9 → RDMAP remote operation (0x20), unexpected opcode, no
		// copy: ambiguous with RFC-order LLP insufficient IRD, see
		// TestTerminateAmbiguous.
	} {
		t.Run(tc.name, func(t *testing.T) {
			var term Terminate
			if err := term.Decode(unhex(t, tc.hex)); err != nil {
				t.Fatal(err)
			}
			if term.Order != TermOrderSiw {
				t.Errorf("order %v, want siw", term.Order)
			}
			if term.Code != tc.code {
				t.Errorf("code %v, want %v", term.Code, tc.code)
			}
			if term.SegLenValid != tc.m || term.HasDDPHeader != tc.d || term.HasRDMAPHeader != tc.r {
				t.Errorf("M/D/R = %v/%v/%v, want %v/%v/%v", term.SegLenValid, term.HasDDPHeader, term.HasRDMAPHeader, tc.m, tc.d, tc.r)
			}
			if tc.r && len(term.RDMAPHeader()) != ReadRequestLen {
				t.Errorf("RDMAP header %d bytes", len(term.RDMAPHeader()))
			}
			// The copied DDP header parses as the offending FPDU header.
			if tc.d {
				var h Header
				_, _, err := ParseFPDUHeader(term.DDPHeader(), &h)
				if tc.code == TermDDPUntaggedInvalidQN {
					if !errors.Is(err, ErrQN) {
						t.Errorf("copied header: %v", err)
					}
				} else if err != nil {
					t.Errorf("copied header: %v", err)
				}
			}
			// Re-encoding writes RFC order, which decodes to the same values.
			out, err := term.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			var back Terminate
			if err := back.Decode(out); err != nil {
				t.Fatal(err)
			}
			if back.Order != TermOrderRFC || back.Code != term.Code || back.SegLenValid != term.SegLenValid ||
				back.HasDDPHeader != term.HasDDPHeader || back.HasRDMAPHeader != term.HasRDMAPHeader ||
				!bytes.Equal(back.Headers, term.Headers) {
				t.Errorf("RFC round trip: %+v vs %+v", back, term)
			}
		})
	}
}

// TestTerminateRFCOrder decodes RFC-order bodies, written by hand from
// the RFC 5040 Terminate Header: Layer<<4|EType, ECode, M 0x80|D 0x40|R 0x20, 0.
func TestTerminateRFCOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hex     string
		code    TermCode
		m, d, r bool
	}{
		{"invalid-qn", "12 01 c0 00" + hexSendQN5, TermDDPUntaggedInvalidQN, true, true, false},
		{"crc", "20 02 00 00", TermLLPCRCError, false, false, false},
		{"insufficient-ird", "20 06 00 00", TermLLPInsufficientIRD, false, false, false},
		{"no-matching-rtr", "20 07 00 00", TermLLPNoMatchingRTR, false, false, false},
		{"rreq-stag", "01 00 e0 00" + hexRReq, TermRDMAPInvalidSTag, true, true, true},
		{"write-stag", "11 00 c0 00" + hexWrite, TermDDPTaggedInvalidSTag, true, true, false},
		{"local-catastrophic-any-code", "00 ff 00 00", MakeTermCode(LayerRDMAP, 0, 0xff), false, false, false},
		// Neither reading plausible: RFC reading, unknown code.
		{"unknown", "33 33 00 00", MakeTermCode(3, 3, 0x33), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var term Terminate
			b := unhex(t, tc.hex)
			if err := term.Decode(b); err != nil {
				t.Fatal(err)
			}
			if term.Order != TermOrderRFC || term.Code != tc.code ||
				term.SegLenValid != tc.m || term.HasDDPHeader != tc.d || term.HasRDMAPHeader != tc.r {
				t.Fatalf("got %+v (code %v)", term, term.Code)
			}
			out, err := term.Append(nil)
			if !term.Code.Known() {
				if !errors.Is(err, ErrTermCode) {
					t.Fatalf("unassigned code encoded: %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(out, b) {
				t.Fatalf("re-encode %x, want %x (%v)", out, b, err)
			}
		})
	}
}

func TestTerminateAmbiguous(t *testing.T) {
	for _, tc := range []struct {
		hex      string
		rfc, siw TermCode
	}{
		// siw's "unexpected opcode" vs RFC "insufficient IRD".
		{"20 06 00 00", TermLLPInsufficientIRD, TermRDMAPUnexpectedOpcode},
		// siw's "insufficient IRD" vs RFC "unexpected opcode".
		{"02 06 00 00", TermRDMAPUnexpectedOpcode, TermLLPInsufficientIRD},
		{"02 05 00 00", TermRDMAPInvalidVersion, TermLLPLocalCatastrophic},
		{"01 00 00 00", TermRDMAPInvalidSTag, TermDDPLocalCatastrophic},
	} {
		b := unhex(t, tc.hex)
		var term Terminate
		if err := term.Decode(b); err != nil {
			t.Fatal(err)
		}
		if !term.Ambiguous || term.Order != TermOrderRFC || term.Code != tc.rfc || term.AltCode != tc.siw {
			t.Errorf("%s: Decode: %+v", tc.hex, term)
		}
		if err := term.DecodeAs(b, TermOrderSiw); err != nil {
			t.Fatal(err)
		}
		if !term.Ambiguous || term.Order != TermOrderSiw || term.Code != tc.siw || term.AltCode != tc.rfc {
			t.Errorf("%s: DecodeAs siw: %+v", tc.hex, term)
		}
	}
	// Symmetric bytes (same code both ways) are not ambiguous, and a
	// preference never overrides an unambiguous reading.
	var term Terminate
	if err := term.DecodeAs(unhex(t, "11 00 00 00"), TermOrderSiw); err != nil || term.Ambiguous || term.Code != TermDDPTaggedInvalidSTag {
		t.Errorf("symmetric: %+v %v", term, err)
	}
	if err := term.DecodeAs(unhex(t, "12 01 c0 00"+hexSendQN5), TermOrderSiw); err != nil || term.Ambiguous || term.Order != TermOrderRFC {
		t.Errorf("RFC-only with siw preference: %+v %v", term, err)
	}
	if err := term.DecodeAs(unhex(t, "02 02 00 00"), TermOrderRFC); err != nil || term.Ambiguous || term.Order != TermOrderSiw {
		t.Errorf("siw-only with RFC preference: %+v %v", term, err)
	}
}

func TestTerminateErrors(t *testing.T) {
	var term Terminate
	// D set but the DDP header copy is cut short: an error, but the
	// Terminate Control is read (a receiver reports the peer's code).
	if err := term.Decode(unhex(t, "12 01 c0 00 0016 41 43 000000")); !errors.Is(err, ErrTerminateShort) {
		t.Errorf("short copy: %v", err)
	}
	if term.Code != TermDDPUntaggedInvalidQN || term.Order != TermOrderRFC || !term.SegLenValid || !term.HasDDPHeader ||
		len(term.Headers) != 7 || term.DDPHeader() != nil {
		t.Errorf("short copy decoded as %v", &term)
	}
	if err := term.Decode(unhex(t, "12 01 c0 00 00")); !errors.Is(err, ErrTerminateShort) {
		t.Errorf("1-byte copy: %v", err)
	}
	if err := term.Decode(unhex(t, "21 01 03 00 00")); !errors.Is(err, ErrTerminateShort) || term.Code != TermDDPUntaggedInvalidQN ||
		term.Order != TermOrderSiw || !term.HasDDPHeader {
		t.Errorf("1-byte copy, siw order: %v, decoded as %v", err, &term)
	}
	// Without a whole control word nothing is read, and nothing is kept
	// from the Terminate decoded before.
	if err := term.Decode(unhex(t, "1201c0")); !errors.Is(err, ErrTerminateShort) {
		t.Errorf("3 bytes: %v", err)
	}
	if term.Code != 0 || term.HasDDPHeader || term.Headers != nil {
		t.Errorf("3 bytes decoded as %v", &term)
	}
	bad := Terminate{Code: TermDDPUntaggedInvalidQN, HasDDPHeader: true, Headers: []byte{0, 1}}
	if _, err := bad.Append(nil); !errors.Is(err, ErrTerminateShort) {
		t.Errorf("encode short copy: %v", err)
	}
	big := Terminate{Code: TermDDPUntaggedInvalidQN, Headers: make([]byte, 49)}
	if _, err := AppendTerminateFPDU(nil, &big, 1, false); err == nil {
		t.Error("oversized Terminate encoded")
	}
	if (&Terminate{HasDDPHeader: true, Headers: []byte{1}}).DDPHeader() != nil {
		t.Error("DDPHeader of short copy")
	}
}

func TestTerminateFPDUGolden(t *testing.T) {
	// siw's own layout for a Terminate FPDU: QN 2, MSN 1, MO 0, L.
	term := Terminate{Code: TermLLPCRCError}
	got, err := AppendTerminateFPDU(nil, &term, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	// ULPDU = 18 + 4 = 22 = 0x16, pad 0; body 20 02 00 00 (RFC order).
	want := unhex(t, "0016 | 41 47 | 00000000 00000002 00000001 00000000 | 20 02 00 00 | 00000000")
	if !bytes.Equal(got, want) {
		t.Fatalf("got %x\nwant %x", got, want)
	}
	got, _ = AppendTerminateFPDU(nil, &term, 1, true)
	if !bytes.Equal(got, withRefCRC(want)) {
		t.Fatalf("CRC form %x", got)
	}
}

func TestTermCodeTable(t *testing.T) {
	// Numbers from RFC 5040, RFC 5041, RFC 5044, RFC 6581 §8
	// (also IANA RDDP registries, RFC 6580), as layer/etype/ecode.
	for _, tc := range []struct {
		c            TermCode
		layer        Layer
		etype, ecode uint8
	}{
		{TermRDMAPInvalidSTag, 0, 1, 0x00},
		{TermRDMAPBaseBounds, 0, 1, 0x01},
		{TermRDMAPAccessRights, 0, 1, 0x02},
		{TermRDMAPSTagNotAssociated, 0, 1, 0x03},
		{TermRDMAPTOWrap, 0, 1, 0x04},
		{TermRDMAPProtCannotInvalidate, 0, 1, 0x09},
		{TermRDMAPProtectionUnspecified, 0, 1, 0xff},
		{TermRDMAPInvalidVersion, 0, 2, 0x05},
		{TermRDMAPUnexpectedOpcode, 0, 2, 0x06},
		{TermRDMAPCatastrophicStream, 0, 2, 0x07},
		{TermRDMAPCatastrophicGlobal, 0, 2, 0x08},
		{TermRDMAPOpCannotInvalidate, 0, 2, 0x09},
		{TermRDMAPRemoteOpUnspecified, 0, 2, 0xff},
		{TermDDPLocalCatastrophic, 1, 0, 0x00},
		{TermDDPTaggedInvalidSTag, 1, 1, 0x00},
		{TermDDPTaggedBaseBounds, 1, 1, 0x01},
		{TermDDPTaggedSTagNotAssociated, 1, 1, 0x02},
		{TermDDPTaggedTOWrap, 1, 1, 0x03},
		{TermDDPTaggedInvalidVersion, 1, 1, 0x04},
		{TermDDPUntaggedInvalidQN, 1, 2, 0x01},
		{TermDDPUntaggedMSNNoBuffer, 1, 2, 0x02},
		{TermDDPUntaggedMSNRange, 1, 2, 0x03},
		{TermDDPUntaggedInvalidMO, 1, 2, 0x04},
		{TermDDPUntaggedMessageTooLong, 1, 2, 0x05},
		{TermDDPUntaggedInvalidVersion, 1, 2, 0x06},
		{TermLLPConnectionLost, 2, 0, 0x01},
		{TermLLPCRCError, 2, 0, 0x02},
		{TermLLPFPDUStart, 2, 0, 0x03},
		{TermLLPInvalidRequestReply, 2, 0, 0x04},
		{TermLLPLocalCatastrophic, 2, 0, 0x05},
		{TermLLPInsufficientIRD, 2, 0, 0x06},
		{TermLLPNoMatchingRTR, 2, 0, 0x07},
	} {
		if tc.c.Layer() != tc.layer || tc.c.EType() != tc.etype || tc.c.ECode() != tc.ecode {
			t.Errorf("%v: got %d/%d/%#x", tc.c, tc.c.Layer(), tc.c.EType(), tc.c.ECode())
		}
		if MakeTermCode(tc.layer, tc.etype, tc.ecode) != tc.c || !tc.c.Known() {
			t.Errorf("%v: MakeTermCode/Known", tc.c)
		}
	}
	if MakeTermCode(LayerDDP, 3, 0).Known() || MakeTermCode(LayerLLP, 1, 2).Known() || MakeTermCode(3, 0, 0).Known() {
		t.Error("unassigned codes reported known")
	}
	if s := TermLLPCRCError.String(); s != "2/0/0x02 (MPA: CRC error)" {
		t.Errorf("String() = %q", s)
	}
	if LayerDDP.String() != "DDP" || Layer(7).String() != "layer(7)" {
		t.Error("layer names")
	}
}
