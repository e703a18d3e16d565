package soft

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// mpaRequestSeeds are MPA Requests a listener must accept or refuse: the
// hostile cases of TestHostileMPARequestRejected and valid requests.
func mpaRequestSeeds(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"valid-enhanced":          mpaHex(t, "REQ | 10 02 | 000c | 0080 0000 | f6ab0e18 01010303"),
		"valid-rev1":              mpaHex(t, "REQ | 40 01 | 0002 | 6869"),
		"valid-p2p-write":         mpaHex(t, "REQ | 10 02 | 0004 | 8004 8004"),
		"revision-3":              mpaHex(t, "REQ | 10 03 | 0004 | 0010 0010"),
		"revision-255":            mpaHex(t, "REQ | 00 ff | 0000"),
		"reply-key":               mpaHex(t, "REP | 10 02 | 0004 | 0010 0010"),
		"garbage-key":             mpaHex(t, "4745 5420 2f20 4854 5450 2f31 2e31 0d0a | 00 01 | 0000"),
		"markers":                 mpaHex(t, "REQ | 90 02 | 0004 | 0010 0010"),
		"enhanced-no-pd":          mpaHex(t, "REQ | 10 02 | 0000"),
		"enhanced-short-pd":       mpaHex(t, "REQ | 10 02 | 0003 | 0010 00"),
		"pd-too-long":             mpaHex(t, "REQ | 10 02 | 0101"),
		"p2p-send-rtr-only":       mpaHex(t, "REQ | 10 02 | 0004 | c004 0004"),
		"truncated-header":        mpaHex(t, "REQ | 10"),
		"truncated-private-data":  mpaHex(t, "REQ | 10 02 | 000c | 0080"),
		"request-then-fpdu-bytes": mpaHex(t, "REQ | 10 02 | 0004 | 0010 0008 | 0014 4143 0000"),
	}
}

// FuzzListenRequest sends arbitrary bytes to a listener as the MPA Request
// (then half-closes) and reads everything that comes back. The listener's
// ULP rejects every request it is handed. Whatever the bytes, the answer is
// nothing (the stream ended inside the request) or exactly one MPA Reply
// with the R bit, followed by a clean close: a Reject with the ULP's private
// data when the request was valid, a provider Reject when its header was
// not; never a panic, a hang or a leak.
func FuzzListenRequest(f *testing.F) {
	for _, b := range mpaRequestSeeds(f) {
		f.Add(b)
	}
	dev := New(Config{})
	ln, err := dev.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			cr, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			cr.Reject([]byte("fuzz"))
		}
	}()
	f.Fuzz(func(t *testing.T, req []byte) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// Close with a RST once the answer is read: thousands of runs
		// would otherwise fill the port range with TIME-WAIT sockets.
		defer c.Close()
		defer c.(*net.TCPConn).SetLinger(0)
		c.SetDeadline(time.Now().Add(15 * time.Second))
		c.Write(req)
		c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("reading the answer: %v (have %x)", err, got)
		}
		var hdr iwarp.MPAFrame
		_, herr := iwarp.MPAFrameLen(req, iwarp.MPARequest)
		var pe *iwarp.ProtocolError
		badHeader := errors.As(herr, &pe)
		_, ferr := hdr.Decode(req, iwarp.MPARequest)
		complete := ferr == nil
		if len(got) == 0 {
			if badHeader || complete {
				t.Fatalf("no answer to %x (header error %v)", req, herr)
			}
			return
		}
		var rep iwarp.MPAFrame
		n, err := rep.Decode(got, iwarp.MPAReply)
		if err != nil || n != len(got) || !rep.Rejected() {
			t.Fatalf("answer %x to %x: %+v, %v; want one Reject", got, req, rep, err)
		}
		switch {
		case badHeader && len(rep.PrivateData) != 0:
			t.Fatalf("provider Reject of %x carries private data %q", req, rep.PrivateData)
		case complete && string(rep.PrivateData) != "fuzz":
			t.Fatalf("ULP Reject of %x carries %q", req, rep.PrivateData)
		}
	})
}

// TestWriteListenFuzzCorpus regenerates testdata/fuzz/FuzzListenRequest
// when SOFT_WRITE_CORPUS=1.
func TestWriteListenFuzzCorpus(t *testing.T) {
	if os.Getenv("SOFT_WRITE_CORPUS") != "1" {
		t.Skip("set SOFT_WRITE_CORPUS=1 to regenerate the corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzListenRequest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range mpaRequestSeeds(t) {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
