//go:build linux

package nfsserver

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// serveOnce runs one call through the NFS handler in process, as the oncrpc Server
// would, and decodes the results into res.
func serveOnce(t *testing.T, h oncrpc.Handler, addr net.Addr, xid uint32, proc nfs3.Proc, args xdr.EncoderTo, res nfs3.Message) error {
	t.Helper()
	return serveOnceCtx(context.Background(), t, h, addr, xid, proc, args, res)
}

// serveOnceCtx is serveOnce with the handler's context.
func serveOnceCtx(ctx context.Context, t *testing.T, h oncrpc.Handler, addr net.Addr, xid uint32, proc nfs3.Proc, args xdr.EncoderTo, res nfs3.Message) error {
	t.Helper()
	req := &oncrpc.Request{
		Header:     oncrpc.CallHeader{XID: xid, Prog: nfs3.Program, Vers: nfs3.Version, Proc: uint32(proc)},
		AuthSys:    &oncrpc.AuthSysParams{UID: 0, GID: 0},
		Args:       xdr.NewDecoder(encodeMsg(args)),
		RemoteAddr: addr,
		Netid:      oncrpc.Netid(addr), // as the oncrpc Server sets it
	}
	var e xdr.Encoder
	if err := h.ServeRPC(ctx, req, &e); err != nil {
		return err
	}
	return res.DecodeXDR(xdr.NewDecoder(xdr.Flatten(nil, e.Bytes(), e.Payloads())))
}

// newDRCServer returns a Server of a new empty directory, closed when the test ends.
func newDRCServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Options{Root: t.TempDir(), HandleKey: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDuplicateRequestCache(t *testing.T) {
	s := newDRCServer(t)
	h := s.NFSHandler()
	root := s.RootHandle()
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 800}
	b := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 801}
	var cr nfs3.CreateRes
	if err := serveOnce(t, h, a, 1, nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}, Mode: nfs3.Guarded}, &cr); err != nil || cr.Status != nfs3.StatusOK {
		t.Fatalf("CREATE: %v %v", err, cr.Status)
	}
	// The GUARDED create retransmitted (same address and XID) gets the original answer.
	if err := serveOnce(t, h, a, 1, nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}, Mode: nfs3.Guarded}, &cr); err != nil || cr.Status != nfs3.StatusOK {
		t.Fatalf("retransmitted CREATE: %v %v", err, cr.Status)
	}
	// Another client with the same XID is not a duplicate.
	if err := serveOnce(t, h, b, 1, nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}, Mode: nfs3.Guarded}, &cr); err != nil || cr.Status != nfs3.StatusExist {
		t.Fatalf("other client's CREATE: %v %v", err, cr.Status)
	}
	var rr nfs3.RemoveRes
	rm := &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}}
	for i := 0; i < 2; i++ {
		if err := serveOnce(t, h, a, 2, nfs3.ProcRemove, rm, &rr); err != nil || rr.Status != nfs3.StatusOK {
			t.Fatalf("REMOVE try %d: %v %v", i, err, rr.Status)
		}
	}
	// Same XID, different arguments: executed, not answered from the cache.
	if err := serveOnce(t, h, a, 2, nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("g")}}, &rr); err != nil || rr.Status != nfs3.StatusNoEnt {
		t.Fatalf("REMOVE with reused XID: %v %v", err, rr.Status)
	}
	// A retransmission of a call still executing waits for it; when its own
	// connection goes away first, it is dropped.
	s.drc.mu.Lock()
	k := drcKey{addr: a.String(), xid: 3, proc: uint32(nfs3.ProcRmdir)}
	args := encodeMsg(&nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("d")}})
	k.sum, k.n = crcOf(args), len(args)
	s.drc.entries[k] = &drcEntry{finished: make(chan struct{})}
	s.drc.mu.Unlock()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := serveOnceCtx(gone, t, h, a, 3, nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("d")}}, &rr); !errors.Is(err, oncrpc.ErrNoReply) {
		t.Fatalf("duplicate of a call in progress: %v", err)
	}
	if s.drc.hits != 3 {
		t.Fatalf("%d cache hits, want 3", s.drc.hits)
	}
}

