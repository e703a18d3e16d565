//go:build linux

package nfsserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// rdmaEnv serves e's Server over RPC-over-RDMA (verbs/soft) too, and returns a
// transport to it and the listener, whose counters show how messages moved.
func (e *env) rdma(inline int) (*rpcrdma.Client, *rpcrdma.Listener) {
	return e.rdmaWith(inline, nil)
}

// rdmaWith is rdma with a client hosting the callback service bc (nil: none).
func (e *env) rdmaWith(inline int, bc *oncrpc.BackchannelOptions) (*rpcrdma.Client, *rpcrdma.Listener) {
	t := e.t
	ctx := context.Background()
	sdev, cdev := soft.New(soft.Config{}), soft.New(soft.Config{})
	t.Cleanup(func() { sdev.Close(); cdev.Close() })
	l, err := rpcrdma.Listen(ctx, sdev, "127.0.0.1:0", &rpcrdma.ServerOptions{InlineSend: inline, InlineRecv: inline})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go e.rpc.Serve(l)
	rt, err := rpcrdma.Dial(ctx, cdev, l.Addr().String(), &rpcrdma.ClientOptions{InlineSend: inline, InlineRecv: inline, Backchannel: bc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, l
}

// openArgs4 is an OPEN by owner of name in the current directory.
func openArgs4(owner, name string, access uint32, create bool) *nfs4.OpenArgs {
	a := &nfs4.OpenArgs{ShareAccess: access, ShareDeny: nfs4.ShareDenyNone,
		Owner: nfs4.StateOwner4{Owner: []byte(owner)},
		Claim: nfs4.OpenClaim4{Claim: nfs4.ClaimNull, File: []byte(name)}}
	if create {
		a.OpenType = nfs4.Open4Create
		a.How = nfs4.CreateHow4{Mode: nfs4.Unchecked4, Mask: nfs4.NewBitmap(nfs4.AttrMode), Attrs: nfs4.Fattr{Mode: 0o640}}
	}
	return a
}

// openFile opens name in dir and returns the file's handle and open stateid.
func (c *v4client) openFile(dir nfs4.FH, a *nfs4.OpenArgs) (nfs4.FH, nfs4.Stateid4) {
	c.t.Helper()
	res := c.must(&nfs4.PutfhArgs{Object: dir}, a, &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	return getfh(c.t, res), res.Results[2].(*nfs4.OpenRes).Stateid
}

// v4Workflow drives a whole NFSv4.1 session as a Linux client would, on transport
// rt: it returns after DESTROY_CLIENTID. readSink makes READ offer a reply sink
// (over RDMA: a write chunk).
func v4Workflow(t *testing.T, e *env, rt oncrpc.RoundTripper, readSink bool) {
	c := newV4Client(t, rt, rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)

	// OPEN create, WRITE (odd size, two WRITEs), COMMIT, CLOSE.
	data := make([]byte, 300001)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	fh, sid := c.openFile(dir, openArgs4("owner1", "f", nfs4.ShareAccessBoth, true))
	half := len(data) / 2
	var verf nfs4.Verifier
	for i, part := range [][]byte{data[:half], data[half:]} {
		res := c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.WriteArgs{Stateid: sid, Offset: uint64(i * half), Stable: nfs4.Unstable4, Data: part})
		w := res.Results[2].(*nfs4.WriteRes)
		if int(w.Count) != len(part) {
			t.Fatalf("WRITE count %d of %d", w.Count, len(part))
		}
		verf = w.WriteVerf
	}
	res := c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.CommitArgs{})
	if res.Results[2].(*nfs4.CommitRes).WriteVerf != verf {
		t.Fatal("COMMIT verifier differs from WRITE's")
	}
	if got, err := os.ReadFile(filepath.Join(e.dir, "f")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file on disk: %d bytes, %v", len(got), err)
	}
	c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.CloseArgs{OpenStateid: sid})

	// OPEN for reading, READ it back.
	fh2, rsid := c.openFile(dir, openArgs4("owner1", "f", nfs4.ShareAccessRead, false))
	if !bytes.Equal(fh2, fh) {
		t.Fatal("OPEN by name gave another handle")
	}
	got := make([]byte, 0, len(data))
	for off := 0; off < len(data); {
		buf := make([]byte, 1<<17)
		if readSink {
			c.opts = oncrpc.CallOptions{ReplySinks: [][]byte{buf}, MaxReply: 1024}
		}
		res := c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.ReadArgs{Stateid: rsid, Offset: uint64(off), Count: uint32(len(buf))})
		r := res.Results[2].(*nfs4.ReadRes)
		if readSink && !bytes.Equal(buf[:len(r.Data)], r.Data) {
			// Only the transport's RDMA Write puts data in the sink.
			t.Fatalf("READ at %d: the data is not in the reply sink", off)
		}
		got = append(got, r.Data...)
		off += len(r.Data)
		if r.EOF != (off == len(data)) || len(r.Data) == 0 {
			t.Fatalf("READ at %d: %d bytes, eof %v", off, len(r.Data), r.EOF)
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatal("READ returned other data")
	}
	a := c.getattr(fh, nfs4.AttrSize, nfs4.AttrType, nfs4.AttrMode, nfs4.AttrOwner, nfs4.AttrOwnerGroup, nfs4.AttrNumlinks, nfs4.AttrChange)
	if a.Size != uint64(len(data)) || a.Type != nfs4.NF4Reg || a.Mode != 0o640 || string(a.Owner) != "0" || string(a.OwnerGroup) != "0" {
		t.Fatalf("GETATTR: size %d type %v mode %o owner %q group %q", a.Size, a.Type, a.Mode, a.Owner, a.OwnerGroup)
	}

	// RENAME f -> g, LINK g -> h.
	c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.NoArgs{OpNum: nfs4.OpSavefh}, &nfs4.RenameArgs{OldName: []byte("f"), NewName: []byte("g")})
	c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.NoArgs{OpNum: nfs4.OpSavefh}, &nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpLink, Name: []byte("h")})
	if a := c.getattr(fh, nfs4.AttrNumlinks); a.Numlinks != 2 {
		t.Fatalf("after LINK: %d links", a.Numlinks)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "f")); !os.IsNotExist(err) {
		t.Fatalf("f after RENAME: %v", err)
	}

	// READDIR of a directory larger than the inline threshold.
	sub := filepath.Join(e.dir, "many")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 400 {
		name := fmt.Sprintf("entry-with-a-longish-name-%04d", i)
		want = append(want, name)
		if err := os.WriteFile(filepath.Join(sub, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	subFH := getfh(t, c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.LookupArgs{ObjName: []byte("many")}, &nfs4.NoArgs{OpNum: nfs4.OpGetfh}))
	names := c.readdirAll(subFH, 32<<10)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("READDIR: %d names, want %d", len(names), len(want))
	}

	// LOCK, LOCKT, LOCKU.
	res = c.call(&nfs4.PutfhArgs{Object: fh}, &nfs4.LockArgs{LockType: nfs4.WriteLT, Offset: 10, Length: 100,
		Locker: nfs4.Locker4{NewLockOwner: true, OpenStateid: rsid, LockOwner: nfs4.StateOwner4{ClientID: c.cid, Owner: []byte("lo1")}}})
	wantStatus4(t, "write LOCK under a read open", res, nfs4.ErrOpenmode)
	res = c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.LockArgs{LockType: nfs4.ReadLT, Offset: 10, Length: 100,
		Locker: nfs4.Locker4{NewLockOwner: true, OpenStateid: rsid, LockOwner: nfs4.StateOwner4{ClientID: c.cid, Owner: []byte("lo1")}}})
	lsid := res.Results[2].(*nfs4.LockRes).LockStateid
	res = c.call(&nfs4.PutfhArgs{Object: fh}, &nfs4.LocktArgs{LockType: nfs4.WriteLT, Offset: 0, Length: 50, Owner: nfs4.StateOwner4{ClientID: c.cid, Owner: []byte("lo2")}})
	wantStatus4(t, "LOCKT against a read lock", res, nfs4.ErrDenied)
	if d := res.Results[2].(*nfs4.LockRes).Denied; d.Offset != 10 || d.Length != 100 || d.LockType != nfs4.ReadLT || string(d.Owner.Owner) != "lo1" {
		t.Fatalf("LOCK4denied %+v", d)
	}
	c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.LockuArgs{LockType: nfs4.ReadLT, LockStateid: lsid, Offset: 10, Length: 100})
	c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.LocktArgs{LockType: nfs4.WriteLT, Offset: 0, Length: 50, Owner: nfs4.StateOwner4{ClientID: c.cid, Owner: []byte("lo2")}})
	c.must(&nfs4.StateidArgs{OpNum: nfs4.OpFreeStateid, Stateid: lsid})
	c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.CloseArgs{OpenStateid: rsid})

	// REMOVE both names; the session and the client go.
	for _, n := range []string{"g", "h"} {
		c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte(n)})
	}
	if _, err := os.Stat(filepath.Join(e.dir, "h")); !os.IsNotExist(err) {
		t.Fatalf("h after REMOVE: %v", err)
	}
	wantStatus4(t, "DESTROY_SESSION", c.rawMust(&nfs4.DestroySessionArgs{SessionID: c.sid}), nfs4.OK)
	wantStatus4(t, "DESTROY_CLIENTID", c.rawMust(&nfs4.DestroyClientIDArgs{ClientID: c.cid}), nfs4.OK)
	wantStatus4(t, "SEQUENCE after DESTROY_SESSION", c.call(&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}), nfs4.ErrBadsession)
}

