package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// TestPlanCallResultsInline holds planCall's results-inline rule at its edges: a call
// whose MaxReply, at least its sinks' size, fits beside a chunkless reply header
// within the reply inline size offers no write chunk (nor a reply chunk); one byte
// more, a MaxReply below the sinks' size, or no MaxReply, and the sink is a write
// chunk.
func TestPlanCallResultsInline(t *testing.T) {
	const maxInline = DefaultReplyInline
	budget := maxInline - MinSize
	sink := make([]byte, 4096)
	for _, tc := range []struct {
		name     string
		maxReply int
		inline   bool
	}{
		{"bound exactly the budget", budget, true},
		{"bound a 4 KiB READ's reply", 4096 + 128, true},
		{"bound one byte over", budget + 1, false},
		{"bound below the sink", 1024, false},
		{"no bound", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := callLimits{inlineSend: DefaultInline, maxInline: maxInline, callMaxReply: tc.maxReply, maxReply: tc.maxReply}
			if lim.maxReply == 0 {
				lim.maxReply = DefaultMaxReply
			}
			var h Header
			h.XID, h.Vers, h.Credits = 1, Version1, 32
			msg := &oncrpc.Message{Inline: make([]byte, 100)}
			p, err := planCall(&h, msg, [][]byte{sink}, &lim)
			if err != nil {
				t.Fatal(err)
			}
			if tc.inline {
				if len(h.WriteList) != 0 || len(h.ReplyChunk) != 0 || p.replyChunk != 0 {
					t.Fatalf("write list %v, reply chunk %v: want none", h.WriteList, h.ReplyChunk)
				}
				return
			}
			if len(h.WriteList) != 1 || h.WriteList[0].Length() != uint64(len(sink)) {
				t.Fatalf("write list %v: want the %d-byte sink", h.WriteList, len(sink))
			}
		})
	}
}
