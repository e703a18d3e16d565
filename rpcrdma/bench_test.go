package rpcrdma

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// Benchmark headers: an inline call, a READ call with a one-segment write chunk, and a
// WRITE call with a four-segment read chunk (Linux's maximum with siw).
var benchHeaders = []struct {
	name string
	h    Header
}{
	{"inline", Header{XID: 1, Vers: 1, Credits: 128, Proc: ProcMsg}},
	{"write1seg", Header{XID: 2, Vers: 1, Credits: 128, Proc: ProcMsg,
		WriteList: []chunks.WriteChunk{{seg(0xba6e7601, 131072, 0xe8fdabd8_84704000)}}}},
	{"read4seg", Header{XID: 3, Vers: 1, Credits: 128, Proc: ProcMsg,
		ReadList: []chunks.ReadSegment{
			rseg(108, 0x7e64f901, 262144, 0xe1fdabd8_84ac0000),
			rseg(108, 0x7e64f902, 262144, 0xe1fdabd8_84b00000),
			rseg(108, 0x7e64f903, 262144, 0xe1fdabd8_84c00000),
			rseg(108, 0x7e64f904, 262144, 0xe1fdabd8_84d00000),
		}}},
}

func BenchmarkHeaderEncode(b *testing.B) {
	for _, bh := range benchHeaders {
		b.Run(bh.name, func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			b.SetBytes(int64(bh.h.Size()))
			for i := 0; i < b.N; i++ {
				var err error
				if buf, err = bh.h.Append(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHeaderDecode(b *testing.B) {
	for _, bh := range benchHeaders {
		b.Run(bh.name, func(b *testing.B) {
			msg, err := bh.h.Append(nil)
			if err != nil {
				b.Fatal(err)
			}
			msg = append(msg, rpcTail...)
			var h Header
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for i := 0; i < b.N; i++ {
				if _, err := h.Decode(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeaderDecodeGroup decodes a read-chunk call and groups its read list, as a
// responder does before issuing RDMA Reads.
func BenchmarkHeaderDecodeGroup(b *testing.B) {
	msg, _ := benchHeaders[2].h.Append(nil)
	var h Header
	var cs []chunks.ReadChunk
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := h.Decode(msg); err != nil {
			b.Fatal(err)
		}
		var err error
		if cs, err = chunks.Group(cs, h.ReadList); err != nil || len(cs) != 1 {
			b.Fatal(err)
		}
	}
}
