package gonfsinterop

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gonfs "github.com/willscott/go-nfs"
	gonfshelpers "github.com/willscott/go-nfs/helpers"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
	"github.com/go-rpcrdma/rpcrdma/nfsbind"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

const benchFileSize = 64 << 20

// peer is a running NFS server: MOUNT and NFS over TCP at tcp, NFS over RDMA at rdma
// (empty when the server has no RDMA listener). cpu, when set, returns the CPU time
// the server's process has used (a server in a process of its own, childServer).
type peer struct {
	tcp, rdma, export string
	cpu               func() time.Duration
}

// startOurs serves dir with nfsserver over TCP, and over RDMA (verbs/soft) on 127.0.0.1.
func startOurs(b testing.TB, dir string) peer {
	srv, err := nfsserver.New(nfsserver.Options{Root: dir, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	rs := oncrpc.NewServer(nil)
	srv.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	go rs.Serve(l)
	dev := soft.New(soft.Config{})
	rl, err := rpcrdma.Listen(context.Background(), dev, "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	go rs.Serve(rl)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs.Shutdown(ctx)
		srv.Close()
		dev.Close()
	})
	return peer{tcp: l.Addr().String(), rdma: rl.Addr().String(), export: srv.ExportPath()}
}

// startGoNFS serves dir with github.com/willscott/go-nfs (osfs, null auth, handle
// cache), the peer baseline.
func startGoNFS(b testing.TB, dir string) peer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	h := gonfshelpers.NewCachingHandler(gonfshelpers.NewNullAuthHandler(osfs.New(dir)), 1024)
	go gonfs.Serve(l, h)
	b.Cleanup(func() { l.Close() })
	return peer{tcp: l.Addr().String(), export: "/"}
}

// peerServers start the servers BenchmarkPeers measures, by name: nfsserver with
// its TCP and RDMA listeners, and go-nfs.
var peerServers = map[string]func(testing.TB, string) peer{"nfsserver": startOurs, "go-nfs": startGoNFS}

// peerRows are BenchmarkPeers' servers: each row's name says which server answers
// and which transport carries its NFS calls (MOUNT always goes over TCP).
var peerRows = []struct {
	name   string
	nfs    string // "rdma" or "tcp": what carries the NFS calls
	server string // a key of peerServers
}{{"nfsserver-rdma", "rdma", "nfsserver"}, {"nfsserver-tcp", "tcp", "nfsserver"}, {"go-nfs-tcp", "tcp", "go-nfs"}}

// BenchmarkPeers measures READ and WRITE at 4 KiB and 1 MiB with 1 and 32 calls in
// flight, through nfsclient on 127.0.0.1, against nfsserver with NFS over RDMA
// (verbs/soft) and over TCP, and against willscott/go-nfs over TCP as the peer
// baseline, in one run. Rows are named op/size/qd/peer=SERVER-TRANSPORT, the peers
// of one case run one after the other, so that load from other processes tends to
// hit them alike, and benchstat -col /peer puts them side by side. Every row checks
// at its end that its NFS calls travelled over the transport its name says.
func BenchmarkPeers(b *testing.B) { benchPeers(b, false) }

// BenchmarkPeersTwoProcess is BenchmarkPeers with each server in a process of its
// own (this test binary again, TestPeerServerProcess), as nfsrdma bench meets
// nfsrdmad: client and server then do not share a Go scheduler (in BenchmarkPeers a
// goroutine one side readies waits for a processor the other side keeps busy), and
// each has GOMAXPROCS processors. Its cpu-ns/op and switches/op count the client's
// process only.
//
//	go test -run '^$' -bench 'PeersTwoProcess/op=READ/size=4KiB/qd=32' -count 5 .
func BenchmarkPeersTwoProcess(b *testing.B) { benchPeers(b, true) }

// benchPeers runs BenchmarkPeers' rows, with the servers in child processes when
// child is set.
func benchPeers(b *testing.B, child bool) {
	for _, op := range []string{"READ", "WRITE"} {
		for _, size := range []int{4 << 10, 1 << 20} {
			for _, qd := range []int{1, 32} {
				for _, row := range peerRows {
					start := peerServers[row.server]
					if child {
						start = childServer(row.server)
					}
					b.Run(fmt.Sprintf("op=%s/size=%s/qd=%d/peer=%s", op, sizeName(size), qd, row.name), func(b *testing.B) {
						benchPeer(b, start, row.nfs, op, size, qd)
					})
				}
			}
		}
	}
}

