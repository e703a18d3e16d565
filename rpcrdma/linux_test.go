package rpcrdma

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// Transport headers sent by Linux (xprtrdma client, svcrdma server) over siw, transcribed
// from the lab captures in ../shared/lab/samples (Send payloads, after the 20-byte
// DDP/RDMAP untagged header):
//
//   - xprtrdma-siw-client-to-host.bin: FPDU at byte 0x20, payload at 0x34.
//   - svcrdma-siw-probe/probe-fpdus-received.bin: knfsd's replies to our NULL calls.
//   - nfs-v3-v4.2-siw-loopback.txt: an NFSv3 and an NFSv4.2 mount over siw loopback;
//     the payload dumps there stop after 160-320 bytes, which always covers the header.
type linuxVector struct {
	name   string
	hex    string // payload as captured (header, then the start of the RPC message)
	hdrLen int
	h      Header
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var linuxVectors = []linuxVector{
	{
		// xprtrdma NULL call (NFSv4 program, proc 0) on a fresh connection.
		name: "xprtrdma NULL call",
		hex: "66571539 00000001 00000080 00000000" + // xid, vers 1, credits 128 (re_max_requests), RDMA_MSG
			"00000000 00000000 00000000" + // empty read list, write list, reply chunk
			"66571539 00000000 00000002 000186a3 00000004 00000000" + // RPC: xid, CALL, rpcvers 2, prog 100003, vers 4, proc 0
			"00000000 00000000 00000000 00000000", // AUTH_NONE cred and verf
		hdrLen: 28,
		h:      Header{XID: 0x66571539, Vers: 1, Credits: 128, Proc: ProcMsg},
	},
	{
		// knfsd's reply to a NULL call (svcrdma-siw-probe): credits = sc_fc_credits = 64.
		name: "svcrdma NULL reply",
		hex: "1a2b3c00 00000001 00000040 00000000 00000000 00000000 00000000" +
			"1a2b3c00 00000001 00000000 00000000 00000000 00000000", // RPC REPLY, accepted, SUCCESS
		hdrLen: 28,
		h:      Header{XID: 0x1a2b3c00, Vers: 1, Credits: 64, Proc: ProcMsg},
	},
	{
		// NFSv3 WRITE of 128 KiB: one read chunk at position 108 (the byte after the
		// opaque's length word), a single segment, no XDR pad (length 131072 is aligned).
		name: "xprtrdma NFSv3 WRITE call, read chunk",
		hex: "e1fdabd8 00000001 00000080 00000000" +
			"00000001 0000006c 7e64f901 00020000 e1fdabd8 84acd000" + // present, position 108, handle, length 131072, offset (xid<<32 | addr)
			"00000000" + // read list ends
			"00000000 00000000" + // write list, reply chunk: none
			"e1fdabd8 00000000 00000002 000186a3 00000003 00000007", // RPC CALL NFSv3 proc 7 (WRITE)
		hdrLen: 52,
		h: Header{XID: 0xe1fdabd8, Vers: 1, Credits: 128, Proc: ProcMsg,
			ReadList: []chunks.ReadSegment{rseg(108, 0x7e64f901, 131072, 0xe1fdabd8_84acd000)}},
	},
	{
		// NFSv3 READ of 128 KiB: one write chunk of one segment.
		name: "xprtrdma NFSv3 READ call, write chunk",
		hex: "e8fdabd8 00000001 00000080 00000000" +
			"00000000" + // read list: none
			"00000001 00000001 ba6e7601 00020000 e8fdabd8 84704000" + // write chunk: 1 segment of 131072
			"00000000" + // write list ends
			"00000000" + // reply chunk: none
			"e8fdabd8 00000000 00000002 000186a3 00000003 00000006", // RPC CALL NFSv3 proc 6 (READ)
		hdrLen: 52,
		h: Header{XID: 0xe8fdabd8, Vers: 1, Credits: 128, Proc: ProcMsg,
			WriteList: []chunks.WriteChunk{{seg(0xba6e7601, 131072, 0xe8fdabd8_84704000)}}},
	},
	{
		// knfsd's answer: the write chunk echoed with the length actually written.
		name: "svcrdma NFSv3 READ reply, write list",
		hex: "e8fdabd8 00000001 00000040 00000000" +
			"00000000" +
			"00000001 00000001 ba6e7601 00020000 e8fdabd8 84704000" +
			"00000000 00000000" +
			"e8fdabd8 00000001 00000000 00000000 00000000 00000000", // RPC REPLY accepted SUCCESS
		hdrLen: 52,
		h: Header{XID: 0xe8fdabd8, Vers: 1, Credits: 64, Proc: ProcMsg,
			WriteList: []chunks.WriteChunk{{seg(0xba6e7601, 131072, 0xe8fdabd8_84704000)}}},
	},
	{
		// NFSv4.2 READ (compound) with a 4096-byte write chunk, and the reply reporting 16
		// bytes written (a short file).
		name: "xprtrdma NFSv4.2 READ call, write chunk",
		hex: "c2bc154f 00000001 00000080 00000000 00000000" +
			"00000001 00000001 9bd9c903 00001000 c2bc154f 85711000 00000000 00000000" +
			"c2bc154f 00000000 00000002 000186a3 00000004 00000001", // RPC CALL NFSv4 COMPOUND
		hdrLen: 52,
		h: Header{XID: 0xc2bc154f, Vers: 1, Credits: 128, Proc: ProcMsg,
			WriteList: []chunks.WriteChunk{{seg(0x9bd9c903, 4096, 0xc2bc154f_85711000)}}},
	},
	{
		name: "svcrdma NFSv4.2 READ reply, 16 bytes written",
		hex: "c2bc154f 00000001 00000040 00000000 00000000" +
			"00000001 00000001 9bd9c903 00000010 c2bc154f 85711000 00000000 00000000" +
			"c2bc154f 00000001 00000000 00000000 00000000 00000000",
		hdrLen: 52,
		h: Header{XID: 0xc2bc154f, Vers: 1, Credits: 64, Proc: ProcMsg,
			WriteList: []chunks.WriteChunk{{seg(0x9bd9c903, 16, 0xc2bc154f_85711000)}}},
	},
	{
		// NFSv3 READDIR-style call with a reply chunk of three segments: head (124 bytes,
		// page-offset 0x87c), pages (64 KiB) and tail (4 bytes).
		name: "xprtrdma call with 3-segment reply chunk",
		hex: "eefdabd8 00000001 00000080 00000000 00000000 00000000" +
			"00000001 00000003" + // reply chunk present, 3 segments
			"ba6e7603 0000007c eefdabd8 8538b800" +
			"54e8ca01 00010000 eefdabd8 829b4000" +
			"32d7fe01 00000004 eefdabd8 8538b87c" +
			"eefdabd8 00000000 00000002 000186a3", // RPC CALL NFSv3
		hdrLen: 80,
		h: Header{XID: 0xeefdabd8, Vers: 1, Credits: 128, Proc: ProcMsg,
			ReplyChunk: chunks.WriteChunk{
				seg(0xba6e7603, 0x7c, 0xeefdabd8_8538b800),
				seg(0x54e8ca01, 0x10000, 0xeefdabd8_829b4000),
				seg(0x32d7fe01, 4, 0xeefdabd8_8538b87c),
			}},
	},
	{
		// knfsd's RDMA_NOMSG answer: the reply went into the reply chunk; lengths are the
		// bytes written per segment (124 + 472 = 596), the tail segment unused.
		name: "svcrdma RDMA_NOMSG reply via reply chunk",
		hex: "eefdabd8 00000001 00000040 00000001 00000000 00000000" +
			"00000001 00000003" +
			"ba6e7603 0000007c eefdabd8 8538b800" +
			"54e8ca01 000001d8 eefdabd8 829b4000" +
			"32d7fe01 00000000 eefdabd8 8538b87c",
		hdrLen: 80,
		h: Header{XID: 0xeefdabd8, Vers: 1, Credits: 64, Proc: ProcNoMsg,
			ReplyChunk: chunks.WriteChunk{
				seg(0xba6e7603, 0x7c, 0xeefdabd8_8538b800),
				seg(0x54e8ca01, 0x1d8, 0xeefdabd8_829b4000),
				seg(0x32d7fe01, 0, 0xeefdabd8_8538b87c),
			}},
	},
}

func TestLinuxVectors(t *testing.T) {
	var h Header
	for _, v := range linuxVectors {
		msg := unhex(t, v.hex)
		n, err := h.Decode(msg)
		if err != nil {
			t.Errorf("%s: %v", v.name, err)
			continue
		}
		if n != v.hdrLen {
			t.Errorf("%s: header length %d, want %d", v.name, n, v.hdrLen)
		}
		if !reflect.DeepEqual(normalize(h), normalize(v.h)) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", v.name, h, v.h)
		}
		// The RPC message behind an RDMA_MSG header starts with the same XID.
		if h.Proc == ProcMsg && string(msg[n:n+4]) != string(msg[:4]) {
			t.Errorf("%s: RPC XID mismatch at n", v.name)
		}
		// Our encoder produces Linux's bytes.
		enc, err := v.h.Append(nil)
		if err != nil || string(enc) != string(msg[:v.hdrLen]) {
			t.Errorf("%s: encode\n got %x\nwant %x (%v)", v.name, enc, msg[:v.hdrLen], err)
		}
	}
}

