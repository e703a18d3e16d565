package rpcrdma

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// TestHostileReplyReadChunksAfterMaxRDMARead0: once the server announced maxrdmaread 0
// (applied with SetMaxRDMARead(0)), seed §6.2 forbids it to need RDMA Reads from the
// client: a reply in read chunks is refused as a bad reply naming the limit instead of
// being pulled, and RDMA_DONE still tells the server it may let the chunks go.
func TestHostileReplyReadChunksAfterMaxRDMARead0(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	cl.SetMaxRDMARead(0)
	done := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 0x31, Msg: oncrpc.Message{Inline: rpcCall(0x31, tpNull)}, MaxReply: 100}, &reply)
	}()
	h, _ := srv.recvHeader(t)
	out := Header{XID: h.XID, Vers: 1, Credits: 4, Proc: ProcNoMsg,
		ReadList: []chunks.ReadSegment{{Position: 0, Segment: chunks.Segment{Handle: 0x4242, Length: 5000, Offset: 1 << 20}}}}
	b, err := out.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.send(t, b)
	err = <-done
	if !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), "maxrdmaread 0") {
		t.Fatalf("reply read chunks after maxrdmaread 0: %v", err)
	}
	if d, _ := srv.recvHeader(t); d.Proc != ProcDone || d.XID != 0x31 {
		t.Fatalf("after the refused reply: %v xid %#x, want RDMA_DONE", d.Proc, d.XID)
	}
}
