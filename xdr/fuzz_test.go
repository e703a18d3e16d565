package xdr

import (
	"errors"
	"testing"
)

// FuzzDecoder drives the Decoder with an operation script (ops) over arbitrary data and
// checks that it never panics, never reads past the input, keeps XDR alignment, reports
// every failure as a *DecodeError, and that what it decodes re-encodes to the same size.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, goldenFileBytes())
	f.Add([]byte{3}, []byte{0, 0, 0, 0x10, 0, 0, 0, 0})          // opaque over limit
	f.Add([]byte{3}, []byte{0x7f, 0xff, 0xff, 0xff})             // opaque beyond buffer
	f.Add([]byte{2}, []byte{0, 0, 0, 2})                         // bad bool
	f.Add([]byte{6}, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) // array count vs remaining
	f.Add([]byte{7, 7}, []byte{0, 0, 0, 3, 'a', 'b', 'c', 0})    // payload, inline
	f.Add([]byte{1}, []byte{0, 0, 0})                            // short hyper
	f.Fuzz(func(t *testing.T, ops, data []byte) {
		d := NewDecoder(data)
		var e Encoder
		for _, op := range ops {
			var err error
			switch op % 9 {
			case 0:
				var v uint32
				v, err = d.Uint32()
				if err == nil {
					e.Uint32(v)
				}
			case 1:
				var v uint64
				v, err = d.Uint64()
				if err == nil {
					e.Uint64(v)
				}
			case 2:
				var v bool
				v, err = d.Bool()
				if err == nil {
					e.Bool(v)
				}
			case 3:
				var v []byte
				v, err = d.Opaque(1024)
				if err == nil {
					e.Opaque(v)
				}
			case 4:
				var v string
				v, err = d.String(255)
				if err == nil {
					e.String(v)
				}
			case 5:
				var v []byte
				v, err = d.FixedOpaque(int(op / 9))
				if err == nil {
					e.FixedOpaque(v)
				}
			case 6:
				var n int
				n, err = d.ArrayLen(-1, 4)
				if err == nil {
					if n*4 > d.Len() {
						t.Fatalf("ArrayLen %d accepted with %d bytes left", n, d.Len())
					}
					e.ArrayLen(n)
				}
			case 7:
				var v []byte
				v, err = d.Payload(1 << 16)
				if err == nil {
					e.Opaque(v)
				}
			case 8:
				var v bool
				v, err = d.Optional()
				if err == nil {
					e.Optional(v)
				}
			}
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("error %v is not a *DecodeError", err)
				}
				break
			}
		}
		if d.Offset() > len(data) || d.Offset()%4 != 0 {
			t.Fatalf("offset %d (input %d) out of bounds or unaligned", d.Offset(), len(data))
		}
		if e.Len() != d.Offset() {
			t.Fatalf("re-encoded %d bytes, decoded %d", e.Len(), d.Offset())
		}
	})
}

func goldenFileBytes() []byte {
	return []byte("\x00\x00\x00\x09sillyprog\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04lisp\x00\x00\x00\x04john\x00\x00\x00\x06(quit)\x00\x00")
}

// FuzzPaddedDecoder decodes opaques, strings and payloads under an RDMA_MSGP padding rule
// (align, thresh, base) from arbitrary data and checks that the decoder never panics or
// reads past the input, reports failures as *DecodeError without consuming the failed
// item, and returns the data of every item of at least thresh bytes on an align
// boundary of the receive buffer (seed §3.9).
func FuzzPaddedDecoder(f *testing.F) {
	f.Add(uint16(64), uint16(16), uint16(32), []byte{0, 3, 3, 7, 0}, paddedStream())
	f.Add(uint16(4096), uint16(0), uint16(28), []byte{3}, []byte{0, 0, 0, 1, 0, 0, 0, 0})
	f.Add(uint16(3), uint16(1), uint16(1), []byte{3, 4}, []byte{0, 0, 0, 2, 0, 0, 'h', 'i', 0, 0, 0, 0})
	f.Add(uint16(0), uint16(0), uint16(0), []byte{3}, []byte{0, 0, 0, 1, 'x', 0, 0, 0})
	f.Fuzz(func(t *testing.T, align, thresh, base uint16, ops, data []byte) {
		p := Padding{Align: uint32(align), Thresh: uint32(thresh), Base: int(base)}
		d := NewDecoder(data)
		d.SetPadding(p)
		for _, op := range ops {
			before := d.Offset()
			var v []byte
			var err error
			switch op % 4 {
			case 0:
				_, err = d.Uint32()
			case 1:
				v, err = d.Opaque(-1)
			case 2:
				v, err = d.StringBytes(1 << 12)
			case 3:
				v, err = d.Payload(-1)
			}
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) || d.Offset() != before {
					t.Fatalf("error %v (offset %d, was %d)", err, d.Offset(), before)
				}
				break
			}
			if d.Offset() > len(data) {
				t.Fatalf("offset %d past %d bytes", d.Offset(), len(data))
			}
			if op%4 != 0 && len(v) > 0 && align > 1 && len(v) >= int(thresh) {
				at := before + 4 + p.Before(uint32(len(v)), before+4)
				if &v[0] != &data[at] || (int(base)+at)%int(align) != 0 {
					t.Fatalf("%d-byte item not at an aligned offset (%d)", len(v), at)
				}
			}
		}
	})
}
