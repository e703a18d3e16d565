//go:build linux

package nfsd_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsd"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// Serve a directory in process over RDMA and TCP, then read a file from it over RDMA
// with MOUNT over TCP, as a Linux client would.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/hello.txt", []byte("hello over RDMA\n"), 0o644)
	os.Chmod(dir, 0o755) // -export squashes root: run as root, the client reads as nobody

	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan nfsd.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- nfsd.Run(ctx, nfsd.Config{Export: dir, ExportPath: "/export", RDMA: "127.0.0.1:0", TCP: "127.0.0.1:0"},
			func(i nfsd.Info) { ready <- i })
	}()
	info := <-ready

	mnt, err := oncrpc.DialTCP(ctx, info.TCP.String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer mnt.Close()
	dev := soft.New(soft.Config{})
	defer dev.Close()
	nfs, err := rpcrdma.Dial(ctx, dev, info.RDMA.String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer nfs.Close()
	// AUTH_SYS as this user: the temporary directory is private to it.
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("example"), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: nfs, Mount: mnt}, info.ExportPath, oncrpc.WithAuth(auth))
	if err != nil {
		log.Fatal(err)
	}
	fh, _, err := c.LookupPath(ctx, "hello.txt")
	if err != nil {
		log.Fatal(err)
	}
	data, err := c.ReadAll(ctx, fh)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(data))

	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// hello over RDMA
	// stopped: <nil>
}

// Check an exports file before serving or reloading it, as nfsrdmad -check does.
func ExampleCheckExports() {
	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	file := dir + "/exports"
	os.WriteFile(file, []byte(dir+" 192.0.2.0/24(rw) *(ro)\n"+dir+"/missing *(ro)\n"), 0o644)

	_, err := nfsd.CheckExports(nfsd.Config{ExportsFile: file})
	var ce *nfsd.ConfigError
	fmt.Println(errors.As(err, &ce), ce.Field, strings.Contains(ce.Reason, "line 2"))

	os.WriteFile(file, []byte(dir+" 192.0.2.0/24(rw) *(ro)\n"), 0o644)
	lines, err := nfsd.CheckExports(nfsd.Config{ExportsFile: file})
	fmt.Println(len(lines), err)
	// Output:
	// true ExportsFile true
	// 1 <nil>
}
