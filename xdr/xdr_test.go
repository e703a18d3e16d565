package xdr

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rfc4506File is the example of RFC 4506 §7: a file named "sillyprog", of kind EXEC
// (a discriminated union arm carrying the interpreter "lisp"), owned by "john", whose
// data is "(quit)".
const rfc4506File = `
00000009 7369 6c6c 7970 726f 6700 0000 -- filename<>: length 9, "sillyprog", 3 bytes of fill
00000002                               -- filekind EXEC = 2 (union discriminant)
00000004 6c69 7370                     -- interpretor<>: length 4, "lisp"
00000004 6a6f 686e                     -- owner<>: length 4, "john"
00000006 2871 7569 7429 0000           -- data<>: length 6, "(quit)", 2 bytes of fill
`

func goldenFile(t *testing.T) []byte {
	var lines []string
	for _, l := range strings.Split(rfc4506File, "\n") {
		if i := strings.Index(l, "--"); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	return unhex(t, strings.Join(lines, " "))
}

func TestRFC4506FileExample(t *testing.T) {
	want := goldenFile(t)
	var e Encoder
	e.String("sillyprog")
	e.Enum(2)
	e.String("lisp")
	e.String("john")
	e.Opaque([]byte("(quit)"))
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("encoded\n%x\nwant\n%x", e.Bytes(), want)
	}

	d := NewDecoder(want)
	name, err := d.String(255)
	if err != nil || name != "sillyprog" {
		t.Fatalf("filename = %q, %v", name, err)
	}
	kind, err := d.Enum()
	if err != nil || kind != 2 {
		t.Fatalf("kind = %d, %v", kind, err)
	}
	interp, _ := d.String(255)
	owner, _ := d.String(16)
	data, err := d.Opaque(65535)
	if err != nil || interp != "lisp" || owner != "john" || string(data) != "(quit)" {
		t.Fatalf("got %q %q %q %v", interp, owner, data, err)
	}
	if d.Len() != 0 || d.Pos() != 48 {
		t.Fatalf("left %d bytes, pos %d", d.Len(), d.Pos())
	}
}

func TestPrimitiveVectors(t *testing.T) {
	var e Encoder
	e.Int32(-1)                  // ffffffff: two's complement
	e.Uint32(0x01020304)         // 01020304: big-endian
	e.Int64(-2)                  // fffffffffffffffe
	e.Uint64(0x0102030405060708) // 0102030405060708
	e.Bool(true)                 // 00000001
	e.Bool(false)                // 00000000
	e.Float32(1)                 // 3f800000: IEEE 754 single 1.0
	e.Float64(-2)                // c000000000000000: IEEE 754 double -2.0
	e.FixedOpaque([]byte{0xaa})  // aa000000: 1 byte + 3 fill
	e.Optional(true)             // 00000001: optional-data present
	e.ArrayLen(3)                // 00000003
	want := unhex(t, `ffffffff 01020304 fffffffffffffffe 0102030405060708 00000001 00000000
		3f800000 c000000000000000 aa000000 00000001 00000003`)
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("got  %x\nwant %x", e.Bytes(), want)
	}
	d := NewDecoder(want)
	i32, _ := d.Int32()
	u32, _ := d.Uint32()
	i64, _ := d.Int64()
	u64, _ := d.Uint64()
	b1, _ := d.Bool()
	b2, _ := d.Bool()
	f32, _ := d.Float32()
	f64, _ := d.Float64()
	fo, _ := d.FixedOpaque(1)
	opt, _ := d.Optional()
	n, err := d.ArrayLen(10, 0)
	if i32 != -1 || u32 != 0x01020304 || i64 != -2 || u64 != 0x0102030405060708 || !b1 || b2 ||
		f32 != 1 || f64 != -2 || !bytes.Equal(fo, []byte{0xaa}) || !opt || n != 3 || err != nil {
		t.Fatalf("decoded %v %v %v %v %v %v %v %v %x %v %v %v", i32, u32, i64, u64, b1, b2, f32, f64, fo, opt, n, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		op    func(d *Decoder) error
		cause error
		msg   string
	}{
		{"short uint", "000000", func(d *Decoder) error { _, err := d.Uint32(); return err }, ErrShort, "unsigned int at offset 0: needs 4 bytes, 3 remain"},
		{"short hyper", "00000000", func(d *Decoder) error { _, err := d.Uint64(); return err }, ErrShort, "unsigned hyper at offset 0"},
		{"bool 2", "00000002", func(d *Decoder) error { _, err := d.Bool(); return err }, ErrBadBool, "bool at offset 0: value 2"},
		{"optional 7", "00000007", func(d *Decoder) error { _, err := d.Optional(); return err }, ErrBadBool, "optional-data at offset 0"},
		{"opaque over limit", "00000010 00000000", func(d *Decoder) error { _, err := d.Opaque(8); return err }, ErrTooLong, "opaque<> at offset 0: length 16 exceeds limit 8"},
		{"opaque beyond buffer", "7fffffff 00000000", func(d *Decoder) error { _, err := d.Opaque(-1); return err }, ErrShort, "needs 2147483648 bytes, 4 remain"},
		{"opaque pad missing", "00000005 01020304 05", func(d *Decoder) error { _, err := d.Opaque(-1); return err }, ErrShort, "needs 8 bytes, 5 remain"},
		{"string over limit", "00000100", func(d *Decoder) error { _, err := d.String(255); return err }, ErrTooLong, "string at offset 0: length 256 exceeds limit 255"},
		{"array count vs remaining", "ffffffff 00000000", func(d *Decoder) error { _, err := d.ArrayLen(-1, 4); return err }, ErrShort, "array<> at offset 0"},
		{"array over limit", "00000011", func(d *Decoder) error { _, err := d.ArrayLen(16, 0); return err }, ErrTooLong, "length 17 exceeds limit 16"},
		{"fixed opaque short", "0102", func(d *Decoder) error { _, err := d.FixedOpaque(3); return err }, ErrShort, "opaque[] at offset 0"},
		{"error names offset", "00000001 00000009", func(d *Decoder) error { d.Uint32(); _, err := d.Bool(); return err }, ErrBadBool, "bool at offset 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := unhex(t, tc.in)
			d := NewDecoder(in)
			err := tc.op(d)
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.cause) {
				t.Fatalf("err = %v, want *DecodeError wrapping %v", err, tc.cause)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %q, want it to contain %q", err, tc.msg)
			}
			if d.Offset() > len(in) {
				t.Fatalf("offset %d beyond input %d", d.Offset(), len(in))
			}
		})
	}
}

