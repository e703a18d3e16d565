package rpcrdma_test

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
)

// A requester encodes the transport header of an NFS READ call that offers one write
// chunk, then appends the RPC call behind it.
func ExampleHeader_Append() {
	h := rpcrdma.Header{
		XID: 0xe8fdabd8, Vers: rpcrdma.Version1, Credits: 128, Proc: rpcrdma.ProcMsg,
		WriteList: []chunks.WriteChunk{{{Handle: 0xba6e7601, Length: 131072, Offset: 0x84704000}}},
	}
	buf := make([]byte, 0, 4096) // a registered send buffer
	buf, err := h.Append(buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The RPC call message goes right after the header: buf = append(buf, rpcCall...).
	fmt.Println(len(buf), h.Size())
	// Output: 52 52
}

// A responder decodes each received message into one reused Header and answers malformed
// ones with the matching RDMA_ERROR.
func ExampleHeader_Decode() {
	var h rpcrdma.Header
	const credits = 64
	for _, msg := range [][]byte{
		// RDMA_MSG, empty lists, then an RPC message (its first word shown).
		{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		// Version 2.
		{0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 128, 0, 0, 0, 0},
		// A write chunk with zero segments.
		{0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
	} {
		n, err := h.Decode(msg)
		var ve *rpcrdma.VersionError
		var ce *rpcrdma.ChunkError
		switch {
		case err == nil:
			fmt.Printf("xid %d %v: RPC message is msg[%d:]\n", h.XID, h.Proc, n)
		case errors.As(err, &ve):
			reply := rpcrdma.AppendErrVers(nil, ve.XID, rpcrdma.Version1, credits)
			fmt.Printf("xid %d: answer ERR_VERS (%d bytes): %v\n", ve.XID, len(reply), err)
		case errors.As(err, &ce) && ce.HaveXID:
			reply := rpcrdma.AppendErrChunk(nil, ce.XID, rpcrdma.Version1, credits)
			fmt.Printf("xid %d: answer ERR_CHUNK (%d bytes): %v\n", ce.XID, len(reply), err)
		}
	}
	// Output:
	// xid 1 RDMA_MSG: RPC message is msg[28:]
	// xid 2: answer ERR_VERS (28 bytes): rpcrdma: xid 0x00000002: unsupported version 2 (supported 1..1)
	// xid 3: answer ERR_CHUNK (20 bytes): rpcrdma: xid 0x00000003: write list[0] at byte 24: chunk has no segments
}

// A Decoder with tighter limits than the defaults.
func ExampleDecoder() {
	d := rpcrdma.Decoder{MaxSegments: 16, MaxWriteChunks: 1}
	var h rpcrdma.Header
	msg := []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff} // write chunk claiming 2^32-1 segments
	_, err := d.Decode(&h, msg)
	fmt.Println(errors.Is(err, rpcrdma.ErrTooManySegments))
	// Output: true
}
