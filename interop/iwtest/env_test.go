//go:build interop

package iwtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The harness (interop/run.sh, cases/*.case) passes the case's setting in the
// environment:
//
//	IWTEST_PEER     guest address to dial, e.g. 10.0.2.15:20049 (knfsd)
//	IWTEST_LISTEN   address to listen on for the guest, e.g. 10.0.2.100:20049
//	IWTEST_CRC      1: request MPA CRC32c as initiator
//	IWTEST_CREDITS  credits expected in knfsd's replies (default 64)
//	IWTEST_CALLS    NULL calls to exchange (default 3)
//	IWTEST_WAIT     how long to wait for the guest, e.g. 120s (default 280s)
//	IWTEST_MOUNT    rpc.mountd's TCP address, e.g. 10.0.2.15:20048
//	IWTEST_SIZES    file sizes for TestProviderKnfsdReadWrite, e.g. 1,4093,131072
//	LAB_OUT         the run folder: artifacts go there; host.ready is created
//	                there once a listener is up

func peerAddr(t *testing.T) string {
	a := os.Getenv("IWTEST_PEER")
	if a == "" {
		t.Skip("IWTEST_PEER not set: run through interop/run.sh")
	}
	return a
}

func listenAddr(t *testing.T) string {
	a := os.Getenv("IWTEST_LISTEN")
	if a == "" {
		t.Skip("IWTEST_LISTEN not set: run through interop/run.sh")
	}
	return a
}

func envCRC() bool { return os.Getenv("IWTEST_CRC") == "1" }

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, s)
	}
	return v
}

// waitContext bounds everything a test waits for (guest boot included).
func waitContext(t *testing.T) context.Context {
	d := 280 * time.Second
	if s := os.Getenv("IWTEST_WAIT"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("IWTEST_WAIT=%q: %v", s, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// artifact saves data as name in the run folder (if any) for later reading.
func artifact(t *testing.T, name string, data []byte) {
	dir := os.Getenv("LAB_OUT")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Errorf("saving %s: %v", name, err)
	}
}

// signalReady tells the harness that the host side is listening.
func signalReady(t *testing.T) {
	if dir := os.Getenv("LAB_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "host.ready"), nil, 0o644); err != nil {
			t.Fatalf("host.ready: %v", err)
		}
	}
}