func TestFailedItemIsNotConsumed(t *testing.T) {
	d := NewDecoder(unhex(t, "00000009"))
	if _, err := d.Opaque(4); err == nil {
		t.Fatal("want error")
	}
	if v, err := d.Uint32(); err != nil || v != 9 {
		t.Fatalf("after failed opaque, Uint32 = %d, %v", v, err)
	}
}

func TestPayloadPositionsAndFlatten(t *testing.T) {
	data1 := []byte("hello")    // 5 bytes, 3 pad
	data2 := []byte("12345678") // 8 bytes, no pad
	var e Encoder
	e.Uint32(7)
	e.Payload(data1)
	e.Uint32(8)
	e.Payload(data2)
	e.String("t")

	// Logical stream: 7 | len 5 | hello+3 | 8 | len 8 | 12345678 | len 1 | t+3
	// positions:      0   4      8          16  20      24         32      36
	p := e.Payloads()
	if len(p) != 2 || p[0].Pos != 8 || p[1].Pos != 24 || p[0].End() != 16 || p[1].End() != 32 {
		t.Fatalf("payloads %+v", p)
	}
	if e.Len() != 24 || e.Pos() != 40 {
		t.Fatalf("inline %d pos %d", e.Len(), e.Pos())
	}

	var plain Encoder
	plain.Uint32(7)
	plain.Opaque(data1)
	plain.Uint32(8)
	plain.Opaque(data2)
	plain.String("t")
	flat := Flatten(nil, e.Bytes(), e.Payloads())
	if !bytes.Equal(flat, plain.Bytes()) {
		t.Fatalf("flatten\n%x\nwant\n%x", flat, plain.Bytes())
	}

	// Decoding the inline stream with the items placed out of line.
	d := NewDecoder(e.Bytes())
	d.SetPlaced([][]byte{data1, append(data2[:8:8], 0, 0, 0, 0)[:8]})
	d.Uint32()
	got1, err := d.Payload(100)
	if err != nil || string(got1) != "hello" || d.Pos() != 16 {
		t.Fatalf("payload 1 %q %v pos %d", got1, err, d.Pos())
	}
	d.Uint32()
	got2, err := d.Payload(100)
	if err != nil || string(got2) != "12345678" {
		t.Fatalf("payload 2 %q %v", got2, err)
	}
	s, err := d.String(10)
	if err != nil || s != "t" || d.Len() != 0 || d.Pos() != 40 {
		t.Fatalf("tail %q %v len %d pos %d", s, err, d.Len(), d.Pos())
	}

	// The same decoder code over the flat stream, with nothing placed.
	d.Reset(flat)
	d.Uint32()
	got1, _ = d.Payload(100)
	d.Uint32()
	got2, _ = d.Payload(100)
	if string(got1) != "hello" || string(got2) != "12345678" || d.Pos() != 32 {
		t.Fatalf("flat payloads %q %q pos %d", got1, got2, d.Pos())
	}
}

func TestPayloadPlacedVariants(t *testing.T) {
	var e Encoder
	e.Payload([]byte("abcde"))
	inline := e.Bytes()

	// Write chunk length rounded up to include the pad (seed §3.7): 8 bytes for 5.
	d := NewDecoder(inline)
	d.SetPlaced([][]byte{[]byte("abcde\x00\x00\x00")})
	if b, err := d.Payload(-1); err != nil || string(b) != "abcde" {
		t.Fatalf("rounded-up placement: %q %v", b, err)
	}

	// Placed length disagrees with the XDR length.
	d = NewDecoder(inline)
	d.SetPlaced([][]byte{[]byte("abc")})
	if _, err := d.Payload(-1); !errors.Is(err, ErrPlacedLength) || !strings.Contains(err.Error(), "XDR length 5, placed 3") {
		t.Fatalf("mismatch err = %v", err)
	}

	// Zero bytes placed: the peer sent the item inline after all.
	var f Encoder
	f.Opaque([]byte("xyz"))
	d = NewDecoder(f.Bytes())
	d.SetPlaced([][]byte{{}})
	if b, err := d.Payload(-1); err != nil || string(b) != "xyz" {
		t.Fatalf("inline fallback %q %v", b, err)
	}
}

