// Package nfsbind states the NFS Upper-Layer Bindings for RPC-over-RDMA of NFS versions
// 3 and 4 (RFC 8267, which replaced RFC 5667) as data a transport and its tests can use
// without knowing NFS: which argument and which result of each procedure (or NFSv4
// operation) is DDP-eligible and therefore may move in a read chunk or a write chunk,
// which replies can outgrow the inline threshold and need a reply chunk, and for NFSv3
// an upper bound on every reply's size computed from the call's arguments.
//
// The codec in package nfs3 marks the data items this binding moves by chunk with
// xdr.Encoder.Payload (WRITE3args.data, READ3resok.data), which is how the binding
// reaches the transport: an RDMA transport turns the call's payload into a read chunk
// and a reply's payload into the client's write chunk, and a TCP transport writes both
// inline. Subpackages: nfs3 (the XDR), nfsserver (a server exporting a directory),
// nfsclient (a client whose READ and WRITE use reply sinks and payloads); gonfsinterop
// is a separate test-only module that drives nfsserver with an independent client. The
// rpcbind protocols Linux clients consult before mounting, and an in-memory rpcbind
// (Registry) for hosts that run none, are in package rpcbind.
//
// # Linux behaviour this binding follows
//
// RFC 8267 names four DDP-eligible items: WRITE data and SYMLINK pathname in calls, READ
// data and READLINK pathname in replies. The Linux client (xprtrdma) uses a read chunk
// only for WRITE and SYMLINK calls that exceed the inline threshold, a write chunk only
// for READ, and a reply chunk for READLINK, READDIR and READDIRPLUS; the Linux server
// RDMA-Writes exactly the unpadded READ payload. This package's codec follows the same
// choice: SYMLINK and READLINK pathnames (at most 1024 bytes) stay in the XDR stream
// (inline, or inside a long call or reply chunk).
//
// # The Linux write-chunk pad segment
//
// When the READ count is not a multiple of 4, the Linux client appends a fifth 4-byte
// segment to its write chunk (pointing at a per-connection pad buffer) so that a server
// that writes the XDR round-up has somewhere to put it. A server following RFC 8166
// §3.4.6 (and Linux svcrdma) writes only the unpadded data and reports that extra
// segment with length 0; a client must not expect the pad bytes inline after the
// placed data. Segment handling belongs to the transport (package chunks); PadSegment
// says when the extra segment appears.
//
// # NFS version 4
//
// RFC 8267 makes four NFSv4 items DDP-eligible in every minor version:
// WRITE4args.data and the linkdata of CREATE4args (objtype NF4LNK) in calls,
// READ4resok.data and READLINK4resok.link in replies. Like the Linux client and server,
// package nfs4 moves only the READ and WRITE data by chunk (xdr.Encoder.Payload and
// xdr.Decoder.Payload); symlink targets stay in the XDR stream, and READLINK and
// READDIR replies, which may outgrow the inline threshold, go by reply chunk (RuleForV4).
//
// A COMPOUND can hold several READs and WRITEs. Read chunks need no pairing rule, since
// each carries the XDR position of the item it replaces. Write chunks pair by order: the
// first write chunk receives the data of the first READ in the COMPOUND, the next the
// next READ, and so on (ChunksForV4 counts them). The codec produces exactly that order:
// a server encoding results records one payload per successful READ, in operation
// order, and a client decoding the reply consumes the placed chunks (given with
// xdr.Decoder.SetPlaced) in the same order. A failed READ ends the COMPOUND, so no later
// READ can take its chunk; its chunk, and any offered beyond the last READ, go back
// unused (length zero). Callbacks (CB_COMPOUND on the backchannel, RFC 8167) have no
// DDP-eligible items and never use chunks.
package nfsbind

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Chunk names how an RPC-over-RDMA transport may convey part of a message.
type Chunk int

// Chunk kinds (RFC 8166 §3.4).
const (
	// Inline: in the Send, or as part of a long message when the whole message is
	// too big (a position-zero read chunk for a call, a reply chunk for a reply).
	Inline Chunk = iota
	// ReadChunk: a DDP-eligible argument the responder RDMA-Reads from the requester.
	ReadChunk
	// WriteChunk: a DDP-eligible result the responder RDMA-Writes into the requester.
	WriteChunk
	// ReplyChunk: the whole reply may exceed the inline threshold; the requester
	// provides a reply chunk sized by MaxReply.
	ReplyChunk
)

func (c Chunk) String() string {
	switch c {
	case Inline:
		return "inline"
	case ReadChunk:
		return "read chunk"
	case WriteChunk:
		return "write chunk"
	case ReplyChunk:
		return "reply chunk"
	}
	return fmt.Sprintf("Chunk(%d)", int(c))
}