// sizeName names 4096 "4KiB" and 1048576 "1MiB".
func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// countingRT counts the calls it carries, NFSv3 ones by procedure, and the replies
// whose data the transport placed in the caller's buffer (an RDMA Write).
type countingRT struct {
	oncrpc.RoundTripper
	nfs    [nfs3.ProcCommit + 1]atomic.Int64
	other  atomic.Int64 // MOUNT and anything else
	placed atomic.Int64
}

func (c *countingRT) RoundTrip(ctx context.Context, call *oncrpc.ClientCall, reply *oncrpc.ClientReply) error {
	// The call header: xid, mtype, rpcvers, prog, vers, proc (RFC 5531 §9).
	m := call.Msg.Inline
	if len(m) >= 24 && binary.BigEndian.Uint32(m[12:]) == nfs3.Program && binary.BigEndian.Uint32(m[20:]) <= uint32(nfs3.ProcCommit) {
		c.nfs[binary.BigEndian.Uint32(m[20:])].Add(1)
	} else {
		c.other.Add(1)
	}
	err := c.RoundTripper.RoundTrip(ctx, call, reply)
	if err == nil && len(reply.Placed) > 0 && len(reply.Placed[0]) > 0 {
		c.placed.Add(1)
	}
	return err
}

// nfsCalls returns the NFSv3 calls of every procedure carried.
func (c *countingRT) nfsCalls() int64 {
	var n int64
	for i := range c.nfs {
		n += c.nfs[i].Load()
	}
	return n
}

// peerMount is a client mounted on a peer, with its transports: tcp always (it
// carries MOUNT, and NFS too when nfs is "tcp"), rdma when nfs is "rdma".
type peerMount struct {
	c         *nfsclient.Client
	nfs       string
	tcp, rdma *countingRT
}

// mountPeer mounts p's export with NFS over nfs ("rdma" or "tcp") and MOUNT over
// TCP, the way BenchmarkPeers' rows do.
func mountPeer(tb testing.TB, p peer, nfs string) *peerMount {
	ctx := context.Background()
	tr, err := oncrpc.DialTCP(ctx, p.tcp, &oncrpc.TCPOptions{MaxRecord: 8 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tr.Close() })
	m := &peerMount{nfs: nfs, tcp: &countingRT{RoundTripper: tr}}
	ts := nfsclient.Transports{NFS: m.tcp, Mount: m.tcp}
	if nfs == "rdma" {
		dev := soft.New(soft.Config{})
		rt, err := rpcrdma.Dial(ctx, dev, p.rdma, nil)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { rt.Close(); dev.Close() })
		m.rdma = &countingRT{RoundTripper: rt}
		ts.NFS = m.rdma
	}
	auth, _ := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: []byte("bench")})
	if m.c, err = nfsclient.Mount(ctx, ts, p.export, oncrpc.WithAuth(auth)); err != nil {
		tb.Fatal(err)
	}
	return m
}

// checkTransports fails tb unless every NFS call, and at least reads READs and
// writes WRITEs, went over the transport m was mounted with, READ data was placed
// by RDMA exactly when that is RDMA and its reply does not fit inline, and MOUNT
// went over TCP.
func (m *peerMount) checkTransports(tb testing.TB, reads, writes int64, size int) {
	tb.Helper()
	carrier, other := m.tcp, m.rdma
	if m.nfs == "rdma" {
		carrier, other = m.rdma, m.tcp
	}
	if other != nil && other.nfsCalls() != 0 {
		tb.Fatalf("NFS over %s: %d NFS calls (%d READ, %d WRITE) went over the other transport", m.nfs, other.nfsCalls(), other.nfs[nfs3.ProcRead].Load(), other.nfs[nfs3.ProcWrite].Load())
	}
	if r, w := carrier.nfs[nfs3.ProcRead].Load(), carrier.nfs[nfs3.ProcWrite].Load(); r < reads || w < writes {
		tb.Fatalf("NFS over %s: %d READ and %d WRITE calls over it, want at least %d and %d", m.nfs, r, w, reads, writes)
	}
	// Over RDMA a READ's data lands by RDMA Write in the caller's buffer (a write
	// chunk) unless its whole reply fits the reply inline size, both sides' default
	// rpcrdma.DefaultReplyInline (then the client offers no write chunk); over TCP none
	// can.
	var want int64
	if m.nfs == "rdma" && !readReplyInline(tb, size) {
		want = carrier.nfs[nfs3.ProcRead].Load()
	}
	if placed := carrier.placed.Load(); placed != want {
		tb.Fatalf("NFS over %s: %d of %d %d-byte READ replies placed their data, want %d", m.nfs, placed, carrier.nfs[nfs3.ProcRead].Load(), size, want)
	}
	if m.tcp.other.Load() == 0 || (m.rdma != nil && m.rdma.other.Load() != 0) {
		tb.Fatalf("MOUNT calls: %d over TCP, want some; %v over RDMA, want none", m.tcp.other.Load(), m.rdma)
	}
}

