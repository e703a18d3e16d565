//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
)

// benchCase is one measurement.
type benchCase struct {
	op    string // "READ" or "WRITE"
	size  int    // bytes per call
	qd    int    // calls in flight
	proto string // "rdma" or "tcp"
}

func (c benchCase) String() string {
	return fmt.Sprintf("%-5s %8s qd %-2d over %s", c.op, sizeName(c.size), c.qd, c.proto)
}

// benchResult is a finished measurement.
type benchResult struct {
	benchCase
	ops     int64
	elapsed time.Duration
}

func (r benchResult) mbps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) * float64(r.size) / r.elapsed.Seconds() / 1e6
}

func (r benchResult) iops() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// benchOptions bound and select the measurements.
type benchOptions struct {
	duration time.Duration // per case
	maxOps   int64         // per case
	fileSize int64
	ops      []string
	sizes    []int
	qds      []int
	protos   []string
}

// Bounds on the bench flags, so a run always ends in bounded time and memory.
const (
	maxBenchDuration = time.Minute
	maxBenchQD       = 256
	maxBenchFile     = 1 << 30
)

// sizeName prints 4096 as "4 KiB" and 1048576 as "1 MiB".
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// parseSize parses 4096, 4k, 4KiB, 1m, 1MiB.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, suf.s) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, suf.s)), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > 1<<40/mult {
		return 0, fmt.Errorf("%q is not a size (e.g. 4096, 4k, 1MiB)", s)
	}
	return n * mult, nil
}

// parseList splits a comma-separated flag value.
func parseList(flagName, v string, each func(string) error) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("-%s: empty list", flagName)
	}
	for _, item := range strings.Split(v, ",") {
		if err := each(strings.TrimSpace(item)); err != nil {
			return fmt.Errorf("-%s %q: %w", flagName, v, err)
		}
	}
	return nil
}

// parseBenchOptions checks the bench flags.
func parseBenchOptions(duration time.Duration, maxOps int64, fileSize, ops, sizes, qds string, protos []string, maxIO int) (benchOptions, error) {
	o := benchOptions{duration: duration, maxOps: maxOps, protos: protos}
	if duration <= 0 || duration > maxBenchDuration {
		return o, fmt.Errorf("-duration %v: want more than 0 and at most %v per measurement", duration, maxBenchDuration)
	}
	if maxOps <= 0 {
		return o, fmt.Errorf("-max-ops %d: must be positive", maxOps)
	}
	fs, err := parseSize(fileSize)
	if err != nil {
		return o, fmt.Errorf("-file-size: %w", err)
	}
	if fs > maxBenchFile {
		return o, fmt.Errorf("-file-size %s: at most %s", fileSize, sizeName(maxBenchFile))
	}
	o.fileSize = fs
	if err := parseList("ops", ops, func(s string) error {
		switch strings.ToUpper(s) {
		case "READ", "WRITE":
			o.ops = append(o.ops, strings.ToUpper(s))
			return nil
		}
		return fmt.Errorf("%q: want read or write", s)
	}); err != nil {
		return o, err
	}
	if err := parseList("sizes", sizes, func(s string) error {
		n, err := parseSize(s)
		if err != nil {
			return err
		}
		if n > int64(maxIO) {
			return fmt.Errorf("%s exceeds the largest READ/WRITE, %s", s, sizeName(maxIO))
		}
		if n > o.fileSize {
			return fmt.Errorf("%s exceeds -file-size %s", s, sizeName(int(o.fileSize)))
		}
		o.sizes = append(o.sizes, int(n))
		return nil
	}); err != nil {
		return o, err
	}
	if err := parseList("qd", qds, func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxBenchQD {
			return fmt.Errorf("%q: want a queue depth from 1 to %d", s, maxBenchQD)
		}
		o.qds = append(o.qds, n)
		return nil
	}); err != nil {
		return o, err
	}
	return o, nil
}

// benchFile creates the file the measurements use in dir and fills it, so READs of
// any offset find data. remove deletes it.
func benchFile(ctx context.Context, c *nfsclient.Client, dir nfs3.FH, size int64) (fh nfs3.FH, remove func(), err error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	name := ".nfsrdma-bench-" + hex.EncodeToString(rnd[:])
	fh, _, err = c.Create(ctx, dir, name, 0o600, false)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the bench file: %w", err)
	}
	remove = func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Remove(rctx, dir, name)
	}
	chunk := make([]byte, c.MaxWrite())
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for off := int64(0); off < size; {
		n := min(int64(len(chunk)), size-off)
		w, err := c.Write(ctx, fh, uint64(off), chunk[:n], nfs3.Unstable)
		if err != nil {
			remove()
			return nil, nil, fmt.Errorf("filling the bench file: %w", err)
		}
		off += int64(w.Count)
	}
	if _, err := c.Commit(ctx, fh); err != nil {
		remove()
		return nil, nil, fmt.Errorf("filling the bench file: %w", err)
	}
	return fh, remove, nil
}

// measure runs one case against fh until the duration or the op count runs out.
func measure(ctx context.Context, c *nfsclient.Client, fh nfs3.FH, bc benchCase, o *benchOptions) (benchResult, error) {
	slots := o.fileSize / int64(bc.size)
	var next atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	var done atomic.Int64
	start := time.Now()
	for w := 0; w < bc.qd; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, bc.size)
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= o.maxOps {
					return
				}
				off := uint64((i % slots) * int64(bc.size))
				var err error
				if bc.op == "READ" {
					_, _, err = c.Read(ctx, fh, off, buf)
				} else {
					_, err = c.Write(ctx, fh, off, buf, nfs3.Unstable)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				done.Add(1)
			}
		}()
	}
	// When the time is up no worker starts another call.
	stop := time.AfterFunc(o.duration, func() { next.Store(o.maxOps) })
	wg.Wait()
	stop.Stop()
	el := time.Since(start)
	if firstErr != nil {
		return benchResult{}, fmt.Errorf("%v: %w", bc, firstErr)
	}
	return benchResult{benchCase: bc, ops: done.Load(), elapsed: el}, nil
}

