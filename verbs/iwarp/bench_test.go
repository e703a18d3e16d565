package iwarp

import (
	"bytes"
	"testing"
)

func BenchmarkAppendFPDUHeaderTagged(b *testing.B) {
	h := Header{Opcode: OpWrite, Last: true, STag: 0x1234, TO: 0x10000}
	buf := make([]byte, 0, UntaggedHeaderLen)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.TO += 4096
		if _, err := AppendFPDUHeader(buf[:0], &h, 4096); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFPDUHeaderUntagged(b *testing.B) {
	h := Header{Opcode: OpSend, Last: true}
	buf := make([]byte, 0, UntaggedHeaderLen)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.MSN++
		if _, err := AppendFPDUHeader(buf[:0], &h, 1024); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseFPDUHeader(b *testing.B) {
	hdr, _ := AppendFPDUHeader(nil, &Header{Opcode: OpSend, Last: true, MSN: 7}, 1024)
	var h Header
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := ParseFPDUHeader(hdr, &h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCRC4KiB is the MPA CRC over a 4 KiB payload (hash/crc32's
// Castagnoli path uses SSE4.2 / ARMv8 CRC instructions when available).
func BenchmarkCRC4KiB(b *testing.B) {
	p := bytes.Repeat([]byte{0xa5}, 4096)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	var crc uint32
	for i := 0; i < b.N; i++ {
		crc = UpdateCRC(0, p)
	}
	_ = crc
}

// BenchmarkSendFPDU4KiB is the whole transmit-side framing of a 4 KiB
// tagged segment with CRC: header, CRC over header and payload, trailer.
func BenchmarkSendFPDU4KiB(b *testing.B) {
	p := bytes.Repeat([]byte{0x5a}, 4096)
	h := Header{Opcode: OpWrite, Last: true, STag: 0x100, TO: 0}
	hdrBuf := make([]byte, 0, UntaggedHeaderLen)
	trBuf := make([]byte, 0, 8)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		hdr, err := AppendFPDUHeader(hdrBuf[:0], &h, len(p))
		if err != nil {
			b.Fatal(err)
		}
		crc := UpdateCRC(UpdateCRC(0, hdr), p)
		_ = AppendTrailer(trBuf[:0], len(hdr)-MPALenFieldLen+len(p), crc, true)
	}
}

// BenchmarkDecodeFPDU4KiB decodes and CRC-checks a whole 4 KiB FPDU.
func BenchmarkDecodeFPDU4KiB(b *testing.B) {
	wire, _ := AppendFPDU(nil, &Header{Opcode: OpWrite, Last: true, STag: 0x100}, bytes.Repeat([]byte{1}, 4096), true)
	var f FPDU
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeFPDU(wire, &f, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMPADecode(b *testing.B) {
	wire := readSample(b, "xprtrdma-siw-client-to-host.bin")[:32]
	var f MPAFrame
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := f.Decode(wire, MPARequest); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHotPathsDoNotAllocate pins the zero-allocation property the
// benchmarks report.
func TestHotPathsDoNotAllocate(t *testing.T) {
	p := bytes.Repeat([]byte{0x5a}, 4096)
	hdrBuf := make([]byte, 0, UntaggedHeaderLen)
	trBuf := make([]byte, 0, 8)
	wire, _ := AppendFPDU(nil, &Header{Opcode: OpSend, Last: true, MSN: 1}, p, true)
	mpa := readSample(t, "xprtrdma-siw-client-to-host.bin")[:32]
	var f FPDU
	var m MPAFrame
	var h Header
	allocs := testing.AllocsPerRun(100, func() {
		hh := Header{Opcode: OpWrite, Last: true, STag: 1, TO: 2}
		hdr, _ := AppendFPDUHeader(hdrBuf[:0], &hh, len(p))
		crc := UpdateCRC(UpdateCRC(0, hdr), p)
		_ = AppendTrailer(trBuf[:0], len(hdr)-2+len(p), crc, true)
		if _, err := DecodeFPDU(wire, &f, true); err != nil {
			t.Fatal(err)
		}
		hl, pl, _ := ParseFPDUHeader(wire, &h)
		end := hl + pl
		if err := CheckTrailer(wire[end:], end-2, UpdateCRC(0, wire[:end]), true); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Decode(mpa, MPARequest); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per FPDU round", allocs)
	}
}
