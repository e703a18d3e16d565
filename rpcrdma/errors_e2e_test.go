package rpcrdma

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

func be32(v ...uint32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.BigEndian.AppendUint32(b, x)
	}
	return b
}

var linuxClientPrivate = []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}

// TestServerHeaderErrors sends every kind of bad header from a raw verbs peer and checks
// the RDMA_ERROR answer, then that the connection still serves a good call.
func TestServerHeaderErrors(t *testing.T) {
	env := newTPEnv(t, &ServerOptions{MaxCall: 70000}, nil)
	p := dialRaw(t, env.ln.Addr().String(), linuxClientPrivate)
	const x = 0x1000
	hdr := func(xid, proc uint32) []byte { return be32(xid, 1, 8, proc) }
	rs := func(pos, handle, length uint32) []byte { return be32(1, pos, handle, length, 0, 0) }
	cases := []struct {
		name string
		msg  []byte
		code ErrCode
	}{
		{"version 2", append(be32(x+1, 2, 8, 0, 0, 0, 0), rpcCall(x+1, 0)...), ErrCodeVers},
		{"version 0 short", be32(x+2, 0), ErrCodeVers},
		{"short header", be32(x+3, 1, 8), ErrCodeChunk},
		{"unknown proc", append(hdr(x+4, 9), be32(0, 0, 0)...), ErrCodeChunk},
		{"RDMA_MSGP refused by default", append(append(hdr(x+5, 2), be32(0, 0, 0, 0, 0)...), rpcCall(x+5, 0)...), ErrCodeChunk},
		{"truncated read list", append(hdr(x+6, 0), be32(1, 0, 1)...), ErrCodeChunk},
		{"misaligned position", append(append(hdr(x+7, 0), rs(6, 1, 4)...), be32(0, 0, 0)...), ErrCodeChunk},
		{"bad discriminator", append(hdr(x+8, 0), be32(2, 0, 0)...), ErrCodeChunk},
		{"empty write chunk", append(hdr(x+9, 0), be32(0, 1, 0, 0, 0)...), ErrCodeChunk},
		{"empty reply chunk", append(hdr(x+10, 0), be32(0, 0, 1, 0)...), ErrCodeChunk},
		{"segment count beyond message", append(hdr(x+11, 0), be32(0, 1, 1000, 1, 2)...), ErrCodeChunk},
		{"NOMSG without chunks", append(hdr(x+12, 1), be32(0, 0, 0)...), ErrCodeChunk},
		{"NOMSG without position-zero chunk", append(hdr(x+13, 1), be32(0, 0, 1, 1, 7, 100, 0, 0)...), ErrCodeChunk},
		{"decreasing positions", append(append(append(hdr(x+14, 0), rs(40, 1, 4)...), rs(20, 2, 4)...), be32(0, 0, 0)...), ErrCodeChunk},
		{"position beyond inline", append(append(append(hdr(x+15, 0), rs(4000, 1, 4)...), be32(0, 0, 0)...), rpcCall(x+15, 0)...), ErrCodeChunk},
		{"read chunk beyond MaxCall", append(append(append(hdr(x+16, 0), rs(40, 1, 1<<20)...), be32(0, 0, 0)...), rpcCall(x+16, 0)...), ErrCodeChunk},
		{"trailing bytes after RDMA_DONE", append(hdr(x+17, 3), 0, 0, 0, 0), ErrCodeChunk},
		{"segment offset overflow", append(append(hdr(x+18, 0), be32(1, 0, 1, 16, 0xffffffff, 0xfffffff8)...), be32(0, 0, 0)...), ErrCodeChunk},
		{"RPC XID other than rdma_xid", append(append(hdr(x+19, 0), be32(0, 0, 0)...), rpcCall(x+0x99, 0)...), ErrCodeChunk},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p.send(t, c.msg)
			h, _ := p.recvHeader(t)
			xid := binary.BigEndian.Uint32(c.msg)
			if h.Proc != ProcError || h.ErrCode != c.code || h.XID != xid || h.Vers != 1 || h.Credits == 0 {
				t.Fatalf("answer %+v, want %v for xid %#x", h, c.code, xid)
			}
			if c.code == ErrCodeVers && (h.VersLow != 1 || h.VersHigh != 1) {
				t.Fatalf("ERR_VERS range %d..%d", h.VersLow, h.VersHigh)
			}
			// The connection stays up and serves a good call.
			p.send(t, msgCall(t, xid+0x10000, 8))
			r, body := p.recvHeader(t)
			if r.Proc != ProcMsg || r.XID != xid+0x10000 || binary.BigEndian.Uint32(body) != xid+0x10000 {
				t.Fatalf("good call after the error: %+v", r)
			}
		})
	}
	// RDMA_DONE for an unknown XID and RDMA_ERROR from a client are dropped silently.
	p.send(t, hdr(x+30, 3))
	p.send(t, append(hdr(x+31, 4), be32(2)...))
	p.send(t, msgCall(t, x+32, 8))
	if r, _ := p.recvHeader(t); r.XID != x+32 || r.Proc != ProcMsg {
		t.Fatalf("after DONE/ERROR: got %+v, want the reply to xid %#x", r, x+32)
	}
}

