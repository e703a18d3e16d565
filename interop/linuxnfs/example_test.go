package linuxnfs_test

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/interop/linuxnfs"
)

func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

// Parse summarises one RPC-over-RDMA message: here an RDMA_NOMSG reply whose RPC reply
// went through a 9000-byte reply chunk.
func ExampleParse() {
	h, err := linuxnfs.Parse(words(7, 1, 64, linuxnfs.ProcNoMsg, 0, 0, 1, 1, 0xabc, 9000, 0, 0))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Proc == linuxnfs.ProcNoMsg, h.Credits, h.ReplyChunk, h.ReplyBytes)
	_, err = linuxnfs.Parse(words(7, 2, 64, 0))
	fmt.Println(err)
	// Output:
	// true 64 true 9000
	// nfsrdma: vers at byte 4: version 2, want 1
}

// A Tally is an rpcrdma Trace function: give tally.Record to
// rpcrdma.ServerOptions.Trace (or ClientOptions.Trace with linuxnfs.Client), then
// judge the counts.
func ExampleTally() {
	tally := linuxnfs.NewTally(linuxnfs.Server)
	call := words(9, 1, 128, linuxnfs.ProcMsg, 0, 0, 1, 1, 0x77, 32768, 0, 0, // reply chunk offered
		9, 0, 2, linuxnfs.ProgNFS, 3, linuxnfs.NFSProcReaddirPlus, 0, 0, 0, 0)
	tally.Record(false, call)
	tally.Record(true, words(9, 1, 64, linuxnfs.ProcNoMsg, 0, 0, 1, 1, 0x77, 5000, 0, 0))
	c := tally.Counts()
	fmt.Println(c.DirCalls, c.DirReplyChunk, c.NoMsgReplies, c.ReplyChunkBytes, c.MaxGrant)
	// Output: 1 1 1 5000 64
}
