package iwarp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzMPAFrame decodes arbitrary bytes as an MPA frame; whatever decodes must
// re-encode to the same bytes, and the streaming reader must agree.
func FuzzMPAFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var fr MPAFrame
		n, err := fr.Decode(data, MPAAny)
		buf := make([]byte, MaxMPAFrameLen)
		rf, rerr := ReadMPAFrame(bytes.NewReader(data), buf, MPAAny)
		if err != nil {
			var pe *ProtocolError
			if !errors.Is(err, ErrIncomplete) && !(errors.As(err, &pe) && pe.Code == TermLLPInvalidRequestReply) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if errors.Is(err, ErrIncomplete) {
				if n <= len(data) {
					t.Fatalf("ErrIncomplete but needs %d of %d", n, len(data))
				}
				if rerr == nil {
					t.Fatal("ReadMPAFrame succeeded on an incomplete frame")
				}
			} else if rerr == nil {
				t.Fatalf("Decode: %v, ReadMPAFrame succeeded", err)
			}
			return
		}
		if n < MPAHeaderLen || n > len(data) || n > MaxMPAFrameLen {
			t.Fatalf("bad length %d", n)
		}
		out, err := fr.Append(nil)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", fr, err)
		}
		if !bytes.Equal(out, data[:n]) {
			t.Fatalf("round trip:\n got %x\nwant %x", out, data[:n])
		}
		if rerr != nil {
			t.Fatalf("Decode ok, ReadMPAFrame: %v", rerr)
		}
		checkMPAEqual(t, &rf, &fr)
	})
}

// FuzzFPDU decodes arbitrary bytes as one FPDU (with or without CRC). A
// valid FPDU must re-encode to the same bytes once the fields a receiver
// ignores are normalised (reserved bits, pad bytes, and the CRC field when
// CRC is off); a rejected one must convert into a Terminate FPDU that
// decodes.
func FuzzFPDU(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, withCRC bool) {
		var fp FPDU
		n, err := DecodeFPDU(data, &fp, withCRC)
		if err != nil {
			if errors.Is(err, ErrIncomplete) {
				if n <= len(data) {
					t.Fatalf("ErrIncomplete but needs %d of %d", n, len(data))
				}
				return
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			term := pe.Terminate()
			wire, err := AppendTerminateFPDU(nil, &term, 1, true)
			if err != nil {
				t.Fatalf("Terminate for %v: %v", pe, err)
			}
			var tf FPDU
			if _, err := DecodeFPDU(wire, &tf, true); err != nil {
				t.Fatalf("Terminate FPDU for %v does not decode: %v", pe, err)
			}
			var back Terminate
			if err := back.Decode(tf.Payload); err != nil || back.Code != pe.Code {
				t.Fatalf("Terminate for %v decodes as %+v, %v", pe, back, err)
			}
			return
		}
		orig := append([]byte(nil), data[:n]...)
		hl := fp.Header.Len()
		// Normalise: reserved control bits, pad bytes, CRC.
		orig[2] &^= 0x3c
		orig[3] &^= 0x30
		end := hl + len(fp.Payload)
		for i := end; i < n-CRCLen; i++ {
			orig[i] = 0
		}
		if withCRC {
			binary.LittleEndian.PutUint32(orig[n-CRCLen:], refCRC32c(orig[:n-CRCLen]))
		} else {
			binary.LittleEndian.PutUint32(orig[n-CRCLen:], 0)
		}
		out, err := AppendFPDU(nil, &fp.Header, fp.Payload, withCRC)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", fp.Header, err)
		}
		if !bytes.Equal(out, orig) {
			t.Fatalf("round trip:\n got %x\nwant %x", out, orig)
		}
		// The streaming header reader agrees.
		var h Header
		rhl, rpl, err := ReadFPDUHeader(bytes.NewReader(data), make([]byte, UntaggedHeaderLen), &h)
		if err != nil || rhl != hl || rpl != len(fp.Payload) || h != fp.Header {
			t.Fatalf("ReadFPDUHeader: %d %d %+v %v", rhl, rpl, h, err)
		}
		switch fp.Header.Opcode {
		case OpReadRequest:
			var rr ReadRequest
			if err := rr.Decode(fp.Payload); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rr.Append(nil), fp.Payload) {
				t.Fatal("Read Request round trip")
			}
		case OpTerminate:
			checkTerminateRoundTrip(t, fp.Payload)
		}
	})
}

// FuzzTerminate decodes arbitrary Terminate bodies.
func FuzzTerminate(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTerminateRoundTrip(t, data)
	})
}

