package iwarp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"testing"
)

// refCRC32c is a bit-at-a-time CRC32c (reflected polynomial 0x82F63B78,
// initial value and final xor 0xffffffff), written independently of
// hash/crc32 so the golden CRCs below do not depend on the code under test.
func refCRC32c(b []byte) uint32 {
	c := uint32(0xffffffff)
	for _, x := range b {
		c ^= uint32(x)
		for i := 0; i < 8; i++ {
			if c&1 != 0 {
				c = c>>1 ^ 0x82f63b78
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

// withRefCRC returns fpdu with its last 4 bytes replaced by the reference
// CRC over the rest, little-endian as siw puts it on the wire.
func withRefCRC(fpdu []byte) []byte {
	out := append([]byte(nil), fpdu...)
	binary.LittleEndian.PutUint32(out[len(out)-4:], refCRC32c(out[:len(out)-4]))
	return out
}

func TestRefCRC32cKnownValue(t *testing.T) {
	// The CRC32c check value (RFC 3720 appendix B.4 / the common "123456789" check).
	if got := refCRC32c([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("reference CRC32c = %#x", got)
	}
	if got := UpdateCRC(UpdateCRC(0, []byte("1234")), []byte("56789")); got != 0xe3069283 {
		t.Fatalf("UpdateCRC in two pieces = %#x", got)
	}
}

// fpduGolden has one FPDU per RDMAP opcode, written by hand from RFC 5044,
// RFC 5041 and RFC 5040 (and the control bytes in notes §0.2). Each
// hex string shows: ULPDU_Length | DDP ctrl, RDMAP ctrl | header fields |
// payload | pad | CRC (zero: the no-CRC form; the CRC form is derived with
// refCRC32c).
var fpduGolden = []struct {
	name    string
	hdr     Header
	payload []byte
	hex     string
}{
	{
		// RDMA Write, last segment, 5 bytes: ULPDU_Length = 14 (tagged header
		// without the length field) + 5 = 19 = 0x0013; ctrl T|L|DV1 = 0xc1,
		// RV1|op0 = 0x40; pad = -(2+19) mod 4 = 3.
		name:    "write",
		hdr:     Header{Opcode: OpWrite, Last: true, STag: 0x11223344, TO: 0x0000000100000200},
		payload: []byte("abcde"),
		hex:     "0013 | c1 40 | 11223344 | 0000000100000200 | 6162636465 | 000000 | 00000000",
	},
	{
		// RDMA Write, not last: ctrl 0x81 (T, no L), 8 bytes, ULPDU 22, pad 0.
		name:    "write-not-last",
		hdr:     Header{Opcode: OpWrite, STag: 1, TO: 0},
		payload: []byte("01234567"),
		hex:     "0016 | 81 40 | 00000001 | 0000000000000000 | 3031323334353637 | 00000000",
	},
	{
		// RDMA Read Request: untagged QN 1, MSN 1, MO 0, body 28 bytes:
		// ULPDU = 18 + 28 = 46 = 0x2e, pad 0; ctrl 0x41 0x41.
		name: "read-request",
		hdr:  Header{Opcode: OpReadRequest, Last: true, QN: 1, MSN: 1},
		payload: (&ReadRequest{SinkSTag: 0xaabbccdd, SinkTO: 0x1000, Size: 0x2000,
			SrcSTag: 0x01020304, SrcTO: 0xffff888800001000}).Append(nil),
		hex: "002e | 41 41 | 00000000 | 00000001 | 00000001 | 00000000 |" +
			" aabbccdd | 0000000000001000 | 00002000 | 01020304 | ffff888800001000 | 00000000",
	},
	{
		// RDMA Read Response, last: ctrl 0xc1 0x42, 4 bytes: ULPDU 18, pad 0.
		name:    "read-response",
		hdr:     Header{Opcode: OpReadResponse, Last: true, STag: 0xaabbccdd, TO: 0x1000},
		payload: []byte{9, 8, 7, 6},
		hex:     "0012 | c1 42 | aabbccdd | 0000000000001000 | 09080706 | 00000000",
	},
	{
		// Send, last, MSN 3: ctrl 0x41 0x43, 2 bytes: ULPDU 20, pad 2.
		name:    "send",
		hdr:     Header{Opcode: OpSend, Last: true, MSN: 3},
		payload: []byte{0xca, 0xfe},
		hex:     "0014 | 41 43 | 00000000 | 00000000 | 00000003 | 00000000 | cafe | 0000 | 00000000",
	},
	{
		// Send with Invalidate: the STag to invalidate in RsvdULP[8:39];
		// ctrl 0x41 0x44; 1 byte: ULPDU 19, pad 3.
		name:    "send-invalidate",
		hdr:     Header{Opcode: OpSendInvalidate, Last: true, InvalidateSTag: 0x0000ab01, MSN: 7},
		payload: []byte("x"),
		hex:     "0013 | 41 44 | 0000ab01 | 00000000 | 00000007 | 00000000 | 78 | 000000 | 00000000",
	},
	{
		// Send with SE, first of two segments: ctrl 0x01 (no L) 0x45, 8 bytes,
		// MO 0: ULPDU 26, pad 0.
		name:    "send-se-not-last",
		hdr:     Header{Opcode: OpSendSE, MSN: 9},
		payload: []byte("abcdefgh"),
		hex:     "001a | 01 45 | 00000000 | 00000000 | 00000009 | 00000000 | 6162636465666768 | 00000000",
	},
	{
		// Send with SE and Invalidate, last segment at MO 8: ctrl 0x41 0x46.
		name:    "send-se-invalidate",
		hdr:     Header{Opcode: OpSendSEInvalidate, Last: true, InvalidateSTag: 0xdeadbe01, MSN: 9, MO: 8},
		payload: []byte("ijkl"),
		hex:     "0016 | 41 46 | deadbe01 | 00000000 | 00000009 | 00000008 | 696a6b6c | 00000000",
	},
	{
		// Terminate (RFC order) for an invalid QN: QN 2, MSN 1, MO 0, ctrl
		// 0x41 0x47; body: Layer 1 | EType 2 = 0x12, ECode 0x01, M|D = 0xc0,
		// 0x00, then the offending 20-byte header (a Send to QN 5). ULPDU =
		// 18 + 4 + 20 = 42 = 0x2a, pad 0.
		name:    "terminate",
		hdr:     Header{Opcode: OpTerminate, Last: true, QN: 2, MSN: 1},
		payload: unhex(nil, "12 01 c0 00 | 0016 41 43 00000000 00000005 00000001 00000000"),
		hex: "002a | 41 47 | 00000000 | 00000002 | 00000001 | 00000000 |" +
			" 12 01 c0 00 | 0016 41 43 00000000 00000005 00000001 00000000 | 00000000",
	},
}

func TestFPDUGolden(t *testing.T) {
	for _, tc := range fpduGolden {
		for _, withCRC := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/crc=%v", tc.name, withCRC), func(t *testing.T) {
				want := unhex(t, tc.hex)
				if withCRC {
					want = withRefCRC(want)
				}
				// Whole-FPDU encoder.
				got, err := AppendFPDU(nil, &tc.hdr, tc.payload, withCRC)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("AppendFPDU:\n got %x\nwant %x", got, want)
				}
				// Zero-copy path: header, payload as its own buffer, trailer.
				hdr, err := AppendFPDUHeader(nil, &tc.hdr, len(tc.payload))
				if err != nil {
					t.Fatal(err)
				}
				crc := UpdateCRC(UpdateCRC(0, hdr), tc.payload)
				tr := AppendTrailer(nil, len(hdr)-MPALenFieldLen+len(tc.payload), crc, withCRC)
				var out bytes.Buffer
				bufs := net.Buffers{hdr, tc.payload, tr}
				if _, err := bufs.WriteTo(&out); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("header+payload+trailer:\n got %x\nwant %x", out.Bytes(), want)
				}
				// Decode.
				var f FPDU
				n, err := DecodeFPDU(want, &f, withCRC)
				if err != nil {
					t.Fatal(err)
				}
				if n != len(want) {
					t.Fatalf("DecodeFPDU consumed %d of %d", n, len(want))
				}
				wantHdr := tc.hdr
				wantHdr.QN = tc.hdr.Opcode.QN()
				if tc.hdr.Opcode.Tagged() {
					wantHdr.QN = 0
				}
				if f.Header != wantHdr {
					t.Fatalf("header:\n got %+v\nwant %+v", f.Header, wantHdr)
				}
				if !bytes.Equal(f.Payload, tc.payload) {
					t.Fatalf("payload %x, want %x", f.Payload, tc.payload)
				}
			})
		}
	}
}

