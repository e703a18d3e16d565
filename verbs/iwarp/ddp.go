package iwarp

import (
	"encoding/binary"
	"fmt"
	"io"
)

// FPDU header layout (MPA FPDU without markers, RFC 5044; DDP header,
// RFC 5041; RDMAP header, RFC 5040). Offsets count from the first byte of the FPDU, i.e.
// they include the 2-byte MPA length field, like siw's struct iwarp_ctrl_*.
//
//	off len field
//	0   2   ULPDU_Length: bytes of the DDP segment (header from offset 2 on +
//	        payload); pad and CRC are not counted
//	2   1   DDP control: T 0x80 | L 0x40 | Rsvd 0x3c | DV 0x03 (must be 1)
//	3   1   RDMAP control (DDP RsvdULP[0:7]): RV 0xc0 (must be 1) | Rsv 0x30 | Opcode 0x0f
//
//	tagged (T=1, RDMA Write and Read Response), 16 bytes:
//	4   4   STag (Data Sink STag)
//	8   8   TO (Data Sink Tagged Offset)
//
//	untagged (T=0, Send*, Read Request, Terminate), 20 bytes:
//	4   4   RsvdULP[8:39]: Invalidate STag for Send with (SE and) Invalidate, else 0
//	8   4   QN: 0 Send*, 1 Read Request, 2 Terminate
//	12  4   MSN (per QN, first message is 1)
//	16  4   MO (byte offset of this segment in its message)
//
//	then payload, pad (0..3 zero bytes so that 2+ULPDU_Length+pad is a
//	multiple of 4) and the 4-byte CRC field (CRC32c, little-endian; 0 when
//	CRC was not negotiated).
//
// The Read Request body (28 bytes) and the Terminate body are the payload of
// their untagged segment; see ReadRequest and Terminate.
const (
	MPALenFieldLen    = 2  // the MPA ULPDU_Length field
	TaggedHeaderLen   = 16 // MPA length + DDP/RDMAP control + STag + TO
	UntaggedHeaderLen = 20 // MPA length + control + RsvdULP + QN + MSN + MO
	CRCLen            = 4  // the MPA CRC field, always present
	MaxULPDULength    = 0xffff

	// DDPVersion and RDMAPVersion are the only versions defined (RFC 5041,
	// RFC 5040).
	DDPVersion   = 1
	RDMAPVersion = 1
)

// Control-word bits, in the 16-bit big-endian DDP+RDMAP control at offset 2.
const (
	ctrlTagged        = 0x8000
	ctrlLast          = 0x4000
	ctrlDDPReserved   = 0x3c00
	ctrlDDPVersion    = 0x0300
	ctrlRDMAPVersion  = 0x00c0
	ctrlRDMAPReserved = 0x0030
	ctrlOpcode        = 0x000f
)

// Opcode is an RDMAP opcode (RFC 5040, RDMAP control field).
type Opcode uint8

// RDMAP opcodes (RFC 5040). 8..15 are not defined by RFC 5040.
const (
	OpWrite            Opcode = 0
	OpReadRequest      Opcode = 1
	OpReadResponse     Opcode = 2
	OpSend             Opcode = 3
	OpSendInvalidate   Opcode = 4
	OpSendSE           Opcode = 5
	OpSendSEInvalidate Opcode = 6
	OpTerminate        Opcode = 7
	maxOpcode                 = OpTerminate
)

var opcodeNames = [maxOpcode + 1]string{
	"RDMA Write", "RDMA Read Request", "RDMA Read Response", "Send",
	"Send with Invalidate", "Send with SE", "Send with SE and Invalidate", "Terminate",
}

// String names the opcode as RFC 5040 does.
func (o Opcode) String() string {
	if o <= maxOpcode {
		return opcodeNames[o]
	}
	return fmt.Sprintf("opcode(%d)", uint8(o))
}

// Valid reports whether o is one of the eight RFC 5040 opcodes.
func (o Opcode) Valid() bool { return o <= maxOpcode }

