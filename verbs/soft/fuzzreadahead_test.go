package soft

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// fuzzReadSize is the RDMA Read FuzzReadResponse answers: long enough for
// several large FPDUs, so that the reader places directly and reads ahead.
// fuzzWriteSize is the region the stream's RDMA Writes target.
const fuzzReadSize, fuzzWriteSize = 200000, 65000 + 4096

// fuzzReadStream builds the peer's side of FuzzReadResponse from ops, three
// bytes an op: a kind and a big-endian 16-bit value v.
//
//	0: the next Read Response FPDU, of min(v, what is left) bytes (Last when
//	   it ends the response)
//	1: a Read Response FPDU of v%70000 bytes at a TO v bytes too far
//	2: a Send of v%64 bytes (4 receives are posted)
//	3: v%32 bytes of junk
//	4: an RDMA Write of v%65000 bytes into the fuzzWriteSize-byte region
//	   wstag/wto, at offset v%4096 (well-formed outside the response)
//
// It reports whether the stream is a well-formed answer: kinds 0, 2 and 4
// only, at most 4 Sends, no Write inside the response, and the response
// complete.
func fuzzReadStream(crc bool, stag uint32, to uint64, wstag uint32, wto uint64, src, ops []byte) (stream []byte, wellFormed bool) {
	off, sends, msn := 0, 0, uint32(1)
	wellFormed = true
	for i := 0; i+3 <= len(ops); i += 3 {
		v := int(binary.BigEndian.Uint16(ops[i+1:]))
		switch ops[i] % 5 {
		case 0:
			if off == len(src) {
				continue
			}
			n := min(v, len(src)-off)
			h := iwarp.Header{Opcode: iwarp.OpReadResponse, Last: off+n == len(src), STag: stag, TO: to + uint64(off)}
			stream, _ = iwarp.AppendFPDU(stream, &h, src[off:off+n], crc)
			off += n
		case 1:
			n := v % 70000
			h := iwarp.Header{Opcode: iwarp.OpReadResponse, STag: stag, TO: to + uint64(off+v)}
			stream, _ = iwarp.AppendFPDU(stream, &h, make([]byte, n), crc)
			wellFormed = false
		case 2:
			h := iwarp.Header{Opcode: iwarp.OpSend, Last: true, QN: iwarp.OpSend.QN(), MSN: msn}
			msn++
			stream, _ = iwarp.AppendFPDU(stream, &h, bytes.Repeat([]byte{byte(v)}, v%64), crc)
			if sends++; sends > 4 {
				wellFormed = false
			}
		case 3:
			stream = append(stream, bytes.Repeat([]byte{byte(v >> 8)}, v%32)...)
			wellFormed = false
		case 4:
			n, at := v%65000, v%4096
			h := iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: wstag, TO: wto + uint64(at)}
			stream, _ = iwarp.AppendFPDU(stream, &h, bytes.Repeat([]byte{0x5A}, n), crc)
			if off != 0 && off != len(src) {
				wellFormed = false
			}
		}
	}
	return stream, wellFormed && off == len(src)
}

