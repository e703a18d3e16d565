package oncrpc

import (
	"context"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	testProg = 0x20000099
	testVers = 3
	procNull = 0
	procEcho = 1
)

// bytesArg encodes a variable-length opaque argument.
type bytesArg []byte

func (b bytesArg) EncodeXDR(e *xdr.Encoder) { e.Opaque(b) }

// payloadArg encodes a DDP-eligible opaque argument.
type payloadArg []byte

func (b payloadArg) EncodeXDR(e *xdr.Encoder) { e.Payload(b) }

// bytesRes decodes a variable-length opaque result, copying it.
type bytesRes struct{ b []byte }

func (r *bytesRes) DecodeXDR(d *xdr.Decoder) error {
	b, err := d.Payload(-1)
	if err != nil {
		return err
	}
	r.b = append(r.b[:0], b...)
	return nil
}

// echoHandler serves procNull and procEcho; echo returns its argument as a payload.
func echoHandler() Procs {
	return Procs{
		procNull: func(ctx context.Context, req *Request, res *xdr.Encoder) error { return nil },
		procEcho: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
			b, err := req.Args.Opaque(-1)
			if err != nil {
				return err
			}
			res.Payload(b)
			return nil
		},
	}
}

// startTCPServer starts a Server with h registered on 127.0.0.1 and returns its address.
func startTCPServer(t testing.TB, opts *ServerOptions, h Handler) (*Server, string) {
	t.Helper()
	s, l := startTCPListener(t, opts, h)
	return s, l.Addr().String()
}

// startTCPListener is startTCPServer that returns the listener.
func startTCPListener(t testing.TB, opts *ServerOptions, h Handler) (*Server, *TCPListener) {
	t.Helper()
	s := NewServer(opts)
	if h != nil {
		s.Register(testProg, testVers, h)
	}
	l, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10e9)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-done
	})
	return s, l
}

func dialTCP(t testing.TB, addr string, opts *TCPOptions) *TCPTransport {
	t.Helper()
	tr, err := DialTCP(context.Background(), addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}
