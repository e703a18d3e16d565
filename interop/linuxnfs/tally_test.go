package linuxnfs

import (
	"strings"
	"sync"
	"testing"
)

func TestTallyServer(t *testing.T) {
	tl := NewTally(Server)
	// The client starts with one credit: its first call is within it.
	tl.Record(false, linuxWrite)
	tl.Record(true, msg(0x10, 1, 64, ProcMsg, 0, 0, 0, 0x10, 1, 0, 0, 0, 0))
	for _, m := range [][]byte{readCall, readdirplusCall} {
		tl.Record(false, m)
	}
	tl.Record(true, readReply)
	tl.Record(true, readdirplusReply)
	tl.Record(false, msg(0x14, 1, 64, ProcDone))
	tl.Record(false, []byte{1, 2, 3})
	c := tl.Counts()
	want := Counts{
		Calls: 4, Replies: 3, ReadChunkCalls: 1, WriteChunkCalls: 1, ReplyChunkCalls: 1, ReadChunkSegs: 1, WriteChunkSegs: 2, ReplyChunkSegs: 1, WriteCalls: 1, WriteReadChunk: 1, ReadChunkBytes: 8192,
		ReadCalls: 1, ReadWriteChunk: 1, DirCalls: 1, DirReplyChunk: 1, DoneMsgs: 1,
		NoMsgReplies: 1, ReplyChunkBytes: 9000, WriteListBytes: 4093, WriteListReplys: 1,
		MinGrant: 64, MaxGrant: 64, MaxInFlight: 2, ParseErrors: 1,
	}
	want.NFSCalls[NFSProcWrite], want.NFSCalls[NFSProcRead], want.NFSCalls[NFSProcReaddirPlus] = 1, 1, 1
	want.FirstError = c.FirstError
	if c != want {
		t.Errorf("counts\n got %+v\nwant %+v", c, want)
	}
	if !strings.Contains(c.FirstError, "xid") {
		t.Errorf("first error %q does not name the field", c.FirstError)
	}
	if s := c.String(); !strings.Contains(s, "WRITE 1 (read chunk 1, 8192 bytes") || !strings.Contains(s, "parse errors 1") {
		t.Errorf("String: %s", s)
	}
}

func TestTallyCreditOverrun(t *testing.T) {
	call := func(xid uint32) []byte { return cat(msg(xid, 1, 128, ProcMsg, 0, 0, 0), rpcCall(xid, 0, 0)) }
	reply := func(xid, credits uint32) []byte { return msg(xid, 1, credits, ProcMsg, 0, 0, 0, xid, 1, 0, 0, 0, 0) }

	// Client role: two calls before the first grant overrun the initial credit.
	cl := NewTally(Client)
	cl.Record(true, call(1))
	cl.Record(true, call(2))
	if c := cl.Counts(); c.CreditOverruns != 1 || c.MaxInFlight != 2 {
		t.Errorf("two calls on one credit: %+v", c)
	}
	// Client role: a grant of 2 allows two outstanding calls, not three.
	cl = NewTally(Client)
	cl.Record(true, call(1))
	cl.Record(false, reply(1, 2))
	cl.Record(true, call(2))
	cl.Record(true, call(3))
	if c := cl.Counts(); c.CreditOverruns != 0 {
		t.Errorf("two calls within a grant of 2: %+v", c)
	}
	cl.Record(true, call(4))
	if c := cl.Counts(); c.CreditOverruns != 1 || c.MaxInFlight != 3 {
		t.Errorf("three calls within a grant of 2: %+v", c)
	}
	// Server role: the limit is the largest grant sent.
	sv := NewTally(Server)
	sv.Record(false, call(1))
	sv.Record(true, reply(1, 3))
	for x := uint32(2); x <= 5; x++ {
		sv.Record(false, call(x))
	}
	if c := sv.Counts(); c.CreditOverruns != 1 || c.MaxInFlight != 4 || c.MaxGrant != 3 {
		t.Errorf("server view of four calls against a grant of 3: %+v", c)
	}
}

