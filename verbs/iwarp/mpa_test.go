package iwarp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unhex decodes a hex string, ignoring spaces, newlines and "|" separators
// used to show field boundaries in the vectors below.
// t may be nil for package-level vectors.
func unhex(t testing.TB, s string) []byte {
	if t != nil {
		t.Helper()
	}
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		if t == nil {
			panic("bad hex in test vector: " + err.Error())
		}
		t.Fatalf("bad hex in test vector: %v", err)
	}
	return b
}

func readSample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "siw", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	hexKeyReq = "4d504120494420526571204672616d65" // "MPA ID Req Frame" (RFC 5044)
	hexKeyRep = "4d504120494420526570204672616d65" // "MPA ID Rep Frame"
)

// mpaGolden are MPA frames written by hand from RFC 5044 and RFC 6581
// §6/§9. Each hex string shows key | flags rev | PD_Length | [IRD ORD] | data.
var mpaGolden = []struct {
	name  string
	frame MPAFrame
	hex   string
}{
	{
		// Rev 1 request, no flags: flags 0x00, Rev 0x01, PD_Length 5, "hello".
		name:  "rev1-request",
		frame: MPAFrame{Kind: MPARequest, Revision: 1, PrivateData: []byte("hello")},
		hex:   hexKeyReq + "| 00 01 | 0005 | 68656c6c6f",
	},
	{
		// Rev 1 reply accepting CRC: C = 0x40; no private data.
		name:  "rev1-reply-crc",
		frame: MPAFrame{Kind: MPAReply, Flags: FlagCRC, Revision: 1},
		hex:   hexKeyRep + "| 40 01 | 0000",
	},
	{
		// Rev 2 enhanced request, what xprtrdma sends over siw: E = 0x10,
		// PD_Length 12 = 4 (IRD/ORD) + 8 (RFC 8797 block); IRD 128 = 0x0080,
		// ORD 0.
		name: "rev2-enhanced-request",
		frame: MPAFrame{Kind: MPARequest, Flags: FlagEnhanced, Revision: 2, IRD: 128, ORD: 0,
			PrivateData: []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03}},
		hex: hexKeyReq + "| 10 02 | 000c | 0080 0000 | f6ab0e18 01010303",
	},
	{
		// Rev 2 enhanced request with CRC, peer-to-peer and all three RTR
		// options: flags C|E = 0x50; IRD word A 0x8000 | B 0x4000 | 16 = 0xc010;
		// ORD word C 0x8000 | D 0x4000 | 8 = 0xc008; PD_Length 4.
		name: "rev2-crc-p2p-rtr",
		frame: MPAFrame{Kind: MPARequest, Flags: FlagCRC | FlagEnhanced, Revision: 2, IRD: 16, ORD: 8,
			PeerToPeer: true, RTR: RTRSend | RTRWrite | RTRRead},
		hex: hexKeyReq + "| 50 02 | 0004 | c010 c008",
	},
	{
		// Rev 2 reply to a peer-to-peer request choosing the RDMA Write RTR
		// only: the responder MUST echo A (RFC 6581 §9.2), so IRD word =
		// A 0x8000 | 1 = 0x8001; ORD word = C 0x8000 | 1 = 0x8001.
		name: "rev2-reply-p2p-write-rtr",
		frame: MPAFrame{Kind: MPAReply, Flags: FlagEnhanced, Revision: 2, IRD: 1, ORD: 1,
			PeerToPeer: true, RTR: RTRWrite},
		hex: hexKeyRep + "| 10 02 | 0004 | 8001 8001",
	},
	{
		// Enhanced reject with private data: R|E = 0x30, IRD 0, ORD 0 (the
		// responder's values), ULP data "no" → PD_Length 6.
		name:  "rev2-reject",
		frame: MPAFrame{Kind: MPAReply, Flags: FlagReject | FlagEnhanced, Revision: 2, PrivateData: []byte("no")},
		hex:   hexKeyRep + "| 30 02 | 0006 | 0000 0000 | 6e6f",
	},
	{
		// Rev 1 reject without enhanced data: R = 0x20, ULP data "busy".
		name:  "rev1-reject",
		frame: MPAFrame{Kind: MPAReply, Flags: FlagReject, Revision: 1, PrivateData: []byte("busy")},
		hex:   hexKeyRep + "| 20 01 | 0004 | 62757379",
	},
	{
		// The E bit with Rev 1 is a reserved bit (RFC 6581 §6): no IRD/ORD
		// block, all private data belongs to the ULP.
		name:  "rev1-with-E-bit",
		frame: MPAFrame{Kind: MPARequest, Flags: FlagEnhanced, Revision: 1, PrivateData: []byte{1, 2}},
		hex:   hexKeyReq + "| 10 01 | 0002 | 0102",
	},
}

