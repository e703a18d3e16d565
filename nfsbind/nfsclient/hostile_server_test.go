//go:build linux

package nfsclient

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient/nfsclienttest"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A server that never ends a directory gets an error, not a client that lists
// forever: a cookie loop at once, unique cookies past maxDirEntries.
func TestDirectoryThatNeverEnds(t *testing.T) {
	c, p := threeFiles(t)
	ctx := context.Background()
	list := map[string]func() error{
		"READDIR":     func() error { _, err := c.Readdir(ctx, c.Root()); return err },
		"READDIRPLUS": func() error { _, err := c.ReaddirPlus(ctx, c.Root()); return err },
	}
	for name, ls := range list {
		for _, loop := range []bool{true, false} {
			e := &nfsclienttest.EndlessDir{RoundTripper: p.RoundTripper, Loop: loop}
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
			if loop && e.Replies != 2 {
				t.Errorf("%s: the loop was found after %d replies, want 2", name, e.Replies)
			}
		}
		if _, err := c.Readdir(ctx, c.Root()); err != nil {
			t.Errorf("%s: a well-behaved listing afterwards: %v", name, err)
		}
	}
}

// ReaddirSeq and ReaddirPlusSeq list a directory that never ends for as long as
// their caller asks, one reply at a time, stop when the caller stops, and end a cookie
// loop with an error.
func TestDirectorySequenceThatNeverEnds(t *testing.T) {
	c, p := threeFiles(t) // the sequences go past its maxDirEntries
	ctx := context.Background()
	const want = 3000
	for name, seq := range map[string]func() iter.Seq2[Entry, error]{
		"READDIR":     func() iter.Seq2[Entry, error] { return c.ReaddirSeq(ctx, c.Root()) },
		"READDIRPLUS": func() iter.Seq2[Entry, error] { return c.ReaddirPlusSeq(ctx, c.Root()) },
	} {
		for _, loop := range []bool{false, true} {
			e := &nfsclienttest.EndlessDir{RoundTripper: p.RoundTripper, Loop: loop}
			p.RoundTripper = e
			n, errs := 0, []error(nil)
			for _, err := range seq() {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if n++; n == want {
					break
				}
			}
			p.RoundTripper = e.RoundTripper
			switch {
			case loop && (len(errs) != 1 || !strings.Contains(errs[0].Error(), name+": the server returned cookie 7 again")):
				t.Errorf("%s loop: %d entries, errors %v, want one naming the cookie loop", name, n, errs)
			case loop && (n != 6 || e.Replies != 2):
				t.Errorf("%s loop: %d entries from %d replies, want 6 from 2", name, n, e.Replies)
			case !loop && (len(errs) != 0 || n != want || e.Replies != want/3):
				t.Errorf("%s: %d entries from %d replies, errors %v; want %d from %d and no error", name, n, e.Replies, errs, want, want/3)
			}
		}
	}
}

// threeFiles serves a root directory holding files a, b and c, with maxDirEntries
// 300 until the test ends.
func threeFiles(t *testing.T) (*Client, *placing) {
	addr, export := startServer(t)
	c, p := dial(t, addr, export)
	for _, name := range []string{"a", "b", "c"} {
		if _, _, err := c.Create(context.Background(), c.Root(), name, 0o644, false); err != nil {
			t.Fatal(err)
		}
	}
	n := maxDirEntries
	maxDirEntries = 300
	t.Cleanup(func() { maxDirEntries = n })
	return c, p
}

// newServedFile starts a server, dials it and creates the empty file "f" in its
// export: the client, its transport (whose RoundTripper a test may wrap to play a
// hostile server) and the file's handle.
func newServedFile(t *testing.T) (*Client, *placing, nfs3.FH) {
	t.Helper()
	addr, export := startServer(t)
	c, p := dial(t, addr, export)
	fh, _, err := c.Create(context.Background(), c.Root(), "f", 0o644, false)
	if err != nil {
		t.Fatal(err)
	}
	return c, p, fh
}

// ReadAll stops one READ past the size the file had, with an error, when the server
// never reports the end.
func TestReadAllOfFileThatNeverEnds(t *testing.T) {
	c, p, fh := newServedFile(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 10000)
	if err := c.WriteAll(ctx, fh, data); err != nil {
		t.Fatal(err)
	}
	p.RoundTripper = &nfsclienttest.EndlessFile{RoundTripper: p.RoundTripper, Size: uint64(len(data))}
	_, err := c.ReadAll(ctx, fh)
	p.RoundTripper = p.RoundTripper.(*nfsclienttest.EndlessFile).RoundTripper
	if err == nil || !strings.Contains(err.Error(), "more than the file's 100000 bytes without its end") {
		t.Errorf("endless file: %v", err)
	}
	if got, err := c.ReadAll(ctx, fh); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the real file afterwards: %d bytes, %v", len(got), err)
	}
}