func TestTruncate(t *testing.T) {
	var e Encoder
	e.Uint32(1)
	mark := e.Pos()
	e.Payload([]byte("abcdef"))
	e.Uint32(2)
	e.Truncate(mark)
	if e.Pos() != 4 || len(e.Payloads()) != 0 || e.Len() != 4 {
		t.Fatalf("after truncate pos %d payloads %d len %d", e.Pos(), len(e.Payloads()), e.Len())
	}
	e.Uint32(3)
	if !bytes.Equal(e.Bytes(), unhex(t, "00000001 00000003")) {
		t.Fatalf("got %x", e.Bytes())
	}
}

func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 2000; iter++ {
		type item struct {
			kind int
			u    uint64
			b    []byte
		}
		var items []item
		var e Encoder
		for n := rng.Intn(12); n > 0; n-- {
			it := item{kind: rng.Intn(6), u: rng.Uint64()}
			if it.kind >= 3 {
				it.b = make([]byte, rng.Intn(40))
				rng.Read(it.b)
			}
			switch it.kind {
			case 0:
				e.Uint32(uint32(it.u))
			case 1:
				e.Uint64(it.u)
			case 2:
				e.Bool(it.u&1 == 1)
			case 3:
				e.Opaque(it.b)
			case 4:
				e.String(string(it.b))
			case 5:
				e.Payload(it.b)
			}
			items = append(items, it)
		}
		if e.Pos()%4 != 0 {
			t.Fatalf("position %d not aligned", e.Pos())
		}
		flat := Flatten(nil, e.Bytes(), e.Payloads())
		if len(flat) != e.Pos() {
			t.Fatalf("flat length %d != pos %d", len(flat), e.Pos())
		}
		d := NewDecoder(flat)
		for i, it := range items {
			var ok bool
			switch it.kind {
			case 0:
				v, err := d.Uint32()
				ok = err == nil && v == uint32(it.u)
			case 1:
				v, err := d.Uint64()
				ok = err == nil && v == it.u
			case 2:
				v, err := d.Bool()
				ok = err == nil && v == (it.u&1 == 1)
			case 3:
				v, err := d.Opaque(-1)
				ok = err == nil && bytes.Equal(v, it.b)
			case 4:
				v, err := d.String(-1)
				ok = err == nil && v == string(it.b)
			case 5:
				v, err := d.Payload(-1)
				ok = err == nil && bytes.Equal(v, it.b)
			}
			if !ok {
				t.Fatalf("iteration %d item %d (kind %d) did not round-trip", iter, i, it.kind)
			}
		}
		if d.Len() != 0 {
			t.Fatalf("%d bytes left over", d.Len())
		}
	}
}

func TestPadHelpers(t *testing.T) {
	for n, want := range []int{0, 3, 2, 1, 0, 3} {
		if PadLen(n) != want || RoundUp(n) != n+want || OpaqueSize(n) != 4+n+want {
			t.Fatalf("n=%d: PadLen %d RoundUp %d OpaqueSize %d", n, PadLen(n), RoundUp(n), OpaqueSize(n))
		}
	}
}

var sink []byte

func BenchmarkEncodeCallLike(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	payload := make([]byte, 4096)
	var e Encoder
	for i := 0; i < b.N; i++ {
		e.Reset(buf[:0])
		e.Uint32(uint32(i))
		e.Uint32(0)
		e.Uint32(2)
		e.Uint32(100003)
		e.Uint32(3)
		e.Uint32(7)
		e.Opaque(payload[:32])
		e.Uint64(1 << 20)
		e.Uint32(4096)
		e.Payload(payload)
		sink = e.Bytes()
	}
}

func BenchmarkDecodeCallLike(b *testing.B) {
	b.ReportAllocs()
	var e Encoder
	e.Uint32(1)
	e.Uint32(0)
	e.Uint32(2)
	e.Uint32(100003)
	e.Uint32(3)
	e.Uint32(7)
	e.Opaque(make([]byte, 32))
	e.Uint64(1 << 20)
	e.Uint32(4096)
	e.Opaque(make([]byte, 4096))
	msg := e.Bytes()
	var d Decoder
	for i := 0; i < b.N; i++ {
		d.Reset(msg)
		for j := 0; j < 6; j++ {
			d.Uint32()
		}
		d.Opaque(64)
		d.Uint64()
		d.Uint32()
		p, err := d.Payload(1 << 20)
		if err != nil || len(p) != 4096 {
			b.Fatal(err)
		}
	}
}
