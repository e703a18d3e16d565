//go:build linux

package main

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
	"github.com/go-rpcrdma/rpcrdma/rpcbind/rpcbindtest"
)

func TestMain(m *testing.M) {
	clitest.RunMain("nfsrdmad", main)
	rpcbindtest.Main(m)
}

// TestSignalShutdown runs the command as a process, waits for its start-up line, sends
// SIGINT or SIGTERM and expects a clean exit (status 0) with the rpcbind registrations
// removed when rpcbind is available.
func TestSignalShutdown(t *testing.T) {
	withRPCBind, _ := rpcbindtest.Available()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			args := []string{"-export", t.TempDir(), "-state", "", "-rdma", "127.0.0.1:0", "-tcp", "127.0.0.1:0"}
			if withRPCBind && sig == syscall.SIGTERM {
				args = append(args, "-rpcbind")
			}
			cmd := clitest.Command(args...)
			stderr := startDaemon(t, cmd)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 60s after %v; stderr:\n%s", sig, stderr.String())
			}
			if err != nil {
				t.Fatalf("exit after %v: %v; stderr:\n%s", sig, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "stopped") {
				t.Errorf("no shutdown log line:\n%s", stderr.String())
			}
			if withRPCBind && sig == syscall.SIGTERM {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c, err := rpcbind.DialClient(ctx, rpcbindtest.Addr, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for _, netid := range []string{"tcp", "rdma"} {
					if _, err := c.Lookup(ctx, 100003, 3, netid); !errors.Is(err, rpcbind.ErrNotRegistered) {
						t.Errorf("NFS still registered under %s after %v: %v", netid, sig, err)
					}
				}
			}
		})
	}
}