// Rule is the binding of one NFSv3 procedure.
type Rule struct {
	Proc nfs3.Proc
	// Call is ReadChunk when the call's DDP-eligible item (CallItem) may be moved by
	// a read chunk, else Inline.
	Call     Chunk
	CallItem string
	// Reply is WriteChunk when the reply's DDP-eligible item (ReplyItem) may be
	// placed in a write chunk, ReplyChunk when the reply may exceed the inline
	// threshold and should be given a reply chunk, else Inline.
	Reply     Chunk
	ReplyItem string
	// RFCEligible lists the procedure's items RFC 8267 makes DDP-eligible, including
	// those this implementation (like Linux) keeps in the XDR stream.
	RFCEligible []string
}

var rules = func() [nfs3.NumProcs]Rule {
	var r [nfs3.NumProcs]Rule
	for p := range r {
		r[p] = Rule{Proc: nfs3.Proc(p)}
	}
	r[nfs3.ProcWrite].Call, r[nfs3.ProcWrite].CallItem = ReadChunk, "WRITE3args.data"
	r[nfs3.ProcWrite].RFCEligible = []string{"WRITE3args.data"}
	r[nfs3.ProcRead].Reply, r[nfs3.ProcRead].ReplyItem = WriteChunk, "READ3resok.data"
	r[nfs3.ProcRead].RFCEligible = []string{"READ3resok.data"}
	r[nfs3.ProcSymlink].RFCEligible = []string{"SYMLINK3args.symlink.symlink_data"}
	r[nfs3.ProcReadlink].Reply = ReplyChunk
	r[nfs3.ProcReadlink].RFCEligible = []string{"READLINK3resok.data"}
	r[nfs3.ProcReaddir].Reply = ReplyChunk
	r[nfs3.ProcReaddirplus].Reply = ReplyChunk
	return r
}()

// RuleFor returns the binding of procedure p; ok is false if p is not an NFSv3
// procedure.
func RuleFor(p nfs3.Proc) (r Rule, ok bool) {
	if p >= nfs3.NumProcs {
		return Rule{Proc: p}, false
	}
	return rules[p], true
}

// Rules returns the binding of every NFSv3 procedure, in procedure order.
func Rules() []Rule {
	out := make([]Rule, nfs3.NumProcs)
	copy(out, rules[:])
	return out
}

// ReplyHeaderSize is the size of an accepted ONC RPC reply header with an empty
// verifier (AUTH_NONE, as servers send for AUTH_NONE and AUTH_SYS calls): xid,
// msg_type, reply_stat, verifier flavor and length, accept_stat.
const ReplyHeaderSize = 6 * 4

// Sizes of fixed parts of results, with every optional attribute present and file
// handles at their maximum length.
const (
	postOpAttrMax = 4 + nfs3.FattrSize
	wccDataMax    = 4 + 24 + postOpAttrMax
	fhMax         = 4 + nfs3.FHSize
	postOpFHMax   = 4 + fhMax
	createResMax  = 4 + postOpFHMax + postOpAttrMax + wccDataMax
	// ReadResInline is the size of a READ3resok without its data: status,
	// post_op_attr, count, eof and the data's length word.
	ReadResInline = 4 + postOpAttrMax + 4 + 4 + 4
)

// ErrArgsType means MaxResults was given arguments of the wrong type for the
// procedure.
var ErrArgsType = fmt.Errorf("nfsbind: argument type does not match procedure")

