package soft

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

func TestSendRecv(t *testing.T) {
	checkGoroutines(t)
	var srvRecv []byte
	var srvMR verbs.MR
	cli, srv := connectPair(t, pairConfig{
		clientPD: []byte("hello from client"),
		serverPD: []byte("hello from server"),
		beforeAccept: func(e *endpoint) {
			// Server posts its receive before accepting.
			srvRecv = make([]byte, 4096)
			srvMR = e.reg(t, srvRecv, verbs.AccessLocalWrite)
			if err := e.qp.PostRecv(&verbs.RecvWR{ID: 7, SGL: []verbs.SGE{{MR: srvMR, Length: 4096}}}); err != nil {
				t.Fatal(err)
			}
		},
	})
	msg := []byte("ping over iWARP")
	cmr := cli.reg(t, append([]byte(nil), msg...), 0)
	if err := cli.qp.PostSend(&verbs.SendWR{ID: 1, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Length: len(msg)}}}); err != nil {
		t.Fatal(err)
	}
	cli.expect(t, 1, verbs.OpcodeSend, verbs.StatusSuccess)
	wc := srv.expect(t, 7, verbs.OpcodeRecv, verbs.StatusSuccess)
	if wc.ByteLen != len(msg) || !bytes.Equal(srvRecv[:wc.ByteLen], msg) {
		t.Fatalf("received %q (%d bytes), want %q", srvRecv[:wc.ByteLen], wc.ByteLen, msg)
	}
	if wc.Flags != 0 {
		t.Errorf("flags = %v, want 0", wc.Flags)
	}
	// And back: server replies with Send with SE.
	crecv := make([]byte, 64)
	crmr := cli.reg(t, crecv, verbs.AccessLocalWrite)
	if err := cli.qp.PostRecv(&verbs.RecvWR{ID: 9, SGL: []verbs.SGE{{MR: crmr, Length: 64}}}); err != nil {
		t.Fatal(err)
	}
	reply := []byte("pong")
	smr := srv.reg(t, append([]byte(nil), reply...), 0)
	if err := srv.qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled | verbs.Solicited, SGL: []verbs.SGE{{MR: smr, Length: 4}}}); err != nil {
		t.Fatal(err)
	}
	srv.expect(t, 2, verbs.OpcodeSend, verbs.StatusSuccess)
	wc = cli.expect(t, 9, verbs.OpcodeRecv, verbs.StatusSuccess)
	if !bytes.Equal(crecv[:wc.ByteLen], reply) || wc.Flags != verbs.SolicitedEvent {
		t.Fatalf("client received %q flags %v", crecv[:wc.ByteLen], wc.Flags)
	}
}

// TestTransferSizes moves odd sizes across FPDU boundaries with a small
// maximum FPDU, by Send, RDMA Write and RDMA Read, with CRC on and off.
func TestTransferSizes(t *testing.T) {
	sizes := []int{0, 1, 3, 4095, 65537, 1<<20 + 5}
	for _, crc := range []bool{false, true} {
		t.Run(fmt.Sprintf("crc=%v", crc), func(t *testing.T) {
			checkGoroutines(t)
			cfg := Config{MaxFPDU: 200, CRC: crc}
			cli, srv := connectPair(t, pairConfig{client: cfg, server: Config{MaxFPDU: 1000}})
			max := sizes[len(sizes)-1]
			src := make([]byte, max)
			fillPattern(src, 1)
			srcMR := cli.reg(t, src, 0)
			dst := make([]byte, max+8)
			dstMR := srv.reg(t, dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
			back := make([]byte, max)
			backMR := cli.reg(t, back, verbs.AccessLocalWrite)
			for i, n := range sizes {
				clear(dst)
				// Send/Recv, split over two receive SGEs.
				half := (n + 1) / 2
				if err := srv.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: dstMR, Length: half}, {MR: dstMR, Offset: half, Length: max + 8 - half}}}); err != nil {
					t.Fatal(err)
				}
				if err := cli.qp.PostSend(&verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, SGL: []verbs.SGE{{MR: srcMR, Length: n}}}); err != nil {
					t.Fatal(err)
				}
				wc := srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
				if wc.ByteLen != n || !bytes.Equal(dst[:n], src[:n]) {
					t.Fatalf("Send %d: got %d bytes, mismatch=%v", n, wc.ByteLen, !bytes.Equal(dst[:n], src[:n]))
				}
				// RDMA Write to offset 3 of the server buffer, gathered
				// from two SGEs.
				clear(dst)
				a := n / 3
				wr := verbs.SendWR{ID: 100 + uint64(i), Op: verbs.OpWrite, Flags: verbs.Signaled,
					SGL:        []verbs.SGE{{MR: srcMR, Length: a}, {MR: srcMR, Offset: a, Length: n - a}},
					RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr() + 3}
				if err := cli.qp.PostSend(&wr); err != nil {
					t.Fatal(err)
				}
				cli.expect(t, 100+uint64(i), verbs.OpcodeWrite, verbs.StatusSuccess)
				// RDMA Read it back (the Read is ordered after the Write).
				clear(back)
				rd := verbs.SendWR{ID: 200 + uint64(i), Op: verbs.OpRead, Flags: verbs.Signaled,
					SGL:        []verbs.SGE{{MR: backMR, Length: n}},
					RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr() + 3}
				if err := cli.qp.PostSend(&rd); err != nil {
					t.Fatal(err)
				}
				wc = cli.expect(t, 200+uint64(i), verbs.OpcodeRead, verbs.StatusSuccess)
				if wc.ByteLen != n || !bytes.Equal(back[:n], src[:n]) {
					t.Fatalf("Write+Read %d bytes: read back mismatch", n)
				}
				// A zero-length Send orders the server's view after the
				// placement (RDMA Write is silent at the target).
				if err := srv.qp.PostRecv(&verbs.RecvWR{ID: 300}); err != nil {
					t.Fatal(err)
				}
				if err := cli.qp.PostSend(&verbs.SendWR{ID: 300, Op: verbs.OpSend}); err != nil {
					t.Fatal(err)
				}
				srv.expect(t, 300, verbs.OpcodeRecv, verbs.StatusSuccess)
				if !bytes.Equal(dst[3:3+n], src[:n]) {
					t.Fatalf("Write %d bytes: target mismatch", n)
				}
			}
		})
	}
}