// A WRITE reply claiming more bytes than the WRITE carried is an error: believing it
// would make WriteAll skip data it never sent and still report the file written.
func TestWriteCountLargerThanSent(t *testing.T) {
	c, p, fh := newServedFile(t)
	ctx := context.Background()
	w := &rewriting{RoundTripper: p.RoundTripper, proc: nfs3.ProcWrite, edit: func(_ int, _, res []byte) []byte {
		at := len(res) - 16 // WRITE3resok ends with count, committed and the verifier
		binary.BigEndian.PutUint32(res[at:], 2*binary.BigEndian.Uint32(res[at:]))
		return res
	}}
	p.RoundTripper = w
	data := bytes.Repeat([]byte("0123456789abcdef"), (2*c.MaxWrite()+100)/16)
	err := c.WriteAll(ctx, fh, data)
	p.RoundTripper = w.RoundTripper
	if err == nil || !strings.Contains(err.Error(), "WRITE") || !strings.Contains(err.Error(), "count") {
		t.Errorf("WriteAll with WRITE replies claiming twice the bytes sent: %v, want an error", err)
	}
	if _, err := c.Write(ctx, fh, 0, data[:100], nfs3.FileSync); err != nil {
		t.Errorf("a well-behaved WRITE afterwards: %v", err)
	}
}

// A server that restarts in the middle of WriteAll and comes back with an all-zero
// write verifier (a value RFC 1813 allows like any other) has lost the WRITEs before
// the restart: WriteAll must notice the change and write everything again.
func TestWriteAllVerifierChangesToZero(t *testing.T) {
	c, p, fh := newServedFile(t)
	ctx := context.Background()
	zero := func(from int) func(int, []byte, []byte) []byte {
		return func(n int, _, res []byte) []byte {
			if n >= from {
				clear(res[len(res)-nfs3.WriteVerfSize:]) // both results end with the verifier
			}
			return res
		}
	}
	w := &rewriting{RoundTripper: p.RoundTripper, proc: nfs3.ProcWrite, edit: zero(2)}
	cm := &rewriting{RoundTripper: w, proc: nfs3.ProcCommit, edit: zero(1)}
	p.RoundTripper = cm
	data := bytes.Repeat([]byte("0123456789abcdef"), (2*c.MaxWrite()+100)/16)
	err := c.WriteAll(ctx, fh, data)
	p.RoundTripper = w.RoundTripper
	if err != nil {
		t.Fatal(err)
	}
	if w.calls != 6 || cm.calls != 2 {
		t.Errorf("%d WRITEs and %d COMMITs, want 6 and 2: the 3 pieces written again after the verifier changed", w.calls, cm.calls)
	}
}

// A READ answered with no data and no end of file is not the end of the file:
// ReadAll fails (as the Linux client fails such a READ with EIO) rather than return
// the part before it as the whole file.
func TestReadAllZeroCountWithoutEOF(t *testing.T) {
	c, p, fh := newServedFile(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), (c.MaxRead()+100)/16)
	if err := c.WriteAll(ctx, fh, data); err != nil {
		t.Fatal(err)
	}
	r := &rewriting{RoundTripper: p.RoundTripper, proc: nfs3.ProcRead, edit: func(_ int, args, res []byte) []byte {
		if binary.BigEndian.Uint64(args[len(args)-12:]) == 0 { // READ3args ends with offset and count
			return res
		}
		return make([]byte, 5*4) // NFS3_OK, no attributes, count 0, no eof, no data
	}}
	p.RoundTripper = r
	got, err := c.ReadAll(ctx, fh)
	p.RoundTripper = r.RoundTripper
	if err == nil {
		t.Errorf("ReadAll returned %d of the file's %d bytes and no error", len(got), len(data))
	}
	if got, err := c.ReadAll(ctx, fh); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the real file afterwards: %d bytes, %v", len(got), err)
	}
}

