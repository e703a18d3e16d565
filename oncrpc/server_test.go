package oncrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Many clients, hundreds of concurrent calls, a server that replies out of order.
func TestTCPManyClientsOutOfOrder(t *testing.T) {
	h := echoHandler()
	h[procEcho] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		b, err := req.Args.Opaque(-1)
		if err != nil {
			return err
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		res.Payload(b)
		return nil
	}
	_, addr := startTCPServer(t, &ServerOptions{MaxConcurrent: 32}, h)
	const clients, calls = 8, 500
	cs := make([]*Client, clients)
	for i := range cs {
		cs[i] = NewClient(dialTCP(t, addr, &TCPOptions{MaxFragment: 1 + 100*i}), testProg, testVers)
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := fmt.Appendf(nil, "call %d %s", i, bytes.Repeat([]byte{'x'}, i))
			var out bytesRes
			if err := cs[i%clients].Call(context.Background(), procEcho, payloadArg(in), &out); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(in, out.b) {
				errs <- fmt.Errorf("call %d: reply %q", i, out.b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Every status a server can answer, observed by a real Client as a typed error.
func TestStatusesObservedByClient(t *testing.T) {
	s := NewServer(nil)
	h := echoHandler()
	h[2] = func(ctx context.Context, req *Request, res *xdr.Encoder) error { return errors.New("disk on fire") }
	h[3] = func(ctx context.Context, req *Request, res *xdr.Encoder) error { panic("handler bug") }
	h[4] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		if req.AuthSys == nil {
			return AuthErr(AuthTooWeak)
		}
		res.Uint32(req.AuthSys.UID)
		res.String(string(req.AuthSys.MachineName))
		return nil
	}
	h[5] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		res.Uint32(12345) // discarded with the error
		return fmt.Errorf("bad handle: %w", ErrGarbageArgs)
	}
	s.Register(testProg, testVers, h)
	s.RegisterRange(testProg, 5, 6, h)
	l, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	tr := dialTCP(t, l.Addr().String(), nil)
	ctx := context.Background()
	call := func(prog, vers, proc uint32, cred *OpaqueAuth, args xdr.EncoderTo) error {
		var opts []ClientOption
		if cred != nil {
			opts = append(opts, WithAuth(*cred))
		}
		return NewClient(tr, prog, vers, opts...).Call(ctx, proc, args, nil)
	}
	accept := func(stat AcceptStat, low, high uint32) func(error) bool {
		return func(err error) bool {
			var ae *AcceptError
			return errors.As(err, &ae) && ae.Stat == stat && ae.Low == low && ae.High == high
		}
	}
	deny := func(stat AuthStat) func(error) bool {
		return func(err error) bool {
			var re *RejectError
			return errors.As(err, &re) && re.Stat == AuthError && re.AuthStat == stat
		}
	}
	sys, err := NewAuthSys(&AuthSysParams{MachineName: []byte("client"), UID: 1001, GID: 100})
	if err != nil {
		t.Fatal(err)
	}
	badSys := OpaqueAuth{Flavor: AuthSys, Body: []byte{0, 0, 0, 1, 0, 0, 1, 0}} // machinename claims 256
	dh := OpaqueAuth{Flavor: AuthDH, Body: []byte{1, 2, 3, 4}}
	for _, tc := range []struct {
		name             string
		prog, vers, proc uint32
		cred             *OpaqueAuth
		args             xdr.EncoderTo
		ok               func(error) bool
	}{
		{"PROG_UNAVAIL", testProg + 1, 1, 0, nil, nil, accept(ProgUnavail, 0, 0)},
		{"PROG_MISMATCH low", testProg, 1, 0, nil, nil, accept(ProgMismatch, 3, 6)},
		{"PROG_MISMATCH between", testProg, 4, 0, nil, nil, accept(ProgMismatch, 3, 6)},
		{"PROG_MISMATCH high", testProg, 7, 0, nil, nil, accept(ProgMismatch, 3, 6)},
		{"range served", testProg, 6, procNull, nil, nil, func(err error) bool { return err == nil }},
		{"PROC_UNAVAIL", testProg, testVers, 99, nil, nil, accept(ProcUnavail, 0, 0)},
		{"GARBAGE_ARGS from DecodeError", testProg, testVers, procEcho, nil, nil, accept(GarbageArgs, 0, 0)},
		{"GARBAGE_ARGS from ErrGarbageArgs", testProg, testVers, 5, nil, nil, accept(GarbageArgs, 0, 0)},
		{"SYSTEM_ERR", testProg, testVers, 2, nil, nil, accept(SystemErr, 0, 0)},
		{"SYSTEM_ERR from panic", testProg, testVers, 3, nil, nil, accept(SystemErr, 0, 0)},
		{"AUTH_TOOWEAK from handler", testProg, testVers, 4, nil, nil, deny(AuthTooWeak)},
		{"AUTH_BADCRED", testProg, testVers, 4, &badSys, nil, deny(AuthBadCred)},
		{"AUTH_BADCRED none with body", testProg, testVers, 0, &OpaqueAuth{Flavor: AuthNone, Body: []byte{1, 2, 3, 4}}, nil, deny(AuthBadCred)},
		{"AUTH_REJECTEDCRED", testProg, testVers, 4, &dh, nil, deny(AuthRejectedCred)},
		{"AUTH_SYS accepted", testProg, testVers, 4, &sys, nil, func(err error) bool { return err == nil }},
	} {
		err := call(tc.prog, tc.vers, tc.proc, tc.cred, tc.args)
		if !tc.ok(err) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
	// The handler saw the decoded AUTH_SYS credential.
	var res struct {
		uid  uint32
		name string
	}
	dec := decoderFunc(func(d *xdr.Decoder) (err error) {
		if res.uid, err = d.Uint32(); err != nil {
			return err
		}
		res.name, err = d.String(255)
		return err
	})
	if err := NewClient(tr, testProg, testVers, WithAuth(sys)).Call(ctx, 4, nil, dec); err != nil || res.uid != 1001 || res.name != "client" {
		t.Fatalf("AUTH_SYS handler: %+v, %v", res, err)
	}
	if st := s.Stats(); st.SystemErrs != 2 {
		t.Errorf("stats %+v, want 2 system errors", st)
	}
}

type decoderFunc func(d *xdr.Decoder) error

func (f decoderFunc) DecodeXDR(d *xdr.Decoder) error { return f(d) }

// rawPeer is a hand-driven TCP client.
type rawPeer struct {
	t  *testing.T
	c  *net.TCPConn
	rr *RecordReader
}

func dialRaw(t *testing.T, addr string) *rawPeer {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a broken server fails the test instead of hanging it
	return &rawPeer{t: t, c: c.(*net.TCPConn), rr: NewRecordReader(bufio.NewReader(c), 0)}
}

func (p *rawPeer) send(b []byte) {
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

func (p *rawPeer) sendRecord(msg []byte) { p.send(writeRecord(&Message{Inline: msg}, 0)) }

func (p *rawPeer) expect(hexWant string) {
	p.t.Helper()
	got, err := p.rr.ReadRecord(nil)
	if err != nil {
		p.t.Fatalf("reading reply: %v", err)
	}
	if want := unhex(p.t, hexWant); !bytes.Equal(got, want) {
		p.t.Fatalf("reply\n got %x\nwant %x", got, want)
	}
}

func (p *rawPeer) expectClosed() {
	p.t.Helper()
	var b [1]byte
	if n, err := p.c.Read(b[:]); err == nil || n != 0 {
		p.t.Fatalf("connection still open (read %d, %v)", n, err)
	} else if errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		p.t.Fatalf("read: %v", err)
	}
}

func TestGarbageFromRawPeer(t *testing.T) {
	s, addr := startTCPServer(t, nil, echoHandler())
	nullCall := func(xid uint32) []byte {
		return (&CallHeader{XID: xid, Prog: testProg, Vers: testVers, Proc: procNull}).Append(nil)
	}
	// The reply to a NULL call with xid 0x77: accepted, AUTH_NONE verifier, SUCCESS.
	const nullReply = `00000077 00000001 00000000 00000000 00000000 00000000`

	t.Run("non-CALL message is dropped", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.sendRecord(unhex(t, `00000055 00000001 00000000 00000000 00000000 00000000`)) // a REPLY
		p.sendRecord(unhex(t, `00000056`))                                              // too short for msg_type
		p.send(unhex(t, `80000000`))                                                    // an empty record
		p.sendRecord(nullCall(0x77))
		p.expect(nullReply) // nothing came back for the first two
	})
	t.Run("rpcvers 3", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.sendRecord(unhex(t, `00000042 00000000 00000003 20000099 00000003 00000000 00000000 00000000 00000000 00000000`))
		// xid, REPLY, MSG_DENIED, RPC_MISMATCH, low 2, high 2
		p.expect(`00000042 00000001 00000001 00000000 00000002 00000002`)
	})
	t.Run("truncated header", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.sendRecord(unhex(t, `00000043 00000000 00000002 20000099`)) // vers, proc, cred, verf missing
		// xid, REPLY, MSG_ACCEPTED, verf AUTH_NONE, GARBAGE_ARGS
		p.expect(`00000043 00000001 00000000 00000000 00000000 00000004`)
	})
	t.Run("malformed credential", func(t *testing.T) {
		p := dialRaw(t, addr)
		// cred AUTH_SYS with a body claiming 500 bytes (limit 400)
		p.sendRecord(unhex(t, `00000044 00000000 00000002 20000099 00000003 00000000 00000001 000001f4`))
		// xid, REPLY, MSG_DENIED, AUTH_ERROR, AUTH_BADCRED
		p.expect(`00000044 00000001 00000001 00000001 00000001`)
	})
	t.Run("bad verifier", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.sendRecord(unhex(t, `00000045 00000000 00000002 20000099 00000003 00000000 00000000 00000000 00000001 00000000`))
		// xid, REPLY, MSG_DENIED, AUTH_ERROR, AUTH_BADVERF
		p.expect(`00000045 00000001 00000001 00000001 00000003`)
	})
	t.Run("oversized record closes the connection", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send(unhex(t, `ffffffff 00000000`)) // claims 2 GiB
		p.expectClosed()
	})
	t.Run("peer closes mid-record", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send(unhex(t, `80000064 00000001 00000000`)) // 8 of 100 bytes
		p.c.CloseWrite()
		p.expectClosed()
	})
	t.Run("peer closes mid-header", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send(unhex(t, `8000`))
		p.c.CloseWrite()
		p.expectClosed()
	})
	// The server still serves well-behaved clients.
	p := dialRaw(t, addr)
	p.sendRecord(nullCall(0x77))
	p.expect(nullReply)
	if st := s.Stats(); st.Garbage < 5 {
		t.Errorf("stats %+v: want at least 5 garbage calls counted", st)
	}
}