func TestMPAGolden(t *testing.T) {
	for _, tc := range mpaGolden {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			got, err := tc.frame.Append(nil)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Append:\n got %x\nwant %x", got, want)
			}
			var f MPAFrame
			n, err := f.Decode(want, tc.frame.Kind)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if n != len(want) {
				t.Fatalf("Decode consumed %d of %d", n, len(want))
			}
			checkMPAEqual(t, &f, &tc.frame)
			// Streaming read of the same bytes followed by junk: the reader
			// must stop exactly at the frame's end.
			r := bytes.NewReader(append(append([]byte(nil), want...), 0xde, 0xad))
			buf := make([]byte, MaxMPAFrameLen)
			rf, err := ReadMPAFrame(r, buf, tc.frame.Kind)
			if err != nil {
				t.Fatalf("ReadMPAFrame: %v", err)
			}
			checkMPAEqual(t, &rf, &tc.frame)
			if r.Len() != 2 {
				t.Fatalf("ReadMPAFrame left %d bytes unread, want 2", r.Len())
			}
		})
	}
}

func checkMPAEqual(t *testing.T, got, want *MPAFrame) {
	t.Helper()
	if got.Kind != want.Kind || got.Flags != want.Flags || got.Revision != want.Revision ||
		got.IRD != want.IRD || got.ORD != want.ORD || got.PeerToPeer != want.PeerToPeer ||
		got.RTR != want.RTR || !bytes.Equal(got.PrivateData, want.PrivateData) {
		t.Fatalf("frame mismatch:\n got %+v\nwant %+v", *got, *want)
	}
}

// TestMPALinuxXprtrdmaRequest parses the MPA Request a Linux NFS client
// (xprtrdma over siw) sent in the lab and checks every field (notes §0.1).
func TestMPALinuxXprtrdmaRequest(t *testing.T) {
	b := readSample(t, "xprtrdma-siw-client-to-host.bin")
	var f MPAFrame
	n, err := f.Decode(b, MPARequest)
	if err != nil {
		t.Fatal(err)
	}
	if n != 32 {
		t.Errorf("frame length %d, want 32", n)
	}
	if f.Kind != MPARequest || f.Flags != FlagEnhanced || f.Revision != 2 || !f.Enhanced() {
		t.Errorf("kind/flags/rev = %v/%#x/%d, want request/0x10/2 enhanced", f.Kind, f.Flags, f.Revision)
	}
	if f.CRC() || f.Rejected() || f.Flags&FlagMarkers != 0 {
		t.Errorf("unexpected C/R/M in %#x", f.Flags)
	}
	if f.PDLen() != 12 {
		t.Errorf("PD_Length %d, want 12", f.PDLen())
	}
	if f.IRD != 128 || f.ORD != 0 || f.PeerToPeer || f.RTR != 0 {
		t.Errorf("IRD/ORD/P2P/RTR = %d/%d/%v/%v, want 128/0/false/0", f.IRD, f.ORD, f.PeerToPeer, f.RTR)
	}
	if want := unhex(t, "f6ab0e18 01010303"); !bytes.Equal(f.PrivateData, want) {
		t.Errorf("private data %x, want %x", f.PrivateData, want)
	}
	// Re-encoding gives the same bytes.
	if out, err := f.Append(nil); err != nil || !bytes.Equal(out, b[:n]) {
		t.Errorf("re-encode: %x, %v; want %x", out, err, b[:n])
	}
	// The first FPDU follows immediately: a Send, MSN 1, 68 bytes, no CRC.
	var fp FPDU
	m, err := DecodeFPDU(b[n:], &fp, false)
	if err != nil {
		t.Fatal(err)
	}
	if m != len(b)-n || fp.Header.Opcode != OpSend || !fp.Header.Last || fp.Header.QN != 0 ||
		fp.Header.MSN != 1 || fp.Header.MO != 0 || len(fp.Payload) != 68 {
		t.Errorf("FPDU: n=%d header=%+v payload %d bytes", m, fp.Header, len(fp.Payload))
	}
}

