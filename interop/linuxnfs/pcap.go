package linuxnfs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The reading of a packet capture of RPC-over-RDMA over iWARP (MPA, DDP and RDMAP on
// TCP, as Linux siw and verbs/soft speak it), so that the wire judge can count what a
// capture shows with Parse and Tally, independently of the server's own trace and of
// Wireshark's MPA dissector (which needs FPDUs aligned with TCP segments, see
// interop/README.md finding 13).

// Link types of the classic pcap format this reader takes.
const (
	linkEthernet = 1
	linkRawIPv4  = 228
	linkRaw      = 101
	linkCooked   = 113
)

// Limits that keep a hostile or broken capture bounded.
const (
	maxPcapRecord  = 1 << 18 // the largest captured frame (tcpdump's snapshot length)
	maxPendingData = 64 << 20
	maxSendMessage = 1 << 20 // the largest Send message reassembled from its FPDUs
	mpaKeyLen      = 16
	mpaHeaderLen   = 20  // key, flags, revision, private data length
	maxMPAPrivate  = 512 // RFC 5044 §7.1: MPA_MAX_PD
	ddpTaggedLen   = 14  // DDP/RDMAP control, STag, tagged offset
	ddpUntaggedLen = 18  // DDP/RDMAP control, invalidate STag, QN, MSN, MO
)

var (
	mpaReqKey = []byte("MPA ID Req Frame")
	mpaRepKey = []byte("MPA ID Rep Frame")
)

// CaptureStats is what ReadCapture found besides the Send messages it delivered.
type CaptureStats struct {
	Frames      int // pcap records
	Segments    int // TCP segments with data on the port
	Connections int // MPA Request/Reply exchanges seen
	FPDUs       int // FPDUs walked, both directions
	Sends       int // Send messages delivered (reassembled from their FPDUs)
	Terminates  int // RDMAP Terminate messages
}

// flowKey names one direction of a TCP connection.
type flowKey struct {
	src, dst         [4]byte
	srcPort, dstPort uint16
}

// flow is one direction's reassembly: bytes not yet framed, the next sequence
// number expected, out-of-order segments, and the MPA and DDP state.
type flow struct {
	synced  bool
	next    uint32
	buf     []byte
	ahead   map[uint32][]byte
	pending int
	mpaDone bool // the MPA Request or Reply has been read
	msn     uint32
	send    []byte // the Send message being reassembled (MSN msn)
}

// ReadCapture reads a classic pcap file (either byte order, microsecond or nanosecond
// time stamps; Ethernet, Linux cooked or raw IPv4 frames), reassembles the TCP
// connections to or from port, walks their MPA framing and DDP segments, and calls
// deliver with each complete Send message (an RPC-over-RDMA message), fromServer
// telling its direction, in capture order. A connection whose start (SYN) is not in
// the capture is skipped. msg is valid only during the call. Errors name the frame
// and what was wrong.
func ReadCapture(pcap []byte, port uint16, deliver func(fromServer bool, msg []byte)) (CaptureStats, error) {
	var st CaptureStats
	if len(pcap) < 24 {
		return st, fmt.Errorf("pcap: %d bytes, shorter than the 24-byte file header", len(pcap))
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(pcap) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return st, fmt.Errorf("pcap: magic %#x is not a classic pcap file's", binary.LittleEndian.Uint32(pcap))
	}
	link := bo.Uint32(pcap[20:])
	flows := map[flowKey]*flow{}
	for off := 24; off < len(pcap); {
		if len(pcap)-off < 16 {
			return st, fmt.Errorf("pcap: record %d: header cut short at byte %d", st.Frames+1, off)
		}
		n := bo.Uint32(pcap[off+8:])
		if n > maxPcapRecord || int(n) > len(pcap)-off-16 {
			return st, fmt.Errorf("pcap: record %d: %d captured bytes, more than %d or past the end of the file", st.Frames+1, n, maxPcapRecord)
		}
		frame := pcap[off+16 : off+16+int(n)]
		off += 16 + int(n)
		st.Frames++
		if err := st.segment(flows, link, frame, port, deliver); err != nil {
			return st, fmt.Errorf("pcap: frame %d: %w", st.Frames, err)
		}
	}
	return st, nil
}

// segment handles one captured frame.
func (st *CaptureStats) segment(flows map[flowKey]*flow, link uint32, frame []byte, port uint16, deliver func(bool, []byte)) error {
	ip, ok := ipv4Payload(link, frame)
	if !ok || len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 6 {
		return nil // not IPv4 TCP
	}
	ihl := int(ip[0]&15) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if ihl < 20 || total < ihl || total > len(ip) {
		return fmt.Errorf("IPv4 header length %d, total length %d, %d bytes captured", ihl, total, len(ip))
	}
	if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
		return errors.New("an IPv4 fragment (the lab's traffic is never fragmented)")
	}
	tcp := ip[ihl:total]
	if len(tcp) < 20 {
		return fmt.Errorf("TCP header of %d bytes", len(tcp))
	}
	var k flowKey
	copy(k.src[:], ip[12:16])
	copy(k.dst[:], ip[16:20])
	k.srcPort, k.dstPort = binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:])
	if k.srcPort != port && k.dstPort != port {
		return nil
	}
	doff := int(tcp[12]>>4) * 4
	if doff < 20 || doff > len(tcp) {
		return fmt.Errorf("TCP data offset %d in a %d-byte segment", doff, len(tcp))
	}
	seq, syn := binary.BigEndian.Uint32(tcp[4:]), tcp[13]&0x02 != 0
	f := flows[k]
	if syn {
		f = &flow{synced: true, next: seq + 1, ahead: map[uint32][]byte{}}
		flows[k] = f
	}
	data := tcp[doff:]
	if f == nil || len(data) == 0 {
		return nil
	}
	st.Segments++
	if err := f.add(seq, data); err != nil {
		return err
	}
	return st.frames(f, k.srcPort == port, deliver)
}

