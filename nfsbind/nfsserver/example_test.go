//go:build linux

package nfsserver_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// Export a directory over NFSv3 and MOUNT v3 on TCP. The same registration serves an
// RPC-over-RDMA listener: call rs.Serve with it as well.
func Example() {
	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	state, _ := os.MkdirTemp("", "nfs-state") // keeps the handle key across restarts
	defer os.RemoveAll(state)

	srv, err := nfsserver.New(nfsserver.Options{Root: dir, ExportPath: "/export", StateDir: state})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	go rs.Serve(l)
	defer rs.Close()
	fmt.Println("mount -o vers=3,proto=tcp,port=PORT,mountport=PORT 127.0.0.1:" + srv.ExportPath() + " /mnt")
	fmt.Println(len(srv.RootHandle()), "byte handles")
	// Output:
	// mount -o vers=3,proto=tcp,port=PORT,mountport=PORT 127.0.0.1:/export /mnt
	// 48 byte handles
}

// Serve an exports(5) table: two exports, each with its own clients; replace the
// table while serving (as nfsrdmad does on SIGHUP).
func ExampleExports() {
	a, _ := os.MkdirTemp("", "export-a")
	defer os.RemoveAll(a)
	b, _ := os.MkdirTemp("", "export-b")
	defer os.RemoveAll(b)
	tab, err := exports.Parse("exports", []byte(a+" 10.0.0.0/8(rw) *(ro)\n"+b+" 192.0.2.7(rw,no_root_squash,fsid=9)\n"))
	if err != nil {
		log.Fatal(err)
	}
	x, err := nfsserver.NewExports(nfsserver.Options{}, tab, net.DefaultResolver)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Close()
	rs := oncrpc.NewServer(nil)
	x.Register(rs) // NFS and MOUNT for both exports; serve TCP and RDMA listeners with rs
	for _, s := range x.Servers() {
		fmt.Println(s.ExportPath() == a || s.ExportPath() == b)
	}
	// Narrow the first export to one network: later calls from elsewhere get
	// NFS3ERR_STALE, MOUNT MNT3ERR_ACCES.
	tab, _ = exports.Parse("exports", []byte(a+" 10.1.0.0/16(rw)\n"))
	fmt.Println(x.Load(tab), len(x.Servers()))
	// Output:
	// true
	// true
	// <nil> 1
}

// Serve NFSv4.1 beside NFSv3 (Register does both) with a 30 s lease; a Linux client
// mounts the export through the pseudo file system, by its path, without MOUNT.
func ExampleNFS4Options() {
	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	srv, err := nfsserver.New(nfsserver.Options{Root: dir, ExportPath: "/export",
		NFS4: nfsserver.NFS4Options{State: nfs4state.Options{LeaseTime: 30 * time.Second}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	go rs.Serve(l)
	defer rs.Close()
	tr, err := oncrpc.DialTCP(context.Background(), l.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	err = oncrpc.NewClient(tr, nfs4.Program, nfs4.Version).Call(context.Background(), nfs4.ProcNull, nil, nil)
	fmt.Println("NFSv4 NULL:", err)
	fmt.Println("mount -o vers=4.1,proto=tcp,port=PORT 127.0.0.1:" + srv.ExportPath() + " /mnt")
	// Output:
	// NFSv4 NULL: <nil>
	// mount -o vers=4.1,proto=tcp,port=PORT 127.0.0.1:/export /mnt
}