// Tagged reports whether messages with this opcode use the DDP tagged buffer
// model (RDMA Write and Read Response).
func (o Opcode) Tagged() bool { return o == OpWrite || o == OpReadResponse }

// Untagged queue numbers used by RDMAP (RFC 5040; siw enum rdmap_untagged_qn).
const (
	QNSend        uint32 = 0 // Send, Send with Invalidate, Send with SE, Send with SE and Invalidate
	QNReadRequest uint32 = 1
	QNTerminate   uint32 = 2
	maxQN                = QNTerminate
)

// QN returns the untagged queue number RDMAP uses for o. It is meaningless
// for tagged opcodes.
func (o Opcode) QN() uint32 {
	switch o {
	case OpReadRequest:
		return QNReadRequest
	case OpTerminate:
		return QNTerminate
	}
	return QNSend
}

// Invalidates reports whether o carries an Invalidate STag (Send with
// Invalidate, Send with SE and Invalidate).
func (o Opcode) Invalidates() bool { return o == OpSendInvalidate || o == OpSendSEInvalidate }

// HeaderLen returns the FPDU header length (including the MPA length field)
// for segments of opcode o: TaggedHeaderLen or UntaggedHeaderLen.
func (o Opcode) HeaderLen() int {
	if o.Tagged() {
		return TaggedHeaderLen
	}
	return UntaggedHeaderLen
}

// Header is the decoded DDP/RDMAP header of one FPDU. Which fields are
// meaningful depends on Opcode.Tagged().
type Header struct {
	Opcode Opcode
	Last   bool // DDP L flag: last segment of the DDP message

	// Tagged buffer model (RDMA Write, Read Response).
	STag uint32 // Data Sink STag
	TO   uint64 // Data Sink Tagged Offset

	// Untagged buffer model (Send*, Read Request, Terminate).
	// InvalidateSTag is the RsvdULP[8:39] field: the STag to invalidate for
	// Send with (SE and) Invalidate; senders set it to 0 for other opcodes
	// and receivers ignore it (RFC 5040).
	InvalidateSTag uint32
	QN             uint32 // queue number; AppendFPDUHeader always writes Opcode.QN()
	MSN            uint32 // message sequence number
	MO             uint32 // message offset
}

// Len returns the header length on the wire, including the MPA length field.
func (h *Header) Len() int { return h.Opcode.HeaderLen() }

// String renders the header for logs, e.g.
// "Send L QN=0 MSN=1 MO=0" or "RDMA Write STag=0x1201 TO=0x2000".
func (h *Header) String() string {
	l := ""
	if h.Last {
		l = " L"
	}
	if h.Opcode.Tagged() {
		return fmt.Sprintf("%v%s STag=%#x TO=%#x", h.Opcode, l, h.STag, h.TO)
	}
	inv := ""
	if h.Opcode.Invalidates() {
		inv = fmt.Sprintf(" InvalidateSTag=%#x", h.InvalidateSTag)
	}
	return fmt.Sprintf("%v%s QN=%d MSN=%d MO=%d%s", h.Opcode, l, h.QN, h.MSN, h.MO, inv)
}

