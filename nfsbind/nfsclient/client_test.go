//go:build linux

package nfsclient

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// placing wraps a stream transport and imitates an RDMA write chunk for READ replies:
// it moves the READ data out of the inline reply into the caller's first reply sink,
// elides the data and its pad from the inline stream, and reports it as placed, as an
// RPC-over-RDMA transport does (RFC 8166 §3.4.6).
type placing struct {
	oncrpc.RoundTripper
	placed atomic.Int64
}

func (p *placing) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	if err := p.RoundTripper.RoundTrip(ctx, call, reply); err != nil {
		return err
	}
	if len(call.ReplySinks) == 0 {
		return nil
	}
	in := reply.Inline
	// Accepted reply header with an empty verifier: xid, mtype, reply_stat, flavor,
	// length, accept_stat; then READ3res: status, post_op_attr, count, eof, length.
	off := 24
	if len(in) < off+8 || binary.BigEndian.Uint32(in[off:]) != 0 {
		return nil
	}
	off += 4
	if binary.BigEndian.Uint32(in[off:]) == 1 {
		off += nfs3.FattrSize
	}
	off += 4 // attributes_follow
	off += 4 + 4 + 4
	n := int(binary.BigEndian.Uint32(in[off-4:]))
	sink := call.ReplySinks[0]
	if n > len(sink) || off+xdr.RoundUp(n) > len(in) {
		return fmt.Errorf("placing: %d bytes do not fit the %d-byte sink", n, len(sink))
	}
	copy(sink, in[off:off+n])
	reply.Inline = append(in[:off], in[off+xdr.RoundUp(n):]...)
	reply.Placed = append(reply.Placed[:0], sink[:n])
	p.placed.Add(1)
	return nil
}

func startServer(t testing.TB) (addr, export string) {
	t.Helper()
	srv, err := nfsserver.New(nfsserver.Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs.Shutdown(ctx)
		srv.Close()
	})
	return l.Addr().String(), srv.ExportPath()
}

func dial(t testing.TB, addr, export string) (*Client, *placing) {
	t.Helper()
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("t"), UID: 0, GID: 0})
	if err != nil {
		t.Fatal(err)
	}
	p := &placing{RoundTripper: tr}
	c, err := Mount(ctx, Transports{NFS: p, Mount: tr}, export, oncrpc.WithAuth(auth))
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

func TestClientEndToEnd(t *testing.T) {
	addr, export := startServer(t)
	c, p := dial(t, addr, export)
	ctx := context.Background()
	dir, _, err := c.Mkdir(ctx, c.Root(), "dir", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 1, 4097, 1<<20 + 1, 3<<20 - 3} {
		name := fmt.Sprintf("f%d", size)
		fh, attr, err := c.Create(ctx, dir, name, 0o640, size%2 == 1)
		if err != nil {
			t.Fatal(err)
		}
		if attr.Mode != 0o640 || attr.Type != nfs3.TypeReg {
			t.Fatalf("%s: mode %o type %v", name, attr.Mode, attr.Type)
		}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if err := c.WriteAll(ctx, fh, data); err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadAll(ctx, fh)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: read back %d bytes, differ", name, len(got))
		}
	}
	if p.placed.Load() == 0 {
		t.Fatal("no READ data was placed in a reply sink")
	}
	// Read places data straight into the caller's buffer.
	fh, _, err := c.LookupPath(ctx, "/dir/f4097")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5000)
	n, eof, err := c.Read(ctx, fh, 4000, buf)
	if err != nil || n != 97 || !eof {
		t.Fatalf("Read: %d %v %v", n, eof, err)
	}

	// Names.
	if _, err := c.Symlink(ctx, dir, "ln", "/elsewhere"); err != nil {
		t.Fatal(err)
	}
	lfh, _, _ := c.Lookup(ctx, dir, "ln")
	if target, err := c.Readlink(ctx, lfh); err != nil || target != "/elsewhere" {
		t.Fatalf("Readlink: %q %v", target, err)
	}
	if err := c.Link(ctx, fh, c.Root(), "hard"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, c.Root(), "hard", dir, "moved"); err != nil {
		t.Fatal(err)
	}
	ents, err := c.ReaddirPlus(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Entry{}
	for _, e := range ents {
		names[e.Name] = e
	}
	for _, want := range []string{"f0", "f1", "f4097", "f1048577", "f3145725", "ln", "moved"} {
		if _, ok := names[want]; !ok {
			t.Fatalf("ReaddirPlus: %s missing from %v", want, ents)
		}
	}
	if names["moved"].Attr.Nlink != 2 || !bytes.Equal(names["moved"].FH, fh) {
		t.Fatalf("moved: %+v", names["moved"])
	}
	if err := c.Remove(ctx, dir, "moved"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Lookup(ctx, dir, "moved"); !errors.Is(err, nfs3.StatusNoEnt) {
		t.Fatalf("Lookup removed: %v", err)
	}
	if err := c.Rmdir(ctx, c.Root(), "dir"); !errors.Is(err, nfs3.StatusNotEmpty) {
		t.Fatalf("Rmdir non-empty: %v", err)
	}
	if _, err := c.Fsstat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, dir, "f0", 0o644, false); !errors.Is(err, nfs3.StatusExist) {
		t.Fatalf("GUARDED create of existing file: %v", err)
	}
}

