package soft

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

func mpaReplySeeds() map[string][]byte {
	rep := func(f iwarp.MPAFrame) []byte {
		f.Kind = iwarp.MPAReply
		b, err := f.Append(nil)
		if err != nil {
			panic(err)
		}
		return b
	}
	enh := iwarp.FlagEnhanced
	markers := rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 1, ORD: 1})
	markers[16] |= byte(iwarp.FlagMarkers)
	badKey := rep(iwarp.MPAFrame{Revision: 2, Flags: enh})
	badKey[0] = 'X'
	return map[string][]byte{
		"accept":             rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 4, ORD: 4, PrivateData: []byte("pd")}),
		"accept-crc":         rep(iwarp.MPAFrame{Revision: 2, Flags: enh | iwarp.FlagCRC, IRD: 4, ORD: 4}),
		"accept-then-fpdu":   append(rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 4, ORD: 4}), fuzzFPDU(false, iwarp.Header{Opcode: iwarp.OpSend, Last: true, MSN: 1}, []byte("x"))...),
		"reject":             rep(iwarp.MPAFrame{Revision: 2, Flags: enh | iwarp.FlagReject, PrivateData: []byte("no")}),
		"rev1":               rep(iwarp.MPAFrame{Revision: 1}),
		"not-enhanced":       rep(iwarp.MPAFrame{Revision: 2}),
		"ord-too-big":        rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 4, ORD: 1000}),
		"ird-zero":           rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 0, ORD: 0}),
		"p2p-write":          rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 1, ORD: 1, PeerToPeer: true, RTR: iwarp.RTRWrite}),
		"p2p-read":           rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 1, ORD: 1, PeerToPeer: true, RTR: iwarp.RTRRead}),
		"p2p-send-only":      rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 1, ORD: 1, PeerToPeer: true, RTR: iwarp.RTRSend}),
		"markers":            markers,
		"bad-key":            badKey,
		"truncated":          rep(iwarp.MPAFrame{Revision: 2, Flags: enh, IRD: 4, ORD: 4, PrivateData: []byte("private")})[:25],
		"pd-length-too-long": append([]byte("MPA ID Rep Frame"), 0x10, 2, 0x02, 0x00),
	}
}

// FuzzDialReply answers Dial's MPA Request with arbitrary bytes. Dial must
// return (success or a clear error) without panicking, hanging or leaking;
// on success the QP is connected and closes cleanly. The initiator offers
// P2P with RDMA Write RTR when p2p is set.
func FuzzDialReply(f *testing.F) {
	for _, b := range mpaReplySeeds() {
		f.Add(false, b)
		f.Add(true, b)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer ln.Close()
	f.Fuzz(func(t *testing.T, p2p bool, reply []byte) {
		cfg := Config{SiwKick: -1}
		if p2p {
			cfg.P2P = RTRWrite
		}
		dev := New(cfg)
		pd, _ := dev.AllocPD()
		cq, _ := dev.CreateCQ(8)
		qp, _ := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 2, MaxRecvWR: 2})
		served := make(chan struct{})
		go func() {
			defer close(served)
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			var buf [iwarp.MaxMPAFrameLen]byte
			if _, err := iwarp.ReadMPAFrame(c, buf[:], iwarp.MPARequest); err != nil {
				return
			}
			c.Write(reply)
			if tc, ok := c.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			c.Read(buf[:]) // until the provider closes
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := dev.Dial(ctx, ln.Addr().String(), qp, verbs.ConnParams{IRD: 4, ORD: 4})
		if err == nil && qp.State() != verbs.StateRTS && qp.State() != verbs.StateError {
			t.Fatalf("Dial succeeded but QP is %v", qp.State())
		}
		if err != nil && qp.State() != verbs.StateInit {
			t.Fatalf("Dial failed (%v) but QP is %v", err, qp.State())
		}
		qp.Close()
		<-served
		cq.Close()
	})
}

// TestWriteMPAFuzzCorpus regenerates testdata/fuzz/FuzzDialReply when
// SOFT_WRITE_CORPUS=1.
func TestWriteMPAFuzzCorpus(t *testing.T) {
	if os.Getenv("SOFT_WRITE_CORPUS") != "1" {
		t.Skip("set SOFT_WRITE_CORPUS=1 to regenerate the corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDialReply")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range mpaReplySeeds() {
		for _, p2p := range []bool{false, true} {
			body := "go test fuzz v1\nbool(" + strconv.FormatBool(p2p) + ")\n[]byte(" + strconv.Quote(string(b)) + ")\n"
			n := name
			if p2p {
				n += "-p2p"
			}
			if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
