package confproto

import (
	"bytes"
	"errors"
	"math/rand"
	"strings"
	"testing"

	xdr "github.com/davecgh/go-xdr/xdr2"
)

// Golden vectors written from seed §6.2: three big-endian unsigned ints, in struct order.
var (
	goldenReq = ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 1024, MaxRDMARead: 16}
	// 4096 = 0x1000 (maxcall_sendsize), 1024 = 0x400 (maxreply_sendsize), 16 (maxrdmaread)
	goldenReqWire = []byte{0, 0, 0x10, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x10}

	goldenReply = ConfigRDMAReply{MaxCallSendSize: 65536, Align: 4096, MaxRDMARead: 128}
	// 65536 = 0x10000 (maxcall_sendsize), 4096 = 0x1000 (align), 128 = 0x80 (maxrdmaread)
	goldenReplyWire = []byte{0, 1, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0x80}
)

func TestConstants(t *testing.T) {
	if Program != 100400 || Version != 1 || ProcConfRDMA != 1 || ProcNull != 0 {
		t.Error("program constants differ from seed §6.2")
	}
}

func TestGolden(t *testing.T) {
	if got := goldenReq.AppendXDR(nil); !bytes.Equal(got, goldenReqWire) || len(got) != ReqSize {
		t.Errorf("req encode %x", got)
	}
	if got := goldenReply.AppendXDR(nil); !bytes.Equal(got, goldenReplyWire) || len(got) != ReplySize {
		t.Errorf("reply encode %x", got)
	}
	var rq ConfigRDMAReq
	if n, err := rq.DecodeXDR(append(goldenReqWire, 0xaa)); err != nil || n != 12 || rq != goldenReq {
		t.Errorf("req decode %+v %d %v", rq, n, err)
	}
	var rp ConfigRDMAReply
	if n, err := rp.DecodeXDR(goldenReplyWire); err != nil || n != 12 || rp != goldenReply {
		t.Errorf("reply decode %+v %d %v", rp, n, err)
	}
}

func TestTruncated(t *testing.T) {
	for n := 0; n < 12; n++ {
		var rq ConfigRDMAReq
		_, err := rq.DecodeXDR(goldenReqWire[:n])
		want := reqFields[n/4]
		if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "config_rdma_req."+want) {
			t.Errorf("req %d bytes: %v (want field %s)", n, err, want)
		}
		if rq != (ConfigRDMAReq{}) {
			t.Errorf("req modified on error")
		}
		var rp ConfigRDMAReply
		_, err = rp.DecodeXDR(goldenReplyWire[:n])
		want = replyFields[n/4]
		if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "config_rdma_reply."+want) {
			t.Errorf("reply %d bytes: %v (want field %s)", n, err, want)
		}
	}
	var rp ConfigRDMAReply
	_, err := rp.DecodeXDR([]byte{0, 0, 0, 1, 0, 0})
	if want := "confproto: config_rdma_reply.align: truncated: need 8 bytes, have 6"; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// xdrReq and xdrReply mirror the XDR structs for the independent encoder.
type xdrReq struct{ MaxcallSendsize, MaxreplySendsize, Maxrdmaread uint32 }
type xdrReply struct{ MaxcallSendsize, Align, Maxrdmaread uint32 }

// TestCrossCheckGoXDR compares both directions with github.com/davecgh/go-xdr on random
// values.
func TestCrossCheckGoXDR(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 1000; i++ {
		rq := ConfigRDMAReq{r.Uint32(), r.Uint32(), r.Uint32()}
		var buf bytes.Buffer
		if _, err := xdr.Marshal(&buf, xdrReq{rq.MaxCallSendSize, rq.MaxReplySendSize, rq.MaxRDMARead}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), rq.AppendXDR(nil)) {
			t.Fatalf("req %+v: go-xdr %x, ours %x", rq, buf.Bytes(), rq.AppendXDR(nil))
		}
		var back xdrReq
		if _, err := xdr.Unmarshal(bytes.NewReader(rq.AppendXDR(nil)), &back); err != nil ||
			back != (xdrReq{rq.MaxCallSendSize, rq.MaxReplySendSize, rq.MaxRDMARead}) {
			t.Fatalf("go-xdr decodes ours as %+v (%v)", back, err)
		}

		rp := ConfigRDMAReply{r.Uint32(), r.Uint32(), r.Uint32()}
		buf.Reset()
		if _, err := xdr.Marshal(&buf, xdrReply{rp.MaxCallSendSize, rp.Align, rp.MaxRDMARead}); err != nil {
			t.Fatal(err)
		}
		var got ConfigRDMAReply
		if _, err := got.DecodeXDR(buf.Bytes()); err != nil || got != rp {
			t.Fatalf("reply %+v: decoded go-xdr bytes as %+v (%v)", rp, got, err)
		}
		if !bytes.Equal(buf.Bytes(), rp.AppendXDR(nil)) {
			t.Fatalf("reply %+v: go-xdr %x, ours %x", rp, buf.Bytes(), rp.AppendXDR(nil))
		}
	}
}

func TestAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	var rq ConfigRDMAReq
	if a := testing.AllocsPerRun(100, func() {
		buf = goldenReq.AppendXDR(buf[:0])
		_, _ = rq.DecodeXDR(buf)
	}); a != 0 {
		t.Errorf("%.1f allocs", a)
	}
}

func BenchmarkConfigRDMAReqRoundTrip(b *testing.B) {
	buf := make([]byte, 0, 64)
	var rq ConfigRDMAReq
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = goldenReq.AppendXDR(buf[:0])
		if _, err := rq.DecodeXDR(buf); err != nil {
			b.Fatal(err)
		}
	}
}
