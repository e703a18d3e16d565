package iwtest

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// sendPayloads splits a stream of MPA FPDUs (no markers) that each carry one
// complete untagged DDP segment and returns the RDMAP Send payloads. It is a
// test-only reading of the lab captures in testdata/.
func sendPayloads(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(stream) > 0 {
		if len(stream) < 2 {
			t.Fatalf("trailing %d bytes", len(stream))
		}
		ulen := int(binary.BigEndian.Uint16(stream))
		n := (2+ulen+3)&^3 + 4
		if len(stream) < n || ulen < 18 {
			t.Fatalf("truncated FPDU: ulen %d, %d bytes left", ulen, len(stream))
		}
		if stream[2] != 0x41 || stream[3]&0x0f != 3 {
			t.Fatalf("FPDU is not an untagged last-segment Send: ctrl % x", stream[2:4])
		}
		out = append(out, stream[2+18:2+ulen])
		stream = stream[n:]
	}
	return out
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The first Send of the Linux 6.1 NFS client (xprtrdma over siw), captured by
// the lab: an NFSv4 NULL call, 128 credits requested.
func TestParseCallLinuxClient(t *testing.T) {
	b := readFile(t, "testdata/xprtrdma-siw-client-to-host.bin")
	const mpaLen = 20 + 12 // MPA request header + private data
	msgs := sendPayloads(t, b[mpaLen:])
	if len(msgs) != 1 {
		t.Fatalf("got %d Sends, want 1", len(msgs))
	}
	c, err := ParseCall(msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := Call{XID: 0x66571539, Credits: 128, Prog: ProgNFS, Vers: 4, Proc: 0, Flavor: 0, ArgLen: 0}
	if c != want {
		t.Fatalf("ParseCall = %+v, want %+v", c, want)
	}
}

// knfsd's answers to three NULL calls (lab probe with MPA CRC): credits 64.
func TestParseReplyKnfsd(t *testing.T) {
	calls := sendPayloads(t, readFile(t, "testdata/knfsd-crc-calls.bin"))
	replies := sendPayloads(t, readFile(t, "testdata/knfsd-crc-replies.bin"))
	if len(calls) != 3 || len(replies) != 3 {
		t.Fatalf("got %d calls and %d replies, want 3 each", len(calls), len(replies))
	}
	for i := range calls {
		xid := uint32(0x1a2b3c00 + i)
		if got := AppendNullCall(nil, xid, 32, ProgNFS, 3); string(got) != string(calls[i]) {
			t.Errorf("AppendNullCall(%#x) = % x, want the lab probe's % x", xid, got, calls[i])
		}
		r, err := ParseReply(replies[i])
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		want := Reply{XID: xid, Credits: 64}
		if r != want {
			t.Errorf("reply %d = %+v, want %+v", i, r, want)
		}
	}
}

func TestAppendNullReply(t *testing.T) {
	// byte for byte what knfsd answered the lab probe's first NULL call
	want := sendPayloads(t, readFile(t, "testdata/knfsd-crc-replies.bin"))[0]
	if got := AppendNullReply(nil, 0x1a2b3c00, 64); string(got) != string(want) {
		t.Fatalf("AppendNullReply = % x, want knfsd's % x", got, want)
	}
}

func TestAppendNullCallRoundTrip(t *testing.T) {
	b := AppendNullCall([]byte{0xee}, 7, 32, ProgNFS, 3)
	c, err := ParseCall(b[1:])
	if err != nil {
		t.Fatal(err)
	}
	if want := (Call{XID: 7, Credits: 32, Prog: ProgNFS, Vers: 3}); c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

// mutate returns a copy of a valid NULL call with word i set to v.
func mutate(i int, v uint32) []byte {
	b := AppendNullCall(nil, 9, 1, ProgNFS, 3)
	binary.BigEndian.PutUint32(b[4*i:], v)
	return b
}

func TestParseCallErrors(t *testing.T) {
	valid := AppendNullCall(nil, 9, 1, ProgNFS, 3)
	long := append(append([]byte(nil), valid[:4*14]...), 0, 0, 0x01, 0x91) // cred length 401
	tests := []struct {
		name  string
		msg   []byte
		field string
	}{
		{"empty", nil, "rpcrdma.xid.length"},
		{"short header", valid[:10], "rpcrdma.credits.length"},
		{"version 2", mutate(1, 2), "rpcrdma.vers"},
		{"RDMA_NOMSG", mutate(3, 1), "rpcrdma.proc"},
		{"read list", mutate(4, 1), "rpcrdma.read_list"},
		{"write list", mutate(5, 1), "rpcrdma.write_list"},
		{"reply chunk", mutate(6, 1), "rpcrdma.reply_chunk"},
		{"xid mismatch", mutate(7, 10), "rpc.xid"},
		{"reply not call", mutate(8, 1), "rpc.msg_type"},
		{"rpc version 3", mutate(9, 3), "rpc.rpcvers"},
		{"cred too long", long, "rpc.cred.length"},
		{"cred body cut", mutate(14, 12), "rpc.cred.body"},
		{"no verifier", valid[:4*15], "rpc.verf.flavor.length"},
	}
	for _, tc := range tests {
		_, err := ParseCall(tc.msg)
		var he *HeaderError
		if !errors.As(err, &he) {
			t.Errorf("%s: err = %v, want a *HeaderError", tc.name, err)
			continue
		}
		if he.Field != tc.field {
			t.Errorf("%s: field %q (%v), want %q", tc.name, he.Field, err, tc.field)
		}
	}
}

func TestParseReplyErrors(t *testing.T) {
	reply := func(words ...uint32) []byte {
		b := AppendNullCall(nil, 5, 64, 0, 0)[:4*8]
		binary.BigEndian.PutUint32(b[4*3:], ProcRDMAMsg)
		for _, w := range words {
			b = binary.BigEndian.AppendUint32(b, w)
		}
		return b
	}
	ok := reply(1, 0, 0, 0, 0)
	if r, err := ParseReply(ok); err != nil || r.XID != 5 || r.Credits != 64 || r.ReplyStat != 0 {
		t.Fatalf("valid reply: %+v, %v", r, err)
	}
	denied := reply(1, 1, 0, 2, 2)
	if r, err := ParseReply(denied); err != nil || r.ReplyStat != 1 || r.ResLen != 12 {
		t.Fatalf("denied reply: %+v, %v", r, err)
	}
	tests := []struct {
		name  string
		msg   []byte
		field string
	}{
		{"call not reply", reply(0), "rpc.msg_type"},
		{"no reply_stat", reply(1), "rpc.reply_stat.length"},
		{"bad reply_stat", reply(1, 2), "rpc.reply_stat"},
		{"no accept_stat", reply(1, 0, 0, 0), "rpc.accept_stat.length"},
		{"verifier too long", reply(1, 0, 0, 1000), "rpc.verf.length"},
	}
	for _, tc := range tests {
		_, err := ParseReply(tc.msg)
		var he *HeaderError
		if !errors.As(err, &he) || he.Field != tc.field {
			t.Errorf("%s: err = %v, want a *HeaderError for %q", tc.name, err, tc.field)
		}
	}
}

func TestHeaderErrorMessage(t *testing.T) {
	_, err := ParseCall(mutate(1, 2))
	if got, want := err.Error(), "iwtest: rpcrdma.vers = 2, want 1"; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
}

func BenchmarkParseCall(b *testing.B) {
	msg := AppendNullCall(nil, 9, 1, ProgNFS, 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCall(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseCallChunks(t *testing.T) {
	// The Linux client's second Send in the lab, after our NULL reply: an
	// NFSv4.1 COMPOUND (EXCHANGE_ID) offering a one-segment reply chunk.
	head := []uint32{0x5312422b, 1, 128, 0, 0, 0, 1, 1, 0x4b544701, 0x1090, 0x5312422b, 0x84cf8000}
	var b []byte
	for _, w := range head {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	rpc := AppendNullCall(nil, 0x5312422b, 0, ProgNFS, 4)[7*4:]
	binary.BigEndian.PutUint32(rpc[5*4:], 1) // proc COMPOUND
	b = append(b, rpc...)
	b = append(b, 0, 0, 0, 0) // 4 bytes of arguments
	c, err := ParseCallChunks(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Call{XID: 0x5312422b, Credits: 128, Prog: ProgNFS, Vers: 4, Proc: 1, ArgLen: 4}); c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	if _, err := ParseCall(b); err == nil {
		t.Fatal("ParseCall accepted a reply chunk")
	}
	for _, tc := range []struct {
		name  string
		words []uint32
		field string
	}{
		{"read list bool 2", []uint32{1, 1, 0, 0, 2}, "rpcrdma.read_list"},
		{"read segment cut", []uint32{1, 1, 0, 0, 1, 0, 0}, "rpcrdma.read_segment.length"},
		{"write list bool 2", []uint32{1, 1, 0, 0, 0, 2}, "rpcrdma.write_list"},
		{"write chunk count", []uint32{1, 1, 0, 0, 0, 1, 257}, "rpcrdma.write_chunk.count"},
		{"write chunk cut", []uint32{1, 1, 0, 0, 0, 1, 2, 0, 0, 0, 0}, "rpcrdma.write_chunk.segment.length"},
		{"reply chunk bool 2", []uint32{1, 1, 0, 0, 0, 0, 2}, "rpcrdma.reply_chunk"},
		{"reply chunk cut", []uint32{1, 1, 0, 0, 0, 0, 1}, "rpcrdma.reply_chunk.count.length"},
	} {
		var m []byte
		for _, w := range tc.words {
			m = binary.BigEndian.AppendUint32(m, w)
		}
		_, err := ParseCallChunks(m)
		var he *HeaderError
		if !errors.As(err, &he) || he.Field != tc.field {
			t.Errorf("%s: err %v, want a *HeaderError for %s", tc.name, err, tc.field)
		}
	}
}