func TestTallyConcurrent(t *testing.T) {
	tl := NewTally(Client)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				tl.Record(true, readCall)
				tl.Record(false, readReply)
			}
		}()
	}
	wg.Wait()
	if c := tl.Counts(); c.Calls != 800 || c.Replies != 800 || c.ReadWriteChunk != 800 || c.WriteListBytes != 800*4093 {
		t.Errorf("counts after 800 exchanges: %+v", c)
	}
}

func TestTallyDoesNotAllocate(t *testing.T) {
	tl := NewTally(Server)
	if n := testing.AllocsPerRun(100, func() {
		tl.Record(false, readCall)
		tl.Record(true, readReply)
	}); n != 0 {
		t.Errorf("Record allocates %v times per message pair", n)
	}
}

func BenchmarkTallyRecord(b *testing.B) {
	tl := NewTally(Server)
	b.ReportAllocs()
	for b.Loop() {
		tl.Record(false, linuxWrite)
		tl.Record(true, readReply)
	}
}

func TestTallyReadWithReplyChunk(t *testing.T) {
	// A READ offering a write chunk and a reply chunk, as rpcrdma's client did
	// before it sized reply chunks without the write-chunk data.
	both := cat(msg(0x20, 1, 128, ProcMsg, 0,
		1, 1, 0x55, 131072, 0, 0, 0,
		1, 1, 0x56, 131200, 0, 0), rpcCall(0x20, NFSProcRead, 0), make([]byte, 12))
	tl := NewTally(Client)
	tl.Record(true, readCall)
	tl.Record(true, both)
	if c := tl.Counts(); c.ReadCalls != 2 || c.ReadWriteChunk != 2 || c.ReadReplyChunk != 1 || c.ReplyChunkCalls != 1 {
		t.Errorf("counts: %+v", c)
	}
}

func TestTallyNFSv4(t *testing.T) {
	tl := NewTally(Server)
	for _, m := range [][]byte{read4Call, write4Call, readdir4Call, seq4Call} {
		tl.Record(false, m)
	}
	c := tl.Counts()
	if c.Compounds != 4 || c.NFS4Ops[NFS4OpRead] != 1 || c.NFS4Ops[NFS4OpWrite] != 1 || c.NFS4Ops[NFS4OpReaddir] != 1 || c.NFS4Ops[NFS4OpSequence] != 1 {
		t.Errorf("compounds by operation: %+v", c)
	}
	if c.ReadCalls != 1 || c.ReadWriteChunk != 1 || c.WriteCalls != 1 || c.WriteReadChunk != 1 || c.ReadChunkBytes != 131072 ||
		c.DirCalls != 1 || c.DirReplyChunk != 1 || c.NFSCalls != [22]int{} {
		t.Errorf("NFSv4 READ, WRITE and READDIR by chunk: %+v", c)
	}
	if s := c.String(); !strings.Contains(s, "NFSv4 COMPOUNDs 4") {
		t.Errorf("String: %s", s)
	}
}

// TestTallyBackchannel: RFC 8167 reverse-direction traffic (a CB_COMPOUND the server
// sends, the client's reply) is counted apart, outside the forward calls, grants and
// credits, from either side.
func TestTallyBackchannel(t *testing.T) {
	cbCall := cat(msg(0x30, 1, 16, ProcMsg, 0, 0, 0), msg(0x30, 0, 2, 0x40000000, 1, 1, 1, 0, 0, 0))
	cbReply := msg(0x30, 1, 16, ProcMsg, 0, 0, 0, 0x30, 1, 0, 0, 0, 0)
	for _, role := range []Role{Server, Client} {
		tl := NewTally(role)
		fromServer := role == Server // Record's sent flag for the server's messages
		tl.Record(!fromServer, seq4Call)
		tl.Record(fromServer, cbCall)
		tl.Record(!fromServer, cbReply)
		tl.Record(!fromServer, seq4Call)
		c := tl.Counts()
		if c.BackchannelCalls != 1 || c.BackchannelReplies != 1 || c.Calls != 2 || c.Replies != 0 || c.MaxGrant != 0 || c.CreditOverruns != 1 {
			t.Errorf("role %d: %+v", role, c)
		}
	}
}
