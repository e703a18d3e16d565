//go:build interop

package linuxnfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsd"
)

// TestLinuxClientMountsNfsrdmadV41 is the NFSv4.1 workload of nfs41-knfsd against
// cmd/nfsrdmad's nfsd.Run (case nfs41-nfsrdmad): NFSv4.1 over RDMA on
// NFSRDMA_LISTEN:20049 with the daemon's defaults (soft provider, 64 credits, 4 KiB
// inline), the export given as an exports(5) file with knfsd's options in the
// reference case, rw,no_root_squash,sync,insecure, so the workload's chown runs as
// root. NFSv4 clients name the export by its path in the pseudo file system, here the
// temporary directory's; it goes to the guest as nfs41-export in the run folder. The
// verdict: every workload step passed, the manifest's files are on the export byte for
// byte, and the Linux client's xprtrdma counters of the first mount show read, write
// and reply chunks.
func TestLinuxClientMountsNfsrdmadV41(t *testing.T) {
	host := envOrSkip(t, "NFSRDMA_LISTEN")
	wait := waitContext(t)
	export := t.TempDir()
	exportsFile := filepath.Join(t.TempDir(), "exports")
	line := fmt.Sprintf("%s *(rw,no_root_squash,sync,insecure)\n", export)
	if err := os.WriteFile(exportsFile, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	artifact(t, "nfs41-export", []byte(export+"\n"))
	d := startDaemon(t, wait, nfsd.Config{
		ExportsFile: exportsFile,
		RDMA:        host + ":20049", TCP: host + ":2049",
	})
	guest := d.waitGuest(t, wait)
	d.stop(t)
	if !strings.HasPrefix(string(guest), "failures 0") {
		t.Errorf("the guest workload failed: %q", bytes.TrimSpace(guest))
		for _, l := range failedSteps(labPath("test.log")) {
			t.Errorf("guest: %s", l)
		}
	}
	checkManifest(t, export, labPath("nfs41-manifest"))
	// The mount before the remount step did the writing and the listing; the
	// guest kept its counters.
	ms := guestMountStats(t, "mountstats-first.txt")
	x := ms.Xprt
	t.Logf("Linux xprtrdma counters: sends %d, recvs %d, read chunks %d, write chunks %d, reply chunks %d, failed marshals %d; per-op READ %d WRITE %d READDIR %d",
		x.Sends, x.Recvs, x.ReadChunks, x.WriteChunks, x.ReplyChunks, x.FailedMarshals, ms.Ops["READ"], ms.Ops["WRITE"], ms.Ops["READDIR"])
	if x.ReadChunks == 0 || x.WriteChunks == 0 || x.ReplyChunks == 0 {
		t.Errorf("Linux's counters: want read, write and reply chunks used")
	}
}
