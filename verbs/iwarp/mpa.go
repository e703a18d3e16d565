package iwarp

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MPA Request / Reply frame (RFC 5044, extended by RFC 6581 §6 and §9).
// All fields big-endian.
//
//	off len field
//	0   16  Key: "MPA ID Req Frame" (request) or "MPA ID Rep Frame" (reply)
//	16  1   M 0x80 (markers) | C 0x40 (CRC) | R 0x20 (reject) |
//	        E/S 0x10 (enhanced, RFC 6581) | Res 0x0f (siw-private GSO 0x08)
//	17  1   Rev: 1 (RFC 5044) or 2 (RFC 6581); siw also accepts 0
//	18  2   PD_Length: bytes of private data that follow, including the
//	        enhanced block
//	20  4   only if E and Rev 2 (RFC 6581 §9):
//	          IRD word: A 0x8000 (peer-to-peer) | B 0x4000 (zero-length Send RTR) | IRD 0x3fff
//	          ORD word: C 0x8000 (zero-length RDMA Write RTR) | D 0x4000 (zero-length RDMA Read RTR) | ORD 0x3fff
//	..  n   ULP private data
//
// A Reject is a Reply with R set; it may carry private data (and, when
// enhanced, the responder's IRD/ORD).
const (
	MPAKeyLen    = 16
	MPAHeaderLen = 20 // key + flags + rev + PD_Length

	// MaxPrivateData is the largest PD_Length accepted and produced: 256,
	// siw's MPA_MAX_PRIVDATA (= RDMA_MAX_PRIVATE_DATA, also cxgb4's limit).
	// RFC 5044 allows 512, but siw answers anything above 256 with -EPROTO.
	MaxPrivateData = 256
	// EnhancedDataLen is the RFC 6581 IRD/ORD block at the head of the
	// private data.
	EnhancedDataLen = 4
	// MaxULPPrivateDataEnhanced is the ULP private data that fits next to
	// the enhanced block: 252 bytes.
	MaxULPPrivateDataEnhanced = MaxPrivateData - EnhancedDataLen
	// MaxMPAFrameLen is the largest MPA frame this package reads or writes.
	MaxMPAFrameLen = MPAHeaderLen + MaxPrivateData

	// MaxIRDORD is the largest value the 14-bit IRD and ORD fields hold,
	// 0x3FFF, which the negotiation reads as IRDORDNotNegotiated.
	MaxIRDORD = 0x3fff
	// IRDORDNotNegotiated is the all-ones IRD or ORD value (0x3FFF), which
	// RFC 6581 §9.1 says "indicates that automatic negotiation of the IRD
	// or ORD is not desired, and that the ULP will be responsible for it".
	// A responder answers an initiator ORD of 0x3FFF with an IRD of 0x3FFF
	// and keeps its IRD, and an initiator IRD of 0x3FFF with an ORD of
	// 0x3FFF and keeps its ORD; an initiator keeps its ORD on a responder
	// IRD of 0x3FFF and its IRD on a responder ORD of 0x3FFF.
	IRDORDNotNegotiated = 0x3fff

	// MPARevision1 and MPARevision2 are the MPA revisions of RFC 5044 and
	// RFC 6581.
	MPARevision1 = 1
	MPARevision2 = 2
)

var (
	mpaKeyRequest = [MPAKeyLen]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e'}
	mpaKeyReply   = [MPAKeyLen]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e'}
)

// MPAKind tells an MPA Request from an MPA Reply (the key).
type MPAKind uint8

// MPA frame kinds. MPAAny is only meaningful as the "want" argument of the
// decoders.
const (
	MPAAny     MPAKind = 0
	MPARequest MPAKind = 1 // key "MPA ID Req Frame"
	MPAReply   MPAKind = 2 // key "MPA ID Rep Frame" (also Reject)
)

// Key returns the 16-byte key of the kind (nil for MPAAny).
func (k MPAKind) Key() []byte {
	switch k {
	case MPARequest:
		return mpaKeyRequest[:]
	case MPAReply:
		return mpaKeyReply[:]
	}
	return nil
}

// String names the kind by its key.
func (k MPAKind) String() string {
	switch k {
	case MPARequest:
		return "MPA Request"
	case MPAReply:
		return "MPA Reply"
	case MPAAny:
		return "MPA Request or Reply"
	}
	return fmt.Sprintf("MPAKind(%d)", uint8(k))
}

// MPAFlags is the first flags byte of an MPA frame (offset 16).
type MPAFlags uint8

// MPA flag bits (RFC 5044, RFC 6581 §6).
const (
	FlagMarkers  MPAFlags = 0x80 // M: markers wanted (not supported here)
	FlagCRC      MPAFlags = 0x40 // C: CRC wanted
	FlagReject   MPAFlags = 0x20 // R: reject (replies only)
	FlagEnhanced MPAFlags = 0x10 // E ("S" in RFC 6581): private data starts with IRD/ORD
	// FlagSiwGSO is a siw-private bit (MPA_RR_FLAG_GSO_EXP) inside RFC 5044's
	// reserved field; senders should leave it clear. Reserved bits are
	// preserved but not interpreted (RFC 5044: MUST NOT be checked).
	FlagSiwGSO MPAFlags = 0x08
)

