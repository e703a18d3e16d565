//go:build interop

package linuxnfs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The harness (interop/run.sh, cases/nfsrdma-*.case) passes the case's settings in
// the environment:
//
//	NFSRDMA_LISTEN  host address our server listens on for the guest (10.0.2.100)
//	NFSRDMA_PEER    the guest's address, where knfsd serves (10.0.2.15)
//	NFSRDMA_SIZES   file sizes of the workload, e.g. 0,1,4097,8388607
//	NFSRDMA_ENTRIES entries of the big directory (default 2000)
//	NFSRDMA_WAIT    how long the host side waits for the guest (default 360s)
//	NFSRDMA_CRC     1: MPA CRC32c on our side (requested as initiator, insisted on
//	                as responder)
//	LAB_OUT         the run folder (the guest's /out): artifacts, host.ready, and
//	                the guest's nfsrdma-done marker

func envOrSkip(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Skip(name + " not set: run through interop/run.sh")
	}
	return v
}

func envCRC() bool { return os.Getenv("NFSRDMA_CRC") == "1" }

func waitContext(t *testing.T) context.Context {
	d := 360 * time.Second
	if s := os.Getenv("NFSRDMA_WAIT"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("NFSRDMA_WAIT=%q: %v", s, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// labPath is name in the run folder ("" without one).
func labPath(name string) string {
	dir := os.Getenv("LAB_OUT")
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}

// artifact saves data as name in the run folder.
func artifact(t *testing.T, name string, data []byte) {
	if p := labPath(name); p != "" {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Errorf("saving %s: %v", name, err)
		}
	}
}

// signalReady tells the harness that the host side listens.
func signalReady(t *testing.T) {
	if p := labPath("host.ready"); p != "" {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatalf("host.ready: %v", err)
		}
	}
}

func testLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Info, Output: os.Stderr, IndependentLevels: true})
}

// softLogger is verbs/soft's logger at debug level: its only debug lines are the
// per-connection "connected"/"accepted" records with the negotiated MPA CRC, IRD and
// ORD, which the -crc cases check.
func softLogger(log hclog.Logger) hclog.Logger {
	l := log.Named("soft")
	l.SetLevel(hclog.Debug)
	return l
}

// waitGuestDone waits for the guest's nfsrdma-done marker ("failures N", renamed into
// place once written) in the run folder and returns it. A value on stopped (the host
// server ended) or the end of ctx fails the test.
func waitGuestDone(t *testing.T, ctx context.Context, stopped <-chan error) []byte {
	t.Helper()
	done := labPath("nfsrdma-done")
	if done == "" {
		t.Fatal("LAB_OUT not set: the guest's marker cannot be found")
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(done); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			t.Logf("guest: %s", bytes.TrimSpace(b))
			return b
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s from the guest: %v", done, ctx.Err())
		case err := <-stopped:
			t.Fatalf("the host server stopped: %v", err)
		case <-tick.C:
		}
	}
}
