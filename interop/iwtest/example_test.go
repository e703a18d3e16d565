package iwtest_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/interop/iwtest"
)

// Build the NULL call the knfsd cases send, then judge it the way the Linux
// client case judges the first Send it receives.
func ExampleParseCall() {
	msg := iwtest.AppendNullCall(nil, 0x1234, 32, iwtest.ProgNFS, 3)
	c, err := iwtest.ParseCall(msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("xid %#x credits %d prog %d vers %d proc %d\n", c.XID, c.Credits, c.Prog, c.Vers, c.Proc)

	msg[7] = 2 // RPC-over-RDMA version 2
	_, err = iwtest.ParseCall(msg)
	fmt.Println(err)
	// Output:
	// xid 0x1234 credits 32 prog 100003 vers 3 proc 0
	// iwtest: rpcrdma.vers = 2, want 1
}

// The RFC 8797 block knfsd sends in its MPA Reply.
func ExampleParseConnectPrivate() {
	cp, err := iwtest.ParseConnectPrivate([]byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03})
	fmt.Printf("%+v %v\n", cp, err)
	fmt.Printf("% x\n", iwtest.AppendConnectPrivate(nil, cp))
	// Output:
	// {Version:1 Flags:0 SendSize:4096 RecvSize:4096} <nil>
	// f6 ab 0e 18 01 00 03 03
}
