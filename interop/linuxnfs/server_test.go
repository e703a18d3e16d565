//go:build interop

package linuxnfs

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// TestLinuxClientMountsServer serves a temporary directory as /export: NFSv3 over
// RPC-over-RDMA on NFSRDMA_LISTEN:20049 (rpcrdma over verbs/soft) and NFSv3 + MOUNT v3
// over TCP on NFSRDMA_LISTEN:2049. The guest (nfsrdma-linux-client.sh) mounts it with
// vers=3,proto=rdma over siw, runs its workload, leaves a sha256 manifest of the
// files it wrote in the run folder and, once unmounted, the marker nfsrdma-done.
// The verdict: the guest's files are on the export byte for byte, and the wire shows
// WRITE data pulled from read chunks, READ data placed in write chunks, READDIR(PLUS)
// replies sent through reply chunks, the client within its credits, no RDMA_ERROR,
// no garbage and no system errors.
func TestLinuxClientMountsServer(t *testing.T) {
	host := envOrSkip(t, "NFSRDMA_LISTEN")
	ctx := waitContext(t)
	hs := serveExport(t, ctx, host)
	guest := hs.waitGuest(t, ctx)
	c, st := hs.stop(t)
	t.Logf("NFSv3 calls by procedure (inline headers): %v", c.NFSCalls)

	if !strings.HasPrefix(string(guest), "failures 0") {
		t.Errorf("the guest workload failed: %q", guest)
	}
	checkManifest(t, hs.export, labPath("nfsrdma-manifest"))
	checkWire(t, c, st, "READDIR(PLUS)")
	checkLinuxCounters(t, c)
}

// checkWire judges our server's side of the wire (c, st) after the guest's workload:
// the chunk rules of checkChunks, and no garbage, system error or failed write in
// oncrpc.
func checkWire(t *testing.T, c Counts, st oncrpc.ServerStats, dir string) {
	t.Helper()
	checkChunks(t, "server trace", c, dir)
	if st.Garbage != 0 || st.SystemErrs != 0 || st.WriteErrors != 0 {
		t.Errorf("oncrpc: %d garbage, %d system errors, %d write errors; want none", st.Garbage, st.SystemErrs, st.WriteErrors)
	}
}

// checkChunks judges counts of one view of the wire (what names it): WRITE data
// pulled from read chunks and READ data placed in write chunks, 8 MiB - 1 bytes of
// each at least, dir (the directory operation's name) replies sent through reply
// chunks, no RDMA_ERROR, no unreadable message, the client within its credits.
func checkChunks(t *testing.T, what string, c Counts, dir string) {
	t.Helper()
	const big = 8<<20 - 1
	if c.WriteReadChunk == 0 || c.ReadChunkBytes < big {
		t.Errorf("%s: WRITE by read chunks: %d calls, %d bytes pulled; want some, at least %d bytes", what, c.WriteReadChunk, c.ReadChunkBytes, big)
	}
	if c.ReadWriteChunk == 0 || c.WriteListBytes < big {
		t.Errorf("%s: READ by write chunks: %d calls, %d bytes placed; want some, at least %d bytes", what, c.ReadWriteChunk, c.WriteListBytes, big)
	}
	if c.ReadReplyChunk != 0 {
		t.Logf("%s: the Linux client offered a reply chunk beside the write chunk in %d READs", what, c.ReadReplyChunk)
	}
	if c.DirReplyChunk == 0 || c.NoMsgReplies == 0 || c.ReplyChunkBytes == 0 {
		t.Errorf("%s: %s by reply chunk: %d calls offered one, %d RDMA_NOMSG replies, %d bytes; want some of each", what, dir, c.DirReplyChunk, c.NoMsgReplies, c.ReplyChunkBytes)
	}
	if c.ErrorReplies != 0 || c.ParseErrors != 0 || c.CreditOverruns != 0 {
		t.Errorf("%s: %d RDMA_ERROR replies, %d unreadable messages (%s), %d credit overruns; want none", what, c.ErrorReplies, c.ParseErrors, c.FirstError, c.CreditOverruns)
	}
	if c.MaxGrant == 0 {
		t.Errorf("%s: no credits granted", what)
	}
}

