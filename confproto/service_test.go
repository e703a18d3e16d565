package confproto

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func TestDecodeCall(t *testing.T) {
	// 4096 = 0x1000, 2048 = 0x800, 32 = 0x20
	args := []byte{0, 0, 0x10, 0, 0, 0, 0x08, 0, 0, 0, 0, 0x20}
	got, err := DecodeCall(args)
	if err != nil || got != (ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 2048, MaxRDMARead: 32}) {
		t.Fatalf("DecodeCall = %+v, %v", got, err)
	}
	tests := []struct {
		name  string
		args  []byte
		field string
		is    error
	}{
		{"empty", nil, "config_rdma_req.maxcall_sendsize", ErrTruncated},
		{"short maxreply", args[:6], "config_rdma_req.maxreply_sendsize", ErrTruncated},
		{"short maxrdmaread", args[:11], "config_rdma_req.maxrdmaread", ErrTruncated},
		{"trailing", append(append([]byte{}, args...), 0, 0, 0, 0), "config_rdma_req", ErrTrailing},
		{"maxcall below 1 KiB", []byte{0, 0, 0x03, 0xff, 0, 0, 0x08, 0, 0, 0, 0, 0}, "config_rdma_req.maxcall_sendsize", ErrInvalid},
		{"maxcall zero", []byte{0, 0, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0}, "config_rdma_req.maxcall_sendsize", ErrInvalid},
		{"maxcall huge", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0x08, 0, 0, 0, 0, 0}, "config_rdma_req.maxcall_sendsize", ErrInvalid},
		{"maxreply below 1 KiB", []byte{0, 0, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0}, "config_rdma_req.maxreply_sendsize", ErrInvalid},
		{"maxreply huge", []byte{0, 0, 0x10, 0, 0x01, 0, 0, 1, 0, 0, 0, 0}, "config_rdma_req.maxreply_sendsize", ErrInvalid},
	}
	for _, tc := range tests {
		_, err := DecodeCall(tc.args)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: DecodeCall error %v, want %v naming %s", tc.name, err, tc.is, tc.field)
		}
	}
	// maxrdmaread 0 is legal: the server must then not issue RDMA Reads.
	if _, err := DecodeCall([]byte{0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 0, 0}); err != nil {
		t.Errorf("maxrdmaread 0: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	def := DefaultLimits()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mod   func(*Limits)
		field string
	}{
		{func(l *Limits) { l.MaxCallSendSize = 1023 }, "MaxCallSendSize"},
		{func(l *Limits) { l.MaxCallSendSize = MaxMessageSize + 1 }, "MaxCallSendSize"},
		{func(l *Limits) { l.MaxReplySendSize = 0 }, "MaxReplySendSize"},
		{func(l *Limits) { l.Align = 0 }, "Align"},
		{func(l *Limits) { l.Align = 2 }, "Align"},
		{func(l *Limits) { l.Align = 12 }, "Align"},
	}
	for _, tc := range tests {
		l := DefaultLimits()
		tc.mod(&l)
		_, err := NewService(&ServiceOptions{Limits: &l})
		var ve *ValueError
		if !errors.As(err, &ve) || ve.Field != tc.field || ve.Struct != "Limits" {
			t.Errorf("NewService(%+v) error %v, want *ValueError on %s", l, err, tc.field)
		}
	}
	l := Limits{MaxCallSendSize: 1024, MaxReplySendSize: MaxMessageSize, Align: 4096, MaxRDMARead: 0}
	if _, err := NewService(&ServiceOptions{Limits: &l}); err != nil {
		t.Errorf("extreme valid limits: %v", err)
	}
}