func TestReaddirPlusLarge(t *testing.T) {
	addr, export := startServer(t)
	c, _ := dial(t, addr, export)
	ctx := context.Background()
	dir, _, err := c.Mkdir(ctx, c.Root(), "many", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1500
	for i := 0; i < n; i++ {
		if _, _, err := c.Create(ctx, dir, fmt.Sprintf("entry-with-a-longish-name-%04d", i), 0o644, false); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := c.ReaddirPlus(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != n {
		t.Fatalf("%d entries, want %d", len(ents), n)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		if seen[e.Name] || e.FH == nil {
			t.Fatalf("entry %+v duplicated or without handle", e)
		}
		seen[e.Name] = true
	}
	names, err := c.Readdir(ctx, dir)
	if err != nil || len(names) != n {
		t.Fatalf("Readdir: %d names, %v", len(names), err)
	}
	for _, e := range names {
		if !seen[e.Name] {
			t.Fatalf("Readdir returned %q, which READDIRPLUS did not", e.Name)
		}
	}
	// The sequences yield what the slices hold, in the same order.
	for name, seq := range map[string]func() iter.Seq2[Entry, error]{
		"ReaddirSeq":     func() iter.Seq2[Entry, error] { return c.ReaddirSeq(ctx, dir) },
		"ReaddirPlusSeq": func() iter.Seq2[Entry, error] { return c.ReaddirPlusSeq(ctx, dir) },
	} {
		want := names
		if name == "ReaddirPlusSeq" {
			want = ents
		}
		i := 0
		for e, err := range seq() {
			if err != nil {
				t.Fatalf("%s: %v after %d entries", name, err, i)
			}
			if i >= len(want) || e.Name != want[i].Name || e.FileID != want[i].FileID || !bytes.Equal(e.FH, want[i].FH) {
				t.Fatalf("%s: entry %d is %+v, want %+v", name, i, e, want[min(i, len(want)-1)])
			}
			i++
		}
		if i != n {
			t.Fatalf("%s: %d entries, want %d", name, i, n)
		}
	}
}

func TestMountErrors(t *testing.T) {
	addr, _ := startServer(t)
	tr, err := oncrpc.DialTCP(context.Background(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := Mount(context.Background(), Transports{NFS: tr}, "/not/exported"); !errors.Is(err, nfs3.MountErrNoEnt) {
		t.Fatalf("Mount of an unexported path: %v", err)
	}
	if _, err := Mount(context.Background(), Transports{Mount: tr}, "/"); err == nil || !strings.Contains(err.Error(), "no NFS transport") {
		t.Fatalf("Mount without an NFS transport: %v", err)
	}
}

// A handle of a removed file is NFS3ERR_STALE from every call that uses it, as an
// error errors.Is can match, naming the procedure.
func TestStaleHandle(t *testing.T) {
	addr, export := startServer(t)
	c, _ := dial(t, addr, export)
	ctx := context.Background()
	fh, _, err := c.Create(ctx, c.Root(), "gone", 0o644, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, c.Root(), "gone"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Getattr(ctx, fh)
	if !errors.Is(err, nfs3.StatusStale) || !strings.Contains(err.Error(), "GETATTR") {
		t.Errorf("GETATTR of a removed file: %v", err)
	}
	if _, err := c.ReadAll(ctx, fh); !errors.Is(err, nfs3.StatusStale) {
		t.Errorf("READ of a removed file: %v", err)
	}
	if _, err := c.Write(ctx, fh, 0, []byte("x"), nfs3.FileSync); !errors.Is(err, nfs3.StatusStale) {
		t.Errorf("WRITE of a removed file: %v", err)
	}
	if _, err := c.Commit(ctx, fh); !errors.Is(err, nfs3.StatusStale) {
		t.Errorf("COMMIT of a removed file: %v", err)
	}
}