// ipv4Payload strips the link header.
func ipv4Payload(link uint32, frame []byte) ([]byte, bool) {
	switch link {
	case linkEthernet:
		if len(frame) < 14 {
			return nil, false
		}
		et, p := binary.BigEndian.Uint16(frame[12:]), frame[14:]
		if et == 0x8100 && len(p) >= 4 { // one 802.1Q tag
			et, p = binary.BigEndian.Uint16(p[2:]), p[4:]
		}
		return p, et == 0x0800
	case linkCooked:
		if len(frame) < 16 {
			return nil, false
		}
		return frame[16:], binary.BigEndian.Uint16(frame[14:]) == 0x0800
	case linkRaw, linkRawIPv4:
		return frame, true
	}
	return nil, false
}

// add puts a segment's data into the flow in sequence order: retransmitted bytes are
// dropped, segments ahead of a gap wait (bounded) until it is filled.
func (f *flow) add(seq uint32, data []byte) error {
	// d is the segment's distance ahead of the next byte expected, in int64 so that
	// negating it cannot overflow.
	if d := int64(int32(seq - f.next)); d > 0 {
		if _, dup := f.ahead[seq]; !dup {
			if f.pending += len(data); f.pending > maxPendingData {
				return fmt.Errorf("more than %d bytes wait behind a gap in the TCP stream", maxPendingData)
			}
			f.ahead[seq] = append([]byte(nil), data...)
		}
		return nil
	} else if -d >= int64(len(data)) {
		return nil // all retransmitted
	} else {
		data = data[-d:]
	}
	f.buf = append(f.buf, data...)
	f.next += uint32(len(data))
	for len(f.ahead) > 0 {
		progressed := false
		for s, b := range f.ahead {
			d := int64(int32(s - f.next))
			if d > 0 {
				continue
			}
			delete(f.ahead, s)
			f.pending -= len(b)
			if -d < int64(len(b)) {
				f.buf = append(f.buf, b[-d:]...)
				f.next += uint32(int64(len(b)) + d)
			}
			progressed = true
		}
		if !progressed {
			break
		}
	}
	return nil
}

