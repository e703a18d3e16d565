package nfsbind_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// A client sizes a READDIRPLUS reply chunk from the call's maxcount, and decides which
// chunks a call needs.
func ExampleMaxReply() {
	args := &nfs3.ReaddirplusArgs{DirCount: 8192, MaxCount: 32768}
	n, _ := nfsbind.MaxReply(nfs3.ProcReaddirplus, args)
	need, _ := nfsbind.NeedsReplyChunk(nfs3.ProcReaddirplus, args, 3996)
	r, _ := nfsbind.RuleFor(nfs3.ProcRead)
	fmt.Println(n, need, r.Reply, nfsbind.PadSegment(4097))
	// Output:
	// 32892 true write chunk true
}