// AppendFPDUHeader appends the MPA ULPDU_Length field and the DDP/RDMAP header
// of a segment that will carry payloadLen bytes of payload, and returns the
// extended slice. The payload itself and the trailer (AppendTrailer) are sent
// after it, e.g. with net.Buffers, so the payload is never copied.
// The T flag and, for untagged opcodes, the QN come from h.Opcode; reserved
// bits are written as zero. It does not allocate when dst has room.
func AppendFPDUHeader(dst []byte, h *Header, payloadLen int) ([]byte, error) {
	if !h.Opcode.Valid() {
		return dst, fmt.Errorf("iwarp: encode FPDU header: %w: %d", ErrOpcode, h.Opcode)
	}
	hl := h.Opcode.HeaderLen()
	if payloadLen < 0 || hl-MPALenFieldLen+payloadLen > MaxULPDULength {
		return dst, fmt.Errorf("iwarp: encode FPDU header: %w: %d bytes with a %d-byte header (ULPDU_Length max %d)",
			ErrPayloadTooLarge, payloadLen, hl, MaxULPDULength)
	}
	ctrl := uint16(DDPVersion<<8 | RDMAPVersion<<6 | uint16(h.Opcode))
	if h.Last {
		ctrl |= ctrlLast
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(hl-MPALenFieldLen+payloadLen))
	if h.Opcode.Tagged() {
		dst = binary.BigEndian.AppendUint16(dst, ctrl|ctrlTagged)
		dst = binary.BigEndian.AppendUint32(dst, h.STag)
		return binary.BigEndian.AppendUint64(dst, h.TO), nil
	}
	dst = binary.BigEndian.AppendUint16(dst, ctrl)
	dst = binary.BigEndian.AppendUint32(dst, h.InvalidateSTag)
	dst = binary.BigEndian.AppendUint32(dst, h.Opcode.QN())
	dst = binary.BigEndian.AppendUint32(dst, h.MSN)
	return binary.BigEndian.AppendUint32(dst, h.MO), nil
}