// A dropped reply is recovered by the Client's retransmission with the same XID.
func TestClientRetransmitsAfterDroppedReply(t *testing.T) {
	var mu sync.Mutex
	seen := map[uint32]int{}
	h := echoHandler()
	h[procNull] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		mu.Lock()
		defer mu.Unlock()
		seen[req.Header.XID]++
		if seen[req.Header.XID] == 1 {
			return ErrNoReply
		}
		return nil
	}
	_, addr := startTCPServer(t, nil, h)
	c := NewClient(dialTCP(t, addr, nil), testProg, testVers, WithRetry(RetryPolicy{Timeout: 20 * time.Millisecond, MaxTries: 500}))
	for i := 0; i < 3; i++ {
		if err := c.Call(context.Background(), procNull, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("server saw %d distinct XIDs, want 3 (retransmissions reuse the XID): %v", len(seen), seen)
	}
	for xid, n := range seen {
		if n < 2 {
			t.Fatalf("xid %#x seen %d times", xid, n)
		}
	}
}

// Without retries left, a timed-out try is an error wrapping ErrTimeout.
func TestClientTimeout(t *testing.T) {
	h := echoHandler()
	h[procNull] = func(ctx context.Context, req *Request, res *xdr.Encoder) error { return ErrNoReply }
	_, addr := startTCPServer(t, nil, h)
	c := NewClient(dialTCP(t, addr, nil), testProg, testVers, WithRetry(RetryPolicy{Timeout: 10 * time.Millisecond, MaxTries: 2}))
	if err := c.Call(context.Background(), procNull, nil, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

// Cancelling the context returns at once; the late reply is dropped and counted.
func TestClientContextCancel(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := echoHandler()
	h[procNull] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		started <- struct{}{}
		<-release
		return nil
	}
	_, addr := startTCPServer(t, nil, h)
	tr := dialTCP(t, addr, nil)
	c := NewClient(tr, testProg, testVers)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	if err := c.Call(ctx, procNull, nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	close(release)
	for deadline := time.Now().Add(10 * time.Second); tr.Unmatched() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("late reply never counted as unmatched")
		}
		time.Sleep(time.Millisecond)
	}
	// A deadline that has passed fails the call without waiting for the server.
	ctx, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if err := c.Call(ctx, procEcho, payloadArg("x"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if n := tr.pending.Len(); n != 0 {
		t.Fatalf("%d calls left pending", n)
	}
}

// After losing its connection a dialed transport reconnects and retransmits.
func TestTCPReconnectRetransmits(t *testing.T) {
	s := NewServer(nil)
	s.Register(testProg, testVers, echoHandler())
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if accepted.Add(1) == 1 {
				// First connection: swallow one call, then drop the connection.
				go func() {
					NewRecordReader(c, 0).ReadRecord(nil)
					c.Close()
				}()
				continue
			}
			go s.ServeConn(NewTCPServerConn(c, nil))
		}
	}()
	tr := dialTCP(t, ln.Addr().String(), &TCPOptions{ReconnectBackoff: time.Millisecond})
	c := NewClient(tr, testProg, testVers)
	var out bytesRes
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Call(ctx, procEcho, payloadArg("survives"), &out); err != nil || string(out.b) != "survives" {
		t.Fatalf("%q, %v", out.b, err)
	}
	if accepted.Load() < 2 {
		t.Fatalf("accepted %d connections", accepted.Load())
	}
}

