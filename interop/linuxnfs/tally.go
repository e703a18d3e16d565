package linuxnfs

import (
	"fmt"
	"strings"
	"sync"
)

// Role says which side of the connections a Tally watches.
type Role int

const (
	// Client: the Tally sees the calls it sends and the replies it receives (an
	// rpcrdma.ClientOptions.Trace).
	Client Role = iota
	// Server: the Tally sees the calls it receives and the replies it sends (an
	// rpcrdma.ServerOptions.Trace).
	Server
)

// Counts is what a Tally has seen. "Calls" are the messages from client to server,
// "replies" those from server to client, whichever side recorded them.
type Counts struct {
	Calls, Replies int // RPC-over-RDMA messages each way (RDMA_DONE counts as a call)

	NFSCalls [22]int // NFSv3 calls by procedure, when the call was inline (RDMA_MSG)
	// NFSv4 COMPOUND calls sent inline (RDMA_MSG), and those by the operation that
	// says what they do (Header.NFS4Op).
	Compounds int
	NFS4Ops   [NFS4MaxOp + 1]int

	// Calls by the chunks they carry, whatever the procedure, and the segments of
	// those chunks in all calls. A Linux client counts segments (registered
	// memory regions) in the read_chunk_count, write_chunk_count and
	// reply_chunk_count of its "xprt: rdma" line in /proc/self/mountstats.
	ReadChunkCalls  int // calls with a read chunk (any position)
	WriteChunkCalls int // calls offering write chunks
	ReplyChunkCalls int // calls offering a reply chunk
	ReadChunkSegs   int // read list entries
	WriteChunkSegs  int // write chunk segments
	ReplyChunkSegs  int // reply chunk segments

	WriteCalls     int    // NFS WRITE calls (NFSv3 WRITE, NFSv4 COMPOUNDs of a WRITE)
	WriteReadChunk int    // ... that carried their data in a read chunk (position > 0)
	ReadChunkBytes uint64 // bytes of read chunks at positions other than 0, all calls
	ReadCalls      int    // NFS READ calls (NFSv3 READ, NFSv4 COMPOUNDs of a READ)
	ReadWriteChunk int    // ... that offered a write chunk
	ReadReplyChunk int    // ... that offered a write chunk and a reply chunk too
	DirCalls       int    // NFS READDIR and READDIRPLUS calls (NFSv4: READDIR)
	DirReplyChunk  int    // ... that offered a reply chunk
	LongCalls      int    // RDMA_NOMSG calls (position-zero read chunk)
	DoneMsgs       int    // RDMA_DONE messages

	NoMsgReplies    int    // RDMA_NOMSG replies: the reply went through the reply chunk
	ReplyChunkBytes uint64 // reply-chunk bytes the replies announced
	WriteListBytes  uint64 // write-chunk bytes the replies announced (READ data placed)
	WriteListReplys int    // replies with a non-empty write list
	ErrorReplies    int    // RDMA_ERROR replies

	MinGrant, MaxGrant uint32 // credit values in replies (0, 0 when none yet)
	MaxInFlight        int    // most calls outstanding at once (calls minus replies)
	// CreditOverruns counts calls that made more calls outstanding than the
	// client could have been granted: for a Client Tally, the credits of the latest
	// reply (1 before the first); for a Server Tally, the largest grant sent so far
	// (1 before the first), the most the client can have seen.
	CreditOverruns int

	// Reverse-direction messages (RFC 8167): RPC calls from the server (NFSv4.1
	// callbacks) and the client's replies to them. They have their own credits and
	// are counted here only, not in Calls, Replies, grants or credits.
	BackchannelCalls, BackchannelReplies int

	ParseErrors int    // messages Parse refused
	FirstError  string // the first of those errors
}

// Tally counts the RPC-over-RDMA messages one side of NFS connections sends and
// receives, to judge afterwards that bulk data really went through chunks and that
// credits were honoured. Its Record method is a Trace function for rpcrdma's
// ClientOptions and ServerOptions; it is safe for concurrent use and does not
// allocate.
type Tally struct {
	role     Role
	mu       sync.Mutex
	c        Counts
	inFlight int
	grant    uint32 // client role: the latest grant received
}

// NewTally returns an empty Tally for role.
func NewTally(role Role) *Tally { return &Tally{role: role} }

// Record counts one message; sent says whether this side sent it. It never retains
// msg.
func (t *Tally) Record(sent bool, msg []byte) {
	h, err := Parse(msg)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.c.ParseErrors++
		if t.c.FirstError == "" {
			t.c.FirstError = err.Error()
		}
		return
	}
	toServer := sent == (t.role == Client)
	if h.HasRPC && h.IsCall != toServer {
		// An RPC call going to the client or a reply going to the server: the
		// backchannel (RFC 8167 §4).
		if h.IsCall {
			t.c.BackchannelCalls++
		} else {
			t.c.BackchannelReplies++
		}
		return
	}
	if toServer {
		t.call(&h)
	} else {
		t.reply(&h)
	}
}

