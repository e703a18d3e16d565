package iwarp

import (
	"encoding/binary"
	"fmt"
)

// Terminate message body (RFC 5040, Terminate Header): the payload of an untagged
// segment on QN 2 with opcode Terminate and L set.
//
//	off  len    field
//	0    4      Terminate Control (RFC order, big-endian):
//	              Layer 0xf0000000 | EType 0x0f000000 | Error Code 0x00ff0000 |
//	              HdrCt M 0x8000 (DDP segment length valid) | D 0x4000 (DDP header
//	              included) | R 0x2000 (RDMAP header included) | Reserved 0x1fff
//	4    2      [D] DDP Segment Length of the terminated segment
//	6    14|18  [D] terminated DDP header, from the DDP control byte on
//	              (14 bytes tagged, 18 untagged, by its T flag)
//	..   28     [R] terminated RDMAP header (the Read Request body)
//
// The 2-byte DDP Segment Length followed by the DDP header is exactly the
// FPDU header from the MPA length field on, which is how siw builds it.
//
// siw (Linux soft-iWARP) declares the control word with little-endian
// bitfields, so on x86 it sends the first byte as (EType<<4 | Layer) and
// the HdrCt bits as 0x01 (M), 0x02 (D), 0x04 (R) of the third byte: see
// the notes, §8, and siw's iwarp.h. Decode recognises both layouts.
const terminateControlLen = 4

// Terminate-control bits in RFC order (big-endian 32-bit word).
const (
	termM        = 0x8000
	termD        = 0x4000
	termR        = 0x2000
	termReserved = 0x1fff
)

// TermOrder says how a received Terminate Control word was laid out.
type TermOrder uint8

// Terminate control layouts.
const (
	// TermOrderRFC is RFC 5040's layout (and what Append writes).
	TermOrderRFC TermOrder = 0
	// TermOrderSiw is Linux siw's x86 layout: Layer and EType nibbles swapped
	// in the first byte, M/D/R in the low bits of the third byte.
	TermOrderSiw TermOrder = 1
)

// String names the layout.
func (o TermOrder) String() string {
	if o == TermOrderSiw {
		return "siw (nibble-swapped)"
	}
	return "RFC 5040"
}

// Terminate is an RDMAP Terminate message body.
type Terminate struct {
	Code TermCode // Layer / EType / Error Code

	SegLenValid    bool // M: the DDP Segment Length field is valid
	HasDDPHeader   bool // D: DDP Segment Length + terminated DDP header included
	HasRDMAPHeader bool // R: terminated RDMAP header included

	// Headers is everything after the control word: the DDP Segment
	// Length and terminated DDP header (when D), then the terminated RDMAP
	// header (when R). On decode it aliases the input.
	Headers []byte

	// Order is how the control word was laid out on the wire (set by
	// Decode; Append always writes TermOrderRFC).
	Order TermOrder
	// Ambiguous is set by Decode when both layouts gave a plausible, different
	// reading; AltCode is then the reading that was not chosen.
	Ambiguous bool
	AltCode   TermCode
}

// String renders the Terminate for logs: code, header-copy bits, layout.
func (t *Terminate) String() string {
	s := fmt.Sprintf("Terminate %v M=%v D=%v R=%v (%d header bytes, %v order)",
		t.Code, t.SegLenValid, t.HasDDPHeader, t.HasRDMAPHeader, len(t.Headers), t.Order)
	if t.Ambiguous {
		s += fmt.Sprintf(", or %v in the other order", t.AltCode)
	}
	return s
}

// Len returns the body length on the wire.
func (t *Terminate) Len() int { return terminateControlLen + len(t.Headers) }

// Append appends the body in RFC order. Code must be one the RFCs assign
// (TermCode.Known): a peer could not interpret anything else, and an
// unassigned code could read as a different, valid code in siw's layout.
// If HasDDPHeader is set, Headers must start with a 2-byte length and a
// complete DDP header.
func (t *Terminate) Append(dst []byte) ([]byte, error) {
	if !t.Code.Known() {
		return dst, fmt.Errorf("iwarp: encode Terminate: %w: %v", ErrTermCode, t.Code)
	}
	if t.HasDDPHeader {
		if _, err := termDDPPart(t.Headers); err != nil {
			return dst, fmt.Errorf("iwarp: encode Terminate: %w", err)
		}
	}
	w := uint32(t.Code) << 16
	if t.SegLenValid {
		w |= termM
	}
	if t.HasDDPHeader {
		w |= termD
	}
	if t.HasRDMAPHeader {
		w |= termR
	}
	dst = binary.BigEndian.AppendUint32(dst, w)
	return append(dst, t.Headers...), nil
}

