package oncrpc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// BenchmarkNullRPC compares a NULL call over the TCP transport (Client, Server and
// record marking) with a raw TCP ping-pong of the same sizes (44 bytes out: a record
// mark and the 40-byte call header; 28 bytes back), in one run:
//
//	go test -run XXX -bench NullRPC ./oncrpc
func BenchmarkNullRPC(b *testing.B) {
	b.Run("oncrpc-tcp", func(b *testing.B) {
		_, addr := startTCPServer(b, nil, echoHandler())
		c := NewClient(dialTCP(b, addr, nil), testProg, testVers)
		ctx := context.Background()
		if err := c.Call(ctx, procNull, nil, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Call(ctx, procNull, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-tcp", func(b *testing.B) {
		call := writeRecord(&Message{Inline: (&CallHeader{XID: 1, Prog: testProg, Vers: testVers}).Append(nil)}, 0)
		reply := writeRecord(&Message{Inline: (&ReplyHeader{XID: 1}).Append(nil)}, 0)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			in := make([]byte, len(call))
			for {
				if _, err := io.ReadFull(r, in); err != nil {
					return
				}
				if _, err := c.Write(reply); err != nil {
					return
				}
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		r := bufio.NewReader(c)
		in := make([]byte, len(reply))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Write(call); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(r, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNullRPCParallel issues NULL calls from many goroutines over one connection.
func BenchmarkNullRPCParallel(b *testing.B) {
	_, addr := startTCPServer(b, nil, echoHandler())
	c := NewClient(dialTCP(b, addr, nil), testProg, testVers)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Call(context.Background(), procNull, nil, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// loopTransport answers every call in place with a SUCCESS reply carrying one word,
// so that a benchmark measures the Client alone.
type loopTransport struct{}

func (loopTransport) RoundTrip(ctx context.Context, call *ClientCall, reply *ClientReply) error {
	h := ReplyHeader{XID: call.XID}
	reply.Inline = xdr.AppendUint32(h.Append(reply.Inline[:0]), 42)
	reply.Placed = reply.Placed[:0]
	return nil
}

func (loopTransport) Close() error { return nil }

type wordArg uint32

func (w wordArg) EncodeXDR(e *xdr.Encoder) { e.Uint32(uint32(w)) }

type wordRes uint32

func (w *wordRes) DecodeXDR(d *xdr.Decoder) error {
	v, err := d.Uint32()
	*w = wordRes(v)
	return err
}

// BenchmarkClientCall shows that a steady-state Call allocates nothing in the RPC
// layer (AUTH_SYS credential, one argument, one result).
func BenchmarkClientCall(b *testing.B) {
	cred, err := NewAuthSys(&sysParams)
	if err != nil {
		b.Fatal(err)
	}
	c := NewClient(loopTransport{}, testProg, testVers, WithAuth(cred))
	ctx := context.Background()
	arg := wordArg(7)
	var res wordRes
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Call(ctx, 1, &arg, &res); err != nil {
			b.Fatal(err)
		}
	}
}

func TestClientCallDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	c := NewClient(loopTransport{}, testProg, testVers)
	ctx := context.Background()
	arg := wordArg(7)
	var res wordRes
	allocs := testing.AllocsPerRun(1000, func() {
		if err := c.Call(ctx, 1, &arg, &res); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || res != 42 {
		t.Fatalf("%v allocs per call, result %d", allocs, res)
	}
}

// A NULL round trip over TCP, client and server together (PendingCalls, record
// writing and reading, dispatch), does not allocate in steady state, with or without a
// per-try timeout, and with a context that can be cancelled or has a deadline (the
// write watches the context only once it blocks).
func TestTCPNullRoundTripAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	_, addr := startTCPServer(t, nil, echoHandler())
	tr := dialTCP(t, addr, nil)
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	withDeadline, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	for _, ctx := range []context.Context{context.Background(), cancelable, withDeadline} {
		for _, p := range []RetryPolicy{{}, {Timeout: time.Minute, MaxTries: 3}} {
			c := NewClient(tr, testProg, testVers, WithRetry(p))
			allocs := testing.AllocsPerRun(200, func() {
				if err := c.Call(ctx, procNull, nil, nil); err != nil {
					t.Fatal(err)
				}
			})
			// sync.Pool may be emptied by a GC during the run; allow that, not a per-call cost.
			if allocs >= 0.5 {
				t.Fatalf("context %v, policy %+v: %.2f allocs per NULL round trip over TCP", ctx, p, allocs)
			}
		}
	}
}

// BenchmarkEchoPayload sends and receives a DDP-eligible payload over TCP: the payload
// goes out by vectored write without being copied into the call buffer.
func BenchmarkEchoPayload(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		b.Run(byteSize(size), func(b *testing.B) {
			_, addr := startTCPServer(b, nil, echoHandler())
			c := NewClient(dialTCP(b, addr, nil), testProg, testVers)
			in := make([]byte, size)
			var out bytesRes
			ctx := context.Background()
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Call(ctx, procEcho, payloadArg(in), &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkTCPBackchannelRoundTrip measures one reverse call from the server to a
// client's callback handler and back, over TCP.
func BenchmarkTCPBackchannelRoundTrip(b *testing.B) {
	relay := &reverseRelay{}
	_, addr := startTCPServer(b, nil, relay.handler())
	tr := dialTCP(b, addr, &TCPOptions{Backchannel: &BackchannelOptions{Handler: callbackHandler(nil, nil)}})
	var out opaqueRes
	if err := NewClient(tr, testProg, testVers).Call(context.Background(), procEcho, bytesArg("warm"), &out); err != nil {
		b.Fatal(err)
	}
	c := NewClient(relay.rt.Load().(RoundTripper), cbProg, cbVers)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.Call(context.Background(), cbProcCB, bytesArg("x"), &out); err != nil {
			b.Fatal(err)
		}
	}
}