// FuzzReadResponse answers an RDMA Read over a real TCP connection (so that
// the reader places payloads directly and reads the next FPDU of a Read
// Response ahead into the sink, rawReadStep) with a stream built from ops
// (fuzzReadStream), written in pieces of trickle bytes (0: at once). Whatever
// the stream, nothing past the Read's length is written and the QP ends
// without panicking, hanging or leaking; a well-formed answer completes the
// Read with the source's bytes. RDMA Writes in the stream, placed directly
// too when large, must stay inside their region.
func FuzzReadResponse(f *testing.F) {
	op := func(kind byte, v uint16) []byte { return []byte{kind, byte(v >> 8), byte(v)} }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	full := func(n uint16) []byte {
		var b []byte
		for i := 0; i < fuzzReadSize/int(n)+1; i++ {
			b = append(b, op(0, n)...)
		}
		return b
	}
	f.Add(false, uint16(0), full(65000))
	f.Add(true, uint16(0), full(30000))
	f.Add(false, uint16(4099), full(40000))
	f.Add(false, uint16(0), cat(op(0, 65000), op(0, 30000), op(2, 7), op(0, 30000), full(65000)))
	f.Add(false, uint16(0), cat(op(0, 65000), op(0, 30000), op(0, 20000), full(65000)))
	f.Add(true, uint16(997), cat(op(0, 65000), op(0, 30000), op(1, 8), full(65000)))
	f.Add(false, uint16(0), cat(op(0, 65000), op(0, 30000), op(3, 7), full(65000)))
	f.Add(false, uint16(0), cat(op(0, 65000), op(0, 30000), op(0, 30000)))
	f.Add(false, uint16(0), cat(op(4, 40000), full(65000), op(4, 64000)))
	f.Add(true, uint16(1500), cat(op(0, 65000), op(4, 30000), full(65000)))
	// Runs of one size, read ahead several FPDUs at a time, and a change of
	// size in the middle of one.
	f.Add(false, uint16(0), full(20000))
	f.Add(true, uint16(0), cat(op(0, 20000), op(0, 20000), op(0, 20000), op(0, 20000), op(0, 9000), full(20000)))
	f.Add(false, uint16(0), cat(op(0, 20000), op(0, 20000), op(0, 20000), op(0, 20000), op(0, 31000), full(20000)))
	f.Fuzz(func(t *testing.T, crc bool, trickle uint16, ops []byte) {
		if len(ops) > 300 {
			return // bounded stream: at most 100 ops
		}
		const guard = 4096
		src := make([]byte, fuzzReadSize)
		for i := range src {
			src[i] = byte(i*7 + i>>9)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		peer, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}

		dev := New(Config{})
		pd, _ := dev.AllocPD()
		cq, _ := dev.CreateCQ(64)
		defer cq.Close()
		qpi, _ := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4})
		q := qpi.(*queuePair)
		defer q.Close()
		rmr, _ := pd.RegMR(make([]byte, 256), verbs.AccessLocalWrite)
		for i := 0; i < 4; i++ {
			q.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: rmr, Offset: 64 * i, Length: 64}}})
		}
		sinkBuf := bytes.Repeat([]byte{0xEE}, fuzzReadSize+guard)
		sink, _ := pd.RegMR(sinkBuf, verbs.AccessLocalWrite)
		wbuf := bytes.Repeat([]byte{0xEE}, fuzzWriteSize+guard)
		wmr, _ := pd.RegMR(wbuf[:fuzzWriteSize], verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		q.state = verbs.StateConnecting
		if err := q.start(conn, crc, 4, 4, DefaultMaxFPDU, false, RTRNone); err != nil {
			t.Fatal(err)
		}
		if err := q.PostSend(&verbs.SendWR{ID: 99, Op: verbs.OpRead, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: sink, Length: fuzzReadSize}}, RemoteSTag: 0x1234}); err != nil {
			t.Fatal(err)
		}
		// The response follows the Read Request, as from a real peer.
		p := &rawPeer{t: t, c: peer, crc: crc}
		peer.SetReadDeadline(time.Now().Add(10 * time.Second))
		if f := p.next(); f == nil || f.Header.Opcode != iwarp.OpReadRequest {
			t.Fatalf("peer got %+v, want the Read Request", f)
		}
		drained := make(chan struct{})
		go func() { // a Terminate, if one comes
			defer close(drained)
			buf := make([]byte, 4096)
			for {
				if _, err := peer.Read(buf); err != nil {
					return
				}
			}
		}()
		stream, wellFormed := fuzzReadStream(crc, sink.RKey(), sink.Addr(), wmr.RKey(), wmr.Addr(), src, ops)
		peer.SetWriteDeadline(time.Now().Add(5 * time.Second))
		for len(stream) > 0 {
			n := len(stream)
			if trickle > 0 {
				n = min(n, int(trickle))
			}
			if _, err := peer.Write(stream[:n]); err != nil {
				break // the QP failed and closed its side
			}
			stream = stream[n:]
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if wellFormed {
			for {
				wc, err := verbs.NextCompletion(ctx, cq)
				if err != nil {
					t.Fatalf("no Read completion for a well-formed response: %v", err)
				}
				if wc.ID == 99 {
					if wc.Status != verbs.StatusSuccess || !bytes.Equal(sinkBuf[:fuzzReadSize], src) {
						t.Fatalf("well-formed response: Read %v (%v), sink equal to the source: %v", wc.Status, q.Err(), bytes.Equal(sinkBuf[:fuzzReadSize], src))
					}
					break
				}
			}
		}
		peer.Close()
		select {
		case <-q.Done():
		case <-ctx.Done():
			t.Fatal("QP still running after the stream ended")
		}
		q.Close()
		<-drained
		if !bytes.Equal(sinkBuf[fuzzReadSize:], bytes.Repeat([]byte{0xEE}, guard)) {
			t.Fatal("bytes past the Read's length were written")
		}
		if !bytes.Equal(wbuf[fuzzWriteSize:], bytes.Repeat([]byte{0xEE}, guard)) {
			t.Fatal("bytes past the Write region were written")
		}
	})
}