// TestMPAKnfsdReply checks the MPA Reply knfsd (svcrdma over siw) sent to the
// lab probe that asked for CRC: C|E, rev 2, IRD 0, ORD 128 and the RFC 8797
// block with server flags 0.
func TestMPAKnfsdReply(t *testing.T) {
	b := readSample(t, "crc-probe-mpa-reply.bin")
	var f MPAFrame
	if _, err := f.Decode(b, MPAReply); err != nil {
		t.Fatal(err)
	}
	if f.Flags != FlagCRC|FlagEnhanced || !f.CRC() || f.Revision != 2 || f.IRD != 0 || f.ORD != 128 {
		t.Errorf("got %+v", f)
	}
	if want := unhex(t, "f6ab0e18 01000303"); !bytes.Equal(f.PrivateData, want) {
		t.Errorf("private data %x, want %x", f.PrivateData, want)
	}
	req := readSample(t, "crc-probe-mpa-request.bin")
	if _, err := f.Decode(req, MPARequest); err != nil || f.IRD != 128 || f.ORD != 0 || !f.CRC() {
		t.Errorf("request: %+v, %v", f, err)
	}
	rping := readSample(t, "rping-siw-client-to-host.bin")
	n, err := f.Decode(rping, MPARequest)
	if err != nil || n != 24 || f.IRD != 1 || f.ORD != 1 || len(f.PrivateData) != 0 {
		t.Errorf("rping request: n=%d %+v, %v", n, f, err)
	}
}

// mpaBad lists one frame per MPA validation rule, with the sentinel expected.
var mpaBad = []struct {
	name string
	want MPAKind
	hex  string
	err  error
}{
	{"bad-key", MPARequest, "4d504120494420526571204672616d66 | 10 02 | 0004 | 00010001", ErrMPAKey},
	{"reply-key-when-request-expected", MPARequest, hexKeyRep + "| 10 02 | 0004 | 00010001", ErrMPAKey},
	{"request-key-when-reply-expected", MPAReply, hexKeyReq + "| 00 01 | 0000", ErrMPAKey},
	{"revision-3", MPAAny, hexKeyReq + "| 00 03 | 0000", ErrMPARevision},
	{"markers", MPAAny, hexKeyReq + "| 80 01 | 0000", ErrMPAMarkers},
	{"enhanced-pd-short", MPAAny, hexKeyReq + "| 10 02 | 0003 | 000100", ErrMPAEnhancedShort},
	{"enhanced-pd-zero", MPAAny, hexKeyRep + "| 10 02 | 0000", ErrMPAEnhancedShort},
	{"pd-too-long", MPAAny, hexKeyReq + "| 00 01 | 0101", ErrPrivateDataTooLong},
	// What a hostile initiator sends (verbs/soft answers each with a Reject).
	{"revision-3-enhanced", MPARequest, hexKeyReq + "| 10 03 | 0004 | 00100010", ErrMPARevision},
	{"revision-255", MPARequest, hexKeyReq + "| 00 ff | 0000", ErrMPARevision},
	{"garbage-key", MPARequest, "474554202f20485454502f312e310d0a | 00 01 | 0000", ErrMPAKey},
	{"markers-enhanced", MPARequest, hexKeyReq + "| 90 02 | 0004 | 00100010", ErrMPAMarkers},
	{"enhanced-pd-two", MPARequest, hexKeyReq + "| 10 02 | 0002 | 0010", ErrMPAEnhancedShort},
	{"pd-max", MPARequest, hexKeyReq + "| 10 02 | ffff", ErrPrivateDataTooLong},
}

func TestMPAValidation(t *testing.T) {
	for _, tc := range mpaBad {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.hex)
			var f MPAFrame
			_, err := f.Decode(b, tc.want)
			if !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Code != TermLLPInvalidRequestReply {
				t.Fatalf("got %#v, want ProtocolError with %v", err, TermLLPInvalidRequestReply)
			}
			_, err = ReadMPAFrame(bytes.NewReader(b), make([]byte, MaxMPAFrameLen), tc.want)
			if !errors.Is(err, tc.err) {
				t.Fatalf("ReadMPAFrame: got %v, want %v", err, tc.err)
			}
		})
	}
}

func TestMPABadKeyMessage(t *testing.T) {
	var f MPAFrame
	_, err := f.Decode(unhex(t, hexKeyRep+"| 00 01 | 0000"), MPARequest)
	if err == nil || !strings.Contains(err.Error(), `expected "MPA ID Req Frame"`) ||
		!strings.Contains(err.Error(), `got "MPA ID Rep Frame"`) {
		t.Fatalf("error should say which key was expected: %v", err)
	}
}

