package xdr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Sentinel causes carried by a *DecodeError; test with errors.Is.
var (
	// ErrShort means the stream ended inside an item.
	ErrShort = errors.New("stream truncated")
	// ErrTooLong means a claimed length or count exceeds the caller's limit.
	ErrTooLong = errors.New("length exceeds limit")
	// ErrBadBool means a bool or optional-data discriminant was neither 0 nor 1.
	ErrBadBool = errors.New("bool is neither 0 nor 1")
	// ErrPlacedLength means a placed payload disagrees with the length in the stream.
	ErrPlacedLength = errors.New("placed payload length differs from XDR length")
)

// A DecodeError reports a malformed item: what was being decoded, where it began, and why.
type DecodeError struct {
	What string // XDR type being decoded, e.g. "opaque<>" or "bool"
	Pos  int    // logical XDR position where the item began
	Err  error  // ErrShort, ErrTooLong, ErrBadBool, ErrPlacedLength, or a detail error
	// Claimed and Limit carry the offending length or value and the bound it broke,
	// when they apply.
	Claimed, Limit uint64
}

func (e *DecodeError) Error() string {
	switch e.Err {
	case ErrTooLong:
		return fmt.Sprintf("xdr: %s at offset %d: length %d exceeds limit %d", e.What, e.Pos, e.Claimed, e.Limit)
	case ErrShort:
		if e.Claimed != 0 {
			return fmt.Sprintf("xdr: %s at offset %d: needs %d bytes, %d remain", e.What, e.Pos, e.Claimed, e.Limit)
		}
	case ErrBadBool:
		return fmt.Sprintf("xdr: %s at offset %d: value %d is neither 0 nor 1", e.What, e.Pos, e.Claimed)
	case ErrPlacedLength:
		return fmt.Sprintf("xdr: %s at offset %d: XDR length %d, placed %d bytes", e.What, e.Pos, e.Claimed, e.Limit)
	}
	return fmt.Sprintf("xdr: %s at offset %d: %v", e.What, e.Pos, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// A Decoder reads XDR items from a byte slice. Opaque data and strings returned as []byte
// alias the slice. The zero Decoder reads an empty stream; Reset points it at another.
type Decoder struct {
	buf    []byte
	off    int
	elided int      // payload bytes (with pad) placed out of line so far
	placed [][]byte // items placed out of line, consumed by Payload in order
	pad    Padding  // RDMA_MSGP padding to skip (see SetPadding)
}

// NewDecoder returns a Decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Reset makes d read b from its start, with nothing placed and no padding.
func (d *Decoder) Reset(b []byte) {
	d.buf, d.off, d.elided, d.placed, d.pad = b, 0, 0, nil, Padding{}
}

// SetPlaced gives the decoder the DDP-eligible items a transport placed out of line, in
// stream order (for RPC-over-RDMA, the write chunks of a reply). Payload consumes them.
func (d *Decoder) SetPlaced(items [][]byte) { d.placed = items }

// Pos returns the logical XDR position of the next item.
func (d *Decoder) Pos() int { return d.off + d.elided }

// Offset returns the number of inline bytes consumed.
func (d *Decoder) Offset() int { return d.off }

// Len returns the number of inline bytes not yet consumed.
func (d *Decoder) Len() int { return len(d.buf) - d.off }

// Rest returns the inline bytes not yet consumed, without consuming them.
func (d *Decoder) Rest() []byte { return d.buf[d.off:] }

func (d *Decoder) short(what string, need int) error {
	return &DecodeError{What: what, Pos: d.Pos(), Err: ErrShort, Claimed: uint64(need), Limit: uint64(d.Len())}
}

func (d *Decoder) word(what string) (uint32, error) {
	if d.Len() < 4 {
		return 0, d.short(what, 4)
	}
	v := binary.BigEndian.Uint32(d.buf[d.off:])
	d.off += 4
	return v, nil
}

// Uint32 decodes an unsigned int.
func (d *Decoder) Uint32() (uint32, error) { return d.word("unsigned int") }

// Int32 decodes an int.
func (d *Decoder) Int32() (int32, error) {
	v, err := d.word("int")
	return int32(v), err
}

// Enum decodes an enum value. Checking it against the enum's declared values is the
// caller's job, since only the caller knows them.
func (d *Decoder) Enum() (int32, error) {
	v, err := d.word("enum")
	return int32(v), err
}

// Uint64 decodes an unsigned hyper.
func (d *Decoder) Uint64() (uint64, error) {
	if d.Len() < 8 {
		return 0, d.short("unsigned hyper", 8)
	}
	v := binary.BigEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return v, nil
}

// Int64 decodes a hyper.
func (d *Decoder) Int64() (int64, error) {
	if d.Len() < 8 {
		return 0, d.short("hyper", 8)
	}
	v := binary.BigEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return int64(v), nil
}

// Float32 decodes a single-precision float.
func (d *Decoder) Float32() (float32, error) {
	v, err := d.word("float")
	return math.Float32frombits(v), err
}

// Float64 decodes a double-precision float.
func (d *Decoder) Float64() (float64, error) {
	if d.Len() < 8 {
		return 0, d.short("double", 8)
	}
	v := binary.BigEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return math.Float64frombits(v), nil
}

func (d *Decoder) boolean(what string) (bool, error) {
	pos := d.Pos()
	v, err := d.word(what)
	if err != nil {
		return false, err
	}
	switch v {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	d.off -= 4
	return false, &DecodeError{What: what, Pos: pos, Err: ErrBadBool, Claimed: uint64(v)}
}

// Bool decodes a bool; any value other than 0 or 1 is an error.
func (d *Decoder) Bool() (bool, error) { return d.boolean("bool") }

// Optional decodes the discriminant of optional-data (*T): whether an item follows.
func (d *Decoder) Optional() (bool, error) { return d.boolean("optional-data") }

// FixedOpaque decodes n bytes of fixed-length opaque data and skips its pad. The result
// aliases the decoder's buffer.
func (d *Decoder) FixedOpaque(n int) ([]byte, error) {
	need := RoundUp(n)
	if n < 0 || d.Len() < need {
		return nil, d.short("opaque[]", need)
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += need
	return b, nil
}

func (d *Decoder) counted(what string, max int) ([]byte, error) {
	pos := d.Pos()
	n, err := d.word(what)
	if err != nil {
		return nil, err
	}
	if max >= 0 && uint64(n) > uint64(max) {
		d.off -= 4
		return nil, &DecodeError{What: what, Pos: pos, Err: ErrTooLong, Claimed: uint64(n), Limit: uint64(max)}
	}
	skip := 0 // RDMA_MSGP padding before the data
	if d.pad.Align > 1 {
		skip = d.pad.Before(n, d.off)
	}
	need := (uint64(n)+3)&^3 + uint64(skip)
	if left := uint64(d.Len()); need > left {
		d.off -= 4
		return nil, &DecodeError{What: what, Pos: pos, Err: ErrShort, Claimed: need, Limit: left}
	}
	start := d.off + skip
	b := d.buf[start : start+int(n) : start+int(n)]
	d.off += int(need)
	return b, nil
}

// Opaque decodes variable-length opaque data of at most max bytes (max < 0: no limit
// beyond the buffer). The result aliases the decoder's buffer.
func (d *Decoder) Opaque(max int) ([]byte, error) { return d.counted("opaque<>", max) }

// StringBytes decodes a string of at most max bytes without copying it.
func (d *Decoder) StringBytes(max int) ([]byte, error) { return d.counted("string", max) }

// String decodes a string of at most max bytes.
func (d *Decoder) String(max int) (string, error) {
	b, err := d.counted("string", max)
	return string(b), err
}

// ArrayLen decodes the element count of a variable-length array and checks it against
// max and against the bytes that remain, given that each element takes at least
// minElemSize bytes (use 4 for any XDR type). It never trusts a count it cannot back.
func (d *Decoder) ArrayLen(max, minElemSize int) (int, error) {
	if minElemSize < 0 {
		minElemSize = 0
	}
	pos := d.Pos()
	n, err := d.word("array<>")
	if err != nil {
		return 0, err
	}
	if max >= 0 && uint64(n) > uint64(max) {
		d.off -= 4
		return 0, &DecodeError{What: "array<>", Pos: pos, Err: ErrTooLong, Claimed: uint64(n), Limit: uint64(max)}
	}
	if need, left := uint64(n)*uint64(minElemSize), uint64(d.Len()); need > left {
		d.off -= 4
		return 0, &DecodeError{What: "array<>", Pos: pos, Err: ErrShort, Claimed: need, Limit: left}
	}
	return int(n), nil
}

// Skip consumes n inline bytes.
func (d *Decoder) Skip(n int) error {
	if n < 0 || d.Len() < n {
		return d.short("skipped bytes", n)
	}
	d.off += n
	return nil
}

// Payload decodes a DDP-eligible variable-length opaque of at most max bytes. If a
// transport placed the item out of line (see SetPlaced), the length word is read inline
// and the placed bytes are returned; a placed item of length zero means the peer sent
// the item inline after all. Otherwise it behaves like Opaque.
func (d *Decoder) Payload(max int) ([]byte, error) {
	if len(d.placed) == 0 {
		return d.counted("opaque<> payload", max)
	}
	p := d.placed[0]
	pos := d.Pos()
	n, err := d.word("opaque<> payload")
	if err != nil {
		return nil, err
	}
	if max >= 0 && uint64(n) > uint64(max) {
		d.off -= 4
		return nil, &DecodeError{What: "opaque<> payload", Pos: pos, Err: ErrTooLong, Claimed: uint64(n), Limit: uint64(max)}
	}
	if len(p) == 0 && n != 0 {
		// Nothing placed: the data is inline behind its length word.
		d.off -= 4
		b, err := d.counted("opaque<> payload", max)
		if err == nil {
			d.placed = d.placed[1:]
		}
		return b, err
	}
	// The reply may round a write chunk's length up to include the pad (seed §3.7).
	if uint64(len(p)) != uint64(n) && uint64(len(p)) != uint64(RoundUp(int(n))) {
		d.off -= 4
		return nil, &DecodeError{What: "opaque<> payload", Pos: pos, Err: ErrPlacedLength, Claimed: uint64(n), Limit: uint64(len(p))}
	}
	d.placed = d.placed[1:]
	d.elided += RoundUp(int(n))
	return p[:n:n], nil
}