// A transport over a given connection fails calls when it is lost, and after Close.
func TestTCPTransportConnectionLost(t *testing.T) {
	a, b := net.Pipe()
	tr := NewTCPTransport(a, nil)
	c := NewClient(tr, testProg, testVers)
	go func() {
		NewRecordReader(b, 0).ReadRecord(nil)
		b.Close()
	}()
	err := c.Call(context.Background(), procNull, nil, nil)
	if err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want connection lost", err)
	}
	if err := c.Call(context.Background(), procNull, nil, nil); err == nil {
		t.Fatal("call on a lost transport succeeded")
	}
	tr.Close()
	if err := c.Call(context.Background(), procNull, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A reply over the client's record limit fails the call with a clear error, also on
// a reconnecting transport (which must not retransmit it forever), and the transport
// then serves smaller calls.
func TestTCPClientOversizedReply(t *testing.T) {
	_, addr := startTCPServer(t, nil, echoHandler())
	for _, redial := range []bool{false, true} {
		var tr *TCPTransport
		if redial {
			tr = dialTCP(t, addr, &TCPOptions{MaxRecord: 1000, ReconnectBackoff: time.Millisecond})
		} else {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			tr = NewTCPTransport(c, &TCPOptions{MaxRecord: 1000})
			defer tr.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := NewClient(tr, testProg, testVers)
		err := c.Call(ctx, procEcho, payloadArg(make([]byte, 2000)), nil)
		var tl *RecordTooLargeError
		if !errors.As(err, &tl) || tl.Limit != 1000 {
			t.Fatalf("redial %v: err = %v, want *RecordTooLargeError", redial, err)
		}
		if redial {
			var out bytesRes
			if err := c.Call(ctx, procEcho, payloadArg("small"), &out); err != nil || string(out.b) != "small" {
				t.Fatalf("after an oversized reply: %q, %v", out.b, err)
			}
		}
	}
}

// Shutdown lets calls in progress finish and be answered.
func TestServerGracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	h := echoHandler()
	h[procNull] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		close(started)
		<-release
		res.Uint32(7)
		return nil
	}
	s := NewServer(nil)
	s.Register(testProg, testVers, h)
	l, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	c := NewClient(dialTCP(t, l.Addr().String(), nil), testProg, testVers)
	var got uint32
	callErr := make(chan error, 1)
	go func() {
		callErr <- c.Call(context.Background(), procNull, nil, decoderFunc(func(d *xdr.Decoder) (err error) {
			got, err = d.Uint32()
			return err
		}))
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	close(release)
	if err := <-callErr; err != nil || got != 7 {
		t.Fatalf("call during shutdown: %d, %v", got, err)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Fatal("listener still accepting")
	}
}

// Handlers see the AfterReply hook run once the reply is out; payload positions are
// absolute in the reply message.
func TestHandlerPayloadPositionsAndAfterReply(t *testing.T) {
	released := make(chan struct{})
	var pos atomic.Int64
	h := echoHandler()
	h[procEcho] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		b, err := req.Args.Opaque(-1)
		if err != nil {
			return err
		}
		res.Payload(b)
		pos.Store(int64(res.Payloads()[0].Pos))
		req.AfterReply(func() { close(released) })
		return nil
	}
	_, addr := startTCPServer(t, nil, h)
	c := NewClient(dialTCP(t, addr, nil), testProg, testVers)
	var out bytesRes
	if err := c.Call(context.Background(), procEcho, bytesArg("abc"), &out); err != nil || string(out.b) != "abc" {
		t.Fatalf("%q %v", out.b, err)
	}
	// reply header: xid, REPLY, MSG_ACCEPTED, verf (flavor, length), SUCCESS = 24 bytes,
	// then the length word: data starts at 28.
	if pos.Load() != 28 {
		t.Fatalf("payload position %d, want 28", pos.Load())
	}
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterReply never ran")
	}
}

