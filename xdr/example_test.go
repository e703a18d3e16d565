package xdr_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Encoding a structure with a DDP-eligible payload: the payload's data is recorded, not
// copied, and its XDR position is what an RDMA transport puts in the read chunk.
func ExampleEncoder_Payload() {
	data := []byte("file contents")
	var e xdr.Encoder
	e.Uint64(4096) // offset
	e.Uint32(uint32(len(data)))
	e.Payload(data)
	fmt.Println("inline bytes:", e.Len())
	for _, p := range e.Payloads() {
		fmt.Printf("payload at position %d, %d bytes, next item at %d\n", p.Pos, len(p.Data), p.End())
	}
	// Output:
	// inline bytes: 16
	// payload at position 16, 13 bytes, next item at 32
}

// Decoding checks every claimed length before slicing, and errors say what and where.
func ExampleDecoder_Opaque() {
	d := xdr.NewDecoder([]byte{0, 0, 0, 200, 1, 2, 3, 4})
	_, err := d.Opaque(64)
	fmt.Println(err)
	// Output:
	// xdr: opaque<> at offset 0: length 200 exceeds limit 64
}
