//go:build linux

package nfsclient_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// Serve a temporary directory over NFSv3 on TCP and use it with the client.
func Example() {
	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	srv, err := nfsserver.New(nfsserver.Options{Root: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	l, _ := oncrpc.ListenTCP("127.0.0.1:0", nil)
	go rs.Serve(l)
	defer rs.Close()

	ctx := context.Background()
	tr, _ := oncrpc.DialTCP(ctx, l.Addr().String(), nil)
	defer tr.Close()
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("example"), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: tr}, srv.ExportPath(), oncrpc.WithAuth(auth))
	if err != nil {
		log.Fatal(err)
	}
	fh, _, _ := c.Create(ctx, c.Root(), "hello.txt", 0o644, true)
	c.WriteAll(ctx, fh, []byte("hello, NFS\n"))
	data, _ := c.ReadAll(ctx, fh)
	fmt.Printf("%q\n", data)
	// ReaddirPlus collects a listing; ReaddirPlusSeq yields it one reply at a time.
	ents, _ := c.ReaddirPlus(ctx, c.Root())
	fmt.Println(len(ents), ents[0].Name)
	for e, err := range c.ReaddirPlusSeq(ctx, c.Root()) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Name, e.Attr.Size, "bytes")
	}
	// Output:
	// "hello, NFS\n"
	// 1 hello.txt
	// hello.txt 11 bytes
}

// Mount an export with NFS over RPC-over-RDMA (here the software provider on
// loopback) and MOUNT over TCP, the way NFS/RDMA servers are reached: Transports
// names which transport carries which program.
func ExampleMount() {
	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello over RDMA\n"), 0o644)
	srv, err := nfsserver.New(nfsserver.Options{Root: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	defer rs.Close()
	tl, _ := oncrpc.ListenTCP("127.0.0.1:0", nil)
	go rs.Serve(tl)
	ctx := context.Background()
	sdev := soft.New(soft.Config{})
	defer sdev.Close()
	rl, err := rpcrdma.Listen(ctx, sdev, "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	go rs.Serve(rl)

	mnt, _ := oncrpc.DialTCP(ctx, tl.Addr().String(), nil)
	defer mnt.Close()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	nfs, err := rpcrdma.Dial(ctx, dev, rl.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer nfs.Close()
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("example"), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: nfs, Mount: mnt}, srv.ExportPath(), oncrpc.WithAuth(auth))
	if err != nil {
		log.Fatal(err)
	}
	fh, _, _ := c.LookupPath(ctx, "hello.txt")
	data, _ := c.ReadAll(ctx, fh)
	fmt.Printf("%s", data)
	// Output:
	// hello over RDMA
}
