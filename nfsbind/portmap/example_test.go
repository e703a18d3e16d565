package portmap_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/portmap"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// A host without rpcbind answers Linux clients itself: register NFS and MOUNT in a
// Registry and serve it (on port 111) next to them.
func ExampleRegistry() {
	reg := portmap.NewRegistry()
	reg.SetPort(100003, 3, portmap.ProtoTCP, 2049)
	reg.SetPort(100005, 3, portmap.ProtoTCP, 2049)
	rs := oncrpc.NewServer(nil)
	reg.Register(rs) // then rs.Serve(listener on :111)
	r, _ := reg.Lookup(100005, 3, "tcp")
	fmt.Println(r.Addr)
	// Output:
	// 0.0.0.0.8.1
}
