package rpcrdma

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// rawPeer is a bare verbs endpoint that sends and receives hand-made transport messages,
// to check exactly what our transports put on the wire and how they react to bad input.
type rawPeer struct {
	dev    *soft.Device
	pd     verbs.PD
	cq     verbs.CQ
	qp     verbs.QP
	recvMR verbs.MR
	sendMR verbs.MR
	info   *verbs.ConnInfo
	queue  []verbs.Completion // completions seen while waiting for something else
}

const rawBufs, rawBufSize = 16, 65536

func newRawPeer(t testing.TB) *rawPeer { return newRawPeerWith(t, soft.Config{}) }

func newRawPeerWith(t testing.TB, cfg soft.Config) *rawPeer {
	t.Helper()
	p := &rawPeer{dev: soft.New(cfg)}
	var err error
	if p.pd, err = p.dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if p.cq, err = p.dev.CreateCQ(256); err != nil {
		t.Fatal(err)
	}
	if p.qp, err = p.pd.CreateQP(verbs.QPConfig{SendCQ: p.cq, RecvCQ: p.cq, MaxSendWR: 64, MaxRecvWR: rawBufs}); err != nil {
		t.Fatal(err)
	}
	if p.recvMR, err = p.pd.RegMR(make([]byte, rawBufs*rawBufSize), verbs.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	if p.sendMR, err = p.pd.RegMR(make([]byte, rawBufSize), verbs.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rawBufs; i++ {
		p.postRecv(t, i)
	}
	t.Cleanup(func() {
		p.qp.Close()
		p.recvMR.Close()
		p.sendMR.Close()
		p.cq.Close()
	})
	return p
}

func (p *rawPeer) postRecv(t testing.TB, i int) {
	t.Helper()
	err := p.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{MR: p.recvMR, Offset: i * rawBufSize, Length: rawBufSize}}})
	if err != nil {
		t.Fatal(err)
	}
}

// dialRaw connects a raw peer to addr with private data priv.
func dialRaw(t testing.TB, addr string, priv []byte) *rawPeer {
	t.Helper()
	return dialRawWith(t, soft.Config{}, addr, priv)
}

// dialRawWith is dialRaw with a provider configuration.
func dialRawWith(t testing.TB, cfg soft.Config, addr string, priv []byte) *rawPeer {
	t.Helper()
	p := newRawPeerWith(t, cfg)
	info, err := p.dev.Dial(tpCtx(t), addr, p.qp, verbs.ConnParams{PrivateData: priv, IRD: 16, ORD: 16})
	if err != nil {
		t.Fatal(err)
	}
	p.info = info
	return p
}