// MaxResults returns an upper bound on the encoded size of procedure p's results (the
// XDR after the RPC reply header), computed from its arguments. Only READ, READDIR and
// READDIRPLUS depend on them (READ's count, READDIR's count, READDIRPLUS's maxcount);
// for the others args may be nil. A server never returns more than the client's count
// limits allow (RFC 1813 §3.3.6, §3.3.16, §3.3.17), so the bound is safe for a
// conforming server.
func MaxResults(p nfs3.Proc, args nfs3.Message) (int, error) {
	switch p {
	case nfs3.ProcNull:
		return 0, nil
	case nfs3.ProcGetattr:
		return 4 + nfs3.FattrSize, nil
	case nfs3.ProcSetattr, nfs3.ProcRemove, nfs3.ProcRmdir:
		return 4 + wccDataMax, nil
	case nfs3.ProcLookup:
		return 4 + fhMax + 2*postOpAttrMax, nil
	case nfs3.ProcAccess:
		return 4 + postOpAttrMax + 4, nil
	case nfs3.ProcReadlink:
		return 4 + postOpAttrMax + xdr.OpaqueSize(nfs3.MaxNFSPathLen), nil
	case nfs3.ProcRead:
		a, ok := args.(*nfs3.ReadArgs)
		if !ok {
			return 0, fmt.Errorf("%w: %v wants *nfs3.ReadArgs, got %T", ErrArgsType, p, args)
		}
		return ReadResInline + xdr.RoundUp(int(min(a.Count, nfs3.MaxData))), nil
	case nfs3.ProcWrite:
		return 4 + wccDataMax + 4 + 4 + nfs3.WriteVerfSize, nil
	case nfs3.ProcCreate, nfs3.ProcMkdir, nfs3.ProcSymlink, nfs3.ProcMknod:
		return createResMax, nil
	case nfs3.ProcRename:
		return 4 + 2*wccDataMax, nil
	case nfs3.ProcLink:
		return 4 + postOpAttrMax + wccDataMax, nil
	case nfs3.ProcReaddir:
		a, ok := args.(*nfs3.ReaddirArgs)
		if !ok {
			return 0, fmt.Errorf("%w: %v wants *nfs3.ReaddirArgs, got %T", ErrArgsType, p, args)
		}
		return readdirResultsMax(a.Count), nil
	case nfs3.ProcReaddirplus:
		a, ok := args.(*nfs3.ReaddirplusArgs)
		if !ok {
			return 0, fmt.Errorf("%w: %v wants *nfs3.ReaddirplusArgs, got %T", ErrArgsType, p, args)
		}
		return readdirResultsMax(a.MaxCount), nil
	case nfs3.ProcFsstat:
		return 4 + postOpAttrMax + 6*8 + 4, nil
	case nfs3.ProcFsinfo:
		return 4 + postOpAttrMax + 7*4 + 8 + 8 + 4, nil
	case nfs3.ProcPathconf:
		return 4 + postOpAttrMax + 2*4 + 4*4, nil
	case nfs3.ProcCommit:
		return 4 + wccDataMax + nfs3.WriteVerfSize, nil
	}
	return 0, fmt.Errorf("nfsbind: no NFSv3 procedure %d", uint32(p))
}

// MaxReply returns an upper bound on the whole reply message of procedure p
// (ReplyHeaderSize plus MaxResults): what a requester sizes its reply chunk by, and
// what oncrpc.ClientCall.MaxReply carries.
func MaxReply(p nfs3.Proc, args nfs3.Message) (int, error) {
	n, err := MaxResults(p, args)
	return ReplyHeaderSize + n, err
}

// MaxReplyInline returns an upper bound on the part of procedure p's reply that stays
// in the XDR stream when its DDP-eligible result is placed in a write chunk: for READ,
// the reply without its data; for the others, MaxReply.
func MaxReplyInline(p nfs3.Proc, args nfs3.Message) (int, error) {
	if p == nfs3.ProcRead {
		if _, ok := args.(*nfs3.ReadArgs); !ok {
			return 0, fmt.Errorf("%w: %v wants *nfs3.ReadArgs, got %T", ErrArgsType, p, args)
		}
		return ReplyHeaderSize + ReadResInline, nil
	}
	return MaxReply(p, args)
}

// NeedsReplyChunk reports whether a requester whose receive buffers hold inlineRecv
// bytes of RPC message (the inline threshold minus the transport header) must offer a
// reply chunk for this call: the reply, less any result placed by write chunk, may not
// fit. This is the client's decision; a server never checks it (Linux svcrdma does not).
func NeedsReplyChunk(p nfs3.Proc, args nfs3.Message, inlineRecv int) (bool, error) {
	n, err := MaxReplyInline(p, args)
	if err != nil {
		return false, err
	}
	return n > inlineRecv, nil
}

// PadSegment reports whether the Linux client appends its extra 4-byte pad segment to
// the write chunk of a READ whose requested count (READ3args.count, which sizes the
// chunk) is not a multiple of 4. The responder leaves that segment unwritten and
// reports it with length 0, whatever number of bytes it actually returns.
func PadSegment(count uint32) bool { return xdr.PadLen(int(count%4)) != 0 }

// readdirResultsMax bounds READDIR3res and READDIRPLUS3res for a request of count
// (maxcount) bytes. RFC 1813 §3.3.16 has count bound the whole READDIR3resok, and this
// module's server keeps to that; Linux knfsd bounds only the directory list (entries,
// the final value_follows and eof) by it and adds the status, dir_attributes and
// cookieverf (nfsd3_init_dirlist_pages), as the Linux client's reply buffer allows
// (NFS3_readdirres_sz plus count). The larger of the two is the bound.
func readdirResultsMax(count uint32) int {
	return 4 + postOpAttrMax + nfs3.CookieVerfSize + max(int(count), 8)
}
