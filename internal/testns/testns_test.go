//go:build linux

package testns

import (
	"fmt"
	"net"
	"os"
	"testing"
)

func TestMain(m *testing.M) { Main(m, Options{RPCBind: true}) }

// TestPrivateNamespaces checks that the tests really run in a network namespace of
// their own (not the one of the process that started them, the test binary outside) with a private /run, and that the
// rpcbind there is the one Main started.
func TestPrivateNamespaces(t *testing.T) {
	ok, why := Private()
	if !ok {
		t.Skip(why)
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	parent := fmt.Sprintf("/proc/%d/ns/", os.Getppid())
	host, err := os.Readlink(parent + "net")
	if err != nil {
		t.Fatal(err)
	}
	if self == host {
		t.Fatalf("tests run in the host's network namespace %s", host)
	}
	selfMnt, _ := os.Readlink("/proc/self/ns/mnt")
	hostMnt, _ := os.Readlink(parent + "mnt")
	if selfMnt == hostMnt {
		t.Fatalf("tests run in the host's mount namespace %s", hostMnt)
	}
	if RPCBindBinary() == "" {
		t.Skip("rpcbind is not installed")
	}
	if _, err := os.Stat("/run/rpcbind.sock"); err != nil {
		t.Errorf("the private rpcbind's socket: %v", err)
	}
	c, err := net.Dial("tcp", "127.0.0.1:111")
	if err != nil {
		t.Fatalf("private rpcbind: %v", err)
	}
	c.Close()
}
