package rpcrdma

import (
	"bytes"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestHostileMPAMalformedRFC8797PrivateData: a connection request whose
// private data starts with the RFC 8797 magic but is cut short is refused
// with an MPA Reply carrying the R bit and the server's own RFC 8797 data
// (so the client learns our sizes), and the connection closes; the listener
// goes on accepting. Private data of another format, or of a version we do
// not know, is not malformed: those connections are accepted with the
// RFC 8166 default sizes (RFC 8797 fallback).
func TestHostileMPAMalformedRFC8797PrivateData(t *testing.T) {
	ln, err := Listen(tpCtx(t), soft.New(soft.Config{}), "127.0.0.1:0", &ServerOptions{InlineSend: 4096, InlineRecv: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 8)
	ctx := tpCtx(t)
	go func() {
		for {
			sc, err := ln.Accept(ctx)
			if err != nil {
				accepted <- err
				return
			}
			accepted <- nil
			defer sc.Close()
		}
	}()
	hexb := func(s string) []byte {
		s = strings.NewReplacer("REQ", hex.EncodeToString([]byte("MPA ID Req Frame")),
			"REP", hex.EncodeToString([]byte("MPA ID Rep Frame")), " ", "", "|", "").Replace(s)
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	exchange := func(req []byte, n int) (net.Conn, []byte) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, n)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("reading the reply to %x: %v", req, err)
		}
		return c, got
	}
	// Ours: magic, version 1, flags 0, sizes 4096/4096.
	const ours = "f6ab0e18 01 00 03 03"
	for _, c := range []struct{ name, req, reply string }{
		{"Enhanced7Bytes", "REQ | 10 02 | 000b | 0080 0000 | f6ab0e18 01 01 03", "REP | 30 02 | 000c | 0000 0000 | " + ours},
		{"EnhancedMagicOnly", "REQ | 10 02 | 0008 | 0080 0000 | f6ab0e18", "REP | 30 02 | 000c | 0000 0000 | " + ours},
		{"Rev1_6Bytes", "REQ | 00 01 | 0006 | f6ab0e18 0101", "REP | 20 01 | 0008 | " + ours},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := hexb(c.reply)
			conn, got := exchange(hexb(c.req), len(want))
			if !bytes.Equal(got, want) {
				t.Fatalf("reply\n got %x\nwant %x", got, want)
			}
			var extra [16]byte
			if n, err := conn.Read(extra[:]); err != io.EOF {
				t.Fatalf("after the Reject: %d bytes, %v; want EOF", n, err)
			}
		})
	}
	select {
	case err := <-accepted:
		t.Fatalf("Accept returned (%v) for a refused request", err)
	default:
	}
	// Not malformed: another format, an unknown version, nothing at all.
	for _, c := range []struct{ name, req string }{
		{"OtherFormat", "REQ | 10 02 | 0009 | 0080 0000 | 68656c6c6f"},
		{"Version2", "REQ | 10 02 | 000c | 0080 0000 | f6ab0e18 02 01 03 03"},
		{"ShortNoMagic", "REQ | 10 02 | 0007 | 0080 0000 | f6ab0e"},
		{"None", "REQ | 10 02 | 0004 | 0080 0000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got := exchange(hexb(c.req), iwarp.MPAHeaderLen+4+PrivateSize)
			var rep iwarp.MPAFrame
			if _, err := rep.Decode(got, iwarp.MPAReply); err != nil || rep.Rejected() || !bytes.Equal(rep.PrivateData, hexb(ours)) {
				t.Fatalf("reply %x (%+v, %v), want an accept with our private data", got, rep, err)
			}
			if err := <-accepted; err != nil {
				t.Fatalf("Accept: %v", err)
			}
		})
	}
}