// TestLinuxChunkRules checks the chunks helpers against what Linux put on the wire.
func TestLinuxChunkRules(t *testing.T) {
	find := func(name string) Header {
		for _, v := range linuxVectors {
			if v.name == name {
				return v.h
			}
		}
		t.Fatalf("no vector %q", name)
		return Header{}
	}
	// The reply chunk knfsd reports is chunks.Fill of the offered chunk with the reply size.
	offered := find("xprtrdma call with 3-segment reply chunk").ReplyChunk
	reported := find("svcrdma RDMA_NOMSG reply via reply chunk").ReplyChunk
	got, err := chunks.Fill(nil, offered, reported.Length())
	if err != nil || !reflect.DeepEqual(got, reported) {
		t.Errorf("Fill(offered, %d) = %v, Linux sent %v (%v)", reported.Length(), got, reported, err)
	}
	// Likewise for the 16 bytes written into a 4096-byte write chunk.
	w := find("xprtrdma NFSv4.2 READ call, write chunk").WriteList[0]
	r := find("svcrdma NFSv4.2 READ reply, 16 bytes written").WriteList[0]
	if got, _ := chunks.Fill(nil, w, 16); !reflect.DeepEqual(got, r) {
		t.Errorf("Fill write chunk = %v, Linux sent %v", got, r)
	}
	// The WRITE call's read list is one chunk at position 108, unpadded.
	cs, err := chunks.Group(nil, find("xprtrdma NFSv3 WRITE call, read chunk").ReadList)
	if err != nil || len(cs) != 1 || cs[0].Position != 108 || cs[0].Length() != 131072 {
		t.Errorf("Group = %v, %v", cs, err)
	}
}
