package nfsclient_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
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
	c, err := nfsclient.Mount(ctx, tr, tr, srv.ExportPath(), oncrpc.WithAuth(auth))
	if err != nil {
		log.Fatal(err)
	}
	fh, _, _ := c.Create(ctx, c.Root(), "hello.txt", 0o644, true)
	c.WriteAll(ctx, fh, []byte("hello, NFS\n"))
	data, _ := c.ReadAll(ctx, fh)
	ents, _ := c.ReaddirPlus(ctx, c.Root())
	fmt.Printf("%q %d %s\n", data, len(ents), ents[0].Name)
	// Output:
	// "hello, NFS\n" 1 hello.txt
}
