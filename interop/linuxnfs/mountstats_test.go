package linuxnfs

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// linux-6.1-mountstats.txt is /proc/self/mountstats of the lab guest (Linux 6.1) after
// the nfsrdma-linux-client workload against our server.
func TestParseMountStatsLinux(t *testing.T) {
	b, err := os.ReadFile("testdata/linux-6.1-mountstats.txt")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ParseMountStats(b, "/mnt/nfs")
	if err != nil {
		t.Fatal(err)
	}
	want := XprtRDMA{Sends: 7432, Recvs: 7432, ReadChunks: 18, WriteChunks: 23, ReplyChunks: 96, FailedMarshals: 2}
	if ms.Xprt != want {
		t.Errorf("xprt %+v, want %+v", ms.Xprt, want)
	}
	if ms.Ops["LOOKUP"] != 3260 || ms.Ops["READDIRPLUS"] != 26 || ms.Ops["WRITE"] != 22 || ms.Ops["COMMIT"] != 3 || len(ms.Ops) != 22 {
		t.Errorf("per-op: %v", ms.Ops)
	}
	for _, n := range NFSv3ProcNames {
		if _, ok := ms.Ops[n]; !ok {
			t.Errorf("no per-op line for %s", n)
		}
	}
	if _, err := ParseMountStats(b, "/mnt/other"); err == nil {
		t.Error("a mount point that is not there parsed")
	}
}

var badMountStats = []struct{ field, text string }{
	{"device", ""},
	{"device", "device a mounted on /m with fstype ext4\n\txprt:\trdma 0 0 1 0 1 5 5 0 5 0 1 2 3\n"},
	{"xprt", "device a:/ mounted on /m with fstype nfs\n\txprt:\ttcp 0 0 1\n"},
	{"xprt", "device a:/ mounted on /m with fstype nfs\n\txprt:\n"},
	{"xprt.sends", "device a:/ mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 1\n"},
	{"xprt.sends", "device a:/ mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 1 x 5 0 5 0 1 2 3\n"},
	{"xprt.reply_chunk_count", "device a:/ mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 1 5 5 0 5 0 1 2\n"},
	{"xprt.failed_marshal_count", "device a:/ mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 1 5 5 0 5 0 1 2 3 4 5 6 7 8\n"},
	{"xprt.failed_marshal_count", "device a:/ mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 1 5 5 0 5 0 1 2 3 4 5 6 7 8 -1\n"},
	{"per-op", "device a:/ mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 1 5 5 0 5 0 1 2 3 4 5 6 7 8 9\n\tper-op statistics\n\tNULL: -1 0\n"},
}

func TestParseMountStatsErrors(t *testing.T) {
	for _, tc := range badMountStats {
		_, err := ParseMountStats([]byte(tc.text), "/m")
		var me *MountStatsError
		if !errors.As(err, &me) || me.Field != tc.field || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%q: error %v, want a *MountStatsError naming %s", tc.text, err, tc.field)
		}
	}
}

func FuzzParseMountStats(f *testing.F) {
	if b, err := os.ReadFile("testdata/linux-6.1-mountstats.txt"); err == nil {
		f.Add(b)
	}
	for _, tc := range badMountStats {
		f.Add([]byte(tc.text))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := ParseMountStats(b, "/mnt/nfs")
		if err != nil {
			var me *MountStatsError
			if !errors.As(err, &me) || me.Field == "" {
				t.Fatalf("error %v: want a *MountStatsError naming a field", err)
			}
		}
	})
}