// termDDPPart returns the length of the DDP part (segment length + DDP
// header) at the start of h.
func termDDPPart(h []byte) (int, error) {
	if len(h) < MPALenFieldLen+1 {
		return 0, fmt.Errorf("%w: D set but only %d header bytes", ErrTerminateShort, len(h))
	}
	n := UntaggedHeaderLen
	if h[MPALenFieldLen]&0x80 != 0 {
		n = TaggedHeaderLen
	}
	if len(h) < n {
		return 0, fmt.Errorf("%w: D set, DDP header needs %d bytes, have %d", ErrTerminateShort, n, len(h))
	}
	return n, nil
}

// DDPSegmentLength returns the terminated segment's DDP Segment Length, if
// present and valid (D and M).
func (t *Terminate) DDPSegmentLength() (uint16, bool) {
	if !t.HasDDPHeader || !t.SegLenValid || len(t.Headers) < 2 {
		return 0, false
	}
	return binary.BigEndian.Uint16(t.Headers), true
}

// DDPHeader returns the terminated DDP header preceded by its 2-byte
// segment length, i.e. a copy of the offending FPDU header as
// ParseFPDUHeader reads it (the length field may not be the original one
// when M is clear). It returns nil when D is clear or the copy is short.
func (t *Terminate) DDPHeader() []byte {
	if !t.HasDDPHeader {
		return nil
	}
	n, err := termDDPPart(t.Headers)
	if err != nil {
		return nil
	}
	return t.Headers[:n]
}

// RDMAPHeader returns the terminated RDMAP header (the bytes after the DDP
// part) when R is set. siw sets R for Send-type messages with no extra
// bytes, so it may be empty.
func (t *Terminate) RDMAPHeader() []byte {
	if !t.HasRDMAPHeader {
		return nil
	}
	off := 0
	if t.HasDDPHeader {
		n, err := termDDPPart(t.Headers)
		if err != nil {
			return nil
		}
		off = n
	}
	return t.Headers[off:]
}

// Decode parses a Terminate body (the payload of a Terminate FPDU),
// preferring RFC order when the layout is ambiguous. See DecodeAs.
func (t *Terminate) Decode(b []byte) error { return t.DecodeAs(b, TermOrderRFC) }

// DecodeAs parses a Terminate body, recognising both RFC 5040 order and
// siw's nibble-swapped order.
//
// A reading of the control word is plausible when its Layer/EType/ECode is
// one the RFCs assign (TermCode.Known) and its reserved bits are zero. If
// exactly one reading is plausible it is used. Examples from the lab (notes
// §8): siw's CRC error arrives as 02 02 00 00 (RFC reading: RDMAP remote
// operation 0x02, not assigned); an invalid QN as 21 01 03 00 (RFC reading:
// Layer 2 with EType 1, not assigned); a protection error on a Read Request
// as 10 00 07 00 (the M/D/R bits 0x07 are reserved bits in the RFC
// reading).
//
// If both readings are plausible and differ, the bytes alone cannot tell:
// 20 06 00 00 is an RFC-order "LLP insufficient IRD" and a siw-order
// "RDMAP unexpected opcode" (likewise LLP 0x05/0x07 against RDMAP remote
// operation 0x05/0x07, and RDMAP remote protection against DDP local
// catastrophic without header copies). Then prefer decides, Ambiguous is
// set and AltCode holds the other reading. If neither reading is plausible,
// the RFC reading is returned.
//
// A body shorter than 4 bytes, or with D set but a truncated DDP header
// copy, is an error (ErrTerminateShort); nothing else is. With a truncated
// header copy the Terminate Control has been read: Code, Order, Ambiguous,
// AltCode, the M/D/R flags and Headers (the bytes present) are set, so that
// a receiver can still report the peer's error (a received Terminate is
// never answered, however malformed). A body shorter than 4 bytes leaves t
// zeroed.
func (t *Terminate) DecodeAs(b []byte, prefer TermOrder) error {
	if len(b) < terminateControlLen {
		*t = Terminate{}
		return protoErr(TermRDMAPCatastrophicStream, ErrTerminateShort, "Terminate length", uint64(len(b)))
	}
	w := binary.BigEndian.Uint32(b)
	rfc := TermCode(w >> 16)
	rfcOK := rfc.Known() && w&termReserved == 0
	siw := MakeTermCode(Layer(b[0]&0xf), b[0]>>4, b[1])
	// siw's reserved bits: byte 2 above its M/D/R bits, and byte 3.
	siwOK := siw.Known() && b[2]&^0x07 == 0 && b[3] == 0
	order := TermOrderRFC
	t.Ambiguous, t.AltCode = false, 0
	switch {
	case rfcOK && siwOK && rfc != siw:
		t.Ambiguous = true
		order = prefer
		t.AltCode = siw
		if prefer == TermOrderSiw {
			t.AltCode = rfc
		}
	case !rfcOK && siwOK:
		order = TermOrderSiw
	}
	t.Order = order
	if order == TermOrderSiw {
		t.Code = siw
		t.SegLenValid = b[2]&0x01 != 0
		t.HasDDPHeader = b[2]&0x02 != 0
		t.HasRDMAPHeader = b[2]&0x04 != 0
	} else {
		t.Code = rfc
		t.SegLenValid = w&termM != 0
		t.HasDDPHeader = w&termD != 0
		t.HasRDMAPHeader = w&termR != 0
	}
	t.Headers = b[terminateControlLen:len(b):len(b)]
	if t.HasDDPHeader {
		if _, err := termDDPPart(t.Headers); err != nil {
			e := protoErr(TermRDMAPCatastrophicStream, ErrTerminateShort, "Terminate headers length", uint64(len(t.Headers)))
			e.detail = err.Error()
			return e
		}
	}
	return nil
}