// readdirAll lists dir with READDIRs of maxcount bytes, following the cookies, and
// checks them with checkCookie.
func (c *v4client) readdirAll(dir nfs4.FH, maxcount uint32) []string {
	c.t.Helper()
	var names []string
	var cookie uint64
	var verf nfs4.Verifier
	for range 1000 {
		res := c.must(&nfs4.PutfhArgs{Object: dir}, &nfs4.ReaddirArgs{Cookie: cookie, CookieVerf: verf, DirCount: maxcount, MaxCount: maxcount,
			AttrRequest: nfs4.NewBitmap(nfs4.AttrType, nfs4.AttrFileid, nfs4.AttrMountedOnFileid, nfs4.AttrFilehandle)})
		r := res.Results[2].(*nfs4.ReaddirRes)
		for _, en := range r.Entries {
			names = append(names, string(en.Name))
			checkCookie(c.t, "READDIR", en.Name, cookie, en.Cookie)
			cookie = en.Cookie
		}
		verf = r.CookieVerf
		if r.EOF {
			return names
		}
	}
	c.t.Fatal("READDIR never reached eof")
	return nil
}

// TestV4WorkflowTCP runs a whole NFSv4.1 session over TCP.
func TestV4WorkflowTCP(t *testing.T) {
	e := newEnv(t, Options{})
	v4Workflow(t, e, e.v4(rootCred()).rpc.Transport(), false)
}

