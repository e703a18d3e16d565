package rpcbind_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
)

func ExampleParseUniversalAddr() {
	for _, s := range []string{"192.0.2.1.78.81", "fe80::1.8.1", "192.0.2.1.78.256"} {
		ap, err := rpcbind.ParseUniversalAddr(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(ap)
	}
	// Output:
	// 192.0.2.1:20049
	// [fe80::1]:2049
	// rpcbind: universal address "192.0.2.1.78.256": p2: 256 is greater than 255
}

func ExampleFormatUniversalAddr() {
	fmt.Println(rpcbind.FormatUniversalAddr(netip.MustParseAddrPort("192.0.2.1:20049")))
	fmt.Println(rpcbind.FormatUniversalAddr(netip.MustParseAddrPort("[2001:db8::1]:111")))
	// Output:
	// 192.0.2.1.78.81
	// 2001:db8::1.0.111
}

func ExampleNetIDFor() {
	for _, a := range []string{"192.0.2.1", "2001:db8::1"} {
		netid, _ := rpcbind.NetIDFor("rdma", netip.MustParseAddr(a))
		fmt.Println(netid)
	}
	// Output:
	// rdma
	// rdma6
}

// A service registers its RDMA endpoint with the local rpcbind; a client finds it.
func ExampleClient_Register() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := rpcbind.DialClient(ctx, "", nil) // 127.0.0.1:111, rpcbind version 4
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ap := netip.MustParseAddrPort("192.0.2.1:20049")
	if err := c.Register(ctx, 100400, 1, rpcbind.NetIDRDMA, ap, "superuser"); err != nil {
		if errors.Is(err, rpcbind.ErrRefused) {
			fmt.Println("already registered")
		}
		return
	}
	defer c.Unregister(ctx, 100400, 1, rpcbind.NetIDRDMA)
	found, err := c.Lookup(ctx, 100400, 1, rpcbind.NetIDRDMA)
	fmt.Println(found, err)
}

// A host without rpcbind answers Linux clients itself: register NFS and MOUNT in a
// Registry and serve it (on port 111) next to them.
func ExampleRegistry() {
	reg := rpcbind.NewRegistry()
	if err := reg.SetPort(100003, 3, rpcbind.IPProtoTCP, 2049); err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.SetPort(100005, 3, rpcbind.IPProtoTCP, 2049); err != nil {
		fmt.Println(err)
		return
	}
	rs := oncrpc.NewServer(nil)
	reg.Register(rs) // then rs.Serve(listener on :111)
	r, _ := reg.Lookup(100005, 3, rpcbind.NetIDTCP)
	fmt.Println(r.Addr)
	// Output:
	// 0.0.0.0.8.1
}
