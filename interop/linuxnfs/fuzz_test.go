package linuxnfs

import (
	"errors"
	"testing"
)

// FuzzParse: Parse never panics, its errors are *HeaderError naming a field at an
// offset inside the message, and what it counts stays within the message.
func FuzzParse(f *testing.F) {
	for _, m := range [][]byte{linuxWrite, readCall, readdirplusCall, readdirplusReply, readReply, read4Call, write4Call, readdir4Call, seq4Call} {
		f.Add(m)
	}
	for _, tc := range badMessages {
		f.Add(tc.msg)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, err := Parse(msg)
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) || he.Field == "" || he.Offset < 0 || he.Offset > len(msg) {
				t.Fatalf("error %v: want a *HeaderError naming a field inside the message", err)
			}
			return
		}
		segs := h.ReadSegs*24 + h.WriteSegs*16 + h.ReplySegs*16
		if segs > len(msg) || h.InlineLen < 0 || h.InlineLen > len(msg)-16 {
			t.Fatalf("%+v: counts exceed the %d-byte message", h, len(msg))
		}
		if h.ReadPosBytes > h.ReadBytes || h.WriteChunks > h.WriteSegs+len(msg) {
			t.Fatalf("%+v: inconsistent counts", h)
		}
		// A client's Tally sends the message and receives it: one forward call and
		// one reply, except that an RPC call received by the client and an RPC
		// reply it sends are reverse-direction traffic (RFC 8167).
		var tl Tally
		tl.Record(true, msg)
		tl.Record(false, msg)
		c := tl.Counts()
		want := c.Calls == 1 && c.Replies == 1 && c.BackchannelCalls == 0 && c.BackchannelReplies == 0
		if h.HasRPC && h.IsCall {
			want = c.Calls == 1 && c.Replies == 0 && c.BackchannelCalls == 1 && c.BackchannelReplies == 0
		} else if h.HasRPC {
			want = c.Calls == 0 && c.Replies == 1 && c.BackchannelCalls == 0 && c.BackchannelReplies == 1
		}
		if c.ParseErrors != 0 || !want {
			t.Fatalf("Tally of a message Parse accepts (%+v): %+v", h, c)
		}
	})
}