func TestMPAIncomplete(t *testing.T) {
	full := unhex(t, mpaGolden[2].hex)
	var f MPAFrame
	for i := 0; i < len(full); i++ {
		n, err := f.Decode(full[:i], MPARequest)
		if !errors.Is(err, ErrIncomplete) {
			t.Fatalf("Decode(%d bytes): %v, want ErrIncomplete", i, err)
		}
		want := MPAHeaderLen
		if i >= MPAHeaderLen {
			want = len(full)
		}
		if n != want {
			t.Fatalf("Decode(%d bytes) needs %d, want %d", i, n, want)
		}
	}
	// A short stream.
	_, err := ReadMPAFrame(bytes.NewReader(full[:25]), make([]byte, MaxMPAFrameLen), MPARequest)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadMPAFrame short: %v", err)
	}
	_, err = ReadMPAFrame(bytes.NewReader(nil), make([]byte, MaxMPAFrameLen), MPARequest)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("ReadMPAFrame empty: %v", err)
	}
	_, err = ReadMPAFrame(bytes.NewReader(full), make([]byte, 100), MPARequest)
	if !errors.Is(err, ErrBufferTooSmall) {
		t.Fatalf("ReadMPAFrame small buffer: %v", err)
	}
}

func TestMPAEncodeLimits(t *testing.T) {
	pd := make([]byte, 257)
	cases := []struct {
		name string
		f    MPAFrame
		err  error
	}{
		{"253-enhanced", MPAFrame{Kind: MPARequest, Flags: FlagEnhanced, Revision: 2, PrivateData: pd[:253]}, ErrPrivateDataTooLong},
		{"257-plain", MPAFrame{Kind: MPARequest, Revision: 1, PrivateData: pd}, ErrPrivateDataTooLong},
		{"rev3", MPAFrame{Kind: MPARequest, Revision: 3}, ErrMPARevision},
		{"markers", MPAFrame{Kind: MPARequest, Revision: 1, Flags: FlagMarkers}, ErrMPAMarkers},
		{"ird-15-bits", MPAFrame{Kind: MPARequest, Flags: FlagEnhanced, Revision: 2, IRD: 0x4000}, ErrMPAIRDORD},
	}
	for _, tc := range cases {
		if _, err := tc.f.Append(nil); !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.err)
		}
	}
	if _, err := (&MPAFrame{Kind: MPAAny, Revision: 1}).Append(nil); err == nil {
		t.Error("MPAAny frame encoded")
	}
	// The limits themselves are fine: 252 ULP bytes enhanced, 256 plain.
	for _, f := range []MPAFrame{
		{Kind: MPARequest, Flags: FlagEnhanced, Revision: 2, PrivateData: pd[:252]},
		{Kind: MPAReply, Revision: 1, PrivateData: pd[:256]},
	} {
		b, err := f.Append(nil)
		if err != nil || len(b) != MaxMPAFrameLen {
			t.Errorf("limit frame: %d bytes, %v", len(b), err)
		}
		var g MPAFrame
		if _, err := g.Decode(b, MPAAny); err != nil {
			t.Errorf("decode limit frame: %v", err)
		}
	}
}

func TestMPASiwGSOBitPreserved(t *testing.T) {
	// siw's private GSO bit sits in RFC 5044's reserved field: accepted,
	// preserved, not interpreted.
	b := unhex(t, hexKeyReq+"| 18 02 | 0004 | 00800000")
	var f MPAFrame
	if _, err := f.Decode(b, MPARequest); err != nil {
		t.Fatal(err)
	}
	if f.Flags&FlagSiwGSO == 0 || f.IRD != 128 {
		t.Fatalf("got %+v", f)
	}
	out, _ := f.Append(nil)
	if !bytes.Equal(out, b) {
		t.Fatalf("re-encode %x, want %x", out, b)
	}
}

func TestMPARevisionZeroAccepted(t *testing.T) {
	// siw accepts Rev 0 (pre-RFC MPA); so do we, without enhanced data.
	var f MPAFrame
	if _, err := f.Decode(unhex(t, hexKeyReq+"| 10 00 | 0000"), MPARequest); err != nil || f.Enhanced() {
		t.Fatalf("rev 0: %+v %v", f, err)
	}
}
