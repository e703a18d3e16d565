package nfs4

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// An independent decoder: Wireshark's NFSv4 dissector (tshark) reads a capture of this
// package's COMPOUND calls and replies for every sample operation, and a CB_COMPOUND on
// the back channel, as they would cross a TCP connection to port 2049. It must find
// every operation, in order, with no malformed packet or error, and show the values of
// a selection of fields. The test runs where tshark is installed and is skipped
// elsewhere; NFS4_PCAP_DIR=dir keeps the capture for a look in Wireshark.

// rpcCall wraps COMPOUND4args in an ONC RPC call (AUTH_NONE) with record marking.
func rpcCall(xid uint32, args []byte) []byte {
	var b []byte
	for _, w := range []uint32{xid, 0, 2, Program, Version, ProcCompound, 0, 0, 0, 0} {
		b = xdr.AppendUint32(b, w)
	}
	b = append(b, args...)
	return append(xdr.AppendUint32(nil, 0x80000000|uint32(len(b))), b...)
}

// rpcReply wraps COMPOUND4res in an accepted, successful RPC reply.
func rpcReply(xid uint32, res []byte) []byte {
	var b []byte
	for _, w := range []uint32{xid, 1, 0, 0, 0, 0} {
		b = xdr.AppendUint32(b, w)
	}
	b = append(b, res...)
	return append(xdr.AppendUint32(nil, 0x80000000|uint32(len(b))), b...)
}

type tcpFlow struct {
	seq [2]uint32 // next sequence number of client (0) and server (1)
}

