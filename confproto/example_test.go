package confproto_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/confproto"
)

// A client encodes its CONF_RDMA arguments; the server decodes them and answers.
func Example() {
	req := confproto.ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 128}
	args := req.AppendXDR(nil) // the RPC call's arguments, procedure confproto.ProcConfRDMA

	var got confproto.ConfigRDMAReq
	if _, err := got.DecodeXDR(args); err != nil {
		fmt.Println(err)
		return
	}
	reply := confproto.ConfigRDMAReply{MaxCallSendSize: min(got.MaxCallSendSize, 4096), Align: 4096, MaxRDMARead: 16}
	fmt.Printf("%x\n%+v\n", args, reply)

	_, err := got.DecodeXDR(args[:7])
	fmt.Println(err)
	// Output:
	// 000010000000100000000080
	// {MaxCallSendSize:4096 Align:4096 MaxRDMARead:16}
	// confproto: config_rdma_req.maxreply_sendsize: truncated: need 8 bytes, have 7
}