// NewTerminate builds the Terminate for code, copying the offending FPDU
// header hdr (from its MPA length field on; for a Read Request the 48 bytes
// including the body) where the RFCs and siw include it:
//   - LLP errors and RDMAP local catastrophic errors: no copy;
//   - DDP errors: M, D and the DDP header, except for an invalid DDP version
//     (the layout is then unknown);
//   - RDMAP remote protection errors: M, D and the DDP header, plus R and
//     the Read Request body when hdr is a complete Read Request;
//   - RDMAP remote operation errors: M and D with the DDP header, except for
//     an invalid RDMAP version or an unexpected opcode.
//
// The result aliases hdr.
func NewTerminate(code TermCode, hdr []byte) Terminate {
	t := Terminate{Code: code}
	withDDP, withRDMAP := false, false
	switch code.Layer() {
	case LayerDDP:
		withDDP = code != TermDDPTaggedInvalidVersion && code != TermDDPUntaggedInvalidVersion
	case LayerRDMAP:
		switch code.EType() {
		case ETypeRDMAPRemoteProtection:
			withDDP, withRDMAP = true, true
		case ETypeRDMAPRemoteOperation:
			withDDP = code != TermRDMAPInvalidVersion && code != TermRDMAPUnexpectedOpcode
		}
	}
	if !withDDP {
		return t
	}
	n, err := termDDPPart(hdr)
	if err != nil {
		return t
	}
	t.SegLenValid, t.HasDDPHeader = true, true
	t.Headers = hdr[:n:n]
	if withRDMAP && n == UntaggedHeaderLen && len(hdr) >= UntaggedHeaderLen+ReadRequestLen &&
		Opcode(hdr[3]&0x0f) == OpReadRequest {
		t.HasRDMAPHeader = true
		t.Headers = hdr[: n+ReadRequestLen : n+ReadRequestLen]
	}
	return t
}

// Terminate returns the Terminate message that answers e (see NewTerminate).
func (e *ProtocolError) Terminate() Terminate {
	return NewTerminate(e.Code, e.OffendingHeader())
}

// AppendTerminateFPDU appends a complete Terminate FPDU: untagged header on
// QN 2 with the given MSN (siw always uses 1), MO 0, L set, the body of t
// and the trailer.
func AppendTerminateFPDU(dst []byte, t *Terminate, msn uint32, withCRC bool) ([]byte, error) {
	var body [terminateControlLen + fpduHeaderCopyMax]byte
	if len(t.Headers) > fpduHeaderCopyMax {
		return dst, fmt.Errorf("iwarp: encode Terminate: %d header bytes, at most %d", len(t.Headers), fpduHeaderCopyMax)
	}
	p, err := t.Append(body[:0])
	if err != nil {
		return dst, err
	}
	h := Header{Opcode: OpTerminate, Last: true, QN: QNTerminate, MSN: msn}
	return AppendFPDU(dst, &h, p, withCRC)
}
