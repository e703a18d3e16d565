package oncrpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	echoProg = 0x20000001 // a transient program number (RFC 5531 §7.3: 0x20000000-0x3fffffff)
	echoVers = 1
	echoProc = 1
)

// message is an echo argument and result: an XDR string.
type message struct{ text string }

func (m *message) EncodeXDR(e *xdr.Encoder) { e.String(m.text) }

func (m *message) DecodeXDR(d *xdr.Decoder) (err error) {
	m.text, err = d.String(1024)
	return err
}

// A service and a client over TCP on the loopback interface.
func Example() {
	srv := oncrpc.NewServer(nil)
	srv.Register(echoProg, echoVers, oncrpc.Procs{
		0: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error { return nil }, // NULL
		echoProc: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			var m message
			if err := m.DecodeXDR(req.Args); err != nil {
				return err // answered GARBAGE_ARGS
			}
			m.text = "echo: " + m.text
			m.EncodeXDR(res)
			return nil
		},
	})
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, l.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	c := oncrpc.NewClient(tr, echoProg, echoVers)
	var res message
	if err := c.Call(ctx, echoProc, &message{"hello"}, &res); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.text)

	// A procedure the program does not have.
	err = c.Call(ctx, 42, nil, nil)
	var ae *oncrpc.AcceptError
	fmt.Println(errors.As(err, &ae) && ae.Stat == oncrpc.ProcUnavail, err)
	// Output:
	// echo: hello
	// true oncrpc: call accepted, PROC_UNAVAIL
}

// An AUTH_SYS credential, built once and sent with every call of a Client.
func ExampleNewAuthSys() {
	cred, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{
		Stamp:       1,
		MachineName: []byte("client"),
		UID:         1000,
		GID:         1000,
		GIDs:        []uint32{1000, 27},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cred.Flavor, len(cred.Body), "bytes")
	_ = oncrpc.WithAuth(cred) // pass to NewClient

	_, err = oncrpc.NewAuthSys(&oncrpc.AuthSysParams{GIDs: make([]uint32, 17)})
	fmt.Println(err)
	// Output:
	// AUTH_SYS 36 bytes
	// oncrpc: authsys_parms.gids: 17 entries, limit 16: AUTH_SYS credential exceeds RFC 5531 limits
}

// Decoding a reply header and turning its status into a typed error.
func ExampleReplyHeader_Err() {
	// xid 9, REPLY, MSG_ACCEPTED, verifier AUTH_NONE, PROG_MISMATCH, low 2, high 3
	b := []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3}
	var h oncrpc.ReplyHeader
	if err := h.DecodeXDR(xdr.NewDecoder(b)); err != nil {
		log.Fatal(err)
	}
	var ae *oncrpc.AcceptError
	if errors.As(h.Err(), &ae) {
		fmt.Println(ae.Stat, ae.Low, ae.High)
	}
	// Output:
	// PROG_MISMATCH 2 3
}

// Encoding a call header by appending to a buffer; decoding errors name the field.
func ExampleCallHeader() {
	h := oncrpc.CallHeader{XID: 1, Prog: 100003, Vers: 3, Proc: 0}
	b := h.Append(nil)
	fmt.Println(len(b), "bytes")

	var d oncrpc.CallHeader
	err := d.DecodeXDR(xdr.NewDecoder(b[:30]))
	fmt.Println(err)
	// Output:
	// 40 bytes
	// oncrpc: call header cred.body: xdr: opaque<> at offset 28: needs 4 bytes, 2 remain
}

// A Handler denies a call whose credential is too weak for it.
func ExampleAuthErr() {
	h := oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		if req.AuthSys == nil || req.AuthSys.UID != 0 {
			return oncrpc.AuthErr(oncrpc.AuthTooWeak) // MSG_DENIED, AUTH_ERROR, AUTH_TOOWEAK
		}
		return nil
	})
	srv := oncrpc.NewServer(nil)
	srv.Register(echoProg, echoVers, h)
	fmt.Println(oncrpc.AuthErr(oncrpc.AuthTooWeak))
	// Output:
	// oncrpc: call denied, AUTH_ERROR: AUTH_TOOWEAK
}

// A Monitor says when a server stops answering and when it answers again, as the
// Linux NFS client's "server not responding, still trying" and "server OK". Here the
// server holds its reply until it hears the first message.
func ExampleMonitor() {
	resume := make(chan struct{})
	srv := oncrpc.NewServer(nil)
	srv.Register(echoProg, echoVers, oncrpc.Procs{
		echoProc: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
			<-resume
			var m message
			if err := m.DecodeXDR(req.Args); err != nil {
				return err
			}
			m.EncodeXDR(res)
			return nil
		},
	})
	defer srv.Shutdown(context.Background())
	ctx := context.Background()
	tr := serveAndDial(ctx, srv)
	defer tr.Close()
	m := oncrpc.NewMonitor(func(responding bool) {
		if responding {
			fmt.Println("server OK")
			return
		}
		fmt.Println("server not responding, still trying")
		close(resume)
	})
	// After 50 ms without a reply, a call counts as unanswered and is sent again.
	c := oncrpc.NewClient(tr, echoProg, echoVers, oncrpc.WithMonitor(m),
		oncrpc.WithRetry(oncrpc.RetryPolicy{Timeout: 50 * time.Millisecond, MaxTries: 1000}))
	var res message
	if err := c.Call(ctx, echoProc, &message{"still here"}, &res); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.text)
	// Output:
	// server not responding, still trying
	// server OK
	// still here
}

// serveAndDial serves srv on a loopback TCP listener and dials it, as Example does.
// The caller shuts srv down and closes the transport.
func serveAndDial(ctx context.Context, srv *oncrpc.Server) *oncrpc.TCPTransport {
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(l)
	tr, err := oncrpc.DialTCP(ctx, l.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	return tr
}
