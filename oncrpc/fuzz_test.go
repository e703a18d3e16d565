package oncrpc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The seed corpora in testdata/fuzz/FuzzXxx hold one input per validation rule; the
// f.Add seeds below are the valid messages.

// FuzzCallHeader checks that decoding never panics, that every failure is a
// *HeaderError naming a field, and that a decoded header re-encodes to exactly the
// bytes it was decoded from.
func FuzzCallHeader(f *testing.F) {
	for _, tc := range callGolden {
		f.Add(unhex(f, tc.hex))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var h CallHeader
		d := xdr.NewDecoder(in)
		err := h.DecodeXDR(d)
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) || he.Field == "" || he.Msg != "call" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if len(h.Cred.Body) > MaxAuthBytes || len(h.Verf.Body) > MaxAuthBytes {
			t.Fatalf("auth body over limit decoded")
		}
		if got := h.Append(nil); !bytes.Equal(got, in[:d.Offset()]) {
			t.Fatalf("re-encoded %x, decoded from %x", got, in[:d.Offset()])
		}
	})
}

// FuzzReplyHeader: as FuzzCallHeader, for replies, and Err agrees with the status.
func FuzzReplyHeader(f *testing.F) {
	for _, tc := range replyGolden {
		f.Add(unhex(f, tc.hex))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var h ReplyHeader
		d := xdr.NewDecoder(in)
		if err := h.DecodeXDR(d); err != nil {
			var he *HeaderError
			if !errors.As(err, &he) || he.Field == "" || he.Msg != "reply" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if got := h.Append(nil); !bytes.Equal(got, in[:d.Offset()]) {
			t.Fatalf("re-encoded %x, decoded from %x", got, in[:d.Offset()])
		}
		if (h.Err() == nil) != (h.Stat == MsgAccepted && h.AcceptStat == Success) {
			t.Fatalf("Err() = %v for %+v", h.Err(), h)
		}
	})
}

// FuzzAuthSys checks the AUTH_SYS body decoder: limits hold on success, and a decoded
// body re-encodes to the same bytes.
func FuzzAuthSys(f *testing.F) {
	f.Add(sysParams.Append(nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		var p AuthSysParams
		if err := DecodeAuthSysBody(&p, body); err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("decoded credential breaks limits: %v", err)
		}
		if got := p.Append(nil); !bytes.Equal(got, body) {
			t.Fatalf("re-encoded %x, decoded from %x", got, body)
		}
	})
}

// FuzzRecordMarking reads records from an arbitrary stream with a small limit: it
// must never panic, return a record over the limit, or grow its buffer far beyond the
// bytes received; each record read must survive a write/read round trip with small
// fragments.
func FuzzRecordMarking(f *testing.F) {
	f.Add(writeRecord(&Message{Inline: []byte("hello, world")}, 5), uint16(3))
	const limit = 4096
	f.Fuzz(func(t *testing.T, stream []byte, frag uint16) {
		rr := NewRecordReader(bufio.NewReader(bytes.NewReader(stream)), limit)
		var buf []byte
		for {
			var err error
			buf, err = rr.ReadRecord(buf[:0])
			if cap(buf) > max(2*len(stream), readStep) {
				t.Fatalf("buffer of %d bytes for a %d-byte stream", cap(buf), len(stream))
			}
			if err != nil {
				var tl *RecordTooLargeError
				if err != io.EOF && !errors.Is(err, ErrRecordTruncated) && !errors.As(err, &tl) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(buf) > limit {
				t.Fatalf("record of %d bytes over limit", len(buf))
			}
			m := Message{Inline: buf}
			rec, err := NewRecordReader(bytes.NewReader(writeRecord(&m, int(frag))), limit).ReadRecord(nil)
			if err != nil || !bytes.Equal(rec, buf) {
				t.Fatalf("round trip with fragments of %d: %v", frag, err)
			}
		}
	})
}