// End to end over TCP: a non-idempotent call executed by the server whose reply is
// lost with the connection is retransmitted by the client after it reconnects (same
// XID, same source port, as the Linux client does) and answered from the duplicate
// request cache, not executed again into NFS3ERR_EXIST or NFS3ERR_NOENT.
func TestDuplicateRequestCacheAcrossReconnect(t *testing.T) {
	s := newDRCServer(t)
	nfs := s.NFSHandler()
	var mu sync.Mutex
	tries := map[uint32]int{}
	var from addrLog
	rs := oncrpc.NewServer(nil)
	rs.Register(nfs3.Program, nfs3.Version, oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		from.add(req)
		err := nfs.ServeRPC(ctx, req, res)
		if !nonIdempotent(nfs3.Proc(req.Header.Proc)) {
			return err
		}
		mu.Lock()
		tries[req.Header.XID]++
		first := tries[req.Header.XID] == 1
		mu.Unlock()
		if first {
			req.Conn.Close() // the call is done, its reply lost with the connection
		}
		return err
	}))
	c := serveReconnecting(t, rs)
	root := s.RootHandle()

	var cr nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}, Mode: nfs3.Guarded}, &cr)
	from.skipIfPortChanged(t)
	wantStatus(t, "CREATE GUARDED retried after reconnect", cr.Status, nfs3.StatusOK)
	var rn nfs3.RenameRes
	c.must(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}, To: nfs3.DirOpArgs{Dir: root, Name: []byte("g")}}, &rn)
	from.skipIfPortChanged(t)
	wantStatus(t, "RENAME retried after reconnect", rn.Status, nfs3.StatusOK)
	var rr nfs3.RemoveRes
	c.must(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("g")}}, &rr)
	from.skipIfPortChanged(t)
	wantStatus(t, "REMOVE retried after reconnect", rr.Status, nfs3.StatusOK)

	mu.Lock()
	defer mu.Unlock()
	for xid, n := range tries {
		if n != 2 {
			t.Errorf("xid %#x: %d tries, want 2", xid, n)
		}
	}
	if n := c.tr.Stats().Reconnects; n != 3 {
		t.Errorf("%d reconnections, want 3", n)
	}
}

// Over RPC-over-RDMA the client's port is the connection manager's choice and changes
// with every reconnection, so the cache knows an RDMA client by its address alone, as
// knfsd does (svcrdma's handle_connect_req sets the remote port to 0): a REMOVE
// retransmitted on a new connection is answered from the cache. Over TCP the port
// stays part of the key.
func TestDuplicateRequestCacheRDMAIgnoresPort(t *testing.T) {
	s := newDRCServer(t)
	h := s.NFSHandler()
	root := s.RootHandle()
	var cr nfs3.CreateRes
	for _, name := range []string{"f", "g"} {
		a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 700}
		if err := serveOnce(t, h, a, 10, nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte(name)}, Mode: nfs3.Guarded}, &cr); err != nil || cr.Status != nfs3.StatusOK {
			t.Fatalf("CREATE %s: %v %v", name, err, cr.Status)
		}
	}
	first := rpcrdma.Addr{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}}
	again := rpcrdma.Addr{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40002}}
	other := rpcrdma.Addr{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40001}}
	var rr nfs3.RemoveRes
	rm := &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}}
	if err := serveOnce(t, h, first, 11, nfs3.ProcRemove, rm, &rr); err != nil || rr.Status != nfs3.StatusOK {
		t.Fatalf("REMOVE over RDMA: %v %v", err, rr.Status)
	}
	if err := serveOnce(t, h, again, 11, nfs3.ProcRemove, rm, &rr); err != nil || rr.Status != nfs3.StatusOK {
		t.Fatalf("REMOVE retransmitted over a new RDMA connection: %v %v", err, rr.Status)
	}
	// Another host with the same XID is not a duplicate.
	if err := serveOnce(t, h, other, 11, nfs3.ProcRemove, rm, &rr); err != nil || rr.Status != nfs3.StatusNoEnt {
		t.Fatalf("other host's REMOVE: %v %v", err, rr.Status)
	}
	// Over TCP the port still tells clients apart.
	rm = &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("g")}}
	for i, want := range []nfs3.Status{nfs3.StatusOK, nfs3.StatusNoEnt} {
		a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 800 + i}
		if err := serveOnce(t, h, a, 12, nfs3.ProcRemove, rm, &rr); err != nil || rr.Status != want {
			t.Fatalf("REMOVE over TCP from port %d: %v %v, want %v", a.Port, err, rr.Status, want)
		}
	}
}

// A retransmission that arrives while the original call is still executing waits for
// it and gets its answer. Dropping it, as knfsd does, leaves a client that
// retransmits only after reconnecting (the oncrpc TCP client without a per-try
// timeout) waiting forever when the original's reply went to the lost connection.
func TestDuplicateRequestCacheRetransmissionDuringCall(t *testing.T) {
	s := newDRCServer(t)
	gate := make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	defer release()
	var first atomic.Bool
	var from addrLog
	procs := s.procs()
	h := s.withDRC(oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		if nfs3.Proc(req.Header.Proc) == nfs3.ProcRemove {
			if from.add(req) {
				release() // a new port: the cache cannot know the retransmission
			}
			if first.CompareAndSwap(false, true) {
				req.Conn.Close() // the client reconnects and retransmits
				<-gate
			}
		}
		return procs.ServeRPC(ctx, req, res)
	}))
	rs := oncrpc.NewServer(nil)
	rs.Register(nfs3.Program, nfs3.Version, h)
	c := serveReconnecting(t, rs)
	root := s.RootHandle()
	var cr nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}, Mode: nfs3.Unchecked}, &cr)
	wantStatus(t, "CREATE", cr.Status, nfs3.StatusOK)

	go func() {
		// Let the original go on once the retransmission has found it in progress.
		for {
			s.drc.mu.Lock()
			hits := s.drc.hits
			s.drc.mu.Unlock()
			if hits > 0 {
				release()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var rr nfs3.RemoveRes
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.nfs.Call(ctx, uint32(nfs3.ProcRemove), &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("f")}}, owned{&rr}); err != nil {
		t.Fatalf("REMOVE retransmitted while the original ran: %v", err)
	}
	from.skipIfPortChanged(t)
	wantStatus(t, "REMOVE retransmitted while the original ran", rr.Status, nfs3.StatusOK)
}