// ParseFPDUHeader decodes and validates the FPDU header at the start of b
// (b[0] is the first byte of the MPA length field) into h.
//
// On success it returns the header length (16 or 20) and the number of
// payload bytes that follow the header in this FPDU (ULPDU_Length + 2 −
// header length); pad and CRC follow the payload.
//
// If b is too short it returns ErrIncomplete and, as hdrLen, the number of
// bytes it needs (4 to see the control word, then the full header). The
// control word and ULPDU_Length are validated as soon as they are present,
// so a stream reader can read 4 bytes, call ParseFPDUHeader, then read the
// rest, and never waits for bytes a too-short segment does not have.
//
// Validation, in siw's order (siw_get_hdr), each failure a *ProtocolError
// carrying its Terminate code:
//   - DDP version ≠ 1: DDP tagged (1/1/0x04) or untagged (1/2/0x06) invalid
//     DDP version, chosen by the T flag (RFC 5041);
//   - RDMAP version ≠ 1: RDMAP remote operation, invalid version (0/2/0x05);
//   - opcode 8..15: RDMAP unexpected opcode (0/2/0x06);
//   - T flag inconsistent with the opcode: unexpected opcode (0/2/0x06);
//   - ULPDU_Length shorter than the header the control word calls for
//     (tagged: 14 bytes after the length field, untagged: 18), including
//     zero: DDP local catastrophic (1/0/0x00), RFC 5041 having no more
//     specific code for a malformed segment. This is decided from the
//     first 4 bytes, before the rest of the header arrives;
//   - untagged QN > 2: DDP untagged invalid QN (1/2/0x01); QN 0..2 but not
//     the opcode's queue: unexpected opcode (0/2/0x06);
//   - Read Request not exactly 28 body bytes, Terminate body < 4 bytes, or
//     either without L: RDMAP catastrophic error localized to the stream
//     (0/2/0x07): a Read Request has a fixed-size header and a Terminate
//     is a single-segment message, so neither may be split or padded out.
//
// The DDP Rsvd, RDMAP Rsv and (except for invalidating Sends) RsvdULP fields
// are not checked: RFC 5041 and RFC 5040 say receivers do not check
// reserved fields. MSN and MO are stream state and are left to the caller.
func ParseFPDUHeader(b []byte, h *Header) (hdrLen, payloadLen int, err error) {
	if len(b) < 4 {
		return 4, 0, ErrIncomplete
	}
	ulpdu := int(binary.BigEndian.Uint16(b))
	ctrl := binary.BigEndian.Uint16(b[2:])
	tagged := ctrl&ctrlTagged != 0
	if v := (ctrl & ctrlDDPVersion) >> 8; v != DDPVersion {
		code := TermDDPUntaggedInvalidVersion
		if tagged {
			code = TermDDPTaggedInvalidVersion
		}
		return 0, 0, protoErr(code, ErrDDPVersion, "DDP version", uint64(v)).withHeader(b[:4])
	}
	if v := (ctrl & ctrlRDMAPVersion) >> 6; v != RDMAPVersion {
		return 0, 0, protoErr(TermRDMAPInvalidVersion, ErrRDMAPVersion, "RDMAP version", uint64(v)).withHeader(b[:4])
	}
	op := Opcode(ctrl & ctrlOpcode)
	if !op.Valid() {
		return 0, 0, protoErr(TermRDMAPUnexpectedOpcode, ErrOpcode, "opcode", uint64(op)).withHeader(b[:4])
	}
	hl := TaggedHeaderLen
	if !tagged {
		hl = UntaggedHeaderLen
	}
	if tagged != op.Tagged() {
		e := protoErr(TermRDMAPUnexpectedOpcode, ErrTaggedMismatch, "opcode", uint64(op))
		if tagged {
			e.detail = op.String() + " sent tagged"
		} else {
			e.detail = op.String() + " sent untagged"
		}
		return 0, 0, e.withHeader(b[:min(len(b), hl)])
	}
	if ulpdu+MPALenFieldLen < hl {
		// Checked before waiting for the rest of the header: the bytes
		// that would complete it are not part of this segment, and a
		// peer that sends nothing more must not hold the stream open.
		// The segment holds no complete header, so none is copied.
		e := protoErr(TermDDPLocalCatastrophic, ErrSegmentShort, "ULPDU_Length", uint64(ulpdu))
		e.detail = fmt.Sprintf("%s needs a %d-byte DDP header, the segment has %d bytes", op, hl-MPALenFieldLen, ulpdu)
		return 0, 0, e.withHeader(b[:min(len(b), ulpdu+MPALenFieldLen)])
	}
	if len(b) < hl {
		return hl, 0, ErrIncomplete
	}
	payloadLen = ulpdu + MPALenFieldLen - hl
	h.Opcode = op
	h.Last = ctrl&ctrlLast != 0
	if tagged {
		h.STag = binary.BigEndian.Uint32(b[4:])
		h.TO = binary.BigEndian.Uint64(b[8:])
		h.InvalidateSTag, h.QN, h.MSN, h.MO = 0, 0, 0, 0
		return hl, payloadLen, nil
	}
	h.STag, h.TO = 0, 0
	h.InvalidateSTag = binary.BigEndian.Uint32(b[4:])
	h.QN = binary.BigEndian.Uint32(b[8:])
	h.MSN = binary.BigEndian.Uint32(b[12:])
	h.MO = binary.BigEndian.Uint32(b[16:])
	if h.QN > maxQN {
		return 0, 0, protoErr(TermDDPUntaggedInvalidQN, ErrQN, "QN", uint64(h.QN)).withHeader(b[:hl])
	}
	if h.QN != op.QN() {
		e := protoErr(TermRDMAPUnexpectedOpcode, ErrQN, "QN", uint64(h.QN))
		e.detail = fmt.Sprintf("%s belongs on QN %d", op, op.QN())
		return 0, 0, e.withHeader(b[:hl])
	}
	switch op {
	case OpReadRequest:
		if payloadLen != ReadRequestLen {
			e := protoErr(TermRDMAPCatastrophicStream, ErrMessageLength, "Read Request length", uint64(payloadLen))
			e.detail = fmt.Sprintf("want %d", ReadRequestLen)
			return 0, 0, e.withHeader(b[:hl])
		}
		if !h.Last {
			return 0, 0, protoErr(TermRDMAPCatastrophicStream, ErrNotLast, "L", 0).withHeader(b[:hl])
		}
	case OpTerminate:
		if payloadLen < terminateControlLen {
			e := protoErr(TermRDMAPCatastrophicStream, ErrMessageLength, "Terminate length", uint64(payloadLen))
			e.detail = fmt.Sprintf("want at least %d", terminateControlLen)
			return 0, 0, e.withHeader(b[:hl])
		}
		if !h.Last {
			return 0, 0, protoErr(TermRDMAPCatastrophicStream, ErrNotLast, "L", 0).withHeader(b[:hl])
		}
	}
	return hl, payloadLen, nil
}