// readReplyInline reports whether the reply to a READ of size bytes fits the default
// reply inline size beside an RPC-over-RDMA header without chunks (rpcrdma's planCall
// then offers no write chunk).
func readReplyInline(tb testing.TB, size int) bool {
	maxReply, err := nfsbind.MaxReply(nfs3.ProcRead, &nfs3.ReadArgs{Count: uint32(size)})
	if err != nil {
		tb.Fatal(err)
	}
	return rpcrdma.MinSize+maxReply <= rpcrdma.DefaultReplyInline
}

func benchPeer(b *testing.B, start func(testing.TB, string) peer, nfs string, op string, size, qd int) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bench"), make([]byte, benchFileSize), 0o644); err != nil {
		b.Fatal(err)
	}
	p := start(b, dir)
	m := mountPeer(b, p, nfs)
	c := m.c
	ctx := context.Background()
	fh, _, err := c.Lookup(ctx, c.Root(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	if size > c.MaxRead() || size > c.MaxWrite() {
		b.Skipf("server's rtmax %d / wtmax %d below %d", c.MaxRead(), c.MaxWrite(), size)
	}
	slots := benchFileSize / size
	var serverCPU time.Duration
	if p.cpu != nil {
		serverCPU = p.cpu()
	}
	benchio.Run(b, qd, size, func(ctx context.Context, i int, buf []byte) error {
		off := uint64((i % slots) * size)
		if op == "READ" {
			_, _, err := c.Read(ctx, fh, off, buf)
			return err
		}
		_, err := c.Write(ctx, fh, off, buf, nfs3.Unstable)
		return err
	})
	if p.cpu != nil {
		b.ReportMetric(float64(p.cpu()-serverCPU)/float64(b.N), "server-cpu-ns/op")
	}
	var reads, writes int64
	if op == "READ" {
		reads = int64(b.N)
	} else {
		writes = int64(b.N)
	}
	m.checkTransports(b, reads, writes, size)
}

// Each BenchmarkPeers and BenchmarkPeersTwoProcess row's NFS calls, READ and WRITE
// included, travel over the transport its name says, and MOUNT over TCP: a row named
// rdma that sent NFS over TCP (as it once did, with Mount's transports swapped) fails
// here.
func TestPeerRowsUseTheirTransport(t *testing.T) {
	for _, row := range peerRows {
		for _, child := range []bool{false, true} {
			name, start := row.name, peerServers[row.server]
			if child {
				name, start = row.name+"/two-process", childServer(row.server)
			}
			t.Run(name, func(t *testing.T) { checkPeerRow(t, start, row.nfs) })
		}
	}
}

// checkPeerRow mounts a server start starts with NFS over nfs, reads and writes, and
// checks that every call took the transport it should and, for a server in a process
// of its own, that the CPU time it reports grew.
func checkPeerRow(t *testing.T, start func(testing.TB, string) peer, nfs string) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bench"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir)
	var cpu0 time.Duration
	if p.cpu != nil {
		cpu0 = p.cpu()
	}
	m := mountPeer(t, p, nfs)
	ctx := context.Background()
	fh, _, err := m.c.Lookup(ctx, m.c.Root(), "bench")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for i := range 3 {
		if _, _, err := m.c.Read(ctx, fh, uint64(i*len(buf)), buf); err != nil {
			t.Fatal(err)
		}
		if _, err := m.c.Write(ctx, fh, uint64(i*len(buf)), buf, nfs3.Unstable); err != nil {
			t.Fatal(err)
		}
	}
	m.checkTransports(t, 3, 3, len(buf))
	if nfs == "rdma" && m.tcp.nfsCalls() != 0 {
		t.Fatalf("%d NFS calls over TCP", m.tcp.nfsCalls())
	}
	if p.cpu != nil {
		if cpu := p.cpu(); cpu <= cpu0 {
			t.Fatalf("server process CPU time %v, then %v after serving", cpu0, cpu)
		}
	}
}
