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
