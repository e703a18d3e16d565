//go:build linux

package nfsserver

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// env is an export served over TCP on 127.0.0.1 with one connected client.
type env struct {
	t     *testing.T
	dir   string
	state string
	srv   *Server
	rpc   *oncrpc.Server
	addr  string
	c     *client
	root  nfs3.FH
	// prepare, if set, is called with each new Server before it serves a call.
	prepare func(*Server)
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	return newEnvPrepared(t, opts, nil)
}

// newEnvPrepared is newEnv with env.prepare set.
func newEnvPrepared(t *testing.T, opts Options, prepare func(*Server)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), state: t.TempDir(), prepare: prepare}
	if opts.Root == "" {
		opts.Root = e.dir
	} else {
		e.dir = opts.Root
	}
	if opts.StateDir == "" && opts.HandleKey == nil {
		opts.StateDir = e.state
	} else {
		e.state = opts.StateDir
	}
	e.start(opts)
	e.c = e.dial(rootCred())
	e.root = e.c.mount(e.srv.ExportPath())
	return e
}

func (e *env) start(opts Options) {
	t := e.t
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if e.prepare != nil {
		e.prepare(srv)
	}
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	addr := "127.0.0.1:0"
	if e.addr != "" {
		addr = e.addr // restart on the same port
	}
	var l *oncrpc.TCPListener
	for i := 0; ; i++ {
		l, err = oncrpc.ListenTCP(addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
		if err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	e.srv, e.rpc, e.addr = srv, rs, l.Addr().String()
	t.Cleanup(func() { e.stop() })
}

func (e *env) stop() {
	if e.rpc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e.rpc.Shutdown(ctx)
		cancel()
		e.srv.Close()
		e.rpc = nil
	}
}

func rootCred() *oncrpc.AuthSysParams {
	return &oncrpc.AuthSysParams{MachineName: []byte("test"), UID: 0, GID: 0}
}

// client is a test NFS client: oncrpc.Client plus the nfs3 codec.
type client struct {
	t   *testing.T
	tr  *oncrpc.TCPTransport
	nfs *oncrpc.Client
	mnt *oncrpc.Client
}

func (e *env) dial(cred *oncrpc.AuthSysParams) *client {
	t := e.t
	tr, err := oncrpc.DialTCP(context.Background(), e.addr, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	var opts []oncrpc.ClientOption
	if cred != nil {
		auth, err := oncrpc.NewAuthSys(cred)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, oncrpc.WithAuth(auth))
	}
	return &client{
		t:   t,
		tr:  tr,
		nfs: oncrpc.NewClient(tr, nfs3.Program, nfs3.Version, opts...),
		mnt: oncrpc.NewClient(tr, nfs3.MountProgram, nfs3.MountVersion, opts...),
	}
}

// owned decodes into m and then copies every byte slice it holds, since the client
// reuses the reply buffer the decoder's slices alias.
type owned struct{ m nfs3.Message }

func (o owned) DecodeXDR(d *xdr.Decoder) error {
	if err := o.m.DecodeXDR(d); err != nil {
		return err
	}
	detach(reflect.ValueOf(o.m).Elem())
	return nil
}

func detach(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			detach(v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if !v.IsNil() {
				v.SetBytes(bytes.Clone(v.Bytes()))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			detach(v.Index(i))
		}
	}
}

func (c *client) call(proc nfs3.Proc, args xdr.EncoderTo, res nfs3.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.nfs.Call(ctx, uint32(proc), args, owned{res})
}

// must calls proc and fails the test on an RPC-level error.
func (c *client) must(proc nfs3.Proc, args xdr.EncoderTo, res nfs3.Message) {
	c.t.Helper()
	if err := c.call(proc, args, res); err != nil {
		c.t.Fatalf("%v: %v", proc, err)
	}
}

func (c *client) mount(path string) nfs3.FH {
	c.t.Helper()
	var r nfs3.MntRes
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.mnt.Call(ctx, uint32(nfs3.MountProcMnt), &nfs3.MntArgs{Path: []byte(path)}, owned{&r}); err != nil {
		c.t.Fatalf("MNT: %v", err)
	}
	if r.Status != nfs3.MountOK {
		c.t.Fatalf("MNT %s: %v", path, r.Status)
	}
	return r.FH
}

func wantStatus(t *testing.T, what string, got, want nfs3.Status) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

func (c *client) lookup(dir nfs3.FH, name string) (nfs3.FH, nfs3.Status) {
	c.t.Helper()
	var r nfs3.LookupRes
	c.must(nfs3.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}}, &r)
	return r.Object, r.Status
}

func (c *client) getattr(fh nfs3.FH) (nfs3.Fattr, nfs3.Status) {
	c.t.Helper()
	var r nfs3.GetattrRes
	c.must(nfs3.ProcGetattr, &nfs3.GetattrArgs{Object: fh}, &r)
	return r.Attr, r.Status
}

func (c *client) create(dir nfs3.FH, name string) nfs3.FH {
	c.t.Helper()
	var r nfs3.CreateRes
	c.must(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}, Mode: nfs3.Unchecked,
		Attr: nfs3.Sattr{SetMode: true, Mode: 0o644}}, &r)
	wantStatus(c.t, "CREATE "+name, r.Status, nfs3.StatusOK)
	if !r.Obj.Present || !r.ObjAttr.Present || !r.DirWcc.Before.Present || !r.DirWcc.After.Present {
		c.t.Fatalf("CREATE %s: missing handle, attributes or wcc: %+v", name, r)
	}
	return r.Obj.FH
}

func (c *client) mkdir(dir nfs3.FH, name string) nfs3.FH {
	c.t.Helper()
	var r nfs3.CreateRes
	c.must(nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: []byte(name)}, Attr: nfs3.Sattr{SetMode: true, Mode: 0o755}}, &r)
	wantStatus(c.t, "MKDIR "+name, r.Status, nfs3.StatusOK)
	return r.Obj.FH
}

func (c *client) write(fh nfs3.FH, off uint64, data []byte, stable nfs3.StableHow) nfs3.WriteRes {
	c.t.Helper()
	var r nfs3.WriteRes
	c.must(nfs3.ProcWrite, &nfs3.WriteArgs{File: fh, Offset: off, Count: uint32(len(data)), Stable: stable, Data: data}, &r)
	return r
}

func (c *client) read(fh nfs3.FH, off uint64, count uint32) nfs3.ReadRes {
	c.t.Helper()
	var r nfs3.ReadRes
	c.must(nfs3.ProcRead, &nfs3.ReadArgs{File: fh, Offset: off, Count: count}, &r)
	return r
}

func isAccept(err error, stat oncrpc.AcceptStat) bool {
	var ae *oncrpc.AcceptError
	return errors.As(err, &ae) && ae.Stat == stat
}
