package nfsbind

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// RuleV4 is the binding of one NFSv4 operation inside a COMPOUND.
type RuleV4 struct {
	Op nfs4.OpNum
	// Call is ReadChunk when the operation's argument item CallItem may be moved by a
	// read chunk, else Inline.
	Call     Chunk
	CallItem string
	// Reply is WriteChunk when the result item ReplyItem may be placed in a write
	// chunk, ReplyChunk when the result can make the reply outgrow the inline
	// threshold, else Inline.
	Reply     Chunk
	ReplyItem string
	// RFCEligible lists the operation's items RFC 8267 makes DDP-eligible, including
	// those this implementation (like Linux) keeps in the XDR stream.
	RFCEligible []string
}

// RuleForV4 returns the binding of NFSv4 operation op; ok is false if op is not an
// operation RFC 8881 defines.
func RuleForV4(op nfs4.OpNum) (r RuleV4, ok bool) {
	r = RuleV4{Op: op}
	if !op.Defined() {
		return r, false
	}
	switch op {
	case nfs4.OpWrite:
		r.Call, r.CallItem = ReadChunk, "WRITE4args.data"
		r.RFCEligible = []string{"WRITE4args.data"}
	case nfs4.OpRead:
		r.Reply, r.ReplyItem = WriteChunk, "READ4resok.data"
		r.RFCEligible = []string{"READ4resok.data"}
	case nfs4.OpCreate:
		r.RFCEligible = []string{"CREATE4args.objtype.linkdata"}
	case nfs4.OpReadlink:
		r.Reply = ReplyChunk
		r.RFCEligible = []string{"READLINK4resok.link"}
	case nfs4.OpReaddir:
		r.Reply = ReplyChunk
	}
	return r, true
}

// ChunksV4 is what the binding asks of a COMPOUND's transport.
type ChunksV4 struct {
	// ReadChunks is the number of operations whose argument data may travel in a read
	// chunk (the WRITEs).
	ReadChunks int
	// WriteChunks is the number of write chunks a requester offers, in operation
	// order: one per READ.
	WriteChunks int
	// ReplyChunk reports whether an operation's result may make the reply outgrow the
	// inline threshold whatever the sizes involved (READDIR, READLINK), so that a
	// requester should offer a reply chunk.
	ReplyChunk bool
}

// ChunksForV4 returns the chunks the binding allows for a COMPOUND of ops. It fails for
// an operation number RFC 8881 does not define.
func ChunksForV4(ops []nfs4.OpNum) (ChunksV4, error) {
	var c ChunksV4
	for i, op := range ops {
		r, ok := RuleForV4(op)
		if !ok {
			return ChunksV4{}, fmt.Errorf("nfsbind: COMPOUND operation %d: no NFSv4 operation %d", i, uint32(op))
		}
		if r.Call == ReadChunk {
			c.ReadChunks++
		}
		switch r.Reply {
		case WriteChunk:
			c.WriteChunks++
		case ReplyChunk:
			c.ReplyChunk = true
		}
	}
	return c, nil
}
