package iwarp

import (
	"errors"
	"fmt"
)

// Layer is the protocol layer named in a Terminate message (RFC 5040,
// Terminate Header, "Layer" field of the Terminate Control).
type Layer uint8

// Layers (RFC 5040, Terminate Header).
const (
	LayerRDMAP Layer = 0 // RDMAP, RFC 5040
	LayerDDP   Layer = 1 // DDP, RFC 5041
	LayerLLP   Layer = 2 // lower layer protocol: MPA, RFC 5044
)

// String names the layer.
func (l Layer) String() string {
	switch l {
	case LayerRDMAP:
		return "RDMAP"
	case LayerDDP:
		return "DDP"
	case LayerLLP:
		return "LLP"
	}
	return fmt.Sprintf("layer(%d)", uint8(l))
}

// TermCode is the Layer/EType/Error Code triple of a Terminate message, packed
// exactly like the first 16 bits of the RFC 5040 Terminate Control:
// Layer in bits 15..12, EType in bits 11..8, Error Code in bits 7..0.
// The constants below are the values RFC 5040 (RDMAP), RFC 5041 (DDP),
// RFC 5044 and RFC 6581 §8 (LLP/MPA) assign, as collected in the IANA
// "Remote Direct Data Placement (RDDP)" registries (RFC 6580: RDMAP Errors,
// DDP Errors, MPA Errors; RFC 6581 §11 adds MPA errors 0x05-0x07). Linux siw
// uses the same numbers (iwarp.h enums).
type TermCode uint16

// MakeTermCode packs a Layer/EType/ECode triple. Layer and etype are masked
// to 4 bits.
func MakeTermCode(layer Layer, etype, ecode uint8) TermCode {
	return TermCode(uint16(layer&0xf)<<12 | uint16(etype&0xf)<<8 | uint16(ecode))
}

// Layer returns the layer nibble.
func (c TermCode) Layer() Layer { return Layer(c >> 12) }

// EType returns the error type nibble.
func (c TermCode) EType() uint8 { return uint8(c>>8) & 0xf }

// ECode returns the error code byte.
func (c TermCode) ECode() uint8 { return uint8(c) }

// RDMAP error types (RFC 5040; IANA RDMAP Errors registry).
const (
	ETypeRDMAPLocalCatastrophic uint8 = 0x0
	ETypeRDMAPRemoteProtection  uint8 = 0x1
	ETypeRDMAPRemoteOperation   uint8 = 0x2
)

// DDP error types (RFC 5041; IANA DDP Errors registry).
const (
	ETypeDDPLocalCatastrophic uint8 = 0x0
	ETypeDDPTaggedBuffer      uint8 = 0x1
	ETypeDDPUntaggedBuffer    uint8 = 0x2
)

// ETypeLLPMPA is the only LLP error type: MPA (RFC 5044, RFC 6581 §8).
const ETypeLLPMPA uint8 = 0x0

// RDMAP Terminate codes, RFC 5040 (Layer 0).
const (
	// TermRDMAPLocalCatastrophic: EType 0; RFC 5040 allows any error code
	// ("ALL" in the IANA registry), 0x00 is used here.
	TermRDMAPLocalCatastrophic TermCode = 0x0000

	// Remote Protection Error (EType 1).
	TermRDMAPInvalidSTag           TermCode = 0x0100
	TermRDMAPBaseBounds            TermCode = 0x0101
	TermRDMAPAccessRights          TermCode = 0x0102
	TermRDMAPSTagNotAssociated     TermCode = 0x0103 // STag not associated with RDMAP Stream
	TermRDMAPTOWrap                TermCode = 0x0104
	TermRDMAPProtCannotInvalidate  TermCode = 0x0109 // STag cannot be invalidated (protection)
	TermRDMAPProtectionUnspecified TermCode = 0x01ff
	TermRDMAPInvalidVersion        TermCode = 0x0205 // Remote Operation Error (EType 2) from here on
	TermRDMAPUnexpectedOpcode      TermCode = 0x0206
	TermRDMAPCatastrophicStream    TermCode = 0x0207 // catastrophic error, localized to RDMAP Stream
	TermRDMAPCatastrophicGlobal    TermCode = 0x0208
	TermRDMAPOpCannotInvalidate    TermCode = 0x0209 // STag cannot be invalidated (operation)
	TermRDMAPRemoteOpUnspecified   TermCode = 0x02ff
)