// frames consumes the complete MPA frames at the start of f.buf.
func (st *CaptureStats) frames(f *flow, fromServer bool, deliver func(bool, []byte)) error {
	b := f.buf
	defer func() { f.buf = append(f.buf[:0], b...) }()
	if !f.mpaDone {
		if len(b) < mpaHeaderLen {
			return nil
		}
		key := b[:mpaKeyLen]
		if string(key) != string(mpaReqKey) && string(key) != string(mpaRepKey) {
			return fmt.Errorf("the connection does not start with an MPA Request or Reply (% x)", key)
		}
		if b[16]&0x80 != 0 {
			return errors.New("MPA markers requested: this reader does not strip markers (Linux siw never uses them)")
		}
		pd := int(binary.BigEndian.Uint16(b[18:]))
		if pd > maxMPAPrivate {
			return fmt.Errorf("MPA private data of %d bytes, more than %d", pd, maxMPAPrivate)
		}
		if len(b) < mpaHeaderLen+pd {
			return nil
		}
		if string(key) == string(mpaReqKey) {
			st.Connections++
		}
		b = b[mpaHeaderLen+pd:]
		f.mpaDone = true
	}
	for len(b) >= 2 {
		ulpdu := int(binary.BigEndian.Uint16(b))
		size := (2+ulpdu+3)&^3 + 4 // length, ULPDU, pad, CRC field (present, zero when CRC is off)
		if len(b) < size {
			return nil
		}
		st.FPDUs++
		if err := st.ddp(f, b[2:2+ulpdu], fromServer, deliver); err != nil {
			return fmt.Errorf("FPDU %d: %w", st.FPDUs, err)
		}
		b = b[size:]
	}
	return nil
}

// ddp reads one DDP segment with its RDMAP header (RFC 5041 §4, RFC 5040 §4) and
// reassembles Sends (untagged, queue 0) into messages.
func (st *CaptureStats) ddp(f *flow, seg []byte, fromServer bool, deliver func(bool, []byte)) error {
	if len(seg) < 2 {
		return fmt.Errorf("DDP segment of %d bytes", len(seg))
	}
	ddpCtl, rdmaCtl := seg[0], seg[1]
	if ddpCtl&3 != 1 || rdmaCtl>>6 != 1 {
		return fmt.Errorf("DDP version %d, RDMAP version %d, want 1 and 1", ddpCtl&3, rdmaCtl>>6)
	}
	tagged, last, op := ddpCtl&0x80 != 0, ddpCtl&0x40 != 0, rdmaCtl&15
	if tagged {
		if len(seg) < ddpTaggedLen {
			return fmt.Errorf("tagged DDP segment of %d bytes", len(seg))
		}
		return nil // RDMA Write or Read Response: the data of a chunk
	}
	if len(seg) < ddpUntaggedLen {
		return fmt.Errorf("untagged DDP segment of %d bytes", len(seg))
	}
	qn, msn, mo := binary.BigEndian.Uint32(seg[6:]), binary.BigEndian.Uint32(seg[10:]), binary.BigEndian.Uint32(seg[14:])
	payload := seg[ddpUntaggedLen:]
	switch op {
	case 3, 4, 5, 6: // Send, with Invalidate, with Solicited Event, with both
	case 7:
		st.Terminates++
		return nil
	default:
		return nil // Read Request (queue 1) and the rest carry no RPC message
	}
	if qn != 0 {
		return fmt.Errorf("a Send on DDP queue %d, want 0", qn)
	}
	if mo == 0 {
		f.msn, f.send = msn, f.send[:0]
	} else if msn != f.msn || int(mo) != len(f.send) {
		return fmt.Errorf("a Send with MSN %d at offset %d, after MSN %d with %d bytes", msn, mo, f.msn, len(f.send))
	}
	if len(f.send)+len(payload) > maxSendMessage {
		return fmt.Errorf("a Send message of more than %d bytes", maxSendMessage)
	}
	f.send = append(f.send, payload...)
	if last {
		st.Sends++
		deliver(fromServer, f.send)
		f.send = f.send[:0]
	}
	return nil
}
