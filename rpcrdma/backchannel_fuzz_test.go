package rpcrdma

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// reverseSeeds are reverse-direction messages and near misses: each rule of
// reverseMessage broken once.
func reverseSeeds() map[string][]byte {
	call := append(appendReverseHeader(nil, 5, 2), rpcCall(5, 1)...)
	reply := reverseReply(5, 16, rpcReply(5))
	with := func(b []byte, off int, v uint32) []byte {
		c := append([]byte(nil), b...)
		binary.BigEndian.PutUint32(c[off:], v)
		return c
	}
	return map[string][]byte{
		"call":           call,
		"reply":          reply,
		"reply-grant-0":  with(reply, 8, 0),
		"short-body":     reply[:MinSize+7],
		"header-only":    reply[:MinSize],
		"version-2":      with(reply, 4, 2),
		"nomsg":          with(reply, 12, uint32(ProcNoMsg)),
		"msgp":           with(reply, 12, uint32(ProcMsgP)),
		"read-list":      with(reply, 16, 1),
		"write-list":     with(reply, 20, 1),
		"reply-chunk":    with(reply, 24, 1),
		"xid-mismatch":   with(reply, MinSize, 6),
		"msg-type-2":     with(reply, MinSize+4, 2),
		"forward-call":   msgCallSeed(),
		"empty":          {},
		"rdma-done":      doneSeed(),
		"garbage-header": bytes.Repeat([]byte{0xff}, 40),
	}
}

// doneSeed is an RDMA_DONE message.
func doneSeed() []byte {
	h := Header{XID: 5, Vers: Version1, Proc: ProcDone}
	b, _ := h.Append(nil)
	return b
}

// msgCallSeed is a forward NULL call as a client sends it.
func msgCallSeed() []byte {
	h := Header{XID: 9, Vers: Version1, Credits: 128, Proc: ProcMsg}
	b, _ := h.Append(nil)
	return append(b, rpcCall(9, tpNull)...)
}

// FuzzReverseMessage checks the reverse-direction classifier against the header
// decoder: it accepts exactly the RDMA_MSG messages without chunks whose RPC message
// (at least xid and msg_type) carries the transport header's XID, and hands back that
// message and its msg_type; and what appendReverseHeader builds is accepted.
func FuzzReverseMessage(f *testing.F) {
	for _, b := range reverseSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		body, mt, ok := reverseMessage(b)
		var h Header
		hl, err := h.Decode(b)
		want := err == nil && h.Proc == ProcMsg && !h.HasChunks() && len(b) >= hl+8 &&
			binary.BigEndian.Uint32(b[hl:]) == h.XID
		if ok != want {
			t.Fatalf("reverseMessage ok = %v, header decoder says %v (%v, %+v)", ok, want, err, h)
		}
		if !ok {
			return
		}
		if hl != MinSize || !bytes.Equal(body, b[hl:]) || mt != oncrpc.MsgType(binary.BigEndian.Uint32(b[hl+4:])) {
			t.Fatalf("body or msg_type wrong: hl %d, mt %v", hl, mt)
		}
		again := append(appendReverseHeader(nil, h.XID, h.Credits), body...)
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoded message differs")
		}
		if _, mt2, ok2 := reverseMessage(again); !ok2 || mt2 != mt {
			t.Fatalf("re-encoded message not accepted")
		}
	})
}

// TestWriteReverseCorpus regenerates testdata/fuzz/FuzzReverseMessage from
// reverseSeeds; it runs only with RPCRDMA_WRITE_CORPUS=1, and TestReverseCorpusCurrent
// checks that the committed files match.
func TestWriteReverseCorpus(t *testing.T) {
	if os.Getenv("RPCRDMA_WRITE_CORPUS") == "" {
		t.Skip("set RPCRDMA_WRITE_CORPUS=1 to regenerate the corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReverseMessage")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range reverseSeeds() {
		if err := os.WriteFile(filepath.Join(dir, name), corpusFile(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReverseCorpusCurrent fails when a seed is missing from the committed corpus.
func TestReverseCorpusCurrent(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReverseMessage")
	for name, b := range reverseSeeds() {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, corpusFile(b)) {
			t.Errorf("corpus file %s missing or stale (regenerate with RPCRDMA_WRITE_CORPUS=1): %v", name, err)
		}
	}
}
