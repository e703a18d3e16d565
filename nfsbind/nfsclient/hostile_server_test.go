//go:build linux

package nfsclient

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// endlessDir stands for a hostile or broken server: it rewrites the real server's
// READDIR and READDIRPLUS replies so that the directory never ends, with each
// reply's last cookie 7 (loop) or a new one each time.
type endlessDir struct {
	oncrpc.RoundTripper
	loop    bool
	cookie  uint64
	replies int
}

func (e *endlessDir) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := e.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	proc := nfs3.Proc(binary.BigEndian.Uint32(call.Msg.Inline[20:]))
	if proc != nfs3.ProcReaddir && proc != nfs3.ProcReaddirplus {
		return nil
	}
	e.replies++
	const hdr = 24 // accepted reply, empty verifier
	d := xdr.NewDecoder(reply.Inline[hdr:])
	var enc xdr.Encoder
	enc.Reset(append([]byte(nil), reply.Inline[:hdr]...))
	e.cookie++
	last := e.cookie
	if e.loop {
		last = 7
	}
	if proc == nfs3.ProcReaddir {
		var r nfs3.ReaddirRes
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		r.EOF = false
		r.Entries[len(r.Entries)-1].Cookie = last
		r.EncodeXDR(&enc)
	} else {
		var r nfs3.ReaddirplusRes
		if err := r.DecodeXDR(d); err != nil {
			return err
		}
		r.EOF = false
		r.Entries[len(r.Entries)-1].Cookie = last
		r.EncodeXDR(&enc)
	}
	reply.Inline = enc.Bytes()
	return nil
}

// A server that never ends a directory gets an error, not a client that lists
// forever: a cookie loop at once, unique cookies past maxDirEntries.
func TestDirectoryThatNeverEnds(t *testing.T) {
	addr, export := startServer(t)
	c, p := dial(t, addr, export)
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		if _, _, err := c.Create(ctx, c.Root(), name, 0o644, false); err != nil {
			t.Fatal(err)
		}
	}
	defer func(n int) { maxDirEntries = n }(maxDirEntries)
	maxDirEntries = 300
	list := map[string]func() error{
		"READDIR":     func() error { _, err := c.Readdir(ctx, c.Root()); return err },
		"READDIRPLUS": func() error { _, err := c.ReaddirPlus(ctx, c.Root()); return err },
	}
	for name, ls := range list {
		for _, loop := range []bool{true, false} {
			e := &endlessDir{RoundTripper: p.RoundTripper, loop: loop}
			p.RoundTripper = e
			err := ls()
			p.RoundTripper = e.RoundTripper
			want := "more than 300 entries"
			if loop {
				want = "cookie 7 again"
			}
			if err == nil || !strings.Contains(err.Error(), name+": ") || !strings.Contains(err.Error(), want) {
				t.Errorf("%s, loop %v: %v, want an error saying %q", name, loop, err, want)
			}
			if loop && e.replies != 2 {
				t.Errorf("%s: the loop was found after %d replies, want 2", name, e.replies)
			}
		}
		if _, err := c.Readdir(ctx, c.Root()); err != nil {
			t.Errorf("%s: a well-behaved listing afterwards: %v", name, err)
		}
	}
}

// endlessFile stands for a hostile server: no READ reports the end of the file, and
// every READ past its real end is answered with a full count of zeros.
type endlessFile struct {
	oncrpc.RoundTripper
	size uint64
}

func (e *endlessFile) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := e.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	in := call.Msg.Inline
	if nfs3.Proc(binary.BigEndian.Uint32(in[20:])) != nfs3.ProcRead {
		return nil
	}
	args := in[len(in)-12:] // READ3args ends with offset and count
	off, count := binary.BigEndian.Uint64(args), binary.BigEndian.Uint32(args[8:])
	if off < e.size { // the real reply, its end of file taken away
		r := reply.Inline[24:]
		at := 8 // status, attributes_follow
		if binary.BigEndian.Uint32(r[4:]) == 1 {
			at += nfs3.FattrSize
		}
		binary.BigEndian.PutUint32(r[at+4:], 0) // eof, after count
		return nil
	}
	out := append([]byte(nil), reply.Inline[:24]...) // accepted reply, empty verifier
	out = binary.BigEndian.AppendUint32(out, 0)      // NFS3_OK
	out = binary.BigEndian.AppendUint32(out, 0)      // no attributes
	out = binary.BigEndian.AppendUint32(out, count)
	out = binary.BigEndian.AppendUint32(out, 0) // not the end
	out = binary.BigEndian.AppendUint32(out, count)
	reply.Inline = append(out, make([]byte, count)...)
	return nil
}

// ReadAll stops one READ past the size the file had, with an error, when the server
// never reports the end.
func TestReadAllOfFileThatNeverEnds(t *testing.T) {
	addr, export := startServer(t)
	c, p := dial(t, addr, export)
	ctx := context.Background()
	fh, _, err := c.Create(ctx, c.Root(), "f", 0o644, false)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 10000)
	if err := c.WriteAll(ctx, fh, data); err != nil {
		t.Fatal(err)
	}
	p.RoundTripper = &endlessFile{RoundTripper: p.RoundTripper, size: uint64(len(data))}
	_, err = c.ReadAll(ctx, fh)
	p.RoundTripper = p.RoundTripper.(*endlessFile).RoundTripper
	if err == nil || !strings.Contains(err.Error(), "more than the file's 100000 bytes without its end") {
		t.Errorf("endless file: %v", err)
	}
	if got, err := c.ReadAll(ctx, fh); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the real file afterwards: %d bytes, %v", len(got), err)
	}
}