func (t *Tally) call(h *Header) {
	c := &t.c
	c.Calls++
	c.ReadChunkBytes += h.ReadPosBytes
	switch h.Proc {
	case ProcDone:
		c.DoneMsgs++
		return
	case ProcNoMsg:
		c.LongCalls++
	}
	c.ReadChunkSegs += h.ReadSegs
	c.WriteChunkSegs += h.WriteSegs
	c.ReplyChunkSegs += h.ReplySegs
	if h.ReadSegs > 0 {
		c.ReadChunkCalls++
	}
	if h.WriteChunks > 0 {
		c.WriteChunkCalls++
	}
	if h.ReplyChunk {
		c.ReplyChunkCalls++
	}
	var read, write, dir bool
	switch {
	case h.HasRPC && h.IsCall && h.Prog == ProgNFS && h.RPCVers == 3:
		if h.RPCProc < uint32(len(c.NFSCalls)) {
			c.NFSCalls[h.RPCProc]++
		}
		read, write = h.RPCProc == NFSProcRead, h.RPCProc == NFSProcWrite
		dir = h.RPCProc == NFSProcReaddir || h.RPCProc == NFSProcReaddirPlus
	case h.HasNFS4Op:
		c.Compounds++
		if h.NFS4Op <= NFS4MaxOp {
			c.NFS4Ops[h.NFS4Op]++
		}
		read, write, dir = h.NFS4Op == NFS4OpRead, h.NFS4Op == NFS4OpWrite, h.NFS4Op == NFS4OpReaddir
	}
	switch {
	case write:
		c.WriteCalls++
		if h.ReadPosBytes > 0 {
			c.WriteReadChunk++
		}
	case read:
		c.ReadCalls++
		if h.WriteChunks > 0 {
			c.ReadWriteChunk++
			if h.ReplyChunk {
				c.ReadReplyChunk++
			}
		}
	case dir:
		c.DirCalls++
		if h.ReplyChunk {
			c.DirReplyChunk++
		}
	}
	t.inFlight++
	c.MaxInFlight = max(c.MaxInFlight, t.inFlight)
	limit := max(c.MaxGrant, 1)
	if t.role == Client {
		limit = max(t.grant, 1)
	}
	if uint32(t.inFlight) > limit {
		c.CreditOverruns++
	}
}

func (t *Tally) reply(h *Header) {
	c := &t.c
	c.Replies++
	if t.inFlight > 0 {
		t.inFlight--
	}
	if c.MaxGrant == 0 || h.Credits < c.MinGrant {
		c.MinGrant = h.Credits
	}
	c.MaxGrant = max(c.MaxGrant, h.Credits)
	t.grant = h.Credits
	switch h.Proc {
	case ProcError:
		c.ErrorReplies++
		return
	case ProcNoMsg:
		c.NoMsgReplies++
	}
	c.ReplyChunkBytes += h.ReplyBytes
	c.WriteListBytes += h.WriteBytes
	if h.WriteChunks > 0 && h.WriteBytes > 0 {
		c.WriteListReplys++
	}
}

// Counts returns a copy of what the Tally has seen so far.
func (t *Tally) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c
}

// String summarises the counts on one line for logs.
func (c Counts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "calls %d replies %d (NFSv4 COMPOUNDs %d); calls with read chunks %d (%d segments), write chunks %d (%d segments), reply chunk %d (%d segments); WRITE %d (read chunk %d, %d bytes by RDMA Read); READ %d (write chunk %d, also reply chunk %d, %d bytes placed in %d replies); READDIR(PLUS) %d (reply chunk %d); RDMA_NOMSG replies %d (%d bytes); long calls %d; RDMA_DONE %d; RDMA_ERROR %d; grants %d..%d; max in flight %d; credit overruns %d; backchannel calls %d, replies %d; parse errors %d",
		c.Calls, c.Replies, c.Compounds, c.ReadChunkCalls, c.ReadChunkSegs, c.WriteChunkCalls, c.WriteChunkSegs, c.ReplyChunkCalls, c.ReplyChunkSegs, c.WriteCalls, c.WriteReadChunk, c.ReadChunkBytes, c.ReadCalls, c.ReadWriteChunk, c.ReadReplyChunk,
		c.WriteListBytes, c.WriteListReplys, c.DirCalls, c.DirReplyChunk, c.NoMsgReplies, c.ReplyChunkBytes,
		c.LongCalls, c.DoneMsgs, c.ErrorReplies, c.MinGrant, c.MaxGrant, c.MaxInFlight, c.CreditOverruns, c.BackchannelCalls, c.BackchannelReplies, c.ParseErrors)
	if c.FirstError != "" {
		fmt.Fprintf(&b, " (first: %s)", c.FirstError)
	}
	return b.String()
}
