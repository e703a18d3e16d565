//go:build interop

package linuxnfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// defaultSizes are odd file sizes up to 8 MiB - 1: empty, tiny, around a page, around
// knfsd's 128 KiB transfer size in the lab guest, and large.
var defaultSizes = []int{0, 1, 3, 4095, 4097, 65537, 131071, 131073, 1048577, 3145733, 8388607}

func envSizes(t *testing.T) []int {
	s := os.Getenv("NFSRDMA_SIZES")
	if s == "" {
		return defaultSizes
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			t.Fatalf("NFSRDMA_SIZES=%q: %q is not a size", s, f)
		}
		out = append(out, n)
	}
	return out
}

func envEntries(t *testing.T) int {
	s := os.Getenv("NFSRDMA_ENTRIES")
	if s == "" {
		return 2000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("NFSRDMA_ENTRIES=%q: want a positive count", s)
	}
	return n
}

// parallel runs f(i) for i in [0, n) on workers goroutines and returns the first
// error.
func parallel(n, workers int, f func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// TestClientAgainstKnfsd runs the workload through nfsbind/nfsclient over the
// rpcrdma client transport (verbs/soft) against the guest's knfsd (svcrdma over siw,
// NFSRDMA_PEER:20049), after MOUNT v3 over TCP (rpc.mountd on NFSRDMA_PEER:20048):
// files of odd sizes up to 8 MiB - 1 written concurrently (WRITE data as read chunks)
// and read back (READ data into write chunks) and compared; a directory of
// NFSRDMA_ENTRIES entries created by 16 workers and listed with READDIRPLUS and READDIR
// (reply chunks); 256 concurrent GETATTRs; symlink and READLINK, hard link, renames
// across directories, removals. It leaves the files and a sha256 manifest
// (nfsrdma-manifest, names relative to the export) for the guest to check with its own
// sha256sum. On the wire: chunks of each kind used, the client never above the credits
// knfsd granted, no RDMA_ERROR.
func TestClientAgainstKnfsd(t *testing.T) {
	peer := envOrSkip(t, "NFSRDMA_PEER")
	ctx := waitContext(t)
	sizes, entries := envSizes(t), envEntries(t)
	log := testLogger("nfsrdma")

	auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{Stamp: 1, MachineName: []byte("go-rpcrdma-interop")})
	if err != nil {
		t.Fatal(err)
	}
	mtr, err := oncrpc.DialTCP(ctx, net.JoinHostPort(peer, "20048"), nil)
	if err != nil {
		t.Fatalf("MOUNT over TCP: %v", err)
	}
	defer mtr.Close()

	tally := NewTally(Client)
	// Besides the tally, log how knfsd answers the first few READs and WRITEs: which
	// chunks each call offered and which the reply used.
	var (
		traceMu sync.Mutex
		pending = map[uint32]uint32{} // XID -> NFS procedure
		shown   = map[uint32]int{}
	)
	trace := func(sent bool, msg []byte) {
		tally.Record(sent, msg)
		h, err := Parse(msg)
		if err != nil {
			return
		}
		traceMu.Lock()
		defer traceMu.Unlock()
		if sent && h.HasRPC && h.IsCall && h.Prog == ProgNFS && ((h.RPCProc == NFSProcRead && h.WriteBytes >= 65536) || (h.RPCProc == NFSProcWrite && h.ReadBytes >= 65536)) && shown[h.RPCProc] < 3 {
			pending[h.XID] = h.RPCProc
			t.Logf("%s call xid %#x: read chunk %d bytes, write chunks %d (%d segments, %d bytes), reply chunk %v (%d segments, %d bytes), %d inline bytes",
				NFSv3ProcNames[h.RPCProc], h.XID, h.ReadBytes, h.WriteChunks, h.WriteSegs, h.WriteBytes, h.ReplyChunk, h.ReplySegs, h.ReplyBytes, h.InlineLen)
			return
		}
		if proc, ok := pending[h.XID]; ok && !sent {
			delete(pending, h.XID)
			shown[proc]++
			t.Logf("%s reply xid %#x: proc %d, write list %d bytes, reply chunk %v (%d segments, %d bytes), %d inline bytes",
				NFSv3ProcNames[proc], h.XID, h.Proc, h.WriteBytes, h.ReplyChunk, h.ReplySegs, h.ReplyBytes, h.InlineLen)
		}
	}
	// FirstFPDUDelay: the Linux 6.1 siw accept race (interop/README.md, finding 4).
	dev := soft.New(soft.Config{CRC: envCRC(), FirstFPDUDelay: 300 * time.Millisecond, Logger: softLogger(log)})
	defer dev.Close()
	rt, err := rpcrdma.Dial(ctx, dev, net.JoinHostPort(peer, "20049"), &rpcrdma.ClientOptions{
		Trace:  trace,
		Logger: log.Named("rpcrdma"),
	})
	if err != nil {
		t.Fatalf("RPC-over-RDMA to knfsd: %v", err)
	}
	defer rt.Close()
	t.Logf("connected to knfsd at %s:20049: limits %+v", peer, rt.Limits())

	c, err := nfsclient.Mount(ctx, nfsclient.Transports{NFS: rt, Mount: mtr}, "/export", oncrpc.WithAuth(auth))
	if err != nil {
		t.Fatalf("mount /export: %v", err)
	}
	t.Logf("mounted /export: rtmax %d, wtmax %d", c.MaxRead(), c.MaxWrite())
	root := c.Root()
	work, _, err := c.Mkdir(ctx, root, "nfsrdma", 0o755)
	if err != nil {
		t.Fatalf("MKDIR nfsrdma: %v", err)
	}

	// Files: written concurrently, read back, compared, manifest kept.
	start := time.Now()
	datas := make([][]byte, len(sizes))
	fhs := make([]nfs3.FH, len(sizes))
	total := 0
	for i, n := range sizes {
		datas[i] = make([]byte, n)
		rng := rand.NewPCG(uint64(n), 0x6e667372646d61)
		for j := 0; j+8 <= n; j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8; k++ {
				datas[i][j+k] = byte(v >> (8 * k))
			}
		}
		for j := n &^ 7; j < n; j++ {
			datas[i][j] = byte(j * 7)
		}
		total += n
	}
	err = parallel(len(sizes), len(sizes), func(i int) error {
		name := fmt.Sprintf("f%d", sizes[i])
		fh, _, err := c.Create(ctx, work, name, 0o644, false)
		if err != nil {
			return fmt.Errorf("CREATE %s: %w", name, err)
		}
		fhs[i] = fh
		if err := c.WriteAll(ctx, fh, datas[i]); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wrote := time.Since(start)
	start = time.Now()
	var manifest strings.Builder
	for i, n := range sizes {
		got := make([]byte, n+1)
		off := 0
		for {
			k, eof, err := c.Read(ctx, fhs[i], uint64(off), got[off:min(len(got), off+c.MaxRead())])
			if err != nil {
				t.Fatalf("READ f%d at %d: %v", n, off, err)
			}
			off += k
			if eof || k == 0 {
				break
			}
		}
		if !bytes.Equal(got[:off], datas[i]) {
			t.Fatalf("f%d: read back %d bytes that differ from the %d written", n, off, n)
		}
		a, err := c.Getattr(ctx, fhs[i])
		if err != nil || a.Size != uint64(n) {
			t.Fatalf("GETATTR f%d: size %d, %v", n, a.Size, err)
		}
		sum := sha256.Sum256(datas[i])
		fmt.Fprintf(&manifest, "%s  nfsrdma/f%d\n", hex.EncodeToString(sum[:]), n)
	}
	artifact(t, "nfsrdma-manifest", []byte(manifest.String()))
	t.Logf("files: %d bytes in %d files written in %v, read back and compared in %v", total, len(sizes), wrote.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// A directory of many entries.
	start = time.Now()
	many, _, err := c.Mkdir(ctx, work, "many", 0o755)
	if err != nil {
		t.Fatalf("MKDIR many: %v", err)
	}
	name := func(i int) string { return fmt.Sprintf("an-entry-with-a-longish-name-%05d", i) }
	if err := parallel(entries, 16, func(i int) error {
		_, _, err := c.Create(ctx, many, name(i), 0o644, false)
		return err
	}); err != nil {
		t.Fatalf("creating %d entries: %v", entries, err)
	}
	created := time.Since(start)
	start = time.Now()
	list, err := c.ReaddirPlus(ctx, many)
	if err != nil {
		t.Fatalf("READDIRPLUS: %v", err)
	}
	names := make([]string, 0, len(list))
	for _, e := range list {
		if len(e.FH) == 0 || e.Attr.Type != nfs3.TypeReg {
			t.Errorf("READDIRPLUS entry %q: handle %d bytes, type %v", e.Name, len(e.FH), e.Attr.Type)
			break
		}
		names = append(names, e.Name)
	}
	sort.Strings(names)
	if len(names) != entries || names[0] != name(0) || names[entries-1] != name(entries-1) {
		t.Fatalf("READDIRPLUS listed %d entries (want %d)", len(names), entries)
	}
	plain, err := c.Readdir(ctx, many)
	if err != nil || len(plain) != entries {
		t.Fatalf("READDIR: %d entries, %v; want %d", len(plain), err, entries)
	}
	t.Logf("directory: %d entries created in %v, listed (READDIRPLUS, READDIR) in %v", entries, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// More calls at once than knfsd grants credits.
	if err := parallel(256, 256, func(i int) error {
		_, err := c.Getattr(ctx, fhs[i%len(fhs)])
		return err
	}); err != nil {
		t.Fatalf("256 concurrent GETATTRs: %v", err)
	}

	// Namespace: symlinks, hard link, renames across directories, removal.
	if _, err := c.Symlink(ctx, work, "abs", "/etc/hostname"); err != nil {
		t.Fatalf("SYMLINK: %v", err)
	}
	lfh, _, err := c.Lookup(ctx, work, "abs")
	if err != nil {
		t.Fatalf("LOOKUP abs: %v", err)
	}
	if target, err := c.Readlink(ctx, lfh); err != nil || target != "/etc/hostname" {
		t.Fatalf("READLINK abs: %q, %v", target, err)
	}
	if err := c.Link(ctx, fhs[0], many, "hard"); err != nil {
		t.Fatalf("LINK: %v", err)
	}
	a, _, err := c.Mkdir(ctx, work, "a", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := c.Mkdir(ctx, work, "b", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, many, name(7), a, "x"); err != nil {
		t.Fatalf("RENAME many/%s -> a/x: %v", name(7), err)
	}
	if err := c.Rename(ctx, a, "x", b, "y"); err != nil {
		t.Fatalf("RENAME a/x -> b/y: %v", err)
	}
	if err := c.Rename(ctx, work, "a", b, "a2"); err != nil {
		t.Fatalf("RENAME a -> b/a2: %v", err)
	}
	if _, _, err := c.Lookup(ctx, b, "y"); err != nil {
		t.Fatalf("LOOKUP b/y after the renames: %v", err)
	}
	if _, _, err := c.Lookup(ctx, work, "a"); err == nil {
		t.Fatal("a still there after RENAME a -> b/a2")
	}
	if err := parallel(entries, 16, func(i int) error {
		if i == 7 {
			return nil
		}
		return c.Remove(ctx, many, name(i))
	}); err != nil {
		t.Fatalf("removing the entries: %v", err)
	}
	for _, step := range []struct {
		what string
		err  func() error
	}{
		{"REMOVE many/hard", func() error { return c.Remove(ctx, many, "hard") }},
		{"RMDIR many", func() error { return c.Rmdir(ctx, work, "many") }},
		{"REMOVE b/y", func() error { return c.Remove(ctx, b, "y") }},
		{"RMDIR b/a2", func() error { return c.Rmdir(ctx, b, "a2") }},
		{"RMDIR b", func() error { return c.Rmdir(ctx, work, "b") }},
		{"REMOVE abs", func() error { return c.Remove(ctx, work, "abs") }},
	} {
		if err := step.err(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
	}
	left, err := c.ReaddirPlus(ctx, work)
	if err != nil || len(left) != len(sizes) {
		t.Fatalf("nfsrdma/ after the removals: %d entries, %v; want the %d files", len(left), err, len(sizes))
	}
	if err := nfsclient.Unmount(ctx, mtr, "/export", oncrpc.WithAuth(auth)); err != nil {
		t.Errorf("UMNT: %v", err)
	}

	cn := tally.Counts()
	t.Logf("wire (client side): %v", cn)
	t.Logf("NFSv3 calls by procedure: %v", cn.NFSCalls)
	artifact(t, "nfsrdma-wire.txt", []byte(cn.String()+"\n"))
	// The guest compares this with knfsd's own per-procedure counters.
	proc3 := fmt.Sprintf("proc3 %d", len(cn.NFSCalls))
	for _, n := range cn.NFSCalls {
		proc3 += " " + strconv.Itoa(n)
	}
	artifact(t, "nfsrdma-proc3", []byte(proc3+"\n"))
	if cn.LongCalls != 0 {
		t.Logf("%d calls went as RDMA_NOMSG: their procedures are not in %q", cn.LongCalls, proc3)
	}
	big := 0
	for _, n := range sizes {
		big = max(big, n)
	}
	if cn.WriteReadChunk == 0 || cn.ReadChunkBytes < uint64(big) {
		t.Errorf("WRITE by read chunks: %d calls, %d bytes; want some, at least %d bytes", cn.WriteReadChunk, cn.ReadChunkBytes, big)
	}
	if cn.ReadWriteChunk == 0 || cn.WriteListBytes < uint64(big) {
		t.Errorf("READ by write chunks: %d calls, %d bytes placed by knfsd; want some, at least %d bytes", cn.ReadWriteChunk, cn.WriteListBytes, big)
	}
	if cn.ReadReplyChunk != 0 {
		// knfsd then writes the whole reply, data included, into the reply chunk
		// besides the data into the write chunk.
		t.Errorf("%d READs offered a reply chunk beside the write chunk; Linux offers none", cn.ReadReplyChunk)
	}
	if cn.DirReplyChunk == 0 || cn.NoMsgReplies == 0 {
		t.Errorf("READDIR(PLUS) by reply chunk: %d calls offered one, %d RDMA_NOMSG replies; want some of each", cn.DirReplyChunk, cn.NoMsgReplies)
	}
	if cn.CreditOverruns != 0 || cn.MaxGrant == 0 || uint32(cn.MaxInFlight) > cn.MaxGrant {
		t.Errorf("credits: %d overruns, %d calls in flight at most, knfsd granted %d..%d", cn.CreditOverruns, cn.MaxInFlight, cn.MinGrant, cn.MaxGrant)
	}
	if cn.ErrorReplies != 0 || cn.ParseErrors != 0 {
		t.Errorf("%d RDMA_ERROR replies, %d unreadable messages (%s); want none", cn.ErrorReplies, cn.ParseErrors, cn.FirstError)
	}
}