// RTRFlags are the RFC 6581 ready-to-receive options of the enhanced block.
type RTRFlags uint8

// RTR options (RFC 6581 §9.2).
const (
	RTRSend  RTRFlags = 1 << 0 // B: zero-length FULPDU (Send)
	RTRWrite RTRFlags = 1 << 1 // C: zero-length RDMA Write
	RTRRead  RTRFlags = 1 << 2 // D: zero-length RDMA Read
)

// MPAFrame is a decoded MPA Request, Reply or Reject.
type MPAFrame struct {
	Kind     MPAKind
	Flags    MPAFlags // M, C, R, E and reserved bits as sent/received
	Revision uint8

	// Enhanced connection setup block (RFC 6581 §9), present iff Enhanced().
	IRD        uint16 // 14 bits
	ORD        uint16 // 14 bits
	PeerToPeer bool   // A: peer-to-peer connection model, RTR wanted
	RTR        RTRFlags

	// PrivateData is the ULP private data (after the enhanced block). On
	// decode it aliases the input buffer.
	PrivateData []byte
}

// Enhanced reports whether the frame carries the RFC 6581 IRD/ORD block:
// the E bit with revision 2. With revision 0 or 1 the E bit is a reserved bit
// and is ignored (RFC 6581 §6).
func (f *MPAFrame) Enhanced() bool { return f.Flags&FlagEnhanced != 0 && f.Revision == MPARevision2 }

// CRC reports the C flag.
func (f *MPAFrame) CRC() bool { return f.Flags&FlagCRC != 0 }

// Rejected reports the R flag.
func (f *MPAFrame) Rejected() bool { return f.Flags&FlagReject != 0 }

// PDLen returns the PD_Length the frame has on the wire.
func (f *MPAFrame) PDLen() int {
	n := len(f.PrivateData)
	if f.Enhanced() {
		n += EnhancedDataLen
	}
	return n
}

// Len returns the frame's length on the wire.
func (f *MPAFrame) Len() int { return MPAHeaderLen + f.PDLen() }

// Append encodes the frame and appends it to dst. It refuses an unknown
// Kind, revision > 2, the M flag (markers are not implemented), IRD/ORD above
// 0x3fff and more than MaxPrivateData bytes of private data (252 of ULP data
// when enhanced).
func (f *MPAFrame) Append(dst []byte) ([]byte, error) {
	key := f.Kind.Key()
	if key == nil {
		return dst, fmt.Errorf("iwarp: encode MPA frame: kind %v is neither request nor reply", f.Kind)
	}
	if f.Revision > MPARevision2 {
		return dst, fmt.Errorf("iwarp: encode %v: %w: %d", f.Kind, ErrMPARevision, f.Revision)
	}
	if f.Flags&FlagMarkers != 0 {
		return dst, fmt.Errorf("iwarp: encode %v: %w", f.Kind, ErrMPAMarkers)
	}
	if pd := f.PDLen(); pd > MaxPrivateData {
		limit := MaxPrivateData
		if f.Enhanced() {
			limit = MaxULPPrivateDataEnhanced
		}
		return dst, fmt.Errorf("iwarp: encode %v: %w: %d bytes of ULP private data, at most %d",
			f.Kind, ErrPrivateDataTooLong, len(f.PrivateData), limit)
	}
	if f.Enhanced() && (f.IRD > MaxIRDORD || f.ORD > MaxIRDORD) {
		return dst, fmt.Errorf("iwarp: encode %v: %w: IRD %d ORD %d", f.Kind, ErrMPAIRDORD, f.IRD, f.ORD)
	}
	dst = append(dst, key...)
	dst = append(dst, byte(f.Flags), f.Revision)
	dst = binary.BigEndian.AppendUint16(dst, uint16(f.PDLen()))
	if f.Enhanced() {
		ird, ord := f.IRD, f.ORD
		if f.PeerToPeer {
			ird |= 0x8000
		}
		if f.RTR&RTRSend != 0 {
			ird |= 0x4000
		}
		if f.RTR&RTRWrite != 0 {
			ord |= 0x8000
		}
		if f.RTR&RTRRead != 0 {
			ord |= 0x4000
		}
		dst = binary.BigEndian.AppendUint16(dst, ird)
		dst = binary.BigEndian.AppendUint16(dst, ord)
	}
	return append(dst, f.PrivateData...), nil
}

