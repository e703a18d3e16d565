//go:build interop

package linuxnfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestLinuxClientMountsServerV41 is the NFSv4.1 case of issue #13 (nfs41-server): the
// same server as TestLinuxClientMountsServer (nfsbind/nfsserver, which serves NFSv4.1
// beside NFSv3, over rpcrdma and verbs/soft on NFSRDMA_LISTEN:20049), mounted by the
// guest's kernel client with vers=4.1,proto=rdma over siw (guest/tests/nfs41.sh, the
// workload knfsd passes in nfs41-knfsd). The verdict: every workload step passed (the
// failed ones are listed from the guest's test.log), the files of the guest's
// nfs41-manifest are on the export byte for byte, and on our side of the wire the
// COMPOUNDs of a READ placed their data in write chunks, those of a WRITE pulled it
// from read chunks (8 MiB - 1 bytes of each at least), READDIR replies went through
// reply chunks, with no RDMA_ERROR, credit overrun, garbage or system error. The
// guest's capture (nfs41.pcap) is held to the same rules, read by ReadCapture, and
// must agree with the trace; the case's check() judges it with tshark as well.
func TestLinuxClientMountsServerV41(t *testing.T) {
	host := envOrSkip(t, "NFSRDMA_LISTEN")
	ctx := waitContext(t)
	hs := serveExport(t, ctx, host)
	guest := hs.waitGuest(t, ctx)
	c, st := hs.stop(t)
	var ops []string
	for op, n := range c.NFS4Ops {
		if n > 0 {
			ops = append(ops, fmt.Sprintf("%d:%d", op, n))
		}
	}
	t.Logf("NFSv4 COMPOUNDs by operation (opcode:count, inline calls): %s", strings.Join(ops, " "))

	if !strings.HasPrefix(string(guest), "failures 0") {
		t.Errorf("the guest workload failed: %q", bytes.TrimSpace(guest))
		for _, l := range failedSteps(labPath("test.log")) {
			t.Errorf("guest: %s", l)
		}
	}
	checkManifest(t, hs.export, labPath("nfs41-manifest"))
	if c.Compounds == 0 || c.NFS4Ops[NFS4OpRead] == 0 || c.NFS4Ops[NFS4OpWrite] == 0 || c.NFS4Ops[NFS4OpReaddir] == 0 {
		t.Errorf("NFSv4 COMPOUNDs: %d, READ %d, WRITE %d, READDIR %d; want some of each", c.Compounds, c.NFS4Ops[NFS4OpRead], c.NFS4Ops[NFS4OpWrite], c.NFS4Ops[NFS4OpReaddir])
	}
	checkWire(t, c, st, "READDIR")
	cc := checkCapture(t, "nfs41.pcap", "READDIR")
	if cc.NFS4Ops[NFS4OpRead] != c.NFS4Ops[NFS4OpRead] || cc.NFS4Ops[NFS4OpWrite] != c.NFS4Ops[NFS4OpWrite] || cc.WriteListBytes != c.WriteListBytes || cc.ReadChunkBytes != c.ReadChunkBytes {
		t.Errorf("the capture and the server's trace differ: READ %d/%d, WRITE %d/%d, bytes placed %d/%d, pulled %d/%d",
			cc.NFS4Ops[NFS4OpRead], c.NFS4Ops[NFS4OpRead], cc.NFS4Ops[NFS4OpWrite], c.NFS4Ops[NFS4OpWrite], cc.WriteListBytes, c.WriteListBytes, cc.ReadChunkBytes, c.ReadChunkBytes)
	}
}

// failedSteps returns the guest script's failure and stall lines ("FAIL(...)",
// "STALL: ...") from its test.log.
func failedSteps(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{"no test.log: " + err.Error()}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, "] FAIL(") || strings.Contains(l, "] STALL:") {
			out = append(out, l)
		}
	}
	return out
}