// TestSiwCRCSamples recomputes the CRCs of FPDUs exchanged with knfsd over
// siw with CRC on; siw's received FPDUs prove the CRC32c and its
// little-endian placement.
func TestSiwCRCSamples(t *testing.T) {
	for _, tc := range []struct {
		file    string
		withCRC bool
		payload int
	}{
		{"crc-probe-fpdus-received.bin", true, 52},
		{"crc-probe-fpdus-sent.bin", true, 68},
		{"nocrc-probe-fpdus-received.bin", false, 52},
		{"nocrc-probe-fpdus-sent.bin", false, 68},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b := readSample(t, tc.file)
			msn := uint32(1)
			for len(b) > 0 {
				var f FPDU
				n, err := DecodeFPDU(b, &f, tc.withCRC)
				if err != nil {
					t.Fatalf("FPDU MSN %d: %v", msn, err)
				}
				if f.Header.Opcode != OpSend || f.Header.MSN != msn || len(f.Payload) != tc.payload {
					t.Fatalf("FPDU %d: %+v, %d bytes", msn, f.Header, len(f.Payload))
				}
				crcField := binary.LittleEndian.Uint32(b[n-4 : n])
				if tc.withCRC {
					if ref := refCRC32c(b[:n-4]); crcField != ref {
						t.Fatalf("FPDU %d: CRC field %#x, reference CRC32c %#x", msn, crcField, ref)
					}
					// Big-endian placement must not verify.
					bad := append([]byte(nil), b[:n]...)
					binary.BigEndian.PutUint32(bad[n-4:], crcField)
					if _, err := DecodeFPDU(bad, &f, true); !errors.Is(err, ErrCRC) {
						t.Fatalf("byte-swapped CRC accepted: %v", err)
					}
				} else if crcField != 0 {
					t.Fatalf("no-CRC FPDU has CRC field %#x", crcField)
				}
				// Re-encoding reproduces the bytes exactly.
				again, err := AppendFPDU(nil, &f.Header, f.Payload, tc.withCRC)
				if err != nil || !bytes.Equal(again, b[:n]) {
					t.Fatalf("re-encode FPDU %d:\n got %x\nwant %x (%v)", msn, again, b[:n], err)
				}
				b = b[n:]
				msn++
			}
			if msn != 4 {
				t.Fatalf("decoded %d FPDUs, want 3", msn-1)
			}
		})
	}
}