// runBenchCases measures every case, printing a line per case as it finishes, then
// the summary table.
func runBenchCases(ctx context.Context, w io.Writer, clients map[string]*nfsclient.Client, files map[string]nfs3.FH, o *benchOptions) ([]benchResult, error) {
	var cases []benchCase
	for _, op := range o.ops {
		for _, size := range o.sizes {
			for _, qd := range o.qds {
				for _, p := range o.protos {
					cases = append(cases, benchCase{op, size, qd, p})
				}
			}
		}
	}
	var results []benchResult
	for i, bc := range cases {
		fmt.Fprintf(w, "[%2d/%d] %v ... ", i+1, len(cases), bc)
		r, err := measure(ctx, clients[bc.proto], files[bc.proto], bc, o)
		if err != nil {
			fmt.Fprintln(w, "failed")
			return results, err
		}
		fmt.Fprintf(w, "%8d calls in %6.2fs  %9.1f MB/s  %9.0f IOPS\n", r.ops, r.elapsed.Seconds(), r.mbps(), r.iops())
		results = append(results, r)
	}
	printBenchTable(w, results, o.protos)
	return results, nil
}

// printBenchTable prints one row per (op, size, qd) with MB/s and IOPS per transport
// and, when both ran, RDMA's throughput as a multiple of TCP's.
func printBenchTable(w io.Writer, results []benchResult, protos []string) {
	type key struct {
		op       string
		size, qd int
	}
	byKey := map[key]map[string]benchResult{}
	var order []key
	for _, r := range results {
		k := key{r.op, r.size, r.qd}
		if byKey[k] == nil {
			byKey[k] = map[string]benchResult{}
			order = append(order, k)
		}
		byKey[k][r.proto] = r
	}
	both := len(protos) == 2
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w)
	hdr := "op\tsize\tqd\t"
	for _, p := range protos {
		hdr += p + " MB/s\t" + p + " IOPS\t"
	}
	if both {
		hdr += "rdma/tcp\t"
	}
	fmt.Fprintln(tw, hdr)
	for _, k := range order {
		row := fmt.Sprintf("%s\t%s\t%d\t", k.op, sizeName(k.size), k.qd)
		for _, p := range protos {
			if r, ok := byKey[k][p]; ok {
				row += fmt.Sprintf("%.1f\t%.0f\t", r.mbps(), r.iops())
			} else {
				row += "-\t-\t"
			}
		}
		if both {
			rd, ok1 := byKey[k]["rdma"]
			tc, ok2 := byKey[k]["tcp"]
			if ok1 && ok2 && tc.mbps() > 0 {
				row += fmt.Sprintf("%.2fx\t", rd.mbps()/tc.mbps())
			} else {
				row += "-\t"
			}
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		duration                      time.Duration
		maxOps                        int64
		fileSize, ops, sizes, qdsFlag string
	)
	ctx, cancel, f, pos, err := startCommand(ctx, "bench", args, 1, stderr, func(fs *flagSet) {
		fs.DurationVar(&duration, "duration", 2*time.Second, "time per measurement (at most 1m)")
		fs.Int64Var(&maxOps, "max-ops", 1_000_000, "calls per measurement at most")
		fs.StringVar(&fileSize, "file-size", "64MiB", "size of the file read and written")
		fs.StringVar(&ops, "ops", "read,write", "operations to measure")
		fs.StringVar(&sizes, "sizes", "4KiB,1MiB", "call sizes")
		fs.StringVar(&qdsFlag, "qd", "1,32", "queue depths (calls in flight)")
	})
	if err != nil {
		return err
	}
	defer cancel()
	r, err := parseRemote(pos[0])
	if err != nil {
		return err
	}
	protos := []string{f.proto}
	if f.proto == "both" {
		protos = []string{"rdma", "tcp"}
	}
	// Check the flags before connecting; sizes are checked against the server's
	// transfer size below.
	if _, err := parseBenchOptions(duration, maxOps, fileSize, ops, sizes, qdsFlag, protos, nfs3.MaxData); err != nil {
		return err
	}
	clients := map[string]*nfsclient.Client{}
	files := map[string]nfs3.FH{}
	var dirFH nfs3.FH
	var first *session
	for _, p := range protos {
		s, err := mount(ctx, f, p, r)
		if err != nil {
			return err
		}
		defer s.Close()
		if first == nil {
			first = s
			fh, attr, err := s.lookup(ctx, s.rel)
			if err != nil {
				return err
			}
			if attr.Type != nfs3.TypeDir {
				return fmt.Errorf("%s: not a directory (bench needs a directory to create its file in)", r)
			}
			dirFH = fh
		}
		clients[p] = s.c
	}
	maxIO := first.c.MaxRead()
	for _, c := range clients {
		maxIO = min(maxIO, c.MaxRead(), c.MaxWrite())
	}
	o, err := parseBenchOptions(duration, maxOps, fileSize, ops, sizes, qdsFlag, protos, maxIO)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bench %s: %s file, %v or %d calls per measurement\n", r, sizeName(int(o.fileSize)), o.duration, o.maxOps)
	fh, remove, err := benchFile(ctx, first.c, dirFH, o.fileSize)
	if err != nil {
		return err
	}
	defer remove()
	for _, p := range protos {
		files[p] = fh
	}
	_, err = runBenchCases(ctx, stdout, clients, files, &o)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (raise -timeout)", err)
	}
	return err
}
