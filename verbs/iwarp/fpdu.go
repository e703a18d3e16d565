package iwarp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// castagnoli is the CRC32c table. MPA's CRC is CRC32c (RFC 5044) over
// the MPA length field, the ULPDU and the pad.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// UpdateCRC returns the MPA CRC state after adding p. Start from 0 and feed
// the FPDU in order (length field + header, payload pieces as they are sent
// or placed, pad): the result after the pad is the value of the CRC field.
// This is crc32.Update with the Castagnoli table, so it can be applied to a
// payload while it is read from the socket straight into registered memory.
func UpdateCRC(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

// PadLen returns the number of zero pad bytes after a ULPDU of ulpduLen
// bytes: enough to make 2 + ulpduLen + pad a multiple of 4 (RFC 5044).
func PadLen(ulpduLen int) int { return -(MPALenFieldLen + ulpduLen) & 3 }

// FPDULen returns the total FPDU length on the wire (length field, ULPDU,
// pad and CRC field) for a ULPDU of ulpduLen bytes.
func FPDULen(ulpduLen int) int { return MPALenFieldLen + ulpduLen + PadLen(ulpduLen) + CRCLen }

var zeroPad [3]byte

// AppendTrailer appends the pad and the CRC field of an FPDU whose
// ULPDU_Length is ulpduLen. crc is the UpdateCRC state over everything before
// the pad (length field, header, payload). With withCRC false the CRC field
// is zero, as siw sends it when CRC was not negotiated. The CRC is stored
// little-endian: siw (crypto "crc32c", put_unaligned_le32 of the final value)
// puts it on the wire that way, and the lab captures confirm it.
func AppendTrailer(dst []byte, ulpduLen int, crc uint32, withCRC bool) []byte {
	pad := PadLen(ulpduLen)
	dst = append(dst, zeroPad[:pad]...)
	if !withCRC {
		return append(dst, 0, 0, 0, 0)
	}
	return binary.LittleEndian.AppendUint32(dst, UpdateCRC(crc, zeroPad[:pad]))
}

// TrailerLen returns the pad + CRC bytes that follow a ULPDU of ulpduLen bytes.
func TrailerLen(ulpduLen int) int { return PadLen(ulpduLen) + CRCLen }

// CheckTrailer checks the trailer (pad and CRC field, TrailerLen(ulpduLen)
// bytes) of a received FPDU. crc is the UpdateCRC state over the length
// field, header and payload. Without CRC the field is not checked (siw does
// not check it either); pad bytes are covered by the CRC but not otherwise
// checked. A mismatch is a *ProtocolError with TermLLPCRCError (2/0/0x02).
func CheckTrailer(trailer []byte, ulpduLen int, crc uint32, withCRC bool) error {
	pad := PadLen(ulpduLen)
	if len(trailer) != pad+CRCLen {
		return fmt.Errorf("iwarp: FPDU trailer: %w: have %d bytes, want %d", ErrBufferTooSmall, len(trailer), pad+CRCLen)
	}
	if !withCRC {
		return nil
	}
	want := UpdateCRC(crc, trailer[:pad])
	if got := binary.LittleEndian.Uint32(trailer[pad:]); got != want {
		e := protoErr(TermLLPCRCError, ErrCRC, "CRC", uint64(got))
		e.detail = fmt.Sprintf("computed 0x%08x", want)
		return e
	}
	return nil
}

// FPDU is one decoded FPDU: its header and its payload.
type FPDU struct {
	Header  Header
	Payload []byte // aliases the decoded buffer
}

// DecodeFPDU decodes and validates the complete FPDU at the start of b (see
// ParseFPDUHeader for the header rules) and checks its CRC when withCRC is
// set. It returns the FPDU's total length n. If b holds only part of the
// FPDU, it returns ErrIncomplete with n = the bytes needed (which can grow
// once the length field and header are visible). It does not allocate unless
// it returns a *ProtocolError.
func DecodeFPDU(b []byte, f *FPDU, withCRC bool) (n int, err error) {
	hl, pl, err := ParseFPDUHeader(b, &f.Header)
	if err != nil {
		return hl, err
	}
	ulpdu := hl - MPALenFieldLen + pl
	n = FPDULen(ulpdu)
	if len(b) < n {
		return n, ErrIncomplete
	}
	end := hl + pl
	if withCRC {
		if err := CheckTrailer(b[end:n], ulpdu, UpdateCRC(0, b[:end]), true); err != nil {
			var pe *ProtocolError
			if errors.As(err, &pe) {
				pe.withHeader(b[:hl])
			}
			return 0, err
		}
	}
	f.Payload = b[hl:end:end]
	return n, nil
}

// AppendFPDU appends a whole FPDU (header, a copy of payload, pad, CRC) to
// dst. It is meant for small control messages (Read Request, Terminate) and
// tests; bulk data should go through AppendFPDUHeader + AppendTrailer so the
// payload is not copied.
func AppendFPDU(dst []byte, h *Header, payload []byte, withCRC bool) ([]byte, error) {
	start := len(dst)
	dst, err := AppendFPDUHeader(dst, h, len(payload))
	if err != nil {
		return dst, err
	}
	dst = append(dst, payload...)
	crc := uint32(0)
	if withCRC {
		crc = UpdateCRC(0, dst[start:])
	}
	return AppendTrailer(dst, len(dst)-start-MPALenFieldLen, crc, withCRC), nil
}

// MaxPayload returns the largest payload one FPDU can carry when the whole
// FPDU (length field, header, payload, pad, CRC) must fit in maxFPDU bytes,
// e.g. the TCP MSS as siw does (siw rounds the MSS down to a multiple of 8
// first). The result is a multiple of 4, so a full segment needs no pad, and
// never makes ULPDU_Length exceed 65535. It returns 0 when fewer than 4
// payload bytes fit.
func MaxPayload(maxFPDU int, tagged bool) int {
	hl := UntaggedHeaderLen
	if tagged {
		hl = TaggedHeaderLen
	}
	p := maxFPDU - hl - CRCLen
	if limit := MaxULPDULength + MPALenFieldLen - hl; p > limit {
		p = limit
	}
	if p < 0 {
		return 0
	}
	return p &^ 3
}