// packet returns a raw IPv4+TCP packet carrying payload in direction dir (0: client to
// server port 2049, 1: back).
func (f *tcpFlow) packet(dir int, payload []byte) []byte {
	ip := []byte{0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	if dir == 1 {
		copy(ip[12:], []byte{10, 0, 0, 2, 10, 0, 0, 1})
	}
	binary.BigEndian.PutUint16(ip[2:], uint16(20+20+len(payload)))
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	tcp := make([]byte, 20)
	sport, dport := uint16(801), uint16(2049)
	if dir == 1 {
		sport, dport = dport, sport
	}
	binary.BigEndian.PutUint16(tcp[0:], sport)
	binary.BigEndian.PutUint16(tcp[2:], dport)
	binary.BigEndian.PutUint32(tcp[4:], f.seq[dir])
	binary.BigEndian.PutUint32(tcp[8:], f.seq[1-dir])
	tcp[12], tcp[13] = 5<<4, 0x18 // header length, PSH|ACK
	binary.BigEndian.PutUint16(tcp[14:], 65535)
	f.seq[dir] += uint32(len(payload))
	return append(append(ip, tcp...), payload...)
}

// writePcap writes packets as a pcap file with link type LINKTYPE_RAW (101).
func writePcap(path string, packets [][]byte) error {
	var b bytes.Buffer
	le := binary.LittleEndian
	hdr := make([]byte, 24)
	le.PutUint32(hdr[0:], 0xa1b2c3d4)
	le.PutUint16(hdr[4:], 2)
	le.PutUint16(hdr[6:], 4)
	le.PutUint32(hdr[16:], 262144)
	le.PutUint32(hdr[20:], 101)
	b.Write(hdr)
	for i, p := range packets {
		rec := make([]byte, 16)
		le.PutUint32(rec[0:], uint32(1700000000+i))
		le.PutUint32(rec[8:], uint32(len(p)))
		le.PutUint32(rec[12:], uint32(len(p)))
		b.Write(rec)
		b.Write(p)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func TestTsharkDissectsCompounds(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed")
	}
	args := sampleArgs()
	res := sampleRes()
	var calls, replies [][]byte
	var wantCall, wantReply []string
	// One COMPOUND per operation, so that a mistake is reported against its operation,
	// each with a reply of the same operation's first sample result.
	resFor := map[OpNum]OpRes{}
	for _, r := range res {
		if _, ok := resFor[r.Op()]; !ok {
			resFor[r.Op()] = r
		}
	}
	for _, a := range args {
		r, ok := resFor[a.Op()]
		if !ok {
			r = &StatusRes{OpNum: a.Op()}
		}
		calls = append(calls, encode(&CompoundArgs{Tag: []byte("t"), MinorVersion: 1, Ops: []OpArgs{&SequenceArgs{SessionID: testSession}, a}}))
		replies = append(replies, encode(&CompoundRes{Status: r.Result(), Tag: []byte("t"), Results: []OpRes{&SequenceRes{SessionID: testSession}, r}}))
		wantCall = append(wantCall, "53,"+itoa(uint32(a.Op())))
		wantReply = append(wantReply, "53,"+itoa(uint32(r.Op())))
	}
	var f tcpFlow
	f.seq = [2]uint32{1000, 5000}
	var packets [][]byte
	for i := range calls {
		xid := uint32(0x1000 + i)
		packets = append(packets, f.packet(0, rpcCall(xid, calls[i])), f.packet(1, rpcReply(xid, replies[i])))
	}
	// The back channel: the server calls CB_COMPOUND at the program number the client
	// gave in CREATE_SESSION (0x40000000), and the client replies.
	cbArgs, cbRes := sampleCBArgs(), sampleCBRes()
	var cbCall []byte
	for _, w := range []uint32{0x9000, 0, 2, 0x40000000, CBVersion, CBProcCompound, 0, 0, 0, 0} {
		cbCall = xdr.AppendUint32(cbCall, w)
	}
	cbCall = append(cbCall, encode(&cbArgs)...)
	packets = append(packets, f.packet(1, append(xdr.AppendUint32(nil, 0x80000000|uint32(len(cbCall))), cbCall...)),
		f.packet(0, rpcReply(0x9000, encode(&cbRes))))
	path := filepath.Join(t.TempDir(), "nfs4.pcap")
	if dir := os.Getenv("NFS4_PCAP_DIR"); dir != "" {
		path = filepath.Join(dir, "nfs4.pcap")
	}
	if err := writePcap(path, packets); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, "-n", "-r", path, "-d", "tcp.port==2049,rpc", "-T", "fields",
		"-E", "separator=;", "-e", "frame.number", "-e", "nfs.ops.count", "-e", "nfs.opcode", "-e", "_ws.malformed",
		"-e", "_ws.expert.severity", "-e", "nfs.cb.operation")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(packets) {
		t.Fatalf("tshark printed %d lines for %d packets:\n%s", len(lines), len(packets), out)
	}
	for i, line := range lines {
		fields := strings.Split(line, ";")
		if len(fields) != 6 {
			t.Fatalf("line %q", line)
		}
		if i >= 2*len(calls) { // the callback
			want := map[int]string{2 * len(calls): "11,4", 2*len(calls) + 1: "11,4,10044"}[i]
			if fields[5] != want || fields[3] != "" || strings.Contains(fields[4], "8388608") {
				t.Errorf("CB_COMPOUND frame %d: tshark saw callback operations %q (want %q): %s", i+1, fields[5], want, line)
			}
			continue
		}
		want, what := wantCall[i/2], args[i/2].Op().String()+" call"
		if i%2 == 1 {
			want, what = wantReply[i/2], args[i/2].Op().String()+" reply"
		}
		// The opcodes of the two operations come first; a bitmap of operations
		// (EXCHANGE_ID's state protection) adds its own after them.
		if fields[1] != "2" || (fields[2] != want && !strings.HasPrefix(fields[2], want+",")) || fields[3] != "" {
			t.Errorf("%s: tshark saw %s operations %q (want %q), malformed %q", what, fields[1], fields[2], want, fields[3])
		}
		// Expert severities: 8388608 is an error (a malformed or undissectable item).
		if strings.Contains(fields[4], "8388608") {
			t.Errorf("%s: tshark reports an error: %s", what, line)
		}
	}

	// Values, as Wireshark prints them, of the first sample of some operations.
	type expect struct{ call, reply []string }
	want := map[OpNum]expect{
		OpExchangeID: {call: []string{"EXCHGID4_FLAG_BIND_PRINC_STATEID: Set", "EXCHGID4_FLAG_SUPP_MOVED_REFER: Set",
			"eia_state_protect: SP4_NONE", "nii_domain): kernel.org", "nii_name): Linux 6.8"},
			reply: []string{"EXCHGID4_FLAG_CONFIRMED_R: Set", "EXCHGID4_FLAG_USE_NON_PNFS: Set", "clientid: 0x1122334455667788"}},
		OpCreateSession: {call: []string{"clientid: 0x1122334455667788", "CREATE_SESSION4_FLAG_CONN_BACK_CHAN: Set",
			"max resp size cached: 4096", "max ops: 16", "max reqs: 64", "RDMA chan attrs: 4", "cb_program: 0x40000000",
			"machine name: client"},
			reply: []string{"csr_flags: 0x00000002", "max reqs: 64"}},
		OpSequence: {call: []string{"seqid: 0x00000011", "slot id: 3", "high slot id: 9", "cache this?: Yes"},
			reply: []string{"target high slot id: 63", "SEQ4_STATUS_CB_PATH_DOWN: Set"}},
		OpOpen: {call: []string{"OPEN4_SHARE_ACCESS_BOTH", "OPEN4_SHARE_ACCESS_WANT_NO_DELEG", "clientid: 0x0000000000000005",
			"OPEN4_NOCREATE", "CLAIM_NULL"},
			reply: []string{"StateID seqid: 3", "changeid (after): 2", "locktype posix: True", "reco_attr: Mode (33)", "OPEN_DELEGATE_NONE"}},
		OpLock: {call: []string{"locktype: WRITE_LT (2)", "length: 18446744073709551615", "new lock owner?: Yes",
			"StateID Other: 0102030405060708090a0b0c"}},
		OpGetattr: {reply: []string{"size: 12345", "fileid: 99", "fattr4_owner: 1000", "fattr4_owner_group: 100",
			"space_used: 16384", "nseconds: 999999999"}},
		OpRead:  {call: []string{"offset: 1099511627776", "count: 1048576"}, reply: []string{"eof: 1", "Read length: 5"}},
		OpWrite: {call: []string{"offset: 4096", "FILE_SYNC4", "Write length: 12"}},
	}
	text, err := exec.Command(tshark, "-n", "-r", path, "-d", "tcp.port==2049,rpc", "-O", "nfs").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	frames := strings.Split(string(text), "\nFrame ")
	if len(frames) != len(packets) {
		t.Fatalf("%d frames in tshark's text, want %d", len(frames), len(packets))
	}
	seen := map[OpNum]bool{}
	for i, a := range args {
		e, ok := want[a.Op()]
		if !ok || seen[a.Op()] {
			continue
		}
		seen[a.Op()] = true
		for _, s := range e.call {
			if !strings.Contains(frames[2*i], s) {
				t.Errorf("%v call: tshark does not show %q", a.Op(), s)
			}
		}
		for _, s := range e.reply {
			if !strings.Contains(frames[2*i+1], s) {
				t.Errorf("%v reply: tshark does not show %q", a.Op(), s)
			}
		}
	}
	for op := range want {
		if !seen[op] && op != OpSequence {
			t.Errorf("no sample for %v", op)
		}
	}
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
