//go:build interop

package linuxnfs

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsd"
)

// TestLinuxClientMountsNfsrdmad is TestLinuxClientMountsServer with the server users
// run: cmd/nfsrdmad's nfsd.Run in process, with its defaults (soft provider, 64
// credits, 4 KiB inline) on NFSRDMA_LISTEN:20049 (RDMA) and :2049 (NFS and MOUNT over
// TCP). The daemon has no wire trace, so the verdict rests on the guest's workload, the
// sha256 of its files on the export, and the Linux client's own xprtrdma counters:
// read, write and reply chunks all used, and every call answered.
func TestLinuxClientMountsNfsrdmad(t *testing.T) {
	host := envOrSkip(t, "NFSRDMA_LISTEN")
	wait := waitContext(t)
	export := t.TempDir()
	// -export squashes root (the guest's workload runs as root) to nobody, as knfsd's
	// default does: nobody owns the export.
	if err := os.Chown(export, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out bytes.Buffer
	ready := make(chan nfsd.Info, 1)
	runErr := make(chan error, 1)
	go func() {
		runErr <- nfsd.Run(ctx, nfsd.Config{
			Export: export, ExportPath: "/export",
			RDMA: host + ":20049", TCP: host + ":2049",
			Stdout: &out, Logger: testLogger("nfsrdmad"),
		}, func(info nfsd.Info) { ready <- info })
	}()
	select {
	case info := <-ready:
		t.Logf("nfsrdmad: %s", info.MountCommand)
	case err := <-runErr:
		t.Fatalf("nfsrdmad: %v", err)
	case <-wait.Done():
		t.Fatal("nfsrdmad did not start")
	}
	signalReady(t)

	done := labPath("nfsrdma-done")
	var guest []byte
	for tick := time.NewTicker(200 * time.Millisecond); guest == nil; {
		if b, err := os.ReadFile(done); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			guest = b
			tick.Stop()
			break
		}
		select {
		case <-wait.Done():
			t.Fatalf("no %s from the guest: %v", done, wait.Err())
		case err := <-runErr:
			t.Fatalf("nfsrdmad stopped: %v", err)
		case <-tick.C:
		}
	}
	t.Logf("guest: %s", bytes.TrimSpace(guest))
	stop()
	if err := <-runErr; err != nil {
		t.Errorf("nfsrdmad: %v", err)
	}
	t.Logf("nfsrdmad's start-up summary:\n%s", out.String())
	if !strings.HasPrefix(string(guest), "failures 0") {
		t.Errorf("the guest workload failed: %q", guest)
	}
	checkManifest(t, export, labPath("nfsrdma-manifest"))

	b, err := os.ReadFile(labPath("mountstats.txt"))
	if err != nil {
		t.Fatalf("the guest's mountstats: %v", err)
	}
	ms, err := ParseMountStats(b, "/mnt/nfs")
	if err != nil {
		t.Fatalf("the guest's mountstats: %v", err)
	}
	x := ms.Xprt
	t.Logf("Linux xprtrdma counters: sends %d, recvs %d, read chunks %d, write chunks %d, reply chunks %d, failed marshals %d; per-op READ %d WRITE %d READDIRPLUS %d",
		x.Sends, x.Recvs, x.ReadChunks, x.WriteChunks, x.ReplyChunks, x.FailedMarshals, ms.Ops["READ"], ms.Ops["WRITE"], ms.Ops["READDIRPLUS"])
	if x.ReadChunks == 0 || x.WriteChunks == 0 || x.ReplyChunks == 0 || x.Sends != x.Recvs {
		t.Errorf("Linux's counters: want read, write and reply chunks used and every send answered")
	}
}
