//go:build interop

package rpcrdma

// Interop with Linux: the client transport calls the guest's knfsd (svcrdma over siw)
// through interop/run.sh (case rpcrdma-knfsd), which sets IWTEST_PEER.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestLinuxKnfsdNull dials knfsd with the client transport: NFSv3 NULL inline, NULL with
// a reply chunk (svcrdma then answers RDMA_NOMSG through it), and 300 concurrent NULLs
// within the 64 credits knfsd grants.
func TestLinuxKnfsdNull(t *testing.T) {
	peer := os.Getenv("IWTEST_PEER")
	if peer == "" {
		t.Skip("IWTEST_PEER not set: run through interop/run.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tr := &tpTrace{}
	// FirstFPDUDelay: the Linux 6.1 siw accept race (interop/README.md).
	dev := soft.New(soft.Config{CRC: os.Getenv("IWTEST_CRC") == "1", FirstFPDUDelay: 300 * time.Millisecond})
	cl, err := Dial(ctx, dev, peer, &ClientOptions{Trace: tr.fn})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if l := cl.Limits(); l.InlineSend != 4096 || l.InlineRecv != 4096 {
		t.Errorf("limits from knfsd's private data: %+v, want 4096/4096", l)
	}
	nfs := oncrpc.NewClient(cl, 100003, 3)
	if err := nfs.CallWithOptions(ctx, 0, nil, nil, oncrpc.CallOptions{MaxReply: 128}); err != nil {
		t.Fatalf("NULL inline: %v", err)
	}
	rep := tr.last(t, false)
	if rep.Proc != ProcMsg || rep.Credits != 64 {
		t.Errorf("inline NULL reply: %v granting %d", rep.Proc, rep.Credits)
	}
	if g := cl.current().window.Granted(); g != 64 {
		t.Errorf("window %d after knfsd's grant, want 64", g)
	}
	if err := nfs.CallWithOptions(ctx, 0, nil, nil, oncrpc.CallOptions{}); err != nil {
		t.Fatalf("NULL with a reply chunk: %v", err)
	}
	if rep := tr.last(t, false); rep.Proc != ProcNoMsg || len(rep.ReplyChunk) != 1 || rep.ReplyChunk.Length() == 0 {
		t.Errorf("NULL with a reply chunk answered %v, reply chunk %v", rep.Proc, rep.ReplyChunk)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- nfs.CallWithOptions(ctx, 0, nil, nil, oncrpc.CallOptions{MaxReply: 128})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d messages sent, %d received; knfsd granted %d credits", len(tr.sent), len(tr.recv), cl.current().window.Granted())
}

type encFunc func(*xdr.Encoder)

func (f encFunc) EncodeXDR(e *xdr.Encoder) { f(e) }

type decFunc func(*xdr.Decoder) error

func (f decFunc) DecodeXDR(d *xdr.Decoder) error { return f(d) }

// nfsStatus reads an NFSv3 status word and fails on anything but NFS3_OK.
func nfsStatus(d *xdr.Decoder, what string) error {
	st, err := d.Uint32()
	if err != nil {
		return err
	}
	if st != 0 {
		return fmt.Errorf("%s: NFS3 status %d", what, st)
	}
	return nil
}

func skipPostOpAttr(d *xdr.Decoder) error {
	ok, err := d.Bool()
	if err != nil || !ok {
		return err
	}
	return d.Skip(84)
}

func skipWcc(d *xdr.Decoder) error {
	ok, err := d.Bool()
	if err != nil {
		return err
	}
	if ok {
		if err := d.Skip(24); err != nil {
			return err
		}
	}
	return skipPostOpAttr(d)
}

// TestLinuxKnfsdNFS3 mounts /export over TCP (MOUNT v3), then over the client transport:
// GETATTR inline; READDIRPLUS through a reply chunk; CREATE; WRITE of 100003 bytes as a
// read chunk (knfsd RDMA-Reads it) and READ of it back into a write chunk (knfsd
// RDMA-Writes it); a WRITE whose data is not DDP-eligible, sent as a long call
// (RDMA_NOMSG, position-zero read chunk); and 32 concurrent WRITE/READ pairs.
func TestLinuxKnfsdNFS3(t *testing.T) {
	peer, mountAddr := os.Getenv("IWTEST_PEER"), os.Getenv("IWTEST_MOUNT")
	if peer == "" || mountAddr == "" {
		t.Skip("IWTEST_PEER / IWTEST_MOUNT not set: run through interop/run.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cred, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{Stamp: 1, MachineName: []byte("rpcrdma")})
	if err != nil {
		t.Fatal(err)
	}

	// MOUNT over oncrpc's TCP transport.
	mtr, err := oncrpc.DialTCP(ctx, mountAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mtr.Close()
	var root []byte
	err = oncrpc.NewClient(mtr, 100005, 3, oncrpc.WithAuth(cred)).Call(ctx, 1,
		encFunc(func(e *xdr.Encoder) { e.String("/export") }),
		decFunc(func(d *xdr.Decoder) error {
			if err := nfsStatus(d, "MNT"); err != nil {
				return err
			}
			fh, err := d.Opaque(64)
			root = append([]byte(nil), fh...)
			return err
		}))
	if err != nil {
		t.Fatalf("MOUNT: %v", err)
	}

	tr := &tpTrace{}
	dev := soft.New(soft.Config{CRC: os.Getenv("IWTEST_CRC") == "1", FirstFPDUDelay: 300 * time.Millisecond})
	cl, err := Dial(ctx, dev, peer, &ClientOptions{Trace: tr.fn})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	nfs := oncrpc.NewClient(cl, 100003, 3, oncrpc.WithAuth(cred))

	// GETATTR of the root: inline both ways.
	var ftype uint32
	err = nfs.CallWithOptions(ctx, 1, encFunc(func(e *xdr.Encoder) { e.Opaque(root) }),
		decFunc(func(d *xdr.Decoder) error {
			if err := nfsStatus(d, "GETATTR"); err != nil {
				return err
			}
			ftype, err = d.Uint32()
			return err
		}), oncrpc.CallOptions{MaxReply: 256})
	if err != nil || ftype != 2 {
		t.Fatalf("GETATTR: type %d, %v", ftype, err)
	}
	if h := tr.last(t, false); h.Proc != ProcMsg || h.HasChunks() {
		t.Errorf("GETATTR reply %v with chunks", h.Proc)
	}

	// READDIRPLUS of the root through a reply chunk.
	var entries []byte
	err = nfs.CallWithOptions(ctx, 17, encFunc(func(e *xdr.Encoder) {
		e.Opaque(root)
		e.Uint64(0)
		e.FixedOpaque(make([]byte, 8))
		e.Uint32(8192)
		e.Uint32(32768)
	}), decFunc(func(d *xdr.Decoder) error {
		if err := nfsStatus(d, "READDIRPLUS"); err != nil {
			return err
		}
		entries = append([]byte(nil), d.Rest()...)
		return nil
	}), oncrpc.CallOptions{MaxReply: 33 << 10})
	if err != nil {
		t.Fatalf("READDIRPLUS: %v", err)
	}
	if !bytes.Contains(entries, []byte("hello.txt")) {
		t.Errorf("READDIRPLUS does not list hello.txt")
	}
	if h := tr.last(t, false); h.Proc != ProcNoMsg || len(h.ReplyChunk) == 0 {
		t.Errorf("READDIRPLUS reply %v, reply chunk %v; want RDMA_NOMSG through the reply chunk", h.Proc, h.ReplyChunk)
	}

	// CREATE a file.
	var fh []byte
	err = nfs.CallWithOptions(ctx, 8, encFunc(func(e *xdr.Encoder) {
		e.Opaque(root)
		e.String("rpcrdma-interop")
		e.Uint32(0) // UNCHECKED
		for i := 0; i < 6; i++ {
			e.Uint32(0) // sattr3: nothing set
		}
	}), decFunc(func(d *xdr.Decoder) error {
		if err := nfsStatus(d, "CREATE"); err != nil {
			return err
		}
		if ok, err := d.Bool(); err != nil || !ok {
			return fmt.Errorf("CREATE: no file handle (%v)", err)
		}
		b, err := d.Opaque(64)
		fh = append([]byte(nil), b...)
		return err
	}), oncrpc.CallOptions{MaxReply: 1024})
	if err != nil {
		t.Fatalf("CREATE: %v", err)
	}

	var writeAt func(off uint64, data []byte, ddp bool) error
	var readAt func(off uint64, n int) ([]byte, error)
	write := func(data []byte, ddp bool) error { return writeAt(0, data, ddp) }
	writeAt = func(off uint64, data []byte, ddp bool) error {
		return nfs.CallWithOptions(ctx, 7, encFunc(func(e *xdr.Encoder) {
			e.Opaque(fh)
			e.Uint64(off)
			e.Uint32(uint32(len(data)))
			e.Uint32(2) // FILE_SYNC
			if ddp {
				e.Payload(data)
			} else {
				e.Opaque(data)
			}
		}), decFunc(func(d *xdr.Decoder) error {
			if err := nfsStatus(d, "WRITE"); err != nil {
				return err
			}
			if err := skipWcc(d); err != nil {
				return err
			}
			n, err := d.Uint32()
			if err == nil && int(n) != len(data) {
				err = fmt.Errorf("WRITE wrote %d of %d", n, len(data))
			}
			return err
		}), oncrpc.CallOptions{MaxReply: 1024})
	}
	read := func(n int) ([]byte, error) { return readAt(0, n) }
	readAt = func(off uint64, n int) ([]byte, error) {
		sink := make([]byte, n)
		var got []byte
		err := nfs.CallWithOptions(ctx, 6, encFunc(func(e *xdr.Encoder) {
			e.Opaque(fh)
			e.Uint64(off)
			e.Uint32(uint32(n))
		}), decFunc(func(d *xdr.Decoder) error {
			if err := nfsStatus(d, "READ"); err != nil {
				return err
			}
			if err := skipPostOpAttr(d); err != nil {
				return err
			}
			if _, err := d.Uint32(); err != nil {
				return err
			}
			if _, err := d.Bool(); err != nil {
				return err
			}
			b, err := d.Payload(n)
			got = append([]byte(nil), b...)
			return err
		}), oncrpc.CallOptions{ReplySinks: [][]byte{sink}, MaxReply: 1024})
		return got, err
	}

	data := make([]byte, 100003)
	tpFill(data, 9)
	if err := write(data, true); err != nil {
		t.Fatalf("WRITE by read chunk: %v", err)
	}
	if h := tr.headers(t, true); len(h) == 0 {
		t.Fatal("nothing sent")
	}
	got, err := read(len(data))
	if err != nil {
		t.Fatalf("READ by write chunk: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("READ returned different data")
	}
	if h := tr.last(t, false); len(h.WriteList) != 1 || h.WriteList[0].Length() != uint64(len(data)) {
		t.Errorf("READ reply write list %v", h.WriteList)
	}

	small := make([]byte, 6000)
	tpFill(small, 3)
	if err := write(small, false); err != nil {
		t.Fatalf("WRITE as a long call: %v", err)
	}
	var long Header
	for _, h := range tr.headers(t, true) {
		if h.Proc == ProcNoMsg {
			long = h
		}
	}
	if long.Proc != ProcNoMsg || len(long.ReadList) != 1 || long.ReadList[0].Position != 0 {
		t.Errorf("long WRITE sent as %v with read list %v", long.Proc, long.ReadList)
	}
	got, err = read(len(small))
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("READ after the long call: %v", err)
	}

	// 32 concurrent WRITE (read chunk) + READ (write chunk) pairs at distinct offsets.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d := make([]byte, 65536-i)
			tpFill(d, byte(i))
			off := uint64(1<<20 + i*65536)
			if err := writeAt(off, d, true); err != nil {
				errs <- fmt.Errorf("WRITE %d: %w", i, err)
				return
			}
			got, err := readAt(off, len(d))
			if err == nil && !bytes.Equal(got, d) {
				err = fmt.Errorf("READ %d returned different data", i)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d messages sent, %d received; window %d", len(tr.sent), len(tr.recv), cl.current().window.Granted())
}

// TestLinuxClientToServer: the guest's Linux NFS client (mount -o vers=4.1,proto=rdma)
// connects to our server transport. Its NULL ping is answered through oncrpc.Server
// (NFS NULL only); Linux takes the reply and goes on with a COMPOUND, which proves our
// accept (RFC 8797 private data, IRD/ORD), header validation and reply path work with
// xprtrdma. Nothing it sends may draw an RDMA_ERROR.
func TestLinuxClientToServer(t *testing.T) {
	addr := os.Getenv("IWTEST_LISTEN")
	if addr == "" {
		t.Skip("IWTEST_LISTEN not set: run through interop/run.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Second)
	defer cancel()
	tr := &tpTrace{}
	dev := soft.New(soft.Config{CRC: os.Getenv("IWTEST_CRC") == "1"})
	ln, err := Listen(ctx, dev, addr, &ServerOptions{Trace: tr.fn})
	if err != nil {
		t.Fatal(err)
	}
	srv := oncrpc.NewServer(nil)
	nulls := make(chan struct{}, 100)
	srv.RegisterRange(100003, 3, 4, oncrpc.Procs{0: func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		nulls <- struct{}{}
		return nil
	}})
	go srv.Serve(ln)
	defer srv.Close()
	if dir := os.Getenv("LAB_OUT"); dir != "" {
		if err := os.WriteFile(dir+"/host.ready", nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-nulls:
	case <-ctx.Done():
		t.Fatal("no NULL call from the Linux client")
	}
	// Wait for the call after the NULL (COMPOUND): Linux accepted our reply.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var calls []Header
		for _, h := range tr.headers(t, false) {
			calls = append(calls, h)
		}
		if len(calls) >= 2 && calls[len(calls)-1].XID != calls[0].XID {
			first, next := calls[0], calls[len(calls)-1]
			t.Logf("Linux: NULL xid %#x (%v, %d credits asked), then xid %#x (%v, write list %d, reply chunk %d segments)",
				first.XID, first.Proc, first.Credits, next.XID, next.Proc, len(next.WriteList), len(next.ReplyChunk))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Linux client did not go on after our NULL reply (%d calls seen)", len(calls))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, h := range tr.headers(t, true) {
		if h.Proc == ProcError {
			t.Fatalf("we answered the Linux client with RDMA_ERROR %v (xid %#x)", h.ErrCode, h.XID)
		}
		if h.Credits == 0 {
			t.Fatalf("reply granting 0 credits")
		}
	}
}
