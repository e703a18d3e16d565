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
func ExampleReadChunk_End() {
	c := chunks.ReadChunk{Position: 108, Segments: []chunks.Segment{{Handle: 0x42, Length: 5}}}
	fmt.Println(c.Length(), c.End())
	// Output: 5 116
}

// A server wrote 6000 bytes of an NFS READ into the write chunk the client offered
// (two 4096-byte segments): it reports what each segment received.
func ExampleFill() {
	offered := chunks.WriteChunk{{Handle: 0x42, Length: 4096, Offset: 0x10000}, {Handle: 0x42, Length: 4096, Offset: 0x11000}}
	reply, err := chunks.Fill(nil, offered, 6000)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range reply {
		fmt.Printf("%#x %d %#x\n", s.Handle, s.Length, s.Offset)
	}
	// Output:
	// 0x42 4096 0x10000
	// 0x42 1904 0x11000
}
