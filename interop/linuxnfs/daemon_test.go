//go:build interop

package linuxnfs

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

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
	d := startDaemon(t, wait, nfsd.Config{
		Export: export, ExportPath: "/export",
		RDMA: host + ":20049", TCP: host + ":2049",
	})
	guest := d.waitGuest(t, wait)
	d.stop(t)
	if !strings.HasPrefix(string(guest), "failures 0") {
		t.Errorf("the guest workload failed: %q", guest)
	}
	checkManifest(t, export, labPath("nfsrdma-manifest"))
	ms := guestMountStats(t, "mountstats.txt")
	x := ms.Xprt
	t.Logf("Linux xprtrdma counters: sends %d, recvs %d, read chunks %d, write chunks %d, reply chunks %d, failed marshals %d; per-op READ %d WRITE %d READDIRPLUS %d",
		x.Sends, x.Recvs, x.ReadChunks, x.WriteChunks, x.ReplyChunks, x.FailedMarshals, ms.Ops["READ"], ms.Ops["WRITE"], ms.Ops["READDIRPLUS"])
	if x.ReadChunks == 0 || x.WriteChunks == 0 || x.ReplyChunks == 0 || x.Sends != x.Recvs {
		t.Errorf("Linux's counters: want read, write and reply chunks used and every send answered")
	}
}

// daemon is nfsd.Run in process, as cmd/nfsrdmad runs it.
type daemon struct {
	out    bytes.Buffer
	cancel context.CancelFunc
	runErr chan error
}

// startDaemon runs nfsd.Run with cfg (its Stdout and Logger set here) until stop,
// and tells the harness once it listens.
func startDaemon(t *testing.T, wait context.Context, cfg nfsd.Config) *daemon {
	t.Helper()
	d := &daemon{runErr: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	t.Cleanup(cancel)
	cfg.Stdout, cfg.Logger = &d.out, testLogger("nfsrdmad")
	ready := make(chan nfsd.Info, 1)
	go func() { d.runErr <- nfsd.Run(ctx, cfg, func(info nfsd.Info) { ready <- info }) }()
	select {
	case info := <-ready:
		t.Logf("nfsrdmad: %s", info.MountCommand)
	case err := <-d.runErr:
		t.Fatalf("nfsrdmad: %v", err)
	case <-wait.Done():
		t.Fatal("nfsrdmad did not start")
	}
	signalReady(t)
	return d
}

// waitGuest waits for the guest's nfsrdma-done marker ("failures N") and returns it.
func (d *daemon) waitGuest(t *testing.T, wait context.Context) []byte {
	t.Helper()
	return waitGuestDone(t, wait, d.runErr)
}

// stop ends Run, which must return nil, and logs the daemon's start-up summary.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	if err := <-d.runErr; err != nil {
		t.Errorf("nfsrdmad: %v", err)
	}
	t.Logf("nfsrdmad's start-up summary:\n%s", d.out.String())
}

// guestMountStats parses name, a copy of /proc/self/mountstats the guest saved in the
// run folder, for /mnt/nfs.
func guestMountStats(t *testing.T, name string) MountStats {
	t.Helper()
	b, err := os.ReadFile(labPath(name))
	if err != nil {
		t.Fatalf("the guest's mountstats: %v", err)
	}
	ms, err := ParseMountStats(b, "/mnt/nfs")
	if err != nil {
		t.Fatalf("the guest's mountstats: %v", err)
	}
	return ms
}