func checkTerminateRoundTrip(t *testing.T, body []byte) {
	t.Helper()
	var term Terminate
	if err := term.Decode(body); err != nil {
		if !errors.Is(err, ErrTerminateShort) {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	_ = term.RDMAPHeader()
	_, _ = term.DDPSegmentLength()
	out, err := term.Append(nil)
	if !term.Code.Known() {
		if !errors.Is(err, ErrTermCode) {
			t.Fatalf("unassigned code %v encoded: %v", term.Code, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("re-encode %+v: %v", term, err)
	}
	var back Terminate
	if err := back.Decode(out); err != nil {
		t.Fatalf("decode re-encoded: %v", err)
	}
	if back.Code != term.Code || back.SegLenValid != term.SegLenValid || back.HasDDPHeader != term.HasDDPHeader ||
		back.HasRDMAPHeader != term.HasRDMAPHeader || !bytes.Equal(back.Headers, term.Headers) {
		t.Fatalf("RFC re-encoding changed the Terminate:\n%+v\n%+v", term, back)
	}
	if term.Order == TermOrderRFC && !term.Ambiguous && binary.BigEndian.Uint32(body)&termReserved == 0 && !bytes.Equal(out, body) {
		t.Fatalf("RFC-order body not reproduced:\n got %x\nwant %x", out, body)
	}
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/ from the test vectors: one
// seed per valid vector and per validation rule. Run with
// IWARP_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus ./verbs/iwarp.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("IWARP_WRITE_CORPUS") == "" {
		t.Skip("set IWARP_WRITE_CORPUS=1 to regenerate testdata/fuzz")
	}
	write := func(target, name string, vals ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n"
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				s += "[]byte(" + strconv.Quote(string(v)) + ")\n"
			case bool:
				s += fmt.Sprintf("bool(%v)\n", v)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// MPA: valid frames, each validation rule, incomplete frames, lab captures.
	for _, tc := range mpaGolden {
		write("FuzzMPAFrame", "valid-"+tc.name, unhex(t, tc.hex))
	}
	for _, tc := range mpaBad {
		write("FuzzMPAFrame", "bad-"+tc.name, unhex(t, tc.hex))
	}
	write("FuzzMPAFrame", "incomplete-header", unhex(t, hexKeyReq+"10"))
	write("FuzzMPAFrame", "incomplete-pd", unhex(t, hexKeyReq+"| 10 02 | 000c | 0080"))
	write("FuzzMPAFrame", "siw-xprtrdma-request", readSample(t, "xprtrdma-siw-client-to-host.bin"))
	write("FuzzMPAFrame", "siw-knfsd-reply-crc", readSample(t, "crc-probe-mpa-reply.bin"))
	// FPDU: each opcode with and without CRC, each validation rule, CRC
	// mismatch, incomplete, lab captures.
	for _, tc := range fpduGolden {
		b := unhex(t, tc.hex)
		write("FuzzFPDU", "valid-"+tc.name, b, false)
		write("FuzzFPDU", "valid-crc-"+tc.name, withRefCRC(b), true)
	}
	for _, tc := range fpduBad {
		write("FuzzFPDU", "bad-"+tc.name, unhex(t, tc.hex), false)
	}
	bad := withRefCRC(unhex(t, fpduGolden[4].hex))
	bad[len(bad)-1] ^= 0xff
	write("FuzzFPDU", "bad-crc", bad, true)
	write("FuzzFPDU", "incomplete-ctrl", unhex(t, "0014 41"), false)
	write("FuzzFPDU", "incomplete-payload", unhex(t, fpduGolden[4].hex)[:22], false)
	write("FuzzFPDU", "reserved-bits", unhex(t, "0014 | 7d 73 | 00000000 00000000 00000003 00000000 | cafe 0000 | 00000000"), false)
	write("FuzzFPDU", "siw-send-crc", readSample(t, "crc-probe-fpdus-received.bin")[:76], true)
	write("FuzzFPDU", "siw-send-nocrc", readSample(t, "nocrc-probe-fpdus-received.bin")[:76], false)
	// Terminate bodies: RFC order, siw order, ambiguous, malformed.
	for name, h := range map[string]string{
		"rfc-invalid-qn":   "12 01 c0 00" + hexSendQN5,
		"rfc-crc":          "20 02 00 00",
		"rfc-rreq-stag":    "01 00 e0 00" + hexRReq,
		"siw-crc":          "02 02 00 00",
		"siw-invalid-qn":   "21 01 03 00" + hexSendQN5,
		"siw-write-stag":   "11 00 03 00" + hexWrite,
		"siw-rreq-stag":    "10 00 07 00" + hexRReq,
		"ambiguous-opcode": "20 06 00 00",
		"unknown":          "33 33 00 00",
		"short":            "12 01 c0",
		"short-copy":       "12 01 c0 00 0016 41 43 000000",
	} {
		write("FuzzTerminate", name, unhex(t, h))
	}
}
