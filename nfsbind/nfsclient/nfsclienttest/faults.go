// Package nfsclienttest holds transports that stand for faulty NFSv3 servers, for
// tests of clients built on package nfsclient. Each wraps the transport to a real
// server (an oncrpc.RoundTripper carrying NFS calls) and rewrites some of its replies.
// They read replies as a stream transport delivers them: an accepted reply with an
// empty verifier and results inline.
package nfsclienttest

import (
	"context"
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// replyHeader is the length of an accepted reply with an empty verifier: xid, mtype,
// reply_stat, verifier flavor and length, accept_stat.
const replyHeader = 24

// procOf returns the procedure of an RPC call message.
func procOf(call *oncrpc.ClientCall) nfs3.Proc {
	return nfs3.Proc(binary.BigEndian.Uint32(call.Msg.Inline[20:]))
}

// EndlessFile is a server whose files never end: no READ reports the end of the
// file, and every READ at or past Size is answered with a full count of zeros.
type EndlessFile struct {
	oncrpc.RoundTripper
	Size uint64
}

// RoundTrip forwards the call and rewrites a READ reply.
func (e *EndlessFile) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := e.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	if procOf(call) != nfs3.ProcRead {
		return nil
	}
	in := call.Msg.Inline
	args := in[len(in)-12:] // READ3args ends with offset and count
	off, count := binary.BigEndian.Uint64(args), binary.BigEndian.Uint32(args[8:])
	if off < e.Size { // the real reply, its end of file taken away
		r := reply.Inline[replyHeader:]
		at := 8 // status, attributes_follow
		if binary.BigEndian.Uint32(r[4:]) == 1 {
			at += nfs3.FattrSize
		}
		binary.BigEndian.PutUint32(r[at+4:], 0) // eof, after count
		return nil
	}
	out := append([]byte(nil), reply.Inline[:replyHeader]...)
	out = binary.BigEndian.AppendUint32(out, 0) // NFS3_OK
	out = binary.BigEndian.AppendUint32(out, 0) // no attributes
	out = binary.BigEndian.AppendUint32(out, count)
	out = binary.BigEndian.AppendUint32(out, 0) // not the end
	out = binary.BigEndian.AppendUint32(out, count)
	reply.Inline = append(out, make([]byte, count)...)
	return nil
}

// EndlessDir is a server whose directories never end: READDIR and READDIRPLUS
// replies never report the end, and each reply's last cookie is 7 (with Loop) or a
// new one each time. Replies counts the replies it rewrote.
type EndlessDir struct {
	oncrpc.RoundTripper
	Loop    bool
	Replies int
	cookie  uint64
}

// RoundTrip forwards the call and rewrites a READDIR or READDIRPLUS reply.
func (e *EndlessDir) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := e.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	proc := procOf(call)
	if proc != nfs3.ProcReaddir && proc != nfs3.ProcReaddirplus {
		return nil
	}
	e.Replies++
	e.cookie++
	last := e.cookie
	if e.Loop {
		last = 7
	}
	d := xdr.NewDecoder(reply.Inline[replyHeader:])
	var enc xdr.Encoder
	enc.Reset(append([]byte(nil), reply.Inline[:replyHeader]...))
	if proc == nfs3.ProcReaddir {
		var r nfs3.ReaddirRes
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		r.EOF = false
		r.Entries[len(r.Entries)-1].Cookie = last
		r.EncodeXDR(&enc)
	} else {
		var r nfs3.ReaddirplusRes
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		r.EOF = false
		r.Entries[len(r.Entries)-1].Cookie = last
		r.EncodeXDR(&enc)
	}
	reply.Inline = enc.Bytes()
	return nil
}

// ChangingVerifier is a server that restarted between a WRITE and the COMMIT after
// it: the reply to WRITE number Flip (counting from 1) carries another verifier than
// the rest. Writes counts the WRITEs.
type ChangingVerifier struct {
	oncrpc.RoundTripper
	Flip, Writes int
}

// RoundTrip forwards the call and rewrites the verifier of one WRITE reply.
func (v *ChangingVerifier) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := v.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	if procOf(call) != nfs3.ProcWrite {
		return nil
	}
	if v.Writes++; v.Writes == v.Flip {
		reply.Inline[len(reply.Inline)-1] ^= 0xff // WRITE3resok ends with the verifier
	}
	return nil
}

// AttrlessDir is a server whose READDIRPLUS replies carry each entry's handle but not
// its attributes, which RFC 1813 §3.3.17 allows (name_attributes is a post_op_attr).
type AttrlessDir struct {
	oncrpc.RoundTripper
}

// RoundTrip forwards the call and drops the entries' attributes from a READDIRPLUS
// reply.
func (a *AttrlessDir) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := a.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	if procOf(call) != nfs3.ProcReaddirplus {
		return nil
	}
	var r nfs3.ReaddirplusRes
	if err := r.DecodeXDR(xdr.NewDecoder(reply.Inline[replyHeader:])); err != nil {
		return err
	}
	for i := range r.Entries {
		r.Entries[i].Attr = nfs3.PostOpAttr{}
	}
	var enc xdr.Encoder
	enc.Reset(append([]byte(nil), reply.Inline[:replyHeader]...))
	r.EncodeXDR(&enc)
	reply.Inline = enc.Bytes()
	return nil
}