// DDP Terminate codes, RFC 5041 (Layer 1).
const (
	TermDDPLocalCatastrophic TermCode = 0x1000

	// Tagged Buffer Error (EType 1).
	TermDDPTaggedInvalidSTag       TermCode = 0x1100
	TermDDPTaggedBaseBounds        TermCode = 0x1101
	TermDDPTaggedSTagNotAssociated TermCode = 0x1102 // STag not associated with DDP Stream
	TermDDPTaggedTOWrap            TermCode = 0x1103
	TermDDPTaggedInvalidVersion    TermCode = 0x1104

	// Untagged Buffer Error (EType 2).
	TermDDPUntaggedInvalidQN      TermCode = 0x1201
	TermDDPUntaggedMSNNoBuffer    TermCode = 0x1202 // invalid MSN - no buffer available
	TermDDPUntaggedMSNRange       TermCode = 0x1203 // invalid MSN - MSN range is not valid
	TermDDPUntaggedInvalidMO      TermCode = 0x1204
	TermDDPUntaggedMessageTooLong TermCode = 0x1205 // DDP Message too long for available buffer
	TermDDPUntaggedInvalidVersion TermCode = 0x1206
)

// LLP (MPA) Terminate codes, RFC 5044 (0x01-0x04) and RFC 6581 §8
// (0x05-0x07); Layer 2, EType 0.
const (
	TermLLPConnectionLost      TermCode = 0x2001 // TCP connection closed, terminated or lost
	TermLLPCRCError            TermCode = 0x2002 // received MPA CRC does not match
	TermLLPFPDUStart           TermCode = 0x2003 // marker / ULPDU pointer (FPDU start) error
	TermLLPInvalidRequestReply TermCode = 0x2004 // invalid MPA Request or Reply frame
	TermLLPLocalCatastrophic   TermCode = 0x2005 // RFC 6581
	TermLLPInsufficientIRD     TermCode = 0x2006 // RFC 6581: insufficient IRD resources
	TermLLPNoMatchingRTR       TermCode = 0x2007 // RFC 6581: no matching RTR option
)

var termNames = map[TermCode]string{
	TermRDMAPInvalidSTag:           "RDMAP remote protection: invalid STag",
	TermRDMAPBaseBounds:            "RDMAP remote protection: base or bounds violation",
	TermRDMAPAccessRights:          "RDMAP remote protection: access rights violation",
	TermRDMAPSTagNotAssociated:     "RDMAP remote protection: STag not associated with RDMAP stream",
	TermRDMAPTOWrap:                "RDMAP remote protection: TO wrap",
	TermRDMAPProtCannotInvalidate:  "RDMAP remote protection: STag cannot be invalidated",
	TermRDMAPProtectionUnspecified: "RDMAP remote protection: unspecified error",
	TermRDMAPInvalidVersion:        "RDMAP remote operation: invalid RDMAP version",
	TermRDMAPUnexpectedOpcode:      "RDMAP remote operation: unexpected opcode",
	TermRDMAPCatastrophicStream:    "RDMAP remote operation: catastrophic error, localized to RDMAP stream",
	TermRDMAPCatastrophicGlobal:    "RDMAP remote operation: catastrophic error, global",
	TermRDMAPOpCannotInvalidate:    "RDMAP remote operation: STag cannot be invalidated",
	TermRDMAPRemoteOpUnspecified:   "RDMAP remote operation: unspecified error",

	TermDDPLocalCatastrophic:       "DDP local catastrophic error",
	TermDDPTaggedInvalidSTag:       "DDP tagged buffer: invalid STag",
	TermDDPTaggedBaseBounds:        "DDP tagged buffer: base or bounds violation",
	TermDDPTaggedSTagNotAssociated: "DDP tagged buffer: STag not associated with DDP stream",
	TermDDPTaggedTOWrap:            "DDP tagged buffer: TO wrap",
	TermDDPTaggedInvalidVersion:    "DDP tagged buffer: invalid DDP version",
	TermDDPUntaggedInvalidQN:       "DDP untagged buffer: invalid QN",
	TermDDPUntaggedMSNNoBuffer:     "DDP untagged buffer: invalid MSN, no buffer available",
	TermDDPUntaggedMSNRange:        "DDP untagged buffer: invalid MSN, MSN range not valid",
	TermDDPUntaggedInvalidMO:       "DDP untagged buffer: invalid MO",
	TermDDPUntaggedMessageTooLong:  "DDP untagged buffer: DDP message too long for available buffer",
	TermDDPUntaggedInvalidVersion:  "DDP untagged buffer: invalid DDP version",

	TermLLPConnectionLost:      "MPA: TCP connection closed, terminated or lost",
	TermLLPCRCError:            "MPA: CRC error",
	TermLLPFPDUStart:           "MPA: marker/FPDU start error",
	TermLLPInvalidRequestReply: "MPA: invalid MPA request or reply",
	TermLLPLocalCatastrophic:   "MPA: local catastrophic error",
	TermLLPInsufficientIRD:     "MPA: insufficient IRD resources",
	TermLLPNoMatchingRTR:       "MPA: no matching RTR option",
}

// Known reports whether c is a Layer/EType/ECode combination the RFCs
// assign (RDMAP Local Catastrophic accepts any ECode).
func (c TermCode) Known() bool {
	if c.Layer() == LayerRDMAP && c.EType() == ETypeRDMAPLocalCatastrophic {
		return true
	}
	_, ok := termNames[c]
	return ok
}

