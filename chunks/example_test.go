package chunks_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// A responder groups a received read list into chunks: a position-zero chunk carrying a
// long call in two segments.
func ExampleGroup() {
	list := []chunks.ReadSegment{
		{Position: 0, Segment: chunks.Segment{Handle: 0x10, Length: 4096, Offset: 0x7000}},
		{Position: 0, Segment: chunks.Segment{Handle: 0x11, Length: 100, Offset: 0x9000}},
	}
	cs, err := chunks.Group(nil, list)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cs {
		fmt.Printf("position %d: %d segments, %d bytes\n", c.Position, len(c.Segments), c.Length())
	}
	// Output: position 0: 2 segments, 4196 bytes
}

// A 5-byte opaque item sent as a read chunk at position 108: the sender elides the XDR
// roundup and the receiver resumes the XDR stream at the next 4-byte boundary.
func ExampleNextPosition() {
	fmt.Println(chunks.ReadChunkLength(5), chunks.NextPosition(108, 5))
	// Output: 5 116
}

// A client offers a write chunk for an NFS READ of 8191 bytes; like Linux it appends a
// 4-byte pad segment. The server recognises it, writes the data, and reports lengths.
func ExampleSplitPad() {
	offered, _ := chunks.Split(nil, 0x42, 0x10000, 8191, 4096)
	offered = chunks.AppendPad(offered, 8191, chunks.Segment{Handle: 0x99, Offset: 0x500})
	data, pad := chunks.SplitPad(offered, 8191)
	reply, _ := chunks.Fill(nil, offered, 8191)
	fmt.Println(len(offered), len(data), pad)
	for _, s := range reply {
		fmt.Println(s.Handle, s.Length)
	}
	// Output:
	// 3 2 true
	// 66 4096
	// 66 4095
	// 153 0
}