func TestRegisterOverlapPanics(t *testing.T) {
	s := NewServer(nil)
	s.RegisterRange(1, 2, 4, echoHandler())
	defer func() {
		if recover() == nil {
			t.Fatal("overlapping registration did not panic")
		}
	}()
	s.Register(1, 4, echoHandler())
}

// MaxConcurrent bounds the calls of one connection executing at once.
func TestServerMaxConcurrent(t *testing.T) {
	const bound = 4
	var cur, peak atomic.Int32
	h := echoHandler()
	h[procNull] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		cur.Add(-1)
		return nil
	}
	_, addr := startTCPServer(t, &ServerOptions{MaxConcurrent: bound}, h)
	c := NewClient(dialTCP(t, addr, nil), testProg, testVers)
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Call(context.Background(), procNull, nil, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > bound || p < 1 {
		t.Fatalf("peak concurrency %d, bound %d", p, bound)
	}
}

// A handler's context ends when its caller's connection goes away.
func TestHandlerContextEndsWithConnection(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	h := echoHandler()
	h[procNull] = func(ctx context.Context, req *Request, res *xdr.Encoder) error {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return ctx.Err()
	}
	_, addr := startTCPServer(t, nil, h)
	p := dialRaw(t, addr)
	p.sendRecord((&CallHeader{XID: 9, Prog: testProg, Vers: testVers, Proc: procNull}).Append(nil))
	<-started
	p.c.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ctx.Err() = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("handler context not cancelled after the connection closed")
	}
}

