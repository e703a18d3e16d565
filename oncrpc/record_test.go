package oncrpc

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// writeRecord builds the bytes of m as recordVecs would write them.
func writeRecord(m *Message, maxFrag int) []byte {
	v := recordVecs{maxFrag: maxFrag}
	v.build(m)
	var out []byte
	for _, b := range v.iov {
		out = append(out, b...)
	}
	return out
}

func TestRecordGolden(t *testing.T) {
	m := Message{Inline: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	// One fragment: last bit | length 8.
	if got, want := writeRecord(&m, 0), unhex(t, `80000008 01020304 05060708`); !bytes.Equal(got, want) {
		t.Fatalf("one fragment: %x, want %x", got, want)
	}
	// Fragments of at most 3 bytes: 3, 3, then the last 2.
	if got, want := writeRecord(&m, 3), unhex(t, `00000003 010203 00000003 040506 80000002 0708`); !bytes.Equal(got, want) {
		t.Fatalf("three fragments: %x, want %x", got, want)
	}
	// Empty message: one empty last fragment.
	if got, want := writeRecord(&Message{}, 0), unhex(t, `80000000`); !bytes.Equal(got, want) {
		t.Fatalf("empty: %x, want %x", got, want)
	}
}

// A payload is sent in place: inline[:p] + data + pad + inline[p:].
func TestRecordPayloadInPlace(t *testing.T) {
	var e xdr.Encoder
	e.Uint32(0xa1a2a3a4)
	e.Payload([]byte{0xd1, 0xd2, 0xd3, 0xd4, 0xd5})
	e.Uint32(0xb1b2b3b4)
	m := Message{Inline: e.Bytes(), Payloads: e.Payloads()}
	want := unhex(t, `8000001c a1a2a3a4 00000005 d1d2d3d4 d5000000 b1b2b3b4`)
	want[3] = byte(len(want) - 4)
	for _, frag := range []int{0, 1, 2, 3, 4, 5, 7, 100} {
		got := writeRecord(&m, frag)
		rr := NewRecordReader(bytes.NewReader(got), 0)
		rec, err := rr.ReadRecord(nil)
		if err != nil || !bytes.Equal(rec, xdr.Flatten(nil, m.Inline, m.Payloads)) {
			t.Fatalf("maxFrag %d: %x, %v", frag, rec, err)
		}
		if frag == 0 && !bytes.Equal(got, want) {
			t.Fatalf("wire %x, want %x", got, want)
		}
	}
	// The payload's bytes are referenced, not copied.
	v := recordVecs{}
	v.build(&m)
	found := false
	for _, b := range v.iov {
		if len(b) > 0 && &b[0] == &m.Payloads[0].Data[0] {
			found = true
		}
	}
	if !found {
		t.Fatal("payload data was copied")
	}
}

func TestRecordReaderMultiFragmentAndSequence(t *testing.T) {
	var stream []byte
	var msgs [][]byte
	for i, n := range []int{4, 100, 0, 70000, 8} {
		b := bytes.Repeat([]byte{byte(i + 1)}, n)
		msgs = append(msgs, b)
		stream = append(stream, writeRecord(&Message{Inline: b}, 1+i*997)...)
	}
	// Zero-length non-last fragments are legal.
	stream = append(stream, unhex(t, `00000000 00000000 80000004 01020304`)...)
	msgs = append(msgs, []byte{1, 2, 3, 4})
	rr := NewRecordReader(bufio.NewReader(bytes.NewReader(stream)), 0)
	var buf []byte
	for i, want := range msgs {
		var err error
		buf, err = rr.ReadRecord(buf[:0])
		if err != nil || !bytes.Equal(buf, want) {
			t.Fatalf("record %d: %d bytes, %v", i, len(buf), err)
		}
	}
	if _, err := rr.ReadRecord(buf[:0]); err != io.EOF {
		t.Fatalf("after the last record: %v, want io.EOF", err)
	}
}

func TestRecordReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		max       int
		check     func(error) bool
	}{
		{"oversized single fragment", `ffffffff 00`, 1024, func(err error) bool {
			var e *RecordTooLargeError
			return errors.As(err, &e) && e.Claimed == 0x7fffffff && e.Limit == 1024 &&
				!strings.Contains(err.Error(), "fragment header")
		}},
		// An iWARP peer's MPA frame ("MPA ID Rep Frame"): the error names the text.
		{"another protocol", hex.EncodeToString([]byte("MPA ID Rep Frame")), 0, func(err error) bool {
			var e *RecordTooLargeError
			return errors.As(err, &e) && e.Header == [4]byte{'M', 'P', 'A', ' '} &&
				strings.HasSuffix(err.Error(), `(fragment header "MPA ": is the peer speaking ONC RPC?)`)
		}},
		{"oversized over fragments", `00000200` + string(bytes.Repeat([]byte("00"), 0x200)) + `80000201`, 1024, func(err error) bool {
			var e *RecordTooLargeError
			return errors.As(err, &e) && e.Claimed == 0x401
		}},
		{"truncated header", `8000`, 0, func(err error) bool { return errors.Is(err, ErrRecordTruncated) }},
		{"truncated fragment", `80000010 01020304`, 0, func(err error) bool { return errors.Is(err, ErrRecordTruncated) }},
		{"truncated between fragments", `00000004 01020304`, 0, func(err error) bool { return errors.Is(err, ErrRecordTruncated) }},
		{"claims much, sends little", `80100000 01020304`, 0, func(err error) bool { return errors.Is(err, ErrRecordTruncated) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := NewRecordReader(bytes.NewReader(unhex(t, tc.hex)), tc.max)
			buf, err := rr.ReadRecord(nil)
			if !tc.check(err) {
				t.Fatalf("err = %v", err)
			}
			if cap(buf) > readStep {
				t.Fatalf("buffer grew to %d bytes for a record that never arrived", cap(buf))
			}
		})
	}
}

// Reading a record over a real connection: the vectored write arrives whole.
func TestRecordOverPipe(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	data := bytes.Repeat([]byte{7}, 1001)
	var e xdr.Encoder
	e.Uint32(1)
	e.Payload(data)
	e.Uint32(2)
	m := Message{Inline: e.Bytes(), Payloads: e.Payloads()}
	go func() {
		v := recordVecs{maxFrag: 256}
		v.build(&m)
		nb := net.Buffers(v.iov)
		nb.WriteTo(a)
	}()
	rec, err := NewRecordReader(b, 0).ReadRecord(nil)
	if err != nil || !bytes.Equal(rec, xdr.Flatten(nil, m.Inline, m.Payloads)) {
		t.Fatalf("%d bytes, %v", len(rec), err)
	}
}