// listenRaw accepts one connection on a raw listener and returns its address and a
// function that waits for the peer.
func listenRaw(t testing.TB, priv []byte) (string, func() *rawPeer) {
	t.Helper()
	p := newRawPeer(t)
	ln, err := p.dev.Listen(tpCtx(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan error, 1)
	go func() {
		cr, err := ln.Accept(tpCtx(t))
		if err != nil {
			ch <- err
			return
		}
		p.info, err = cr.Accept(tpCtx(t), p.qp, verbs.ConnParams{PrivateData: priv, IRD: 16, ORD: 16})
		ch <- err
	}()
	return ln.Addr().String(), func() *rawPeer {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// dialRawServer dials a Client over soft verbs to a raw peer that accepts as a server
// with 4096-byte inline sizes, and returns tpCtx(t), the client (closed at the end of
// the test) and the peer.
func dialRawServer(t *testing.T) (context.Context, *Client, *rawPeer) {
	t.Helper()
	addr, accept := listenRaw(t, ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil))
	ctx := tpCtx(t)
	cl, err := Dial(ctx, soft.New(soft.Config{}), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return ctx, cl, accept()
}

// next returns the next completion, failing after 10 s.
func (p *rawPeer) next(t testing.TB) verbs.Completion {
	t.Helper()
	if len(p.queue) > 0 {
		wc := p.queue[0]
		p.queue = p.queue[1:]
		return wc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wc, err := verbs.NextCompletion(ctx, p.cq)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

// waitSend waits for the send-queue completion with ID id and returns it.
func (p *rawPeer) waitSend(t testing.TB, id uint64) verbs.Completion {
	t.Helper()
	var keep []verbs.Completion
	defer func() { p.queue = append(keep, p.queue...) }()
	for {
		wc := p.next(t)
		if wc.Opcode != verbs.OpcodeRecv && wc.ID == id {
			return wc
		}
		keep = append(keep, wc)
	}
}

// send sends msg (Send) and waits for its completion.
func (p *rawPeer) send(t testing.TB, msg []byte) {
	t.Helper()
	if wc := p.trySend(t, msg); wc.Status != verbs.StatusSuccess {
		t.Fatalf("send: %v %v", wc.Status, wc.Err)
	}
}

// trySend sends msg and returns its completion.
func (p *rawPeer) trySend(t testing.TB, msg []byte) verbs.Completion {
	t.Helper()
	copy(p.sendMR.Buf(), msg)
	if err := p.qp.PostSend(&verbs.SendWR{ID: 1 << 40, Op: verbs.OpSend, Flags: verbs.Signaled,
		SGL: []verbs.SGE{{MR: p.sendMR, Length: len(msg)}}}); err != nil {
		t.Fatal(err)
	}
	return p.waitSend(t, 1<<40)
}

// sendBurst posts the Sends of msgs (each at most rawBufSize/len(msgs) bytes) at once
// and waits for their completions.
func (p *rawPeer) sendBurst(t testing.TB, msgs ...[]byte) {
	t.Helper()
	stride := rawBufSize / len(msgs)
	wrs := make([]verbs.SendWR, len(msgs))
	for i, msg := range msgs {
		copy(p.sendMR.Buf()[i*stride:], msg)
		wrs[i] = verbs.SendWR{ID: 1<<40 + uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled,
			SGL: []verbs.SGE{{MR: p.sendMR, Offset: i * stride, Length: len(msg)}}}
		if i > 0 {
			wrs[i-1].Next = &wrs[i]
		}
	}
	if err := p.qp.PostSend(&wrs[0]); err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		if wc := p.waitSend(t, 1<<40+uint64(i)); wc.Status != verbs.StatusSuccess {
			t.Fatalf("send %d: %v %v", i, wc.Status, wc.Err)
		}
	}
}

// recv returns the next received message (a copy) and its completion, reposting the
// buffer.
func (p *rawPeer) recv(t testing.TB) ([]byte, verbs.Completion) {
	t.Helper()
	var keep []verbs.Completion
	defer func() { p.queue = append(keep, p.queue...) }()
	for {
		wc := p.next(t)
		if wc.Opcode != verbs.OpcodeRecv {
			keep = append(keep, wc)
			continue
		}
		if wc.Status != verbs.StatusSuccess {
			t.Fatalf("receive: %v %v", wc.Status, wc.Err)
		}
		i := int(wc.ID)
		msg := append([]byte(nil), p.recvMR.Buf()[i*rawBufSize:i*rawBufSize+wc.ByteLen]...)
		p.postRecv(t, i)
		return msg, wc
	}
}

// recvHeader receives a message and decodes its header.
func (p *rawPeer) recvHeader(t testing.TB) (Header, []byte) {
	t.Helper()
	msg, _ := p.recv(t)
	var h Header
	n, err := h.Decode(msg)
	if err != nil {
		t.Fatalf("received message does not decode: %v (% x)", err, msg)
	}
	return h, msg[n:]
}

// rpcCall returns the XDR of an RPC call header for the test program.
func rpcCall(xid, proc uint32) []byte {
	var e xdr.Encoder
	(&oncrpc.CallHeader{XID: xid, Prog: tpProg, Vers: tpVers, Proc: proc}).EncodeXDR(&e)
	return e.Bytes()
}

// msgCall returns an inline RDMA_MSG NULL call.
func msgCall(t testing.TB, xid, credits uint32) []byte {
	t.Helper()
	h := Header{XID: xid, Vers: Version1, Credits: credits, Proc: ProcMsg}
	b, err := h.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, rpcCall(xid, tpNull)...)
}

// rpcReply returns the XDR of an accepted SUCCESS reply with no results.
func rpcReply(xid uint32) []byte {
	var b []byte
	b = xdr.AppendUint32(b, xid)
	b = xdr.AppendUint32(b, 1) // REPLY
	b = xdr.AppendUint32(b, 0) // MSG_ACCEPTED
	b = xdr.AppendUint32(b, 0) // verifier AUTH_NONE
	b = xdr.AppendUint32(b, 0)
	return xdr.AppendUint32(b, 0) // SUCCESS
}

type chunksWriteChunk = chunks.WriteChunk

func contextWithCancel(ctx context.Context) (context.Context, func()) {
	return context.WithCancel(ctx)
}

type chunksSegment = chunks.Segment

type xdrEncoder = xdr.Encoder

func xdrFlatten(e *xdr.Encoder) []byte { return xdr.Flatten(nil, e.Bytes(), e.Payloads()) }
