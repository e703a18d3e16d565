package rpcrdma

import (
	"bufio"
	"encoding/hex"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

type capturedSend struct {
	c2s  bool   // client to server
	n    int    // payload length on the wire
	data []byte // captured prefix of the payload
}

func loadCapture(t *testing.T) []capturedSend {
	t.Helper()
	f, err := os.Open("testdata/linux-siw-sends.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []capturedSend
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("bad line %q", line)
		}
		n, err := strconv.Atoi(fs[2])
		if err != nil {
			t.Fatal(err)
		}
		b, err := hex.DecodeString(fs[3])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, capturedSend{c2s: fs[0] == "c2s", n: n, data: b})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCaptureLinuxSends decodes every Send of a Linux NFSv3 + NFSv4.2 session over siw
// (142 messages), re-encodes each header to the captured bytes, and checks the Linux
// behaviour the notes describe (§1.2, §2.5) against what our decoder sees: replies carry
// no read list; the server answers RDMA_NOMSG exactly when the call offered a reply
// chunk; it echoes write and reply chunks with the offered handles and offsets and the
// lengths actually written (chunks.Fill of the offered chunk); the client offers at most
// one write chunk and never a write list together with a reply chunk.
func TestCaptureLinuxSends(t *testing.T) {
	sends := loadCapture(t)
	if len(sends) != 142 {
		t.Fatalf("%d sends, want 142", len(sends))
	}
	calls := map[uint32]Header{}
	var h Header
	procs := map[string]int{}
	for i, s := range sends {
		n, err := h.Decode(s.data)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		enc, err := h.Append(nil)
		if err != nil || string(enc) != string(s.data[:n]) {
			t.Fatalf("send %d: re-encoding differs (%v)", i, err)
		}
		dir := "call"
		if !s.c2s {
			dir = "reply"
		}
		procs[dir+" "+h.Proc.String()]++
		if h.Proc == ProcMsg && len(s.data) > n {
			if err := h.CheckXID(s.data[n:]); err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		}
		if h.Proc == ProcNoMsg && s.n != n {
			t.Errorf("send %d: RDMA_NOMSG Send of %d bytes, header %d", i, s.n, n)
		}
		if s.c2s {
			if len(h.WriteList) > 1 || (len(h.WriteList) > 0 && len(h.ReplyChunk) > 0) {
				t.Errorf("send %d: client offered %d write chunks and reply chunk %v", i, len(h.WriteList), h.ReplyChunk)
			}
			if _, err := chunks.Group(nil, h.ReadList); err != nil {
				t.Errorf("send %d: %v", i, err)
			}
			c := h
			c.ReadList = append([]chunks.ReadSegment(nil), h.ReadList...)
			c.WriteList = nil
			for _, w := range h.WriteList {
				c.WriteList = append(c.WriteList, append(chunks.WriteChunk(nil), w...))
			}
			c.ReplyChunk = append(chunks.WriteChunk(nil), h.ReplyChunk...)
			calls[h.XID] = c
			continue
		}
		if len(h.ReadList) != 0 {
			t.Errorf("send %d: reply with a read list", i)
		}
		call, ok := calls[h.XID]
		if !ok {
			continue // a backchannel call from the server, or a reply to an earlier connection
		}
		if (h.Proc == ProcNoMsg) != (len(call.ReplyChunk) > 0) {
			t.Errorf("send %d: %v reply to a call with reply chunk %v", i, h.Proc, call.ReplyChunk)
		}
		if len(h.WriteList) != len(call.WriteList) {
			t.Errorf("send %d: reply echoes %d write chunks of %d", i, len(h.WriteList), len(call.WriteList))
		}
		for j := range h.WriteList {
			if got, err := chunks.Fill(nil, call.WriteList[j], h.WriteList[j].Length()); err != nil || !reflect.DeepEqual(got, h.WriteList[j]) {
				t.Errorf("send %d: write chunk %v is not Fill(%v)", i, h.WriteList[j], call.WriteList[j])
			}
		}
		if len(h.ReplyChunk) > 0 {
			if got, err := chunks.Fill(nil, call.ReplyChunk, h.ReplyChunk.Length()); err != nil || !reflect.DeepEqual(got, h.ReplyChunk) {
				t.Errorf("send %d: reply chunk %v is not Fill(%v)", i, h.ReplyChunk, call.ReplyChunk)
			}
		}
	}
	t.Logf("messages by direction and type: %v", procs)
	if procs["reply RDMA_NOMSG"] == 0 || procs["call RDMA_MSG"] == 0 {
		t.Errorf("capture lacks expected message types: %v", procs)
	}
}