// An RDMA_NOMSG call whose RPC message, pulled from its position-zero read chunk,
// carries another XID than rdma_xid is answered with ERR_CHUNK (RFC 8166 §4.5.2) once
// it has been read, and the connection goes on serving.
func TestPulledXIDMismatchIsErrChunk(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	p := dialRaw(t, env.ln.Addr().String(), linuxClientPrivate)
	const x = 0x2000
	msg := rpcCall(x+1, 0)
	mr, err := p.pd.RegMR(append([]byte(nil), msg...), verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	h := Header{XID: x, Vers: 1, Credits: 8, Proc: ProcNoMsg,
		ReadList: []chunks.ReadSegment{{Position: 0, Segment: chunks.Segment{Handle: mr.RKey(), Length: uint32(len(msg)), Offset: mr.Addr()}}}}
	b, err := h.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	p.send(t, b)
	if r, _ := p.recvHeader(t); r.Proc != ProcError || r.ErrCode != ErrCodeChunk || r.XID != x {
		t.Fatalf("answer %+v, want ERR_CHUNK for xid %#x", r, x)
	}
	p.send(t, msgCall(t, x+2, 8))
	if r, body := p.recvHeader(t); r.Proc != ProcMsg || r.XID != x+2 || binary.BigEndian.Uint32(body) != x+2 {
		t.Fatalf("good call after the error: %+v", r)
	}
}

// TestReplyTooLargeIsErrChunk: a reply that fits neither inline nor a reply chunk gets
// ERR_CHUNK, which the client surfaces as a typed *RemoteError.
func TestReplyTooLargeIsErrChunk(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	ctx := tpCtx(t)
	var res tpOpaque
	err := env.rpc.CallWithOptions(ctx, tpBig, tpUint32(10000), &res, oncrpc.CallOptions{MaxReply: 512})
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != ErrCodeChunk {
		t.Fatalf("err = %v, want *RemoteError ERR_CHUNK", err)
	}
	// The connection still works.
	if err := env.rpc.CallWithOptions(ctx, tpNull, nil, nil, oncrpc.CallOptions{MaxReply: 512}); err != nil {
		t.Fatal(err)
	}
}

// TestClientRemoteErrors: a raw server answers RDMA_ERROR; RoundTrip returns a typed
// error carrying the code and version range.
func TestClientRemoteErrors(t *testing.T) {
	ctx, cl, srv := dialRawServer(t)
	for _, code := range []ErrCode{ErrCodeVers, ErrCodeChunk} {
		done := make(chan error, 1)
		go func() {
			var reply oncrpc.ClientReply
			done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 77 + uint32(code), Msg: oncrpc.Message{Inline: rpcCall(77+uint32(code), 0)}, MaxReply: 100}, &reply)
		}()
		h, _ := srv.recvHeader(t)
		if code == ErrCodeVers {
			srv.send(t, AppendErrVers(nil, h.XID, 1, 4))
		} else {
			srv.send(t, AppendErrChunk(nil, h.XID, 1, 4))
		}
		err := <-done
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != code || re.XID != h.XID {
			t.Fatalf("err = %v, want *RemoteError %v", err, code)
		}
		if code == ErrCodeVers && (re.VersLow != 1 || re.VersHigh != 1) {
			t.Fatalf("version range %d..%d", re.VersLow, re.VersHigh)
		}
	}
	// A malformed reply is ErrBadReply, not a hang.
	done := make(chan error, 1)
	go func() {
		var reply oncrpc.ClientReply
		done <- cl.RoundTrip(ctx, &oncrpc.ClientCall{XID: 99, Msg: oncrpc.Message{Inline: rpcCall(99, 0)}, MaxReply: 100}, &reply)
	}()
	srv.recvHeader(t)
	srv.send(t, be32(99, 1, 4, 0, 7))
	if err := <-done; !errors.Is(err, ErrBadReply) {
		t.Fatalf("err = %v, want ErrBadReply", err)
	}
}

// TestReplyHeaderBeyondClientInlineIsErrChunk: a call whose write list is long enough
// that the reply's transport header alone exceeds the client's receive size (RFC 8797
// private data) cannot be answered through the reply chunk either, since the header
// still travels in the Send: the server answers ERR_CHUNK (RFC 8166 §4.5.3, as Linux
// svc_rdma_send_error_msg) instead of sending a message larger than the client's
// receive buffer, and the connection goes on serving.
func TestReplyHeaderBeyondClientInlineIsErrChunk(t *testing.T) {
	env := newTPEnv(t, nil, nil)
	const recvSize = 1024
	p := dialRaw(t, env.ln.Addr().String(), ConnPrivate{SendSize: 4096, RecvSize: recvSize}.Append(nil))
	mr, err := p.pd.RegMR(make([]byte, 8192), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	const x = 0x3000
	wc := make(chunks.WriteChunk, 80) // 1280 bytes of segments: header > recvSize
	for i := range wc {
		wc[i] = chunks.Segment{Handle: mr.RKey(), Length: 64, Offset: mr.Addr() + uint64(64*i)}
	}
	h := Header{XID: x, Vers: 1, Credits: 8, Proc: ProcMsg, WriteList: []chunks.WriteChunk{wc},
		ReplyChunk: chunks.WriteChunk{{Handle: mr.RKey(), Length: 2048, Offset: mr.Addr() + 6144}}}
	b, err := h.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	p.send(t, append(b, rpcCall(x, tpNull)...))
	msg, _ := p.recv(t)
	if len(msg) > recvSize {
		t.Fatalf("server sent a %d-byte message to a client whose receive size is %d", len(msg), recvSize)
	}
	var r Header
	if _, err := r.Decode(msg); err != nil || r.Proc != ProcError || r.ErrCode != ErrCodeChunk || r.XID != x {
		t.Fatalf("answer %+v (%v), want ERR_CHUNK for xid %#x", r, err, x)
	}
	p.send(t, msgCall(t, x+1, 8))
	if r, body := p.recvHeader(t); r.Proc != ProcMsg || r.XID != x+1 || binary.BigEndian.Uint32(body) != x+1 {
		t.Fatalf("good call after the error: %+v", r)
	}
}