// ReadFPDUHeader reads exactly one FPDU header from r into buf (which must
// hold UntaggedHeaderLen bytes): first the length field and control word,
// then the rest of the header the control word calls for. It decodes the
// header into h like ParseFPDUHeader and returns the header and payload
// lengths; the caller then reads payloadLen bytes (for instance straight into
// registered memory, folding them into UpdateCRC) and TrailerLen bytes for
// CheckTrailer. Nothing beyond the header is read. Protocol errors are those
// of ParseFPDUHeader; a stream that ends mid-header gives
// io.ErrUnexpectedEOF (io.EOF if it ends before the first byte).
func ReadFPDUHeader(r io.Reader, buf []byte, h *Header) (hdrLen, payloadLen int, err error) {
	if len(buf) < UntaggedHeaderLen {
		return 0, 0, fmt.Errorf("iwarp: read FPDU header: %w: have %d bytes, need %d", ErrBufferTooSmall, len(buf), UntaggedHeaderLen)
	}
	if _, err := io.ReadFull(r, buf[:4]); err != nil {
		return 0, 0, fmt.Errorf("iwarp: read FPDU header: %w", err)
	}
	n, _, err := ParseFPDUHeader(buf[:4], h)
	if err != ErrIncomplete {
		return 0, 0, err // a protocol error in the control word or the length
	}
	if _, err := io.ReadFull(r, buf[4:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, fmt.Errorf("iwarp: read FPDU header (%d of %d bytes): %w", 4, n, err)
	}
	return ParseFPDUHeader(buf[:n], h)
}

// ReadRequestLen is the length of the RDMA Read Request body (RFC 5040).
const ReadRequestLen = 28

// ReadRequest is the RDMA Read Request header (RFC 5040), the 28-byte
// payload of an untagged segment on QN 1:
//
//	off len field
//	0   4   Data Sink STag
//	4   8   Data Sink Tagged Offset
//	12  4   RDMA Read Message Size (RDMARDSZ)
//	16  4   Data Source STag
//	20  8   Data Source Tagged Offset
type ReadRequest struct {
	SinkSTag uint32
	SinkTO   uint64
	Size     uint32 // RDMARDSZ, bytes to read
	SrcSTag  uint32
	SrcTO    uint64
}

// Append appends the 28-byte body to dst.
func (r *ReadRequest) Append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, r.SinkSTag)
	dst = binary.BigEndian.AppendUint64(dst, r.SinkTO)
	dst = binary.BigEndian.AppendUint32(dst, r.Size)
	dst = binary.BigEndian.AppendUint32(dst, r.SrcSTag)
	return binary.BigEndian.AppendUint64(dst, r.SrcTO)
}

// Decode parses a Read Request body; b must be exactly ReadRequestLen bytes
// (ParseFPDUHeader already enforces this for received segments).
func (r *ReadRequest) Decode(b []byte) error {
	if len(b) != ReadRequestLen {
		e := protoErr(TermRDMAPCatastrophicStream, ErrMessageLength, "Read Request length", uint64(len(b)))
		e.detail = fmt.Sprintf("want %d", ReadRequestLen)
		return e
	}
	r.SinkSTag = binary.BigEndian.Uint32(b)
	r.SinkTO = binary.BigEndian.Uint64(b[4:])
	r.Size = binary.BigEndian.Uint32(b[12:])
	r.SrcSTag = binary.BigEndian.Uint32(b[16:])
	r.SrcTO = binary.BigEndian.Uint64(b[20:])
	return nil
}
