package rpcrdma

import (
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// FuzzCall feeds arbitrary messages through the server's acceptance of a call: the
// header decoder, checkCall and the placement of its read chunks. Every message ends in
// a clear error (ERR_VERS / ERR_CHUNK material) or in a consistent call: an inline body
// inside the message, read chunks that tile a message within MaxCall.
func FuzzCall(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte, allowMSGP bool) {
		var h Header
		hl, err := h.Decode(msg)
		if err != nil {
			var ve *VersionError
			var ce *ChunkError
			if !errors.As(err, &ve) && !errors.As(err, &ce) {
				t.Fatalf("decode error %v is neither a VersionError nor a ChunkError", err)
			}
			return
		}
		if h.Proc == ProcDone || h.Proc == ProcError {
			return
		}
		body, grouped, err := checkCall(&h, msg[hl:], allowMSGP, nil)
		if err != nil {
			return
		}
		if h.Proc == ProcMsgP && (!allowMSGP || len(grouped) > 0) {
			t.Fatal("RDMA_MSGP accepted without opting in, or with read chunks")
		}
		if len(body) > len(msg)-hl {
			t.Fatalf("body of %d bytes from %d after the header", len(body), len(msg)-hl)
		}
		if h.Proc == ProcNoMsg && (len(grouped) == 0 || grouped[0].Position != 0) {
			t.Fatal("RDMA_NOMSG accepted without a position-zero chunk")
		}
		if len(grouped) == 0 {
			return
		}
		var pzrc []chunks.Segment
		rcs := grouped
		if grouped[0].Position == 0 {
			pzrc, rcs, body = grouped[0].Segments, grouped[1:], nil
		}
		var a assembler
		total, err := a.planAssembly(len(body), pzrc, rcs, DefaultMaxCall)
		if err != nil {
			if !errors.Is(err, ErrChunkPlacement) {
				t.Fatalf("placement error %v does not wrap ErrChunkPlacement", err)
			}
			return
		}
		if total > DefaultMaxCall {
			t.Fatalf("call of %d bytes accepted, limit %d", total, DefaultMaxCall)
		}
	})
}
