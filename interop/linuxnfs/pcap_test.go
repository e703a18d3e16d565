package linuxnfs

import (
	"encoding/binary"
	"strings"
	"testing"
)

// pcapFile builds a little-endian classic pcap of Ethernet frames.
func pcapFile(frames ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0xa1b2c3d4)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = binary.LittleEndian.AppendUint32(b, 262144)
	b = binary.LittleEndian.AppendUint32(b, linkEthernet)
	for _, f := range frames {
		b = append(b, make([]byte, 8)...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// tcpFrame is an Ethernet/IPv4/TCP frame from the client (10.0.2.15:40000) to the
// server (10.0.2.100:20049), or back when toClient.
func tcpFrame(toClient bool, seq uint32, syn bool, data []byte) []byte {
	src, dst, sp, dp := []byte{10, 0, 2, 15}, []byte{10, 0, 2, 100}, uint16(40000), uint16(20049)
	if toClient {
		src, dst, sp, dp = dst, src, dp, sp
	}
	f := make([]byte, 14, 64+len(data))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := []byte{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0}
	binary.BigEndian.PutUint16(ip[2:], uint16(40+len(data)))
	f = append(append(append(f, ip...), src...), dst...)
	tcp := binary.BigEndian.AppendUint16(nil, sp)
	tcp = binary.BigEndian.AppendUint16(tcp, dp)
	tcp = binary.BigEndian.AppendUint32(tcp, seq)
	tcp = append(tcp, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0)
	if syn {
		tcp[13] = 0x02
	}
	return append(append(f, tcp...), data...)
}

// fpdu frames a DDP segment: length, segment, pad, a zero CRC field.
func fpdu(seg []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(seg)))
	b = append(b, seg...)
	return append(b, make([]byte, (-len(b))&3+4)...)
}

// sendSeg is an untagged DDP segment of a Send (queue 0) carrying part of a message.
func sendSeg(msn, mo uint32, last bool, payload []byte) []byte {
	ctl := byte(0x01)
	if last {
		ctl |= 0x40
	}
	h := []byte{ctl, 0x43, 0, 0, 0, 0}
	h = binary.BigEndian.AppendUint32(h, 0)
	h = binary.BigEndian.AppendUint32(h, msn)
	h = binary.BigEndian.AppendUint32(h, mo)
	return append(h, payload...)
}

func mpaFrame(key []byte) []byte {
	return append(append([]byte(nil), key...), 0, 1, 0, 0)
}

// labCapture is a small capture of one connection: the MPA exchange, an NFSv4.1 READ
// call sent in two FPDUs that a TCP segment boundary cuts through (as verbs/soft's
// stream is cut), a retransmitted segment, the reply, and an RDMA Write before it.
func labCapture() []byte {
	call := cat(fpdu(sendSeg(1, 0, false, read4Call[:40])), fpdu(sendSeg(1, 40, true, read4Call[40:])))
	write := fpdu(append([]byte{0x81, 0x40, 0, 0, 0, 9}, make([]byte, 8+100)...))
	reply := fpdu(sendSeg(1, 0, true, readReply))
	cs, ss := uint32(1000), uint32(5000)
	req, rep := mpaFrame(mpaReqKey), mpaFrame(mpaRepKey)
	return pcapFile(
		tcpFrame(false, cs-1, true, nil),
		tcpFrame(true, ss-1, true, nil),
		tcpFrame(false, cs, false, req),
		tcpFrame(true, ss, false, rep),
		tcpFrame(false, cs+20, false, call[:50]),
		tcpFrame(false, cs+20, false, call[:50]), // retransmitted
		tcpFrame(false, cs+70, false, call[50:]),
		tcpFrame(true, ss+20, false, append(write, reply...)),
	)
}

func TestReadCapture(t *testing.T) {
	tl := NewTally(Server)
	var dirs []bool
	st, err := ReadCapture(labCapture(), 20049, func(fromServer bool, msg []byte) {
		dirs = append(dirs, fromServer)
		tl.Record(fromServer, msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Frames != 8 || st.Connections != 1 || st.FPDUs != 4 || st.Sends != 2 || len(dirs) != 2 || dirs[0] || !dirs[1] {
		t.Errorf("stats %+v, directions %v", st, dirs)
	}
	c := tl.Counts()
	if c.Calls != 1 || c.Replies != 1 || c.ReadCalls != 1 || c.ReadWriteChunk != 1 || c.NFS4Ops[NFS4OpRead] != 1 || c.WriteListBytes != 4093 || c.ParseErrors != 0 {
		t.Errorf("counts %v", c)
	}
}

func TestReadCaptureErrors(t *testing.T) {
	good := labCapture()
	for _, tc := range []struct {
		name, want string
		pcap       []byte
	}{
		{"short", "file header", good[:10]},
		{"magic", "magic", append([]byte{1, 2, 3, 4}, good[4:]...)},
		{"record cut", "header cut short", good[:24+8]},
		{"record past the end", "past the end", good[:24+16+4]},
		{"not MPA", "MPA Request", pcapFile(tcpFrame(false, 9, true, nil), tcpFrame(false, 10, false, make([]byte, 24)))},
		{"markers", "markers", pcapFile(tcpFrame(false, 9, true, nil), tcpFrame(false, 10, false, append(append([]byte(nil), mpaReqKey...), 0x80, 1, 0, 0)))},
		{"DDP version", "DDP version", pcapFile(tcpFrame(false, 9, true, nil), tcpFrame(false, 10, false, append(mpaFrame(mpaReqKey), fpdu([]byte{0x42, 0x43, 0})...)))},
		{"Send out of order", "after MSN", pcapFile(tcpFrame(false, 9, true, nil), tcpFrame(false, 10, false, append(mpaFrame(mpaReqKey), fpdu(sendSeg(1, 8, true, []byte{1}))...)))},
	} {
		_, err := ReadCapture(tc.pcap, 20049, func(bool, []byte) {})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// FuzzReadCapture: any bytes give a capture's counts or an error, never a panic, and
// every delivered message fits the bound.
func FuzzReadCapture(f *testing.F) {
	f.Add(labCapture())
	f.Add(labCapture()[:200])
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ReadCapture(b, 20049, func(_ bool, msg []byte) {
			if len(msg) > maxSendMessage {
				t.Fatalf("a %d-byte message", len(msg))
			}
		})
	})
}