func TestCRCMismatch(t *testing.T) {
	good := withRefCRC(unhex(t, fpduGolden[4].hex))
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	var f FPDU
	_, err := DecodeFPDU(bad, &f, true)
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Code != TermLLPCRCError || !errors.Is(err, ErrCRC) {
		t.Fatalf("got %v, want CRC ProtocolError", err)
	}
	// Without CRC the field is ignored.
	if _, err := DecodeFPDU(bad, &f, false); err != nil {
		t.Fatalf("no-CRC decode: %v", err)
	}
	// A corrupted payload byte is caught too.
	bad = append([]byte(nil), good...)
	bad[20] ^= 0x80
	if _, err := DecodeFPDU(bad, &f, true); !errors.Is(err, ErrCRC) {
		t.Fatalf("payload corruption: %v", err)
	}
	// CRC error Terminate: LLP, no header copy.
	term := pe.Terminate()
	if term.Code != TermLLPCRCError || term.HasDDPHeader || len(term.Headers) != 0 {
		t.Fatalf("CRC terminate %+v", term)
	}
}

func TestCheckTrailer(t *testing.T) {
	want := withRefCRC(unhex(t, fpduGolden[0].hex)) // write: 19-byte ULPDU, pad 3
	crc := UpdateCRC(0, want[:21])
	if err := CheckTrailer(want[21:], 19, crc, true); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrailer(want[21:27], 19, crc, true); !errors.Is(err, ErrBufferTooSmall) {
		t.Fatalf("short trailer: %v", err)
	}
	if TrailerLen(19) != 7 || TrailerLen(18) != 4 || FPDULen(19) != 28 {
		t.Fatalf("TrailerLen/FPDULen wrong")
	}
}

func TestPadLen(t *testing.T) {
	for ulpdu, want := range map[int]int{14: 0, 15: 3, 16: 2, 17: 1, 18: 0, 46: 0, 0xffff: 3} {
		if got := PadLen(ulpdu); got != want || (2+ulpdu+got)%4 != 0 {
			t.Errorf("PadLen(%d) = %d, want %d", ulpdu, got, want)
		}
	}
}

func TestMaxPayload(t *testing.T) {
	for _, tc := range []struct {
		max    int
		tagged bool
		want   int
	}{
		{1460, true, 1440},  // 1460 - 16 - 4
		{1460, false, 1436}, // 1460 - 20 - 4
		{1448, true, 1428},  // siw with timestamps: MSS 1448 (multiple of 8)
		{1449, true, 1428},  // rounded down to a multiple of 4: no pad
		{9000, false, 8976},
		{1 << 20, true, 65520},  // ULPDU_Length cap: 65535 - 14 = 65521 → 65520
		{1 << 20, false, 65516}, // 65535 - 18 = 65517 → 65516
		{20, true, 0},
		{10, true, 0},
	} {
		got := MaxPayload(tc.max, tc.tagged)
		if got != tc.want {
			t.Errorf("MaxPayload(%d, %v) = %d, want %d", tc.max, tc.tagged, got, tc.want)
			continue
		}
		hl := UntaggedHeaderLen
		if tc.tagged {
			hl = TaggedHeaderLen
		}
		ulpdu := hl - 2 + got
		if got > 0 && (ulpdu > MaxULPDULength || FPDULen(ulpdu) > tc.max) {
			t.Errorf("MaxPayload(%d, %v) = %d does not fit", tc.max, tc.tagged, got)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := AppendFPDUHeader(nil, &Header{Opcode: 8}, 0); !errors.Is(err, ErrOpcode) {
		t.Errorf("opcode 8: %v", err)
	}
	if _, err := AppendFPDUHeader(nil, &Header{Opcode: OpWrite}, 65522); !errors.Is(err, ErrPayloadTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if _, err := AppendFPDUHeader(nil, &Header{Opcode: OpWrite}, 65521); err != nil {
		t.Errorf("largest tagged payload: %v", err)
	}
	if _, err := AppendFPDUHeader(nil, &Header{Opcode: OpSend}, -1); !errors.Is(err, ErrPayloadTooLarge) {
		t.Errorf("negative: %v", err)
	}
}