// flakyListener fails its first Accepts with EMFILE, as a process out of descriptors.
type flakyListener struct {
	Listener
	failures atomic.Int32
}

func (l *flakyListener) Accept(ctx context.Context) (ServerConn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept(ctx)
}

// Serve survives transient accept errors.
func TestServeRetriesTransientAcceptErrors(t *testing.T) {
	s := NewServer(nil)
	s.Register(testProg, testVers, echoHandler())
	tl, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &flakyListener{Listener: tl}
	l.failures.Store(3)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	c := NewClient(dialTCP(t, tl.Addr().String(), nil), testProg, testVers)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Call(ctx, procNull, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Shutdown(ctx)
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve: %v", err)
	}
}

// ServerOptions.Flavors: AUTH_NONE excluded gets AUTH_TOOWEAK, except on NULL.
func TestServerFlavorPolicy(t *testing.T) {
	_, addr := startTCPServer(t, &ServerOptions{Flavors: []Flavor{AuthSys}}, echoHandler())
	tr := dialTCP(t, addr, nil)
	ctx := context.Background()
	none := NewClient(tr, testProg, testVers)
	if err := none.Call(ctx, procNull, nil, nil); err != nil {
		t.Fatalf("NULL with AUTH_NONE: %v", err)
	}
	var re *RejectError
	if err := none.Call(ctx, procEcho, bytesArg("x"), nil); !errors.As(err, &re) || re.AuthStat != AuthTooWeak {
		t.Fatalf("ECHO with AUTH_NONE: %v, want AUTH_TOOWEAK", err)
	}
	cred, err := NewAuthSys(&AuthSysParams{MachineName: []byte("c"), UID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := NewClient(tr, testProg, testVers, WithAuth(cred)).Call(ctx, procEcho, bytesArg("x"), nil); err != nil {
		t.Fatalf("ECHO with AUTH_SYS: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewServer accepted an unimplemented flavor")
		}
	}()
	NewServer(&ServerOptions{Flavors: []Flavor{RPCSecGSS}})
}
