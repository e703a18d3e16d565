package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// FuzzReply feeds arbitrary reply messages to the client's reply checks (after the
// header decoder): a reply is either refused with an error or described consistently
// with what the call offered (nsinks write chunks of sinkLen bytes, a reply chunk of
// replyCap bytes).
func FuzzReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte, nsinks uint8, sinkLen uint16, replyCap uint32) {
		var h Header
		hl, err := h.Decode(msg)
		if err != nil || h.Proc == ProcError || h.Proc == ProcDone {
			return
		}
		sinks := make([][]byte, nsinks%8)
		for i := range sinks {
			sinks[i] = make([]byte, sinkLen)
		}
		rc := int(replyCap % (1 << 21))
		kind, body, grouped, n, err := parseReply(&h, msg[hl:], sinks, rc, nil)
		if err != nil {
			return
		}
		for i, wc := range h.WriteList {
			if wc.Length() > uint64(len(sinks[i])) {
				t.Fatalf("write chunk %d of %d bytes accepted into a %d-byte sink", i, wc.Length(), len(sinks[i]))
			}
		}
		switch kind {
		case replyInline:
			if len(body) > len(msg)-hl || h.ReplyChunk.Length() != 0 {
				t.Fatalf("inline body of %d bytes from a %d-byte message", len(body), len(msg))
			}
		case replyInChunk:
			if h.Proc != ProcNoMsg || n > uint64(rc) || rc == 0 {
				t.Fatalf("%v reply of %d bytes into a reply chunk of %d", h.Proc, n, rc)
			}
		case replyInReadChunks:
			if len(grouped) == 0 || h.Proc == ProcMsgP {
				t.Fatal("read chunk reply without chunks")
			}
			if _, err := chunks.Group(nil, h.ReadList); err != nil {
				t.Fatalf("accepted a read list Group refuses: %v", err)
			}
		}
	})
}
