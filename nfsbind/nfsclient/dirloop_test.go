//go:build linux

package nfsclient

import (
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