// serveReconnecting serves rs over loopback TCP and returns a root NFSv3 client of it
// whose transport reconnects (after 1 ms) whenever the connection is lost.
func serveReconnecting(t *testing.T, rs *oncrpc.Server) *client {
	t.Helper()
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		rs.Serve(l)
	}()
	t.Cleanup(func() {
		rs.Close()
		<-served
	})
	tr, err := oncrpc.DialTCP(context.Background(), l.Addr().String(), &oncrpc.TCPOptions{ReconnectBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	auth, err := oncrpc.NewAuthSys(rootCred())
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, tr: tr, nfs: oncrpc.NewClient(tr, nfs3.Program, nfs3.Version, oncrpc.WithAuth(auth))}
}

// addrLog records the caller's address of each try of each XID, to tell whether a
// retransmission came from its original's address and port. A reconnection may have
// to take a new port (another socket took the old one meanwhile, which the client
// cannot prevent): the cache cannot know the client then, and a test of it has
// nothing to check.
type addrLog struct {
	mu   sync.Mutex
	from map[uint32][]string
}

// add records req's caller and reports whether it differs from the first try's.
func (l *addrLog) add(req *oncrpc.Request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.from == nil {
		l.from = map[uint32][]string{}
	}
	a := req.RemoteAddr.String()
	tries := append(l.from[req.Header.XID], a)
	l.from[req.Header.XID] = tries
	return tries[0] != a
}

// skipIfPortChanged skips the test if some retransmission came from a new port.
func (l *addrLog) skipIfPortChanged(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for xid, tries := range l.from {
		for _, a := range tries[1:] {
			if a != tries[0] {
				t.Skipf("xid %#x was retransmitted from %s, not %s: the reconnection could not reuse its port", xid, a, tries[0])
			}
		}
	}
}

// A call whose procedure panics (the oncrpc Server answers SYSTEM_ERR) leaves no
// entry behind: its retransmission runs again instead of waiting for it.
func TestDuplicateRequestCachePanicLeavesNoEntry(t *testing.T) {
	s := newDRCServer(t)
	procs := s.procs()
	var panicked bool
	h := s.withDRC(oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		if !panicked {
			panicked = true
			panic("injected")
		}
		return procs.ServeRPC(ctx, req, res)
	}))
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 900}
	args := &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: s.RootHandle(), Name: []byte("d")}}
	var cr nfs3.CreateRes
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		serveOnce(t, h, a, 1, nfs3.ProcMkdir, args, &cr)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := serveOnceCtx(ctx, t, h, a, 1, nfs3.ProcMkdir, args, &cr); err != nil || cr.Status != nfs3.StatusOK {
		t.Fatalf("MKDIR retransmitted after a panic: %v %v", err, cr.Status)
	}
}

// A call that failed leaves the cache, and its retransmission, run again and cached in
// a later slot, stays cached for a whole round of the ring: the earlier slot, which
// still names its key, does not evict the newer entry when the ring comes back to it.
func TestDuplicateRequestCacheFailedCallKeepsRetry(t *testing.T) {
	s := newDRCServer(t)
	var runs [2]int // runs of XID 1, of the others
	h := s.withDRC(oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		if req.Header.XID == 1 {
			runs[0]++
			if runs[0] == 1 {
				return errors.New("a transient failure")
			}
		} else {
			runs[1]++
		}
		(&nfs3.RemoveRes{Status: nfs3.StatusOK}).EncodeXDR(res)
		return nil
	}))
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 800}
	rm := &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: s.RootHandle(), Name: []byte("f")}}
	var rr nfs3.RemoveRes
	if err := serveOnce(t, h, a, 1, nfs3.ProcRemove, rm, &rr); err == nil {
		t.Fatal("the first try did not fail")
	}
	if err := serveOnce(t, h, a, 1, nfs3.ProcRemove, rm, &rr); err != nil {
		t.Fatalf("the retransmission: %v", err)
	}
	// Calls enough to bring the ring back to the failed try's slot, not to the
	// retransmission's.
	for xid := uint32(2); xid <= drcSize; xid++ {
		if err := serveOnce(t, h, a, xid, nfs3.ProcRemove, rm, &rr); err != nil {
			t.Fatal(err)
		}
	}
	if err := serveOnce(t, h, a, 1, nfs3.ProcRemove, rm, &rr); err != nil {
		t.Fatal(err)
	}
	if runs[0] != 2 {
		t.Fatalf("XID 1 ran %d times, want 2: its cached answer was evicted with the failed try's slot", runs[0])
	}
}
