package oncrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The seed corpora in testdata/fuzz/FuzzXxx hold one input per validation rule; the
// f.Add seeds below are the valid messages.

// FuzzCallHeader checks that decoding never panics, that every failure is a
// *HeaderError naming a field, and that a decoded header re-encodes to as many bytes
// as it was decoded from (pad bytes aside, the same ones) and round-trips.
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
		// Pad bytes need not be zero on input, so compare what re-encoding yields.
		enc := h.Append(nil)
		if len(enc) != d.Offset() {
			t.Fatalf("re-encoded %d bytes, decoded %d", len(enc), d.Offset())
		}
		var h2 CallHeader
		if err := h2.DecodeXDR(xdr.NewDecoder(enc)); err != nil || !bytes.Equal(h2.Append(nil), enc) {
			t.Fatalf("re-encoded header does not round-trip: %v", err)
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
		enc := h.Append(nil)
		if len(enc) != d.Offset() {
			t.Fatalf("re-encoded %d bytes, decoded %d", len(enc), d.Offset())
		}
		var h2 ReplyHeader
		if err := h2.DecodeXDR(xdr.NewDecoder(enc)); err != nil || !bytes.Equal(h2.Append(nil), enc) {
			t.Fatalf("re-encoded header does not round-trip: %v", err)
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
		enc := p.Append(nil)
		if len(enc) != len(body) {
			t.Fatalf("re-encoded %d bytes, decoded %d", len(enc), len(body))
		}
		var q AuthSysParams
		if err := DecodeAuthSysBody(&q, enc); err != nil || !bytes.Equal(q.Append(nil), enc) {
			t.Fatalf("re-encoded body does not round-trip: %v", err)
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

// captureConn is a ServerConn that records the reply to one call.
type captureConn struct {
	replied bool
	reply   []byte
}

func (c *captureConn) ReadCall(ctx context.Context) (*ServerCall, error) { return nil, io.EOF }
func (c *captureConn) WriteReply(call *ServerCall, reply *Message) error {
	if reply != nil {
		c.replied = true
		c.reply = xdr.Flatten(nil, reply.Inline, reply.Payloads)
	}
	return nil
}
func (c *captureConn) Close() error         { return nil }
func (c *captureConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// FuzzServerCall feeds arbitrary call messages to the Server's dispatch: it must never
// panic, and every reply must be a well-formed REPLY to the call's XID. Well-formed
// calls must be answered.
func FuzzServerCall(f *testing.F) {
	for _, tc := range callGolden {
		f.Add(unhex(f, tc.hex))
	}
	echo := (&CallHeader{XID: 5, Prog: testProg, Vers: testVers, Proc: procEcho}).Append(nil)
	f.Add(xdr.AppendOpaque(echo, []byte("echo me")))
	s := NewServer(nil)
	s.Register(testProg, testVers, echoHandler())
	s.RegisterRange(100003, 2, 3, echoHandler())
	f.Fuzz(func(t *testing.T, in []byte) {
		var c captureConn
		s.handle(context.Background(), &c, &ServerCall{Msg: Message{Inline: in}}, c.RemoteAddr(), s.budget.Account(0))
		var hdr CallHeader
		callErr := hdr.DecodeXDR(xdr.NewDecoder(in))
		if !c.replied {
			var he *HeaderError
			if callErr == nil || !errors.As(callErr, &he) || (he.Field != "xid" && he.Field != "msg_type" && he.Field != "rpcvers") {
				t.Fatalf("no reply to a call whose header decodes as far as %v", callErr)
			}
			return
		}
		var rh ReplyHeader
		if err := rh.DecodeXDR(xdr.NewDecoder(c.reply)); err != nil {
			t.Fatalf("malformed reply %x: %v", c.reply, err)
		}
		if rh.XID != hdr.XID {
			t.Fatalf("reply xid %#x to call xid %#x", rh.XID, hdr.XID)
		}
	})
}