// checkManifest compares the files of export with the guest's "sha256sum" output
// (hash, two spaces, name relative to the mount point).
func checkManifest(t *testing.T, export, manifest string) {
	t.Helper()
	f, err := os.Open(manifest)
	if err != nil {
		t.Errorf("the guest's manifest: %v", err)
		return
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || strings.Contains(name, "..") {
			t.Errorf("manifest line %q: want \"HASH  NAME\"", sc.Text())
			continue
		}
		got, size, err := sha256File(filepath.Join(export, name))
		if err != nil {
			t.Errorf("%s on the export: %v", name, err)
			continue
		}
		if got != want {
			t.Errorf("%s on the export: sha256 %s, the guest wrote %s", name, got, want)
		}
		n++
		t.Logf("export %s: %d bytes, sha256 matches the guest's", name, size)
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading the manifest: %v", err)
	}
	if n == 0 {
		t.Error("the manifest names no file")
	}
}

func sha256File(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// checkLinuxCounters compares the Linux client's own account of the mount (the copy of
// /proc/self/mountstats the guest saved before unmounting) with what our server saw:
// chunk segments (Linux's counts are upper bounds, see below), messages each way, and
// NFSv3 operations by procedure, exactly for the data and directory procedures.
func checkLinuxCounters(t *testing.T, c Counts) {
	t.Helper()
	b, err := os.ReadFile(labPath("mountstats.txt"))
	if err != nil {
		t.Errorf("the guest's mountstats: %v", err)
		return
	}
	ms, err := ParseMountStats(b, "/mnt/nfs")
	if err != nil {
		t.Errorf("the guest's mountstats: %v", err)
		return
	}
	x := ms.Xprt
	t.Logf("Linux xprtrdma counters: sends %d, recvs %d, read chunks %d, write chunks %d, reply chunks %d, failed marshals %d", x.Sends, x.Recvs, x.ReadChunks, x.WriteChunks, x.ReplyChunks, x.FailedMarshals)
	// Linux counts segments as it encodes them (rpcrdma_encode_*_chunk), before the
	// call is sent: a marshal that fails part way (failed_marshal_count) and is
	// retried has its first attempt's segments counted too. So Linux's counts are
	// upper bounds, exact when no marshal failed. It leaves out the pad segment of
	// an unaligned READ's write chunk.
	if uint64(c.ReadChunkSegs) > x.ReadChunks || uint64(c.ReplyChunkSegs) > x.ReplyChunks {
		t.Errorf("read/reply chunk segments: Linux encoded %d/%d, our server received %d/%d", x.ReadChunks, x.ReplyChunks, c.ReadChunkSegs, c.ReplyChunkSegs)
	}
	if x.WriteChunks < uint64(c.WriteChunkCalls) {
		t.Errorf("write chunk segments: Linux encoded %d, our server received %d calls with write chunks", x.WriteChunks, c.WriteChunkCalls)
	}
	if x.ReadChunks != uint64(c.ReadChunkSegs) || x.ReplyChunks != uint64(c.ReplyChunkSegs) {
		if x.FailedMarshals == 0 {
			t.Errorf("Linux encoded %d read and %d reply chunk segments with no failed marshal, but %d and %d arrived", x.ReadChunks, x.ReplyChunks, c.ReadChunkSegs, c.ReplyChunkSegs)
		} else {
			t.Logf("Linux encoded %d read and %d reply chunk segments, %d and %d arrived; the rest were counted by its %d failed (retried) marshals", x.ReadChunks, x.ReplyChunks, c.ReadChunkSegs, c.ReplyChunkSegs, x.FailedMarshals)
		}
	}
	if x.Sends > uint64(c.Calls) || x.Recvs > uint64(c.Replies) {
		t.Errorf("Linux sent %d and received %d messages, our server received %d calls and sent %d replies", x.Sends, x.Recvs, c.Calls, c.Replies)
	}
	for proc, name := range NFSv3ProcNames {
		linux, ok := ms.Ops[name]
		if !ok {
			t.Errorf("no per-op count for %s in the guest's mountstats", name)
			continue
		}
		// RDMA_NOMSG calls carry their RPC header in a chunk; the judge cannot see
		// their procedure.
		ours := uint64(c.NFSCalls[proc]) + uint64(c.LongCalls)
		if linux > ours || (c.LongCalls == 0 && linux != ours && (proc == NFSProcRead || proc == NFSProcWrite || proc == NFSProcReaddir || proc == NFSProcReaddirPlus)) {
			t.Errorf("%s: Linux counted %d, our server received %d", name, linux, ours)
		}
	}
}

// hostServer is the server the guest mounts: nfsbind/nfsserver (NFSv3, MOUNT v3 and
// NFSv4.1) on an oncrpc.Server with two listeners, RPC-over-RDMA over verbs/soft on
// port 20049 (traced by a Tally) and TCP on port 2049.
type hostServer struct {
	export   string
	srv      *oncrpc.Server
	rl, tl   oncrpc.Listener
	tally    *Tally
	serveErr chan error
}

// serveExport serves a temporary directory as /export on host and tells the
// harness it listens.
func serveExport(t *testing.T, ctx context.Context, host string) *hostServer {
	t.Helper()
	hs := &hostServer{export: t.TempDir(), tally: NewTally(Server), serveErr: make(chan error, 2)}
	log := testLogger("nfsrdma")
	nfs, err := nfsserver.New(nfsserver.Options{Root: hs.export, ExportPath: "/export", Logger: log.Named("nfs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nfs.Close() })
	hs.srv = oncrpc.NewServer(&oncrpc.ServerOptions{Logger: log.Named("oncrpc")})
	nfs.Register(hs.srv)

	dev := soft.New(soft.Config{CRC: envCRC(), Logger: softLogger(log)})
	t.Cleanup(func() { dev.Close() })
	rl, err := rpcrdma.Listen(ctx, dev, net.JoinHostPort(host, "20049"), &rpcrdma.ServerOptions{
		Trace:  hs.tally.Record,
		Logger: log.Named("rpcrdma"),
	})
	if err != nil {
		t.Fatalf("RDMA listener: %v", err)
	}
	tl, err := oncrpc.ListenTCP(net.JoinHostPort(host, "2049"), nil)
	if err != nil {
		rl.Close()
		t.Fatalf("TCP listener: %v", err)
	}
	hs.rl, hs.tl = rl, tl
	for _, l := range []oncrpc.Listener{rl, tl} {
		go func() {
			err := hs.srv.Serve(l)
			if errors.Is(err, oncrpc.ErrClosed) {
				err = nil
			}
			hs.serveErr <- err
		}()
	}
	t.Logf("serving %s as /export: NFS over RDMA on %s, NFS and MOUNT over TCP on %s", hs.export, rl.Addr(), tl.Addr())
	signalReady(t)
	return hs
}

// waitGuest waits for the guest's nfsrdma-done marker ("failures N") and returns it.
func (hs *hostServer) waitGuest(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	return waitGuestDone(t, ctx, hs.serveErr)
}

// stop shuts the server down, so that the counts are final, and returns them with
// the oncrpc statistics; the wire counts are saved as nfsrdma-wire.txt.
func (hs *hostServer) stop(t *testing.T) (Counts, oncrpc.ServerStats) {
	t.Helper()
	shctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := hs.srv.Shutdown(shctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	cancel()
	hs.rl.Close()
	hs.tl.Close()
	c := hs.tally.Counts()
	t.Logf("wire (server side): %v", c)
	st := hs.srv.Stats()
	t.Logf("oncrpc: %d calls, %d garbage, %d system errors, %d write errors", st.Calls, st.Garbage, st.SystemErrs, st.WriteErrors)
	artifact(t, "nfsrdma-wire.txt", []byte(c.String()+"\n"))
	return c, st
}
