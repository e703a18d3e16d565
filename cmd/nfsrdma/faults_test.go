//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient/nfsclienttest"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// get - stops one READ past the size the file had, and fails, when the server never
// reports its end.
func TestGetStdoutFromEndlessFile(t *testing.T) {
	s := startServer(t)
	data := randomBytes(100000, 11)
	os.WriteFile(filepath.Join(s.export, "f"), data, 0o644)
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: &nfsclienttest.EndlessFile{RoundTripper: tr, Size: uint64(len(data))}, Mount: tr}, "/export")
	if err != nil {
		t.Fatal(err)
	}
	fh, _, err := c.LookupPath(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n, err := readFile(ctx, c, fh, &out, int64(len(data))+int64(c.MaxRead()))
	if err != nil || n != int64(len(data))+int64(c.MaxRead()) || !bytes.Equal(out.Bytes()[:len(data)], data) {
		t.Errorf("read %d bytes (%v), want the file's %d and one READ more", n, err, len(data))
	}
	// And against the real server: the file and no more.
	out.Reset()
	c2, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: tr, Mount: tr}, "/export")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := readFile(ctx, c2, fh, &out, int64(len(data))+int64(c2.MaxRead())); err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Errorf("from the real server: %d bytes, %v", n, err)
	}
}

// A window whose WRITEs and COMMIT disagree on the verifier is written again, from
// the window put - still holds: 3 MiB in windows of 1 and 2 MiB take 5 WRITEs of
// 1 MiB when the third WRITE's reply carries another verifier, and the file is whole.
func TestWriteStreamWritesAWindowAgain(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	v := &nfsclienttest.ChangingVerifier{RoundTripper: tr, Flip: 3}
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: v, Mount: tr}, "/export")
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxWrite() != 1<<20 {
		t.Fatalf("MaxWrite %d: the WRITE count below assumes 1 MiB", c.MaxWrite())
	}
	fh, _, err := c.Create(ctx, c.Root(), "s", 0o644, false)
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(3<<20, 12)
	n, err := writeStream(ctx, c, fh, bytes.NewReader(data), 1, func(int) {})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("writeStream: %d, %v", n, err)
	}
	if v.Writes != 5 {
		t.Errorf("%d WRITEs, want 5 (the second window twice)", v.Writes)
	}
	if got, _ := os.ReadFile(filepath.Join(s.export, "s")); !bytes.Equal(got, data) {
		t.Errorf("the file has %d bytes, not the %d streamed", len(got), len(data))
	}
}

// ls shows an entry that READDIRPLUS returned with its handle but without its
// attributes with the attributes a LOOKUP finds, not zeros.
func TestLsEntriesWithoutAttributes(t *testing.T) {
	s := startServer(t)
	if err := os.WriteFile(filepath.Join(s.export, "f"), []byte("12345"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.export, "d"), 0o750); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: &nfsclienttest.AttrlessDir{RoundTripper: tr}, Mount: tr}, "/export")
	if err != nil {
		t.Fatal(err)
	}
	for _, unsorted := range []bool{false, true} {
		var out bytes.Buffer
		n, total, err := listDir(ctx, c, c.Root(), remote{host: "127.0.0.1", path: "/export"}, unsorted, &out)
		if err != nil || n != 2 || total == 0 {
			t.Errorf("unsorted %v: %d entries, %d bytes, %v", unsorted, n, total, err)
		}
		for _, want := range []string{"-rw-r----- ", "drwxr-x--- "} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("unsorted %v: the listing lacks %q:\n%s", unsorted, want, out.String())
			}
		}
	}
}

// shrinking is a local file that loses its end while put reads it: ReadAt at or past
// cut returns what remains and io.EOF, as os.File does for a truncated file.
type shrinking struct {
	data []byte
	cut  int64
}

func (s *shrinking) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.cut {
		return 0, io.EOF
	}
	n := copy(p, s.data[off:s.cut])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// A local file that ends before the size put was told (it shrank meanwhile) is an
// error: the part of a WRITE's buffer the read did not fill holds another chunk's
// bytes, which must not reach the server as the file's.
func TestWriteFileOfShrunkSource(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: tr, Mount: tr}, "/export")
	if err != nil {
		t.Fatal(err)
	}
	fh, _, err := c.Create(ctx, c.Root(), "s", 0o644, false)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(2*c.MaxWrite() + 100)
	src := &shrinking{data: randomBytes(int(size), 13), cut: int64(c.MaxWrite()) + 100}
	err = writeFile(ctx, c, fh, src, 0, size, 1, func(int) {})
	if err == nil {
		got, _ := os.ReadFile(filepath.Join(s.export, "s"))
		t.Errorf("writeFile of a source that ends at %d of %d bytes: no error, and the server has %d bytes", src.cut, size, len(got))
	}
}

// rewriting is a server whose replies to proc are edited: edit gets the results
// after the accepted reply's header (24 bytes, with an empty verifier) and returns
// new ones.
type rewriting struct {
	oncrpc.RoundTripper
	proc nfs3.Proc
	edit func(res []byte) []byte
}

func (r *rewriting) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := r.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	if nfs3.Proc(binary.BigEndian.Uint32(call.Msg.Inline[20:])) == r.proc {
		reply.Inline = append(reply.Inline[:24:24], r.edit(reply.Inline[24:])...)
	}
	return nil
}

// failingSetattr makes every SETATTR fail with NFS3ERR_PERM.
func failingSetattr(rt oncrpc.RoundTripper) oncrpc.RoundTripper {
	return &rewriting{RoundTripper: rt, proc: nfs3.ProcSetattr, edit: func([]byte) []byte {
		// NFS3ERR_PERM, and wcc_data without attributes before or after.
		return []byte{0, 0, 0, byte(nfs3.StatusPerm), 0, 0, 0, 0, 0, 0, 0, 0}
	}}
}

// A put whose temporary file was created but could not be finished (the SETATTR
// that follows an EXCLUSIVE CREATE failed) removes the temporary file, as it does
// after any failure.
func TestPutRemovesTemporaryFileWhenSetattrFails(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: failingSetattr(tr), Mount: tr}, "/export")
	if err != nil {
		t.Fatal(err)
	}
	err = putFile(ctx, c, c.Root(), "target", 0o644, func(context.Context, nfs3.FH) error {
		t.Error("put wrote a file it could not create")
		return nil
	})
	if !errors.Is(err, nfs3.StatusPerm) {
		t.Errorf("put: %v, want NFS3ERR_PERM", err)
	}
	ents, _ := os.ReadDir(s.export)
	for _, e := range ents {
		t.Errorf("%s left behind", e.Name())
	}
}

// benchFile fails, rather than WRITE forever, when the server's WRITEs make no
// progress (count 0).
func TestBenchFileWritesMakingNoProgress(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr, err := oncrpc.DialTCP(ctx, s.info.TCP.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	zero := &rewriting{RoundTripper: tr, proc: nfs3.ProcWrite, edit: func(res []byte) []byte {
		clear(res[len(res)-16 : len(res)-12]) // WRITE3resok: count, committed, verifier
		return res
	}}
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: zero, Mount: tr}, "/export")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = benchFile(ctx, c, c.Root(), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "no progress") {
		t.Errorf("benchFile with WRITEs of count 0: %v after %v, want an error saying they make no progress", err, time.Since(start).Round(time.Millisecond))
	}
	if ents, _ := os.ReadDir(s.export); len(ents) != 0 {
		t.Errorf("%d files left behind", len(ents))
	}
}
