//go:build linux

package nfsclient

import (
	"context"
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// replyHeader is the length of an accepted reply with an empty verifier: xid, mtype,
// reply_stat, verifier flavor and length, accept_stat.
const replyHeader = 24

// rewriting forwards calls to a real server and lets edit change the inline reply of
// every successful (NFS3_OK) call of procedure proc: a server that answers in ways
// a real one may, or a hostile one does. calls counts the calls of proc.
type rewriting struct {
	oncrpc.RoundTripper
	proc  nfs3.Proc
	calls int
	// edit gets the call's arguments (after the call header) and the reply's results
	// (after the reply header, starting with the status), and returns new results.
	edit func(n int, args, res []byte) []byte
}

func (r *rewriting) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := r.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	in := call.Msg.Inline
	if nfs3.Proc(binary.BigEndian.Uint32(in[20:])) != r.proc {
		return nil
	}
	r.calls++
	res := reply.Inline[replyHeader:]
	if binary.BigEndian.Uint32(res) != uint32(nfs3.StatusOK) {
		return nil
	}
	// The call header: xid, mtype, rpcvers, prog, vers, proc, then the credential
	// and the verifier, each flavor, length and body.
	off := 24
	for i := 0; i < 2; i++ {
		off += 8 + int(binary.BigEndian.Uint32(in[off+4:])+3)&^3
	}
	out := r.edit(r.calls, in[off:], append([]byte(nil), res...))
	reply.Inline = append(append([]byte(nil), reply.Inline[:replyHeader]...), out...)
	return nil
}
