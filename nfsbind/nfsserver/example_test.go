//go:build linux

package nfsserver_test

import (
	"fmt"
	"log"
	"os"

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
