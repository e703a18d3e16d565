//go:build interop

package linuxnfs

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// checkCapture reads the guest's packet capture name from the run folder with
// ReadCapture (our own reading of TCP, MPA, DDP and RDMAP, which does not need FPDUs
// aligned with TCP segments as Wireshark 4.0 does), counts its RPC-over-RDMA messages
// with a Tally and judges them with checkChunks. The counts are saved as name.txt.
func checkCapture(t *testing.T, name, dir string) Counts {
	t.Helper()
	b, err := os.ReadFile(labPath(name))
	if err != nil {
		t.Errorf("the guest's capture: %v", err)
		return Counts{}
	}
	tl := NewTally(Server)
	st, err := ReadCapture(b, 20049, tl.Record)
	c := tl.Counts()
	t.Logf("capture %s: %d frames, %d connections, %d FPDUs, %d Send messages, %d Terminates", name, st.Frames, st.Connections, st.FPDUs, st.Sends, st.Terminates)
	t.Logf("capture %s: %v", name, c)
	artifact(t, name+".txt", []byte(c.String()+"\n"))
	if err != nil {
		t.Errorf("capture %s: %v", name, err)
	}
	if st.Connections == 0 || st.Terminates != 0 {
		t.Errorf("capture %s: %d connections, %d Terminates; want some and none", name, st.Connections, st.Terminates)
	}
	checkChunks(t, "capture", c, dir)
	return c
}

// TestKnfsdCaptureV41 is the host side of nfs41-knfsd, the reference: once the guest
// is done (its workload against its own knfsd, the files checked on /export), the
// capture of the session must show what the server case is held to: NFSv4 COMPOUNDs
// of a READ placing their data in write chunks, of a WRITE pulling it from read
// chunks, READDIR replies through reply chunks, no RDMA_ERROR, the client within
// knfsd's credits.
func TestKnfsdCaptureV41(t *testing.T) {
	ctx := waitContext(t)
	if labPath("nfs41.pcap") == "" {
		t.Skip("LAB_OUT not set: run through interop/run.sh")
	}
	guest := waitGuestDone(t, ctx, nil)
	if !strings.HasPrefix(string(guest), "failures 0") {
		t.Errorf("the guest workload failed: %q", bytes.TrimSpace(guest))
		for _, l := range failedSteps(labPath("test.log")) {
			t.Errorf("guest: %s", l)
		}
	}
	c := checkCapture(t, "nfs41.pcap", "READDIR")
	if c.NFS4Ops[NFS4OpRead] == 0 || c.NFS4Ops[NFS4OpWrite] == 0 || c.NFS4Ops[NFS4OpReaddir] == 0 {
		t.Errorf("capture: NFSv4 READ %d, WRITE %d, READDIR %d COMPOUNDs; want some of each", c.NFS4Ops[NFS4OpRead], c.NFS4Ops[NFS4OpWrite], c.NFS4Ops[NFS4OpReaddir])
	}
}