// TestV4WorkflowRDMA runs it over RPC-over-RDMA (verbs/soft) with a 4 KiB inline
// threshold: WRITE data goes by read chunk, READ data by write chunk into the
// client's buffer, the large READDIR replies by reply chunk.
func TestV4WorkflowRDMA(t *testing.T) {
	e := newEnv(t, Options{})
	rt, l := e.rdma(4096)
	v4Workflow(t, e, rt, true)
	e.stop() // every reply sent and counted
	st := l.Stats()
	if st.WriteChunks < 3 || st.WriteBytes < 300001 || st.CallsReadChunks < 2 || st.RepliesReplyChunk == 0 {
		t.Fatalf("RDMA counters: %d write chunks, %d calls with read chunks, %d replies by reply chunk", st.WriteChunks, st.CallsReadChunks, st.RepliesReplyChunk)
	}
}

// TestV4ConcurrentClients: several clients, each with its own session, write and
// read back files of their own at the same time over one RDMA connection and over
// TCP connections.
func TestV4ConcurrentClients(t *testing.T) {
	e := newEnv(t, Options{})
	rrt, _ := e.rdma(4096)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		var rt oncrpc.RoundTripper = rrt
		if i%2 == 1 {
			rt = e.v4(rootCred()).rpc.Transport()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- v4ClientLoop(t, e, rt, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// v4ClientLoop creates, writes, reads back and removes files with its own session.
func v4ClientLoop(t *testing.T, e *env, rt oncrpc.RoundTripper, id int) error {
	c := newV4Client(t, rt, rootCred())
	c.owner = fmt.Appendf(nil, "concurrent-%d", id)
	call := func(ops ...nfs4.OpArgs) (*nfs4.CompoundRes, error) {
		res, err := c.raw(1, append([]nfs4.OpArgs{c.sequenceArgs(false)}, ops...)...)
		if err == nil && res.Status != nfs4.OK {
			err = fmt.Errorf("client %d: %v: %v", id, opNames(ops), res.Status)
		}
		return res, err
	}
	res, err := c.raw(1, &nfs4.ExchangeIDArgs{ClientOwner: nfs4.ClientOwner4{OwnerID: c.owner}})
	if err != nil || res.Status != nfs4.OK {
		return fmt.Errorf("client %d: EXCHANGE_ID: %v %v", id, err, res)
	}
	ex := res.Results[0].(*nfs4.ExchangeIDRes)
	res, err = c.raw(1, &nfs4.CreateSessionArgs{ClientID: ex.ClientID, Sequence: ex.SequenceID, ForeChanAttrs: defaultFore,
		BackChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}})
	if err != nil || res.Status != nfs4.OK {
		return fmt.Errorf("client %d: CREATE_SESSION: %v %v", id, err, res)
	}
	c.sid = res.Results[0].(*nfs4.CreateSessionRes).SessionID
	if _, err := call(&nfs4.ReclaimCompleteArgs{}); err != nil {
		return err
	}
	ops := append(putroot(e.exportComponents()...), &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
	if res, err = call(ops...); err != nil {
		return err
	}
	dir := getfh(t, res)
	for j := range 10 {
		name := fmt.Sprintf("c%d-%d", id, j)
		data := bytes.Repeat([]byte{byte(id), byte(j)}, 5000+j)
		res, err := call(&nfs4.PutfhArgs{Object: dir}, openArgs4("o", name, nfs4.ShareAccessBoth, true), &nfs4.NoArgs{OpNum: nfs4.OpGetfh})
		if err != nil {
			return err
		}
		sid, fh := res.Results[2].(*nfs4.OpenRes).Stateid, getfh(t, res)
		if _, err := call(&nfs4.PutfhArgs{Object: fh}, &nfs4.WriteArgs{Stateid: sid, Stable: nfs4.FileSync4, Data: data}); err != nil {
			return err
		}
		res, err = call(&nfs4.PutfhArgs{Object: fh}, &nfs4.ReadArgs{Stateid: sid, Count: uint32(len(data) + 10)})
		if err != nil {
			return err
		}
		if got := res.Results[2].(*nfs4.ReadRes); !bytes.Equal(got.Data, data) || !got.EOF {
			return fmt.Errorf("client %d: %s read back %d bytes, eof %v", id, name, len(got.Data), got.EOF)
		}
		if _, err := call(&nfs4.PutfhArgs{Object: fh}, &nfs4.CloseArgs{OpenStateid: sid}, &nfs4.PutfhArgs{Object: dir},
			&nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte(name)}); err != nil {
			return err
		}
	}
	return nil
}

// TestV4TwoReadsOverRDMA: a COMPOUND with two READs over RPC-over-RDMA, given two
// reply sinks, gets each READ's data RDMA-Written into its own write chunk, in
// COMPOUND order (RFC 8267 §4): the data is found in the sinks, where only the RDMA
// Writes put it (this client copies nothing there).
func TestV4TwoReadsOverRDMA(t *testing.T) {
	e := newEnv(t, Options{})
	rt, _ := e.rdma(1024)
	c := newV4Client(t, rt, rootCred())
	c.mount()
	dir := c.lookupFH(e.exportComponents()...)
	a, b := bytes.Repeat([]byte("A"), 5000), bytes.Repeat([]byte("b"), 7001)
	for name, data := range map[string][]byte{"a": a, "b": b} {
		if err := os.WriteFile(filepath.Join(e.dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fa, sa := c.openFile(dir, openArgs4("o", "a", nfs4.ShareAccessRead, false))
	fb, sb := c.openFile(dir, openArgs4("o", "b", nfs4.ShareAccessRead, false))
	sinks := [][]byte{make([]byte, 8192), make([]byte, 8192)}
	c.opts = oncrpc.CallOptions{ReplySinks: sinks, MaxReply: 2048}
	res := c.must(&nfs4.PutfhArgs{Object: fa}, &nfs4.ReadArgs{Stateid: sa, Count: 8192},
		&nfs4.PutfhArgs{Object: fb}, &nfs4.ReadArgs{Stateid: sb, Count: 8192})
	if got := res.Results[2].(*nfs4.ReadRes).Data; !bytes.Equal(got, a) {
		t.Fatalf("first READ: %d bytes", len(got))
	}
	if got := res.Results[4].(*nfs4.ReadRes).Data; !bytes.Equal(got, b) {
		t.Fatalf("second READ: %d bytes", len(got))
	}
	if !bytes.Equal(sinks[0][:len(a)], a) || !bytes.Equal(sinks[1][:len(b)], b) {
		t.Fatal("the READ data is not in the write chunks, in COMPOUND order")
	}
}