func TestReplyValidate(t *testing.T) {
	good := []ConfigRDMAReply{
		{MaxCallSendSize: 1024, Align: 0, MaxRDMARead: 0},
		{MaxCallSendSize: 65536, Align: 4096, MaxRDMARead: 128},
	}
	for _, r := range good {
		if err := r.Validate(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	bad := []struct {
		r     ConfigRDMAReply
		field string
	}{
		{ConfigRDMAReply{MaxCallSendSize: 512, Align: 4}, "maxcall_sendsize"},
		{ConfigRDMAReply{MaxCallSendSize: 4096, Align: 3}, "align"},
		{ConfigRDMAReply{MaxCallSendSize: 4096, Align: 6}, "align"},
	}
	for _, tc := range bad {
		var ve *ValueError
		if err := tc.r.Validate(); !errors.As(err, &ve) || ve.Field != tc.field || ve.Struct != "config_rdma_reply" {
			t.Errorf("%+v: %v, want *ValueError on %s", tc.r, err, tc.field)
		}
	}
}

func TestSettings(t *testing.T) {
	l := Limits{MaxCallSendSize: 8192, MaxReplySendSize: 4096, Align: 64, MaxRDMARead: 8}
	req := ConfigRDMAReq{MaxCallSendSize: 16384, MaxReplySendSize: 2048, MaxRDMARead: 4}
	if got, want := ServerSettings(l, req), (Settings{InlineSend: 2048, InlineRecv: 8192, MaxRDMARead: 4}); got != want {
		t.Errorf("ServerSettings = %+v, want %+v", got, want)
	}
	reply := ConfigRDMAReply{MaxCallSendSize: 8192, Align: 64, MaxRDMARead: 8}
	if got, want := ClientSettings(req, reply), (Settings{InlineSend: 8192, InlineRecv: 2048, MaxRDMARead: 8, Align: 64}); got != want {
		t.Errorf("ClientSettings = %+v, want %+v", got, want)
	}
	small := ConfigRDMAReq{MaxCallSendSize: 1024, MaxReplySendSize: 1024, MaxRDMARead: 1}
	if got := ClientSettings(small, reply); got.InlineSend != 1024 {
		t.Errorf("ClientSettings with a smaller request: InlineSend %d, want 1024", got.InlineSend)
	}
}

// fakeConn is a Configurable that records what it is given, as the RPC-over-RDMA
// transport's connection would apply it.
type fakeConn struct {
	mu                   sync.Mutex
	send, recv, maxReads int
	calls                int
}

func (c *fakeConn) SetInlineThresholds(send, recv int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.send, c.recv = send, recv
	c.calls++
}

func (c *fakeConn) SetMaxRDMARead(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxReads = n
	c.calls++
}

// startServer serves h for CONFIG_RDMA_PROG v1 on an oncrpc TCP listener on 127.0.0.1
// and returns a connected client.
func startServer(t testing.TB, h oncrpc.Handler) (*oncrpc.Client, oncrpc.RoundTripper) {
	t.Helper()
	srv := oncrpc.NewServer(nil)
	srv.Register(Program, Version, h)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr, err := oncrpc.DialTCP(ctx, l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.Close()
		srv.Close()
		<-done
	})
	return NewClient(tr), tr
}

func TestServiceOverTCP(t *testing.T) {
	limits := Limits{MaxCallSendSize: 8192, MaxReplySendSize: 4096, Align: 4096, MaxRDMARead: 8}
	var (
		mu       sync.Mutex
		gotReq   ConfigRDMAReq
		gotSet   Settings
		gotNetid string
	)
	svc, err := NewService(&ServiceOptions{
		Limits: &limits,
		Configured: func(req *oncrpc.Request, client ConfigRDMAReq, s Settings) {
			mu.Lock()
			defer mu.Unlock()
			gotReq, gotSet, gotNetid = client, s, req.Netid
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := startServer(t, svc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := c.Call(ctx, ProcNull, nil, nil); err != nil {
		t.Fatalf("NULL: %v", err)
	}
	want := ConfigRDMAReq{MaxCallSendSize: 16384, MaxReplySendSize: 2048, MaxRDMARead: 4}
	reply, err := Negotiate(ctx, c, want)
	if err != nil {
		t.Fatal(err)
	}
	if reply != (ConfigRDMAReply{MaxCallSendSize: 8192, Align: 4096, MaxRDMARead: 8}) {
		t.Errorf("reply = %+v", reply)
	}
	mu.Lock()
	if gotReq != want || gotSet != (Settings{InlineSend: 2048, InlineRecv: 8192, MaxRDMARead: 4}) || gotNetid != "tcp" {
		t.Errorf("server side: request %+v settings %+v netid %q", gotReq, gotSet, gotNetid)
	}
	mu.Unlock()

	var conn fakeConn
	s, err := NegotiateAndApply(ctx, c, want, &conn)
	if err != nil {
		t.Fatal(err)
	}
	if s != (Settings{InlineSend: 8192, InlineRecv: 2048, MaxRDMARead: 8, Align: 4096}) {
		t.Errorf("settings = %+v", s)
	}
	if conn.send != 8192 || conn.recv != 2048 || conn.maxReads != 8 || conn.calls != 2 {
		t.Errorf("applied to the connection: %+v", &conn)
	}

	// An invalid request is refused before it is sent.
	if _, err := Negotiate(ctx, c, ConfigRDMAReq{MaxCallSendSize: 100, MaxReplySendSize: 4096}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Negotiate with an invalid request: %v, want ErrInvalid", err)
	}
	if st := svc.Stats(); st.Null != 1 || st.ConfRDMA != 2 || st.Garbage != 0 {
		t.Errorf("stats %+v", st)
	}
}

// rawArgs encodes arbitrary argument bytes.
type rawArgs []byte

func (r rawArgs) EncodeXDR(e *xdr.Encoder) {
	for i := 0; i+4 <= len(r); i += 4 {
		e.Uint32(uint32(r[i])<<24 | uint32(r[i+1])<<16 | uint32(r[i+2])<<8 | uint32(r[i+3]))
	}
}

func TestServiceGarbage(t *testing.T) {
	svc, err := NewService(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := startServer(t, svc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bad := []rawArgs{
		nil,                            // no arguments
		{0, 0, 0x10, 0, 0, 0, 0x10, 0}, // maxrdmaread missing
		{0, 0, 0x10, 0, 0, 0, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0}, // trailing word
		{0, 0, 0x01, 0, 0, 0, 0x10, 0, 0, 0, 0, 1},             // maxcall_sendsize 256
		{0, 0, 0x10, 0, 0, 0, 0x00, 4, 0, 0, 0, 1},             // maxreply_sendsize 4
	}
	for i, args := range bad {
		err := c.Call(ctx, ProcConfRDMA, args, nil)
		var ae *oncrpc.AcceptError
		if !errors.As(err, &ae) || ae.Stat != oncrpc.GarbageArgs {
			t.Errorf("bad call %d (%x): %v, want GARBAGE_ARGS", i, []byte(args), err)
		}
	}
	err = c.Call(ctx, 2, nil, nil)
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProcUnavail {
		t.Errorf("procedure 2: %v, want PROC_UNAVAIL", err)
	}
	if st := svc.Stats(); st.Garbage != uint64(len(bad)) || st.ConfRDMA != 0 {
		t.Errorf("stats %+v", st)
	}
	// The connection survives garbage: a good negotiation follows.
	if _, err := Negotiate(ctx, c, ConfigRDMAReq{MaxCallSendSize: 1024, MaxReplySendSize: 1024, MaxRDMARead: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestNegotiateBadReply runs Negotiate against servers that answer malformed or
// invalid replies.
func TestNegotiateBadReply(t *testing.T) {
	tests := []struct {
		name  string
		words []uint32
		is    error
		field string
	}{
		{"short", []uint32{4096, 4}, ErrTruncated, "config_rdma_reply.maxrdmaread"},
		{"trailing", []uint32{4096, 4, 8, 0}, ErrTrailing, "config_rdma_reply"},
		{"maxcall below 1 KiB", []uint32{512, 4, 8}, ErrInvalid, "config_rdma_reply.maxcall_sendsize"},
		{"align not a power of two", []uint32{4096, 24, 8}, ErrInvalid, "config_rdma_reply.align"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
				for _, w := range tc.words {
					res.Uint32(w)
				}
				return nil
			})
			c, _ := startServer(t, h)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := Negotiate(ctx, c, ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 4})
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Negotiate: %v, want %v naming %s", err, tc.is, tc.field)
			}
		})
	}
}

// TestNegotiateProgUnavail: a server without CONF_RDMA (as Linux knfsd) answers
// PROG_UNAVAIL, which Negotiate reports as the typed oncrpc error.
func TestNegotiateProgUnavail(t *testing.T) {
	srv := oncrpc.NewServer(nil)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(l) }()
	defer func() { srv.Close(); <-done }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := oncrpc.DialTCP(ctx, l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = Negotiate(ctx, NewClient(tr), ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 4})
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProgUnavail {
		t.Errorf("Negotiate: %v, want PROG_UNAVAIL", err)
	}
}

// TestServeRPCAllocs checks that answering CONF_RDMA allocates nothing.
func TestServeRPCAllocs(t *testing.T) {
	svc, err := NewService(nil)
	if err != nil {
		t.Fatal(err)
	}
	args := (&ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 8}).AppendXDR(nil)
	var d xdr.Decoder
	var e xdr.Encoder
	buf := make([]byte, 0, 64)
	req := &oncrpc.Request{Header: oncrpc.CallHeader{Prog: Program, Vers: Version, Proc: ProcConfRDMA}, Args: &d, RemoteAddr: &net.TCPAddr{}, Netid: "tcp"}
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() {
		d.Reset(args)
		e.Reset(buf[:0])
		if err := svc.ServeRPC(ctx, req, &e); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("ServeRPC: %v allocs per call, want 0", n)
	}
}

func BenchmarkServeConfRDMA(b *testing.B) {
	svc, err := NewService(nil)
	if err != nil {
		b.Fatal(err)
	}
	args := (&ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 8}).AppendXDR(nil)
	var d xdr.Decoder
	var e xdr.Encoder
	buf := make([]byte, 0, 64)
	req := &oncrpc.Request{Header: oncrpc.CallHeader{Prog: Program, Vers: Version, Proc: ProcConfRDMA}, Args: &d, RemoteAddr: &net.TCPAddr{}, Netid: "tcp"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(args)
		e.Reset(buf[:0])
		if err := svc.ServeRPC(ctx, req, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNegotiateTCP(b *testing.B) {
	svc, err := NewService(nil)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := startServer(b, svc)
	ctx := context.Background()
	want := ConfigRDMAReq{MaxCallSendSize: 4096, MaxReplySendSize: 4096, MaxRDMARead: 8}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Negotiate(ctx, c, want); err != nil {
			b.Fatal(err)
		}
	}
}

// fakeFullConn is a fakeConn that is also a ReadTarget and an Aligner.
type fakeFullConn struct {
	fakeConn
	readTarget bool
	align      int
}

func (c *fakeFullConn) SetReadTarget(allowed bool) { c.readTarget = allowed }
func (c *fakeFullConn) SetMSGPAlign(align int)     { c.align = align }

// TestSettingsMaxRDMAReadZero: seed §6.2, "If zero, the peer MUST NOT issue requests
// which require RDMA Read to satisfy": the side that announced 0 is no read target, the
// other side issues no RDMA Reads; Apply hands both, and the alignment, to connections
// that take them.
func TestSettingsMaxRDMAReadZero(t *testing.T) {
	l := Limits{MaxCallSendSize: 8192, MaxReplySendSize: 4096, Align: 64, MaxRDMARead: 0}
	req := ConfigRDMAReq{MaxCallSendSize: 8192, MaxReplySendSize: 4096, MaxRDMARead: 0}
	srv := ServerSettings(l, req)
	if !srv.NoReadTarget || srv.MaxRDMARead != 0 {
		t.Errorf("ServerSettings = %+v", srv)
	}
	cl := ClientSettings(req, ConfigRDMAReply{MaxCallSendSize: 8192, Align: 64, MaxRDMARead: 0})
	if !cl.NoReadTarget || cl.MaxRDMARead != 0 || cl.Align != 64 {
		t.Errorf("ClientSettings = %+v", cl)
	}
	c := &fakeFullConn{readTarget: true}
	cl.Apply(c)
	if c.readTarget || c.align != 64 || c.maxReads != 0 || c.send != 8192 {
		t.Errorf("applied %+v", c)
	}
	req.MaxRDMARead, l.MaxRDMARead = 4, 4
	if s := ServerSettings(l, req); s.NoReadTarget {
		t.Errorf("ServerSettings with maxrdmaread 4 = %+v", s)
	}
	ServerSettings(l, req).Apply(c)
	if !c.readTarget || c.align != 0 {
		t.Errorf("applied %+v", c)
	}
}
