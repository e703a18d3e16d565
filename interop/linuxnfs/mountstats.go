package linuxnfs

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// XprtRDMA holds the counters of a Linux NFS client's "xprt: rdma" line in
// /proc/self/mountstats (net/sunrpc/xprtrdma, statistics format of Linux 4.x to 6.x):
// the fields after "rdma" are the source port, bind count, connect count, connect
// time, idle time, sends, receives, bad XIDs, request and backlog utilisation, then
// the read, write and reply chunk counts (segments, counted as they are encoded),
// the RDMA request and reply byte totals, pull-up, fix-up and hard-way registration
// counts, and failed marshals (calls whose encoding failed and was retried: their
// segments were counted anyway).
type XprtRDMA struct {
	Sends, Recvs                         uint64
	ReadChunks, WriteChunks, ReplyChunks uint64
	FailedMarshals                       uint64
}

// MountStats is what ParseMountStats read for one mount point.
type MountStats struct {
	Xprt XprtRDMA
	// Ops counts the operations of the per-op statistics by name ("READ", ...).
	Ops map[string]uint64
}

// MountStatsError says which line of a mountstats file could not be read.
type MountStatsError struct {
	Field  string // "device", "xprt", "xprt.sends", "per-op", ...
	Line   int    // 1-based line number (0: the file as a whole)
	Reason string
}

// Error names the field, the line and the reason.
func (e *MountStatsError) Error() string {
	return fmt.Sprintf("nfsrdma: mountstats %s at line %d: %s", e.Field, e.Line, e.Reason)
}

// xprtFields are the positions of XprtRDMA's counters after "rdma".
var xprtFields = []struct {
	name string
	idx  int
}{{"sends", 5}, {"recvs", 6}, {"read_chunk_count", 10}, {"write_chunk_count", 11}, {"reply_chunk_count", 12}, {"failed_marshal_count", 18}}

// ParseMountStats reads the section of /proc/self/mountstats for the NFS mount on
// mountpoint: its "xprt: rdma" counters and its per-op operation counts. Errors are
// *MountStatsError.
func ParseMountStats(b []byte, mountpoint string) (MountStats, error) {
	var ms MountStats
	sc := bufio.NewScanner(bytes.NewReader(b))
	line, in, sawXprt, inOps := 0, false, false, false
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if f[0] == "device" {
			if in {
				break
			}
			// device SPEC mounted on MOUNTPOINT with fstype nfs ...
			in = len(f) >= 8 && f[2] == "mounted" && f[3] == "on" && f[4] == mountpoint && f[6] == "fstype" && strings.HasPrefix(f[7], "nfs")
			continue
		}
		if !in {
			continue
		}
		switch {
		case f[0] == "xprt:":
			if len(f) < 2 || f[1] != "rdma" {
				return ms, &MountStatsError{Field: "xprt", Line: line, Reason: fmt.Sprintf("transport %q, want rdma", strings.Join(f[1:min(2, len(f))], ""))}
			}
			vals := f[2:]
			for _, x := range xprtFields {
				if x.idx >= len(vals) {
					return ms, &MountStatsError{Field: "xprt." + x.name, Line: line, Reason: fmt.Sprintf("only %d counters", len(vals))}
				}
				v, err := strconv.ParseUint(vals[x.idx], 10, 64)
				if err != nil {
					return ms, &MountStatsError{Field: "xprt." + x.name, Line: line, Reason: fmt.Sprintf("%q is not a counter", vals[x.idx])}
				}
				switch x.name {
				case "sends":
					ms.Xprt.Sends = v
				case "recvs":
					ms.Xprt.Recvs = v
				case "read_chunk_count":
					ms.Xprt.ReadChunks = v
				case "write_chunk_count":
					ms.Xprt.WriteChunks = v
				case "reply_chunk_count":
					ms.Xprt.ReplyChunks = v
				case "failed_marshal_count":
					ms.Xprt.FailedMarshals = v
				}
			}
			sawXprt = true
		case f[0] == "per-op":
			inOps = true
			ms.Ops = map[string]uint64{}
		case inOps && strings.HasSuffix(f[0], ":") && len(f) >= 2:
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return ms, &MountStatsError{Field: "per-op", Line: line, Reason: fmt.Sprintf("%s %q is not a count", f[0], f[1])}
			}
			ms.Ops[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	if err := sc.Err(); err != nil {
		return ms, &MountStatsError{Field: "file", Reason: err.Error()}
	}
	if !sawXprt {
		return ms, &MountStatsError{Field: "device", Reason: fmt.Sprintf("no NFS mount on %q with an xprt line", mountpoint)}
	}
	return ms, nil
}

// NFSv3ProcNames are the names Linux prints in the per-op statistics of an NFSv3
// mount, indexed by procedure number (RFC 1813).
var NFSv3ProcNames = [22]string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
	"CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS",
	"FSSTAT", "FSINFO", "PATHCONF", "COMMIT"}