// TestDirectPlacementThenMessages drives the large-FPDU path (default
// MaxFPDU, one MSS): each large payload is read straight into the target
// together with the trailer and what follows it in the stream, here a Send
// posted right behind the RDMA Write and the Read Response, so both must
// come out of the same reads intact, with and without CRC.
func TestDirectPlacementThenMessages(t *testing.T) {
	sizes := []int{rxDirectMin, rxDirectMin + 1, 65537, 200000, 1<<20 + 5}
	for _, crc := range []bool{false, true} {
		t.Run(fmt.Sprintf("crc=%v", crc), func(t *testing.T) {
			checkGoroutines(t)
			cfg := Config{CRC: crc}
			cli, srv := connectPair(t, pairConfig{client: cfg, server: cfg})
			checkWritesAndReads(t, cli, srv, sizes)
		})
	}
}

// checkWritesAndReads has cli RDMA Write each of sizes bytes into srv's memory with a
// Send right behind, then RDMA Read it back while srv sends right behind the Read
// Response, and checks that every payload and message arrives intact.
func checkWritesAndReads(t *testing.T, cli, srv *endpoint, sizes []int) {
	t.Helper()
	max := sizes[len(sizes)-1]
	src := make([]byte, max)
	fillPattern(src, 5)
	srcMR := cli.reg(t, src, 0)
	dst := make([]byte, max)
	dstMR := srv.reg(t, dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	back := make([]byte, max)
	backMR := cli.reg(t, back, verbs.AccessLocalWrite)
	note := make([]byte, 64)
	noteMR := srv.reg(t, note, verbs.AccessLocalWrite)
	cnote := make([]byte, 64)
	cnoteMR := cli.reg(t, cnote, verbs.AccessLocalWrite)
	for i, n := range sizes {
		clear(dst)
		clear(back)
		if err := srv.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: noteMR, Length: len(note)}}}); err != nil {
			t.Fatal(err)
		}
		if err := cli.qp.PostSend(&verbs.SendWR{ID: 100, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: srcMR, Length: n}},
			RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr()}); err != nil {
			t.Fatal(err)
		}
		if err := cli.qp.PostSend(&verbs.SendWR{ID: 101, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: srcMR, Offset: 7, Length: 33}}}); err != nil {
			t.Fatal(err)
		}
		wc := srv.expect(t, uint64(i), verbs.OpcodeRecv, verbs.StatusSuccess)
		if wc.ByteLen != 33 || !bytes.Equal(note[:33], src[7:40]) {
			t.Fatalf("Send behind a %d-byte Write: got %d bytes, mismatch=%v", n, wc.ByteLen, !bytes.Equal(note[:33], src[7:40]))
		}
		if !bytes.Equal(dst[:n], src[:n]) {
			t.Fatalf("Write %d bytes: target mismatch", n)
		}
		// The server reads it back and sends right behind the
		// Read Response (the Read is ordered before the Send).
		if err := cli.qp.PostRecv(&verbs.RecvWR{ID: 300, SGL: []verbs.SGE{{MR: cnoteMR, Length: len(cnote)}}}); err != nil {
			t.Fatal(err)
		}
		if err := cli.qp.PostSend(&verbs.SendWR{ID: 200, Op: verbs.OpRead, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: backMR, Length: n}}, RemoteSTag: dstMR.RKey(), RemoteTO: dstMR.Addr()}); err != nil {
			t.Fatal(err)
		}
		if err := srv.qp.PostSend(&verbs.SendWR{ID: 301, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: dstMR, Offset: 1, Length: 20}}}); err != nil {
			t.Fatal(err)
		}
		got := map[verbs.Opcode]verbs.Completion{}
		for len(got) < 2 {
			wc := cli.wait(t)
			got[wc.Opcode] = wc
		}
		if wc := got[verbs.OpcodeRead]; wc.ID != 200 || wc.Status != verbs.StatusSuccess || !bytes.Equal(back[:n], src[:n]) {
			t.Fatalf("Read %d bytes: %+v, mismatch=%v", n, wc, !bytes.Equal(back[:n], src[:n]))
		}
		if wc := got[verbs.OpcodeRecv]; wc.ID != 300 || wc.Status != verbs.StatusSuccess || wc.ByteLen != 20 || !bytes.Equal(cnote[:20], src[1:21]) {
			t.Fatalf("Send behind a %d-byte Read Response: %+v", n, wc)
		}
	}
}
