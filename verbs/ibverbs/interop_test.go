//go:build ibverbs && linux && cgo

package ibverbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestInteropPeer is one side of a connection between this provider and
// the software iWARP provider (verbs/soft), run by the interop case
// ibverbs-soft-siw: this provider listens in the lab guest over siw0
// (IBVERBS_PEER_LISTEN=ip:port, with IBVERBS_ADDR), and verbs/soft dials
// from the host (IBVERBS_PEER_DIAL=ip:port). Our two iWARP stacks meet
// through a real kernel's siw.
//
// The exchange: private data both ways; the client Sends its region's
// STag/TO; the server RDMA-Reads it, RDMA-Writes its own pattern into it
// and answers with Send with Invalidate of the client's STag plus its own
// region's STag/TO; the client checks the Write landed and the STag was
// invalidated, RDMA-Reads the server's region, RDMA-Writes it and Sends
// "done"; the server checks the Write landed.
func TestInteropPeer(t *testing.T) {
	listen, dial := os.Getenv("IBVERBS_PEER_LISTEN"), os.Getenv("IBVERBS_PEER_DIAL")
	switch {
	case listen != "":
		peerServer(t, listen)
	case dial != "":
		peerClient(t, dial)
	default:
		t.Skip("interop peer: set IBVERBS_PEER_LISTEN (ibverbs side) or IBVERBS_PEER_DIAL (soft side)")
	}
}

const peerRegion = 256 << 10

func pattern(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*13) ^ seed
	}
}

func encodeRegion(mr verbs.MR) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint32(b, mr.RKey())
	binary.BigEndian.PutUint64(b[4:], mr.Addr())
	binary.BigEndian.PutUint32(b[12:], uint32(len(mr.Buf())))
	return b
}

func decodeRegion(b []byte) (stag uint32, to uint64, n int, err error) {
	if len(b) < 16 {
		return 0, 0, 0, fmt.Errorf("region descriptor of %d bytes, want 16", len(b))
	}
	return binary.BigEndian.Uint32(b), binary.BigEndian.Uint64(b[4:]), int(binary.BigEndian.Uint32(b[12:])), nil
}

type peer struct {
	t  *testing.T
	pd verbs.PD
	cq verbs.CQ
	qp verbs.QP
}

func newPeer(t *testing.T, dev verbs.Device) *peer {
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 16, MaxRecvWR: 16})
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, pd: pd, cq: cq, qp: qp}
	t.Cleanup(func() { qp.Close(); cq.Close(); pd.Close() })
	return p
}

func (p *peer) reg(buf []byte, acc verbs.Access) verbs.MR {
	mr, err := p.pd.RegMR(buf, acc)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { mr.Close() })
	return mr
}

func (p *peer) expect(id uint64, op verbs.Opcode) verbs.Completion {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wc, err := verbs.NextCompletion(ctx, p.cq)
	if err != nil {
		p.t.Fatalf("waiting for completion %d (%v): %v", id, op, err)
	}
	if wc.ID != id || wc.Opcode != op || wc.Status != verbs.StatusSuccess {
		p.t.Fatalf("completion {ID %d %v %v err %v}, want {ID %d %v Success}", wc.ID, wc.Opcode, wc.Status, wc.Err, id, op)
	}
	return wc
}

func (p *peer) post(wr verbs.SendWR) {
	p.t.Helper()
	if err := p.qp.PostSend(&wr); err != nil {
		p.t.Fatalf("PostSend %v: %v", wr.Op, err)
	}
}

