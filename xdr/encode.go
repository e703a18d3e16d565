package xdr

import (
	"encoding/binary"
	"math"
)

// Unit is the XDR alignment unit: every item starts on a multiple of 4 bytes.
const Unit = 4

// PadLen returns the number of zero bytes that follow n bytes of opaque data.
func PadLen(n int) int { return (Unit - n&(Unit-1)) & (Unit - 1) }

// RoundUp returns n rounded up to a multiple of Unit.
func RoundUp(n int) int { return (n + Unit - 1) &^ (Unit - 1) }

// OpaqueSize returns the encoded size of a variable-length opaque of n bytes: the length
// word, the data and the pad.
func OpaqueSize(n int) int { return Unit + RoundUp(n) }

var zeros [Unit]byte

// AppendUint32 appends an XDR unsigned int.
func AppendUint32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// AppendInt32 appends an XDR int.
func AppendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// AppendUint64 appends an XDR unsigned hyper.
func AppendUint64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// AppendInt64 appends an XDR hyper.
func AppendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

// AppendBool appends an XDR bool (TRUE = 1, FALSE = 0).
func AppendBool(b []byte, v bool) []byte {
	if v {
		return AppendUint32(b, 1)
	}
	return AppendUint32(b, 0)
}

// AppendFixedOpaque appends fixed-length opaque data followed by its pad.
func AppendFixedOpaque(b, data []byte) []byte {
	b = append(b, data...)
	return append(b, zeros[:PadLen(len(data))]...)
}

// AppendOpaque appends variable-length opaque data: length word, data, pad.
func AppendOpaque(b, data []byte) []byte {
	b = AppendUint32(b, uint32(len(data)))
	return AppendFixedOpaque(b, data)
}

// AppendString appends an XDR string: length word, bytes, pad.
func AppendString(b []byte, s string) []byte {
	b = AppendUint32(b, uint32(len(s)))
	b = append(b, s...)
	return append(b, zeros[:PadLen(len(s))]...)
}

// Payload is a DDP-eligible opaque item elided from an inline XDR stream (RFC 8166 §3.4).
type Payload struct {
	// Pos is the position in the whole logical XDR stream where Data begins, after the
	// item's length word.
	Pos int
	// Data is the item's contents, without XDR pad.
	Data []byte
}

// End returns the XDR position that follows the item, pad included.
func (p Payload) End() int { return p.Pos + RoundUp(len(p.Data)) }

// An Encoder appends XDR items to a buffer and records the payloads elided from it.
// The zero Encoder is ready to use; Reset reuses its storage.
type Encoder struct {
	buf      []byte
	payloads []Payload
	elided   int
}

// NewEncoder returns an Encoder that appends to buf.
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Reset makes e append to buf and forget all payloads, keeping their storage.
func (e *Encoder) Reset(buf []byte) {
	e.buf = buf
	e.payloads = e.payloads[:0]
	e.elided = 0
}

// Bytes returns the inline stream: everything encoded except payload data.
func (e *Encoder) Bytes() []byte { return e.buf }

// Payloads returns the elided items in increasing position order.
func (e *Encoder) Payloads() []Payload { return e.payloads }

// Len returns the number of inline bytes.
func (e *Encoder) Len() int { return len(e.buf) }

// Pos returns the current position in the logical XDR stream: inline bytes plus elided
// payload bytes and their pad.
func (e *Encoder) Pos() int { return len(e.buf) + e.elided }

// Truncate discards everything encoded at or after logical position pos. It panics if
// pos is not a position this encoder has passed, which is a programming error.
func (e *Encoder) Truncate(pos int) {
	for len(e.payloads) > 0 && e.payloads[len(e.payloads)-1].Pos >= pos {
		last := e.payloads[len(e.payloads)-1]
		e.elided -= RoundUp(len(last.Data))
		e.payloads = e.payloads[:len(e.payloads)-1]
	}
	n := pos - e.elided
	if n < 0 || n > len(e.buf) {
		panic("xdr: Truncate beyond encoded data")
	}
	e.buf = e.buf[:n]
}

// Uint32 encodes an unsigned int.
func (e *Encoder) Uint32(v uint32) { e.buf = AppendUint32(e.buf, v) }

// Int32 encodes an int.
func (e *Encoder) Int32(v int32) { e.buf = AppendInt32(e.buf, v) }

// Enum encodes an enum value.
func (e *Encoder) Enum(v int32) { e.buf = AppendInt32(e.buf, v) }

// Uint64 encodes an unsigned hyper.
func (e *Encoder) Uint64(v uint64) { e.buf = AppendUint64(e.buf, v) }

// Int64 encodes a hyper.
func (e *Encoder) Int64(v int64) { e.buf = AppendInt64(e.buf, v) }

// Float32 encodes a single-precision float (IEEE 754, big-endian).
func (e *Encoder) Float32(v float32) { e.buf = AppendUint32(e.buf, math.Float32bits(v)) }

// Float64 encodes a double-precision float (IEEE 754, big-endian).
func (e *Encoder) Float64(v float64) { e.buf = AppendUint64(e.buf, math.Float64bits(v)) }

// Bool encodes a bool.
func (e *Encoder) Bool(v bool) { e.buf = AppendBool(e.buf, v) }

// Optional encodes the discriminant of optional-data (*T): whether an item follows.
func (e *Encoder) Optional(present bool) { e.buf = AppendBool(e.buf, present) }

// ArrayLen encodes the element count of a variable-length array.
func (e *Encoder) ArrayLen(n int) { e.buf = AppendUint32(e.buf, uint32(n)) }

// FixedOpaque encodes fixed-length opaque data and its pad.
func (e *Encoder) FixedOpaque(data []byte) { e.buf = AppendFixedOpaque(e.buf, data) }

// Opaque encodes variable-length opaque data inline.
func (e *Encoder) Opaque(data []byte) { e.buf = AppendOpaque(e.buf, data) }

// String encodes a string.
func (e *Encoder) String(s string) { e.buf = AppendString(e.buf, s) }

// Payload encodes a DDP-eligible variable-length opaque: the length word goes inline, the
// data is recorded as a Payload at the current position and not copied. The caller must
// keep data unchanged until the message has been sent.
func (e *Encoder) Payload(data []byte) {
	e.buf = AppendUint32(e.buf, uint32(len(data)))
	e.payloads = append(e.payloads, Payload{Pos: e.Pos(), Data: data})
	e.elided += RoundUp(len(data))
}

// Flatten returns the whole logical stream: inline bytes with every payload's data and
// pad put back at its position, appended to dst. Transports that carry the message as
// one byte stream use it, or the equivalent vectored write.
func Flatten(dst, inline []byte, payloads []Payload) []byte {
	elided, prev := 0, 0
	for _, p := range payloads {
		at := p.Pos - elided
		dst = append(dst, inline[prev:at]...)
		dst = AppendFixedOpaque(dst, p.Data)
		elided += RoundUp(len(p.Data))
		prev = at
	}
	return append(dst, inline[prev:]...)
}

// An EncoderTo is a type that encodes itself as XDR.
type EncoderTo interface {
	EncodeXDR(e *Encoder)
}

// A DecoderFrom is a type that decodes itself from XDR.
type DecoderFrom interface {
	DecodeXDR(d *Decoder) error
}
