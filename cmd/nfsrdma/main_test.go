//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/cli/clitest"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
	"github.com/go-rpcrdma/rpcrdma/nfsd"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// testServer is an in-process nfsrdmad on ephemeral 127.0.0.1 ports.
type testServer struct {
	export string
	info   nfsd.Info
	conn   []string // the client flags that reach it
}

func startServer(t *testing.T, mods ...func(*nfsd.Config)) *testServer {
	t.Helper()
	s := &testServer{export: t.TempDir()}
	squashedOwner(t, s.export)
	cfg := nfsd.Config{Export: s.export, ExportPath: "/export", RDMA: "127.0.0.1:0", TCP: "127.0.0.1:0"}
	for _, m := range mods {
		m(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	readyc := make(chan nfsd.Info, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- nfsd.Run(ctx, cfg, func(i nfsd.Info) { readyc <- i })
	}()
	select {
	case s.info = <-readyc:
	case err := <-errc:
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	tcp := strconv.Itoa(portOfAddr(s.info.TCP.String()))
	s.conn = []string{"-rdma-port", strconv.Itoa(portOfAddr(s.info.RDMA.String())), "-tcp-port", tcp, "-mountport", tcp, "-timeout", "2m"}
	return s
}

// cli runs the command with the server's connection flags after the command name.
func (s *testServer) cli(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append(append([]string{name}, s.conn...), args...)
	err := run(context.Background(), all, &out, &errOut)
	if errOut.Len() > 0 {
		t.Logf("nfsrdma %s stderr: %s", name, errOut.String())
	}
	return out.String(), err
}

func (s *testServer) mustCLI(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := s.cli(t, name, args...)
	if err != nil {
		t.Fatalf("nfsrdma %s %q: %v\n%s", name, args, err, out)
	}
	return out
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestPutGetLsRmOverRDMAAndTCP(t *testing.T) {
	s := startServer(t)
	local := t.TempDir()
	sizes := []int{0, 1, 4097, 1<<20 + 3}
	for _, proto := range []string{"rdma", "tcp"} {
		t.Run(proto, func(t *testing.T) {
			dir := "/dir-" + proto
			if out := s.mustCLI(t, "mkdir", "-proto", proto, "127.0.0.1:/export"+dir); !strings.Contains(out, "mkdir 127.0.0.1:/export"+dir) {
				t.Errorf("mkdir printed %q", out)
			}
			for i, n := range sizes {
				data := randomBytes(n, uint64(i))
				name := fmt.Sprintf("f%d", n)
				src := filepath.Join(local, proto+"-"+name)
				if err := os.WriteFile(src, data, 0o640); err != nil {
					t.Fatal(err)
				}
				// Into a directory (keeps the local name), then to an explicit name.
				out := s.mustCLI(t, "put", "-proto", proto, src, "127.0.0.1:/export"+dir)
				if !strings.Contains(out, fmt.Sprintf("%d bytes", n)) || !strings.Contains(out, "over "+proto) {
					t.Errorf("put printed %q", out)
				}
				s.mustCLI(t, "put", "-proto", proto, src, "127.0.0.1:/export"+dir+"/"+name)
				for _, p := range []string{filepath.Join(s.export, dir, proto+"-"+name), filepath.Join(s.export, dir, name)} {
					got, err := os.ReadFile(p)
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("%s on the server: %d bytes, %v; want %d bytes put", p, len(got), err, n)
					}
				}
				fi, _ := os.Stat(filepath.Join(s.export, dir, name))
				if fi.Mode().Perm() != 0o640 {
					t.Errorf("%s: mode %v, want the local file's 0640", name, fi.Mode())
				}
				dst := filepath.Join(local, proto+"-got-"+name)
				s.mustCLI(t, "get", "-proto", proto, "127.0.0.1:/export"+dir+"/"+name, dst)
				if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("get %s: %d bytes, %v; want %d", name, len(got), err, n)
				}
			}
			// Overwrite a longer file with a shorter one: truncated.
			short := filepath.Join(local, "short")
			os.WriteFile(short, []byte("short"), 0o644)
			big := fmt.Sprintf("f%d", sizes[len(sizes)-1])
			s.mustCLI(t, "put", "-proto", proto, short, "127.0.0.1:/export"+dir+"/"+big)
			if got, _ := os.ReadFile(filepath.Join(s.export, dir, big)); string(got) != "short" {
				t.Errorf("overwritten file holds %d bytes, want \"short\"", len(got))
			}
			// get to stdout and into a directory.
			out := s.mustCLI(t, "get", "-proto", proto, "127.0.0.1:/export"+dir+"/"+big, "-")
			if out != "short" {
				t.Errorf("get to stdout printed %q", out)
			}
			s.mustCLI(t, "get", "-proto", proto, "127.0.0.1:/export"+dir+"/"+big, local)
			if got, _ := os.ReadFile(filepath.Join(local, big)); string(got) != "short" {
				t.Errorf("get into a directory wrote %q", got)
			}

			os.Symlink("f1", filepath.Join(s.export, dir, "link"))
			out = s.mustCLI(t, "ls", "-proto", proto, "127.0.0.1:/export"+dir)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2*len(sizes)+2 {
				t.Fatalf("ls printed %d lines, want %d:\n%s", len(lines), 2*len(sizes)+2, out)
			}
			if !strings.HasPrefix(lines[0], "-rw-r-----") || !strings.HasSuffix(lines[0], " f0") {
				t.Errorf("first ls line %q", lines[0])
			}
			if !strings.Contains(out, "\nlrwxrwxrwx ") || !strings.Contains(out, " link -> f1\n") {
				t.Errorf("ls does not show the symlink:\n%s", out)
			}
			if want := fmt.Sprintf("%d entries", 2*len(sizes)+1); !strings.HasPrefix(lines[len(lines)-1], want) {
				t.Errorf("ls summary %q, want %q", lines[len(lines)-1], want)
			}
			// -U prints the same lines in directory order, and the same summary.
			outU := s.mustCLI(t, "ls", "-U", "-proto", proto, "127.0.0.1:/export"+dir)
			linesU, sorted := strings.Split(strings.TrimSpace(outU), "\n"), slices.Clone(lines)
			slices.Sort(linesU)
			if slices.Sort(sorted); !slices.Equal(linesU, sorted) {
				t.Errorf("ls -U printed\n%s\nwant the lines of ls's\n%s", outU, out)
			}
			out = s.mustCLI(t, "ls", "-proto", proto, "127.0.0.1:/export"+dir+"/f4097")
			if !strings.Contains(out, " 4097 ") || !strings.HasSuffix(strings.TrimSpace(out), "f4097") {
				t.Errorf("ls of a file printed %q", out)
			}
			out = s.mustCLI(t, "ls", "-proto", proto, "127.0.0.1:/export")
			if !strings.HasPrefix(out, "drwx") {
				t.Errorf("ls of the export root printed %q", out)
			}

			s.mustCLI(t, "rm", "-proto", proto, "127.0.0.1:/export"+dir+"/f1")
			if _, err := os.Lstat(filepath.Join(s.export, dir, "f1")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("rm left f1: %v", err)
			}
			// rm of a non-empty directory fails with the server's error.
			if _, err := s.cli(t, "rm", "-proto", proto, "127.0.0.1:/export"+dir); err == nil || !strings.Contains(err.Error(), "NFS3ERR_NOTEMPTY") {
				t.Errorf("rm of a non-empty directory: %v", err)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	s := startServer(t)
	local := filepath.Join(t.TempDir(), "f")
	os.WriteFile(local, []byte("x"), 0o644)
	os.WriteFile(filepath.Join(s.export, "file"), []byte("x"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ls", []string{"127.0.0.1:/export/missing"}, "/export/missing: nfsclient: LOOKUP \"missing\": no such file or directory (NFS3ERR_NOENT, 2)"},
		{"ls", []string{"127.0.0.1:/elsewhere"}, "no export of 127.0.0.1 contains /elsewhere (exports: /export)"},
		{"ls", []string{"127.0.0.1:/export/../../etc"}, "no export"},
		{"get", []string{"127.0.0.1:/export", local}, "not a regular file"},
		{"get", []string{"127.0.0.1:/export/missing", local}, "NFS3ERR_NOENT"},
		{"put", []string{filepath.Join(filepath.Dir(local), "missing"), "127.0.0.1:/export"}, "no such file"},
		{"put", []string{filepath.Dir(local), "127.0.0.1:/export"}, "not a regular file"},
		{"put", []string{local, "127.0.0.1:/export/nodir/f"}, "NFS3ERR_NOENT"},
		{"put", []string{local, "127.0.0.1:/export/file/f"}, "not a directory (NFS3ERR_NOTDIR, 20)"},
		{"mkdir", []string{"127.0.0.1:/export/file"}, "file exists (NFS3ERR_EXIST, 17)"},
		{"mkdir", []string{"127.0.0.1:/export"}, "is the export root"},
		{"rm", []string{"127.0.0.1:/export"}, "is the export root"},
		{"ls", []string{"-provider", "ibverbs", "127.0.0.1:/export"}, "-provider \"ibverbs\""},
	} {
		_, err := s.cli(t, tc.name, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("nfsrdma %s %q: %v, want an error containing %q", tc.name, tc.args, err, tc.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frob"}, "unknown command \"frob\""},
		{[]string{"ls"}, "want 1 argument(s), got 0"},
		{[]string{"get", "h:/x"}, "want 2 argument(s), got 1"},
		{[]string{"ls", "-proto", "udp", "h:/x"}, "-proto \"udp\": want rdma or tcp"},
		{[]string{"ls", "-proto", "both", "h:/x"}, "-proto \"both\": want rdma or tcp"},
		{[]string{"bench", "-proto", "both", "-port", "5", "h:/x"}, "-port: ambiguous"},
		{[]string{"ls", "-port", "70000", "h:/x"}, "-port 70000"},
		{[]string{"ls", "-mountport", "0", "h:/x"}, "-mountport 0"},
		{[]string{"ls", "-timeout", "0s", "h:/x"}, "-timeout"},
		{[]string{"ls", "nocolon"}, "want SERVER:/path"},
		{[]string{"ls", "-provider", "mlx", "h:/x"}, "-provider \"mlx\": want soft or ibverbs"},
		{[]string{"ls", ":/x"}, "no server before the colon"},
		{[]string{"ls", "h:relative"}, "must start with /"},
		{[]string{"ls", "[::1/x"}, "want [IPv6]:/path"},
		{[]string{"ls", "[[x]:/p"}, "is not a host name or address"},
		{[]string{"put", "-mode", "17777", "a", "h:/x"}, "invalid value \"17777\" for flag -mode: want octal"},
		{[]string{"mkdir", "-mode", "9", "h:/x"}, "invalid value \"9\" for flag -mode"},
		{[]string{"bench", "-duration", "2h", "h:/x"}, "-duration 2h0m0s"},
		{[]string{"bench", "-qd", "0", "h:/x"}, "-qd \"0\""},
		{[]string{"bench", "-sizes", "4k,huge", "h:/x"}, "-sizes \"4k,huge\""},
		{[]string{"bench", "-sizes", "2MiB", "h:/x"}, "exceeds the largest READ/WRITE"},
		{[]string{"bench", "-ops", "read,getattr", "h:/x"}, "want read or write"},
		{[]string{"bench", "-file-size", "2GiB", "h:/x"}, "-file-size 2GiB: at most"},
		{[]string{"bench", "-max-ops", "0", "h:/x"}, "-max-ops 0"},
		{[]string{"bench", "-rounds", "0", "h:/x"}, "-rounds 0: want 1 to 100"},
		{[]string{"demo", "-largest", "1GiB"}, "-largest 1GiB"},
		{[]string{"demo", "extra"}, "want 0 argument(s)"},
		{[]string{"ls", "-nope", "h:/x"}, "not defined"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if err := run(context.Background(), []string{"ls", "-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("ls -h: %v", err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "nfsrdma demo") {
		t.Errorf("help: %v %q", err, out.String())
	}
	// Nothing listening: a clear error naming what was tried.
	_, err := (&testServer{conn: []string{"-mountport", "1", "-timeout", "5s"}}).cli(t, "ls", "127.0.0.1:/x")
	if err == nil || !strings.Contains(err.Error(), "MOUNT over TCP at 127.0.0.1:1") {
		t.Errorf("ls of a server that is not there: %v", err)
	}
}

// The error for an unknown command names every command there is.
func TestUnknownCommandListsEvery(t *testing.T) {
	err := run(context.Background(), []string{"frob"}, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("run(frob): no error")
	}
	for name := range commands {
		if !strings.Contains(err.Error(), " "+name) {
			t.Errorf("run(frob) = %v: does not name the command %q", err, name)
		}
	}
}

func TestParseRemote(t *testing.T) {
	for _, tc := range []struct {
		in, host, path string
		dir            bool
	}{
		{"server:/export", "server", "/export", false},
		{"192.0.2.1:/a/b/", "192.0.2.1", "/a/b", true},
		{"[2001:db8::1]:/x//y", "2001:db8::1", "/x/y", false},
		{"h:/", "h", "/", true},
		// A path that names a directory however it is written: the root, or
		// one ending in "." or "..".
		{"h:/0/..", "h", "/", true},
		{"h:/a/.", "h", "/a", true},
		{"h:/a/b/..", "h", "/a", true},
		{"h:/a/b/../c", "h", "/a/c", false},
	} {
		r, err := parseRemote(tc.in)
		if err != nil || r.host != tc.host || r.path != tc.path || r.dir != tc.dir {
			t.Errorf("parseRemote(%q) = %+v, %v", tc.in, r, err)
		}
	}
	if r, _ := parseRemote("[2001:db8::1]:/x"); r.String() != "[2001:db8::1]:/x" {
		t.Errorf("String %q", r.String())
	}
	for _, tc := range []struct {
		exps      []string
		p         string
		exp, rel  string
		wantFound bool
	}{
		{[]string{"/export"}, "/export", "/export", "", true},
		{[]string{"/export"}, "/export/a/b", "/export", "a/b", true},
		{[]string{"/export"}, "/exporter/a", "", "", false},
		{[]string{"/", "/srv"}, "/srv/x", "/srv", "x", true},
		{[]string{"/", "/srv"}, "/etc/x", "/", "etc/x", true},
	} {
		exp, rel, ok := exportFor(tc.exps, tc.p)
		if exp != tc.exp || rel != tc.rel || ok != tc.wantFound {
			t.Errorf("exportFor(%q, %q) = %q %q %v", tc.exps, tc.p, exp, rel, ok)
		}
	}
	for _, tc := range []struct {
		in   string
		want int64
	}{{"4096", 4096}, {"4k", 4096}, {"4KiB", 4096}, {"1MiB", 1 << 20}, {"2 m", 2 << 20}} {
		if n, err := parseSize(tc.in); err != nil || n != tc.want {
			t.Errorf("parseSize(%q) = %d, %v", tc.in, n, err)
		}
	}
}

func TestBench(t *testing.T) {
	s := startServer(t)
	out := s.mustCLI(t, "bench", "-duration", "20ms", "-rounds", "3", "-max-ops", "50", "-file-size", "2MiB", "127.0.0.1:/export")
	for _, w := range []string{"in 3 rounds (medians)", "[ 1/16] READ     4 KiB qd 1  over rdma  median of 3 rounds", "[16/16] WRITE    1 MiB qd 32 over tcp   median of 3 rounds", "rdma MB/s", "tcp IOPS", "rdma/tcp"} {
		if !strings.Contains(out, w) {
			t.Errorf("bench output lacks %q:\n%s", w, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	rows := lines[len(lines)-8:]
	for _, r := range rows {
		f := strings.Fields(r)
		if len(f) != 11 || !strings.HasSuffix(f[10], "x") {
			t.Errorf("summary row %q: want op, size (2 fields), qd, 6 numbers and a ratio", r)
		}
		for _, cpu := range []string{f[6], f[9]} {
			if v, err := strconv.ParseFloat(cpu, 64); err != nil || v <= 0 {
				t.Errorf("summary row %q: CPU µs per call %q, want a positive number", r, cpu)
			}
		}
	}
	// One transport: no ratio column; the bench file is removed afterwards.
	out = s.mustCLI(t, "bench", "-proto", "tcp", "-ops", "write", "-sizes", "4k", "-qd", "4", "-duration", "20ms", "-file-size", "64k", "127.0.0.1:/export")
	if strings.Contains(out, "rdma") || !strings.Contains(out, "WRITE  4 KiB   4") {
		t.Errorf("tcp-only bench:\n%s", out)
	}
	ents, _ := os.ReadDir(s.export)
	if len(ents) != 0 {
		t.Errorf("bench left %v in the export", ents)
	}
	if _, err := s.cli(t, "bench", "127.0.0.1:/export/missing"); err == nil {
		t.Error("bench of a missing directory succeeded")
	}
}

func TestDemo(t *testing.T) {
	var out clitest.Buffer
	err := run(context.Background(), []string{"demo", "-largest", "2MiB", "-many", "300", "-bench-duration", "10ms"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	s := out.String()
	for _, w := range []string{
		"Start nfsrdmad in process", "mount -t nfs -o vers=3,proto=rdma",
		"$ nfsrdma put", "$ nfsrdma get", "-proto tcp", "odd-2097152      2097152  ok        ok        ok",
		"all 9 files match", "300 entries", "odd-1 is gone", "rdma/tcp", "stopped cleanly", "Demo passed",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("demo output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Log(s)
	}
	// It cleans up after itself.
	dir := ""
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "exporting "); i >= 0 {
			dir = strings.Fields(l[i+len("exporting "):])[0]
		}
	}
	if dir == "" {
		t.Fatal("demo did not print its export directory")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("demo left %s behind: %v", dir, err)
	}
}

func TestDemoCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := run(ctx, []string{"demo", "-largest", "64MiB", "-bench-duration", "0"}, io.Discard, io.Discard)
	if err == nil {
		t.Skip("the demo finished within 50ms; nothing to cancel")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "context") {
		t.Errorf("canceled demo: %v", err)
	}
}

// TestIPv6 runs the server on [::1] and the client commands against [::1]:/export.
func TestIPv6(t *testing.T) {
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		l.Close()
	}
	export := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readyc := make(chan nfsd.Info, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- nfsd.Run(ctx, nfsd.Config{Export: export, ExportPath: "/export", RDMA: "[::1]:0", TCP: "[::1]:0"}, func(i nfsd.Info) { readyc <- i })
	}()
	var info nfsd.Info
	select {
	case info = <-readyc:
	case err := <-errc:
		t.Fatal(err)
	}
	if !strings.Contains(info.MountCommand, "proto=rdma6") || !strings.Contains(info.MountCommand, "[::1]:/export") {
		t.Errorf("mount command %q", info.MountCommand)
	}
	tcp := strconv.Itoa(portOfAddr(info.TCP.String()))
	s := &testServer{export: export, info: info, conn: []string{"-rdma-port", strconv.Itoa(portOfAddr(info.RDMA.String())), "-tcp-port", tcp, "-mountport", tcp}}
	os.WriteFile(filepath.Join(export, "six"), []byte("over IPv6"), 0o644)
	for _, proto := range []string{"rdma", "tcp"} {
		if out := s.mustCLI(t, "get", "-proto", proto, "[::1]:/export/six", "-"); out != "over IPv6" {
			t.Errorf("get over %s printed %q", proto, out)
		}
	}
	// Reports and errors write the server back as it was given, in brackets.
	squashedOwner(t, export)
	src := filepath.Join(t.TempDir(), "seven")
	os.WriteFile(src, []byte("from IPv6"), 0o644)
	if out := s.mustCLI(t, "put", src, "[::1]:/export/"); !strings.Contains(out, "-> [::1]:/export/seven:") {
		t.Errorf("put printed %q", out)
	}
	if _, err := s.cli(t, "put", src, "[::1]:/export/six/"); err == nil || !strings.Contains(err.Error(), "[::1]:/export/six/: not a directory") {
		t.Errorf("put into a file as a directory: %v", err)
	}
	if _, err := s.cli(t, "ls", "[::1]:/elsewhere"); err == nil || !strings.Contains(err.Error(), "no export of [::1] contains /elsewhere") {
		t.Errorf("ls outside the export: %v", err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Error(err)
	}
}

// TestParallelTransfers moves a file of many READ/WRITE-sized pieces (the server's
// transfer size is 64 KiB here) with several calls in flight, and one at a time.
func TestParallelTransfers(t *testing.T) {
	s := startServer(t, func(c *nfsd.Config) { c.MaxIO = 64 << 10 })
	local := t.TempDir()
	data := randomBytes(3<<20+7, 42)
	src := filepath.Join(local, "src")
	os.WriteFile(src, data, 0o644)
	for _, tc := range []struct{ proto, qd string }{{"rdma", "8"}, {"rdma", "1"}, {"tcp", "16"}} {
		name := "f-" + tc.proto + "-" + tc.qd
		s.mustCLI(t, "put", "-proto", tc.proto, "-qd", tc.qd, src, "127.0.0.1:/export/"+name)
		if got, _ := os.ReadFile(filepath.Join(s.export, name)); !bytes.Equal(got, data) {
			t.Fatalf("put -qd %s over %s: the server holds %d bytes that differ", tc.qd, tc.proto, len(got))
		}
		dst := filepath.Join(local, name)
		s.mustCLI(t, "get", "-proto", tc.proto, "-qd", tc.qd, "127.0.0.1:/export/"+name, dst)
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
			t.Fatalf("get -qd %s over %s: %d bytes that differ", tc.qd, tc.proto, len(got))
		}
	}
	if _, err := s.cli(t, "get", "-qd", "0", "127.0.0.1:/export/x", local); err == nil || !strings.Contains(err.Error(), "-qd 0") {
		t.Errorf("get -qd 0: %v", err)
	}
	// A failed get leaves no partial file behind.
	if _, err := s.cli(t, "get", "127.0.0.1:/export/missing", filepath.Join(local, "missing")); err == nil {
		t.Error("get of a missing file succeeded")
	}
	ents, _ := os.ReadDir(local)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".part-") || e.Name() == "missing" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestProgress(t *testing.T) {
	var buf clitest.Buffer
	p := startProgress(&buf, "get f", 4<<20, time.Millisecond, true)
	p.add(1 << 20)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "get f: 1.0 / 4.0 MiB (25%)") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p.end()
	p.end() // idempotent
	out := buf.String()
	if !strings.Contains(out, "get f: 1.0 / 4.0 MiB (25%)") || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("progress output %q", out)
	}
	// Not a terminal: nothing is shown.
	var quiet bytes.Buffer
	q := startProgress(&quiet, "x", 10, time.Millisecond, false)
	q.add(5)
	time.Sleep(5 * time.Millisecond)
	q.end()
	if quiet.Len() != 0 {
		t.Errorf("progress on a non-terminal wrote %q", quiet.String())
	}
}

// squashedOwner gives dir to nobody (65534) when the tests run as root: the server's
// -export squashes root to nobody, so the client, acting as this process, writes as
// nobody.
func squashedOwner(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// A root handle the NFS server no longer verifies (here issued by another server, with
// another key, as after a restart without the state directory) is NFS3ERR_STALE,
// and the command says what that means.
func TestStaleHandleExplained(t *testing.T) {
	s := startServer(t)
	other, err := nfsserver.New(nfsserver.Options{Root: t.TempDir(), ExportPath: "/export"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rs := oncrpc.NewServer(nil)
	rs.Register(nfs3.MountProgram, nfs3.MountVersion, other.MountHandler())
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	defer rs.Close()
	_, err = s.cli(t, "ls", "-proto", "tcp", "-mountport", strconv.Itoa(portOfAddr(l.Addr().String())), "127.0.0.1:/export")
	if !errors.Is(err, nfs3.StatusStale) || !strings.Contains(err.Error(), "stale file handle") {
		t.Fatalf("ls with a stale root handle: %v", err)
	}
}
