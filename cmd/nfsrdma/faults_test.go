//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

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
	// READ3args after the call header and AUTH_SYS credential: fh, offset, count.
	args := in[len(in)-12:]
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
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: &endlessFile{RoundTripper: tr, size: uint64(len(data))}, Mount: tr}, "/export")
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

// changingVerifier stands for a server that restarted between a WRITE and the COMMIT
// that follows: the reply to WRITE number flip (counting from 1) carries another
// verifier than the rest.
type changingVerifier struct {
	oncrpc.RoundTripper
	flip, writes int
}

func (v *changingVerifier) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := v.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	if nfs3.Proc(binary.BigEndian.Uint32(call.Msg.Inline[20:])) != nfs3.ProcWrite {
		return nil
	}
	if v.writes++; v.writes == v.flip {
		reply.Inline[len(reply.Inline)-1] ^= 0xff // WRITE3resok ends with the verifier
	}
	return nil
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
	v := &changingVerifier{RoundTripper: tr, flip: 3}
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
	if v.writes != 5 {
		t.Errorf("%d WRITEs, want 5 (the second window twice)", v.writes)
	}
	if got, _ := os.ReadFile(filepath.Join(s.export, "s")); !bytes.Equal(got, data) {
		t.Errorf("the file has %d bytes, not the %d streamed", len(got), len(data))
	}
}