// String renders the code as "layer/etype/ecode (name)".
func (c TermCode) String() string {
	name, ok := termNames[c]
	if !ok {
		if c.Layer() == LayerRDMAP && c.EType() == ETypeRDMAPLocalCatastrophic {
			name = "RDMAP local catastrophic error"
		} else {
			name = "unknown"
		}
	}
	return fmt.Sprintf("%d/%d/0x%02x (%s)", c.Layer(), c.EType(), c.ECode(), name)
}

// Sentinel errors. Decoders return them wrapped in a *ProtocolError (which
// carries the Terminate code to send); encoders return them wrapped with
// context. Test with errors.Is.
var (
	// ErrIncomplete means the buffer holds only part of a frame; the
	// accompanying count says how many bytes the whole frame needs.
	ErrIncomplete = errors.New("iwarp: incomplete frame")

	ErrMPAKey             = errors.New("iwarp: bad MPA key")
	ErrMPARevision        = errors.New("iwarp: unsupported MPA revision")
	ErrMPAMarkers         = errors.New("iwarp: MPA markers requested (not supported)")
	ErrMPAEnhancedShort   = errors.New("iwarp: MPA enhanced bit set but private data shorter than the 4-byte IRD/ORD block")
	ErrPrivateDataTooLong = errors.New("iwarp: MPA private data too long")
	ErrMPAIRDORD          = errors.New("iwarp: MPA IRD/ORD out of 14-bit range")
	ErrBufferTooSmall     = errors.New("iwarp: buffer too small")
	ErrDDPVersion         = errors.New("iwarp: invalid DDP version")
	ErrRDMAPVersion       = errors.New("iwarp: invalid RDMAP version")
	ErrOpcode             = errors.New("iwarp: invalid RDMAP opcode")
	ErrTaggedMismatch     = errors.New("iwarp: DDP tagged flag does not match RDMAP opcode")
	ErrQN                 = errors.New("iwarp: invalid DDP queue number")
	ErrSegmentShort       = errors.New("iwarp: DDP segment shorter than its header")
	ErrMessageLength      = errors.New("iwarp: RDMAP message has the wrong length")
	ErrNotLast            = errors.New("iwarp: single-segment RDMAP message without the Last flag")
	ErrCRC                = errors.New("iwarp: MPA CRC mismatch")
	ErrPayloadTooLarge    = errors.New("iwarp: payload does not fit in one FPDU")
	ErrTerminateShort     = errors.New("iwarp: Terminate message truncated")
	ErrTermCode           = errors.New("iwarp: Terminate code not assigned by the RFCs")
)

// ProtocolError is a protocol violation found while decoding bytes received
// from the peer. Code is the Terminate the RFCs assign to it; Terminate()
// builds the whole Terminate message, including the copy of the offending
// header where the RFCs ask for one.
type ProtocolError struct {
	Code  TermCode // Layer/EType/ECode to report to the peer
	Field string   // wire field at fault, e.g. "DDP version", "QN", "MPA key"
	Value uint64   // offending value of Field (meaning depends on Field)
	Err   error    // sentinel, e.g. ErrQN
	// detail is an optional human-readable addition (e.g. the expected key).
	detail string
	// noValue hides Value in the message when the field is not a number.
	noValue bool
	// hdr holds the offending FPDU's header bytes, starting at the MPA
	// length field (hdrLen of them), for the Terminate's header copy.
	hdr    [fpduHeaderCopyMax]byte
	hdrLen uint8
}

// fpduHeaderCopyMax is the largest header a Terminate copies: MPA length +
// untagged DDP header + Read Request body (siw's struct iwarp_rdma_rreq).
const fpduHeaderCopyMax = UntaggedHeaderLen + ReadRequestLen

func (e *ProtocolError) Error() string {
	var s string
	if e.noValue {
		s = fmt.Sprintf("%v: %s (Terminate %s)", e.Err, e.Field, e.Code)
	} else {
		s = fmt.Sprintf("%v: %s = %d (Terminate %s)", e.Err, e.Field, e.Value, e.Code)
	}
	if e.detail != "" {
		s += ": " + e.detail
	}
	return s
}

// Unwrap returns the sentinel error.
func (e *ProtocolError) Unwrap() error { return e.Err }

// OffendingHeader returns the copy of the offending FPDU header (from the MPA
// length field on) kept with the error, or nil.
func (e *ProtocolError) OffendingHeader() []byte { return e.hdr[:e.hdrLen] }

func protoErr(code TermCode, sentinel error, field string, value uint64) *ProtocolError {
	return &ProtocolError{Code: code, Field: field, Value: value, Err: sentinel}
}

// withHeader records the offending header bytes b (from the MPA length
// field) for the Terminate copy.
func (e *ProtocolError) withHeader(b []byte) *ProtocolError {
	n := copy(e.hdr[:], b)
	e.hdrLen = uint8(n)
	return e
}