// MPAFrameLen validates the 20-byte MPA header at the start of b and returns
// the whole frame's length (20 + PD_Length). With fewer than 20 bytes it
// returns 20 and ErrIncomplete. want selects the expected key (MPAAny
// accepts both).
//
// Every violation is a *ProtocolError with TermLLPInvalidRequestReply
// (2/0/0x04), wrapping one of ErrMPAKey, ErrMPARevision (> 2),
// ErrMPAMarkers (M set), ErrPrivateDataTooLong (PD_Length > 256) or
// ErrMPAEnhancedShort (E with Rev 2 and PD_Length < 4).
func MPAFrameLen(b []byte, want MPAKind) (int, error) {
	if len(b) < MPAHeaderLen {
		return MPAHeaderLen, ErrIncomplete
	}
	if _, err := mpaKind(b, want); err != nil {
		return 0, err
	}
	flags, rev := MPAFlags(b[16]), b[17]
	pd := int(binary.BigEndian.Uint16(b[18:]))
	if rev > MPARevision2 {
		return 0, protoErr(TermLLPInvalidRequestReply, ErrMPARevision, "MPA Rev", uint64(rev))
	}
	if flags&FlagMarkers != 0 {
		return 0, protoErr(TermLLPInvalidRequestReply, ErrMPAMarkers, "MPA M flag", 1)
	}
	if pd > MaxPrivateData {
		e := protoErr(TermLLPInvalidRequestReply, ErrPrivateDataTooLong, "MPA PD_Length", uint64(pd))
		e.detail = fmt.Sprintf("at most %d", MaxPrivateData)
		return 0, e
	}
	if flags&FlagEnhanced != 0 && rev == MPARevision2 && pd < EnhancedDataLen {
		return 0, protoErr(TermLLPInvalidRequestReply, ErrMPAEnhancedShort, "MPA PD_Length", uint64(pd))
	}
	return MPAHeaderLen + pd, nil
}

func mpaKind(b []byte, want MPAKind) (MPAKind, error) {
	var got MPAKind
	switch string(b[:MPAKeyLen]) {
	case string(mpaKeyRequest[:]):
		got = MPARequest
	case string(mpaKeyReply[:]):
		got = MPAReply
	}
	if got != 0 && (want == MPAAny || want == got) {
		return got, nil
	}
	e := protoErr(TermLLPInvalidRequestReply, ErrMPAKey, "MPA key", 0)
	e.noValue = true
	switch want {
	case MPARequest, MPAReply:
		e.detail = fmt.Sprintf("got %q, expected %q", b[:MPAKeyLen], want.Key())
	default:
		e.detail = fmt.Sprintf("got %q, expected %q or %q", b[:MPAKeyLen], mpaKeyRequest[:], mpaKeyReply[:])
	}
	return 0, e
}

// Decode parses one MPA frame from the start of b into f and returns its
// length. want selects the expected key (MPAAny accepts both). If b is
// shorter than the frame, it returns ErrIncomplete and the number of bytes
// needed (20 until the header is visible, then 20 + PD_Length); bytes after
// the frame are not examined. Errors are those of MPAFrameLen.
// f.PrivateData aliases b; Decode does not allocate on success.
func (f *MPAFrame) Decode(b []byte, want MPAKind) (int, error) {
	n, err := MPAFrameLen(b, want)
	if err != nil {
		return n, err
	}
	if len(b) < n {
		return n, ErrIncomplete
	}
	f.Kind, _ = mpaKind(b, want)
	f.Flags = MPAFlags(b[16])
	f.Revision = b[17]
	pd := b[MPAHeaderLen:n:n]
	f.IRD, f.ORD, f.PeerToPeer, f.RTR = 0, 0, false, 0
	if f.Enhanced() {
		ird := binary.BigEndian.Uint16(pd)
		ord := binary.BigEndian.Uint16(pd[2:])
		f.IRD, f.ORD = ird&MaxIRDORD, ord&MaxIRDORD
		f.PeerToPeer = ird&0x8000 != 0
		if ird&0x4000 != 0 {
			f.RTR |= RTRSend
		}
		if ord&0x8000 != 0 {
			f.RTR |= RTRWrite
		}
		if ord&0x4000 != 0 {
			f.RTR |= RTRRead
		}
		pd = pd[EnhancedDataLen:]
	}
	f.PrivateData = pd
	return n, nil
}

// ReadMPAFrame reads exactly one MPA frame from r: the 20-byte header, then
// exactly PD_Length bytes, never more (siw treats any byte after the frame
// as an error until the frame has been answered, so nothing may be
// read ahead). buf must hold at least MaxMPAFrameLen (276) bytes; the
// returned frame's PrivateData aliases buf. want selects the expected key.
// A short read gives io.ErrUnexpectedEOF (io.EOF if nothing was read);
// protocol errors are those of MPAFrameLen.
func ReadMPAFrame(r io.Reader, buf []byte, want MPAKind) (MPAFrame, error) {
	var f MPAFrame
	if len(buf) < MaxMPAFrameLen {
		return f, fmt.Errorf("iwarp: read %v: %w: have %d bytes, need %d", want, ErrBufferTooSmall, len(buf), MaxMPAFrameLen)
	}
	if _, err := io.ReadFull(r, buf[:MPAHeaderLen]); err != nil {
		return f, fmt.Errorf("iwarp: read %v header: %w", want, err)
	}
	n, err := MPAFrameLen(buf[:MPAHeaderLen], want)
	if err != nil {
		return f, err
	}
	if _, err := io.ReadFull(r, buf[MPAHeaderLen:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return f, fmt.Errorf("iwarp: read %v private data (%d bytes): %w", want, n-MPAHeaderLen, err)
	}
	if _, err := f.Decode(buf[:n], want); err != nil {
		return f, err
	}
	return f, nil
}