// CREATE, MKDIR and SYMLINK results carry the new object's handle as a post_op_fh3,
// which a server may leave out (RFC 1813 §3.3.8): the object was made all the same,
// and the client looks its handle up, as Linux's does, rather than report a failure.
func TestCreateWithoutHandle(t *testing.T) {
	addr, export := startServer(t)
	c, p := dial(t, addr, export)
	ctx := context.Background()
	noHandle := func(_ int, _, res []byte) []byte {
		if binary.BigEndian.Uint32(res[4:]) != 1 {
			return res
		}
		n := int(binary.BigEndian.Uint32(res[8:])+3) &^ 3
		return append(append(res[:4:4], 0, 0, 0, 0), res[12+n:]...) // handle_follows FALSE
	}
	for i, tc := range []struct {
		proc nfs3.Proc
		make func(name string) (nfs3.FH, error)
	}{
		{nfs3.ProcCreate, func(name string) (nfs3.FH, error) {
			fh, _, err := c.Create(ctx, c.Root(), name, 0o640, false)
			return fh, err
		}},
		{nfs3.ProcCreate, func(name string) (nfs3.FH, error) {
			fh, _, err := c.Create(ctx, c.Root(), name, 0o640, true)
			return fh, err
		}},
		{nfs3.ProcMkdir, func(name string) (nfs3.FH, error) {
			fh, _, err := c.Mkdir(ctx, c.Root(), name, 0o750)
			return fh, err
		}},
		{nfs3.ProcSymlink, func(name string) (nfs3.FH, error) { return c.Symlink(ctx, c.Root(), name, "target") }},
	} {
		r := &rewriting{RoundTripper: p.RoundTripper, proc: tc.proc, edit: noHandle}
		p.RoundTripper = r
		name := fmt.Sprintf("%v-%d", tc.proc, i)
		fh, err := tc.make(name)
		p.RoundTripper = r.RoundTripper
		if err != nil || r.calls != 1 {
			t.Errorf("%v %s without a handle in the reply: %v after %d calls", tc.proc, name, err, r.calls)
			continue
		}
		want, _, err := c.Lookup(ctx, c.Root(), name)
		if err != nil || !bytes.Equal(fh, want) {
			t.Errorf("%v %s: handle %x, LOOKUP finds %x (%v)", tc.proc, name, fh, want, err)
		}
	}
}

// A server's preferred READDIR size (FSINFO dtpref) is a hint, bounded by the read
// size as the Linux client bounds it (nfs_server_set_fsinfo): a huge one must neither
// wrap READDIRPLUS's maxcount (8 times it) around to nothing nor make each listing
// offer a reply of gigabytes.
func TestHugeDtpref(t *testing.T) {
	c, p := threeFiles(t)
	ctx := context.Background()
	for _, dtpref := range []uint32{1 << 29, 1<<32 - 1} {
		r := &rewriting{RoundTripper: p, proc: nfs3.ProcFsinfo, edit: func(_ int, _, res []byte) []byte {
			// FSINFO3resok ends with dtpref, maxfilesize, time_delta and properties.
			binary.BigEndian.PutUint32(res[len(res)-24:], dtpref)
			return res
		}}
		c2, err := New(ctx, r, c.Root())
		if err != nil {
			t.Fatal(err)
		}
		if ents, err := c2.ReaddirPlus(ctx, c.Root()); err != nil || len(ents) != 3 {
			t.Errorf("dtpref %d: READDIRPLUS: %d entries, %v", dtpref, len(ents), err)
		}
		if ents, err := c2.Readdir(ctx, c.Root()); err != nil || len(ents) != 3 {
			t.Errorf("dtpref %d: READDIR: %d entries, %v", dtpref, len(ents), err)
		}
		if c2.dtpref > c2.rtmax {
			t.Errorf("dtpref %d: READDIR replies of %d bytes asked for, more than rtmax %d", dtpref, c2.dtpref, c2.rtmax)
		}
	}
}

// A directory entry whose name is no file name (empty, or holding a "/" or a NUL
// byte) ends the listing with an error, as Linux's readdir fails with EUCLEAN for one
// (verify_dirent_name), so that no caller joins a server's "../x" to a local path.
func TestDirectoryEntryWithInvalidName(t *testing.T) {
	c, p := threeFiles(t)
	ctx := context.Background()
	for _, bad := range []string{"", "../../etc/passwd", "a/b", "/", "nul\x00name"} {
		for _, plus := range []bool{false, true} {
			proc := nfs3.ProcReaddir
			if plus {
				proc = nfs3.ProcReaddirplus
			}
			r := &rewriting{RoundTripper: p.RoundTripper, proc: proc, edit: func(_ int, _, res []byte) []byte {
				var enc xdr.Encoder
				if plus {
					var r nfs3.ReaddirplusRes
					if err := r.DecodeXDR(xdr.NewDecoder(res)); err != nil {
						t.Fatal(err)
					}
					r.Entries[len(r.Entries)-1].Name = []byte(bad)
					r.EncodeXDR(&enc)
				} else {
					var r nfs3.ReaddirRes
					if err := r.DecodeXDR(xdr.NewDecoder(res)); err != nil {
						t.Fatal(err)
					}
					r.Entries[len(r.Entries)-1].Name = []byte(bad)
					r.EncodeXDR(&enc)
				}
				return enc.Bytes()
			}}
			p.RoundTripper = r
			var err error
			if plus {
				_, err = c.ReaddirPlus(ctx, c.Root())
			} else {
				_, err = c.Readdir(ctx, c.Root())
			}
			var seqErr error
			seq := c.ReaddirSeq
			if plus {
				seq = c.ReaddirPlusSeq
			}
			for _, e := range seq(ctx, c.Root()) {
				seqErr = e
			}
			p.RoundTripper = r.RoundTripper
			for _, e := range []error{err, seqErr} {
				if e == nil || !strings.Contains(e.Error(), "invalid entry name") {
					t.Errorf("%v with an entry named %q: %v, want an error naming it invalid", proc, bad, e)
				}
			}
		}
	}
}