func peerServer(t *testing.T, addr string) {
	cfg, _ := testConfig(t)
	dev := openTest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	p := newPeer(t, dev)
	exposed := make([]byte, peerRegion)
	pattern(exposed, 0x5a)
	emr := p.reg(exposed, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	inbox := make([]byte, 512)
	imr := p.reg(inbox, verbs.AccessLocalWrite)
	for i := uint64(1); i <= 2; i++ {
		if err := p.qp.PostRecv(&verbs.RecvWR{ID: i, SGL: []verbs.SGE{{MR: imr, Offset: int(i-1) * 256, Length: 256}}}); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := dev.Listen(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Logf("listening on %v (%s)", ln.Addr(), dev.Name())
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("request from %v: private data %q IRD %d ORD %d", req.RemoteAddr(), req.PrivateData(), req.IRD(), req.ORD())
	if string(req.PrivateData()) != "soft-host" {
		req.Reject([]byte("bad private data"))
		t.Fatalf("request private data %q, want %q", req.PrivateData(), "soft-host")
	}
	info, err := req.Accept(ctx, p.qp, verbs.ConnParams{PrivateData: []byte("ibverbs-guest"), IRD: 8, ORD: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("accepted: IRD %d ORD %d local %v remote %v", info.IRD, info.ORD, info.LocalAddr, info.RemoteAddr)
	wc := p.expect(1, verbs.OpcodeRecv)
	stag, to, n, err := decodeRegion(inbox[:wc.ByteLen])
	if err != nil || n != peerRegion {
		t.Fatalf("client region: %v (length %d)", err, n)
	}
	// Read the client's region and check its pattern.
	sink := make([]byte, peerRegion)
	smr := p.reg(sink, verbs.AccessLocalWrite)
	p.post(verbs.SendWR{ID: 10, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: peerRegion}}, RemoteSTag: stag, RemoteTO: to})
	p.expect(10, verbs.OpcodeRead)
	want := make([]byte, peerRegion)
	pattern(want, 0xc3)
	if !bytes.Equal(sink, want) {
		t.Fatal("RDMA Read of the soft client's region returned different bytes")
	}
	// Write our pattern into it, then Send with Invalidate.
	p.post(verbs.SendWR{ID: 11, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: emr, Length: peerRegion}}, RemoteSTag: stag, RemoteTO: to})
	reply := p.reg(append([]byte("ok"), encodeRegion(emr)...), 0)
	p.post(verbs.SendWR{ID: 12, Op: verbs.OpSendInv, Flags: verbs.Signaled, InvalidateSTag: stag, SGL: []verbs.SGE{{MR: reply, Length: 18}}})
	p.expect(12, verbs.OpcodeSend)
	wc = p.expect(2, verbs.OpcodeRecv)
	if got := string(inbox[256 : 256+wc.ByteLen]); got != "done" {
		t.Fatalf("final message %q, want done", got)
	}
	pattern(want, 0x77)
	if !bytes.Equal(exposed, want) {
		t.Fatal("the soft client's RDMA Write did not land in our region")
	}
	t.Logf("exchange complete over %s", dev.Name())
}

func peerClient(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 280*time.Second)
	defer cancel()
	// Linux siw responders can miss an FPDU right behind their MPA reply
	// (interop/README.md, finding 4).
	dev := soft.New(soft.Config{FirstFPDUDelay: 300 * time.Millisecond})
	p := newPeer(t, dev)
	region := make([]byte, peerRegion)
	pattern(region, 0xc3)
	rmr := p.reg(region, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	inbox := make([]byte, 256)
	imr := p.reg(inbox, verbs.AccessLocalWrite)
	if err := p.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: imr, Length: 256}}}); err != nil {
		t.Fatal(err)
	}
	var info *verbs.ConnInfo
	for {
		var err error
		info, err = dev.Dial(ctx, addr, p.qp, verbs.ConnParams{PrivateData: []byte("soft-host"), IRD: 8, ORD: 8})
		if err == nil {
			break
		}
		var rej *verbs.RejectedError
		if errors.As(err, &rej) || ctx.Err() != nil {
			t.Fatalf("Dial %s: %v", addr, err)
		}
		time.Sleep(time.Second) // the guest is still booting
	}
	t.Logf("connected to %v: private data %q IRD %d ORD %d", info.RemoteAddr, info.PrivateData, info.IRD, info.ORD)
	if string(info.PrivateData) != "ibverbs-guest" {
		t.Fatalf("reply private data %q, want %q", info.PrivateData, "ibverbs-guest")
	}
	stag := rmr.RKey()
	desc := p.reg(encodeRegion(rmr), 0)
	p.post(verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: desc, Length: 16}}})
	p.expect(2, verbs.OpcodeSend)
	wc := p.expect(1, verbs.OpcodeRecv)
	if wc.Flags&verbs.WithInvalidate == 0 || wc.InvalidatedSTag != stag || rmr.Valid() {
		t.Fatalf("reply: flags %v invalidated %#x (ours %#x) valid %v", wc.Flags, wc.InvalidatedSTag, stag, rmr.Valid())
	}
	want := make([]byte, peerRegion)
	pattern(want, 0x5a)
	if !bytes.Equal(region, want) {
		t.Fatal("the ibverbs server's RDMA Write did not land in our region")
	}
	if string(inbox[:2]) != "ok" {
		t.Fatalf("reply %q", inbox[:wc.ByteLen])
	}
	sstag, sto, n, err := decodeRegion(inbox[2:wc.ByteLen])
	if err != nil || n != peerRegion {
		t.Fatalf("server region: %v (length %d)", err, n)
	}
	if err := rmr.Reregister(verbs.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	p.post(verbs.SendWR{ID: 3, Op: verbs.OpRead, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: rmr, Length: peerRegion}}, RemoteSTag: sstag, RemoteTO: sto})
	p.expect(3, verbs.OpcodeRead)
	if !bytes.Equal(region, want) {
		t.Fatal("RDMA Read of the ibverbs server's region returned different bytes")
	}
	pattern(region, 0x77)
	p.post(verbs.SendWR{ID: 4, Op: verbs.OpWrite, SGL: []verbs.SGE{{MR: rmr, Length: peerRegion}}, RemoteSTag: sstag, RemoteTO: sto})
	done := p.reg([]byte("done"), 0)
	p.post(verbs.SendWR{ID: 5, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: done, Length: 4}}})
	p.expect(5, verbs.OpcodeSend)
	// Wait for the server to close: its checks are done then.
	select {
	case <-p.qp.Done():
	case <-ctx.Done():
		t.Fatal("the server did not close the connection")
	}
	t.Logf("exchange complete")
}
