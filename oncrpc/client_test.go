package oncrpc

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// placingTransport acts like an RDMA transport answering an NFS-READ-like call: it
// puts the result's data in the caller's first reply sink and elides it from the
// inline reply, as a write chunk would.
type placingTransport struct {
	data     []byte
	gotSinks int
	maxReply int
}

func (p *placingTransport) RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error {
	p.gotSinks, p.maxReply = len(call.ReplySinks), call.MaxReply
	h := ReplyHeader{XID: call.XID}
	b := h.Append(reply.Inline[:0])
	b = xdr.AppendUint32(b, 1234)                // a count before the data
	b = xdr.AppendUint32(b, uint32(len(p.data))) // the data's length word stays inline
	b = xdr.AppendUint32(b, 1)                   // eof, after the elided data
	reply.Inline = b
	n := copy(call.ReplySinks[0], p.data)
	reply.Placed = append(reply.Placed[:0], call.ReplySinks[0][:n])
	return nil
}

func (p *placingTransport) Close() error { return nil }

type readRes struct {
	count uint32
	data  []byte
	eof   bool
}

func (r *readRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.count, err = d.Uint32(); err != nil {
		return err
	}
	if r.data, err = d.Payload(1 << 20); err != nil {
		return err
	}
	r.eof, err = d.Bool()
	return err
}

func TestClientResultsPlacedInReplySinks(t *testing.T) {
	tr := &placingTransport{data: []byte("placed straight into the sink")}
	c := NewClient(tr, testProg, testVers)
	sink := make([]byte, 64)
	var res readRes
	err := c.CallWithOptions(context.Background(), 6, nil, &res, CallOptions{ReplySinks: [][]byte{sink}, MaxReply: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if tr.gotSinks != 1 || tr.maxReply != 4096 {
		t.Fatalf("transport saw %d sinks, MaxReply %d", tr.gotSinks, tr.maxReply)
	}
	if res.count != 1234 || !res.eof || !bytes.Equal(res.data, tr.data) || &res.data[0] != &sink[0] {
		t.Fatalf("decoded %+v; data must alias the sink", res)
	}
}

// errTransport fails every round trip.
type errTransport struct{ err error }

func (e errTransport) RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error {
	return e.err
}
func (e errTransport) Close() error { return nil }

// Reply-side failures: a transport error is wrapped with the XID, a malformed reply
// header is a *HeaderError, a reply to another XID is an error, and a result decoding
// error wraps the *xdr.DecodeError.
func TestClientReplyErrors(t *testing.T) {
	boom := errors.New("boom")
	if err := NewClient(errTransport{boom}, 1, 1).Call(context.Background(), 0, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("transport error: %v", err)
	}
	for _, tc := range []struct {
		name  string
		reply func(xid uint32) []byte
		check func(error) bool
	}{
		{"truncated header", func(xid uint32) []byte { return xdr.AppendUint32(nil, xid) }, func(err error) bool {
			var he *HeaderError
			return errors.As(err, &he) && he.Field == "msg_type"
		}},
		{"wrong xid", func(xid uint32) []byte { return (&ReplyHeader{XID: xid + 1}).Append(nil) }, func(err error) bool {
			return err != nil && bytes.Contains([]byte(err.Error()), []byte("reply xid"))
		}},
		{"short results", func(xid uint32) []byte { return (&ReplyHeader{XID: xid}).Append(nil) }, func(err error) bool {
			var de *xdr.DecodeError
			return errors.As(err, &de) && errors.Is(err, xdr.ErrShort)
		}},
	} {
		tr := replyTransport(tc.reply)
		var res wordRes
		if err := NewClient(tr, 1, 1).Call(context.Background(), 0, nil, &res); !tc.check(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

type replyTransport func(xid uint32) []byte

func (f replyTransport) RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error {
	reply.Inline = append(reply.Inline[:0], f(call.XID)...)
	return nil
}
func (f replyTransport) Close() error { return nil }

// Successive calls get distinct XIDs, also across Clients.
func TestXIDsDistinct(t *testing.T) {
	seen := map[uint32]bool{}
	var tr replyTransport = func(xid uint32) []byte {
		if seen[xid] {
			t.Fatalf("xid %#x reused", xid)
		}
		seen[xid] = true
		return (&ReplyHeader{XID: xid}).Append(nil)
	}
	a, b := NewClient(tr, 1, 1), NewClient(tr, 2, 1)
	for i := 0; i < 100; i++ {
		if err := a.Call(context.Background(), 0, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Call(context.Background(), 0, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}
