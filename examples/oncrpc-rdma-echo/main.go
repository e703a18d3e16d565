// Command oncrpc-rdma-echo is an ONC RPC service and client over RPC-over-RDMA, on the
// software iWARP provider (verbs/soft) and loopback: no RDMA hardware needed. It is
// examples/oncrpc-echo with the transport swapped; the program code is the same.
//
// Program 0x20000002, version 1: procedure 0 is NULL, procedure 1 (ECHO) returns its
// argument. The argument and result are DDP-eligible payloads, so a large echo goes
// out in a read chunk (the server pulls it by RDMA Read) and comes back in the
// caller's write chunk (the server pushes it by RDMA Write); a small one, whose whole
// reply the call's MaxReply bounds within the inline size, travels inline both ways.
//
//	go run ./examples/oncrpc-rdma-echo -size 262144
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	echoProg, echoVers = 0x20000002, 1
	procNull, procEcho = 0, 1
	maxEcho            = 1 << 20
)

// blob is a DDP-eligible opaque argument or result.
type blob []byte

func (b blob) EncodeXDR(e *xdr.Encoder) { e.Payload(b) }

func (b *blob) DecodeXDR(d *xdr.Decoder) (err error) {
	*b, err = d.Payload(maxEcho)
	return err
}

var handler = oncrpc.Procs{
	procNull: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error { return nil },
	procEcho: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		b, err := req.Args.Payload(maxEcho)
		if err != nil {
			return err // GARBAGE_ARGS
		}
		res.Payload(b) // the argument's buffer outlives the reply: no copy
		return nil
	},
}

// run serves the program over RDMA on a loopback port, calls ECHO with size bytes
// and returns the server transport's counters.
func run(ctx context.Context, size int) (rpcrdma.ServerStats, error) {
	dev := soft.New(soft.Config{})
	defer dev.Close()
	l, err := rpcrdma.Listen(ctx, dev, "127.0.0.1:0", nil)
	if err != nil {
		return rpcrdma.ServerStats{}, err
	}
	srv := oncrpc.NewServer(nil)
	srv.Register(echoProg, echoVers, handler)
	go srv.Serve(l)
	defer srv.Close()

	tr, err := rpcrdma.Dial(ctx, dev, l.Addr().String(), nil)
	if err != nil {
		return rpcrdma.ServerStats{}, err
	}
	defer tr.Close()
	c := oncrpc.NewClient(tr, echoProg, echoVers)
	if err := c.Call(ctx, procNull, nil, nil); err != nil {
		return rpcrdma.ServerStats{}, fmt.Errorf("NULL: %w", err)
	}
	in := bytes.Repeat([]byte("RDMA"), size/4)
	var out blob
	sink := make([]byte, len(in)) // the write chunk the reply's data lands in, if large
	// The reply: the RPC reply header (24 bytes with AUTH_NONE), the length word, the data.
	maxReply := 24 + 4 + len(in) + 3
	if err := c.CallWithOptions(ctx, procEcho, blob(in), &out, oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: maxReply}); err != nil {
		return rpcrdma.ServerStats{}, fmt.Errorf("ECHO: %w", err)
	}
	if !bytes.Equal(out, in) {
		return rpcrdma.ServerStats{}, fmt.Errorf("ECHO returned %d bytes, not the %d sent", len(out), len(in))
	}
	// Shutdown returns once every call has been answered, so the counters are final.
	if err := srv.Shutdown(ctx); err != nil {
		return rpcrdma.ServerStats{}, err
	}
	return l.Stats(), nil
}

func main() {
	size := flag.Int("size", 256<<10, "bytes to echo (at most 1 MiB)")
	flag.Parse()
	st, err := run(context.Background(), min(max(*size, 0), maxEcho))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("echoed %d bytes over RDMA: server pulled %d bytes by RDMA Read, wrote %d bytes into %d write chunk(s)\n",
		*size, st.ReadBytes, st.WriteBytes, st.WriteChunks)
}
