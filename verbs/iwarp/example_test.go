package iwarp_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// An initiator builds an enhanced (RFC 6581) MPA Request like the one the
// Linux NFS client sends over siw: IRD 128, ORD 0, no CRC, and 8 bytes of
// ULP private data.
func ExampleMPAFrame_Append() {
	req := iwarp.MPAFrame{
		Kind:        iwarp.MPARequest,
		Flags:       iwarp.FlagEnhanced,
		Revision:    iwarp.MPARevision2,
		IRD:         128,
		ORD:         0,
		PrivateData: []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03},
	}
	b, err := req.Append(nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n% x\n", b[:16], b[16:])
	// Output:
	// "MPA ID Req Frame"
	// 10 02 00 0c 00 80 00 00 f6 ab 0e 18 01 01 03 03
}

// A responder reads exactly one MPA Request from the stream (never more:
// siw must not see bytes read ahead) and rejects what it cannot serve.
func ExampleReadMPAFrame() {
	conn := bytes.NewReader([]byte("MPA ID Req Frame\x50\x02\x00\x04\x00\x10\x00\x00"))
	buf := make([]byte, iwarp.MaxMPAFrameLen)
	req, err := iwarp.ReadMPAFrame(conn, buf, iwarp.MPARequest)
	var pe *iwarp.ProtocolError
	if errors.As(err, &pe) {
		fmt.Println("answer with Terminate", pe.Code)
		return
	}
	if err != nil {
		panic(err)
	}
	fmt.Printf("rev %d enhanced %v crc %v IRD %d ORD %d\n", req.Revision, req.Enhanced(), req.CRC(), req.IRD, req.ORD)
	// Output: rev 2 enhanced true crc true IRD 16 ORD 0
}

// Sending one RDMA Write segment without copying the payload: header and
// trailer are small scratch buffers, the payload goes out as is.
func ExampleAppendFPDUHeader() {
	payload := []byte("registered memory")
	h := iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: 0x1234_5601, TO: 0x2000}

	var hdrBuf [iwarp.UntaggedHeaderLen]byte
	var trBuf [8]byte
	hdr, err := iwarp.AppendFPDUHeader(hdrBuf[:0], &h, len(payload))
	if err != nil {
		panic(err)
	}
	crc := iwarp.UpdateCRC(iwarp.UpdateCRC(0, hdr), payload)
	trailer := iwarp.AppendTrailer(trBuf[:0], len(hdr)-iwarp.MPALenFieldLen+len(payload), crc, true)

	var wire bytes.Buffer // a net.Conn in real use: writev
	bufs := net.Buffers{hdr, payload, trailer}
	n, _ := bufs.WriteTo(&wire)
	fmt.Println(n, "bytes on the wire")

	var f iwarp.FPDU
	if _, err := iwarp.DecodeFPDU(wire.Bytes(), &f, true); err != nil {
		panic(err)
	}
	fmt.Printf("%v STag %#x TO %#x: %s\n", f.Header.Opcode, f.Header.STag, f.Header.TO, f.Payload)
	// Output:
	// 40 bytes on the wire
	// RDMA Write STag 0x12345601 TO 0x2000: registered memory
}

// Receiving: read the header, place the payload straight into its
// destination while folding it into the CRC, then check the trailer.
func ExampleReadFPDUHeader() {
	wire, _ := iwarp.AppendFPDU(nil, &iwarp.Header{Opcode: iwarp.OpSend, Last: true, MSN: 1}, []byte("hello"), true)
	conn := bytes.NewReader(wire)

	var hbuf [iwarp.UntaggedHeaderLen]byte
	var h iwarp.Header
	hl, pl, err := iwarp.ReadFPDUHeader(conn, hbuf[:], &h)
	if err != nil {
		panic(err) // a *ProtocolError: send pe.Terminate() and close
	}
	crc := iwarp.UpdateCRC(0, hbuf[:hl])
	dst := make([]byte, pl) // the posted receive buffer
	if _, err := io.ReadFull(conn, dst); err != nil {
		panic(err)
	}
	crc = iwarp.UpdateCRC(crc, dst)
	ulpdu := hl - iwarp.MPALenFieldLen + pl
	trailer := make([]byte, iwarp.TrailerLen(ulpdu))
	if _, err := io.ReadFull(conn, trailer); err != nil {
		panic(err)
	}
	if err := iwarp.CheckTrailer(trailer, ulpdu, crc, true); err != nil {
		panic(err)
	}
	fmt.Printf("%v MSN %d: %s\n", h.Opcode, h.MSN, dst)
	// Output: Send MSN 1: hello
}

// A protocol violation converts directly into the Terminate to send.
func ExampleProtocolError_Terminate() {
	// A Send addressed to queue number 5.
	bad, _ := iwarp.AppendFPDU(nil, &iwarp.Header{Opcode: iwarp.OpSend, Last: true, MSN: 1}, nil, false)
	bad[11] = 5 // QN field
	var f iwarp.FPDU
	_, err := iwarp.DecodeFPDU(bad, &f, false)
	var pe *iwarp.ProtocolError
	if !errors.As(err, &pe) {
		panic(err)
	}
	term := pe.Terminate()
	wire, _ := iwarp.AppendTerminateFPDU(nil, &term, 1, false)
	fmt.Println(err)
	fmt.Printf("Terminate body: % x\n", wire[20:24])
	// Output:
	// iwarp: invalid DDP queue number: QN = 5 (Terminate 1/2/0x01 (DDP untagged buffer: invalid QN))
	// Terminate body: 12 01 c0 00
}

// Terminates from Linux siw have the Layer and EType nibbles swapped; the
// decoder recognises them.
func ExampleTerminate_Decode() {
	var t iwarp.Terminate
	if err := t.Decode([]byte{0x02, 0x02, 0x00, 0x00}); err != nil {
		panic(err)
	}
	fmt.Println(t.Code, "in", t.Order, "order")
	// Output: 2/0/0x02 (MPA: CRC error) in siw (nibble-swapped) order
}

// MaxPayload sizes segments so that each FPDU fits in one TCP segment.
func ExampleMaxPayload() {
	fmt.Println(iwarp.MaxPayload(1448, true), iwarp.MaxPayload(1448, false))
	// Output: 1428 1424
}
