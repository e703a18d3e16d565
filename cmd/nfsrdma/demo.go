//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/cli"
	"github.com/go-rpcrdma/rpcrdma/nfsd"
)

// demoSizes are the file sizes the demo moves: empty, tiny, around the 4 KiB inline
// threshold and page size, not multiples of 4 (XDR roundup), and across the 1 MiB
// WRITE/READ size; then the largest, -largest bytes.
var demoSizes = []int64{0, 1, 3, 4095, 4097, 65537, 1<<20 + 1, 3<<20 + 5}

// prefixWriter indents every line written through it.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mid    bool // in the middle of a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if !p.mid {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
		}
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line = b[:i+1]
		}
		if _, err := p.w.Write(line); err != nil {
			return 0, err
		}
		p.mid = i < 0
		b = b[len(line):]
	}
	return n, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func sumFile(name string) (string, int64, error) {
	f, err := os.Open(name)
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

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	keep := fs.Bool("keep", false, "keep the temporary directory (export, local copies) and print its path")
	largest := fs.String("largest", "8388607", "size of the largest file moved, e.g. 8388607 or 2MiB (the others have fixed odd sizes)")
	many := fs.Int("many", 1000, "entries of the big directory listed over RDMA (0 skips it)")
	benchDur := fs.Duration("bench-duration", 250*time.Millisecond, "time per benchmark measurement (0 skips the benchmark)")
	var logf cli.LogFlags
	logf.Register(fs, "error")
	fs.Lookup("log-level").Usage = "server log `level` (to stderr): trace, debug, info, warn, error"
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	big, err := parseSize(*largest)
	if err != nil {
		return fmt.Errorf("-largest: %w", err)
	}
	if big > 64<<20 {
		return fmt.Errorf("-largest %s: at most 64 MiB", *largest)
	}
	if *many < 0 || *many > 100000 {
		return fmt.Errorf("-many %d: want 0 to 100000", *many)
	}
	if *benchDur < 0 || *benchDur > 10*time.Second {
		return fmt.Errorf("-bench-duration %v: want 0 to 10s", *benchDur)
	}
	logger, err := logf.Logger("nfsrdmad", stderr)
	if err != nil {
		return err
	}
	started := time.Now()

	tmp, err := os.MkdirTemp("", "nfsrdma-demo-")
	if err != nil {
		return err
	}
	if *keep {
		defer fmt.Fprintf(stdout, "\nKept %s (export/, local/, fetched/).\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	export, local, fetched := filepath.Join(tmp, "export"), filepath.Join(tmp, "local"), filepath.Join(tmp, "fetched")
	for _, d := range []string{export, local, fetched, filepath.Join(tmp, "state")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if os.Geteuid() == 0 {
		// The server squashes root to nobody (65534), as knfsd does by default: run as
		// root, this client writes as nobody, so nobody owns the export.
		if err := os.Chown(export, 65534, 65534); err != nil {
			return err
		}
	}

	step := 0
	section := func(format string, a ...any) {
		if ctx.Err() != nil {
			return // the next command reports it
		}
		step++
		fmt.Fprintf(stdout, "\n== %d. %s\n", step, fmt.Sprintf(format, a...))
	}
	fmt.Fprintln(stdout, "nfsrdma demo: NFSv3 over RPC-over-RDMA on the software iWARP provider (verbs/soft),")
	fmt.Fprintln(stdout, "end to end on 127.0.0.1: an in-process nfsrdmad, and this tool's own commands as the client.")

	// 1. The server.
	section("Start nfsrdmad in process, exporting a temporary directory as /export")
	sctx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	readyc := make(chan nfsd.Info, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- nfsd.Run(sctx, nfsd.Config{
			Export: export, ExportPath: "/export", StateDir: filepath.Join(tmp, "state"),
			RDMA: "127.0.0.1:0", TCP: "127.0.0.1:0",
			Stdout: &prefixWriter{w: stdout, prefix: "   | "},
			Logger: logger,
		}, func(i nfsd.Info) { readyc <- i })
	}()
	var info nfsd.Info
	select {
	case info = <-readyc:
	case err := <-errc:
		return fmt.Errorf("starting the server: %w", err)
	}
	serverStopped := false
	stop := func() error {
		if serverStopped {
			return nil
		}
		serverStopped = true
		stopServer()
		return <-errc
	}
	defer stop()
	rdmaPort, tcpPort := strconv.Itoa(portOfAddr(info.RDMA.String())), strconv.Itoa(portOfAddr(info.TCP.String()))
	conn := []string{"-rdma-port", rdmaPort, "-tcp-port", tcpPort, "-mountport", tcpPort}
	cmd := func(name string, rest ...string) error {
		args := append([]string{name}, conn...)
		args = append(args, rest...)
		fmt.Fprintf(stdout, "$ nfsrdma %s\n", strings.Join(args, " "))
		if err := run(ctx, args, &prefixWriter{w: stdout, prefix: "  "}, stderr); err != nil {
			return fmt.Errorf("nfsrdma %s: %w", name, err)
		}
		return nil
	}
	remote := func(p string) string { return "127.0.0.1:/export" + p }

	// 2. Local files.
	sizes := append(append([]int64(nil), demoSizes...), big)
	section("Make %d local files of odd sizes, from 0 to %d bytes", len(sizes), big)
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(time.Now().UnixNano()))
	rng := rand.NewChaCha8(seed)
	type file struct {
		name string
		size int64
		sum  string
	}
	var files []file
	var total int64
	for _, n := range sizes {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := make([]byte, n)
		rng.Read(b)
		f := file{name: fmt.Sprintf("odd-%d", n), size: n, sum: sum(b)}
		if err := os.WriteFile(filepath.Join(local, f.name), b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  %-14s %9d bytes  sha256 %s\n", f.name, n, f.sum[:16])
		files = append(files, f)
		total += n
	}

	// 3. Put over RDMA.
	section("Put them into a new directory over RDMA (WRITE data goes as read chunks)")
	if err := cmd("mkdir", remote("/demo")); err != nil {
		return err
	}
	for _, f := range files {
		if err := cmd("put", filepath.Join(local, f.name), remote("/demo/")); err != nil {
			return err
		}
	}

	// 4. List.
	section("List the directory over RDMA")
	if err := cmd("ls", remote("/demo")); err != nil {
		return err
	}

	// 5. Get back and verify.
	section("Get every file back over RDMA (READ data placed by RDMA Write), the largest also over TCP, and verify")
	for _, f := range files {
		if err := cmd("get", remote("/demo/"+f.name), filepath.Join(fetched, f.name)); err != nil {
			return err
		}
	}
	last := files[len(files)-1]
	if err := cmd("get", "-proto", "tcp", remote("/demo/"+last.name), filepath.Join(fetched, last.name+".tcp")); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n  %-14s %9s  %-8s %-8s %-8s\n", "file", "bytes", "server", "rdma", "tcp")
	bad := 0
	for _, f := range files {
		row := fmt.Sprintf("  %-14s %9d", f.name, f.size)
		checks := []string{filepath.Join(export, "demo", f.name), filepath.Join(fetched, f.name)}
		if f.name == last.name {
			checks = append(checks, filepath.Join(fetched, f.name+".tcp"))
		}
		for _, p := range checks {
			s, n, err := sumFile(p)
			switch {
			case err != nil:
				row += "  MISSING "
				bad++
			case s != f.sum || n != f.size:
				row += "  BAD     "
				bad++
			default:
				row += "  ok      "
			}
		}
		fmt.Fprintln(stdout, strings.TrimRight(row, " "))
	}
	if bad > 0 {
		return fmt.Errorf("%d copies do not match their originals", bad)
	}
	fmt.Fprintf(stdout, "  all %d files match their SHA-256 on the server's disk and after the round trip\n", len(files))

	// 6. A big directory.
	if *many > 0 {
		section("List a directory of %d entries over RDMA (READDIRPLUS results by reply chunk)", *many)
		dir := filepath.Join(export, "many")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for i := 0; i < *many; i++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("entry-with-a-longish-name-%05d", i)), nil, 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "  (%d empty files made directly in the export)\n", *many)
		var out bytes.Buffer
		args := append(append([]string{"ls"}, conn...), remote("/many"))
		fmt.Fprintf(stdout, "$ nfsrdma %s | tail -1\n", strings.Join(args, " "))
		if err := run(ctx, args, &out, stderr); err != nil {
			return fmt.Errorf("nfsrdma ls: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		fmt.Fprintf(stdout, "  %s\n", lines[len(lines)-1])
		if len(lines) != *many+1 {
			return fmt.Errorf("ls of %d entries printed %d lines", *many, len(lines)-1)
		}
	}

	// 7. Remove.
	section("Remove a file and check it is gone from the server's disk")
	if err := cmd("rm", remote("/demo/"+files[1].name)); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(export, "demo", files[1].name)); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s still on the server's disk after rm: %v", files[1].name, err)
	}
	fmt.Fprintf(stdout, "  %s is gone\n", files[1].name)

	// 8. Bench.
	if *benchDur > 0 {
		section("A short benchmark: READ and WRITE, 4 KiB and 1 MiB, queue depth 1 and 32, RDMA vs TCP")
		if err := cmd("bench", "-duration", benchDur.String(), "-file-size", "32MiB", remote("")); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "  (software RDMA on one machine: the numbers show the protocol path, not RDMA hardware;")
		fmt.Fprintln(stdout, "   run `nfsrdma bench` against a remote nfsrdmad for real figures)")
	}

	section("Stop the server")
	if err := stop(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	fmt.Fprintln(stdout, "  stopped cleanly")
	fmt.Fprintf(stdout, "\nDemo passed in %v: %d files (%d bytes) written and read back over RDMA, checksums verified.\n",
		time.Since(started).Round(time.Millisecond), len(files), total)
	fmt.Fprintf(stdout, "Serve a directory of your own:  go run ./cmd/nfsrdmad -export DIR\n")
	return nil
}

// portOfAddr returns the port of a host:port string, 0 if none.
func portOfAddr(a string) int {
	i := strings.LastIndexByte(a, ':')
	if i < 0 {
		return 0
	}
	n, _ := strconv.Atoi(a[i+1:])
	return n
}
